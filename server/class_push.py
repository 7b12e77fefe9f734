"""Follow the lecturer without a timer per student: the server wakes a class's members when the
lecturer moves or reveals, instead of every member's page asking once a second.

Before, each member's follow panel (ui/class_follow.py) was a fragment with `run_every=1 s`: the
browser asked, the server ran the fragment, read the class's pulse and, almost always, found
nothing new. Measured with 54 members sitting on page 1 and nobody moving, server on one core:
22% of the core went to those ticks (2,700 fragment runs in 40 s), before anyone clicked anything;
and a follower landed up to a tick later than needed.

Now a process-wide watcher (`Pusher`, one daemon thread) keeps, per class, the sessions whose follow
panel was drawn on this server, and the class's last pulse (the lecturer's published version and the
revealed questions, ClassroomStore.pulse). When the pulse changes it reruns each member's follow
fragment, the same run a tick made, so the page, the step and a reveal are handled by the same code
(ui.class_follow._follow_tick). It learns of a change:

* at once, for a move, reveal or deletion written through this process (the store's
  `pulse_listeners`);
* within WATCH_S, for one written by another replica (PostgreSQL): it reads each watched class's
  pulse that often, one read per class for the whole process.

A session is rerun on its own event loop (Streamlit's sessions are single-threaded there) and only
while it is idle; a busy session (a run of its own, a click being answered) is tried again every
RETRY_S for up to GIVE_UP_S, and a run of its own that is already under way shows the new place anyway
(every whole-page run draws the follow panel). The panel keeps a slow tick (FOLLOW_SAFETY_S in
ui.class_follow) as a safety net. The rerun is built like Streamlit's own server-side rerun (a
source file saved with runOnSave): the session's last client state, here with the fragment's id.

Only private parts of Streamlit are used, so `install()` checks that they are there; without them
(or with ATTENTION_LAB_FOLLOW_PUSH=0) `watch()` returns False and the panel ticks once a second as
before.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from server import runtime
from server.once import once_per_process

log = logging.getLogger(__name__)

FRAGMENT_KEY = "class_follow_tick"  # the follow panel's fragment: st.fragment(key=FRAGMENT_KEY)
WATCH_S = 0.5  # a change made on another replica is seen at most this late
RETRY_S = 0.1  # a busy session is tried again this often (a few attribute reads on the event loop)...
# ...for at most this long; then its next run, or the panel's slow tick, shows the move. Long: a
# session may stay busy for seconds (a trainer's live chart ticks back to back; a class rejoining
# after a restart) and a move it gave up on waited up to the safety tick (10 s)
GIVE_UP_S = 30.0
PRUNE_S = 30.0  # sessions the server dropped are forgotten this often

DONE, BUSY, GONE = "done", "busy", "gone"  # what one try to rerun a session's fragment did


@once_per_process("ATTENTION_LAB_FOLLOW_PUSH")
def install() -> bool:
    """True when this Streamlit has the parts a push needs (checked once per process)."""
    from streamlit.proto.ClientState_pb2 import ClientState  # noqa: F401 - must import
    from streamlit.runtime.app_session import AppSession, AppSessionState
    from streamlit.runtime.fragment import MemoryFragmentStorage
    from streamlit.runtime.runtime import Runtime

    needed = [hasattr(AppSession, "request_rerun"), hasattr(AppSessionState, "APP_NOT_RUNNING"),
              hasattr(MemoryFragmentStorage, "resolve_target"), hasattr(Runtime, "instance")]
    if not all(needed):
        log.warning("this Streamlit lacks what following by push needs; members tick once a second")
    return all(needed)


# ------------------------------------------------------------------------- one session, on its loop
def rerun_fragment(session: Any, key: str = FRAGMENT_KEY) -> str:
    """Rerun the fragment `key` of an idle `session` (an AppSession). Call it on the session's
    event loop. DONE: asked; BUSY: a run is under way or waiting, try later; GONE: the session is
    closing or its page has no such fragment."""
    from streamlit.proto.ClientState_pb2 import ClientState
    from streamlit.runtime.app_session import AppSessionState

    state = getattr(session, "_state", None)
    if state is AppSessionState.SHUTDOWN_REQUESTED:
        return GONE
    if state is not AppSessionState.APP_NOT_RUNNING or getattr(session, "_scriptrunner", None) is not None:
        return BUSY  # its client state is final only once its runner has shut down
    try:
        fragment_ids = session._fragment_storage.resolve_target(key)
    except Exception:  # noqa: BLE001 - StreamlitAPIException: this page did not draw the panel
        return GONE
    client_state = ClientState()
    client_state.CopyFrom(session._client_state)  # its page, its URL's query string, its browser context
    client_state.fragment_id = fragment_ids[0]
    client_state.is_auto_rerun = True  # as a tick: a fragment gone meanwhile is skipped quietly
    session.request_rerun(client_state)
    return DONE


def runtime_session(session_id: str) -> Any | None:
    """The running server's AppSession of `session_id`, or None (gone, or no server running; AppTest
    leaves a stand-in Runtime without a session manager: None too)."""
    return runtime.active_session(session_id)


def call_on_loop(session: Any, callback: Callable[[], None], delay: float = 0.0) -> bool:
    """Run `callback` on the session's event loop (after `delay` s); False when the loop is closed."""
    loop = getattr(session, "_event_loop", None)
    if loop is None or loop.is_closed():
        return False
    try:
        if delay:
            loop.call_soon_threadsafe(loop.call_later, delay, callback)
        else:
            loop.call_soon_threadsafe(callback)
    except RuntimeError:  # closed between the check and the call
        return False
    return True


# ------------------------------------------------------------------------------- the watcher
@dataclass
class Watched:
    """One class this process has members of."""
    store: Any  # its ClassroomStore
    sessions: set[str] = field(default_factory=set)
    last: tuple | None = None  # (lecturer version, revealed questions) when last looked at


class Pusher:
    """Which sessions follow which class, and the thread that wakes them. Thread-safe: `watch` and
    `forget` are called from the sessions' script threads, the rest from the watcher thread and
    the sessions' event loops."""

    def __init__(self, *, session_of: Callable[[str], Any | None] = runtime_session,
                 rerun: Callable[[Any], str] = rerun_fragment, on_loop: Callable[..., bool] = call_on_loop,
                 watch_s: float = WATCH_S, retry_s: float = RETRY_S, give_up_s: float = GIVE_UP_S,
                 thread: bool = True):
        self.session_of, self.rerun, self.on_loop = session_of, rerun, on_loop
        self.thread = thread  # False: nothing looks unless check() is called (tests)
        self.watch_s, self.retry_s, self.give_up_s = watch_s, retry_s, give_up_s
        self._lock = threading.Lock()
        self._classes: dict[str, Watched] = {}  # join code -> Watched
        self._code_of: dict[str, str] = {}  # session id -> join code
        self._pending: set[str] = set()  # sessions with a try under way on their loop
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._stopped = False
        self.pushed = 0  # reruns asked (diagnostics and tests)
        self._pruned_at = time.monotonic()

    # -- from the script threads --------------------------------------------------------------
    def watch(self, store: Any, code: str, session_id: str) -> None:
        """This session shows the follow panel of class `code` (on every run of its panel)."""
        with self._lock:
            if self._code_of.get(session_id) != code:
                self._drop(session_id)
                self._code_of[session_id] = code
                watched = self._classes.setdefault(code, Watched(store))
                watched.sessions.add(session_id)
                listeners = getattr(store, "pulse_listeners", None)
                if listeners is not None and self.heard not in listeners:
                    listeners.append(self.heard)
            if self._thread is None and self.thread:
                self._thread = threading.Thread(target=self._run, name="class-follow-push", daemon=True)
                self._thread.start()

    def forget(self, session_id: str) -> None:
        """This session is in no class (any more)."""
        if session_id in self._code_of:  # a plain read first: most sessions are in no class
            with self._lock:
                self._drop(session_id)

    def _drop(self, session_id: str) -> None:  # under self._lock
        code = self._code_of.pop(session_id, None)
        watched = self._classes.get(code) if code is not None else None
        if watched is not None:
            watched.sessions.discard(session_id)
            if not watched.sessions:
                del self._classes[code]

    def watching(self, code: str) -> set[str]:
        with self._lock:
            watched = self._classes.get(code)
            return set(watched.sessions) if watched else set()

    def stop(self) -> None:
        """End the watcher thread (tests; the server's lives as long as the process)."""
        self._stopped = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    # -- the watcher thread -------------------------------------------------------------------
    def heard(self, code: str) -> None:
        """A store listener: class `code` changed through this process; look now."""
        self._wake.set()

    def _run(self) -> None:
        while not self._stopped:
            self._wake.clear()
            try:
                self.check()
            except Exception:  # noqa: BLE001 - the watcher must outlive any one bad read
                log.exception("checking the classes' pulses failed")
            self._wake.wait(self.watch_s)

    def check(self) -> int:
        """Read each watched class's pulse; wake the members of those that changed (or that this
        process looks at for the first time: a member may have read the pulse just before a move).
        Returns how many sessions were woken."""
        self._prune()
        with self._lock:
            classes = list(self._classes.items())
        woken = 0
        for code, watched in classes:
            key = self._pulse_key(watched.store, code)
            if key is None or key == watched.last:
                continue
            watched.last = key
            for session_id in self.watching(code):
                woken += self.push(session_id)
        return woken

    def _prune(self) -> None:
        """Every PRUNE_S, forget the sessions the server no longer has (tabs closed long ago)."""
        now = time.monotonic()
        if now - self._pruned_at < PRUNE_S:
            return
        self._pruned_at = now
        with self._lock:
            sessions = list(self._code_of)
        for session_id in sessions:
            if self.session_of(session_id) is None:
                self.forget(session_id)

    @staticmethod
    def _pulse_key(store: Any, code: str) -> tuple | None:
        from core.classroom.security import ClassroomError

        try:
            pulse = store.pulse(code, max_age_s=WATCH_S / 2)
        except ClassroomError:
            return ("ended",)  # the members' panels say so and leave the class
        except Exception:  # noqa: BLE001 - the database is unreachable: look again next time
            log.exception("reading class %s's pulse failed", code)
            return None
        return pulse.lecturer.version, pulse.revealed

    # -- one session ----------------------------------------------------------------------------
    def push(self, session_id: str) -> bool:
        """Have the session's follow fragment run; False when the session is gone or already has a
        try under way (that one will see the latest pulse when it runs)."""
        session = self.session_of(session_id)
        if session is None:
            self.forget(session_id)
            return False
        with self._lock:
            if session_id in self._pending:
                return False
            self._pending.add(session_id)
        deadline = time.monotonic() + self.give_up_s

        def attempt() -> None:
            try:
                outcome = self.rerun(session)
            except Exception:  # noqa: BLE001 - one session's failure must not stop the others
                log.exception("waking a class member failed")
                outcome = GONE
            if outcome == BUSY and time.monotonic() < deadline and self.on_loop(session, attempt, self.retry_s):
                return
            with self._lock:
                self._pending.discard(session_id)
                if outcome == DONE:
                    self.pushed += 1

        if not self.on_loop(session, attempt):
            with self._lock:
                self._pending.discard(session_id)
            self.forget(session_id)
            return False
        return True


_PUSHER: Pusher | None = None
_PUSHER_LOCK = threading.Lock()


def pusher() -> Pusher:
    """This process's Pusher."""
    global _PUSHER
    with _PUSHER_LOCK:
        if _PUSHER is None:
            _PUSHER = Pusher()
        return _PUSHER


def watch(store: Any, code: str) -> bool:
    """Called by the follow panel of a class member, in its script thread: True when the server will
    wake this session on a move (its panel may then tick slowly), False otherwise."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None or not install() or runtime_session(ctx.session_id) is None:
        return False  # AppTest (no server) or no push: the panel ticks every second
    pusher().watch(store, code, ctx.session_id)
    return True


def forget() -> None:
    """Called for a session in no class (cheap: most sessions never watched)."""
    if _PUSHER is None:
        return
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is not None:
        _PUSHER.forget(ctx.session_id)
