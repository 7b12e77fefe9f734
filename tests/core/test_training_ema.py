"""TrainConfig.ema_decay: the running average of the weights (core/training/average.py) in the Trainer.

The average is compared with one computed here by hand from the weights recorded after every step of a
run without it (the average never changes training, so both runs train alike). The CUDA-graph path is
tested in tests/core/test_training_gpu.py.
"""

from dataclasses import replace

import pytest
import torch

from core import settings as core_settings, train_settings
from core.data import build_names_data, load_names
from core.models import GPTConfig
from core.training import PRESETS, Trainer, TrainConfig, TrainingError
from core.training.average import WeightAverage, average_weight
from tests.core.test_training import SCRIPTED_VAL, resumed_and_straight, scripted_validation
from tests.core.test_training_gpu import assert_same_training_state, forward_with_nan_loss_at, training_tensors

TINY = GPTConfig(context_size=12, n_layer=1, n_head=2, d_embed=16, d_ff=32, dropout=0.1)
DECAY = 0.9  # short memory: a few steps already move the average far from the weights

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def small_data():
    return build_names_data(names=load_names()[:2000])


def tiny_config(**changes) -> TrainConfig:
    values = dict(model=TINY, batch_size=16, max_steps=40, val_interval=10, seed=7, device="cpu", ema_decay=DECAY)
    values.update(changes)
    return TrainConfig(**values)


def weights_after_each_step(config: TrainConfig, data, steps: int) -> list[dict[str, torch.Tensor]]:
    """The trained weights after steps 1..steps of a run without the average, as float64 copies."""
    trainer = Trainer(replace(config, ema_decay=None), data)
    recorded = []
    for _ in range(steps):
        trainer.train(n_steps=1)
        recorded.append({name: p.detach().double().clone() for name, p in trainer.model.named_parameters()})
    return recorded


def hand_averages(recorded: list[dict[str, torch.Tensor]], decay: float) -> list[dict[str, torch.Tensor]]:
    """The bias-corrected EMA after each step, written as its definition: m_t = decay * m_(t-1) +
    (1 - decay) * w_t from m_0 = 0, divided by 1 - decay ** t (the sum of its coefficients)."""
    moment = {name: torch.zeros_like(w) for name, w in recorded[0].items()}
    averages = []
    for t, weights in enumerate(recorded, start=1):
        moment = {name: decay * moment[name] + (1 - decay) * weights[name] for name in weights}
        averages.append({name: m / (1 - decay ** t) for name, m in moment.items()})
    return averages


def shown_weights(trainer: Trainer) -> dict[str, torch.Tensor]:
    return {name: p.detach().double() for name, p in trainer.model.named_parameters()}


def assert_weights_close(mine: dict, theirs: dict, atol: float = 1e-6) -> None:
    for name, tensor in theirs.items():
        torch.testing.assert_close(mine[name].double(), tensor.double(), rtol=0, atol=atol, msg=name)


def assert_same_average(trainer: Trainer, other: Trainer) -> None:
    """Bit-identical averages, trained weights and weights shown."""
    for mine, theirs in zip(trainer._average.average, other._average.average):
        assert torch.equal(mine, theirs)
    for mine, theirs in zip(trainer._average.state()["trained"].values(), other._average.state()["trained"].values()):
        assert torch.equal(mine, theirs)
    for mine, theirs in zip(trainer.model.state_dict().values(), other.model.state_dict().values()):
        assert torch.equal(mine, theirs)


# ---------------------------------------------------------------------------------------------
# The setting
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value, message", [(0.0, "ema_decay must be None"), (1.0, "ema_decay must be at most"),
                                            (-0.5, "ema_decay must be at least"), ("0.9", "ema_decay must be a")])
def test_ema_decay_is_validated(value, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(ema_decay=value)


def test_ema_decay_is_a_train_page_control_and_survives_links_and_dicts():
    assert TrainConfig().ema_decay is None
    assert "ema_decay" in train_settings.fields_in("more")
    rules = train_settings.widget_spec("ema_decay")
    assert core_settings.describe(rules, 0.0) == "no EMA" and core_settings.describe(rules, 0.995) == "EMA 0.995"
    config = replace(PRESETS["gpu"](), ema_decay=0.995)
    settings = train_settings.settings_from_config(config)
    no_average = replace(config, ema_decay=None)
    assert settings.ema_decay == 0.995 and train_settings.settings_from_config(no_average).ema_decay == 0.0
    back, errors = core_settings.from_params(train_settings.TrainSettings, core_settings.to_params(settings))
    assert back == settings and not errors
    assert train_settings.to_train_config(back) == config
    assert TrainConfig.from_dict(config.to_dict()) == config
    older = config.to_dict()
    del older["ema_decay"]  # a run saved before the field existed
    assert TrainConfig.from_dict(older).ema_decay is None


def test_the_bias_correction_starts_with_the_weights_and_ends_at_one_minus_decay():
    assert average_weight(0.9, 1) == pytest.approx(1.0)
    assert average_weight(0.9, 2) == pytest.approx(0.1 / 0.19)
    assert average_weight(0.999, 100_000) == pytest.approx(0.001)


# ---------------------------------------------------------------------------------------------
# The average
# ---------------------------------------------------------------------------------------------


def test_without_ema_decay_nothing_changes(small_data):
    """Off by default: no average, no copies, the state says so; and switched on it changes no
    training step: the losses and the trained weights are exactly those of a run without it."""
    plain = Trainer(tiny_config(ema_decay=None), small_data)
    averaged = Trainer(tiny_config(), small_data)
    assert plain._average is None and plain.cuda is None
    plain.train()
    averaged.train()
    assert plain.state_dict()["ema"] is None
    assert averaged.history["train_loss"] == plain.history["train_loss"]
    assert averaged.history["tokens"] == plain.history["tokens"]
    assert averaged.history["val_loss"] != plain.history["val_loss"]  # the average is validated
    for trained, p in zip(averaged._average.trained, plain.model.parameters()):
        assert torch.equal(trained, p)


@pytest.mark.parametrize("pack_length", [None, 32])
def test_the_model_shows_the_average_computed_by_hand(small_data, pack_length):
    config = tiny_config(max_steps=12, val_interval=1000, pack_length=pack_length)
    recorded = weights_after_each_step(config, small_data, 12)
    expected = hand_averages(recorded, DECAY)
    trainer = Trainer(config, small_data)
    trainer.train(n_steps=1)
    assert_weights_close(shown_weights(trainer), recorded[0])  # the first update copies the weights
    trainer.train(n_steps=4)
    assert_weights_close(shown_weights(trainer), expected[4])
    trainer.train()
    assert_weights_close(shown_weights(trainer), expected[-1])
    distance = max(float((expected[-1][n] - recorded[-1][n]).abs().max()) for n in recorded[-1])
    assert distance > 1e-3  # the average really is not the last weights: the check above can fail
    assert_weights_close(dict(zip(trainer._average.names, trainer._average.trained)), recorded[-1])


def test_validation_measures_the_average(small_data):
    config = tiny_config(max_steps=10, val_interval=5)
    recorded = weights_after_each_step(config, small_data, 10)
    expected = hand_averages(recorded, DECAY)
    trainer = Trainer(config, small_data)
    trainer.train()
    judge = Trainer(replace(config, ema_decay=None), small_data)  # evaluates whatever weights it is given
    for index, step in enumerate(trainer.history["val_steps"]):
        with torch.no_grad():
            for name, p in judge.model.named_parameters():
                p.copy_(expected[step - 1][name])
        assert trainer.history["val_loss"][index] == pytest.approx(judge.evaluate(), abs=1e-5), step
        with torch.no_grad():
            for name, p in judge.model.named_parameters():
                p.copy_(recorded[step - 1][name])
        assert abs(trainer.history["val_loss"][index] - judge.evaluate()) > 1e-4, step  # not the last weights
    assert trainer.evaluate() == pytest.approx(trainer.history["val_loss"][-1], abs=1e-6)  # the model shows it


def test_pausing_anywhere_and_stopping_early_change_nothing(small_data):
    """Slices of any length give the run that trains straight through, and a run stopped at step k is
    a run set to stop there (same average, trained weights, optimizer state and batch order)."""
    straight = Trainer(tiny_config(max_steps=23), small_data)
    straight.train()
    sliced = Trainer(tiny_config(max_steps=23), small_data)
    for n in (7, 1, 5, 100):
        sliced.train(n_steps=n)
    assert sliced.history == {**straight.history, "elapsed": sliced.history["elapsed"]}
    assert_same_average(sliced, straight)
    stopped = Trainer(tiny_config(max_steps=100), small_data)
    stopped.train(n_steps=23)
    assert stopped.history["train_loss"] == straight.history["train_loss"]
    assert stopped.history["val_loss"] == straight.history["val_loss"][:2]  # steps 10 and 20 (23 is the end)
    assert_same_average(stopped, straight)
    mine, theirs = training_tensors(stopped), training_tensors(straight)
    assert mine.keys() == theirs.keys() and all(torch.equal(mine[k], theirs[k]) for k in mine)
    assert torch.equal(stopped._batch_generator.get_state(), straight._batch_generator.get_state())


def test_restore_best_keeps_the_average_of_the_best_step_and_trains_on_from_the_trained_weights(small_data):
    config = tiny_config(max_steps=60, val_interval=10, restore_best=True)
    trainer = scripted_validation(Trainer(config, small_data))
    trainer.train()
    assert (trainer.best_step, trainer.weights_step) == (30, 30)
    at_best = Trainer(config, small_data)
    at_best.train(n_steps=30)  # shows the average of step 30
    for mine, theirs in zip(trainer.model.state_dict().values(), at_best.model.state_dict().values()):
        assert torch.equal(mine, theirs)
    # set to 61 steps from the start: the same steps, so training on went on from the trained weights and
    # the average of step 60, not from the best weights shown at the end
    straight = scripted_validation(Trainer(replace(config, max_steps=61), small_data), {**SCRIPTED_VAL, 61: 1.0})
    straight.train()
    scripted_validation(trainer, {**SCRIPTED_VAL, 61: 1.0})
    trainer.set_max_steps(61)
    trainer.train()
    assert trainer.history["train_loss"] == straight.history["train_loss"]
    assert (trainer.best_step, trainer.weights_step) == (61, None)
    assert_same_average(trainer, straight)


@pytest.mark.parametrize("pack_length", [32, None])
def test_after_a_nan_the_average_is_that_of_the_restore_point(small_data, pack_length):
    """Reads every 8 steps: the NaN of step 25 is found at step 32, after updates 25-31 had reached the
    weights and the average. Going back to step 23 restores the average too: everything equals a run
    stopped at step 23, and both train on alike."""
    config = tiny_config(loss_read_every=8, val_interval=100, max_steps=80, pack_length=pack_length)
    trainer = Trainer(config, small_data)
    forward_with_nan_loss_at(trainer, 25)
    with pytest.raises(TrainingError, match="step 25: the loss became nan.*went back to step 23 "):
        trainer.train()
    assert all(bool(torch.isfinite(t).all()) for t in trainer._average.average)
    stopped_there = Trainer(config, small_data)
    stopped_there.train(n_steps=23)
    assert_same_training_state(trainer, stopped_there)
    assert_same_average(trainer, stopped_there)
    for t in (trainer, stopped_there):
        t.clear_error()
        t.set_max_steps(43)
        t.train()
    assert trainer.history["train_loss"] == stopped_there.history["train_loss"]
    assert_same_average(trainer, stopped_there)


# ---------------------------------------------------------------------------------------------
# Saved runs
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("restore_best, loss_read_every", [(False, None), (True, None), (False, 4)])
def test_a_saved_run_resumes_with_its_average(small_data, restore_best, loss_read_every):
    config = tiny_config(max_steps=20, schedule="cosine", warmup_steps=3, pack_length=24, restore_best=restore_best,
                         loss_read_every=loss_read_every)
    resumed, straight = resumed_and_straight(config, small_data, through_file=True)
    assert_same_average(resumed, straight)


def test_a_model_file_without_an_average_starts_one_from_its_weights(small_data):
    """How core.runs.run_from_checkpoint resumes a model file: a fresh trainer's state (step 0, no
    average saved) with the file's weights put in; the average then starts from those weights."""
    donor = Trainer(tiny_config(), small_data)
    donor.train(n_steps=15)
    fresh = Trainer(tiny_config(), small_data)
    state = fresh.state_dict()
    assert state["ema"] is None
    state["model"] = {k: v.clone() for k, v in donor.model.state_dict().items()}
    state["step"] = 15
    fresh.load_state_dict(state)
    for p, average, trained in zip(fresh.model.parameters(), fresh._average.average, fresh._average.trained):
        assert torch.equal(average, p) and torch.equal(trained, p)
    fresh.train(n_steps=5)
    assert fresh.step == 20 and all(bool(torch.isfinite(p).all()) for p in fresh.model.parameters())


def test_the_restore_point_of_a_loaded_run_holds_its_trained_weights(small_data):
    """A loaded run shows the average, but its restore point must hold the trained weights: after a NaN
    right after loading, it is exactly the run that was saved."""
    config = tiny_config(loss_read_every=4, val_interval=100, max_steps=40)
    first = Trainer(config, small_data)
    first.train(n_steps=12)
    resumed = Trainer.from_state_dict(first.state_dict(), small_data)
    forward_with_nan_loss_at(resumed, 2)  # step 14, found at the read of step 16
    with pytest.raises(TrainingError, match="went back to step 12 "):
        resumed.train()
    assert_same_training_state(resumed, first)
    assert_same_average(resumed, first)


def test_weight_average_swaps_in_place(small_data):
    model = Trainer(tiny_config(), small_data).model
    average = WeightAverage(model, 0.5)
    addresses = [p.data_ptr() for p in model.parameters()]
    with torch.no_grad():
        for p in model.parameters():
            p.add_(1.0)
    average.update(2)  # 1 - 0.5 ** 2: a weight of 2/3 on the moved weights
    moved = [p.detach().clone() for p in model.parameters()]
    average.show()
    for p, m in zip(model.parameters(), moved):
        torch.testing.assert_close(p.detach(), m - 1 / 3)
    with average.trained_weights_in_model():
        assert all(torch.equal(p, m) for p, m in zip(model.parameters(), moved))
    assert all(torch.allclose(p, m - 1 / 3) for p, m in zip(model.parameters(), moved))
    average.hide()
    assert all(torch.equal(p, m) for p, m in zip(model.parameters(), moved))
    assert [p.data_ptr() for p in model.parameters()] == addresses


def test_the_cpu_update_is_the_recordable_update_in_one_op(small_data):
    # the CPU lerps with the coefficient as a number; the CUDA graph's path reads it from a tensor
    model = Trainer(tiny_config(), small_data).model
    lerped, recordable = WeightAverage(model, 0.9), WeightAverage(model, 0.9)
    recordable.on_cpu = False  # the three foreach ops a CUDA graph records, here on the CPU
    assert lerped.on_cpu
    generator = torch.Generator().manual_seed(3)
    for update in range(1, 8):
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn(p.shape, generator=generator))
        lerped.update(update)
        recordable.update(update)
        assert lerped.weight == pytest.approx(average_weight(0.9, update))
    assert any(not torch.equal(a, p) for a, p in zip(lerped.average, model.parameters()))  # it averaged
    for a, b in zip(lerped.average, recordable.average):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)


def test_the_cpu_presets_average_their_weights_and_the_gpu_versions_as_measured():
    # docs/PRESETS.md, 2026-11-27 and 2026-11-28: the average lowers the loss mid-schedule (where a slower
    # machine is at the goal's time); the GPU versions were measured without it
    assert PRESETS["quick_demo"]().ema_decay == 0.99
    for name, width in (("better", 96), ("best", 128)):
        preset = PRESETS[name]()
        assert (preset.ema_decay, preset.restore_best, preset.model.d_embed) == (0.995, True, width), name
        assert preset.model.n_layer == PRESETS["quick_demo"]().model.n_layer == 2
    from core.training.presets import GPU_PRESETS
    assert GPU_PRESETS["quick_demo"]().ema_decay is None and GPU_PRESETS["best"]().ema_decay is None
