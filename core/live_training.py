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
"""

from __future__ import annotations

import contextlib
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
