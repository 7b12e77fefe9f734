"""core/live_training.py: the live-training protocol, its step mixin and the trainer race."""

import pytest

from core import budget
from core.data import build_names_data, load_names
from core.training import TrainConfig, Trainer
from core.live_training import LiveTraining, Outcome, SteppedTraining, TrainerGroup, run_steps
from core.models import GPTConfig

TINY = GPTConfig(context_size=8, n_layer=1, n_head=2, d_embed=16, d_ff=32, dropout=0.1)


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def small_data():
    return build_names_data(names=load_names()[:2000], context_size=8)


def trainer(data, **changes) -> Trainer:
    values = dict(model=TINY, batch_size=16, max_steps=20, val_interval=10, seed=7, device="cpu")
    return Trainer(TrainConfig(**{**values, **changes}), data)


class Countdown(SteppedTraining):
    """The docstring's toy run: `left` steps to go; a step can be made to fail."""

    def __init__(self, steps: int, fail_at: int | None = None):
        self.left, self.history, self.fail_at = steps, [], fail_at

    @property
    def done(self) -> bool:
        return self.left == 0 or self.error is not None

    def train_step(self) -> None:
        if self.left == self.fail_at:
            raise ValueError("the loss became nan")
        self.left -= 1
        self.history.append(self.left)


def test_stepped_training_implements_the_protocol_and_trains_at_least_one_step():
    run = Countdown(5)
    assert isinstance(run, LiveTraining)
    outcome = run.advance(0.0)  # no time at all: still one step, so a busy server makes progress
    assert outcome.steps == 1 and run.history == [4] and not outcome.finished
    outcome = run.advance(None, n_steps=2)
    assert outcome.steps == 2 and run.left == 2
    outcome = run.advance(10.0)  # stops at done, long before the budget
    assert outcome.steps == 2 and outcome.finished and run.done and outcome.seconds < 10
    assert run.advance(1.0) == Outcome()  # nothing left: nothing happens


def test_a_time_budget_bounds_the_slice():
    import time

    def slow_step():
        time.sleep(0.02)

    outcome = run_steps(slow_step, lambda: False, 0.1)
    assert 3 <= outcome.steps <= 7 and 0.1 <= outcome.seconds < 0.3


def test_a_refused_slot_trains_nothing_and_says_busy():
    slots = budget.TrainingSlots(1)
    run = Countdown(5)
    with slots.slot("someone-else") as got:
        assert got
        outcome = run.advance(1.0, slots.slot("waiting", timeout=0.01))
    assert outcome.busy and outcome.steps == 0 and run.left == 5
    assert run.advance(0.0, slots.slot("waiting")).steps == 1


def test_an_error_in_a_step_ends_the_run_with_its_message():
    run = Countdown(5, fail_at=3)
    outcome = run.advance(5.0)
    assert outcome.steps == 2 and outcome.finished and outcome.error == "the loss became nan"
    assert run.done and run.error == "the loss became nan"
    with pytest.raises(ValueError, match="budget_s"):
        run.advance(float("nan"))


def test_a_trainer_group_races_step_for_step_like_separate_trainers(small_data):
    race = TrainerGroup({"sgd": trainer(small_data, optimizer="sgd", lr=0.05),
                         "adamw": trainer(small_data, optimizer="adamw", lr=3e-3)})
    assert isinstance(race, LiveTraining)
    outcome = race.advance(0.0)  # each trainer gets at least one step
    assert outcome.steps == 2 and race.step == 1 and not race.done
    slices = 1
    while not race.done:
        outcome = race.advance(0.05)
        slices += 1
    assert outcome.finished and race.step == 20 and slices < 40
    alone = trainer(small_data, optimizer="sgd", lr=0.05)
    alone.train()
    assert race.history["sgd"]["train_loss"] == alone.history["train_loss"]  # slicing changes nothing
    assert race.history["sgd"]["val_loss"] == alone.history["val_loss"]
    assert race.history["adamw"]["train_loss"] != alone.history["train_loss"]
    assert race.advance(1.0) == Outcome()


def test_a_diverging_trainer_stops_the_race_with_its_message(small_data, monkeypatch):
    race = TrainerGroup({"a": trainer(small_data), "b": trainer(small_data)})

    def diverge(**kwargs):
        from core.training import TrainingError
        raise TrainingError("training stopped at step 1: the loss became nan (diverged).")

    monkeypatch.setattr(race.trainers["b"], "train", diverge)
    outcome = race.advance(1.0)
    assert outcome.finished and "diverged" in outcome.error and race.done
    with pytest.raises(ValueError, match="at least one"):
        TrainerGroup({})
