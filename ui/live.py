"""The one live-training fragment: every page that trains something while the student watches.

    live_fragment(key, run, draw, *, running=None, on_finish=None)

`run` is anything that implements the live-training protocol of `core.live_training`
(`advance(budget_s, slot) -> Outcome`, `done`, `history`), or None (nothing to train yet).
`draw()` is the page's own drawing: a callable with no arguments that puts the run's current
state on screen (charts from `run.history`, metrics, progress). A page passes only that; this
module owns everything else:

* the tick: a Streamlit fragment with `run_every=TICK_S` while the run is running, no timer when
  it is not (a paused, finished or absent run is drawn once and costs nothing);
* each tick: `draw()` first, then `run.advance(SLICE_S, slot)`. Drawing first keeps the page
  crisp: Streamlit fades a fragment's elements that a running tick has not redrawn yet. So the
  picture lags one slice (half a second) behind the model, never more;
* the training slot: the slice runs inside this session's place in `core.budget.SLOTS`
  (owner: `session_owner()`), so only a few sessions of a class train at the same moment;
* the queue: when every slot is taken, an info line at the top of the fragment says
  "Waiting for a free training slot: N runs ahead of you, retrying…" and the next tick retries;
* the end: when an advance finishes the run (its last step, or an error such as a diverged loss),
  `on_finish(outcome)` is called (store a result, switch a flag off), then the whole page reruns
  so its buttons and the timer follow the new state;
* clicks stay snappy: a whole-page rerun (a click, a widget change) trains only a short slice
  (FULL_RUN_SLICE_S; none on a hosted server, where page runs take turns); the fragment's own
  ticks train SLICE_S.

`on_error(message)` (with `background` only): called from the worker thread when training raised
something the run did not turn into an outcome (the GPU out of memory, a bug); the page keeps the
message (e.g. pauses the run with it). Without it the fragment shows the message itself.

`running`: True/False, or a callable returning it, asked on every tick; default: `not run.done`.
Pass it when the page can pause a run (e.g. `running=lambda: run.active`). If `run` has a `lock`
attribute (a threading.Lock held while it trains), drawing holds it too, so a click that arrives
mid-slice never draws a history that is being appended to.

Example (a race of two trainers):

    race = st.session_state.setdefault("race", TrainerGroup({"SGD": sgd, "AdamW": adamw}))
    live_fragment("race", race, lambda: show_chart(race_chart(race.history)))

Paused or stopped runs should not hold a place in the queue: call `leave_queue()` then.
`tick(run, draw, budget_s, running)` is one tick without the fragment (benchmarks call it).

`background=True` (the Train page, for a run on a CUDA GPU when not hosted:
`core.budget.background_training`): a worker thread trains the run between the ticks
(`core.live_training.BackgroundTraining`) and each tick only draws and keeps the worker alive. Then
`running` is read from the worker thread, so it must not touch Streamlit (`lambda: run.active` is
fine, `st.session_state` is not), and `draw` runs while the worker trains: it takes the run's lock
only around reads of the history that must agree with each other (`with history_lock():`). Every whole-page run of any page stops the session's workers
first (`stop_workers()`, from streamlit_app.py): another page never reads a model a worker is
updating, and the Train page's fragment starts its worker again on its next tick.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from typing import Callable, ContextManager

import streamlit as st

from core import budget
from core.live_training import BackgroundTraining, LiveTraining, Outcome

TICK_S = budget.LIMITS.tick_s  # the fragment reruns this often while a run trains (0.5 s; hosted 1 s)
# Training seconds per tick; the rest of the tick redraws (the page stays usable). At most 0.45 s
# also when hosted, where a tick is 1 s: with six runs taking turns (core.budget.TrainingSlots) each
# got only 4-5 slices of 0.9 s in a minute and a half, so one slice more or less was a quarter of
# its steps; halved, a turn is half as coarse, for the same share of the core.
SLICE_S = min(0.9 * TICK_S, 0.45)
# Training during a whole-page rerun (a click) is kept short. On a hosted server, where page runs
# take turns (core.budget.PageRuns), there is none: a page run holding one of the few turns must not
# wait for a training slot (up to half a second when the pages are busy) while others queue behind it;
# the fragment's next tick trains instead.
FULL_RUN_SLICE_S = 0.0 if budget.LIMITS.page_runs_at_once else 0.15
OWNER_KEY = "live.owner"
WORKERS_KEY = "live.workers"  # fragment key -> its BackgroundTraining


def session_owner() -> str:
    """This session's name in the training queue (core.budget.SLOTS), made on first use."""
    if OWNER_KEY not in st.session_state:
        st.session_state[OWNER_KEY] = f"session-{uuid.uuid4().hex[:12]}"
    return st.session_state[OWNER_KEY]


def leave_queue() -> None:
    """Give up this session's place in the training queue (a run was paused or stopped)."""
    budget.SLOTS.leave(session_owner())


def _is_fragment_rerun() -> bool:
    """True when only a fragment is rerunning (a tick), False for a whole-page run."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx()
    return bool(ctx and ctx.fragment_ids_this_run)


def _is_running(run: LiveTraining | None, running: bool | Callable[[], bool] | None) -> bool:
    if run is None:
        return False
    if running is None:
        return not run.done
    return bool(running() if callable(running) else running)


def queue_message(owner: str) -> str:
    """What a session waiting for a training slot is told."""
    ahead = max(1, budget.SLOTS.position(owner) + budget.SLOTS.running)
    return (f"Waiting for a free training slot: {ahead} run{'s' if ahead > 1 else ''} ahead of you, "
            "retrying…")


def tick(run: LiveTraining | None, draw: Callable[[], None], budget_s: float,
         running: bool | Callable[[], bool] | None = None) -> Outcome | None:
    """One tick: draw the run as it stands, then train it for `budget_s` seconds in this session's
    slot (when it is running). Returns the advance's outcome (None when nothing was trained)."""
    queue_box = st.empty()
    with getattr(run, "lock", None) or contextlib.nullcontext():
        draw()
    if budget_s <= 0 or not _is_running(run, running):
        return None
    owner = session_owner()
    outcome = run.advance(budget_s, budget.SLOTS.slot(owner))
    if outcome.busy:
        queue_box.info(queue_message(owner), icon=":material/hourglass_top:")
    return outcome


def stop_workers(state=None) -> None:
    """Stop this session's background training workers (each after its current chunk); `state`:
    the session's state (default st.session_state)."""
    state = st.session_state if state is None else state
    for worker in state.get(WORKERS_KEY, {}).values():
        worker.stop()


def _worker(key: str, run: LiveTraining, running: bool | Callable[[], bool] | None,
            on_error: Callable[[str], None] | None = None) -> BackgroundTraining:
    """This fragment's worker for `run` (a new run replaces the old run's worker, and a run running
    again after its worker failed gets a new one: the student pressed Resume)."""
    workers = st.session_state.setdefault(WORKERS_KEY, {})
    worker = workers.get(key)
    # a failed worker's run was paused by on_error: running again means Resume (without on_error the
    # run stays running and the failure would only repeat: that worker stays, showing its error)
    failed = on_error is not None and worker is not None and worker.error is not None and not worker.alive
    if worker is None or worker.run is not run or (failed and _is_running(run, running)):
        if worker is not None:
            worker.stop()
        owner = session_owner()
        worker = BackgroundTraining(run, lambda: _is_running(run, running),
                                    lambda: budget.SLOTS.slot(owner), on_error=on_error)
        workers[key] = worker
    return worker


_DRAWING = threading.local()  # .worker: the worker whose run this thread's background tick is drawing


def history_lock() -> ContextManager:
    """Hold it around reads of a live run's history that must agree with each other (lists that
    grow together). In a background tick: the run's lock, ahead of the worker's next chunk
    (BackgroundTraining.drawing); the rest of the drawing goes on while the worker trains. In a
    page tick the run's lock is already held for the whole draw: nothing to do."""
    worker = getattr(_DRAWING, "worker", None)
    return worker.drawing() if worker is not None else contextlib.nullcontext()


def background_tick(worker: BackgroundTraining, draw: Callable[[], None],
                    running: bool | Callable[[], bool] | None) -> Outcome | None:
    """One tick of a run trained by a worker: draw (taking the run's lock only where `draw` asks
    with history_lock()), keep the worker going (or stop it when the run is paused), and return the
    outcome that finished the run, if it has finished since."""
    run = worker.run
    _DRAWING.worker = worker
    try:
        draw()
    finally:
        _DRAWING.worker = None
    if _is_running(run, running):
        worker.beat()
    else:
        worker.stop()
    if worker.error is not None and worker.on_error is None:  # else the page shows it (on_error)
        st.error(worker.error, icon=":material/block:")
    return worker.take_finished()


def live_fragment(key: str, run: LiveTraining | None, draw: Callable[[], None], *,
                  running: bool | Callable[[], bool] | None = None,
                  on_finish: Callable[[Outcome], None] | None = None, background: bool = False,
                  on_error: Callable[[str], None] | None = None) -> None:
    """Draw `run` and, while it is running, train it a slice per tick (or, with `background`, in a
    worker between the ticks); see the module docstring. `key` names the fragment (unique among the
    fragments of a page)."""

    def body() -> None:
        if background and run is not None:
            outcome = background_tick(_worker(key, run, running, on_error), draw, running)
        else:
            budget_s = SLICE_S if _is_fragment_rerun() else FULL_RUN_SLICE_S
            outcome = tick(run, draw, budget_s, running)
        if outcome is not None and outcome.finished:
            if on_finish is not None:
                on_finish(outcome)
            st.rerun(scope="app")  # the controls change (Resume greys out) and the timer stops

    every = TICK_S if _is_running(run, running) else None
    st.fragment(body, run_every=every, key=key)()
