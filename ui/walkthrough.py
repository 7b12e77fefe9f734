"""Streamlit pieces shared by the four attention walkthrough pages.

- `page_top`: what every page sets up first (settings, areas, embeddings editor, step bar);
- `start_page` / `finish_page`: the shared `WalkthroughSettings` (prefix "walkthrough"), the
  lesson-preset panel, the "predict, then reveal" switch, and the URL sync at the end;
- `embeddings_editor`: the tokens × dimensions table (st.data_editor) with add/remove
  dimension, random embeddings with a seed, reset to the book, and a CSV box. It keeps the last
  VALID table in the settings: an invalid edit stays visible with a message, the math goes on
  with the last valid embeddings;
- `areas`: the page's lesson and its (collapsed) editors; lecture mode puts the editors below;
- `stepper`: the presenter's bar: named steps (segmented control), Previous / Next buttons with
  the ← / → keys, a "Settings" popover that holds the page's controls and a "Checks" popover
  for the agreement badges (`badge_row`), so that neither pushes the lesson below the first
  screen; a step change scrolls the bar back into view;
- `sdpa_badge`: agreement with PyTorch's `F.scaled_dot_product_attention`;
- `predict_then_reveal`: hides a result until the student commits a guess;
- `show_matrix` / `show_bars`: charts with their shape, caption and a note when values are hidden.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from decimal import Decimal
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
import streamlit as st

from core import viz
from core.lessons import embeddings as emb
from core.lessons import self_attention
from core.lessons import walkthrough as wt
from core.lessons.walkthrough import WalkthroughSettings
from core.settings import count
from core.viz import lessons as lesson_charts
from ui import class_polls, classroom, formatting, state
from ui.charts import kept_figure, show_figure
from ui.code import show_code
from ui.layout import lesson_panel, wrapping_columns as columns  # noqa: F401 - the pages' walkthrough.columns

PREFIX = "walkthrough"


# ----------------------------------------------------------------------------------- page frame
def start_page(page: str, title: str, intro: str) -> WalkthroughSettings:
    """Title, lesson presets, the predict switch; returns the shared settings object."""
    settings = state.page_settings(PREFIX, WalkthroughSettings)
    settings = lesson_panel(PREFIX, WalkthroughSettings, page, settings)
    _resend_widget_values()
    if state.lecture_mode():  # the first screen of a projector is for the step: intro on hover
        state.page_title(title, help=intro)
    else:
        state.page_title(title)
        st.caption(intro)
    with st.sidebar:
        st.markdown("**Walkthrough options**")
        if classroom.member_seat() is not None or classroom.lecturer_seat() is not None:
            # in a class every question is a class poll, whatever the switch says: it must not read off
            st.toggle("Predict, then reveal", value=True, disabled=True, key=f"{PREFIX}.predict_in_class",
                      help="In a class every question is a class poll: the lecturer reveals the answers.")
        else:
            state.bound(st.toggle, "Predict, then reveal", settings, "predict", prefix=PREFIX,
                        help="Hide each key result until you commit a guess, then check it.")
        st.button("Reset the walkthrough", key=f"{PREFIX}.reset_all", on_click=_reset_all,
                  icon=":material/restart_alt:",
                  help="Back to the book's example and every default (all four pages).")
    clamp_query(settings)
    return settings


def _resend_widget_values() -> None:
    """Send every control its current value again, on every run.

    The page's controls live in a popover, which the browser draws only when it is opened. A
    control drawn for the first time after some reruns showed its declared default (query
    "Your", empty d_out and seed boxes), not the value in use, and the next click sent those
    defaults back. A value assigned through st.session_state before the control is created is
    sent with it, so the control always opens showing, and keeping, the value in use."""
    ss = st.session_state
    for field in dataclasses.fields(WalkthroughSettings):
        key = state.widget_key(PREFIX, field.name)
        if key in ss:
            ss[key] = ss[key]


def _reset_all() -> None:
    """Defaults everywhere, except the controls a lesson locked (they keep the lesson's values)."""
    locked_now = state.locked_fields(PREFIX)
    current, fresh = st.session_state[PREFIX], WalkthroughSettings()
    for field in locked_now:
        setattr(fresh, field, getattr(current, field))
    state.replace_settings(PREFIX, fresh, locked_now)


def finish_page(settings: WalkthroughSettings) -> None:
    """Mirror the settings into the address bar (shareable link)."""
    state.sync_url(settings)


@dataclasses.dataclass
class PageTop:
    """What every walkthrough page sets up first (see `page_top`)."""
    settings: WalkthroughSettings  # shared by the four pages
    area: Areas  # the lesson, and the collapsed editors
    bar: StepBar  # the step bar: the step, and the Settings and Checks popovers
    labels: list[str]  # the tokens' labels
    inputs: Any  # the embeddings as a tensor, (T, d_in)
    weights_slot: Any = None  # beside the embeddings editor, for the weights editor (pages 2-3)


def page_top(page: str, title: str, intro: str, *, step_field: str, steps: Sequence[str],
             step_labels: dict[str, str], weights_editor: bool = False) -> PageTop:
    """The top of a walkthrough page: settings and lesson panel (`start_page`), the page's areas,
    the collapsed embeddings editor (beside a slot for the weights editor with `weights_editor`),
    the token labels and inputs, and the step bar of `step_field`."""
    settings = start_page(page, title, intro)
    area = areas()
    embeddings_slot, weights_slot = area.inputs, None
    if weights_editor:
        with area.inputs:  # the two editing panels, collapsed side by side: one row
            if editor_open():  # ... and one under the other while one is open: in half the row
                embeddings_slot = weights_slot = st.container()  # (1024 px) its table hid d2, d3
            else:
                embeddings_slot, weights_slot = st.columns(2)
    with embeddings_slot:
        embeddings_editor(settings, expanded=False, notes=area.lesson)
    show_query_notice(area.lesson)  # after the editor: an edit there may have moved the query
    bar = stepper(settings, step_field, steps, step_labels, area.lesson)
    return PageTop(settings, area, bar, labels=wt.labels_of(settings), inputs=wt.inputs_tensor(settings),
                   weights_slot=weights_slot)


EMBEDDINGS_OPEN = f"{PREFIX}.embeddings_open"  # + ".0"/".1": the editor's expander, closed/open at first
WEIGHTS_OPEN = f"{PREFIX}.weights_open"  # the weights editor's expander


def editor_open() -> bool:
    """Whether the embeddings or the weights editor is open (their expanders track it in the
    session state under their keys; opening one reruns the page)."""
    ss = st.session_state
    return bool(ss.get(f"{EMBEDDINGS_OPEN}.0") or ss.get(WEIGHTS_OPEN))


QUERY_NOTICE = f"{PREFIX}.query_notice"  # why the query moved, until `show_query_notice` shows it


def clamp_query(settings: WalkthroughSettings) -> None:
    """Keep the query index inside the token list BEFORE its selectbox is created.

    A link's query beyond its tokens, or a table made shorter, moves the query to the nearest
    token; the reason is kept for `show_query_notice` (this may run in a callback, where nothing
    can be drawn), so that a student never reads numbers for a token they did not choose."""
    last = len(settings.tokens) - 1
    if 0 <= settings.query <= last:
        return
    wanted = settings.query
    settings.query = min(max(wanted, 0), last)
    st.session_state.pop(state.widget_key(PREFIX, "query"), None)
    st.session_state[QUERY_NOTICE] = wt.query_moved_text(wanted, settings.query, wt.labels_of(settings))


def show_query_notice(where=st) -> None:
    """The notice of the last `clamp_query` that moved the query, once."""
    text = st.session_state.pop(QUERY_NOTICE, None)
    if text:
        where.warning(text, icon=":material/warning:")


def scores_question_id(kind: str, settings: WalkthroughSettings, projection: self_attention.Projection,
                       *parts) -> str:
    """The id of a question answered by the attention scores Q Kᵀ / √d_k (which token wins,
    whether rows sum to 1): the tokens and embeddings, W_q and W_k with their biases (d_k is
    W_k's width), and `parts` (query, mask ...). A change to any of them asks again, so an old
    guess is never graded against a map the student has not predicted; W_v is left out, as it
    does not move the scores."""
    weights = [None if t is None else t.tolist()
               for t in (projection.W_query, projection.W_key, projection.b_query, projection.b_key)]
    return wt.question_id(kind, settings.tokens, settings.embeddings, *weights, *parts)


def query_select(settings: WalkthroughSettings, labels: Sequence[str], where=st,
                 width: int | str = "stretch") -> int:
    """The query token, shown by name with its book index x^(i)."""
    clamp_query(settings)
    return state.bound(where.selectbox, "Query token", settings, "query", prefix=PREFIX, width=width,
                       options=list(range(len(labels))),
                       format_func=lambda i: f"{labels[i]}  ·  x^({i + 1})" if i < len(labels) else str(i),
                       help="The token whose attention we follow (the book uses “journey”, x^(2)).")


def locked(field: str) -> bool:
    return field in state.locked_fields(PREFIX)


# ----------------------------------------------------------------------------------- random embeddings
RANDOM_TOKENS, RANDOM_DIMS = f"{PREFIX}.random_tokens", f"{PREFIX}.random_dims"  # keys of two boxes
RANDOM_RULES = {RANDOM_TOKENS: {"min": 1, "max": emb.MAX_TOKENS},  # what "Random embeddings" makes
                RANDOM_DIMS: {"min": 1, "max": emb.MAX_DIMS}}


# ----------------------------------------------------------------------------------- caching
@st.cache_resource(max_entries=256, show_spinner=False)
def _cached(kind: str, key: str, _compute: Callable, _args: tuple):
    # shared by every session: a pure function of (kind, key); the results are read-only
    return _compute(*_args)


def cached(kind: str, key: str, compute: Callable, *args):
    """compute(*args), computed once per key (see core.lessons.walkthrough.cache_key)."""
    return _cached(kind, key, compute, args)


# ----------------------------------------------------------------------------------- areas
@dataclasses.dataclass
class Areas:
    """Where a walkthrough page draws: `lesson` (the step bar and the step) and `inputs` (the
    collapsed editors of the embeddings and weights, and their notes)."""
    lesson: Any
    inputs: Any


def areas() -> Areas:
    """The editors go above the lesson; in lecture mode below it, so that the first screen of a
    projector holds the step bar, the step's formula and its figure."""
    if state.lecture_mode():
        lesson = st.container()
        st.divider()
        return Areas(lesson=lesson, inputs=st.container())
    inputs = st.container()
    return Areas(lesson=st.container(), inputs=inputs)


# ----------------------------------------------------------------------------------- stepper
STEP_ROW_KEY = "walkthrough_stepper"  # its container gets the CSS class st-key-walkthrough_stepper

# The named steps wrap onto a second row where the bar is narrow (7 steps at 1024 px). Streamlit
# draws one border between two neighbours of a segmented control: it makes a button's right (left)
# border transparent when the button after (before) it is selected or hovered, whose own border is
# drawn there instead. At the end of a row that neighbour is on the next row, and the button lost
# its right edge ("5 · mask order" with "6 · dropout" selected). Each button keeps its borders, in
# the colour Streamlit gives them (its text at 20%); the selected, hovered or focused one is drawn
# above its neighbours, so that where they touch in a row its own border is the one seen.
STEPPER_CSS = f"""<style>
.st-key-{STEP_ROW_KEY} button[data-variant="segmented_control"]:not([data-disabled]):not([data-selected]):not(
    [data-hovered]):not([data-focus-visible]) {{
  border-left-color: color-mix(in srgb, currentColor 20%, transparent) !important;
  border-right-color: color-mix(in srgb, currentColor 20%, transparent) !important; }}
.st-key-{STEP_ROW_KEY} button[data-variant="segmented_control"]:is([data-selected], [data-hovered],
    [data-focus-visible]) {{ z-index: 1; }}
</style>"""


SETTINGS_MENU_KEY = f"{PREFIX}.settings_menu"  # the Settings popover's open state (session state)


class Controls:
    """The "Settings" popover of the step bar, used as `with bar.controls: ...`.

    Its controls are made only while it is open: when closed, `ui.state.bound` and
    `number_field` inside it make no widget and return the settings' values, so the page computes
    exactly what it shows. The browser draws a popover's content only when it is opened, yet the
    server made every control on every run: ~15% of a walkthrough page run (py-spy), and in a
    class 54 students' page runs follow each lecturer move. Opening it reruns the page
    (`on_change="rerun"`), which makes the controls, seeded with the values in use."""

    def __init__(self, popover) -> None:
        self.popover = popover
        self.open = bool(popover.open)
        self._entered: list[contextlib.ExitStack] = []

    def __enter__(self) -> "Controls":
        stack = contextlib.ExitStack()
        stack.enter_context(self.popover)
        stack.enter_context(state.controls_hidden(not self.open))
        self._entered.append(stack)
        return self

    def __exit__(self, *exc) -> bool | None:
        return self._entered.pop().__exit__(*exc)


@dataclasses.dataclass
class StepBar:
    """What `stepper` returns: the current step and the two popovers of its bar."""
    step: str  # the step to show
    controls: Controls  # "Settings" popover: the page's controls go here
    checks: Any  # "Checks" popover: the agreement badges go here (see `badge_row`)


def stepper(settings: WalkthroughSettings, field: str, steps: Sequence[str],
            labels: dict[str, str], where=None) -> StepBar:
    """The presenter's bar, one wrapping row near the top of the page: Previous (key ←),
    Next (key →), a "Settings" popover for the page's controls, a "Checks" popover for the
    agreement badges, and the named steps. Controls and badges in popovers never push the
    lesson below the first screen of a projector. `where`: the page's lesson area."""
    if getattr(settings, field) not in steps:
        state.set_field(PREFIX, field, steps[0])
    is_locked = locked(field)
    where = where if where is not None else st.container()
    st.html(STEPPER_CSS)  # a style-only block takes no room on the page
    with where, st.container(horizontal=True, vertical_alignment="center", gap="small",
                             key=STEP_ROW_KEY):
        # drawn first, filled once the step selector (last in the row) has read its value
        prev_slot, next_slot = st.empty(), st.empty()
        controls = Controls(st.popover("Settings", icon=":material/tune:", key=SETTINGS_MENU_KEY,
                                       on_change="rerun",
                                       help="This page's controls: query token, weights, mask, heads ..."))
        checks = st.popover("Checks", icon=":material/fact_check:",
                            help="Two ways of computing the same thing, compared (a failed "
                                 "check is also shown on the page).")
        state.bound(st.segmented_control, "Step", settings, field, prefix=PREFIX,
                    options=list(steps), format_func=lambda s: labels.get(s, s), required=True,
                    wrap=True, label_visibility="collapsed",
                    from_widget=lambda v: v if v in steps else getattr(settings, field))
        i = list(steps).index(getattr(settings, field))
        # Streamlit's own keyboard shortcuts (st.button(shortcut=...)): ← and → anywhere on the
        # page except while typing in a field. The button shows its key, so no arrow in the label
        # ("Next ▶ →") and no tooltip: one stayed over the lesson after every click, in screenshots
        prev_slot.button("Previous", key=f"{PREFIX}.{field}.prev", disabled=i == 0 or is_locked,
                         on_click=state.set_field, args=(PREFIX, field, steps[max(i - 1, 0)]),
                         shortcut="Left")
        next_slot.button("Next", key=f"{PREFIX}.{field}.next",
                         disabled=i == len(steps) - 1 or is_locked, type="primary",
                         on_click=state.set_field,
                         args=(PREFIX, field, steps[min(i + 1, len(steps) - 1)]),
                         shortcut="Right")
    step = getattr(settings, field)
    _keep_step_in_view(field, step)
    return StepBar(step, controls, checks)


def _keep_step_in_view(field: str, step: str) -> None:
    """After a step change (button, key, selector), scroll the page back to the step bar when
    it is above the screen: a key pressed far down the page would otherwise show the middle
    of the new step."""
    seen_key = f"{PREFIX}.{field}.seen"
    previous = st.session_state.get(seen_key)
    st.session_state[seen_key] = step
    if previous is None or previous == step:
        return
    # the step name makes each script new, so the browser runs it once per change
    # checked again while the new step replaces the old one: its height changes shift the page
    # in the sidebar: an element in the page would add an empty line under the step bar
    st.sidebar.html(f"""<script data-step="{field}-{step}">
      for (const ms of [0, 150, 400, 800, 1500]) setTimeout(() => {{
        const bar = document.querySelector(".st-key-{STEP_ROW_KEY}");
        if (bar && bar.getBoundingClientRect().top < 0) bar.scrollIntoView({{block: "start"}});
      }}, ms);
    </script>""", unsafe_allow_javascript=True, width="content")


def step_header(steps: Sequence[str], step: str, text: str) -> None:
    st.subheader(f"Step {list(steps).index(step) + 1} of {len(steps)} · {text}")


# ----------------------------------------------------------------------------------- embeddings
def _msg_key() -> str:
    return f"{PREFIX}.editor.message"


def _set_table(tokens: list[str], embeddings: list[list[float]], message: str | None = None) -> None:
    """Replace the shared embeddings (from a button or the CSV box); the editor follows."""
    settings = st.session_state[PREFIX]
    settings.tokens = list(tokens)
    settings.embeddings = [list(map(float, row)) for row in embeddings]
    clamp_query(settings)
    if message:
        st.session_state[_msg_key()] = ("success", message)


def _fail(message: str) -> None:
    st.session_state[_msg_key()] = ("error", message)


def _on_add_dim() -> None:
    settings = st.session_state[PREFIX]
    try:
        _set_table(settings.tokens, emb.add_dimension(settings.embeddings))
    except ValueError as exc:
        _fail(str(exc))


def _on_remove_dim() -> None:
    settings = st.session_state[PREFIX]
    try:
        _set_table(settings.tokens, emb.remove_dimension(settings.embeddings))
    except ValueError as exc:
        _fail(str(exc))


def _on_reset_book() -> None:
    _set_table(wt._book_tokens(), wt._book_rows(), "Back to the book's six tokens.")


def _on_random() -> None:
    settings = st.session_state[PREFIX]
    # callbacks run before the script copies box values into the settings (and maybe before the
    # boxes' own checks): read what each box holds, its last valid value when its text is refused
    num_tokens = state.number_now(RANDOM_TOKENS, int, RANDOM_RULES[RANDOM_TOKENS], len(settings.tokens))
    d_in = state.number_now(RANDOM_DIMS, int, RANDOM_RULES[RANDOM_DIMS], len(settings.embeddings[0]))
    settings.embed_seed = state.number_now(state.widget_key(PREFIX, "embed_seed"), int,
                                           state.field_rules(settings, "embed_seed"), settings.embed_seed)
    try:
        rows = emb.random_embeddings(num_tokens, d_in, settings.embed_seed)
    except ValueError as exc:
        _fail(str(exc))
        return
    _set_table(emb.resized_tokens(settings.tokens, num_tokens), rows,
               f"Random embeddings, shape ({num_tokens}, {d_in}), seed {settings.embed_seed}.")


def _on_apply_csv() -> None:
    text = st.session_state.get(f"{PREFIX}.csv_text", "")
    try:
        table = emb.parse_embeddings_csv(text)
    except ValueError as exc:
        _fail(f"The CSV was not applied: {str(exc).rstrip('.')}. The last valid embeddings are kept.")
        return
    _set_table(table.tokens, table.embeddings,
               f"CSV applied: {count(table.shape[0], 'token')} × {count(table.shape[1], 'dimension')}.")


def _on_discard_edits() -> None:
    st.session_state[f"{PREFIX}.embeddings.shown"] = None  # forces a fresh editor on the last valid table


def synced_editor(name: str, current: Any, build: Callable[[], pd.DataFrame], **kwargs) -> pd.DataFrame:
    """A data_editor that shows `current` and keeps the user's (possibly invalid) edits.

    The editor edits a fixed base table; its widget state holds the edits. When `current`
    changes from elsewhere (a button, the CSV box, a lesson, the URL), the base is rebuilt and
    the widget gets a new key, so stale edits are never replayed on new data.
    """
    ss = st.session_state
    gen_key, base_key, shown_key = (f"{PREFIX}.{name}.gen", f"{PREFIX}.{name}.base",
                                    f"{PREFIX}.{name}.shown")
    gen = ss.get(gen_key, 0)
    if ss.get(shown_key) != current or base_key not in ss:
        gen += 1
        ss[gen_key], ss[base_key], ss[shown_key] = gen, build(), current
    key = f"{PREFIX}.{name}.editor.{gen}"
    if key not in ss:  # widget state dropped (page switch): start from the current valid table
        ss[base_key] = build()
    return st.data_editor(ss[base_key], key=key, **kwargs)


def mark_editor_shown(name: str, current: Any) -> None:
    """The editor's valid content became the settings: do not rebuild it next run."""
    st.session_state[f"{PREFIX}.{name}.shown"] = current


def _table_key(settings: WalkthroughSettings) -> tuple:
    return emb.table_key(settings.tokens, settings.embeddings)


def embeddings_editor(settings: WalkthroughSettings, *, expanded: bool,
                      notes=None) -> emb.EmbeddingTable:
    """The shared embeddings: edit cells, rows, dimensions, random, reset, CSV. Returns the valid
    table. Its warnings go to `notes` (default: under the editor)."""
    is_locked = locked("embeddings") or locked("tokens")
    table = None
    # a state-tracking expander: when it is closed its editor is not built at all (faster reruns)
    # a constant label (a changing one would make a new, re-closed expander); the shape is inside
    box = st.expander("Embeddings X · shared by the four pages", expanded=expanded,
                      icon=":material/table_edit:", on_change="rerun",
                      key=f"{EMBEDDINGS_OPEN}.{int(expanded)}")
    with box:
        if box.open:
            table = _editor_body(settings, is_locked)
    if table is None or _table_key_of(table) != _table_key(settings):  # else: checked already
        table = emb.check_embeddings(settings.tokens, settings.embeddings)
    for warning in table.warnings:
        (notes if notes is not None else st).warning(warning, icon=":material/warning:")
    return table


TOKEN_COLUMN_PX, DIM_COLUMN_PX = 120, 72  # fixed widths: readable, and cells at known places


def _editor_columns(d_in: int) -> dict:
    columns = {"token": st.column_config.TextColumn("token", max_chars=emb.MAX_TOKEN_CHARS,
                                                    width=TOKEN_COLUMN_PX)}
    for name in emb.dim_names(d_in):
        # text cells: a number cell drops what it cannot parse ("1e30" became 130, silently);
        # as text, every value reaches emb.validate_embedding_table as typed and is judged there
        columns[name] = st.column_config.TextColumn(name, width=DIM_COLUMN_PX, alignment="right")
    return columns


def _weight_columns(W) -> dict:
    """Text cells (see _editor_columns), each column as wide as its longest entry."""
    font = formatting.GRID_FONT_PX[state.lecture_mode()]
    frame = emb.weight_frame(W)
    columns = {}
    for name in frame.columns:
        widest = max(formatting.text_em(text) for text in [name, *frame[name]])
        px = math.ceil(widest * font + 2 * formatting.GRID_CELL_PADDING_PX)
        columns[name] = st.column_config.TextColumn(name, width=max(DIM_COLUMN_PX, px), alignment="right")
    return columns


def _editor_body(settings: WalkthroughSettings, is_locked: bool) -> emb.EmbeddingTable | None:
    """The editor, its validation, and the tools; returns the edited table when it is valid."""
    num_tokens, d_in = len(settings.embeddings), len(settings.embeddings[0])
    st.markdown(f"**{count(num_tokens, 'token')} × {count(d_in, 'dimension')}**, shape `({num_tokens}, {d_in})`")
    st.caption("One row per token, one column per dimension. Edit any cell or token name, "
               "add a row at the bottom, select rows to delete them. Every page uses the last "
               "valid table." + (" 🔒 Locked by the lesson." if is_locked else ""))
    current = _table_key(settings)
    edited = synced_editor(
        "embeddings", current, lambda: emb.editor_frame(settings.tokens, settings.embeddings),
        num_rows="dynamic", hide_index=True, disabled=is_locked, width="content",
        column_config=_editor_columns(d_in))
    try:
        table = emb.validate_embedding_table(edited)
    except ValueError as exc:
        st.error(f"Not applied: {exc} The pages keep using the last valid embeddings, "
                 f"shape ({num_tokens}, {d_in}).", icon=":material/block:")
        st.button("Discard my edits", key=f"{PREFIX}.discard", on_click=_on_discard_edits)
        table = None
    if table is not None and _table_key_of(table) != current and not is_locked:
        settings.tokens, settings.embeddings = table.tokens, table.embeddings
        mark_editor_shown("embeddings", _table_key(settings))
        clamp_query(settings)
    _embedding_tools(settings, is_locked)
    return table


def _table_key_of(table: emb.EmbeddingTable) -> tuple:
    return emb.table_key(table.tokens, table.embeddings)


def _embedding_tools(settings: WalkthroughSettings, is_locked: bool) -> None:
    message = st.session_state.pop(_msg_key(), None)
    if message:
        (st.error if message[0] == "error" else st.success)(message[1])
    d_in = len(settings.embeddings[0])
    with st.container(horizontal=True, gap="small"):
        st.button("Add a dimension", key=f"{PREFIX}.add_dim", on_click=_on_add_dim,
                  disabled=is_locked or d_in >= emb.MAX_DIMS, icon=":material/add:")
        st.button("Remove the last dimension", key=f"{PREFIX}.remove_dim", on_click=_on_remove_dim,
                  disabled=is_locked or d_in <= 1, icon=":material/remove:")
        st.button("Reset to the book's example", key=f"{PREFIX}.reset_book", on_click=_on_reset_book,
                  disabled=is_locked, icon=":material/menu_book:")
    if st.session_state.get(f"{PREFIX}.random_shape") != (len(settings.tokens), d_in):
        for key in (RANDOM_TOKENS, RANDOM_DIMS):  # the table changed size (CSV, edit, link): the boxes follow
            state.forget_number(key)
        st.session_state[f"{PREFIX}.random_shape"] = (len(settings.tokens), d_in)
    # a refused entry is said under the row, at full width (state.refusals_below)
    with state.refusals_below(), st.container(horizontal=True, vertical_alignment="bottom", gap="small"):
        for label, key, start in (("Tokens", RANDOM_TOKENS, len(settings.tokens)),
                                  ("Dimensions", RANDOM_DIMS, d_in)):
            state.checked_number(label, key=key, kind=int, rules=RANDOM_RULES[key], value=start,
                                 width=130, disabled=is_locked)
        state.number_field(settings, "embed_seed", prefix=PREFIX, label="Seed", disabled=is_locked, width=150)
        st.button("Random embeddings", key=f"{PREFIX}.random", on_click=_on_random,
                  disabled=is_locked, icon=":material/casino:",
                  help="Uniform values in [0, 1), rounded to 2 decimals like the book's, from the seed.")
    with st.popover("Paste or download CSV", icon=":material/content_paste:"):
        st.text_area("CSV: one line per token, name then values", key=f"{PREFIX}.csv_text",
                     height=160, disabled=is_locked,
                     placeholder="token,d1,d2,d3\nYour,0.43,0.15,0.89\njourney,0.55,0.87,0.66",
                     help="Commas, semicolons or tabs (with semicolons or tabs, 0,55 is read as "
                          "0.55); a header line is optional; lines of numbers only get names t1, t2, ...")
        st.button("Apply CSV", key=f"{PREFIX}.apply_csv", on_click=_on_apply_csv, disabled=is_locked)
        st.download_button("Download as CSV", key=f"{PREFIX}.download_csv", on_click="ignore",
                           data=lambda: emb.embeddings_to_csv(settings.tokens, settings.embeddings),
                           file_name="embeddings.csv", mime="text/csv")


# ----------------------------------------------------------------------------------- presets
def _apply_setup(name: str) -> None:
    """Set the fields of a book example (and the book's embeddings); locked fields stay."""
    for field, value in wt.BOOK_SETUPS[name].items():
        state.set_field(PREFIX, field, value)
    if not (locked("embeddings") or locked("tokens")):
        _set_table(wt._book_tokens(), wt._book_rows())


def show_book_code(fn: Callable, check: str) -> None:
    """The book's class (its `__init__` too: the weights, the mask buffer), shown for comparison
    beside the code that computed the page.

    The steps on screen come from `attention_intermediates` (every intermediate matrix kept, in
    float64); the book's class returns only the final context vectors. Both run on every page
    load, and the badge named by `check` compares their results.
    """
    name = getattr(fn, "__qualname__", str(fn))
    show_code(fn, label=f"Compare: the book's {name}",
              note=(f"For comparison: the numbers on this page were computed by the code above "
                    f"(`attention_intermediates`, which keeps every step). The book's `{name}` "
                    f"was run on the same inputs and weights, and the badge “{check}” under "
                    "**Checks** at the top of the page shows that both give the same context vectors."))


def book_setup_button(name: str, label: str, where=st) -> None:
    if state.controls_are_hidden():  # in the closed Settings popover (see Controls)
        return
    where.button(label, key=f"{PREFIX}.setup.{name}", on_click=_apply_setup, args=(name,),
                 icon=":material/menu_book:",
                 help="The book's embeddings and settings for this printed example.")


# ----------------------------------------------------------------------------------- dropout
DROPOUT_STEP = 0.05  # the Dropout p slider's step


def dropout_slider(settings: WalkthroughSettings, width: int = 300) -> float:
    """The Dropout p slider: the value it shows is the value used. A link's (or a lesson's)
    value between two steps, 0.123, is kept and shown in full, not rounded to 0.12 while the
    slider said 0.123; only the float noise of the browser's step arithmetic is removed."""
    shown = st.session_state.get(state.widget_key(PREFIX, "dropout_p"), settings.dropout_p)
    return state.bound(st.slider, "Dropout p", settings, "dropout_p", prefix=PREFIX, min_value=0.0,
                       max_value=0.9, step=DROPOUT_STEP, width=width,
                       format=slider_format(on_step(shown, DROPOUT_STEP)),
                       from_widget=lambda v: on_step(v, DROPOUT_STEP),
                       help="Probability of zeroing each attention weight (only in training mode).")


def on_step(value: float, step: float) -> float:
    """`value` on the step grid without float noise (0.15000000000000002 -> 0.15); a value
    between two steps (0.123 from a link) is returned as it is."""
    steps = float(value) / step
    if abs(steps - round(steps)) < 1e-9:
        return round(round(steps) * step, 10)
    return float(value)


def slider_format(value: float) -> str:
    """A printf format that writes `value` in full, with at least 2 decimals (0.123 -> "%0.3f"):
    the slider's default "%0.2f" would show 0.12 for it."""
    decimals = -Decimal(repr(float(value))).normalize().as_tuple().exponent
    return f"%0.{min(max(2, decimals), 15)}f"


# ----------------------------------------------------------------------------------- projection
VARIANT_LABELS = {"v1": "V1 · nn.Parameter(torch.rand)", "v2": "V2 · nn.Linear"}


def projection_controls(settings: WalkthroughSettings, d_in: int) -> self_attention.Projection:
    """Variant, d_out, seed and bias of W_q, W_k, W_v (for the Settings popover); returns the
    projection. The hand-edit tables are `weights_editor`, in the page itself. A refused d_out or
    seed is said under the row, not in the box's 130 or 210 px (state.refusals_below)."""
    with state.refusals_below(), st.container(horizontal=True, vertical_alignment="bottom", gap="medium"):
        state.bound(st.segmented_control, "Weights", settings, "variant", prefix=PREFIX,
                    options=["v1", "v2"], format_func=VARIANT_LABELS.get, required=True, wrap=True,
                    from_widget=lambda v: v if v in ("v1", "v2") else settings.variant,
                    help="V1 draws W from torch.rand (uniform 0..1); V2 uses nn.Linear "
                         "(uniform ±1/√d_in, optional bias).")
        state.number_field(settings, "d_out", prefix=PREFIX, label="d_out", width=130,
                           help="Width of each query, key and value vector.")
        state.number_field(settings, "weight_seed", prefix=PREFIX, label="Seed", width=210,
                           help="torch.manual_seed(seed) before building the weights.")
        state.bound(st.checkbox, "qkv_bias", settings, "qkv_bias", prefix=PREFIX,
                    disabled=settings.variant == "v1",
                    help="nn.Linear(..., bias=True) adds a bias vector to Q, K and V (V2 only).")
    return self_attention.projection_for(settings, d_in)


def weights_editor(settings: WalkthroughSettings, projection: self_attention.Projection, d_in: int,
                   where, notes=None) -> self_attention.Projection:
    """The collapsed "Edit W_q, W_k, W_v by hand" panel inside `where`; its note (hand-edited
    weights that no longer fit) goes to `notes`. Returns the projection with the edits applied."""
    if projection.note:
        (notes if notes is not None else where).warning(projection.note, icon=":material/warning:")
    with where:
        _weights_editor(settings, projection, d_in)
    return self_attention.projection_for(settings, d_in)


def _copy_weights(d_in: int) -> None:
    settings = st.session_state[PREFIX]
    seeded = self_attention.seeded_projection(d_in, settings.d_out, settings.variant, settings.weight_seed,
                                  settings.qkv_bias and settings.variant == "v2")
    state.set_field(PREFIX, "custom_weights", [W.tolist() for W in seeded.matrices()])


def _weights_editor(settings: WalkthroughSettings, projection: self_attention.Projection, d_in: int) -> None:
    is_locked = locked("custom_weights")
    # a constant label: a changing one would make a new expander and close it
    box = st.expander("Edit W_q, W_k, W_v by hand", icon=":material/edit:", on_change="rerun",
                      key=WEIGHTS_OPEN)
    with box:
        if not box.open:
            return
        if not projection.edited:
            st.caption("The weights come from the seed. Copy them into tables to change any entry.")
            st.button("Copy the seeded weights into editable tables", key=f"{PREFIX}.copy_weights",
                      on_click=_copy_weights, args=(d_in,), disabled=is_locked)
            if settings.custom_weights:  # kept, but they do not fit the current shapes
                st.button("Forget the hand-edited weights", key=f"{PREFIX}.seeded_weights",
                          disabled=is_locked, on_click=state.set_field,
                          args=(PREFIX, "custom_weights", []))
            return
        st.caption("Rows: input dimensions (d_in); columns: output dimensions (d_out); "
                   "the book's x @ W convention. Invalid entries are reported and not used.")
        # each table as wide as its columns, in a row that wraps: in a third of the row each (1024
        # px) their last column was hidden behind a scroll bar. Refusals go under the row
        refused = []
        with st.container(horizontal=True, gap="medium"):
            for k, (name, W) in enumerate(zip(("W_q", "W_k", "W_v"), projection.matrices())):
                with st.container(width="content"):
                    st.markdown(f"**{name}** `{wt.shape_text(W)}`")
                    current = tuple(tuple(row) for row in settings.custom_weights[k])
                    edited = synced_editor(f"w{k}", current, lambda W=W: emb.weight_frame(W),
                                           num_rows="fixed", disabled=is_locked, width="content",
                                           column_config=_weight_columns(W))
                try:
                    values = emb.validate_weight_table(edited, name, tuple(W.shape),
                                                      current=settings.custom_weights[k])
                except ValueError as exc:
                    refused.append(f"Not applied: {exc}")
                    continue
                if values != settings.custom_weights[k]:
                    settings.custom_weights[k] = values
                    mark_editor_shown(f"w{k}", tuple(tuple(row) for row in values))
        for message in refused:
            st.error(message, icon=":material/block:")
        st.button("Back to the seeded weights", key=f"{PREFIX}.seeded_weights", disabled=is_locked,
                  on_click=state.set_field, args=(PREFIX, "custom_weights", []))


# ----------------------------------------------------------------------------------- badges
_FAILED = f"{PREFIX}.failed_checks"  # set while `badge_row` collects the bar's badges


_MATCHED = f"{PREFIX}.book_matches"  # set while `badge_row` collects the bar's badges


def _failed(label: str) -> None:
    failed = st.session_state.get(_FAILED)
    if failed is not None:
        failed.append(label)


def _matched(label: str, detail: str) -> None:
    """A book badge that matched: repeated on the page above the step, outside lecture mode (a
    student checking the app against the book looks for it first, not inside the Checks popover)."""
    matched = st.session_state.get(_MATCHED)
    if matched is not None:
        matched.append((label, detail))


def sdpa_badge(check: wt.SdpaCheck) -> None:
    """Green when our step-by-step result equals PyTorch's fused attention kernel."""
    if check.agrees:
        st.badge(f"Agrees with PyTorch F.scaled_dot_product_attention · max difference "
                 f"{check.max_diff:.1e}", icon=":material/check_circle:", color="green",
                 help=f"Compared: {check.note}.")
    else:
        label = (f"Differs from PyTorch F.scaled_dot_product_attention · max difference "
                 f"{check.max_diff:.1e}")
        st.badge(label, icon=":material/error:", color="red", help=f"Compared: {check.note}.")
        _failed(label)


@contextlib.contextmanager
def badge_row(bar: StepBar | None = None):
    """A row that wraps its badges instead of truncating them. With the page's `bar`, the row
    goes into its "Checks" popover, and every check that fails is repeated on the page."""
    if bar is None:
        with st.container(horizontal=True, gap="small"):
            yield
        return
    st.session_state[_FAILED], st.session_state[_MATCHED] = [], []
    try:
        with bar.checks:
            st.markdown("**Checks**: the page's numbers computed two ways")
            with st.container(horizontal=True, gap="small"):
                yield
    finally:
        failed = st.session_state.pop(_FAILED, [])
        matched = st.session_state.pop(_MATCHED, [])
    if state.lecture_mode():  # a projector's first screen is for the step: the lecturer opens Checks
        matched = []
    if failed or matched:
        with st.container(horizontal=True, gap="small"):
            for label in failed:
                st.badge(label, color="red", icon=":material/error:")
            for label, detail in matched:
                st.badge(label, color="green", icon=":material/menu_book:", help=detail)


def formula_with_words(formula: str, words: str) -> None:
    """A formula and a few words after it, centred in a row that wraps: the words go under the
    formula where both do not fit, and wrap themselves (as LaTeX text they were one unbreakable
    line, past a phone's column: KaTeX does not wrap, it cuts)."""
    with st.container(horizontal=True, horizontal_alignment="center", vertical_alignment="center",
                      gap="small"):
        st.latex(formula, width="content")
        st.markdown(words, width="content")  # our own words: no text from outside reaches them


def sum_over_lines(latex: str, per_line: int = 2) -> str:
    r"""An aligned formula of formatting.dot_product_latex or weighted_sum_latex with its written-out
    sum broken into lines of `per_line` terms ("&= a + b \\ &\quad + c"). On one line three
    products ran past a half-page column at 1024 px ("0.55 · 0.43 + 0.87 · 0.15 ·", and no more)."""
    lines = []
    for line in latex.split(r" \\ "):
        if line.startswith("&= ") and " + " in line:
            terms = line[len("&= "):].split(" + ")
            line = "&= " + r" \\ &\quad + ".join(" + ".join(terms[k:k + per_line])
                                                 for k in range(0, len(terms), per_line))
        lines.append(line)
    return r" \\ ".join(lines)


def check_badge(label: str, diff: float, tol: float = 1e-9) -> None:
    """A badge for 'two ways of computing agree' with their max difference."""
    ok = diff <= tol
    text = f"{label} · max difference {diff:.1e}"
    st.badge(text, color="green" if ok else "red",
             icon=":material/check_circle:" if ok else ":material/error:",
             help="The largest |a − b| over all the numbers, computed in float64; for numbers larger "
                  "than 1, as a share of the largest (rounding grows with the numbers).")
    if not ok:
        _failed(text)


def book_badge(reference, ours, short: str = "") -> None:
    """Green when the page reproduces the numbers printed in the book (`short`: which of them,
    where a page checks several)."""
    if reference is None:
        return
    what, rows = reference
    ok = wt.book_rows_match(ours, rows)
    printed = "; ".join(" ".join(f"{v:.4f}" for v in row) for row in rows[:2])
    text = f"{'Matches' if ok else 'Does not match'} the book{f' ({short})' if short else ''}: {printed}"
    st.badge(text, color="green" if ok else "red", icon=":material/menu_book:", help=what)
    if not ok:
        _failed(text)
    else:
        _matched(f"Matches the book{f' ({short})' if short else ''}", f"{what}: {printed}")


# ----------------------------------------------------------------------------------- predict
def predict_then_reveal(settings: WalkthroughSettings, qid: str, prompt: str, options: Sequence,
                        format_func: Callable[[Any], str], is_right: Callable[[Any], bool],
                        answer: str) -> bool:
    """Ask first when "predict, then reveal" is on. Returns True when the result may be shown.
    In a class the question is a class poll (ui.class_polls), whatever the switch says."""
    in_class = class_polls.class_poll(qid, prompt, options, format_func, is_right, answer)
    if in_class is not None:
        return in_class
    if not settings.predict:
        return True
    ss = st.session_state
    guess_key, input_key = f"{PREFIX}.guess.{qid}", f"{PREFIX}.guess_input.{qid}"
    with st.container(border=True):
        if guess_key not in ss:
            st.markdown(f"**Predict first:** {prompt}")
            choice = st.radio("Your guess", list(options), format_func=format_func, index=None,
                              key=input_key, horizontal=len(options) <= 8)
            st.button("Commit my guess", key=f"{PREFIX}.commit.{qid}", disabled=choice is None,
                      type="primary", on_click=lambda: ss.__setitem__(guess_key, ss.get(input_key)))
            st.caption("The answer stays hidden until you commit a guess.")
            return False
        guess = ss[guess_key]
        if is_right(guess):
            st.success(f"You guessed **{format_func(guess)}**: right! {answer}", icon=":material/celebration:")
        else:
            st.warning(f"You guessed **{format_func(guess)}**: not quite. {answer}", icon=":material/lightbulb:")
        st.button("Ask me again", key=f"{PREFIX}.again.{qid}",
                  on_click=lambda: (ss.pop(guess_key, None), ss.pop(input_key, None)))
    return True


# ----------------------------------------------------------------------------------- charts
LECTURE_WIDTH = 720  # plot width available to one chart when lecture mode stacks them
# lecture mode: heatmap cells grow to use the width (up to LECTURE_FILL_W for the panel) but stay
# short enough that a 6 x 6 map fits under the step bar of a 1280 x 720 projector (LECTURE_FILL_H)
LECTURE_FILL_W, LECTURE_FILL_H, LECTURE_CELL_MIN, LECTURE_CELL_MAX = 720, 400, 54, 90
LECTURE_COLUMN_W = 400  # the cells' share of a map drawn in the wider (3/5) of two columns


def lecture_cell(n_rows: int, n_cols: int, panel_width: int = LECTURE_FILL_W) -> int:
    """The side of a heatmap cell in lecture mode (px): as large as the panel allows."""
    fill = min(panel_width / max(n_cols, 1), LECTURE_FILL_H / max(n_rows, 1))
    return int(max(LECTURE_CELL_MIN, min(LECTURE_CELL_MAX, fill)))


def show_matrix(matrix, rows: Sequence[str], cols: Sequence[str], *, name: str, title: str,
                caption: str, x_title: str = "", y_title: str = "", decimals: int = 2,
                domain=None, special=None, highlight_row: int | None = None,
                max_width: int = 640, row_axis: bool = True,
                lecture_width: int = LECTURE_FILL_W) -> None:
    """A labelled heatmap (viz.heatmap) with its shape in the title; says so when the cells are
    too small for their numbers, and then offers the numbers as a table. `lecture_width`: the
    cells' share of the width in lecture mode (less in a column)."""
    values = np.asarray(matrix, dtype=np.float64)
    lecture = state.lecture_mode()
    cell = None
    if lecture:
        max_width = LECTURE_WIDTH
        if values.ndim == 2 and values.shape[1] * LECTURE_CELL_MIN <= max_width:
            cell = lecture_cell(*values.shape, panel_width=lecture_width)
            max_width = max(max_width, cell * values.shape[1])
    options = dict(title=f"{title}  {wt.shape_text(values)}", x_title=x_title, y_title=y_title,
                   fmt=wt.number_format(values, decimals), lecture=lecture, domain=domain,
                   special=special, cell=cell, highlight_row=highlight_row, max_width=max_width,
                   row_axis=row_axis or lecture, x_on_top=True)
    rows, cols = list(rows), list(cols)

    def build():
        return viz.heatmap(values, rows, cols, **options)

    inputs = ("heatmap", values, rows, cols, options)
    # whether the numbers fit decides the caption, so it is known before the chart is drawn
    figure = kept_figure(build, inputs, inspect=lesson_charts.values_written)
    fits = figure.facts
    if not fits:
        caption += " The values are hidden at this size (too many columns to print them): " \
                   "hover a cell, or open the table below."
    show_figure(build, inputs, name=name, caption=caption, figure=figure)
    if not fits:
        with st.expander(f"{title}: the numbers", icon=":material/table:"):
            st.dataframe(pd.DataFrame(values, index=list(rows), columns=list(cols)))


def show_bars(values, labels: Sequence[str], *, name: str, title: str, caption: str,
              x_title: str = "", y_title: str = "", highlight: int | None = None,
              domain=None, series: dict[str, Sequence[float]] | None = None,
              max_width: int = 360, decimals: int = 4) -> None:
    """Bars with the value on each (viz.bar_chart), or side-by-side series (viz.grouped_bars);
    the shape goes in the title."""
    lecture = state.lecture_mode()
    if lecture:
        max_width = LECTURE_WIDTH
    arr = np.asarray(values, dtype=np.float64)
    series = series or {"": arr}
    n_bars = len(labels) * len(series)
    fmt = wt.number_format(np.concatenate([np.asarray(v, dtype=np.float64).ravel()
                                           for v in series.values()]), decimals)
    series = {k: np.asarray(v, dtype=np.float64) for k, v in series.items()}
    labels = list(labels)
    options = dict(title=f"{title}  {wt.shape_text(arr)}", x_title=x_title, y_title=y_title,
                   fmt=fmt, lecture=lecture, highlight=highlight, domain=domain,
                   width=max(200, min(56 * n_bars, max_width)), height=300 if lecture else 240)
    if len(labels) > 16:
        caption += " Too many bars to write their values: hover a bar to read it."
    show_figure(lambda: viz.grouped_bars(series, labels, **options), ("bars", series, labels, options),
                name=name, caption=caption)


def numbers_line(label: str, values: Sequence[float], decimals: int = 4) -> None:
    """The numbers as text too, to copy and compare with the book."""
    text = "  ".join(wt.fmt_number(float(v), decimals) for v in values)
    st.markdown(f"{label} `{text}`")
