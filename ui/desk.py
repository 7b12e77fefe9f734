"""What a browser made comes back after a page reload (server.desks): its trained runs, its Small
LM race, a student's seat in a class (KEPT says what, and why a lecturer's seat is not).

Session state lives as long as the browser tab's connection: a reload (F5, or a laptop browser
that discarded a background tab and loads it again) starts a new, empty session. So each browser
gets a random desk token in a cookie; every whole-page run files what the session made on that
desk (by reference: nothing is copied), and a new session of the same browser that has nothing of
its own takes back what the session it replaced left, with a notice saying so.

The cookie holds only that random token (no name, nothing tracked), and is read by the server
when a tab connects (`st.context.cookies`): a token set during a session counts from its next
session on, which is exactly when it is needed.
"""

from __future__ import annotations

import logging
import re
import secrets

import streamlit as st

from core import budget, runs
from core.classroom.security import escape_markdown, normalize_code
from server import runtime
from server.desks import DESKS, Desks, Filed
from ui.live import session_owner
from ui import classroom
from ui.classroom import LED_CLASS, MEMBER_SEAT, MemberSeat
from ui.training import RUNBOOK_KEY

log = logging.getLogger(__name__)

COOKIE = "attention_lab_desk"
COOKIE_DAYS = 30
TOKEN_KEY = "desk.token"  # this session's desk token
FROM_COOKIE_KEY = "desk.from_cookie"  # the token came with the browser (not made for this session)
CHECKED_KEY = "desk.checked"  # the desk was looked at for work left behind (once per session)
NOTICE_KEY = "desk.notice"  # what came back, shown once
SMALL_LM_RACE_KEY = "small_lm.race"  # pages/6_small_lm.py's trained race (three models side by side)
# What a session made that a reload must not lose: its runs, its race, and a student's seat in a
# class (joining again needed another nickname, and the class counted the student twice). A
# lecturer's seat is NOT kept: on a lectern PC shared with students, the next person to open the
# app would hold the class; the lecturer types the key again (docs/CLASS.md). Only the class's
# join code is kept (LED_CLASS, public anyway: it was on the projector), so the start form names it.
KEPT = (RUNBOOK_KEY, SMALL_LM_RACE_KEY, MEMBER_SEAT, LED_CLASS)
TOKEN_RE = re.compile(r"[A-Za-z0-9_-]{22}")  # secrets.token_urlsafe(16)


def desks() -> Desks:
    """The server's desks (a function, so a test can give a page its own)."""
    return DESKS


def session_is_connected(session_id: str) -> bool | None:
    """Whether another session is a connected tab; None when the server cannot say."""
    return runtime.is_connected(session_id)


def _session_id() -> str | None:
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx()
    return None if ctx is None else ctx.session_id


def token() -> str:
    """This browser's desk token: from its cookie, or a new one (sent to the browser once)."""
    ss = st.session_state
    if TOKEN_KEY not in ss:
        sent = st.context.cookies.get(COOKIE) if st.context.cookies else None
        if isinstance(sent, str) and TOKEN_RE.fullmatch(sent):
            ss[TOKEN_KEY], ss[FROM_COOKIE_KEY] = sent, True
        else:  # no cookie yet (first visit), or one this server did not make: a new desk
            ss[TOKEN_KEY] = secrets.token_urlsafe(16)
    return ss[TOKEN_KEY]


def send_cookie() -> None:
    """Ask the browser to keep this session's desk token: a script that draws nothing, at the end
    of the page (every whole-page run sends the same element, so nothing on the page moves when
    it comes or goes). `value` is always TOKEN_RE's shape: nothing from outside reaches the script."""
    value = st.session_state.get(TOKEN_KEY)
    if value is None or not TOKEN_RE.fullmatch(value):
        return
    max_age = COOKIE_DAYS * 24 * 3600
    st.html(f"<script>document.cookie = '{COOKIE}={value}; path=/; max-age={max_age}; "
            "SameSite=Lax';</script>", unsafe_allow_javascript=True)


def restore(book: runs.RunBook) -> list[runs.Run]:
    """Make a departed session's runs this session's: queued under this session's name, and
    paused (a reload must not start training on its own). Returns the runs it paused."""
    old_owner = book.owner
    book.owner = session_owner()
    if old_owner != book.owner:
        budget.SLOTS.leave(old_owner)
    paused = [run for run in book.runs if run.status == "running"]
    for run in paused:
        runs.pause(run)
    for run in paused:
        # The departed session's last tick may still be training a slice of it (pause only stops
        # the next one): wait for that slice, so the step the notice says is where the run stays
        # (a browser test read "paused at step 95" over a run at step 96).
        with run.lock:
            pass
    st.session_state[RUNBOOK_KEY] = book
    return paused


def _reclaim_seat(desk: str) -> None:
    """A student's seat in a class, taken back from the class's database when this server has
    nothing of the browser in memory: the server restarted (or redeployed) and lost every session,
    and the student found their nickname taken by their old self. Only for a browser that came
    with its desk cookie, on a server with class mode on, and never while a session of this server
    knows the desk (a live tab of the same browser keeps its seat: taking it back would sign that
    tab out)."""
    if not st.session_state.get(FROM_COOKIE_KEY) or desks().knows(desk) or classroom.lecturer_key() is None:
        return
    try:
        found = classroom.class_store().reclaim_seat(desk)
    except Exception:  # noqa: BLE001 - the database cannot be reached: the student joins again
        log.exception("taking back a class seat failed")
        return
    if found is None:
        return
    code, member, member_token = found
    seat = MemberSeat(code, member_token, member.nickname)
    st.session_state[MEMBER_SEAT] = seat
    st.session_state[NOTICE_KEY] = back_words(None, [], None, seat, None)


def back_words(book: runs.RunBook | None, paused: list[runs.Run], race_step: int | None = None,
               seat: MemberSeat | None = None, led: str | None = None) -> str:
    """The notice for what came back after a reload: the Train page's runs, the Small LM race, a
    student's seat in a class, the code of the class the lecturer ran (`led`)."""
    trained = book.trained() if book is not None else []
    parts = []
    if seat is not None:
        parts.append(f"your seat in class {seat.code} (as “{escape_markdown(seat.nickname)}”)")
    if trained:
        names = ", ".join(run.label for run in trained[:4]) + (" …" if len(trained) > 4 else "")
        parts.append(f"the {runs_word(len(trained))} ({names})")
    if race_step:
        parts.append(f"the Small language model race at step {race_step:,}")
    words = "Welcome back."
    if parts:
        listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
        words = ("Welcome back: what this browser had before the page was reloaded (or closed) is here "
                 f"again: {listed}.")
    if led:
        words += (f" You were running class {led}: on the Class page (Lecturer tab) its code is filled in; "
                  "type the lecturer key to take it back.")
    if paused:
        words += (f" {paused[0].label} was training: it is paused at step {paused[0].step:,}; "
                  "press Resume on the Train page to go on.")
    if race_step:
        words += " The race waits: press Start on its page to go on."
    return words


def runs_word(n: int) -> str:
    return "trained run" if n == 1 else f"{n} trained runs"  # "the 3 trained runs this browser had"


def keep_and_restore() -> None:
    """Once per whole-page run, from the entry point: take back what this browser's previous
    session left (first run only), file what this session made, and show what came back once."""
    ss = st.session_state
    session_id = _session_id()
    if session_id is None:
        return
    desk = token()
    if not ss.get(CHECKED_KEY):
        ss[CHECKED_KEY] = True
        if not any(key in ss for key in KEPT):
            _take_back(desk, session_id)
    made = {key: ss[key] for key in KEPT if key in ss}
    if made:  # also a run before its first step: it may train in the page's ticks from now on
        desks().file(desk, session_id, made)
    notice = ss.pop(NOTICE_KEY, None)
    if notice:
        st.success(notice, icon=":material/history:")


def _trained_runs(filed: Filed) -> runs.RunBook | None:
    book = filed.things.get(RUNBOOK_KEY)
    return book if isinstance(book, runs.RunBook) and book.trained() else None


def _trained_race(filed: Filed):
    race = filed.things.get(SMALL_LM_RACE_KEY)
    return race if getattr(race, "step", 0) > 0 else None


def _seat(filed: Filed) -> MemberSeat | None:
    seat = filed.things.get(MEMBER_SEAT)
    return seat if isinstance(seat, MemberSeat) else None


def class_is_running(code: str) -> bool:
    """Whether class `code` still runs (one read of the class store, only for a browser that ran a
    class); False when the store cannot say: the notice then does not name it."""
    from ui.classroom import class_store

    try:
        return class_store().find_class(code) is not None
    except Exception as exc:  # any database failure (SQLAlchemy's own errors included): say nothing
        log.warning("the class store could not say whether class %s runs: %s", code, exc)
        return False


def _led(filed: Filed) -> str | None:
    code = filed.things.get(LED_CLASS)
    return code if isinstance(code, str) and code and normalize_code(code) == code else None


def _holds_work(filed: Filed) -> bool:
    return (_trained_runs(filed) is not None or _trained_race(filed) is not None or _seat(filed) is not None
            or _led(filed) is not None)


def _take_back(desk: str, session_id: str) -> None:
    def connected(other: str) -> bool:
        answer = session_is_connected(other)
        return answer is not False  # unknown: treat as connected, never take a live tab's work

    filed = desks().take_left_behind(desk, session_id, connected, wanted=_holds_work)
    if filed is None:
        _reclaim_seat(desk)
        return
    book, race, seat, led = _trained_runs(filed), _trained_race(filed), _seat(filed), _led(filed)
    paused = restore(book) if book is not None else []
    if race is not None:  # it trains only while the page's Start flag is set: a new session has none
        st.session_state[SMALL_LM_RACE_KEY] = race
    if seat is not None:  # the class's follow panel checks the class is still open on this run
        st.session_state[MEMBER_SEAT] = seat
    if led is not None and not class_is_running(led):
        led = None  # deleted or ended since: nothing to take back
    if led is not None:  # the Class page fills it into the start form (ui.class_page._offer_led_class)
        st.session_state[LED_CLASS] = led
    st.session_state[NOTICE_KEY] = back_words(book, paused, race.step if race is not None else None, seat, led)
