"""The live-training protocol: how the app trains anything a little at a time, between redraws.

A page never runs a training loop itself. It keeps one object per live run in the session's state
and `ui.live.live_fragment` calls its `advance` on every tick (twice a second), then redraws from
its `history`. Every live run in the app implements the same three members:

    advance(budget_s, slot=None) -> Outcome
        Train for up to `budget_s` seconds (at least one step when there is anything to train)
        inside `slot`, a context manager such as `core.budget.SLOTS.slot(owner)` that yields True
        when this session may train now and False when every training slot is taken (then nothing
        is trained and the outcome says `busy`). None for `slot`: train without asking.
        Errors a student can cause (a diverged loss) never escape: they end the run with a message
        in `Outcome.error` (and `finished`), and the run reports `done`.
    done          (property) True when there is nothing left to train: finished, or stopped on an error.
    history       The accumulated metrics a chart redraws from (its shape is the run's own business).

Three kinds of run implement it:
* the names GPT's `Run` (the Train page): one `Trainer`; its `advance` calls `Trainer.train`,
  the engine's one training loop;
* `TrainerGroup` (below): several `Trainer`s raced in one slot, e.g. SGD against AdamW;
* `SteppedTraining` (below): a mixin for anything that can do one `train_step()` (the small-LM
  race of three tiny models); it supplies the time-budgeted `advance`.

A run never depends on anything outside itself (its own seeds and generators), so a rerun, a page
switch or a busy slot only decides *when* the next slice happens, never what it computes.

`BackgroundTraining` (below) calls the same `advance` from a worker thread instead of the page's
tick, for one viewer's run on a GPU: the tick then only draws (see the class).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, ContextManager, Protocol, runtime_checkable

from core.training import Trainer


@dataclass
class Outcome:
    """What one call of `advance` did."""

    steps: int = 0  # optimisation steps trained in this call (summed over the models of a race)
    busy: bool = False  # no training slot was free: nothing was done, try again on the next tick
    finished: bool = False  # the run became done in this call (its last step, or an error)
    error: str | None = None  # why training stopped, in words for the student (None: no error)
    seconds: float = 0.0  # wall-clock seconds of the call
    val_points: list[tuple[int, float]] = field(default_factory=list)  # (step, val loss) measured


@runtime_checkable
class LiveTraining(Protocol):
    """Anything the live fragment can train: see the module docstring."""

    def advance(self, budget_s: float | None, slot: ContextManager | None = None) -> Outcome: ...

    @property
    def done(self) -> bool: ...

    @property
    def history(self) -> Any: ...


def _held(slot: ContextManager | None) -> ContextManager:
    return contextlib.nullcontext(True) if slot is None else slot


def _check_budget(budget_s: float | None) -> None:
    if budget_s is not None and not budget_s >= 0:  # also refuses NaN
        raise ValueError(f"budget_s must be a number of seconds >= 0, got {budget_s!r}")


def run_steps(train_step: Callable[[], None], is_done: Callable[[], bool], budget_s: float | None,
              slot: ContextManager | None = None, *, n_steps: int | None = None) -> Outcome:
    """Call `train_step()` until `budget_s` seconds have passed (at least once), `n_steps` steps
    are done, or `is_done()`; all inside `slot`. A ValueError from a step (a diverged loss) ends the
    slice with its message in `Outcome.error`. The loop behind `SteppedTraining.advance`."""
    _check_budget(budget_s)
    start = time.perf_counter()
    if is_done():
        return Outcome()
    steps = 0
    with _held(slot) as granted:
        if granted is False:
            return Outcome(busy=True, seconds=time.perf_counter() - start)
        try:
            while not is_done():
                train_step()
                steps += 1
                if n_steps is not None and steps >= n_steps:
                    break
                if budget_s is not None and time.perf_counter() - start >= budget_s:
                    break  # checked after the step: at least one step per call, even on a busy server
        except ValueError as exc:
            return Outcome(steps=steps, finished=True, error=str(exc), seconds=time.perf_counter() - start)
    return Outcome(steps=steps, finished=is_done(), seconds=time.perf_counter() - start)


class SteppedTraining:
    """Mixin: define `train_step()` (one optimisation step of everything that trains) and the
    `done` and `history` members; `advance(budget_s, slot)` then comes from here.

    Example (the whole protocol for a toy run):

        class Countdown(SteppedTraining):
            def __init__(self, steps):
                self.left, self.history = steps, []
            @property
            def done(self):
                return self.left == 0 or self.error is not None
            def train_step(self):
                self.left -= 1
                self.history.append(self.left)

    A ValueError raised by `train_step` is kept in `self.error` (the run is then expected to
    report `done`, as above) and returned in `Outcome.error`.
    """

    error: str | None = None  # why training stopped (set by advance when a step raised ValueError)

    def train_step(self) -> None:
        raise NotImplementedError

    def advance(self, budget_s: float | None, slot: ContextManager | None = None, *,
                n_steps: int | None = None) -> Outcome:
        """Train for up to `budget_s` seconds (or `n_steps` steps) inside `slot`; see run_steps."""
        outcome = run_steps(self.train_step, lambda: self.done, budget_s, slot, n_steps=n_steps)
        if outcome.error is not None:
            self.error = outcome.error
        return outcome


class TrainerGroup:
    """Several `core.training.Trainer`s advanced together, sharing one slot and one time budget
    (each unfinished trainer gets an equal share of it): a race between configurations that must
    run step for step, e.g. the lecture's SGD against AdamW on the same batches."""

    def __init__(self, trainers: dict[str, Trainer]):
        if not trainers:
            raise ValueError("a TrainerGroup needs at least one trainer")
        self.trainers = dict(trainers)  # label -> Trainer
        self.error: str | None = None  # the first trainer's error stops the whole race

    @property
    def done(self) -> bool:
        return self.error is not None or all(t.done for t in self.trainers.values())

    @property
    def history(self) -> dict[str, dict[str, list]]:
        """label -> that trainer's history (see core.training)."""
        return {label: t.history for label, t in self.trainers.items()}

    @property
    def step(self) -> int:
        """Steps done by the slowest trainer."""
        return min(t.step for t in self.trainers.values())

    def advance(self, budget_s: float | None, slot: ContextManager | None = None) -> Outcome:
        """Train each unfinished trainer for its share of `budget_s` (at least one step each)."""
        _check_budget(budget_s)
        start = time.perf_counter()
        if self.done:
            return Outcome()
        steps = 0
        val_points: list[tuple[int, float]] = []
        with _held(slot) as granted:
            if granted is False:
                return Outcome(busy=True, seconds=time.perf_counter() - start)
            running = [t for t in self.trainers.values() if not t.done]
            share = None if budget_s is None else budget_s / len(running)
            try:
                for trainer in running:
                    result = trainer.train(time_budget_s=share)
                    if result.steps == 0 and not trainer.done:
                        result = trainer.train(n_steps=1)  # the share ran out before a step began
                    steps += result.steps
                    val_points += result.val_points
            except ValueError as exc:  # TrainingError: a diverged loss
                self.error = str(exc)
                return Outcome(steps=steps, finished=True, error=self.error,
                               seconds=time.perf_counter() - start)
        return Outcome(steps=steps, finished=self.done, seconds=time.perf_counter() - start,
                       val_points=val_points)


DEFAULT_SWITCH_MS = 0.2


def _switch_interval_s() -> float | None:
    """ATTENTION_LAB_WORKER_SWITCH_MS: how often, in milliseconds, the interpreter may hand the GIL to
    another thread while a worker trains ("off" or 0: Python's own 5 ms); see WorkerSwitchInterval.
    A value that is not a number of milliseconds from 0 to 100 is logged and the default is used,
    as core.budget does with its settings: a typo must not keep the app from starting."""
    value = os.environ.get("ATTENTION_LAB_WORKER_SWITCH_MS", str(DEFAULT_SWITCH_MS)).strip().lower()
    try:
        milliseconds = 0.0 if value in ("", "off") else float(value)
    except ValueError:
        milliseconds = math.nan
    if milliseconds == 0:
        return None
    if not 0 < milliseconds <= 100:  # also refuses NaN
        logging.getLogger(__name__).warning(
            "ATTENTION_LAB_WORKER_SWITCH_MS must be a number of milliseconds from 0 to 100 or 'off', "
            "got %r: using %g ms", value, DEFAULT_SWITCH_MS)
        milliseconds = DEFAULT_SWITCH_MS
    return milliseconds / 1000


class WorkerSwitchInterval:
    """A shorter `sys.setswitchinterval` while at least one worker trains; the old value after the last.

    Why: every torch call lets go of the GIL and takes it back after the kernel is queued. When a
    script thread runs Python meanwhile (the page drawing, the server's event loop), taking it back
    waits until the interpreter makes that thread hand it over: 5 ms by default. A GPU step is a
    dozen such calls, so during a draw the worker queued about one call per 5 ms and the GPU ran dry
    (benchmarks/gil_handover.py measures it). With a 0.2 ms interval the worker keeps the GPU fed
    while the page draws; the drawing thread pays a few more hand-overs (not measurable on the
    development machine: benchmarks/gil_handover.py, docs/PRESETS.md)."""

    def __init__(self, seconds: float | None):
        self.seconds = seconds  # None: leave Python's interval alone
        self._lock = threading.Lock()
        self._users = 0
        self._saved: float | None = None

    @property
    def in_use(self) -> bool:
        """True while at least one worker trains (server.housekeeping waits with its full collection)."""
        return self._users > 0

    def __enter__(self) -> "WorkerSwitchInterval":
        with self._lock:
            if self._users == 0 and self.seconds is not None:
                self._saved = sys.getswitchinterval()
                sys.setswitchinterval(min(self.seconds, self._saved))
            self._users += 1
        return self

    def __exit__(self, *exc) -> None:
        with self._lock:
            self._users -= 1
            if self._users == 0 and self._saved is not None:
                sys.setswitchinterval(self._saved)
                self._saved = None


WORKER_SWITCH = WorkerSwitchInterval(_switch_interval_s())  # shared by every worker of the process


class BackgroundTraining:
    """Trains a live run in a worker thread while the page only draws it.

    Why: in the page's tick the training and the drawing take turns in one thread, so a run trains
    at most SLICE_S of every TICK_S (0.45 of 0.5 s): 90% of the engine's speed at best, measured
    0.896-0.911 on an H200 (docs/PRESETS.md). On a GPU the training thread mostly waits for the
    device, so a worker can go on training while the page draws. For one viewer only: on a hosted
    server the page's tick and the shared training slots pace every session (core.budget).

    The worker calls `run.advance(chunk_s, slot())` over and over while `keep_going()` holds, the run
    is not done, and `beat()` was called within the last `idle_stop_s` seconds: the page's tick
    beats, so a closed tab stops training as it does without a worker. `keep_going` and the run are
    read from the worker: neither may touch Streamlit. The run's `lock` (held by `advance`) keeps
    the page from reading a history half appended.

    The page reads the run's history under `drawing()`: the run's lock, taken ahead of the worker's
    next chunk. A plain lock would not do: the worker takes it back the moment it lets go, chunk
    after chunk, and the page waits (on an H200 the page redrew 1.2 times a second instead of 2).

    The tick takes the outcome that finished the run with `take_finished()`; an exception the run
    did not turn into an outcome (a bug, the GPU out of memory) stops the worker, is kept in
    `error`, is passed to `on_error(message)` (from the worker thread: e.g. pause the run with the
    message, so the page's controls offer Resume) and finishes the run's outcome for the tick (the
    page reruns). This worker is then not restarted; a resumed run gets a new one (ui.live).
    """

    def __init__(self, run: LiveTraining, keep_going: Callable[[], bool],
                 slot: Callable[[], ContextManager | None] = lambda: None, *,
                 chunk_s: float = 0.1, idle_stop_s: float = 3.0,
                 on_error: Callable[[str], None] | None = None):
        self.run = run
        self.on_error = on_error
        self.keep_going = keep_going
        self.slot = slot
        self.chunk_s = chunk_s  # training per advance: the longest a draw waits for the run's lock
        self.idle_stop_s = idle_stop_s
        self.steps = 0  # steps trained by the worker (all its threads)
        self.error: str | None = None
        self._finished: Outcome | None = None
        self._last_beat = time.monotonic()
        self._stop = threading.Event()
        self._draw_waiting = threading.Event()  # the page waits for the run's lock: the worker lets it go first
        self._thread: threading.Thread | None = None
        self._guard = threading.Lock()  # beat() and stop() may come from different script threads

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def beat(self) -> None:
        """The page is watching: start the worker if it should train and is not training."""
        with self._guard:
            self._last_beat = time.monotonic()
            if self.alive or self.error is not None or self.run.done or not self.keep_going():
                return
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._work, args=(self._stop,),
                                            name="live-training", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the worker after its current chunk and wait for it (at most `timeout` seconds)."""
        with self._guard:
            self._stop.set()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    @contextlib.contextmanager
    def drawing(self):
        """Hold the run's lock for the page's reads, before the worker's next chunk takes it."""
        self._draw_waiting.set()
        try:
            with self.run.lock:
                self._draw_waiting.clear()
                yield
        finally:
            self._draw_waiting.clear()

    def take_finished(self) -> Outcome | None:
        """The outcome that finished the run (its last step, or a diverged loss), once."""
        outcome, self._finished = self._finished, None
        return outcome

    def _watched(self) -> bool:
        return time.monotonic() - self._last_beat <= self.idle_stop_s

    def _work(self, stop: threading.Event) -> None:
        with WORKER_SWITCH:
            self._train_chunks(stop)

    def _train_chunks(self, stop: threading.Event) -> None:
        try:
            while not stop.is_set() and self._watched() and self.keep_going() and not self.run.done:
                while self._draw_waiting.is_set() and not stop.is_set():
                    time.sleep(0.0005)  # the page is about to read the history: let it have the lock
                outcome = self.run.advance(self.chunk_s, self.slot())
                self.steps += outcome.steps
                if outcome.finished:
                    self._finished = outcome
                    return
                if outcome.steps == 0:  # a busy slot, or paused between two checks: do not spin
                    stop.wait(0.02)
        except Exception as exc:  # noqa: BLE001 - the page must hear of it; a thread's traceback goes nowhere
            message = f"Training stopped: {type(exc).__name__}: {exc}"
            if self.on_error is not None:
                try:
                    self.on_error(message)
                except Exception as hook_exc:  # noqa: BLE001
                    message += f" (and then {type(hook_exc).__name__}: {hook_exc})"
            self._finished = Outcome(finished=True, error=message)
            self.error = message
