"""Tests of core.training: TrainConfig validation, schedules, Trainer slices, reproducibility, evaluation."""

import contextlib
import dataclasses
import io
import math
import time
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F

from core.data import IGNORE_INDEX, build_names_data, load_names, random_batch
from core.training import PRESETS, SliceResult, Trainer, TrainConfig, TrainingError, learning_rate
from core.training.packing import PackedRows
from core.models import GPTConfig
from core.settings import field_type

TINY = GPTConfig(context_size=12, n_layer=1, n_head=2, d_embed=16, d_ff=32, dropout=0.1)


@pytest.fixture(scope="module")
def small_data():
    """2,000 real names: fast, but the same shapes and padding as the full set."""
    return build_names_data(names=load_names()[:2000])


@pytest.fixture(scope="module")
def full_data():
    return build_names_data()


pytestmark = pytest.mark.usefixtures("one_thread")


def tiny_config(**changes) -> TrainConfig:
    values = dict(model=TINY, batch_size=16, max_steps=40, val_interval=10, seed=7, device="cpu")
    values.update(changes)
    return TrainConfig(**values)


# ---------------------------------------------------------------------------------------------
# Config
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"optimizer": "adam"}, "optimizer"),
        ({"schedule": "linear"}, "schedule"),
        ({"lr": 0}, "lr"),
        ({"lr": float("nan")}, "lr"),
        ({"batch_size": 0}, "batch_size"),
        ({"max_steps": 1.5}, "max_steps"),
        ({"val_batches": 0}, "val_batches"),
        ({"grad_clip": -1.0}, "grad_clip"),
        ({"warmup_steps": -1}, "warmup_steps"),
        ({"device": "tpu"}, "device"),
        ({"weight_decay": -0.1}, "weight_decay"),
        ({"min_lr_ratio": 2.0}, "min_lr_ratio"),
        ({"pack_length": 8}, "pack_length"),
        ({"pack_length": 24, "model": GPTConfig(causal=False)}, "causal"),
        ({"restore_best": "yes"}, "restore_best must be true or false"),
        ({"lr": 11}, "lr must be at most 10"),
        ({"batch_size": 1025}, "batch_size must be at most 1024"),
        ({"eval_batch_size": 8193}, "eval_batch_size must be at most 8192"),
        ({"seed": -1}, "seed must be at least 0"),
        ({"val_batches": 10_001}, "val_batches must be at most 10000"),
    ],
)
def test_train_config_validation(changes, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**changes)


RULES = {f.name: f.metadata for f in dataclasses.fields(TrainConfig)}


@pytest.mark.parametrize("name, key", [(name, key) for name, rules in RULES.items()
                                       for key in ("min", "max") if key in rules])
def test_validation_reads_every_bound_from_the_spec(name, key):
    """The page's bounds and TrainConfig.validate are one rule: the bound itself passes (unless it is the
    page's stand-in for None, e.g. 0 = no clipping), a value past it is refused naming the field."""
    kind, bound = field_type(TrainConfig, name), RULES[name][key]
    if bound != RULES[name].get("none_is"):
        assert getattr(TrainConfig(**{name: kind(bound)}), name) == bound
    beyond = bound + 1 if key == "max" else (bound / 2 if bound > 0 else bound - 1)
    with pytest.raises(ValueError, match=f"^{name} must be at (least|most)"):
        TrainConfig(**{name: kind(beyond)})


def test_train_config_dict_round_trip():
    config = TrainConfig(model=GPTConfig(n_layer=2), grad_clip=1.0, schedule="cosine", warmup_steps=5)
    assert TrainConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ValueError, match="unknown training config fields"):
        TrainConfig.from_dict({**config.to_dict(), "epochs": 3})


def test_learning_rate_schedules():
    constant = TrainConfig(lr=0.01, max_steps=100)
    assert [learning_rate(constant, s) for s in (0, 50, 99)] == [0.01, 0.01, 0.01]
    cosine = TrainConfig(lr=0.01, max_steps=110, schedule="cosine", warmup_steps=10, min_lr_ratio=0.1)
    assert learning_rate(cosine, 0) == pytest.approx(0.001)  # warm-up starts small ...
    assert learning_rate(cosine, 9) == pytest.approx(0.01)  # ... and reaches the peak
    assert learning_rate(cosine, 10) == pytest.approx(0.01)
    assert learning_rate(cosine, 60) == pytest.approx(0.0055)  # half way: mid-point of peak and floor
    assert learning_rate(cosine, 110) == pytest.approx(0.001)
    values = [learning_rate(cosine, s) for s in range(10, 111)]
    assert all(a >= b for a, b in zip(values, values[1:]))  # never increases after warm-up


def test_presets_are_valid_train_configs():
    assert set(PRESETS) == {"lecture", "quick_demo", "better", "best", "class_demo", "gpu"}
    for name, factory in PRESETS.items():
        config = factory()
        assert isinstance(config, TrainConfig), name
        assert factory() is not config  # a fresh object each time: the UI may edit it
    lecture = PRESETS["lecture"]()
    assert lecture.model == GPTConfig()
    assert (lecture.optimizer, lecture.lr, lecture.batch_size, lecture.max_steps) == ("sgd", 0.01, 32, 1000)
    assert (lecture.val_interval, lecture.seed) == (100, 101)


def test_the_class_demo_fits_a_hosted_server_and_costs_a_fraction_of_the_quick_demo(monkeypatch):
    from core import budget

    class_demo, quick = PRESETS["class_demo"](), PRESETS["quick_demo"]()
    monkeypatch.setenv("ATTENTION_LAB_HOSTED", "1")
    for name in ("ATTENTION_LAB_MAX_STEPS", "ATTENTION_LAB_MAX_PARAMS"):
        monkeypatch.delenv(name, raising=False)
    hosted = budget.load_limits()  # a hosted server's own caps
    assert budget.check_run_size(class_demo.model.num_params(), class_demo.max_steps, hosted) == []
    # what a step costs: its matrix products scale with the parameters the rows pass through
    assert class_demo.model.num_params() * 4 < quick.model.num_params()
    assert class_demo.batch_size == quick.batch_size and class_demo.pack_length == quick.pack_length
    assert class_demo.max_steps * 3 <= quick.max_steps


def test_the_class_demo_writes_names_that_read_like_names(full_data):
    # docs/PRESETS.md, 2026-11-28: 2.0490 after its 400 steps, the bigram's floor is ~2.45, and a
    # uniform guess 3.30; exact for the seed, so a change to the recipe or the engine shows here
    trainer = Trainer(PRESETS["class_demo"](), full_data)
    trainer.train()
    assert trainer.done and trainer.step == 400
    assert trainer.history["val_loss"][-1] < 2.07, trainer.history["val_loss"]
    assert trainer.history["val_loss"] == sorted(trainer.history["val_loss"], reverse=True)  # falls all along


def test_a_finished_run_frees_its_batches_and_trains_on_exactly_as_if_it_had_kept_them(small_data):
    """Trainer.release_batches: a class's server keeps many finished runs, so a finished CPU run lets
    its epoch's packed rows and its sorted validation windows go; given more steps, it packs them again from the same generator state
    and computes the same losses, batch for batch, as a run that kept them."""
    config = tiny_config(pack_length=24, max_steps=30, val_interval=15)
    freed, kept = Trainer(config, small_data), Trainer(config, small_data)
    kept.release_batches = lambda: None  # this one keeps its rows
    freed.train()
    kept.train()
    assert freed.done and freed._packed.rows is None and kept._packed.rows is not None
    assert not freed._eval_cache and freed.evaluate("val") == kept.evaluate("val")
    assert freed.state_dict()["packing"]["cursor"] == kept._packed.cursor  # a checkpoint still says where
    for trainer in (freed, kept):
        trainer.set_max_steps(90)  # past the end of the packed epoch: the next one is packed too
        trainer.train()
    assert freed.history["train_loss"] == kept.history["train_loss"]
    assert freed.history["val_loss"] == kept.history["val_loss"]


# ---------------------------------------------------------------------------------------------
# Trainer basics
# ---------------------------------------------------------------------------------------------


def test_trainer_slices_respect_limits_and_record_history(small_data):
    trainer = Trainer(tiny_config(), small_data)
    assert trainer.step == 0 and not trainer.done
    first = trainer.train(n_steps=15)
    assert isinstance(first, SliceResult) and first.ran
    assert first.steps == 15 == trainer.step == len(first.train_losses)
    assert first.val_points == [(10, trainer.history["val_loss"][0])]
    assert first.steps_per_s > 0 and first.tokens_per_s > 0
    rest = trainer.train(n_steps=1000)  # never beyond max_steps
    assert rest.steps == 25 and trainer.step == 40 and trainer.done
    assert trainer.train(n_steps=5).steps == 0
    history = trainer.history
    assert history["steps"] == list(range(1, 41))
    assert history["val_steps"] == [10, 20, 30, 40]
    assert len(history["train_loss"]) == len(history["elapsed"]) == len(history["tokens"]) == 40
    assert all(b > a for a, b in zip(history["tokens"], history["tokens"][1:]))
    assert all(b >= a for a, b in zip(history["elapsed"], history["elapsed"][1:]))


def test_validation_also_after_the_last_step_when_off_interval(small_data):
    trainer = Trainer(tiny_config(max_steps=25), small_data)
    result = trainer.train()
    assert [step for step, _ in result.val_points] == [10, 20, 25]


def test_time_budget_stops_a_slice(small_data):
    trainer = Trainer(tiny_config(max_steps=100_000, val_interval=100_000), small_data)
    assert trainer.train(time_budget_s=0).steps == 0
    start = time.perf_counter()
    result = trainer.train(time_budget_s=0.3)
    # generous bound: one step is milliseconds, so the slice ends soon after the budget
    assert 0 < result.steps and time.perf_counter() - start < 5
    both = trainer.train(n_steps=3, time_budget_s=60)
    assert both.steps == 3


def test_token_count_is_non_padding_targets(small_data):
    config = tiny_config(batch_size=32)
    trainer = Trainer(config, small_data)
    trainer.train(n_steps=1)
    _, targets = random_batch(
        small_data.train_x, small_data.train_y, 32, torch.Generator().manual_seed(config.seed)
    )
    expected = int((targets != IGNORE_INDEX).sum())
    assert trainer.history["tokens"] == [expected]
    assert expected < targets.numel()  # the padding really was left out


def test_slot_is_held_during_the_slice_and_a_refused_slot_does_nothing(small_data):
    trainer = Trainer(tiny_config(), small_data)
    events = []

    @contextlib.contextmanager
    def granted():
        events.append("enter")
        yield True
        events.append("exit")

    @contextlib.contextmanager
    def refused():
        yield False

    assert trainer.train(n_steps=2, slot=granted()).steps == 2
    assert events == ["enter", "exit"]
    result = trainer.train(n_steps=2, slot=refused())
    assert result.ran is False and result.steps == 0 and trainer.step == 2


def test_vocab_from_data_and_windows_rebuilt_for_another_context(small_data):
    config = tiny_config(model=GPTConfig(vocab_size=5, context_size=6, n_layer=1, n_head=2, d_embed=16, d_ff=32))
    trainer = Trainer(config, small_data)
    assert trainer.model.config.vocab_size == small_data.tokenizer.vocab_size
    assert trainer.config.model.context_size == 6
    assert config.model.vocab_size == 5  # the caller's object is left alone
    trainer.train(n_steps=2)
    assert math.isfinite(trainer.evaluate())


def test_device_fallback_is_reported(small_data):
    trainer = Trainer(tiny_config(device="cuda"), small_data)
    if torch.cuda.is_available():
        assert trainer.device.type == "cuda" and trainer.device_message is None
    else:
        assert trainer.device == torch.device("cpu")
        assert "CUDA" in trainer.device_message and "CPU" in trainer.device_message


def test_diverging_run_stops_with_a_clear_error(small_data):
    trainer = Trainer(tiny_config(), small_data)
    with torch.no_grad():
        trainer.model.lm_head.weight.fill_(float("nan"))
    with pytest.raises(TrainingError, match="smaller learning rate"):
        trainer.train(n_steps=3)
    assert trainer.done and trainer.step == 0


# ---------------------------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------------------------


def test_evaluate_is_the_mean_over_all_non_padding_targets(small_data):
    trainer = Trainer(tiny_config(eval_batch_size=100), small_data)
    trainer.train(n_steps=5)
    trainer.model.train()
    for split, x, y in (("val", small_data.val_x, small_data.val_y), ("train", small_data.train_x, small_data.train_y)):
        trainer.model.eval()
        with torch.no_grad():
            logits, _ = trainer.model(x)
            expected = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1), ignore_index=IGNORE_INDEX)
        trainer.model.train()
        assert trainer.evaluate(split) == pytest.approx(expected.item(), abs=1e-5)
        assert trainer.model.training  # mode restored
    partial = trainer.evaluate("val", max_batches=1)
    assert math.isfinite(partial) and partial != pytest.approx(trainer.evaluate("val"), abs=1e-7)
    with pytest.raises(ValueError, match="split"):
        trainer.evaluate("test")


def test_evaluate_does_not_depend_on_dropout_or_batch_size(small_data):
    a = Trainer(tiny_config(eval_batch_size=64), small_data)
    b = Trainer(tiny_config(eval_batch_size=5000), small_data)
    assert a.evaluate() == pytest.approx(b.evaluate(), abs=1e-6)
    assert a.evaluate() == pytest.approx(a.evaluate(), abs=0)


# ---------------------------------------------------------------------------------------------
# Reproducibility
# ---------------------------------------------------------------------------------------------


def test_same_seed_same_losses_even_interleaved(small_data):
    config = tiny_config(max_steps=30)
    reference = Trainer(config, small_data)
    reference.train()

    # Two runs with the same seed and one with another, advanced in alternating slices, with the
    # global RNG reseeded in between: nothing leaks from one run into another.
    a = Trainer(config, small_data)
    b = Trainer(config, small_data)
    other = Trainer(tiny_config(max_steps=30, seed=8), small_data)
    while not a.done:
        torch.manual_seed(int(a.step))
        a.train(n_steps=4)
        other.train(n_steps=3)
        torch.rand(100)
        b.train(n_steps=7)
    b.train()
    other.train()
    assert a.history["train_loss"] == reference.history["train_loss"]
    assert b.history["train_loss"] == reference.history["train_loss"]
    assert a.history["val_loss"] == reference.history["val_loss"]
    assert other.history["train_loss"] != reference.history["train_loss"]


def test_same_seed_same_losses_with_schedule_and_clipping(small_data):
    config = tiny_config(max_steps=20, schedule="cosine", warmup_steps=5, grad_clip=1.0)
    runs = []
    for _ in range(2):
        trainer = Trainer(config, small_data)
        trainer.train(n_steps=7)
        trainer.train()
        runs.append(trainer.history["train_loss"])
    assert runs[0] == runs[1]


def resumed_and_straight(config: TrainConfig, data, *, through_file: bool = False) -> tuple[Trainer, Trainer]:
    """A run saved at step 9 and resumed to the end, beside the same run trained straight through;
    asserts they agree step for step (losses, validation, best and weights' step). `through_file`:
    the saved state goes through torch.save / torch.load(weights_only=True), as a downloaded run does."""
    straight = Trainer(config, data)
    straight.train()
    first = Trainer(config, data)
    first.train(n_steps=9)
    state = first.state_dict()
    if through_file:
        buffer = io.BytesIO()
        torch.save(state, buffer)
        state = torch.load(io.BytesIO(buffer.getvalue()), weights_only=True)
    first.train(n_steps=2)  # must not affect the saved state
    resumed = Trainer.from_state_dict(state, data)
    assert resumed.step == 9
    resumed.train()
    assert resumed.history["train_loss"] == straight.history["train_loss"]
    assert resumed.history["val_loss"] == straight.history["val_loss"]
    assert (resumed.best_step, resumed.weights_step) == (straight.best_step, straight.weights_step)
    return resumed, straight


@pytest.mark.parametrize("pack_length, restore_best", [(None, False), (24, False), (24, True)])
def test_resume_from_state_dict_continues_identically(small_data, pack_length, restore_best):
    config = tiny_config(max_steps=20, optimizer="adamw", schedule="cosine", warmup_steps=3, pack_length=pack_length,
                         restore_best=restore_best)
    resumed, straight = resumed_and_straight(config, small_data)
    for mine, theirs in zip(resumed.model.parameters(), straight.model.parameters()):
        assert torch.equal(mine, theirs)


def test_state_dict_survives_torch_save_with_weights_only(small_data):
    trainer = Trainer(tiny_config(pack_length=24), small_data)
    trainer.train(n_steps=3)
    buffer = io.BytesIO()
    torch.save(trainer.state_dict(), buffer)
    state = torch.load(io.BytesIO(buffer.getvalue()), weights_only=True)
    resumed = Trainer.from_state_dict(state, small_data)
    trainer.train(n_steps=4)
    resumed.train(n_steps=4)
    assert resumed.history["train_loss"] == trainer.history["train_loss"]


# ---------------------------------------------------------------------------------------------
# restore_best: the weights of the best validation point
# ---------------------------------------------------------------------------------------------

SCRIPTED_VAL = {10: 3.0, 20: 2.5, 30: 2.0, 40: 2.2, 50: 2.4, 60: 2.6}  # lowest at step 30


def scripted_validation(trainer: Trainer, losses: dict[int, float] = SCRIPTED_VAL) -> Trainer:
    """Validation losses fixed per step, so where the best point lies is known (training is untouched)."""
    trainer.evaluate = lambda split="val", max_batches=None: losses[trainer.step]
    return trainer


def same_weights(a: Trainer, b: Trainer) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a.model.state_dict().values(), b.model.state_dict().values()))


def test_restore_best_ends_with_the_weights_of_the_best_validation_point(small_data):
    config = tiny_config(max_steps=60, val_interval=10, restore_best=True)
    trainer = scripted_validation(Trainer(config, small_data))
    plain = scripted_validation(Trainer(replace(config, restore_best=False), small_data))
    trainer.train()
    plain.train()
    assert trainer.history["train_loss"] == plain.history["train_loss"]  # keeping a copy changes no step
    assert trainer.history["val_steps"] == [10, 20, 30, 40, 50, 60]  # the curve shows the whole run
    assert trainer.step == 60 and trainer.done
    assert (trainer.best_step, trainer.best_val_loss, trainer.weights_step) == (30, 2.0, 30)
    assert trainer.weights_val_loss == 2.0 and trainer.last_val_loss == 2.6
    assert plain.weights_step is None and plain.weights_val_loss == 2.6
    stopped_at_best = Trainer(replace(config, restore_best=False), small_data)
    stopped_at_best.train(n_steps=30)
    assert same_weights(trainer, stopped_at_best) and not same_weights(trainer, plain)

    # training on: the weights are those of the current step again, until a better point is kept
    losses = {**SCRIPTED_VAL, 70: 1.5, 80: 1.7}
    scripted_validation(trainer, losses)
    trainer.set_max_steps(80)
    trainer.train(n_steps=1)
    assert trainer.step == 61 and trainer.weights_step is None
    trainer.train()
    assert (trainer.best_step, trainer.weights_step, trainer.weights_val_loss) == (70, 70, 1.5)


def test_restore_best_survives_save_and_resume(small_data):
    config = tiny_config(max_steps=60, val_interval=10, restore_best=True, pack_length=24)
    straight = scripted_validation(Trainer(config, small_data))
    straight.train()
    first = scripted_validation(Trainer(config, small_data))
    first.train(n_steps=45)  # after the best point (30), before the end
    buffer = io.BytesIO()
    torch.save(first.state_dict(), buffer)
    state = torch.load(io.BytesIO(buffer.getvalue()), weights_only=True)
    resumed = scripted_validation(Trainer.from_state_dict(state, small_data))
    assert (resumed.best_step, resumed.best_val_loss, resumed.weights_step) == (30, 2.0, None)
    resumed.train()
    assert resumed.history["train_loss"] == straight.history["train_loss"]
    assert (resumed.best_step, resumed.weights_step) == (30, 30) and same_weights(resumed, straight)
    finished = Trainer.from_state_dict(straight.state_dict(), small_data)  # saved after the weights went back
    assert finished.weights_step == 30 and finished.weights_val_loss == 2.0 and same_weights(finished, straight)


def test_packed_rows_compute_exactly_what_separate_windows_do(small_data):
    model = Trainer(tiny_config(model=GPTConfig(n_layer=2, n_head=2, d_embed=16, d_ff=32)), small_data).model.eval()
    x, y = small_data.train_x[:40], small_data.train_y[:40]
    packed = PackedRows(x, y, row_length=30, generator=torch.Generator().manual_seed(0))
    packed.pack_epoch()
    inputs, targets, positions, segments = packed.rows
    # each window exactly once per epoch, all its real targets kept
    assert sorted(set(segments[segments >= 0].tolist())) == list(range(40))
    assert int((targets != IGNORE_INDEX).sum()) == int((y != IGNORE_INDEX).sum())
    assert (targets != IGNORE_INDEX).float().mean() > 0.8  # rows are mostly real tokens
    batch_x, batch_y, batch_pos, attn_mask = packed.sample(len(inputs), torch.device("cpu"))
    with torch.no_grad():
        packed_logits, packed_loss = model(batch_x, batch_y, positions=batch_pos, attn_mask=attn_mask)
        window_logits, window_loss = model(x, y)
        # the explicit masked-softmax path agrees with SDPA on packed rows too
        explicit_logits, _, _ = model(batch_x, positions=batch_pos, attn_mask=attn_mask, return_attn=True)
    assert packed_loss.item() == pytest.approx(window_loss.item(), abs=1e-5)
    assert torch.allclose(explicit_logits, packed_logits, atol=1e-5)
    # window w's logits sit in the row and columns where its segment is
    order = torch.randperm(40, generator=torch.Generator().manual_seed(0))
    for epoch_index in range(40):
        where = segments == epoch_index
        window = int(order[epoch_index])
        n = int(where.sum())
        assert torch.allclose(packed_logits[where], window_logits[window, :n], atol=1e-5)


def test_same_seed_same_losses_when_packing(small_data):
    config = tiny_config(max_steps=30, pack_length=32, batch_size=4)
    runs = []
    for _ in range(2):
        trainer = Trainer(config, small_data)
        trainer.train(n_steps=11)
        trainer.train()
        runs.append(trainer.history["train_loss"])
    assert runs[0] == runs[1]
    assert all(math.isfinite(v) for v in runs[0])


def test_set_max_steps_extends_a_finished_run(small_data):
    trainer = Trainer(tiny_config(max_steps=10), small_data)
    trainer.train()
    assert trainer.done
    trainer.set_max_steps(15)
    assert trainer.train().steps == 5
    with pytest.raises(ValueError):
        trainer.set_max_steps(3)


# ---------------------------------------------------------------------------------------------
# Real training
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_adamw_learns_names_below_2_6_within_300_steps(full_data):
    config = TrainConfig(
        model=GPTConfig(dropout=0.0),  # the lecture's architecture
        optimizer="adamw",
        lr=1e-2,
        batch_size=32,
        max_steps=300,
        val_interval=100,
        seed=101,
        device="cpu",
        schedule="cosine",
        warmup_steps=30,
        grad_clip=1.0,
    )
    trainer = Trainer(config, full_data)
    start = time.perf_counter()
    result = trainer.train()
    elapsed = time.perf_counter() - start
    assert trainer.step == 300
    assert result.val_points[-1][1] < 2.6, (result.val_points, elapsed)
    assert result.val_points[-1][1] < result.val_points[0][1] + 0.05
    assert trainer.history["train_loss"][0] > 3.0  # it really started from scratch (~ln 27)
