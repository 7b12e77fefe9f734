"""server.stale_ticks: a fragment rerun that names a page the session has left is dropped, when it
arrives and when its queued turn comes; every other rerun goes through as Streamlit sends it."""

from types import SimpleNamespace

import pytest

from server import stale_ticks

HOME, LESSON = "hash-of-home", "hash-of-lesson"


def pages_on(page: str) -> SimpleNamespace:
    return SimpleNamespace(current_page_script_hash=page)


class Session:
    """The parts of Streamlit's AppSession (and of its ScriptRunner) that the fix reads."""

    def __init__(self, page: str):
        self._pages_manager = pages_on(page)
        self.seen = []

    def request_rerun(self, client_state=None):
        self.seen.append(client_state)

    def run_script(self, rerun_data):
        self.seen.append(rerun_data)


arrive = stale_ticks.dropping_on_arrival(Session.request_rerun)
turn = stale_ticks.dropping_on_turn(Session.run_script)


def tick(page: str) -> SimpleNamespace:
    """What the browser sends for a `run_every` fragment: its id and the page it was drawn on."""
    return SimpleNamespace(fragment_id="follow-tick", page_script_hash=page)


@pytest.mark.parametrize("fragments, page, current, stale", [
    ("tick", HOME, LESSON, True),  # the old page's timer, after a switch: the bug
    (["tick"], HOME, LESSON, True),  # a queued one (a list of fragment ids)
    ("tick", LESSON, LESSON, False),  # this page's tick
    ("", HOME, LESSON, False),  # a whole-page rerun that names a page: a navigation, never dropped
    ([], HOME, LESSON, False),
    (None, HOME, LESSON, False),
    ("tick", "", LESSON, False),  # a browser that names no page
    ("tick", HOME, "", False),  # the session's first run: no current page yet
    ("tick", HOME, None, False),
])
def test_is_stale(fragments, page, current, stale):
    assert stale_ticks.is_stale(fragments, page, current) is stale


def test_a_tick_for_the_page_left_is_dropped_when_it_arrives():
    session = Session(LESSON)
    arrive(session, tick(HOME))
    assert session.seen == []


def test_ticks_of_this_page_clicks_and_navigation_go_through():
    session = Session(LESSON)
    this_page = tick(LESSON)
    navigate = SimpleNamespace(fragment_id="", page_script_hash=HOME)  # the sidebar's link to Home
    arrive(session, this_page)
    arrive(session, navigate)
    arrive(session, None)  # "rerun with the previous client state"
    assert session.seen == [this_page, navigate, None]


def test_a_queued_tick_is_skipped_when_the_page_changed_while_it_waited():
    session = Session(HOME)
    queued = SimpleNamespace(fragment_id_queue=["follow-tick"], page_script_hash=HOME)
    session._pages_manager = pages_on(LESSON)  # the page run before it switched the page
    turn(session, queued)
    assert session.seen == []
    session._pages_manager = pages_on(HOME)
    turn(session, queued)
    assert session.seen == [queued]


def test_a_whole_page_run_is_never_skipped():
    session = Session(LESSON)
    switch = SimpleNamespace(fragment_id_queue=[], page_script_hash=HOME)
    turn(session, switch)
    assert session.seen == [switch]


def test_install_patches_streamlit_once():
    from streamlit.runtime.app_session import AppSession
    from streamlit.runtime.scriptrunner.script_runner import ScriptRunner

    assert stale_ticks.install() and stale_ticks.install()
    assert getattr(AppSession.request_rerun, "drops_stale_ticks", False)
    assert getattr(ScriptRunner._run_script, "drops_stale_ticks", False)
    # installed once: not wrapped twice
    assert not getattr(AppSession.request_rerun.__wrapped__, "drops_stale_ticks", False)
    assert not getattr(ScriptRunner._run_script.__wrapped__, "drops_stale_ticks", False)


def test_the_session_and_runner_still_have_what_the_fix_reads():
    """The private parts read by the fix, on the Streamlit that requirements.txt installs."""
    import inspect

    from streamlit.runtime.app_session import AppSession
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.runtime.scriptrunner.script_runner import ScriptRunner
    from streamlit.runtime.scriptrunner_utils.script_requests import RerunData

    assert isinstance(inspect.getattr_static(PagesManager, "current_page_script_hash"), property)
    assert "_pages_manager" in inspect.getsource(AppSession.__init__)
    assert "_pages_manager" in inspect.getsource(ScriptRunner.__init__)
    fields = RerunData.__dataclass_fields__
    assert "fragment_id_queue" in fields and "page_script_hash" in fields


def test_switched_off_by_the_environment(monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_STALE_TICK_FIX", "0")
    monkeypatch.setattr(stale_ticks.install.once, "installed", False)
    assert stale_ticks.install() is False
