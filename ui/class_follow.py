"""Follow the lecturer: the lecturer's page and lesson settings (the step included) are published to
the class store after each run; a student in the class follows them.

* `publish_lecturer_state(url)`: run by streamlit_app.py after the page, for a lecturer's session;
  it writes only when the page or the settings changed (one small row per move).
* `follow_panel(url)`: the student's sidebar block: "Follow the lecturer" (on by default, off to
  explore freely), where the lecturer is, and "Catch up". A fragment checks the class's pulse
  (the published version and the revealed questions; one database read shared by the class, see
  ClassroomStore.pulse); when it moved and the student follows, the student's settings for that
  page are replaced by the lecturer's and the page is switched (so they land on the lecturer's
  step). The same fragment reruns the page when a class poll it shows was revealed
  (ui.class_polls.await_reveal). The server runs the fragment when the pulse changes
  (server/class_push.py: no timer per student); its own timer is a slow safety net
  (FOLLOW_SAFETY_S), or FOLLOW_TICK_S where the server cannot wake sessions.
The settings travel as the URL query parameters the pages already keep (ui.state.sync_url).
The page runs the tick starts are marked (`follow_move_run`): on a busy server they wait behind
the runs that students clicked for, so a click is answered first.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

import streamlit as st

from core import settings as core_settings
from core.classroom.security import ClassroomError
from server import class_push
from ui import classroom, nav
from ui import state as ui_state
from ui.class_polls import AWAITING_KEY, SHOWN_KEY, left_words

log = logging.getLogger(__name__)

FOLLOW_TICK_S = 1.0  # without the server's wake-up (server/class_push.py): the panel's tick
FOLLOW_SAFETY_S = 10.0  # with it: a safety net only (a wake-up given up on a session busy for 30 s)
FOLLOW_KEY = "class.follow"  # the student's toggle (its widget state)
FOLLOWING_KEY = "class.following"  # the student's choice, kept apart from the widget's state
CATCH_UP_KEY = "class.catch_up_now"  # set by the "Catch up" button, read by the next tick
SEEN_KEY = "class.seen_version"  # the lecturer-state version this student last went to
TRIED_KEY = "class.follow_tried"  # a Tried: the last go_to
FOLLOW_TRIES = 3  # goes to one lecturer place at most this often when the move was lost
PUBLISHED_KEY = "class.published"  # what this lecturer session last published
MOVE_KEY = "class.follow_move"  # set just before the tick reruns the page: nobody clicked for that run
LEFT_KEY = "class.left_notice"  # why the tick took this student out of the class (shown on the next run)
LOCAL_PARAMS = ("lecture", classroom.JOIN_PARAM)  # per-browser parameters, never published

# the pages outside the lesson catalogue, by url path
OTHER_PAGES = {"home": ("pages/home.py", "Home"), "class": ("pages/11_class.py", "Class")}
# which settings object (ui.state prefix) each page keeps its controls in
PAGE_PREFIX = {"simple_attention": "walkthrough", "self_attention": "walkthrough",
               "causal_attention": "walkthrough", "multi_head": "walkthrough", "tokens_data": "tokens",
               "small_lm": "small_lm", "train_gpt": "train", "sample_names": "sample",
               "inside_model": "inside", "pitfalls": "pitfalls"}


def page_file(url: str) -> str | None:
    for lesson in nav.LESSONS:
        if lesson.url == url:
            return lesson.file
    return OTHER_PAGES.get(url, (None, None))[0]


def page_title(url: str) -> str:
    for lesson in nav.LESSONS:
        if lesson.url == url:
            return lesson.title
    return OTHER_PAGES.get(url, (None, url))[1]


def shared_params() -> dict[str, str]:
    """This page's settings as the URL holds them, less the per-browser parameters."""
    return {k: v for k, v in st.query_params.to_dict().items() if k not in LOCAL_PARAMS}


def place(url: str) -> tuple[str, list]:
    """Where this session is: its page and its settings, comparable and storable."""
    return url, sorted(shared_params().items())


class Tried(NamedTuple):
    """A student's last go_to: the lecturer's version, where the student was, how often, and
    whether the student then reached the lecturer's place (after that, their clicks are theirs)."""
    version: int
    origin: tuple[str, list]
    tries: int
    arrived: bool = False


def step_of(settings: dict) -> str | None:
    """The step named in a page's settings (pages 1–4 keep it in a `*step` field)."""
    steps = [v for k, v in settings.items() if k.endswith("step")]
    return steps[0] if steps else None


def where_words(url: str, settings: dict) -> str:
    step = step_of(settings)
    return page_title(url) + (f", step “{step}”" if step else "")


# ------------------------------------------------------------------------------------ lecturer
def publish_lecturer_state(url: str) -> None:
    """Publish where this lecturer is, when it changed. Never breaks the page it runs after."""
    seat = classroom.lecturer_seat()
    if seat is None or classroom.lecturer_key() is None:
        return
    moved = place(url)
    if st.session_state.get(PUBLISHED_KEY) == moved:
        return
    try:
        classroom.class_store().publish_state(seat.code, seat.token, url, None, dict(moved[1]))
    except ClassroomError:
        return  # the class ended; the Class page says so
    except Exception:  # noqa: BLE001 - the database is unreachable: the page itself must still work
        log.exception("publishing the lecturer's place failed")
        return
    st.session_state[PUBLISHED_KEY] = moved


# ------------------------------------------------------------------------------------- student
def follow_panel(url: str) -> None:
    """The student's sidebar block (nothing outside a class)."""
    seat = classroom.member_seat()
    if seat is None or classroom.lecturer_key() is None or classroom.lecturer_seat() is not None:
        class_push.forget()
        left = st.session_state.pop(LEFT_KEY, None)
        if left is not None:  # the tick just took the student out of the class: say why, once,
            # at the top of the page (a phone keeps the sidebar closed) and in the sidebar, where
            # the class panel was
            st.warning(left, icon=":material/groups:")
            st.sidebar.warning(left, icon=":material/groups:")
        if seat is None and classroom.lecturer_seat() is None and classroom.lecturer_key() is not None:
            _unseated_lecturer(url)
        return
    ss = st.session_state
    ss.setdefault(FOLLOWING_KEY, bool(ss.get(FOLLOW_KEY, True)))
    # The toggle is handed the student's choice on every run. A browser forgets a widget that a run
    # did not draw (the Class page before joining again, e.g. after a server restart) and, unless the
    # server sets its value, brings it back at its default: off. 35 of 60 rejoined students stopped
    # following that way in a --soak run of the simulator, which keeps widget state as the frontend does.
    ss[FOLLOW_KEY] = ss[FOLLOWING_KEY]
    # this run's page lists the polls it waits on afresh (the tick below runs first, on last run's list)
    st.session_state.pop(AWAITING_KEY, None)
    st.session_state.pop(SHOWN_KEY, None)
    with st.sidebar, st.container(border=True, key="class_follow"):
        st.markdown(f"**Class {seat.code}**")
        st.toggle("Follow the lecturer", key=FOLLOW_KEY, on_change=_keep_choice,
                  help="On: you go where the lecturer goes. Off: explore freely; “Catch up” brings you back.")
        # before the tick reads the pulse: a move from now on wakes this session (server/class_push.py)
        pushed = _watch(seat.code)
        st.fragment(_follow_tick, run_every=FOLLOW_SAFETY_S if pushed else FOLLOW_TICK_S,
                    key=class_push.FRAGMENT_KEY)(seat.code, url)


def _keep_choice() -> None:
    """The toggle's on_change: the student's choice outlives the widget's state."""
    st.session_state[FOLLOWING_KEY] = bool(st.session_state.get(FOLLOW_KEY, True))


def _watch(code: str) -> bool:
    """True when the server wakes this session when the lecturer moves or reveals."""
    try:
        return class_push.watch(classroom.class_store(), code)
    except Exception:  # noqa: BLE001 - the store cannot be opened: the tick says so, once a second
        log.exception("watching the class failed")
        return False


def _follow_tick(code: str, url: str) -> None:
    """The panel's fragment: run by the server when the class's pulse changed (class_push), by its
    own slow timer as a safety net, or once a second where the server cannot wake it."""
    try:
        pulse = classroom.class_store().pulse(code)
    except ClassroomError as exc:
        # the class ended or was deleted: working alone again, with the same words a class poll uses
        # (the page is drawn again at once: a class poll on it goes, and the sidebar says why)
        classroom.leave(classroom.MemberSeat)
        st.session_state[LEFT_KEY] = left_words(exc)
        st.rerun(scope="app")
    except Exception:  # noqa: BLE001 - the database is unreachable: try again on the next tick
        log.exception("reading the lecturer's place failed")
        st.caption("The class cannot be reached right now; trying again.")
        return
    if polls_changed(pulse.revealed, st.session_state.get(AWAITING_KEY, set()),
                     st.session_state.get(SHOWN_KEY, set())):
        st.session_state.pop(AWAITING_KEY, None)
        st.session_state.pop(SHOWN_KEY, None)
        st.session_state[MOVE_KEY] = True
        # a poll on this page was revealed (its figure and the split appear) or hidden again
        # (the answer goes, the question comes back)
        st.rerun(scope="app")
    lecturer = pulse.lecturer
    if lecturer.version == 0 or not lecturer.page:
        st.caption("The lecturer has not started yet.")
        return
    following = bool(st.session_state.get(FOLLOWING_KEY, True))
    catch_up = st.session_state.pop(CATCH_UP_KEY, False)
    here = url == lecturer.page and shared_params() == lecturer.settings
    if here:
        note_arrival(lecturer.version)
    if catch_up or (following and (st.session_state.get(SEEN_KEY) != lecturer.version
                                   or (not here and move_was_lost(lecturer.version, url)))):
        go_to(lecturer, url)
    st.caption(("You are with the lecturer: " if here else "The lecturer is on ")
               + where_words(lecturer.page, lecturer.settings) + ".")
    if not here:
        st.button("Catch up", key="class.catch_up", icon=":material/fast_forward:",
                  help="Go to the lecturer's page and step now.",
                  on_click=st.session_state.__setitem__, args=(CATCH_UP_KEY, True))


def polls_changed(revealed: frozenset[str], awaiting: set[str], shown: set[str]) -> set[str]:
    """The polls on this student's page whose reveal changed since the page was drawn: revealed
    now while the page waits for it (`awaiting`), or hidden again while it shows the answer."""
    return (revealed & awaiting) | (shown - revealed)


def _unseated_lecturer(url: str) -> None:
    """A browser that ran a class and lost its lecturer seat (a reload, or a link opened in the
    address bar: a new session): while the class runs, the sidebar says so on every page, since
    nothing else does. Its students no longer follow and its polls have no Reveal."""
    led = st.session_state.get(classroom.LED_CLASS)
    if not led or url == "class":  # the Class page offers the class itself (ui.class_page)
        return
    try:
        running = classroom.class_store().find_class(led) is not None
    except Exception:  # noqa: BLE001 - the database cannot be reached: say nothing rather than fail
        log.exception("checking the class this browser ran failed")
        return
    if not running:  # ended or deleted since: nothing to take back
        st.session_state.pop(classroom.LED_CLASS, None)
        return
    st.sidebar.warning(f"You are not running class {led} now: its students do not follow you and its "
                       "polls have no Reveal. Take it back on the Class page with the lecturer key.",
                       icon=":material/school:")
    st.sidebar.page_link(page_file("class"), label="Take the class back", icon=":material/login:")


def move_was_lost(version: int, url: str) -> bool:
    """True when this student went to the lecturer's place `version` but is still exactly where
    they were before. That happens when a click of theirs reached the server while the move was
    waiting its turn: the click's rerun replaced the move's and carried the old page and step.
    A student who moved on by themselves is not where they were, and is left alone."""
    tried = st.session_state.get(TRIED_KEY)
    if tried is None or tried.version != version or tried.tries >= FOLLOW_TRIES or tried.arrived:
        return False
    return tried.origin == place(url)


def note_arrival(version: int) -> None:
    """The student is at the lecturer's place `version`: the move was not lost. A student who then
    picks what they had before (Quick demo again after the lecturer's Lecture 7) is not sent back,
    and the Start they click next is not swallowed by a move."""
    tried = st.session_state.get(TRIED_KEY)
    if tried is not None and tried.version == version and not tried.arrived:
        st.session_state[TRIED_KEY] = tried._replace(arrived=True)


def go_to(lecturer, url: str) -> None:
    """Take the lecturer's settings for their page and open it there."""
    tried = st.session_state.get(TRIED_KEY)
    tries = tried.tries + 1 if tried is not None and tried.version == lecturer.version else 1
    st.session_state[TRIED_KEY] = Tried(lecturer.version, place(url), tries)
    st.session_state[SEEN_KEY] = lecturer.version
    target = page_file(lecturer.page)
    if target is None:
        return
    prefix = PAGE_PREFIX.get(lecturer.page)
    ss = st.session_state
    if prefix is not None and prefix in ss:  # a page seen before keeps its settings in the session
        obj, _refused = core_settings.from_params(type(ss[prefix]), dict(lecturer.settings))
        ui_state.replace_settings(prefix, obj)
    st.session_state[MOVE_KEY] = True
    if url == lecturer.page and shared_params() == lecturer.settings:
        st.rerun(scope="app")
    ui_state.switch_page(target, dict(lecturer.settings))  # lecture mode kept, as chosen on this laptop


def follow_move_run() -> bool:
    """True, once, for the page run a follow move or a reveal started (streamlit_app.py asks before
    each page run): nobody clicked for it, so on a busy server it waits behind the students' clicks
    (core.budget.PageRuns, `background`)."""
    return bool(st.session_state.pop(MOVE_KEY, False))
