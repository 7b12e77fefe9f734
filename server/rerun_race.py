"""A fix for a race inside Streamlit that loses the end of a page run on a busy server.

When a fragment's rerun (a `run_every` tick: the live chart, the follow-the-lecturer check) reaches
the server just after a page run has ended, but before the event loop has handled that run's last
events, Streamlit's AppSession finds its ScriptRunner stopped and starts a new one at once. Every
event the old runner had queued (the page's last elements and its "finished") is then ignored,
because it comes from a runner that is no longer the current one. Streamlit's own app_session.py
names this race (its issue 9921). The student sees a page that is missing its end; in a class it
was a follow move that landed without its poll, or a click that never got its answer. The busier
the server, the longer the loop is behind and the wider the window: measured with
benchmarks/loop_lag in a class of 60, 0-2 lost interactions per 5 minutes.

`install()` (called by streamlit_app.py, once per process) makes exactly that path wait: a
fragment rerun that finds the old runner stopped is started only once the loop has handled the old
runner's SHUTDOWN, its last event, so nothing of the page run is dropped; the tick runs a few
milliseconds later. If a click's run started meanwhile, the tick is handed to it, as Streamlit does
with any tick that arrives during a run. A click's own rerun still replaces a running page at once
(fastReruns), as before: that run's end is meant to be dropped.

Only private parts of Streamlit are involved, so `install()` checks that they are there and does
nothing otherwise (requirements.txt pins Streamlit below 1.70). ATTENTION_LAB_RERUN_RACE_FIX=0 leaves
Streamlit as it is (to measure the difference).
"""

from __future__ import annotations

import functools
import time
from typing import Any, Callable

from server.once import once_per_process

WAIT_LIMIT_S = 2.0  # a stopped runner that has not shut down by then is replaced as Streamlit would
POLL_S = 0.005  # how often the loop looks again while the old runner's events are being handled

@once_per_process("ATTENTION_LAB_RERUN_RACE_FIX")
def install() -> bool:
    """Patch Streamlit's AppSession once per process; True when the fix is in place."""
    from streamlit.runtime import app_session

    session = app_session.AppSession
    create = getattr(session, "_create_scriptrunner", None)
    shutting_down = getattr(getattr(app_session, "AppSessionState", None), "SHUTDOWN_REQUESTED", None)
    if create is None or shutting_down is None or not hasattr(session, "_call_soon_on_event_loop"):
        return False
    session._create_scriptrunner = deferring(create, shutting_down)
    return True


def deferring(create: Callable[[Any, Any], None], shutting_down: Any) -> Callable[[Any, Any], None]:
    """`AppSession._create_scriptrunner` that lets a stopped runner's last events through first."""

    @functools.wraps(create)
    def create_scriptrunner(self, rerun_data) -> None:
        old = self._scriptrunner
        fragment_id = getattr(rerun_data, "fragment_id", None)
        if old is None or not fragment_id:
            # no runner (the usual start), or a click replaced it (fastReruns set it to None first)
            return create(self, rerun_data)
        # A fragment rerun that the current runner refused: it has stopped, and its last events
        # are still on their way to this loop. Start the new runner only after them.
        deadline = time.monotonic() + WAIT_LIMIT_S

        def when_old_is_done() -> None:
            if self._state == shutting_down:
                return
            current = self._scriptrunner
            if current is old and time.monotonic() < deadline:
                self._event_loop.call_later(POLL_S, when_old_is_done)
            elif current is None or current is old:
                if self.has_fragment(fragment_id):  # a page run may have removed it (Streamlit checks too)
                    create(self, rerun_data)
            else:
                current.request_rerun(rerun_data)  # a click's run started meanwhile: the tick follows it

        self._call_soon_on_event_loop(when_old_is_done)

    create_scriptrunner.defers_fragment_reruns = True  # tests and diagnostics can tell it is installed
    return create_scriptrunner
