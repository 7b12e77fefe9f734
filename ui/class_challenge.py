"""The class challenge in the browser: the lecturer opens and closes it, a student submits a finished
run from the Train page, and the live leaderboard (projectable) with its CSV download.

The score is always the server's: `core.classroom.challenge.evaluate_run` recomputes the validation
loss from the run's weights on the held-out names and checks the limits; nothing typed or sent by
a browser is taken as a number. Nicknames are shown in dataframe cells (text, never Markdown/HTML).
"""

from __future__ import annotations

import urllib.parse

import pandas as pd
import streamlit as st

from core import train_settings
from core.classroom import challenge as judge
from core.classroom.security import AlreadyEntered, ClassroomError, RateLimited, escape_markdown
from ui import classroom, state
from ui.formatting import sentence_inside
from ui.layout import friendly_errors
from ui.state import checked_number, limited_text
from ui.training import PRESET_NAMES, presets_shown

BOARD_REFRESH_S = 2.0  # the projected leaderboard: new entries appear at most this late
BOARD_ROWS_IN_FULL = 12  # a board of more entries scrolls inside BOARD_HEIGHT_PX
BOARD_HEIGHT_PX = 560
PICKED_KEY = "class.hide_pick"  # the lecturer's pick in the hide/show box (an entry id)
# The form's defaults admit the Train page's default preset (the quick demo) and Lecture 7, and no
# larger preset; derived from the presets, with the reasons, in core.classroom.challenge.default_limits
_DEFAULTS = judge.default_limits()
DEFAULT_MAX_PARAMS, DEFAULT_MAX_SECONDS = _DEFAULTS.max_params, _DEFAULTS.max_seconds
TRAIN_URL = "train_gpt"
TRAIN_PREFIX = "train"  # the Train page's settings in the session (PREFIX of pages/7_train_gpt.py)


# ------------------------------------------------------------------------------------ lecturer
def lecturer_controls(store, seat) -> None:
    """Open a challenge (title, parameter and time limits) or close the open one."""
    current = store.current_challenge(seat.code)
    st.subheader("Class challenge")
    if current is not None and current.is_open:
        st.markdown(f"**Open:** {escape_markdown(current.title)}: at most **{current.max_params:,}** parameters and "
                    f"**{current.max_seconds:g} s** of training. Students submit from the Train page.")
        if st.button("Close the challenge", key="class.close_challenge", icon=":material/lock:"):
            with friendly_errors("closing the challenge"):
                store.close_challenge(seat.code, seat.token, current.id)
                st.rerun()
        return
    with st.expander("Open a challenge", icon=":material/emoji_events:"):
        title = limited_text("Title", value="Lowest validation loss", limit=200, key="class.challenge_title")
        max_params = checked_number("Most parameters", key="class.max_params", kind=int,
                                    rules={"min": 1, "max": 100_000_000}, value=DEFAULT_MAX_PARAMS,
                                    help="Counted from the submitted weights.")
        max_seconds = checked_number("Most seconds of training", key="class.max_seconds", kind=float,
                                     rules={"min": 1.0, "max": 86_400.0}, value=DEFAULT_MAX_SECONDS,
                                     help="As measured by this server while it trained the run.")
        st.caption(presets_line(int(max_params), "auto"))
        if st.button("Open the challenge", key="class.open_challenge", type="primary"):
            with friendly_errors("opening the challenge"):
                store.open_challenge(seat.code, seat.token, title, int(max_params), float(max_seconds))
                # a title refused before is history: not to come back when the challenge closes
                st.session_state.pop(state.REFUSED.format(key="class.challenge_title"), None)
                st.rerun()


# ------------------------------------------------------------------------------------- student
def submit_panel(run, settings: train_settings.TrainSettings | None = None) -> None:
    """On the Train page: the class challenge's box, only for a student in a class with an open
    challenge; nothing at all otherwise (a student alone sees the page as without class mode).

    The box starts with the budget and whether the page's `settings` (default: the Train page's, in
    the session) fit it, and which presets do, so a student knows before training; then the
    submit button. A refusal by the challenge's rules is said as such ("Not entered: ..."), and the
    same run at the same step is never stored twice."""
    seat = classroom.member_seat()
    if seat is None or classroom.lecturer_key() is None:
        return
    store = classroom.class_store()
    try:
        current = store.current_challenge(seat.code)
    except ClassroomError:
        return
    if current is None or not current.is_open:
        return
    if settings is None:
        settings = st.session_state.get(TRAIN_PREFIX)
    with st.container(border=True, key="class_submit"):
        st.markdown(f"**Class challenge:** {escape_markdown(current.title)} · at most **{current.max_params:,} "
                    f"parameters** and **{current.max_seconds:g} s** of training")
        st.caption(budget_line(current, settings, run))
        ready = run is not None and run.status != "running" and run.step > 0
        if st.button("Submit this run to the class challenge", key="class.submit", type="primary",
                     disabled=not ready, icon=":material/upload:",
                     help=None if ready else "Train a run (and let it finish or pause it) first."):
            _submit(store, seat, current, run)


def budget_line(current, settings, run) -> str:
    """Whether the current settings (and the run below, once it trained) fit the challenge's limits,
    and which presets do: "Your settings: 104,347 parameters, within the limit. This run: 104,347
    parameters, 3.7 s of training so far, within the limits. Presets within 160,000 parameters:
    Lecture 7, Quick demo; too big: Better, Best. The server times ..." (parameters are counted from
    the settings; the time only once the run has trained, as the judge counts it)."""
    parts = []
    device = "auto"
    if isinstance(settings, train_settings.TrainSettings):
        device = settings.device
        try:
            n_params = train_settings.to_train_config(settings).model.num_params()
        except ValueError:  # settings that cannot train: the page says why above
            n_params = None
        if n_params is not None:
            parts.append(f"Your settings: {n_params:,} parameters, " + (
                "within the limit." if n_params <= current.max_params
                else f"**over the limit** of {current.max_params:,}: make the model smaller to enter."))
    if run is not None and run.step > 0 and not run.origin:
        seconds = judge.trained_seconds(run)
        over = []
        if run.n_params > current.max_params:
            over.append(f"{run.n_params:,} parameters")
        if seconds > current.max_seconds:
            over.append(f"{seconds:.1f} s")
        parts.append(f"This run: {run.n_params:,} parameters, {seconds:.1f} s of training so far, " + (
            f"**over the limit** ({' and '.join(over)})." if over else "within the limits."))
    parts.append(presets_line(current.max_params, device))
    parts.append("The server times the training itself and scores your run on held-out names.")
    return " ".join(parts)


def presets_line(max_params: int, device: str) -> str:
    """Which of the Train page's presets fit a parameter limit: "Presets within 160,000 parameters:
    Lecture 7, Quick demo; too big: Better, Best." (counted from the presets' definitions)."""
    fits, too_big = judge.presets_within(max_params, presets_shown(), device)
    fits_text = ", ".join(PRESET_NAMES[n] for n in fits) or "none"
    line = f"Presets within {max_params:,} parameters: {fits_text}"
    if too_big:
        line += "; too big: " + ", ".join(PRESET_NAMES[n] for n in too_big)
    # the time limit cannot be judged from a preset: a run's training seconds grow with the
    # server's load (a class of trainers on one core), which the preset labels do not show
    return line + (". That is their size only: their training time grows with how busy the server is "
                   "(fewer steps keep a run inside the time limit).")


def _submit(store, seat, current, run) -> None:
    """Score `run` and store it, unless it is already entered; a refusal by the rules is said plainly."""
    with friendly_errors("scoring your run"):  # only what is not a refusal (a bug) lands here
        try:
            earlier = store.entry_of(seat.code, seat.token, current.id, *judge.run_figures(run))
            if earlier is not None:  # known before scoring it again (no seat: store.submit says so)
                raise AlreadyEntered(earlier)
            wait = store.submission_wait(seat.code, seat.token)
            if wait > 0:  # at the limit: say so without scoring a run the store would refuse
                raise RateLimited("submissions", wait)
            limits = judge.ChallengeLimits(current.max_params, current.max_seconds)
            with st.spinner("Scoring your run on the held-out names ..."):
                result = judge.evaluate_run(run, limits)
                entry = store.submit(seat.code, seat.token, current.id, result)  # the store checks again
        except AlreadyEntered as repeat:  # also a second click that raced the first: the store refused it
            st.info(str(repeat), icon=":material/info:")
            return
        except ClassroomError as refused:  # the challenge's rules (SubmissionError) or the store's
            st.error(f"Not entered: {sentence_inside(str(refused))}", icon=":material/block:")
            return
        st.success(f"Submitted: validation loss {entry.val_loss:.4f} with {entry.n_params:,} parameters. "
                   "See the board on the Class page.", icon=":material/emoji_events:")


# ------------------------------------------------------------------------------- leaderboard
def board(store, code: str, seat=None) -> None:
    """The live leaderboard of the class's newest challenge; the lecturer (seat) can hide entries
    and download every submission as CSV."""
    _board(store, code, seat)


@st.fragment(run_every=BOARD_REFRESH_S)
def _board(store, code: str, seat) -> None:
    try:
        current = store.current_challenge(code)
    except ClassroomError:
        return
    if current is None:
        return
    state = "open" if current.is_open else "closed"
    st.subheader(f"Leaderboard ({state})")
    st.caption(f"{current.title}: at most {current.max_params:,} parameters and {current.max_seconds:g} s "
               "of training; validation loss computed by the server on held-out names (lower is better).")
    entries = store.leaderboard(code, current.id)
    if entries:
        st.caption(f"{len(entries)} {'entry' if len(entries) == 1 else 'entries'} on the board "
                   "(each student's best run).")
        # A static table: it wraps its cells to the page's width, in the page's font (larger in
        # lecture mode), so every column is in view on a 1024 px laptop with the sidebar open (a
        # grid of fixed column widths hid the sampled names there behind a scroll bar). A long board
        # scrolls inside a fixed height, its header row kept in view.
        with st.container(key="class_board"):  # (its nicknames' CSS: ui/layout.py)
            st.table(board_frame(entries).style.format({"validation loss": "{:.4f}", "parameters": "{:,}"}),
                     hide_index=True, height=BOARD_HEIGHT_PX if len(entries) > BOARD_ROWS_IN_FULL else "content")
    else:
        st.info("No entries yet. Students submit a finished run from the Train page.", icon=":material/hourglass:")
    if seat is not None:
        _manage(store, code, seat, current)


def board_frame(entries) -> pd.DataFrame:
    """The board as st.table shows it (the numbers formatted by its Styler, in `_board`): rank,
    nickname, loss, sampled names, parameters and a link
    that opens the run's settings on the Train page. Its cells are Markdown, so what students typed
    (nicknames) and what models wrote (names) is escaped."""
    return pd.DataFrame({
        "rank": list(range(1, len(entries) + 1)),
        "nickname": [escape_markdown(e.nickname) for e in entries],
        "validation loss": [e.val_loss for e in entries],  # numbers: the table aligns their digits
        "five sampled names": [escape_markdown(", ".join(e.samples)) for e in entries],
        "parameters": [e.n_params for e in entries],
        "settings": [f"[open]({settings_link(e.settings)})" for e in entries]})


def settings_link(settings: dict) -> str:
    """A link that opens the Train page on these settings."""
    base = urllib.parse.urlsplit(st.context.url or "")
    root = f"{base.scheme}://{base.netloc}" if base.netloc else ""
    query = judge.settings_query(settings)
    return f"{root}/{TRAIN_URL}" + (f"?{query}" if query else "")


def _manage(store, code: str, seat, current) -> None:
    every = store.submissions(code, current.id, include_hidden=True)
    if not every:
        return
    with st.container(horizontal=True, vertical_alignment="bottom"):
        labels = {e.id: f"{e.val_loss:.4f} · {e.nickname}" + (" (hidden)" if e.hidden else "") for e in every}
        # a new box whenever the labels change (an entry hidden: "(hidden)"), on the same entry:
        # Streamlit 1.67 kept a keyed box's old text when its labels changed under the same value
        key = state.renewed_key(PICKED_KEY, list(labels.values()))
        if key not in st.session_state and st.session_state.get(PICKED_KEY) in labels:
            st.session_state[key] = st.session_state[PICKED_KEY]
        chosen = st.selectbox("Entry", list(labels), format_func=labels.get, key=key)
        st.session_state[PICKED_KEY] = chosen
        entry = next(e for e in every if e.id == chosen)
        st.button("Show again" if entry.hidden else "Hide this entry", key="class.hide_entry",
                  on_click=store.hide_submission, args=(code, seat.token, entry.id),
                  kwargs={"hidden": not entry.hidden})
        from core.classroom.store import submissions_csv  # SQLAlchemy only where a class exists

        st.download_button("Download CSV", submissions_csv(every), file_name=f"class-{code}-challenge.csv",
                           mime="text/csv", key="class.csv", icon=":material/download:", on_click="ignore")
