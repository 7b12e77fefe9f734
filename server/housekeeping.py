"""Server housekeeping for a class: give back the memory of students who have left.

Measured with benchmarks/student_sim.py: after a class of 60 left, the server kept its peak RSS
(+48% over the one-student level) for as long as nobody connected again. What this module does,
once per process (`start()` is called by streamlit_app.py on every run and is idempotent):

* Every REAP_S seconds, glibc is asked to give back the free pages of its arenas (`malloc_trim`):
  a class frees and allocates all the time, and without it the resident size only grows.
* Streamlit keeps a closed tab's session for `server.disconnectedSessionTTL` (120 s) so a
  reconnect finds it, in a TTL cache that drops expired entries only on its next write. With
  nobody connecting, every session of the class (its trained models, its pages' state) stayed in
  memory. A daemon thread reaps expired sessions every REAP_S seconds and, when it freed some,
  runs a full garbage collection (sessions hold reference cycles) and `malloc_trim(0)`, so glibc
  hands the freed pages back to the system.
* When the last session has gone, the shared caches (st.cache_data / st.cache_resource) are
  emptied too: after a class they held every setting the students tried, for nobody. This
  happens on the way from "someone" to "nobody", whoever dropped the last session (Streamlit
  drops expired sessions itself whenever another tab disconnects).
* Streamlit never shuts down a session whose reconnect window has passed; it only drops it, and
  the session's uploaded files and download data stay in its managers. Reaped sessions are shut
  down, and sessions gone for good are forgotten by the managers; one that Streamlit's main loop
  still points at (its last flushed session, a loop variable) gets an empty state.
* Blocks of 1 MiB and more are served by their own mapping (`mallopt(M_MMAP_THRESHOLD)`), which
  glibc unmaps as soon as they are freed. glibc's default moves that threshold up to 32 MiB after
  the first large free, so a class's data frames, chart specs and tensors of a few MB were carved
  out of the arenas, and the arenas could not shrink around the small blocks that outlived them.
  Measured (N 60, K 6, one core, 150 s): after the class left, RSS went from +21% over one student
  to +7.5%, the peak from 836 to 763 MiB, with the same click times and training speed. (A
  10-minute class of 60 still leaves +12-16%: Python's own object arenas, docs/HOSTING.md.)
  ATTENTION_LAB_MMAP_THRESHOLD sets another size in bytes (0: glibc's default).
* glibc's malloc arenas are NOT capped by default any more: with MALLOC_ARENA_MAX=2 from the start,
  60 students on one core saw a p95 click of 0.75-0.85 s against 0.47 s uncapped (threads wait
  on the two arenas' locks), for 25 MB less at the peak (docs/HOSTING.md). ATTENTION_LAB_ARENA_MAX
  sets a cap with mallopt on the first run, for a server short of memory rather than of time.

* Python's collector starts a full collection only when the objects promoted since the last one
  exceed a quarter of all long-lived objects. The server holds ~600k objects after its imports, so
  during a class up to ~150k objects of the reruns' cyclic garbage (element trees, data frames,
  chart specs) waited in the oldest generation, spread over Python's 1 MiB object arenas; an arena
  is given back only once every object in it is gone, and a few objects made mid-class kept many
  of them after the class. Once the server has started (and again each time nobody is left), what
  survives a full collection is moved to the collector's permanent generation (`gc.freeze()`), so
  a full collection scans only what the class made and runs when the class's own objects have grown
  by a quarter. A tab already open at a freeze is frozen too, out of forget_sessions' sight: it
  is looked for again once the class has gone. ATTENTION_LAB_GC_FREEZE=0 turns it off.

Nothing here is needed for correctness: on a platform without glibc, or if Streamlit's internals
change, it does nothing (and says so once in the server log).
"""

from __future__ import annotations

import ctypes
import gc
import logging
import os
import sys
import threading
import time

from server import desks, memory_probe, runtime

REAP_S = 30.0  # how often expired sessions are looked for
M_ARENA_MAX = -8  # glibc's mallopt parameter number for the arena limit
M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter number for the size served by mmap
MMAP_THRESHOLD = 2**20  # blocks of 1 MiB and more get their own mapping, given back when freed
APP_PACKAGES = ("core", "ui")  # whose module-level functools caches are emptied when nobody is left

_lock = threading.Lock()
_started = False
_forget_broken = False  # set once forgetting departed sessions has failed (Streamlit's internals moved)
_log = logging.getLogger("attention_lab.housekeeping")


def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim  # noqa: B018 - glibc only
        return libc
    except (OSError, AttributeError):
        return None


def reap_expired_sessions() -> int:
    """Drop the disconnected sessions whose TTL has passed and shut them down; returns how many."""
    found = runtime.session_storage()
    if found is None:
        return 0
    lock, cache = found
    with lock:
        expired = cache.expire()
    for _key, info in expired:
        shut_down(getattr(info, "session", None))
    return len(expired)


def shut_down(session) -> None:
    """Shut a session down as Streamlit does when a tab closes for good (its uploaded files, its
    download buttons' data, its session-scoped caches), on Streamlit's event loop.

    Streamlit only drops a session whose reconnect window has passed: it never shuts it down, so
    a checkpoint a student uploaded or could download stayed in the server's file managers."""
    if session is None or not hasattr(session, "shutdown"):
        return

    def run() -> None:
        try:
            session.shutdown()
        except Exception:  # noqa: BLE001 - a session half gone already; nothing to save
            _log.debug("shutting down a dropped session failed", exc_info=True)

    loop = getattr(session, "_event_loop", None)
    if loop is not None and loop.is_running() and not loop.is_closed():
        loop.call_soon_threadsafe(run)
    else:
        run()


class SessionTracker:
    """Which sessions the server held at the last round, to tell which ones have gone for good;
    and which ones were held when survivors were last frozen."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        # A session held when survivors were frozen is out of gc.get_objects()' sight until the
        # next unfreeze, so forget_sessions cannot find it if it leaves mid-class: it is looked
        # for again once the class has gone (and everything is unfrozen).
        self.frozen: set[str] = set()

    def gone(self, now: set[str] | None) -> set[str]:
        """Ids held last round and not now. `now` is read under Streamlit's storage lock, under
        which a reconnect moves a session from storage to active in one step, and an id that has
        left both can never come back (a new tab gets a new id)."""
        if now is None:
            return set()
        gone, self.seen = self.seen - now, set(now)
        return gone


def forget_sessions(ids: set[str]) -> int:
    """Let go of everything the server still keeps for sessions that are gone for good: their
    entries in Streamlit's file and dataframe managers, and, for a session object something still
    points at, its state. Returns how many such session objects were found.

    Found with the memory probe, nobody connected: Streamlit's main loop keeps the last session it
    sent messages to in a loop variable (`active_session_info`) until it sends again, so after a
    class one student's whole session state (its widgets' callbacks, charts, data frames) stayed
    alive. (The resident size after a 10-minute class did not change measurably: docs/HOSTING.md.)"""
    from streamlit.runtime.app_session import AppSession

    streamlit_runtime = runtime.instance() if ids else None
    if streamlit_runtime is None:
        return 0
    for sid in ids:
        streamlit_runtime.uploaded_file_mgr.remove_session_files(sid)
        streamlit_runtime.media_file_mgr.clear_session_refs(sid)
        streamlit_runtime.dataframe_source_mgr.clear_all_for_session(sid)
    streamlit_runtime.media_file_mgr.remove_orphaned_files()
    # type(), not isinstance(): isinstance wakes the deprecated attributes of some modules
    held = [obj for obj in gc.get_objects() if type(obj) is AppSession and obj.id in ids]
    for session in held:
        shut_down(session)
        # Nobody can reach it again: its id is gone for good. New empty objects rather than
        # SessionState.clear(), which keeps the widgets' metadata: their callbacks' closures held
        # the pages' charts and data frames.
        session._session_state = type(session._session_state)()
        session._fragment_storage = type(session._fragment_storage)()
    return len(held)


def clear_shared_caches() -> int:
    """Empty the app's st.cache_data / st.cache_resource and the functools caches of core/ and ui/:
    entries the class filled (every seed, width and text a student tried) that no one is shown any
    more. The next visitor's first clicks compute them again, as on a fresh server. Returns how
    many functools caches were emptied.

    The functools caches matter beyond their size (15 MB of √d_k draws after a class of 60): an
    entry made in the middle of a class sits among the pages of the sessions that have left, and
    the allocators can give a page back to the system only once nothing on it is alive."""
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()
    return len([f.cache_clear() for f in app_lru_caches()])


def app_lru_caches() -> list:
    """Every functools.lru_cache / functools.cache function defined in the app's modules, and the
    caches made like them (ui.charts._figure)."""
    found = []
    for name, module in list(sys.modules.items()):
        if module is None or name.partition(".")[0] not in APP_PACKAGES:
            continue
        for value in list(vars(module).values()):
            if (callable(value) and not isinstance(value, type) and hasattr(value, "cache_clear")
                    and hasattr(value, "cache_info") and getattr(value, "__module__", None) == name):
                found.append(value)
    return found


def gc_freeze_enabled() -> bool:
    """Whether survivors are frozen (ATTENTION_LAB_GC_FREEZE=0 turns it off, to compare)."""
    return os.environ.get("ATTENTION_LAB_GC_FREEZE", "1").strip() not in ("0", "false", "no", "off")


def freeze_survivors() -> int:
    """Collect everything (frozen objects too), then move what survives into the collector's
    permanent generation; returns how many objects are frozen.

    Frozen objects are never scanned again, so a full collection costs what the sessions hold,
    not what the imports made (600k objects here), and runs as soon as the class's own objects
    have grown by a quarter instead of after ~150k promotions. A frozen object is still freed by
    reference counting; only a cycle among frozen objects waits for the next freeze_survivors."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def release_memory(libc: ctypes.CDLL | None, emptied: bool) -> bool:
    """Collect, empty the caches if nobody is left (`emptied`) and freeze what survives, trim;
    returns whether survivors were frozen."""
    if emptied:
        clear_shared_caches()
    froze = emptied and gc_freeze_enabled()
    if froze:
        freeze_survivors()
    else:
        gc.collect()
    if libc is not None:
        libc.malloc_trim(0)  # ctypes releases the GIL: page reruns go on meanwhile
    return froze


def training_in_a_worker() -> bool:
    """True while a live run trains in a worker thread (core.live_training.BackgroundTraining: one
    viewer's GPU run). The start's freeze waits for it: its full collection holds the GIL for
    ~0.3 s, and the worker can queue no GPU work meanwhile (measured with benchmarks/server_live.py
    --gil-profile: 0.34 s of a 27 s live run, 2026-11-27)."""
    from core.live_training import WORKER_SWITCH

    return WORKER_SWITCH.in_use


def freeze_at_start(tracker: SessionTracker) -> None:
    """The imports and shared data into the permanent generation (~0.2 s, once), noting the
    sessions already there (the lecturer's tab, the first students), which are frozen too."""
    if gc_freeze_enabled():
        freeze_survivors()
        tracker.frozen = runtime.session_ids() or set()


def tick(libc: ctypes.CDLL | None, was_empty: bool, tracker: SessionTracker | None = None) -> bool:
    """One round of housekeeping; `was_empty` is what the last round saw. Returns whether the
    server is empty now.

    The caches are emptied when the last session goes, whoever dropped it: Streamlit itself drops
    expired sessions whenever another tab disconnects (its TTL cache expires entries on each write),
    so when a class leaves, the last sessions may be gone before this thread looks, with nothing
    left for it to reap. Measured: a class whose last sessions went that way kept every cache
    entry it made (the names data, the pitfalls lesson's tables) for nobody."""
    reaped = reap_expired_sessions()
    ids = runtime.session_ids()  # one listing per round, under Streamlit's storage lock
    empty_now = not ids if ids is not None else runtime.nobody_left()
    class_left = empty_now and not was_empty
    if class_left:
        gc.unfreeze()  # the class has gone: forget_sessions' scan must see every object again
    forgotten = _forget_gone(tracker, ids, class_left) if tracker is not None else 0
    parked = expire_desks(ids, class_left)
    label = ""
    if reaped or forgotten or class_left or parked:
        froze = release_memory(libc, empty_now)
        label = "caches emptied" if empty_now else ""
        if froze and tracker is not None:
            tracker.frozen = runtime.session_ids() or set()  # a tab that connected meanwhile
    elif libc is not None:
        # Freed pages inside glibc's arenas stay resident until trimmed; a trim is cheap
        # (measured 0.5-6 ms with 30 sessions, without the GIL) and gave back 15-40 MB
        # in the middle of a class. A full gc.collect() is not: only after a reap.
        libc.malloc_trim(0)
    memory_probe.write(libc, label)  # a diagnostic, only where ATTENTION_LAB_MEMORY_PROBE is set
    return empty_now


def expire_desks(ids: set[str] | None, class_left: bool) -> int:
    """Let go of the runs kept for reloads (server.desks) whose sessions left long enough ago; on a
    hosted server, of all of them once the class has gone (nobody is left to reload: a reload's
    new session connects at once, while the old one still waits for a reconnect). Returns how
    many sessions' runs went."""
    from core import budget

    if class_left and budget.LIMITS.hosted:
        return desks.DESKS.clear()
    return desks.DESKS.expire(ids)


def _forget_gone(tracker: SessionTracker, ids: set[str] | None, class_left: bool = False) -> int:
    """forget_sessions for the ids gone since the last round (`ids`: what runtime.session_ids()
    said this round) and, once the class has gone, for those that were frozen; if Streamlit's
    internals changed, says so once in the log and goes on without it (reaping and trimming still
    run)."""
    global _forget_broken
    if _forget_broken:
        return 0
    gone = tracker.gone(ids)
    if class_left:
        gone, tracker.frozen = gone | tracker.frozen, set()
    try:
        return forget_sessions(gone)
    except Exception:  # noqa: BLE001 - an internal of Streamlit moved; the rest still works
        _forget_broken = True
        _log.warning("letting go of departed sessions failed; only reaping from now on", exc_info=True)
        return 0


def _loop(libc: ctypes.CDLL | None) -> None:
    was_empty, tracker = True, SessionTracker()  # nothing to empty before anyone came
    time.sleep(REAP_S)  # the first run (the one that started this thread) has finished by now
    while training_in_a_worker():  # the freeze's full collection holds the GIL ~0.3 s: not mid-run
        time.sleep(1.0)
    freeze_at_start(tracker)
    while True:
        try:
            was_empty = tick(libc, was_empty, tracker)
        except Exception:  # noqa: BLE001 - housekeeping must never take the server down
            _log.warning("session housekeeping failed; it stops here", exc_info=True)
            return
        time.sleep(REAP_S)


def mmap_threshold() -> int:
    """The mmap threshold to set, in bytes (0: leave glibc's own, dynamic one)."""
    if "MALLOC_MMAP_THRESHOLD_" in os.environ:  # set for the whole process already: glibc's wins
        return 0
    value = os.environ.get("ATTENTION_LAB_MMAP_THRESHOLD", "").strip()
    try:
        return max(0, int(value)) if value else MMAP_THRESHOLD
    except ValueError:
        _log.warning("ATTENTION_LAB_MMAP_THRESHOLD=%r is not a whole number of bytes: using %d", value, MMAP_THRESHOLD)
        return MMAP_THRESHOLD


def set_mmap_threshold(libc: ctypes.CDLL | None) -> bool:
    """Fix glibc's mmap threshold (see the module docstring); True if it was set."""
    threshold = mmap_threshold()
    return bool(libc is not None and threshold and libc.mallopt(M_MMAP_THRESHOLD, threshold) == 1)


def start() -> None:
    """Set glibc's mmap threshold, cap malloc arenas if asked to, and start the reaper thread (once
    per process)."""
    global _started
    with _lock:
        if _started:
            return
        _started = True
    libc = _libc()
    set_mmap_threshold(libc)
    arena_max = os.environ.get("ATTENTION_LAB_ARENA_MAX")
    if libc is not None and arena_max and "MALLOC_ARENA_MAX" not in os.environ:
        libc.mallopt(M_ARENA_MAX, int(arena_max))
    if runtime.session_storage() is None:
        _log.info("no Streamlit session storage found: expired sessions are left to Streamlit")
        return
    threading.Thread(target=_loop, args=(libc,), daemon=True, name="attention-lab-housekeeping").start()
