"""server/housekeeping.py: reaping expired sessions is safe without a Streamlit runtime, and once
per process; what each round frees, empties and freezes."""

import dataclasses
import gc
import threading

import pytest

from server import housekeeping, runtime


@pytest.fixture(autouse=True)
def _nothing_stays_frozen():
    """A tick that sees the class go freezes the survivors (gc.freeze); later tests walk gc's objects."""
    yield
    gc.unfreeze()


def test_no_runtime_means_nothing_to_reap():
    assert housekeeping.reap_expired_sessions() == 0


def test_start_is_idempotent(monkeypatch):
    monkeypatch.setattr(housekeeping, "_started", False)
    before = threading.active_count()
    housekeeping.start()
    housekeeping.start()
    assert threading.active_count() <= before + 1  # without a runtime no thread starts at all


def test_shared_caches_are_emptied_when_asked():
    import streamlit as st

    calls = []

    @st.cache_data
    def square(x: int) -> int:
        calls.append(x)
        return x * x

    assert square(3) == 9 and square(3) == 9 and calls == [3]  # the second call came from the cache
    assert not runtime.nobody_left()  # no Streamlit runtime here: nothing to say, nothing cleared
    housekeeping.clear_shared_caches()
    assert square(3) == 9 and calls == [3, 3]  # computed again


def test_app_functools_caches_are_emptied_with_the_shared_ones():
    from core.lessons.self_attention import _softmax_peak, softmax_peak

    softmax_peak(4, seed=3)
    assert _softmax_peak.cache_info().currsize >= 1
    assert _softmax_peak in housekeeping.app_lru_caches()
    assert housekeeping.clear_shared_caches() >= 1
    assert _softmax_peak.cache_info().currsize == 0
    assert all(f.__module__.partition(".")[0] in housekeeping.APP_PACKAGES for f in housekeeping.app_lru_caches())


def test_the_mmap_threshold_is_fixed_unless_told_otherwise(monkeypatch):
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    monkeypatch.delenv("ATTENTION_LAB_MMAP_THRESHOLD", raising=False)
    assert housekeeping.mmap_threshold() == housekeeping.MMAP_THRESHOLD == 2**20
    monkeypatch.setenv("ATTENTION_LAB_MMAP_THRESHOLD", "0")
    assert housekeeping.mmap_threshold() == 0
    assert housekeeping.set_mmap_threshold(housekeeping._libc()) is False  # 0: glibc's own is left
    monkeypatch.setenv("ATTENTION_LAB_MMAP_THRESHOLD", "lots")  # a typo falls back, with a log line
    assert housekeeping.mmap_threshold() == 2**20
    monkeypatch.setenv("ATTENTION_LAB_MMAP_THRESHOLD", "4194304")
    assert housekeeping.mmap_threshold() == 4 * 2**20
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "131072")  # glibc's own variable wins
    assert housekeeping.mmap_threshold() == 0


def test_a_fixed_mmap_threshold_gives_large_blocks_back_when_freed():
    import ctypes

    libc = housekeeping._libc()
    if libc is None:
        import pytest

        pytest.skip("not glibc")
    assert libc.mallopt(housekeeping.M_MMAP_THRESHOLD, 2**20) == 1
    malloc = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_size_t)(("malloc", libc))  # a pointer, not an int
    free = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(("free", libc))
    size = 8 * 2**20
    unmapped = []
    for _ in range(3):
        block = malloc(size)
        # glibc marks a chunk served by its own mapping with bit 2 (IS_MMAPPED) of the size word just
        # before the block. Read per block, not from malloc's process-wide totals, which other threads
        # (a test's training run finishing in the background) change at the same moment.
        header = ctypes.c_size_t.from_address(block - ctypes.sizeof(ctypes.c_size_t)).value
        assert header & 0x2, "an 8 MiB block did not get its own mapping"
        assert header & ~0x7 >= size
        start = block - 2 * ctypes.sizeof(ctypes.c_size_t)  # the mapping begins at the chunk header
        free(block)
        # the kernel hands a just-freed range to the next mmap of any thread, so one look can see
        # another thread's new mapping in its place; three in a row cannot all be that
        unmapped.append(not _mapped(start, size))
        if unmapped[-1]:
            break
    assert any(unmapped), "the block's mapping stayed after free"


def _mapped(start: int, size: int) -> bool:
    """Whether one mapping in /proc/self/maps covers [start, start + size)."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            if lo <= start and start + size <= hi:
                return True
    return False


def test_caches_are_emptied_when_the_last_session_goes_even_if_streamlit_dropped_it(monkeypatch):
    """Streamlit expires sessions itself on each disconnect, so the reaper may find none to reap when
    the class has gone; the caches must still be emptied once, on the way from busy to empty."""
    held = {"sessions": 3, "reap": 0}
    cleared = []
    monkeypatch.setattr(runtime, "nobody_left", lambda: held["sessions"] == 0)
    monkeypatch.setattr(housekeeping, "reap_expired_sessions", lambda: held["reap"])
    monkeypatch.setattr(housekeeping, "clear_shared_caches", lambda: cleared.append(1) or 0)
    monkeypatch.delenv("ATTENTION_LAB_MEMORY_PROBE", raising=False)

    was_empty = housekeeping.tick(None, was_empty=True)  # a class is on
    assert was_empty is False and cleared == []
    held["sessions"] = 0  # ...and has gone, dropped by Streamlit: nothing left to reap
    was_empty = housekeeping.tick(None, was_empty)
    assert was_empty is True and cleared == [1]
    housekeeping.tick(None, was_empty)  # still empty: not emptied again every round
    assert cleared == [1]
    held["sessions"], held["reap"] = 0, 2  # a reap that leaves nobody empties them again
    housekeeping.tick(None, True)
    assert cleared == [1, 1]



def test_a_session_counts_as_gone_once_it_has_left_both_active_and_stored_sessions():
    tracker = housekeeping.SessionTracker()
    assert tracker.gone({"a", "b"}) == set()  # first look: nothing was held before
    assert tracker.gone({"a", "b", "c"}) == set()  # a newcomer is not gone
    assert tracker.gone({"b", "c"}) == {"a"}
    assert tracker.gone(None) == set()  # no session manager to ask: say nothing
    assert tracker.gone(set()) == {"b", "c"}


def test_a_session_nobody_can_reach_is_shut_down_and_its_state_let_go(monkeypatch):
    """Streamlit's main loop keeps the last session it flushed in a loop variable; after a class
    that session's whole state stayed alive. forget_sessions shuts it down and empties its state,
    and tells Streamlit's file and dataframe managers to drop what they keep for it."""
    from streamlit.runtime import Runtime
    from streamlit.runtime.app_session import AppSession
    from streamlit.runtime.fragment import MemoryFragmentStorage
    from streamlit.runtime.state.session_state import SessionState

    def fake_session(sid: str) -> AppSession:
        session = AppSession.__new__(AppSession)  # no runtime here: only what forget_sessions touches
        session.id, session._event_loop = sid, None
        session._session_state, session._fragment_storage = SessionState(), MemoryFragmentStorage()
        session._session_state["trained"] = list(range(1000))
        session._session_state._new_widget_state.widget_metadata["w"] = object()  # a widget's callback
        session.shutdown = lambda: shut.append(sid)
        return session

    class Recorder:
        def __getattr__(self, name):
            return lambda *args: calls.append((name, *args))

    shut, calls = [], []
    runtime = type("FakeRuntime", (), {"uploaded_file_mgr": Recorder(), "media_file_mgr": Recorder(),
                                       "dataframe_source_mgr": Recorder()})()
    monkeypatch.setattr(Runtime, "exists", staticmethod(lambda: True))
    monkeypatch.setattr(Runtime, "instance", staticmethod(lambda: runtime))
    gone, still_here = fake_session("gone"), fake_session("here")

    assert housekeeping.forget_sessions({"gone"}) == 1
    assert shut == ["gone"]
    assert "trained" not in gone._session_state and "trained" in still_here._session_state
    assert not gone._session_state._new_widget_state.widget_metadata  # callbacks held the pages' charts
    assert ("remove_session_files", "gone") in calls and ("clear_session_refs", "gone") in calls
    assert ("clear_all_for_session", "gone") in calls and ("remove_orphaned_files",) in calls
    assert not any("here" in call for call in calls)
    assert housekeeping.forget_sessions(set()) == 0


def test_shutting_down_a_dropped_session_never_raises():
    calls = []

    class Broken:
        _event_loop = None

        def shutdown(self):
            calls.append(1)
            raise RuntimeError("half gone")

    housekeeping.shut_down(Broken())
    housekeeping.shut_down(None)
    assert calls == [1]


def test_if_forgetting_sessions_breaks_it_is_logged_once_and_reaping_goes_on(monkeypatch, caplog):
    def broken(ids):
        raise AttributeError("Streamlit moved an internal")

    monkeypatch.setattr(housekeeping, "_forget_broken", False)
    monkeypatch.setattr(housekeeping, "forget_sessions", broken)
    monkeypatch.setattr(runtime, "session_ids", lambda: set())
    reaps = []
    monkeypatch.setattr(housekeeping, "reap_expired_sessions", lambda: reaps.append(1) or 0)
    monkeypatch.delenv("ATTENTION_LAB_MEMORY_PROBE", raising=False)
    tracker = housekeeping.SessionTracker()
    with caplog.at_level("WARNING", logger="attention_lab.housekeeping"):
        for _ in range(3):
            housekeeping.tick(None, True, tracker)
    assert len(reaps) == 3  # every round still reaps
    assert sum("departed sessions failed" in r.getMessage() for r in caplog.records) == 1


class Cyclic:
    """An object in a reference cycle: only the collector frees it."""

    def __init__(self):
        self.me = self


def test_survivors_are_frozen_when_the_class_has_gone_and_cycles_are_still_collected(monkeypatch):
    """After the class (and once after start-up) what survives a full collection moves to the
    permanent generation: later full collections scan only what the sessions made. A cycle made
    after the freeze is collected as usual, and one that was frozen is collected by the next
    freeze_survivors."""
    import gc
    import weakref

    held = {"sessions": 2}
    monkeypatch.setattr(runtime, "nobody_left", lambda: held["sessions"] == 0)
    monkeypatch.setattr(housekeeping, "reap_expired_sessions", lambda: 0)
    monkeypatch.setattr(housekeeping, "clear_shared_caches", lambda: 0)
    monkeypatch.setenv("ATTENTION_LAB_GC_FREEZE", "1")
    monkeypatch.delenv("ATTENTION_LAB_MEMORY_PROBE", raising=False)
    gc.unfreeze()
    try:
        frozen_cycle = Cyclic()
        frozen_ref = weakref.ref(frozen_cycle)
        housekeeping.tick(None, was_empty=True)  # a class is on: nothing frozen
        assert gc.get_freeze_count() == 0
        held["sessions"] = 0
        housekeeping.tick(None, was_empty=False)  # ...and has gone
        assert gc.get_freeze_count() > 1000 and gc.get_count()[2] == 0
        del frozen_cycle  # now garbage, but frozen: a collection does not see it
        gc.collect()
        assert frozen_ref() is not None
        young = weakref.ref(Cyclic())  # made after the freeze: collected as usual
        gc.collect()
        assert young() is None
        housekeeping.freeze_survivors()
        assert frozen_ref() is None
    finally:
        gc.unfreeze()


def test_freezing_can_be_turned_off(monkeypatch):
    import gc

    monkeypatch.setenv("ATTENTION_LAB_GC_FREEZE", "0")
    assert not housekeeping.gc_freeze_enabled()
    gc.unfreeze()
    assert housekeeping.release_memory(None, emptied=True) is False
    assert gc.get_freeze_count() == 0
    monkeypatch.delenv("ATTENTION_LAB_GC_FREEZE")
    assert housekeeping.gc_freeze_enabled()


def test_a_session_frozen_at_start_that_leaves_mid_class_is_looked_for_again_when_the_class_has_gone(
        monkeypatch):
    """A tab already open when the survivors are first frozen is frozen with them: gc.get_objects()
    cannot see it, so forget_sessions misses it if it leaves mid-class. Once the class has gone
    (everything unfrozen) it is looked for again, once."""
    listed = {"ids": {"lecturer"}}
    asked = []
    monkeypatch.setattr(runtime, "session_ids", lambda: set(listed["ids"]))
    monkeypatch.setattr(housekeeping, "forget_sessions", lambda ids: asked.append(set(ids)) or 0)
    monkeypatch.setattr(housekeeping, "reap_expired_sessions", lambda: 0)
    monkeypatch.setattr(housekeeping, "clear_shared_caches", lambda: 0)
    monkeypatch.setattr(housekeeping, "_forget_broken", False)
    monkeypatch.setenv("ATTENTION_LAB_GC_FREEZE", "1")
    monkeypatch.delenv("ATTENTION_LAB_MEMORY_PROBE", raising=False)
    tracker = housekeeping.SessionTracker()

    housekeeping.freeze_at_start(tracker)
    assert tracker.frozen == {"lecturer"} and gc.get_freeze_count() > 1000
    was_empty = housekeeping.tick(None, False, tracker)  # the lecturer's tab and...
    listed["ids"] = {"lecturer", "student"}
    was_empty = housekeeping.tick(None, was_empty, tracker)  # ...a student
    listed["ids"] = {"student"}
    was_empty = housekeeping.tick(None, was_empty, tracker)  # the lecturer leaves mid-class
    assert asked[-1] == {"lecturer"} and gc.get_freeze_count() > 1000  # (not seen: frozen)
    listed["ids"] = set()
    was_empty = housekeeping.tick(None, was_empty, tracker)  # the class has gone
    assert was_empty and asked[-1] == {"student", "lecturer"}  # looked for again, unfrozen
    assert tracker.frozen == set()  # nobody was there when the survivors were frozen again
    housekeeping.tick(None, was_empty, tracker)
    assert asked[-1] == set()  # once


def test_nothing_is_frozen_or_noted_at_start_when_freezing_is_off(monkeypatch):
    monkeypatch.setattr(runtime, "session_ids", lambda: {"lecturer"})
    monkeypatch.setenv("ATTENTION_LAB_GC_FREEZE", "0")
    gc.unfreeze()
    tracker = housekeeping.SessionTracker()
    housekeeping.freeze_at_start(tracker)
    assert gc.get_freeze_count() == 0 and tracker.frozen == set()


def test_the_start_freeze_waits_while_a_worker_trains(monkeypatch):
    """The freeze's full collection holds the GIL ~0.3 s: a GPU run's worker would queue nothing."""
    import threading
    import time

    from core.live_training import WORKER_SWITCH

    froze = []
    monkeypatch.setattr(housekeeping, "REAP_S", 0.01)
    monkeypatch.setattr(housekeeping, "freeze_at_start", lambda tracker: froze.append(time.monotonic()))

    def stop_the_loop(*args):
        raise RuntimeError("end of the test")

    monkeypatch.setattr(housekeeping, "tick", stop_the_loop)
    with WORKER_SWITCH:
        assert housekeeping.training_in_a_worker()
        loop = threading.Thread(target=housekeeping._loop, args=(None,), daemon=True)
        loop.start()
        time.sleep(0.3)
        assert froze == []  # still training: no freeze
        released = time.monotonic()
    assert not housekeeping.training_in_a_worker()
    loop.join(5)
    assert len(froze) == 1 and froze[0] >= released


def test_runs_kept_for_a_reload_expire_and_a_hosted_server_lets_them_all_go_when_the_class_has_gone(
        monkeypatch):
    """server.desks: each round renews the filings of sessions still held and lets old ones go; on a
    hosted server, where memory is short, everything goes once nobody is left."""
    from core import budget
    from server import desks

    held = {"ids": {"s1", "s2"}}
    board = desks.Desks(park_s=0.0)
    monkeypatch.setattr(desks, "DESKS", board)
    monkeypatch.setattr(runtime, "session_ids", lambda: set(held["ids"]))
    monkeypatch.setattr(housekeeping, "reap_expired_sessions", lambda: 0)
    monkeypatch.setattr(housekeeping, "clear_shared_caches", lambda: 0)
    monkeypatch.setenv("ATTENTION_LAB_GC_FREEZE", "0")
    monkeypatch.delenv("ATTENTION_LAB_MEMORY_PROBE", raising=False)
    board.file("tok1", "s1", {"n": 1})
    board.file("tok2", "s2", {"n": 2})
    board.file("tok3", "gone", {"n": 3})

    was_empty = housekeeping.tick(None, was_empty=True)
    assert board.count() == 2  # the departed session's filing went (park time 0 here)
    monkeypatch.setattr(budget, "LIMITS", dataclasses.replace(budget.LIMITS, hosted=False))
    board.park_s = 3600.0
    held["ids"] = set()
    was_empty = housekeeping.tick(None, was_empty)  # a local server keeps them for the park time
    assert was_empty is True and board.count() == 2
    held["ids"] = {"s3"}
    was_empty = housekeeping.tick(None, was_empty)
    monkeypatch.setattr(budget, "LIMITS", dataclasses.replace(budget.LIMITS, hosted=True))
    held["ids"] = set()
    housekeeping.tick(None, was_empty)  # hosted: the class has gone, nobody can reload
    assert board.count() == 0
