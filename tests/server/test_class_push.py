"""server.class_push: the server wakes a class's members when its pulse changes, on each session's
own loop, only while the session is idle, once per change; and the rerun it asks for is the follow
fragment's, on the session's page, with its last query string."""

from types import SimpleNamespace

import pytest
from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.runtime.app_session import AppSessionState
from streamlit.runtime.fragment import MemoryFragmentStorage

from core.classroom.security import ClassroomError
from server import class_push
from server.class_push import BUSY, DONE, GONE, Pusher


class Store:
    """A ClassroomStore's pulse and listeners: the lecturer's version and the revealed questions."""

    def __init__(self):
        self.version, self.revealed, self.ended = 1, frozenset(), False
        self.pulse_listeners = []

    def pulse(self, code, max_age_s=0.0):
        if self.ended:
            raise ClassroomError("This class has ended.")
        return SimpleNamespace(lecturer=SimpleNamespace(version=self.version), revealed=self.revealed)

    def move(self, code="ABC"):
        self.version += 1
        for listener in self.pulse_listeners:
            listener(code)


class Loop:
    """Sessions' event loops, run by hand: `later` holds (delay, callback)."""

    def __init__(self):
        self.now, self.later = [], []

    def __call__(self, session, callback, delay=0.0):
        if session.closed:
            return False
        (self.later if delay else self.now).append((delay, callback))
        return True

    def run(self):
        ran = 0
        while self.now:
            self.now.pop(0)[1]()
            ran += 1
        return ran

    def run_later(self):
        self.now, self.later = self.later, []
        return self.run()


def make(sessions: dict, outcome=None, thread=False, **kwargs):
    loop = Loop()
    asked = []

    def rerun(session):
        asked.append(session.name)
        return outcome(session) if outcome else DONE

    pusher = Pusher(session_of=sessions.get, rerun=rerun, on_loop=loop, thread=thread, **kwargs)
    return pusher, loop, asked


def session(name, closed=False):
    return SimpleNamespace(name=name, closed=closed)


def test_a_change_wakes_every_member_once_and_no_change_wakes_nobody():
    sessions = {"s1": session("s1"), "s2": session("s2"), "other": session("other")}
    pusher, loop, asked = make(sessions)
    store, elsewhere = Store(), Store()
    pusher.watch(store, "ABC", "s1")
    pusher.watch(store, "ABC", "s2")
    pusher.watch(elsewhere, "XYZ", "other")
    pusher.check()  # the first look: the members may have read the pulse just before a move
    loop.run()
    asked.clear()
    assert pusher.check() == 0 and loop.run() == 0 and asked == []
    store.version += 1
    assert pusher.check() == 2
    loop.run()
    assert sorted(asked) == ["s1", "s2"]  # the other class did not move
    assert pusher.check() == 0
    store.revealed = frozenset({"p1.attend"})  # a reveal is a change too
    assert pusher.check() == 2


def test_a_busy_session_is_tried_again_until_idle_then_given_up():
    busy = {"s1": 3}
    sessions = {"s1": session("s1"), "s2": session("s2")}

    def outcome(s):
        if busy.get(s.name, 0) > 0:
            busy[s.name] -= 1
            return BUSY
        return DONE

    pusher, loop, asked = make(sessions, outcome)
    pusher.watch(Store(), "ABC", "s1")
    pusher.check()
    loop.run()
    for _ in range(3):
        assert loop.later and loop.later[0][0] == pusher.retry_s  # tried again a little later
        loop.run_later()
    assert asked == ["s1"] * 4 and pusher.pushed == 1 and not loop.later
    # one that stays busy past give_up_s is left to its own next run (or the panel's slow tick)
    pusher, loop, asked = make(sessions, lambda s: BUSY, give_up_s=0.0)
    pusher.watch(Store(), "ABC", "s2")
    pusher.check()
    loop.run()
    assert asked == ["s2"] and not loop.later and pusher.pushed == 0
    assert pusher.push("s2")  # and it can be woken again later


def test_a_session_with_a_try_under_way_is_not_pushed_twice():
    pusher, loop, asked = make({"s1": session("s1")})
    store = Store()
    pusher.watch(store, "ABC", "s1")
    assert pusher.push("s1") is True
    assert pusher.push("s1") is False  # the try under way will read the newest pulse
    loop.run()
    assert asked == ["s1"] and pusher.push("s1") is True


def test_sessions_the_server_dropped_are_forgotten():
    sessions = {"s1": session("s1"), "s2": session("s2", closed=True)}
    pusher, loop, asked = make(sessions)
    store = Store()
    for sid in ("s1", "s2", "s3"):  # s3: no such session any more
        pusher.watch(store, "ABC", sid)
    store.version += 1
    assert pusher.check() == 1
    assert pusher.watching("ABC") == {"s1"}
    pusher.forget("s1")
    assert pusher.watching("ABC") == set() and pusher.check() == 0


def test_a_member_who_moves_to_another_class_is_watched_there_only():
    pusher, loop, asked = make({"s1": session("s1")})
    pusher.watch(Store(), "ABC", "s1")
    pusher.watch(Store(), "XYZ", "s1")
    assert pusher.watching("ABC") == set() and pusher.watching("XYZ") == {"s1"}


def test_an_ended_class_wakes_its_members_once_so_they_leave():
    pusher, loop, asked = make({"s1": session("s1")})
    store = Store()
    pusher.watch(store, "ABC", "s1")
    pusher.check()
    loop.run()
    store.ended = True
    assert pusher.check() == 1
    assert pusher.check() == 0


def test_the_watcher_thread_pushes_a_move_without_a_tick():
    import time

    pusher, loop, asked = make({"s1": session("s1")}, thread=True, watch_s=60.0)
    store = Store()
    pusher.watch(store, "ABC", "s1")
    pusher.watch(store, "ABC", "s1")
    assert store.pulse_listeners == [pusher.heard]  # listened to once per store
    deadline = time.monotonic() + 5
    while not loop.now and time.monotonic() < deadline:  # the thread's first look
        time.sleep(0.01)
    loop.run()
    store.move()  # 60 s between looks: only the listener can explain a push now
    deadline = time.monotonic() + 5
    while not loop.now and time.monotonic() < deadline:
        time.sleep(0.01)
    assert loop.run() == 1 and asked == ["s1", "s1"]
    pusher.stop()


# --------------------------------------------------------------------- the rerun on the session's loop
class AppSessionParts:
    """The parts of Streamlit's AppSession that rerun_fragment reads, with a real FragmentStorage."""

    def __init__(self, state=AppSessionState.APP_NOT_RUNNING, runner=None):
        self._state, self._scriptrunner = state, runner
        self._fragment_storage = MemoryFragmentStorage()
        self._client_state = ClientState(query_string="step=weights&lecture=1", page_script_hash="page-1")
        self.asked = []

    def request_rerun(self, client_state):
        self.asked.append(client_state)


def with_panel(s: AppSessionParts) -> AppSessionParts:
    s._fragment_storage.register("frag-123", lambda: None, target_key=class_push.FRAGMENT_KEY)
    return s


def test_an_idle_session_reruns_its_follow_fragment_on_its_page_and_query():
    s = with_panel(AppSessionParts())
    assert class_push.rerun_fragment(s) == DONE
    (state,) = s.asked
    assert state.fragment_id == "frag-123" and state.is_auto_rerun
    assert state.page_script_hash == "page-1" and state.query_string == "step=weights&lecture=1"
    assert s._client_state.fragment_id == ""  # the session's own client state is left as it was


@pytest.mark.parametrize("parts, outcome", [
    (dict(state=AppSessionState.APP_IS_RUNNING), BUSY),
    (dict(runner=object()), BUSY),  # its runner has not shut down: a rerun is waiting
    (dict(state=AppSessionState.SHUTDOWN_REQUESTED), GONE),
])
def test_a_running_or_closing_session_is_not_rerun(parts, outcome):
    s = with_panel(AppSessionParts(**parts))
    assert class_push.rerun_fragment(s) == outcome and s.asked == []


def test_a_page_without_the_panel_is_left_alone():
    s = AppSessionParts()
    assert class_push.rerun_fragment(s) == GONE and s.asked == []


def test_it_installs_on_this_streamlit_and_can_be_switched_off(monkeypatch):
    install = class_push.install
    monkeypatch.setattr(install.once, "installed", False)
    assert install() is True
    monkeypatch.setattr(install.once, "installed", False)
    monkeypatch.setenv("ATTENTION_LAB_FOLLOW_PUSH", "0")
    assert install() is False


def test_outside_a_server_nothing_is_watched():
    assert class_push.watch(Store(), "ABC") is False  # no script run (AppTest has no server either)
    class_push.forget()  # and forgetting is harmless


def test_the_stand_in_runtime_an_apptest_leaves_behind_has_no_sessions(monkeypatch):
    """AppTest swaps in a mock Runtime without a session manager and leaves it after its run: a
    later follow panel must read "no server", not log an AttributeError on every run."""
    from unittest.mock import MagicMock

    from streamlit.runtime.runtime import Runtime

    monkeypatch.setattr(Runtime, "_instance", MagicMock(spec=Runtime))
    assert Runtime.exists()
    assert class_push.runtime_session("any-session") is None
