"""Times Streamlit's event loop inside a server the student simulator starts (a diagnostic).

Python imports `sitecustomize` at start-up from the first folder on its path that has one, so

    python benchmarks/student_sim.py --class-mode \
        --server-env PYTHONPATH=benchmarks/loop_lag LOOP_LAG_OUT=/tmp/lag.tsv LOOP_DROPPED_OUT=/tmp/dropped.tsv

makes the server write two files:

* LOOP_LAG_OUT: every 2,000 script-runner events, one line "unix time, median, p95, max" of the
  seconds each event waited between the script thread that sent it and the event loop that
  handled it (how far the loop is behind: it also reads the clicks and sends the pages);
* LOOP_DROPPED_OUT: one line "unix time, session id, event" per event Streamlit ignored because
  it came from a script runner that was no longer the session's current one (a click replaced
  the run, or the race named in Streamlit's app_session.py: a request that arrives before the
  loop has handled the last run's end). Forward messages are not listed.

docs/HOSTING.md (2026-11-26) has what it measured. Without the variables it does nothing.
"""

import functools
import os
import time

_LAG_OUT = os.environ.get("LOOP_LAG_OUT")
_DROPPED_OUT = os.environ.get("LOOP_DROPPED_OUT")
_BATCH = 2000


def _append(path: str, line: str) -> None:
    try:
        with open(path, "a", encoding="utf-8") as out:
            out.write(line)
    except OSError:
        pass  # a diagnostic must never break the server


def _install() -> None:
    from streamlit.runtime import app_session

    session = app_session.AppSession
    waits: list[float] = []

    if _LAG_OUT:
        schedule = session._call_soon_on_event_loop

        @functools.wraps(schedule)
        def timed_schedule(self, callback):
            sent = time.monotonic()

            def timed():
                waits.append(time.monotonic() - sent)  # runs on the loop: no lock needed
                if len(waits) >= _BATCH:
                    ordered = sorted(waits)
                    waits.clear()
                    _append(_LAG_OUT, f"{time.time():.0f}\t{ordered[len(ordered) // 2]:.4f}\t"
                                      f"{ordered[int(len(ordered) * 0.95)]:.4f}\t{ordered[-1]:.4f}\n")
                callback()

            return schedule(self, timed)

        session._call_soon_on_event_loop = timed_schedule

    if _DROPPED_OUT:
        handle = session._handle_scriptrunner_event_on_event_loop

        @functools.wraps(handle)
        def noting_handle(self, sender, event, *args, **kwargs):
            if sender is not self._scriptrunner and event.name != "ENQUEUE_FORWARD_MSG":
                _append(_DROPPED_OUT, f"{time.time():.3f}\t{self.id}\t{event.name}\n")
            return handle(self, sender, event, *args, **kwargs)

        session._handle_scriptrunner_event_on_event_loop = noting_handle


if _LAG_OUT or _DROPPED_OUT:
    _install()
