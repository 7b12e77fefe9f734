"""The trainer's GPU code paths: loss reads every N steps, mask caching, autocast, CUDA graph replay.

The first part runs on the CPU (the same code paths, with the CPU's settings forced where needed); the
second part needs a CUDA GPU and skips cleanly without one.
"""

import math
from dataclasses import replace

import pytest
import torch

from core.data import IGNORE_INDEX, build_names_data, load_names
from core.training import (
    PRESETS,
    Trainer,
    TrainConfig,
    TrainingError,
    best_config,
    preset_config,
    steps_between_loss_reads,
)
from core.training import gpu
from core.training.gpu import autocast_dtype
from core.training.packing import PackedRows
from core.models import GPTConfig

TINY = GPTConfig(context_size=12, n_layer=1, n_head=2, d_embed=16, d_ff=32, dropout=0.0)
CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU")


@pytest.fixture(scope="module")
def small_data():
    return build_names_data(names=load_names()[:2000])


pytestmark = pytest.mark.usefixtures("one_thread")


def tiny_config(**changes) -> TrainConfig:
    values = dict(model=TINY, batch_size=16, max_steps=40, val_interval=10, seed=7, device="cpu", pack_length=32)
    values.update(changes)
    return TrainConfig(**values)


# ---------------------------------------------------------------------------------------------
# On the CPU
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes, message",
    [({"autocast": "fp8"}, "autocast"), ({"loss_read_every": 0}, "loss_read_every"), ({"cuda_graph": "yes"}, "cuda_graph")],
)
def test_gpu_fields_are_validated(changes, message):
    with pytest.raises(ValueError, match=message):
        tiny_config(**changes)


@pytest.mark.parametrize("pack_length", [32, None])
def test_reading_losses_every_n_steps_changes_nothing_but_the_syncs(small_data, pack_length):
    runs = {}
    for every in (1, 7):
        trainer = Trainer(tiny_config(loss_read_every=every, pack_length=pack_length), small_data)
        assert trainer.read_every == every
        sliced = [trainer.train(n_steps=5).steps for _ in range(3)]  # slices end between reads: flushed
        assert sliced == [5, 5, 5] and len(trainer.history["train_loss"]) == 15
        trainer.train()
        runs[every] = trainer.history
    assert runs[7]["train_loss"] == runs[1]["train_loss"]
    assert runs[7]["tokens"] == runs[1]["tokens"] and runs[7]["val_loss"] == runs[1]["val_loss"]
    assert runs[7]["steps"] == list(range(1, 41))
    elapsed = runs[7]["elapsed"]
    assert all(b >= a for a, b in zip(elapsed, elapsed[1:])) and elapsed[-1] > 0


def test_a_deferred_read_stops_at_the_first_non_finite_loss(small_data):
    trainer = Trainer(tiny_config(loss_read_every=4), small_data)
    calls = {"n": 0}

    def poison(module, args):
        calls["n"] += 1
        if calls["n"] == 6:  # the forward pass of step 6 (no validation before step 10)
            with torch.no_grad():
                module.lm_head.weight.fill_(float("nan"))

    trainer.model.register_forward_pre_hook(poison)
    with pytest.raises(TrainingError, match="step 6.*went back to step 3.*smaller learning rate"):
        trainer.train()
    # the read at step 4 (before its update) found steps 1-4 finite: the weights of step 3 were kept;
    # the read at step 8 found step 6 NaN, after updates 6 and 7 had run: the run went back to step 3
    assert trainer.step == 3 and trainer.history["steps"] == [1, 2, 3]
    assert all(math.isfinite(v) for v in trainer.history["train_loss"])
    assert trainer.done and "step 6" in trainer.error
    stopped_there = Trainer(tiny_config(), small_data)
    stopped_there.train(n_steps=3)
    assert_same_training_state(trainer, stopped_there)


def forward_with_nan_loss_at(trainer: Trainer, bad_step: int) -> None:
    """Make the training forward pass of step `bad_step` return a NaN loss (validation passes untouched):
    its backward then puts NaN into every gradient, and the updates after it into the weights."""
    original, calls = trainer.model.forward, {"n": 0}

    def forward(*args, **kwargs):
        logits, loss = original(*args, **kwargs)
        if trainer.model.training:
            calls["n"] += 1
            if calls["n"] == bad_step:
                loss = loss * float("nan")
        return logits, loss

    trainer.model.forward = forward


def training_tensors(trainer: Trainer) -> dict[str, torch.Tensor]:
    """Every parameter, buffer and optimizer-state tensor of a trainer, by name."""
    tensors = {**dict(trainer.model.named_parameters()), **dict(trainer.model.named_buffers())}
    for index, state in enumerate(trainer.optimizer.state.values()):
        tensors.update({f"optimizer.{index}.{k}": v for k, v in state.items() if isinstance(v, torch.Tensor)})
    return tensors


def assert_same_training_state(trainer: Trainer, other: Trainer) -> None:
    """Bit-identical weights, optimizer state, step, history and batch order. (Before its first step
    `other` has no optimizer state yet; `trainer`'s must then be zeros, exactly a fresh AdamW state.)"""
    mine, theirs = training_tensors(trainer), training_tensors(other)
    assert set(theirs) <= set(mine)
    if trainer.config.optimizer == "adamw":  # its two moments per parameter are compared too (SGD keeps none)
        assert len(mine) > 2 * len(list(trainer.model.parameters()))
    for name, tensor in mine.items():
        if name in theirs:
            assert torch.equal(tensor, theirs[name]), name
        else:
            assert other.step == 0 and not tensor.any(), name
    assert trainer.step == other.step
    for key in ("steps", "train_loss", "tokens", "lr", "val_steps", "val_loss"):
        assert trainer.history[key] == other.history[key], key
    assert trainer._tokens == other._tokens
    assert torch.equal(trainer._batch_generator.get_state(), other._batch_generator.get_state())
    assert torch.equal(trainer._dropout_generator.get_state(), other._dropout_generator.get_state())


@pytest.mark.parametrize("pack_length", [32, None])
@pytest.mark.parametrize(
    "val_interval, bad_step, back_to",
    [(100, 25, 23),  # reads (before their update) at 8, 16, 24 kept steps 7, 15, 23; the read at 32 finds 25
     (10, 21, 20),  # the read before the validation at step 20 (all updates run) kept step 20
     (100, 3, 0)],  # before the first read: back to the start (no epoch packed yet, no optimizer state)
)
def test_after_a_nan_the_run_is_exactly_a_run_stopped_at_its_restore_point(small_data, pack_length, val_interval,
                                                                             bad_step, back_to):
    config = tiny_config(model=replace(TINY, dropout=0.1), loss_read_every=8, val_interval=val_interval,
                         max_steps=80, pack_length=pack_length, weight_decay=0.1)
    trainer = Trainer(config, small_data)
    forward_with_nan_loss_at(trainer, bad_step)
    with pytest.raises(TrainingError, match=f"step {bad_step}: the loss became nan.*went back to step {back_to} "):
        trainer.train()
    tensors = training_tensors(trainer)
    assert all(bool(torch.isfinite(t).all()) for t in tensors.values() if t.is_floating_point())
    stopped_there = Trainer(config, small_data)
    stopped_there.train(n_steps=back_to)
    assert_same_training_state(trainer, stopped_there)

    # with a smaller learning rate both train on alike, and the loss stays finite
    for t in (trainer, stopped_there):
        t.clear_error()
        t.set_lr(config.lr / 2)
        t.set_max_steps(back_to + 20)
        t.train()
    assert trainer.history["train_loss"] == stopped_there.history["train_loss"]
    assert trainer.step == back_to + 20 and all(math.isfinite(v) for v in trainer.history["train_loss"])
    assert trainer.history["lr"][-1] == config.lr / 2


def test_a_learning_rate_that_really_diverges_leaves_the_weights_of_a_good_step(small_data):
    """SGD at lr 5 overflows within ten steps; the updates after the NaN ran before the read found it."""
    config = tiny_config(optimizer="sgd", lr=5.0, loss_read_every=8, max_steps=300, val_interval=1000, pack_length=None)
    trainer = Trainer(config, small_data)
    with pytest.raises(TrainingError, match=r"diverged\)\. The run went back to step") as caught:
        trainer.train()
    nan_step = int(str(caught.value).split("stopped at step ")[1].split(":")[0])
    assert 0 < trainer.step < nan_step
    assert all(bool(torch.isfinite(t).all()) for t in training_tensors(trainer).values() if t.is_floating_point())
    stopped_there = Trainer(config, small_data)
    stopped_there.train(n_steps=trainer.step)
    assert_same_training_state(trainer, stopped_there)
    # (Consistent and finite, but a real divergence has usually blown the weights up before the first
    # NaN: training on from here overflows again at once, whatever the learning rate. A new run with a
    # smaller one is the way out; training on after a NaN is tested above, where the weights were sound.)


def test_a_restore_point_that_is_itself_broken_is_reported(small_data):
    trainer = Trainer(tiny_config(loss_read_every=4, val_interval=100), small_data)
    trainer.train(n_steps=4)
    for _, copy_of_tensor in trainer._restore_point._pairs:
        if copy_of_tensor.is_floating_point():
            copy_of_tensor.fill_(float("nan"))
    forward_with_nan_loss_at(trainer, 2)  # the 2nd forward from here: step 6
    with pytest.raises(TrainingError, match="weights were already not finite: start a new run"):
        trainer.train()


def test_reading_every_step_keeps_no_restore_point(small_data):
    """The CPU's default: each loss is read before its own update, so a NaN never reaches the weights
    and nothing is copied (the per-step path stays as it was)."""
    trainer = Trainer(tiny_config(), small_data)
    assert trainer.read_every == 1 and trainer._restore_point is None
    forward_with_nan_loss_at(trainer, 5)
    with pytest.raises(TrainingError, match="step 5"):
        trainer.train()
    assert trainer.step == 4 and "went back" not in trainer.error
    stopped_there = Trainer(tiny_config(), small_data)
    stopped_there.train(n_steps=4)
    for name, tensor in training_tensors(trainer).items():  # the NaN step's update never ran
        assert torch.equal(tensor, training_tensors(stopped_there)[name]), name


def test_defaults_read_every_step_on_the_cpu_and_in_batches_on_a_gpu():
    config = tiny_config()
    assert steps_between_loss_reads(config, torch.device("cpu")) == 1
    assert steps_between_loss_reads(config, torch.device("cuda")) == 32
    assert steps_between_loss_reads(replace(config, loss_read_every=5), torch.device("cuda")) == 5


def test_autocast_is_never_used_on_the_cpu(small_data):
    for mode in ("auto", "bf16", "off"):
        assert autocast_dtype(mode, torch.device("cpu")) is None
    assert autocast_dtype("off", torch.device("cuda")) is None
    assert autocast_dtype("auto", torch.device("cuda"), graphed=False) is None  # eager GPU steps: float32
    plain = Trainer(tiny_config(max_steps=6), small_data)
    asked = Trainer(tiny_config(max_steps=6, autocast="bf16"), small_data)
    assert asked.autocast_dtype is None
    plain.train()
    asked.train()
    assert asked.history["train_loss"] == plain.history["train_loss"]


def test_no_cuda_graph_on_the_cpu(small_data):
    trainer = Trainer(tiny_config(cuda_graph=True, max_steps=8), small_data)
    assert trainer.cuda is None and trainer.autocast_dtype is None  # no CUDA code runs on the CPU
    trainer.train()
    assert trainer.step == 8


def test_a_step_that_cannot_be_recorded_trains_on_eagerly(small_data, monkeypatch):
    """CudaSteps driven on the CPU, where recording a CUDA graph fails: after the warm-up the run gives
    the graph up, says why, and trains on with eager steps exactly like a run that never had one."""
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)  # no GPU to wait for

    def graph_that_fails(*args, **kwargs):  # on a CUDA machine recording CPU tensors would not fail
        raise RuntimeError("CUDAGraph: this step cannot be recorded")

    monkeypatch.setattr(torch.cuda, "graph", graph_that_fails)
    plain = Trainer(tiny_config(max_steps=12), small_data)
    failing = Trainer(tiny_config(max_steps=12), small_data)
    failing.cuda = gpu.CudaSteps(failing.config, failing.model, failing.optimizer, failing._dropout_generator,
                                 packed=True)
    assert failing.cuda.use_graph
    plain.train()
    failing.train()
    assert not failing.cuda.use_graph and failing.cuda.graph is None
    assert "CUDAGraph" in failing.cuda.graph_error  # failed while recording, after the lr became a tensor
    assert all(isinstance(group["lr"], float) for group in failing.optimizer.param_groups)
    assert failing.history["train_loss"] == plain.history["train_loss"]


def test_packed_rows_build_the_causal_mask_once_and_count_tokens_on_the_cpu(small_data):
    packed = PackedRows(small_data.train_x, small_data.train_y, 32, torch.Generator().manual_seed(0))
    causal = packed.causal
    assert torch.equal(causal, torch.ones(32, 32, dtype=torch.bool).tril())
    for _ in range(3):
        inputs, targets, positions, attn_mask, n_tokens = packed.sample_counted(20)
        assert n_tokens == int((targets != IGNORE_INDEX).sum())
        assert attn_mask.shape == (20, 1, 32, 32)
        # a position sees only itself and earlier positions of its own window
        assert not (attn_mask.squeeze(1) & ~causal).any()
    assert packed.causal is causal and packed.masks is None  # the CPU builds each batch's mask
    assert int(packed.row_tokens.sum()) == int((small_data.train_y != IGNORE_INDEX).sum())


def test_gpu_presets_and_preset_config():
    assert preset_config("best", "cpu") == best_config()
    assert preset_config("gpu", "cpu") == PRESETS["gpu"]()
    with pytest.raises(ValueError, match="unknown preset"):
        preset_config("fastest", "cpu")
    gpu = PRESETS["gpu"]()
    assert gpu.device == "cuda" and gpu.pack_length is not None
    # within the Train page's limits, so the page can show it
    assert gpu.batch_size <= 1024 and gpu.model.d_embed <= 512 and gpu.model.n_layer <= 8


def test_saved_optimizer_state_has_plain_float_learning_rates(small_data):
    trainer = Trainer(tiny_config(max_steps=4), small_data)
    trainer.train()
    for group in trainer.optimizer.param_groups:  # as a CUDA graph leaves them
        group["lr"] = torch.tensor(float(group["lr"]))
    state = trainer.state_dict()
    assert all(isinstance(g["lr"], float) and not g["capturable"] for g in state["optimizer"]["param_groups"])


# ---------------------------------------------------------------------------------------------
# On a CUDA GPU
# ---------------------------------------------------------------------------------------------


def cuda_config(**changes) -> TrainConfig:
    values = dict(model=TINY, batch_size=24, max_steps=60, val_interval=20, seed=7, device="cuda", pack_length=32)
    values.update(changes)
    return TrainConfig(**values)


@needs_cuda
def test_cuda_eager_run_matches_the_cpu(small_data):
    cpu = Trainer(replace(cuda_config(max_steps=20), device="cpu"), small_data)
    gpu = Trainer(cuda_config(max_steps=20, cuda_graph=False), small_data)
    cpu.train()
    gpu.train()
    assert gpu.history["tokens"] == cpu.history["tokens"]
    torch.testing.assert_close(
        torch.tensor(gpu.history["train_loss"]), torch.tensor(cpu.history["train_loss"]), rtol=1e-3, atol=1e-3
    )


@needs_cuda
@pytest.mark.parametrize("dropout", [0.0, 0.1])
def test_cuda_graph_replay_trains_like_eager_steps(small_data, dropout):
    model = replace(TINY, dropout=dropout)
    eager = Trainer(cuda_config(model=model, cuda_graph=False), small_data)
    graphed = Trainer(cuda_config(model=model, autocast="off"), small_data)  # float32 both, to compare
    eager.train()
    graphed.train()
    assert graphed.cuda.use_graph and graphed.cuda.graph is not None, graphed.cuda.graph_error
    assert graphed.history["steps"] == list(range(1, 61))
    torch.testing.assert_close(
        torch.tensor(graphed.history["train_loss"]), torch.tensor(eager.history["train_loss"]), rtol=1e-4, atol=1e-4
    )
    assert graphed.history["val_loss"] == pytest.approx(eager.history["val_loss"], abs=1e-4)


@needs_cuda
def test_cuda_graph_run_resumes_from_its_state_dict(small_data):
    trainer = Trainer(cuda_config(), small_data)
    assert trainer.autocast_dtype == (torch.bfloat16 if torch.cuda.is_bf16_supported() else None)
    trainer.train(n_steps=25)
    resumed = Trainer.from_state_dict(trainer.state_dict(), small_data)
    trainer.train(n_steps=20)
    resumed.train(n_steps=20)
    assert resumed.cuda.graph is not None
    torch.testing.assert_close(
        torch.tensor(resumed.history["train_loss"]), torch.tensor(trainer.history["train_loss"]), rtol=1e-4, atol=1e-4
    )


@needs_cuda
def test_cuda_packed_rows_precompute_the_same_masks(small_data):
    on_cpu = PackedRows(small_data.train_x, small_data.train_y, 32, torch.Generator().manual_seed(3))
    on_gpu = PackedRows(small_data.train_x, small_data.train_y, 32, torch.Generator().manual_seed(3), "cuda")
    for _ in range(3):
        cpu_batch = on_cpu.sample_counted(50)
        gpu_batch = on_gpu.sample_counted(50)
        assert on_gpu.masks is not None and on_gpu.masks.is_cuda
        assert cpu_batch[4] == gpu_batch[4]
        for a, b in zip(cpu_batch[:4], gpu_batch[:4]):
            assert torch.equal(a, b.cpu())


@needs_cuda
def test_bf16_autocast_runs_on_a_gpu_that_supports_it(small_data):
    if not torch.cuda.is_bf16_supported():
        pytest.skip("this GPU has no bfloat16")
    trainer = Trainer(cuda_config(autocast="bf16", max_steps=30), small_data)
    assert trainer.autocast_dtype == torch.bfloat16
    trainer.train()
    assert all(math.isfinite(v) for v in trainer.history["train_loss"])
    assert trainer.history["train_loss"][-1] < trainer.history["train_loss"][0]


@needs_cuda
@pytest.mark.parametrize("dropout", [0.0, 0.1])  # 0.1: the dropout generator is registered with the graph
def test_a_nan_stops_a_graphed_run(small_data, dropout):
    """Replayed steps update before their loss is read: after a NaN the run goes back to its last good
    read, with the very weights and optimizer state it had (copied back in place, so the graph's
    addresses stay valid), and trains on with a smaller learning rate (the graph recorded again)."""
    trainer = Trainer(cuda_config(model=replace(TINY, dropout=dropout), max_steps=200, val_interval=1000,
                                  loss_read_every=8), small_data)
    trainer.train(n_steps=10)  # the slice ends with a read: step 10 is the restore point
    assert trainer.cuda.graph is not None
    with torch.no_grad():  # copies without autograd history: one would keep the weights' gradient nodes
        kept = {name: t.clone() for name, t in training_tensors(trainer).items()}  # alive and spoil the next recording
        trainer.model.lm_head.weight.fill_(float("nan"))  # in place: the graph reads the same memory
    with pytest.raises(TrainingError, match="went back to step 10 .*smaller learning rate"):
        trainer.train()
    assert trainer.step == 10 and trainer.done and trainer.history["steps"] == list(range(1, 11))
    for name, tensor in training_tensors(trainer).items():
        assert torch.equal(tensor, kept[name]), name
    trainer.clear_error()
    trainer.set_lr(trainer.config.lr / 2)
    trainer.train(n_steps=40)
    assert trainer.step == 50 and trainer.cuda.graph is not None, trainer.cuda.graph_error
    assert all(math.isfinite(v) for v in trainer.history["train_loss"])
    assert all(bool(torch.isfinite(t).all()) for t in training_tensors(trainer).values() if t.is_floating_point())


@needs_cuda
def test_restore_best_on_a_graphed_run_puts_the_best_weights_back_in_place_after_a_nan(small_data):
    """restore_best on the CUDA-graph path: the best point's copy survives a NaN roll-back; at max_steps
    the best weights go back into the very tensors the graph reads, so training on replays the graph."""
    from tests.core.test_training import SCRIPTED_VAL, scripted_validation  # lowest at step 30

    config = cuda_config(max_steps=60, val_interval=10, loss_read_every=5, restore_best=True, autocast="off")
    trainer = scripted_validation(Trainer(config, small_data))
    trainer.train(n_steps=30)  # validations at 10, 20, 30: step 30 is the best point and the restore point
    assert trainer.cuda.graph is not None, trainer.cuda.graph_error
    at_best = {name: t.clone() for name, t in trainer.model.state_dict().items()}
    addresses = [p.data_ptr() for p in trainer.model.parameters()]
    trainer.train(n_steps=3)
    with torch.no_grad():
        trainer.model.lm_head.weight.fill_(float("nan"))
    with pytest.raises(TrainingError, match="went back to step 33 "):
        trainer.train()
    trainer.clear_error()
    trainer.set_lr(config.lr / 2)
    trainer.train()  # to step 60: validations 2.2, 2.4, 2.6, so the weights of step 30 come back
    assert trainer.step == 60 and trainer.done and trainer.cuda.graph is not None
    assert (trainer.best_step, trainer.weights_step, trainer.weights_val_loss) == (30, 30, SCRIPTED_VAL[30])
    for name, tensor in trainer.model.state_dict().items():
        assert torch.equal(tensor, at_best[name]), name
    assert [p.data_ptr() for p in trainer.model.parameters()] == addresses  # copied in place

    scripted_validation(trainer, {**SCRIPTED_VAL, 70: 1.5})
    trainer.set_max_steps(70)
    trainer.train()
    assert trainer.cuda.graph is not None and trainer.history["steps"][-1] == 70
    assert (trainer.best_step, trainer.weights_step) == (70, None)  # the best is the last point: nothing to restore
    assert all(math.isfinite(v) for v in trainer.history["train_loss"])


# ema_decay on a GPU: the average's update is recorded in the CUDA graph with the step (core/training/average.py)


def hand_average_check(decay: float):
    """A checker fed the trained weights after each step, in order: it computes the bias-corrected EMA by its
    definition in float64 (m_t = decay * m_(t-1) + (1 - decay) * w_t from 0, divided by 1 - decay ** t)
    and returns it for comparison."""
    moments: list[torch.Tensor] = []

    def after_step(t: int, trained: list[torch.Tensor]) -> list[torch.Tensor]:
        weights = [w.detach().double() for w in trained]
        if not moments:
            moments.extend(torch.zeros_like(w) for w in weights)
        for m, w in zip(moments, weights):
            m.mul_(decay).add_((1 - decay) * w)
        return [m / (1 - decay ** t) for m in moments]

    return after_step


@needs_cuda
@pytest.mark.parametrize("cuda_graph, autocast, dropout",
                         [(True, "auto", 0.1), (True, "off", 0.0), (False, "auto", 0.1)])
def test_every_step_updates_the_weights_average_on_a_gpu(small_data, cuda_graph, autocast, dropout):
    """After every step (graph replays included) the average the model shows equals the EMA of the trained
    weights recorded after each step: a replay that skipped or repeated the update, or read a stale
    coefficient, fails. The trained weights are what they are (bfloat16 forward or not): the average of
    them is exact up to float32 rounding."""
    decay = 0.9
    trainer = Trainer(cuda_config(model=replace(TINY, dropout=dropout), ema_decay=decay, autocast=autocast,
                                  cuda_graph=cuda_graph, max_steps=40, val_interval=15), small_data)
    check = hand_average_check(decay)
    for t in range(1, 41):
        trainer.train(n_steps=1)  # each slice ends with a read and shows the average
        assert trainer._average.shown and trainer.step == t
        expected = check(t, trainer._average.trained)
        for name, p, e in zip(trainer._average.names, trainer.model.parameters(), expected):
            torch.testing.assert_close(p.detach().double(), e, rtol=0, atol=2e-5, msg=f"step {t}: {name}")
    distance = max(float((p.detach() - w).abs().max()) for p, w in zip(trainer.model.parameters(),
                                                                         trainer._average.trained))
    assert distance > 1e-3  # the average is not the last weights: the comparison above can fail
    if cuda_graph:  # steps 4-40 were replays of the recorded graph, none eager
        assert trainer.cuda.graph is not None, trainer.cuda.graph_error
        assert trainer.cuda.eager_steps == gpu.GRAPH_WARMUP_STEPS
        assert trainer.autocast_dtype == (torch.bfloat16 if autocast == "auto" and torch.cuda.is_bf16_supported()
                                          else None)
    assert trainer.history["val_steps"] == [15, 30, 40]


@needs_cuda
def test_a_graphed_run_averages_like_eager_steps(small_data):
    eager = Trainer(cuda_config(cuda_graph=False, ema_decay=0.95), small_data)
    graphed = Trainer(cuda_config(autocast="off", ema_decay=0.95), small_data)  # float32 both, to compare
    eager.train()
    graphed.train()
    assert graphed.cuda.graph is not None, graphed.cuda.graph_error
    for a, b in zip(graphed._average.average, eager._average.average):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)
    assert graphed.history["val_loss"] == pytest.approx(eager.history["val_loss"], abs=1e-4)


@needs_cuda
def test_a_nan_on_a_graphed_run_with_an_average_goes_back_to_its_average(small_data):
    """The restore point holds the average: after a NaN the run shows the very average of its restore
    point (the graph's updates after it undone), trains on with the graph recorded again, and stays finite."""
    trainer = Trainer(cuda_config(model=replace(TINY, dropout=0.1), max_steps=200, val_interval=1000,
                                  loss_read_every=8, ema_decay=0.95), small_data)
    trainer.train(n_steps=10)  # the slice ends with a read: step 10 is the restore point
    assert trainer.cuda.graph is not None, trainer.cuda.graph_error
    with torch.no_grad():
        kept = {name: t.clone() for name, t in training_tensors(trainer).items()}
        kept_average = [t.clone() for t in trainer._average.average]
        kept_trained = [t.clone() for t in trainer._average.trained]
        # the model shows the average; the next step puts the trained weights back: poison those, in place
        head = next(i for i, p in enumerate(trainer._average.params) if p is trainer.model.lm_head.weight)
        trainer._average.trained[head].fill_(float("nan"))
    with pytest.raises(TrainingError, match="went back to step 10 .*smaller learning rate"):
        trainer.train()
    assert trainer.step == 10 and trainer._average.shown
    for name, tensor in training_tensors(trainer).items():
        assert torch.equal(tensor, kept[name]), name
    assert all(torch.equal(a, b) for a, b in zip(trainer._average.average, kept_average))
    assert all(torch.equal(a, b) for a, b in zip(trainer._average.trained, kept_trained))
    trainer.clear_error()
    trainer.set_lr(trainer.config.lr / 2)
    trainer.train(n_steps=40)
    assert trainer.step == 50 and trainer.cuda.graph is not None, trainer.cuda.graph_error
    assert all(math.isfinite(v) for v in trainer.history["train_loss"])
    assert all(bool(torch.isfinite(t).all()) for t in trainer._average.average + trainer._average.trained)


@needs_cuda
def test_a_graphed_run_with_an_average_resumes_from_its_state_dict(small_data):
    trainer = Trainer(cuda_config(ema_decay=0.95, restore_best=True), small_data)
    trainer.train(n_steps=25)
    resumed = Trainer.from_state_dict(trainer.state_dict(), small_data)
    trainer.train(n_steps=20)
    resumed.train(n_steps=20)
    assert resumed.cuda.graph is not None, resumed.cuda.graph_error
    torch.testing.assert_close(
        torch.tensor(resumed.history["train_loss"]), torch.tensor(trainer.history["train_loss"]), rtol=1e-4, atol=1e-4
    )
    for a, b in zip(resumed._average.average, trainer._average.average):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)
