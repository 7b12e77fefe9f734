"""server/runtime.py: with no Streamlit runtime every function gives its documented fallback, and
with one it reads Streamlit's own session manager (its internals, checked here against the
installed Streamlit)."""

import threading

import pytest

from server import runtime


def test_without_a_runtime_every_function_says_so():
    assert runtime.instance() is None
    assert runtime.session_manager() is None
    assert runtime.session_storage() is None
    assert runtime.session_ids() is None  # None: nobody to ask, not "no sessions"
    assert runtime.session_counts() == {}
    assert runtime.nobody_left() is False  # no runtime: nothing to say, so nothing is emptied


class FakeSession:
    def __init__(self, sid: str) -> None:
        self.id = sid


class FakeInfo:
    def __init__(self, sid: str) -> None:
        self.session = FakeSession(sid)


class FakeTTLCache(dict):
    def expire(self):
        return []


class FakeManager:
    """What runtime.py reads of Streamlit's WebsocketSessionManager, and nothing more."""

    def __init__(self, active: list[str], waiting: list[str]) -> None:
        self.active, self.waiting = active, waiting
        self._storage_lock = threading.Lock()
        self._session_storage = type("Storage", (), {"_cache": FakeTTLCache()})()

    def list_active_sessions(self):
        return [FakeInfo(sid) for sid in self.active]

    def list_sessions(self):
        return [FakeInfo(sid) for sid in self.active + self.waiting]


@pytest.fixture
def manager(monkeypatch):
    """A running runtime whose session manager holds one connected tab and one closed tab."""
    from streamlit.runtime import Runtime

    held = FakeManager(["open"], ["closed"])
    fake_runtime = type("FakeRuntime", (), {"_session_mgr": held})()
    monkeypatch.setattr(Runtime, "exists", staticmethod(lambda: True))
    monkeypatch.setattr(Runtime, "instance", staticmethod(lambda: fake_runtime))
    return held


def test_with_a_runtime_the_sessions_it_holds_are_listed(manager):
    assert runtime.session_manager() is manager
    assert runtime.session_ids() == {"open", "closed"}
    assert runtime.session_counts() == {"sessions_active": 1, "sessions_held": 2}
    assert runtime.nobody_left() is False
    manager.active, manager.waiting = [], []
    assert runtime.session_ids() == set()
    assert runtime.session_counts() == {"sessions_active": 0, "sessions_held": 0}
    assert runtime.nobody_left() is True


def test_session_storage_is_the_lock_and_the_ttl_cache(manager):
    lock, cache = runtime.session_storage()
    assert lock is manager._storage_lock and cache is manager._session_storage._cache
    manager._session_storage._cache = {}  # a cache without expire(): Streamlit changed it
    assert runtime.session_storage() is None


def test_a_session_manager_that_no_longer_answers_gives_no_counts(manager):
    def moved():
        raise AttributeError("Streamlit renamed it")

    manager.list_active_sessions = moved
    assert runtime.session_counts() == {}


def test_the_streamlit_internals_read_here_still_exist(monkeypatch):
    """Streamlit's own session manager and session storage, as the Runtime builds them: if a new
    Streamlit renames what runtime.py reads, this fails instead of housekeeping quietly doing
    nothing in class."""
    from streamlit.runtime import Runtime
    from streamlit.runtime.memory_session_storage import MemorySessionStorage
    from streamlit.runtime.websocket_session_manager import WebsocketSessionManager

    real = WebsocketSessionManager(session_storage=MemorySessionStorage(), uploaded_file_manager=None,
                                   script_cache=None, message_enqueued_callback=None)
    fake_runtime = type("FakeRuntime", (), {"_session_mgr": real})()
    monkeypatch.setattr(Runtime, "exists", staticmethod(lambda: True))
    monkeypatch.setattr(Runtime, "instance", staticmethod(lambda: fake_runtime))

    assert runtime.session_manager() is real
    lock, cache = runtime.session_storage()
    assert lock is real._storage_lock and cache.expire() == []
    assert runtime.session_ids() == set()
    assert runtime.session_counts() == {"sessions_active": 0, "sessions_held": 0}
    assert runtime.nobody_left() is True
