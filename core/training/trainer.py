"""The one training loop of the names GPT: a resumable `Trainer` that trains in slices.

The app trains in short slices: a Streamlit fragment calls `trainer.train(time_budget_s=0.5)` on every
tick and redraws the loss curve from `trainer.history`. So a `Trainer` keeps everything a run needs
(model, optimizer, step counter, its own random generators, history) and can stop and resume at any
step with identical results.

Reproducibility without the global RNG (several sessions train in one process, in threads):
* the model's initial weights come from a generator seeded with `seed` (see core.models);
* batches are drawn with the trainer's own CPU `torch.Generator`;
* dropout masks come from another generator owned by the trainer and handed to the model.
Same config, data and device -> identical losses, whatever else runs in the process.

Compute is not spent on padding: a batch of windows is cut after its longest name (the loss is exactly
the same), and with `pack_length` whole names are packed into rows (core/training/packing.py).

On the CPU each step is a plain float32 eager step whose loss is read before its update. On a GPU the
losses are read back every GPU_LOSS_READ_EVERY steps instead (each read waits for the GPU), and on a
CUDA GPU `self.cuda` (core/training/gpu.py) replays packed steps from a CUDA graph with bfloat16
autocast; on any other device it is None.

A NaN found at a delayed read has already reached the weights (the updates ran ahead of the check). So with
reads every N > 1 steps the trainer keeps a restore point (`StateSnapshot`: device-side copies of the
weights and optimizer state, plus where the batches stood) at each read that found only finite losses, and
goes back to it when a read finds a NaN: step, weights, optimizer state, schedule, history and batch order
are then exactly those of a run stopped at that step. With `restore_best` another snapshot keeps the weights
of the lowest validation loss, and the model gets them back at max_steps (`weights_step` says from where).

With `ema_decay` the trainer keeps a running average of the weights (`WeightAverage`, core/training/
average.py), updated after every step (inside the CUDA graph on that path). The model shows the average
whenever it is not taking training steps: validation measures it, restore_best copies it, and between
slices and at the end sampling, checkpoints and `state_dict()["model"]` get it; the first training step
of a slice puts the trained weights back. The restore point holds the average too, so going back after a
NaN restores it, and a saved run keeps the average and the trained weights (`state_dict()["ema"]`).

Losses are mean cross-entropy per non-padding target character, in nats (ln 27 = 3.30 is a uniform guess).
"""

from __future__ import annotations

import bisect
import contextlib
import math
import time
from dataclasses import dataclass, replace
from typing import ContextManager

import torch
import torch.nn.functional as F

from core.data import IGNORE_INDEX, NamesData, name_windows
from core.device import resolve_device
from core.models import GPT
from core.settings import check_value
from core.training import gpu
from core.training.average import WeightAverage
from core.training.config import TrainConfig, check_setting, learning_rate
from core.training.muon import MuonAdamW, hidden_matrices
from core.training.packing import PackedRows
from core.training.snapshot import StateSnapshot, optimizer_snapshot

GPU_LOSS_READ_EVERY = 32  # steps between loss reads on a GPU, unless the config says: one host sync per read


class TrainingError(ValueError):
    """Training cannot go on (e.g. the loss became NaN); the message is fit to show a student."""


@dataclass
class SliceResult:
    """What one call of `Trainer.train` did."""

    steps: int  # optimisation steps done in this slice
    train_losses: list[float]  # training loss of each of those steps
    val_points: list[tuple[int, float]]  # (step, validation loss) measured during the slice
    steps_per_s: float  # steps per second of training time (validation passes excluded)
    tokens_per_s: float  # non-padding target tokens per second of training time
    elapsed_s: float = 0.0  # wall-clock seconds of the slice, validation included
    ran: bool = True  # False when the slot was not granted: nothing was done, try again later


def _new_history() -> dict[str, list]:
    return {
        "steps": [],  # step number after each optimisation step (1, 2, ...)
        "train_loss": [],  # training loss of that step's batch
        "val_steps": [],  # steps at which the validation loss was measured
        "val_loss": [],  # validation loss at those steps
        "elapsed": [],  # cumulative training seconds after each step (validation excluded)
        "tokens": [],  # cumulative non-padding target tokens seen after each step
        "lr": [],  # learning rate used at each step
    }


def _history_until(history: dict[str, list], step: int) -> dict[str, list]:
    """A copy of `history` without anything recorded after `step`."""
    n_steps = bisect.bisect_right(history["steps"], step)
    n_vals = bisect.bisect_right(history["val_steps"], step)
    return {key: list(values[: n_vals if key.startswith("val_") else n_steps]) for key, values in history.items()}


def _make_generator(device: torch.device, seed: int) -> torch.Generator:
    """A generator on `device` if torch supports one there, else on the CPU (masks then get copied)."""
    try:
        return torch.Generator(device=device).manual_seed(seed)
    except (RuntimeError, TypeError):
        return torch.Generator().manual_seed(seed)


def make_optimizer(model: torch.nn.Module, config: TrainConfig) -> torch.optim.Optimizer:
    """AdamW, SGD, or Muon + AdamW (core.training.muon); weight decay on matrices and embeddings only
    (not on biases or LayerNorm gains)."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [
        {"params": decay, "weight_decay": config.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    if config.optimizer == "sgd":
        return torch.optim.SGD(groups, lr=config.lr)
    device = next(model.parameters()).device
    # The fused kernel updates all tensors in one pass (fewer small ops); same maths as the default.
    fused = device.type in ("cpu", "cuda")
    if config.optimizer == "muon":  # the blocks' matrices with Muon, the rest as below with AdamW
        matrices = hidden_matrices(model)
        taken = {id(p) for p in matrices}
        groups = [{**g, "params": [p for p in g["params"] if id(p) not in taken]} for g in groups]
        return MuonAdamW(matrices, groups, lr=config.lr, weight_decay=config.weight_decay, fused=fused)
    return torch.optim.AdamW(groups, lr=config.lr, betas=(0.9, 0.99), fused=fused)


def steps_between_loss_reads(config: TrainConfig, device: torch.device) -> int:
    """Steps between two reads of the training losses: the config's value, else 1 on the CPU (a read
    costs nothing there) and GPU_LOSS_READ_EVERY on a GPU (each read waits for the GPU to catch up)."""
    if config.loss_read_every is not None:
        return config.loss_read_every
    return 1 if device.type == "cpu" else GPU_LOSS_READ_EVERY


class Trainer:
    """Trains a GPT on the names in resumable slices; see the module docstring."""

    def __init__(self, config: TrainConfig, data: NamesData):
        config.validate()
        model_config = config.model
        if model_config.vocab_size != data.tokenizer.vocab_size:
            model_config = replace(model_config, vocab_size=data.tokenizer.vocab_size)
        # A private copy: the caller's config object may be edited by the UI while we train.
        self.config = replace(config, model=replace(model_config))
        self.data = data
        self.tokenizer = data.tokenizer
        self.device, self.device_message = resolve_device(config.device)

        # Windows matching the model's context (rebuilt when the data was made for another size).
        context_size = model_config.context_size
        if data.context_size == context_size:
            train_x, train_y, val_x, val_y = data.train_x, data.train_y, data.val_x, data.val_y
        else:
            train_x, train_y = name_windows(data.train_names, data.tokenizer, context_size)
            val_x, val_y = name_windows(data.val_names, data.tokenizer, context_size)
        if len(train_x) == 0 or len(val_x) == 0:
            raise ValueError("the training and validation splits both need at least one name")
        self._splits = {
            "train": (train_x.to(self.device), train_y.to(self.device)),
            "val": (val_x.to(self.device), val_y.to(self.device)),
        }
        self._sorted_splits: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
        self._packed: PackedRows | None = None  # created below once the batch generator exists
        self._released_packing: dict | None = None  # where a finished run's freed epoch stood (release_batches)

        # real targets per training window, kept on the CPU: batches are counted and trimmed without a sync
        self._train_lengths = (train_y != IGNORE_INDEX).sum(dim=1).cpu()  # (N,)
        self._eval_cache: dict[str, list[tuple[torch.Tensor, torch.Tensor, int]]] = {}

        self.model = GPT(self.config.model, seed=config.seed).to(self.device)
        self._batch_generator = torch.Generator().manual_seed(config.seed)  # CPU: batch row indices
        if self.config.pack_length is not None:
            self._packed = PackedRows(train_x, train_y, self.config.pack_length, self._batch_generator, self.device)
        self._dropout_generator = _make_generator(self.device, config.seed + 1)
        self.model.set_dropout_generator(self._dropout_generator)
        self.optimizer = make_optimizer(self.model, self.config)
        # ema_decay: the running average of the weights that validation and sampling use (average.py)
        self._average = None if self.config.ema_decay is None else WeightAverage(self.model, self.config.ema_decay)
        self.read_every = steps_between_loss_reads(self.config, self.device)  # steps between host syncs
        # CUDA only: graph replay of packed steps and bfloat16 autocast (core/training/gpu.py)
        self.cuda = gpu.CudaSteps(self.config, self.model, self.optimizer, self._dropout_generator,
                                  packed=self._packed is not None,
                                  average=self._average) if self.device.type == "cuda" else None

        self.step = 0  # optimisation steps done so far
        self.history = _new_history()
        self.error: str | None = None  # set when training had to stop (e.g. NaN loss)
        self._elapsed = 0.0  # cumulative training seconds
        self._tokens = 0  # cumulative non-padding target tokens
        # steps whose loss is still on the device: [step, loss (0-d tensor), target tokens, lr]
        self._pending: list[tuple[int, torch.Tensor, int, float]] = []
        self._chunk_start = 0.0  # perf_counter() when the first pending step began

        # Losses read back every few steps: updates run ahead of the check, so a NaN found at a read has
        # already reached the weights. The restore point (weights, optimizer state, batch order) is taken
        # at each read that found only finite losses, and put back when a read finds a NaN. Not needed
        # when every loss is read before its own update (the CPU's default). With ema_decay it also holds
        # the average; it is always taken while the model holds the trained weights.
        averaged = [] if self._average is None else self._average.average
        self._restore_point = StateSnapshot(self.model, self.optimizer, averaged) if self.read_every > 1 else None
        self._restore_step = 0  # the step the restore point holds
        self._restore_host: dict = {}  # where the batches and dropout masks stood at that step
        if self._restore_point is not None:
            self._save_restore_point(0, self._host_state())

        # restore_best: the weights of the lowest validation loss so far, put back at max_steps
        self._best = StateSnapshot(self.model) if self.config.restore_best else None
        self.best_step: int | None = None  # step of the lowest validation loss (with restore_best)
        self.best_val_loss: float | None = None  # that loss
        self.weights_step: int | None = None  # the step the weights come from, when not `step` (restore_best)

    # -- state -------------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        """True once max_steps are done (or training stopped on an error)."""
        return self.step >= self.config.max_steps or self.error is not None

    @property
    def autocast_dtype(self) -> torch.dtype | None:
        """The dtype of the training forward pass under autocast (bfloat16), or None for float32."""
        return None if self.cuda is None else self.cuda.autocast_dtype

    @property
    def last_val_loss(self) -> float | None:
        return self.history["val_loss"][-1] if self.history["val_loss"] else None

    @property
    def weights_val_loss(self) -> float | None:
        """The validation loss of the weights the model holds: the last one measured, or with weights
        put back by restore_best, the one measured at their step."""
        if self.weights_step is not None and self.weights_step in self.history["val_steps"]:
            return self.history["val_loss"][self.history["val_steps"].index(self.weights_step)]
        return self.last_val_loss

    def set_max_steps(self, max_steps: int) -> None:
        """Lengthen or shorten the run (not below the steps already done); the schedule follows."""
        check_setting("max_steps", max_steps)
        check_value("max_steps", max_steps, int, {"min": self.step})
        self.config = replace(self.config, max_steps=max_steps)

    def set_lr(self, lr: float) -> None:
        """Train on with another peak learning rate (e.g. smaller after the loss diverged); the
        schedule goes on from the current step."""
        check_setting("lr", lr)
        self.config = replace(self.config, lr=float(lr))

    def clear_error(self) -> None:
        """Let a run that stopped on a non-finite loss train on. Its state is consistent: the NaN step's
        update never ran (a loss read before its update) or the run went back to its restore point."""
        self.error = None

    # -- training ----------------------------------------------------------------------------

    def _train_step(self) -> None:
        """One optimisation step. On a GPU its work is only queued: the loss is read back (one host sync)
        every `read_every` steps, before that step's update, so a NaN stops training before it
        reaches the weights of the step where it is seen (at once on the CPU, where the interval is 1)."""
        if not self._pending:
            self._chunk_start = time.perf_counter()
        if self.cuda is not None and self.cuda.graph_ready():
            self._graph_step()
            return
        lr = learning_rate(self.config, self.step)  # the schedule: warm-up, then constant or cosine
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        # this step ends with a read: where the batches stand now is the restore point's, if the read is good
        reads = self._restore_point is not None and len(self._pending) + 1 >= self.read_every
        host = self._host_state() if reads else None
        # 1. forward: the model's loss on a random batch of windows (mean cross-entropy per target)
        with self._autocast():
            if self._packed is not None:
                inputs, targets, positions, attn_mask, n_tokens = self._packed.sample_counted(
                    self.config.batch_size, self.device
                )  # (B, P) each, attn_mask (B, 1, P, P)
                _, loss = self.model(inputs, targets, positions=positions, attn_mask=attn_mask)
            else:
                inputs, targets, n_tokens = self._padded_batch()  # (B, T') with T' <= T
                _, loss = self.model(inputs, targets)
        self.step += 1
        self._pending.append((self.step, loss.detach(), n_tokens, lr))
        read_now = len(self._pending) >= self.read_every
        values = self._read_losses() if read_now else None  # may raise TrainingError
        if host is not None:  # every loss so far is finite, and this step's update has not run yet
            self._save_restore_point(self.step - 1, host)
        self.optimizer.zero_grad(set_to_none=True)  # 2. backward: forget the last step's gradients,
        loss.backward()  # then d loss / d weight for every weight
        if self.config.grad_clip is not None:  # one unlucky batch cannot push the weights too far
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.grad_clip)
        self.optimizer.step()  # 3. update: every weight moves against its gradient (AdamW or Muon)
        if self._average is not None:
            self._average.update(self.step)
        if self.cuda is not None:
            self.cuda.count_eager_step()
        if values is not None:
            self._record(values)

    def _graph_step(self) -> None:
        """A training step replayed from the CUDA graph. Its loss is read back with the others, after the
        update: a NaN then stops training one update later than in an eager step."""
        lr = learning_rate(self.config, self.step)
        inputs, targets, positions, attn_mask, n_tokens = self._packed.sample_counted(self.config.batch_size, self.device)
        loss = self.cuda.replay(inputs, targets, positions, attn_mask, lr, self.step + 1)  # ()
        self.step += 1
        self._pending.append((self.step, loss, n_tokens, lr))
        if len(self._pending) >= self.read_every:
            self._record_and_keep(self._read_losses())

    def _autocast(self) -> ContextManager:
        """bfloat16 autocast of the forward pass on a CUDA run that uses it, else nothing."""
        return contextlib.nullcontext() if self.cuda is None else self.cuda.autocast()

    def _padded_batch(self) -> tuple[torch.Tensor, torch.Tensor, int]:
        """`batch_size` random windows (drawn as `random_batch` draws them) and their number of real
        targets, counted on the CPU (no sync).

        The columns after the longest name are cut off: padding sits at the right end of each window
        and a causal model's earlier positions never see later ones, so the loss and gradients are
        exactly those of the full windows, for less compute. Without the causal mask real positions
        do see the padding, so nothing is cut then."""
        train_x, train_y = self._splits["train"]
        rows = torch.randint(len(train_x), (self.config.batch_size,), generator=self._batch_generator)  # (B,)
        lengths = self._train_lengths[rows]  # (B,)
        n_cols = max(1, int(lengths.max())) if self.config.model.causal else train_x.size(1)
        rows = rows.to(self.device)
        return train_x[rows, :n_cols], train_y[rows, :n_cols], int(lengths.sum())  # (B, n_cols) each

    def _read_losses(self) -> list[float]:
        """The pending steps' losses as floats (one host sync); a non-finite one stops training.

        On a non-finite loss the steps before it are recorded, the step counter goes back to the last
        good step, and TrainingError is raised with a message for the student.
        """
        losses = [loss for _, loss, _, _ in self._pending]
        values = [losses[0].item()] if len(losses) == 1 else torch.stack(losses).tolist()
        bad = next((i for i, value in enumerate(values) if not math.isfinite(value)), None)
        if bad is not None:
            step = self._pending[bad][0]
            if self._restore_point is None:  # one loss per read, read before its update: nothing to undo
                self._pending = self._pending[:bad]
                self._record(values[:bad])
                self.step = step - 1
                went_back = ""
            else:  # updates after the NaN have run: go back to the last state read as good
                self._pending = []
                went_back = self._go_back()
            self.error = (
                f"training stopped at step {step}: the loss became {values[bad]} "
                f"(diverged). {went_back}Try a smaller learning rate (now {self.config.lr:g})."
            )
            raise TrainingError(self.error)
        return values

    def _record(self, values: list[float]) -> None:
        """Append the pending steps to the history, sharing the time since the chunk began among them."""
        if self.cuda is not None:
            self.cuda.synchronize()  # the chunk's last update has really run
        if self._pending:
            per_step = (time.perf_counter() - self._chunk_start) / len(self._pending)
        for (step, _, n_tokens, lr), value in zip(self._pending, values):
            self._elapsed += per_step
            self._tokens += n_tokens
            self.history["steps"].append(step)
            self.history["train_loss"].append(value)
            self.history["elapsed"].append(self._elapsed)
            self.history["tokens"].append(self._tokens)
            self.history["lr"].append(lr)
        self._pending = []

    def _flush(self) -> None:
        """Read back and record every pending step (before a validation and at the end of a slice)."""
        if self._pending:
            self._record_and_keep(self._read_losses())

    def _record_and_keep(self, values: list[float]) -> None:
        """Record a read whose updates have all run; its state becomes the restore point."""
        self._record(values)
        if self._restore_point is not None:
            self._save_restore_point(self.step, self._host_state())

    # -- going back after a non-finite loss ----------------------------------------------------

    def _save_restore_point(self, step: int, host: dict) -> None:
        self._restore_point.take()  # device-side copies, queued: no host sync
        self._restore_step, self._restore_host = step, host

    def _go_back(self) -> str:
        """Put the restore point back: weights, optimizer state, step (so the learning-rate schedule),
        history, token count and batch order are again those of that step. Returns a sentence for the
        error message."""
        self._restore_point.restore()
        self.step = self._restore_step
        self.history = _history_until(self.history, self.step)
        self._elapsed = self.history["elapsed"][-1] if self.history["elapsed"] else 0.0
        self._tokens = self.history["tokens"][-1] if self.history["tokens"] else 0
        if self.cuda is not None:
            self.cuda.forget_graph()  # recorded again from the restored state, as after a load
        self._set_host_state(self._restore_host)
        if self.best_step is not None and self.best_step > self.step:  # a best point the history no longer shows
            self.best_step = self.best_val_loss = None
        if not self._restore_point.is_finite():  # an update with a finite loss broke the weights
            return (f"The run went back to step {self.step:,}, its last read of finite losses, but its "
                    "weights were already not finite: start a new run. ")
        return (f"The run went back to step {self.step:,} (its last read of finite losses), with the "
                "weights and optimizer state it had then. ")

    def train(
        self,
        n_steps: int | None = None,
        time_budget_s: float | None = None,
        slot: ContextManager | None = None,
    ) -> SliceResult:
        """Train until `n_steps` more steps, `time_budget_s` seconds, or max_steps, whichever comes first.

        Both limits None: run to max_steps. The validation loss is measured every `val_interval` steps
        and after the last step. `slot` is an optional context manager held during the slice (the app's
        limit on concurrent training); if it yields False the slot was not granted and nothing is done.
        """
        if n_steps is not None:
            check_value("n_steps", n_steps, int, {"min": 0})
        if time_budget_s is not None:
            check_value("time_budget_s", time_budget_s, float, {"min": 0})
        slot = contextlib.nullcontext() if slot is None else slot

        val_points: list[tuple[int, float]] = []
        with slot as granted:
            if granted is False:
                return SliceResult(0, [], [], 0.0, 0.0, 0.0, ran=False)
            start = time.perf_counter()
            self._repack_released()
            n_before, elapsed_before, tokens_before = len(self.history["steps"]), self._elapsed, self._tokens
            first_step = self.step
            self.model.train()
            try:
                while not self.done:
                    if n_steps is not None and self.step - first_step >= n_steps:
                        break
                    if time_budget_s is not None and time.perf_counter() - start >= time_budget_s:
                        break
                    self.weights_step = None  # training again: the weights are those of the current step
                    self._trained_weights_in()
                    self._train_step()
                    if self.step % self.config.val_interval == 0 or self.step == self.config.max_steps:
                        self._flush()
                        self._average_in()  # validation measures the average (ema_decay)
                        val_loss = self.evaluate("val", self.config.val_batches)
                        self.model.train()
                        val_points.append((self.step, val_loss))
                        self.history["val_steps"].append(self.step)
                        self.history["val_loss"].append(val_loss)
                        if self._best is not None:
                            self._keep_best(val_loss)
                self._flush()
            finally:
                self._pending = []  # after an error: nothing half-read is left for the next slice
                self._average_in()  # between slices the model shows the average (ema_decay)
                if self.done:
                    self.release_batches()
            elapsed = time.perf_counter() - start

        losses = self.history["train_loss"][n_before:]
        train_time = self._elapsed - elapsed_before
        tokens = self._tokens - tokens_before
        return SliceResult(
            steps=len(losses),
            train_losses=losses,
            val_points=val_points,
            steps_per_s=len(losses) / train_time if train_time > 0 else 0.0,
            tokens_per_s=tokens / train_time if train_time > 0 else 0.0,
            elapsed_s=elapsed,
        )

    def _average_in(self) -> None:
        """ema_decay: show the average in the model, unless it already shows it (or restore_best's copy)."""
        if self._average is not None and not self._average.shown:
            self._average.show()

    def _trained_weights_in(self) -> None:
        """ema_decay: the trained weights back in the model before a training step."""
        if self._average is not None and self._average.shown:
            self._average.hide()

    def _keep_best(self, val_loss: float) -> None:
        """restore_best: copy the weights at a new lowest validation loss; at max_steps, put the best back."""
        if self.best_val_loss is None or val_loss < self.best_val_loss:
            self._best.take()
            self.best_step, self.best_val_loss = self.step, val_loss
        if self.step >= self.config.max_steps and self.best_step != self.step:
            self._best.restore()
            self.weights_step = self.best_step

    @torch.no_grad()
    def evaluate(self, split: str = "val", max_batches: int | None = None) -> float:
        """Mean loss per non-padding target over `split` ("train" or "val"), in eval mode.

        A full pass over the split unless `max_batches` (of eval_batch_size windows) is given.
        """
        if split not in self._splits:
            raise ValueError(f"split must be 'train' or 'val', got {split!r}")
        if max_batches is not None:
            check_value("max_batches", max_batches, int, {"min": 1})
        was_training = self.model.training
        self.model.eval()
        total_loss = torch.zeros((), dtype=torch.float64, device=self.device)
        total_tokens = 0
        try:
            for index, (x, y, n_tokens) in enumerate(self._eval_batches(split)):  # (b, <=T) each
                if max_batches is not None and index >= max_batches:
                    break
                logits, _ = self.model(x)  # (b, T, V)
                loss_sum = F.cross_entropy(
                    logits.reshape(-1, logits.size(-1)), y.reshape(-1), ignore_index=IGNORE_INDEX, reduction="sum"
                )
                total_loss += loss_sum.double()
                total_tokens += n_tokens
        finally:
            self.model.train(was_training)
        return float(total_loss) / max(1, total_tokens)  # the one host sync of the pass

    def _eval_batches(self, split: str) -> list[tuple[torch.Tensor, torch.Tensor, int]]:
        """The split's windows sorted by length, cut into eval batches without their padding columns,
        each with its number of real targets (built once per split, then reused by every validation)."""
        if split not in self._eval_cache:
            inputs, targets = self._eval_order(split)
            lengths = (targets != IGNORE_INDEX).sum(dim=1).cpu()  # (N,)
            batch = self.config.eval_batch_size
            batches = []
            for start in range(0, len(inputs), batch):
                x, y = inputs[start : start + batch], targets[start : start + batch]  # (b, T)
                n_cols = max(1, int(lengths[start : start + batch].max())) if self.config.model.causal else x.size(1)
                batches.append((x[:, :n_cols], y[:, :n_cols], int(lengths[start : start + batch].sum())))
            self._eval_cache[split] = batches
        return self._eval_cache[split]

    def _eval_order(self, split: str) -> tuple[torch.Tensor, torch.Tensor]:
        """The split's windows sorted by length (cached), so evaluation batches can drop padding columns."""
        if split not in self._sorted_splits:
            inputs, targets = self._splits[split]
            order = (targets != IGNORE_INDEX).sum(dim=1).argsort(stable=True)  # (N,)
            self._sorted_splits[split] = (inputs[order], targets[order])
        return self._sorted_splits[split]

    # -- save / restore ----------------------------------------------------------------------

    def state_dict(self) -> dict:
        """Everything needed to resume this run exactly: tensors and plain values only
        (so it can go through torch.save and back with torch.load(weights_only=True))."""
        return {
            "config": self.config.to_dict(),
            "step": self.step,
            "model": {k: v.detach().cpu().clone() for k, v in self.model.state_dict().items()},
            "optimizer": optimizer_snapshot(self.optimizer),  # a snapshot, not the live tensors
            "history": {k: list(v) for k, v in self.history.items()},
            "elapsed": self._elapsed,
            "tokens": self._tokens,
            "error": self.error,
            **self._host_state(),
            # restore_best: the best validation point and its weights; the step the model's weights are from
            "best": None if self.best_step is None else {
                "step": self.best_step, "val_loss": self.best_val_loss, "weights": self._best.model_copies()},
            "weights_step": self.weights_step,
            # ema_decay: the average and the trained weights ("model" holds what the model shows). None at
            # step 0, where both are the model's weights, as for a state whose "model" was replaced by a
            # model file's weights (core.runs.run_from_checkpoint): the average then starts from those.
            "ema": None if self._average is None or self.step == 0 else self._average.state(),
        }

    def _host_state(self) -> dict:
        """Where the batches and dropout masks stand (generator states, position in the packed epoch)."""
        return {
            "batch_generator": self._batch_generator.get_state(),
            "dropout_generator": self._dropout_generator.get_state(),
            "packing": self._released_packing
            if self._packed is None or self._packed.rows is None
            else {"epoch_start_state": self._packed.epoch_start_state, "cursor": self._packed.cursor},
        }

    def release_batches(self) -> None:
        """Free the batches a CPU run keeps, the packed epoch's rows and the sorted validation
        windows (a finished run: `train` calls this when done); both are made again when needed.

        Why: the rows are ~7 MB for the names (four (R, 32) int64 tensors), and a class's server
        keeps up to six runs per student: 36 finished class-demo runs held 250 MB and took a class
        of 60 to a peak of 898 MiB (docs/HOSTING.md, 2026-11-28). Where the epoch stood is kept,
        and the next slice packs the same rows again from the same generator state, so a run
        given more steps computes exactly what it would have without the release."""
        if self.device.type != "cpu":
            return
        self._eval_cache.clear()  # the sorted validation split, 0.6 MB: sorted again at the next validation
        self._sorted_splits.clear()
        if self._packed is None or self._packed.rows is None:
            return
        self._released_packing = {"epoch_start_state": self._packed.epoch_start_state, "cursor": self._packed.cursor}
        self._packed.rows = self._packed.row_tokens = None

    def _repack_released(self) -> None:
        """The rows `release_batches` freed, packed again as they were (the batch order goes on unchanged)."""
        packing, self._released_packing = self._released_packing, None
        if packing is None or self._packed is None:
            return
        now = self._batch_generator.get_state()
        self._pack_epoch_at(packing)
        self._batch_generator.set_state(now)  # packing drew from the generator: put it back where it was

    def _pack_epoch_at(self, packing: dict) -> None:
        """Re-pack a saved epoch from the generator state it started with, then resume inside it."""
        self._batch_generator.set_state(packing["epoch_start_state"])
        self._packed.pack_epoch()
        self._packed.cursor = int(packing["cursor"])

    def _set_host_state(self, state: dict) -> None:
        """Inverse of `_host_state`."""
        self._released_packing = None
        packing = state.get("packing")
        if self._packed is not None and packing is not None:
            self._pack_epoch_at(packing)
        elif self._packed is not None:
            self._packed.rows = None  # no epoch packed yet at that point: the next batch packs one
        self._batch_generator.set_state(state["batch_generator"])
        self._dropout_generator.set_state(state["dropout_generator"])

    def load_state_dict(self, state: dict) -> None:
        """Resume from `state_dict()` output; the run's config must match this trainer's."""
        saved = TrainConfig.from_dict(state["config"])
        if replace(saved, max_steps=self.config.max_steps) != self.config:
            raise ValueError("this saved run was made with different settings; build the Trainer from its config")
        self.config = saved
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        if self.cuda is not None:
            self.cuda.forget_graph()  # the optimizer's tensors were replaced: record again later
        self.step = int(state["step"])
        self.history = {k: list(v) for k, v in state["history"].items()}
        self._elapsed = float(state["elapsed"])
        self._tokens = int(state["tokens"])
        self.error = state["error"]
        self._set_host_state(state)
        best = state.get("best")  # a saved run may lack the key: no best point then
        self.best_step = None if best is None else int(best["step"])
        self.best_val_loss = None if best is None else float(best["val_loss"])
        if best is not None and self._best is not None:
            self._best.load_model_copies(best["weights"])
        self.weights_step = state.get("weights_step")
        if self._average is not None:
            self._average.load(state.get("ema"))
        if self._restore_point is not None:
            with self._trained_weights_held():  # the restore point holds the trained weights
                self._save_restore_point(self.step, self._host_state())

    def _trained_weights_held(self) -> ContextManager:
        """The trained weights in the model for a moment, when it shows the average (ema_decay)."""
        return contextlib.nullcontext() if self._average is None else self._average.trained_weights_in_model()

    @classmethod
    def from_state_dict(cls, state: dict, data: NamesData) -> "Trainer":
        """A Trainer rebuilt from `state_dict()` output, ready to continue training."""
        trainer = cls(TrainConfig.from_dict(state["config"]), data)
        trainer.load_state_dict(state)
        return trainer
