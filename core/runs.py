"""Training runs of the names GPT: a run, the session's runs, their labels, curves and checkpoints.

No Streamlit here: the Train, Sample and Inside-the-model pages keep a `RunBook` in each session's
state; `benchmarks/train_live.py` drives the very same objects.

* `Run`: one training run = a `Trainer` + status + label + latest sampled names. It implements the
  live-training protocol (core.live_training): `run.advance(budget_s, slot)` trains one time slice
  and refreshes the samples whenever a validation point was measured. A run never depends on
  anything outside itself, so a rerun, a widget change or a page switch only decides *when* the
  next slice happens.
* `RunBook`: the session's runs (overlaid on one chart), labelled by what differs between them
  (`run_labels`, worded by the config fields' `short` metadata).
* The loss curves' rows (`run_frame`, `loss_frame`: per step, smoothed, validation); the chart
  itself is drawn by core.viz.training.
* Checkpoints: a run to bytes and back (`run_to_checkpoint`, `run_from_checkpoint`).

Randomness is explicit everywhere: a run's seed fixes its weights, batches and dropout masks; the
names shown during training are always drawn with the same sampling seed, so they change only
because the model changed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import math
import threading
import time
from dataclasses import dataclass, field
from typing import ContextManager, Sequence

import numpy as np
import pandas as pd

from core import budget
from core.checkpoints import MAX_BYTES, CheckpointError, load_checkpoint, save_checkpoint
from core.data import NamesData, build_names_data
from core.device import available_devices, resolve_device
from core.training import PRESETS, TrainConfig, Trainer, TrainingError
from core.live_training import Outcome
from core.models import GPT, GPTConfig
from core.sampling import SampledName, sample_names
from core.settings import describe
from core.tokenizers import CharTokenizer
from core.train_settings import (PRESET_TITLES, TrainSettings, matching_preset, settings_from_config,
                                 to_train_config, widget_spec)

SPLIT_SEED = 101  # the train/validation split is the same for every run, so runs compare fairly
VAL_SIZE = 0.1  # share of the names held out for validation (the lecture's val_size)
N_LIVE_SAMPLES = 8  # names shown while training, refreshed at each validation point
MAX_RUNS = 6  # runs kept per session (beyond it an untrained one goes first, then the oldest)
MAX_CHART_POINTS = 600  # per-step points per run on the chart (thinned beyond that)
SMOOTHING = 0.1  # weight of the newest step in the smoothed training loss (EMA, bias-corrected)
STATUSES = ("idle", "running", "paused", "stopped", "done", "error")
UPLOAD_MAX_BYTES = min(MAX_BYTES, 8 * budget.LIMITS.max_params + 2_000_000)  # weights + history


# =============================================================================================
# Data (shared, read-only) and model structure
# =============================================================================================


@functools.lru_cache(maxsize=4)
def names_data(context_size: int) -> NamesData:
    """The names split and its windows for `context_size`; read-only, shared by all sessions."""
    return build_names_data(context_size=context_size, val_size=VAL_SIZE, seed=SPLIT_SEED)


@functools.lru_cache(maxsize=64)
def _structure(config_items: tuple) -> tuple[int, str, tuple]:
    model = GPT(GPTConfig(**dict(config_items)), seed=0)
    rows = tuple((r["name"], str(r["shape"]), r["params"]) for r in model.layer_summary())
    return model.num_params(), str(model), rows


def model_structure(config: TrainConfig) -> tuple[int, str, pd.DataFrame]:
    """(parameter count, the module tree as text, a table per part) of the model to be trained.
    Kept per model configuration (the Train page shows it on every rerun): treat the table as
    read-only."""
    model_config = dataclasses.replace(config.model, use_sdpa=True)
    return _structure_table(tuple(sorted(model_config.to_dict().items())))


@functools.lru_cache(maxsize=64)
def _structure_table(config_items: tuple) -> tuple[int, str, pd.DataFrame]:
    n_params, text, rows = _structure(config_items)
    table = pd.DataFrame(list(rows), columns=["tensor", "shape", "parameters"])
    table["part"] = table["tensor"].map(_part_of)
    parts = (table.groupby("part", sort=False)["parameters"].sum().reset_index())
    parts["share"] = parts["parameters"] / max(1, n_params)
    return n_params, text, parts


def _part_of(tensor_name: str) -> str:
    """Group a parameter name into a readable part: embeddings, layer i attention, ..."""
    pieces = tensor_name.split(".")
    if pieces[0] == "layers":
        kind = {"self_attention": "attention", "feed_forward": "feed-forward"}.get(pieces[2], "LayerNorms")
        return f"layer {int(pieces[1]) + 1}: {kind}"
    return {"token_embedding": "token embedding", "position_embedding": "position embedding",
            "final_norm": "final LayerNorm", "lm_head": "output head (to the vocabulary)"}.get(
        pieces[0], pieces[0])


def device_options() -> tuple[list[str], dict[str, str]]:
    """Devices to offer here ("auto" first) and, for each absent one, why it is absent."""
    offered, absent = ["auto"], {}
    for name, (ok, reason) in available_devices().items():
        if ok:
            offered.append(name)
        else:
            absent[name] = reason
    return offered, absent


def device_notice(requested: str) -> str | None:
    """The fallback message when `requested` is a device this machine does not have."""
    return resolve_device(requested)[1]


# =============================================================================================
# Runs
# =============================================================================================


@dataclass(eq=False)
class Run:
    """One training run: the trainer, where it stands, and what the audience sees of it."""

    run_id: int  # 1, 2, ... within the session
    settings: TrainSettings  # a private copy of the settings that made it
    trainer: Trainer  # model, optimizer, history
    status: str = "idle"  # one of STATUSES
    origin: str = ""  # "" for a run trained here, else the uploaded file's name
    label: str = ""  # set by RunBook.relabel: what differs from the other runs
    samples: list[SampledName] = field(default_factory=list)  # latest sampled names
    samples_step: int = -1  # step at which `samples` were drawn
    steps_per_s: float = 0.0  # training steps per second (smoothed over slices)
    tokens_per_s: float = 0.0  # non-padding target characters per second of training
    wall_steps_per_s: float = 0.0  # steps per wall-clock second, validation included (for ETA)
    message: str = ""  # last problem (a diverged loss), shown on the page
    upload_digest: str = ""  # an uploaded run: its file's SHA-256 (the same file twice is one run)
    upload_step: int = -1  # an uploaded run: its step when loaded (trained further since if it differs)
    _frame_key: tuple = ()  # cache key of `_frame`
    _frame: pd.DataFrame | None = None  # per-step + smoothed + validation rows for the chart
    # Held while the run trains and while it is saved: a download is generated in another thread
    # (Streamlit runs deferred downloads off the script thread), so it must never copy weights
    # that an optimizer step is halfway through updating.
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def step(self) -> int:
        return self.trainer.step

    @property
    def max_steps(self) -> int:
        return self.trainer.config.max_steps

    @property
    def model(self) -> GPT:
        return self.trainer.model

    @property
    def tokenizer(self) -> CharTokenizer:
        return self.trainer.tokenizer

    @property
    def history(self) -> dict[str, list]:
        return self.trainer.history

    @property
    def n_params(self) -> int:
        return self.trainer.model.num_params()

    @property
    def seconds_left(self) -> float | None:
        """Estimated wall-clock seconds to max_steps at the recent pace (None before any pace)."""
        if self.wall_steps_per_s <= 0:
            return None
        return max(0, self.max_steps - self.step) / self.wall_steps_per_s

    @property
    def progress(self) -> float:
        return max(0.0, min(1.0, self.step / max(1, self.max_steps)))

    @property
    def active(self) -> bool:
        """True while the run wants training slices."""
        return self.status == "running"

    @property
    def done(self) -> bool:
        """Nothing left to train: max_steps reached, or stopped on an error (see `extend`)."""
        return self.trainer.done or self.status == "error"

    def advance(self, budget_s: float | None, slot: ContextManager | None = None, *,
                n_steps: int | None = None) -> Outcome:
        """The live-training protocol (core.live_training): while the run is "running", train for
        about `budget_s` seconds (or `n_steps` steps; at least one) inside `slot`, a context
        manager like core.budget.SLOTS.slot(owner); refresh the samples at each validation point."""
        if not self.active:
            return Outcome()
        start = time.perf_counter()
        with self.lock, (contextlib.nullcontext(True) if slot is None else slot) as granted:
            if granted is False:  # every training slot is taken: try again on the next tick
                return Outcome(busy=True, seconds=time.perf_counter() - start)
            try:
                result = self.trainer.train(n_steps=n_steps, time_budget_s=budget_s)
                if result.steps == 0 and n_steps != 0 and not self.trainer.done:
                    result = self.trainer.train(n_steps=1)  # the budget ran out before a step began
            except TrainingError as exc:
                self.status, self.message = "error", str(exc)
                return Outcome(finished=True, error=self.message, seconds=time.perf_counter() - start)
            if result.steps:
                self.steps_per_s = _ema(self.steps_per_s, result.steps_per_s)
                self.tokens_per_s = _ema(self.tokens_per_s, result.tokens_per_s)
            finished = self.trainer.done
            if finished:
                self.status = "done"
            if result.val_points or finished or self.samples_step < 0:
                refresh_samples(self)
        seconds = time.perf_counter() - start
        if result.steps and seconds > 0:
            self.wall_steps_per_s = _ema(self.wall_steps_per_s, result.steps / seconds)
        return Outcome(steps=result.steps, val_points=list(result.val_points),
                       finished=finished, seconds=seconds)


def new_run(run_id: int, settings: TrainSettings, *, limits: budget.Limits | None = None) -> Run:
    """Build a run from the page's settings; ValueError (readable) if it cannot or may not run."""
    data = names_data(settings.context_size)
    config = to_train_config(settings, vocab_size=data.tokenizer.vocab_size)
    problems = budget.check_run_size(config.model.num_params(), config.max_steps, limits)
    if problems:
        raise ValueError("This run is too large for this server: " + " ".join(problems))
    trainer = Trainer(config, data)
    return Run(run_id=run_id, settings=dataclasses.replace(settings), trainer=trainer)


def _ema(old: float, new: float, weight: float = 0.3) -> float:
    return new if old <= 0 else (1 - weight) * old + weight * new


def refresh_samples(run: Run, n: int = N_LIVE_SAMPLES) -> list[SampledName]:
    """Sample `n` names with the run's seed (so they change only because the model changed)."""
    data = names_data(run.trainer.config.model.context_size)
    run.samples = sample_names(run.model, run.tokenizer, n, temperature=1.0,
                               seed=run.settings.seed, max_len=30,
                               train_names=_name_set(data, "train"), val_names=_name_set(data, "val"))
    run.samples_step = run.step
    return run.samples


@functools.lru_cache(maxsize=8)
def _name_set_cached(context_size: int, split: str) -> frozenset[str]:
    data = names_data(context_size)
    return frozenset(data.train_names if split == "train" else data.val_names)


def _name_set(data: NamesData, split: str) -> frozenset[str]:
    return _name_set_cached(data.context_size, split)


def split_sets(run: Run) -> tuple[frozenset[str], frozenset[str]]:
    """(training names, validation names) of the split this run trained on."""
    context = names_data(run.trainer.config.model.context_size).context_size
    return _name_set_cached(context, "train"), _name_set_cached(context, "val")


# -- controls -----------------------------------------------------------------------------------


def start(run: Run) -> None:
    """Let the run train (idle or paused -> running)."""
    if run.trainer.done:
        raise ValueError(f"This run already did its {run.max_steps:,} steps; add steps to continue.")
    if run.status in ("idle", "paused", "stopped", "done"):
        if run.status == "paused":
            run.message = ""  # a halt's message (halt): this is the try again
        run.status = "running"


def halt(run: Run, message: str) -> None:
    """Training broke on something the engine could not turn into a message of its own (the GPU out
    of memory, a bug; core.live_training.BackgroundTraining's on_error): pause the run with the
    message on the page. Its model is kept, and Resume tries again."""
    run.message = message
    pause(run)


def pause(run: Run) -> None:
    if run.status == "running":
        run.status = "paused"


def stop(run: Run) -> None:
    """End the run where it is; the model is kept (sample it, download it, or add steps)."""
    if run.status in ("running", "paused", "idle"):
        run.status = "stopped"


def extend(run: Run, extra_steps: int, lr: float | None = None) -> None:
    """Train `extra_steps` more steps (a finished, stopped, uploaded or diverged run continues),
    with the peak learning rate `lr` from here on if given (e.g. smaller after the loss diverged).

    A run stopped by a non-finite loss continues from a consistent state: the engine went back to
    its last good step (weights, optimizer state and step agree; core.training.Trainer._go_back)."""
    if isinstance(extra_steps, bool) or not isinstance(extra_steps, int) or extra_steps < 1:
        raise ValueError(f"extra steps must be a whole number of at least 1, got {extra_steps!r}")
    new_total = run.step + extra_steps
    problems = budget.check_run_size(run.n_params, new_total)
    if problems:
        raise ValueError("Cannot train that long on this server: " + " ".join(problems))
    with run.lock:  # never while a slice trains (a GPU run may train in a worker thread: ui.live)
        if lr is not None:
            run.trainer.set_lr(lr)  # ValueError (readable) when out of range
            run.settings.lr = run.trainer.config.lr
        run.trainer.set_max_steps(new_total)
        run.settings.max_steps = new_total
        run.trainer.clear_error()
        if run.status in ("done", "error"):
            run.status = "paused"
        run.message = ""


# -- the session's runs ----------------------------------------------------------------------------


def _first_to_go(others: list[Run]) -> Run:
    """Beyond MAX_RUNS: the oldest run that never trained, else the oldest one."""
    untrained = [r for r in others if not _holds_a_model(r)]
    return (untrained or others)[0]


def _holds_a_model(run: Run) -> bool:
    """A run someone trained (here, or uploaded): letting it go loses a model."""
    return run.step > 0 or bool(run.origin)


@dataclass(eq=False)
class RunBook:
    """The runs of one session (kept in its session state; freed with it)."""

    owner: str  # this session's name in the training queue (core.budget.SLOTS)
    runs: list[Run] = field(default_factory=list)
    current_id: int | None = None  # the run the Train page drives
    next_id: int = 1
    dropped: list[str] = field(default_factory=list)  # labels of trained runs the last `add` let go
    # what the last Forget / Clear let go, with the run that was current then: one click can undo
    # it (a misclick in a lecture must not cost a trained model); a new run empties it
    forgotten: list[Run] = field(default_factory=list)
    forgotten_current: int | None = None

    @property
    def current(self) -> Run | None:
        return self.get(self.current_id)

    def get(self, run_id: int | None) -> Run | None:
        return next((r for r in self.runs if r.run_id == run_id), None)

    def create(self, settings: TrainSettings, limits: budget.Limits | None = None) -> Run:
        """A new run from `settings` (ValueError if it cannot run), made current."""
        run = new_run(self.next_id, settings, limits=limits)
        self.add(run)
        return run

    def add(self, run: Run) -> None:
        """Keep `run` (make it current). Beyond MAX_RUNS a run is let go: the oldest one that never
        trained, else the oldest other; the labels of trained runs let go are in `dropped` (the page
        says so: a student's model must not vanish without a word)."""
        run.run_id = self.next_id
        self.next_id += 1
        current = self.current
        if current is not None:
            pause(current)  # only one run trains at a time in a session
        self.runs.append(run)
        self.current_id = run.run_id
        self.dropped = []
        self.forgotten, self.forgotten_current = [], None  # no undo across a new run: it frees them
        while len(self.runs) > MAX_RUNS:
            gone = _first_to_go([r for r in self.runs if r.run_id != self.current_id])
            if _holds_a_model(gone):
                self.dropped.append(gone.label)
            self.runs.remove(gone)
        self.relabel()

    def next_to_go(self) -> Run | None:
        """The trained run the next new run would let go (the page warns before Start), or None
        (room left, or the run to go never trained)."""
        if len(self.runs) < MAX_RUNS:
            return None
        gone = _first_to_go(self.runs)  # the new run will be current: every kept run is an "other"
        return gone if _holds_a_model(gone) else None

    def remove(self, run_id: int) -> None:
        """Forget run `run_id` (`undo_forget` brings it back)."""
        self._forget([r for r in self.runs if r.run_id == run_id])
        self.runs = [r for r in self.runs if r.run_id != run_id]
        if self.current_id == run_id:
            self.current_id = self.runs[-1].run_id if self.runs else None
        self.relabel()

    def clear_others(self) -> None:
        """Forget every run except the current one (`undo_forget` brings them back)."""
        self._forget([r for r in self.runs if r.run_id != self.current_id])
        self.runs = [r for r in self.runs if r.run_id == self.current_id]
        self.relabel()

    def _forget(self, gone: list[Run]) -> None:
        for run in gone:
            pause(run)  # a run forgotten while training waits, paused, for an undo
        self.forgotten, self.forgotten_current = gone, self.current_id

    def undo_forget(self) -> list[Run]:
        """Bring back what the last Forget / Clear let go, in its place, with the run that was
        current then; returns the runs brought back (none when there is nothing to undo)."""
        back = [r for r in self.forgotten if r not in self.runs]
        self.runs = sorted(self.runs + back, key=lambda r: r.run_id)
        if self.get(self.forgotten_current) is not None:
            self.current_id = self.forgotten_current
        self.forgotten, self.forgotten_current = [], None
        self.relabel()
        return back

    def same_upload(self, digest: str) -> Run | None:
        """The kept run loaded from a file with this digest and not trained since, if any: the same
        checkpoint uploaded again is that run, not a second copy of it."""
        return next((r for r in self.runs if r.upload_digest == digest and r.step == r.upload_step), None)

    def bring_forward(self, run_id: int) -> None:
        """Make run `run_id` the current one (the one before it pauses, as for a new run)."""
        current = self.current
        if current is not None and current.run_id != run_id:
            pause(current)
        if self.get(run_id) is not None:
            self.current_id = run_id

    def trained(self) -> list[Run]:
        """Runs with a model worth sampling (at least one step, or uploaded), newest first."""
        return [r for r in reversed(self.runs) if r.step > 0 or r.origin]

    def relabel(self) -> None:
        labels = run_labels([r.settings for r in self.runs], [r.origin for r in self.runs],
                            [r.run_id for r in self.runs])
        for run, label in zip(self.runs, labels):
            run.label = label


# -- labels: what differs between runs -----------------------------------------------------------

# Settings named in run labels, most telling first; every other hyper-parameter with a `short`
# wording in its config field's metadata follows in declaration order.
LABEL_ORDER = ("causal", "optimizer", "lr", "dropout", "n_layer", "n_head", "d_embed", "d_ff",
               "context_size", "batch_size", "weight_decay", "grad_clip", "schedule", "warmup_steps",
               "min_lr_ratio", "pack_length", "max_steps", "seed", "device")
MAX_LABEL_PARTS = 3


def label_fields() -> list[str]:
    """The settings a run label may name (those whose metadata has a `short` wording)."""
    named = [f.name for f in dataclasses.fields(TrainSettings) if "short" in f.metadata]
    return [n for n in LABEL_ORDER if n in named] + [n for n in named if n not in LABEL_ORDER]


def run_labels(settings: list[TrainSettings], origins: list[str] | None = None,
               run_ids: list[int] | None = None) -> list[str]:
    """One short label per run, naming only the settings that differ between the runs.

    "#2 SGD, lr 0.01" next to "#1 AdamW, lr 0.003"; a lone run is named after its preset.
    """
    origins = origins or [""] * len(settings)
    run_ids = run_ids or list(range(1, len(settings) + 1))
    varying = [name for name in label_fields() if len({getattr(s, name) for s in settings}) > 1]
    labels = []
    for s, origin, run_id in zip(settings, origins, run_ids):
        parts = [describe(widget_spec(name), getattr(s, name)) for name in varying]
        if len(parts) > MAX_LABEL_PARTS:
            parts = parts[:MAX_LABEL_PARTS] + ["…"]
        if not parts and len(settings) == 1:
            preset = matching_preset(s)
            parts = [PRESET_TITLES[preset] if preset else "custom settings"]
            if not s.causal:
                parts.append("mask off")
        if origin:
            parts.append("uploaded")
        labels.append(f"#{run_id} " + ", ".join(parts) if parts else f"#{run_id}")
    return labels


def weights_note(run: Run) -> str | None:
    """A sentence when the model's weights are not those of the run's last step (restore_best put
    back the best validation point's); None otherwise."""
    trainer = run.trainer
    if trainer.weights_step is None:
        return None
    val = trainer.weights_val_loss
    at = f" (validation loss {val:.3f})" if val is not None else ""
    last = f", validation loss {trainer.last_val_loss:.3f}" if trainer.last_val_loss is not None else ""
    return (f"The weights are from step {trainer.weights_step:,}, the lowest validation loss of the run{at}; "
            f"training went on to step {run.step:,}{last}, and the best weights were kept.")


SUMMARY_FIELDS = ("n_layer", "n_head", "d_embed", "d_ff", "context_size", "dropout", "optimizer", "lr",
                  "batch_size", "causal", "seed")  # what a figure's caption says about each run


def run_summary(run: Run) -> str:
    """The run's main settings in words (for a figure's caption), worded like its label."""
    parts = [describe(widget_spec(name), getattr(run.settings, name)) for name in SUMMARY_FIELDS]
    return ", ".join(parts + [f"step {run.step:,}"])


# =============================================================================================
# Loss curves: the rows a chart draws
# =============================================================================================

KIND_RAW = "train, per step"
KIND_SMOOTH = "train, smoothed"
KIND_VAL = "validation"
KINDS = (KIND_RAW, KIND_SMOOTH, KIND_VAL)


def smooth(values: np.ndarray, alpha: float = SMOOTHING) -> np.ndarray:
    """Bias-corrected exponential moving average (the first values are not pulled towards 0)."""
    if len(values) == 0:
        return np.asarray(values, dtype=np.float64)
    return pd.Series(values, dtype="float64").ewm(alpha=alpha, adjust=True).mean().to_numpy()


EARLY_STEPS = 4  # the chart's line weighs step t at least EARLY_STEPS / (t + 1): see trend


def _early_weight(t: int, alpha: float) -> float:
    """The weight of step t in the chart's line: short memory first, alpha from 1/alpha steps on."""
    return max(alpha, min(1.0, EARLY_STEPS / (t + 1)))


def _ema_early(x: np.ndarray, alpha: float) -> np.ndarray:
    """y_0 = x_0, y_t = a_t x_t + (1 - a_t) y_(t-1), a_t = max(alpha, EARLY_STEPS / (t + 1)):
    a short memory in the first steps, where the loss falls fastest, the usual one after."""
    n, early = len(x), min(len(x), math.ceil(EARLY_STEPS / alpha))
    y = np.empty(n, dtype=np.float64)
    y[0] = x[0]
    for t in range(1, early):  # at most 40 steps for alpha 0.1
        a = _early_weight(t, alpha)
        y[t] = a * x[t] + (1 - a) * y[t - 1]
    if early < n:  # constant alpha: pandas' recursion, started from the last early value
        rest = pd.Series(np.concatenate([y[early - 1:early], x[early:]])).ewm(alpha=alpha, adjust=False).mean()
        y[early:] = rest.to_numpy()[1:]
    return y


def _ema_back(y: np.ndarray, alpha: float) -> np.ndarray:
    """The same recursion run from the last step back to the first, with the same weight for
    step t as _ema_early (short near the first steps): z_t = a_t y_t + (1 - a_t) z_(t+1)."""
    n, early = len(y), min(len(y), math.ceil(EARLY_STEPS / alpha))
    z = np.empty(n, dtype=np.float64)
    if early < n:  # from the newest step back to `early`: constant alpha, pandas' recursion
        z[early:] = pd.Series(y[early:][::-1]).ewm(alpha=alpha, adjust=False).mean().to_numpy()[::-1]
        following = z[early]
    else:
        z[n - 1] = following = y[n - 1]
        early = n - 1
    for t in range(early - 1, -1, -1):
        a = _early_weight(t, alpha)
        z[t] = following = a * y[t] + (1 - a) * following
    return z


def trend(values: np.ndarray, alpha: float = SMOOTHING) -> np.ndarray:
    """The chart's "smoothed" line. A forward EMA lags about (1 - alpha) / alpha = 9 steps, and in
    the first steps the loss falls 0.03-0.05 a step: the line ran ~0.3 nats above every point
    of the steep part (browser review).

    So: a memory of EARLY_STEPS / (t + 1) in the first steps (a curve that bends fast is averaged
    over few steps), and forward then backward where later steps are known (no lag); the last
    ~2/alpha steps blend into the forward EMA, so the newest point is the Train loss metric's
    (last_smoothed) and does not jump with each noisy step."""
    x = np.asarray(values, dtype=np.float64)
    n = len(x)
    forward = smooth(x, alpha)  # (n,) the metric's smoothing
    if n < 3:
        return forward
    both = _ema_back(_ema_early(x, alpha), alpha)  # (n,) forward, then backward
    blend = np.clip((n - 1 - np.arange(n)) / math.ceil(2 / alpha), 0.0, 1.0)  # 0 at the newest step
    return blend * both + (1 - blend) * forward


def last_smoothed(values: Sequence[float], alpha: float = SMOOTHING) -> float | None:
    """smooth(values)[-1], from the newest steps only: a step k places back weighs (1 - alpha)**k,
    under 1e-17 (below float64's precision) past `tail` steps (372 for alpha 0.1). So the page's
    "Train loss" metric costs the same at step 50 and at step 50,000 (it re-smoothed the whole
    history on every tick, while a GPU worker waited for the GIL). None for no values."""
    if len(values) == 0:
        return None
    tail = math.ceil(math.log(1e-17) / math.log1p(-alpha)) if 0 < alpha < 1 else 1
    return float(smooth(np.asarray(values[-tail:], dtype=np.float64), alpha)[-1])


def run_frame(run: Run, max_points: int = MAX_CHART_POINTS,
              lock: ContextManager | None = None) -> pd.DataFrame:
    """Long-form rows (step, loss, kind) of one run, cached until the run moves on.

    `lock`: held only while the history's lists are copied (a few microseconds: list copies in C),
    not while the rows are made from the copies. A run trained by a worker thread
    (core.live_training.BackgroundTraining) waits for it, and its GPU with it."""
    with contextlib.nullcontext() if lock is None else lock:
        history = run.history
        key = (run.step, len(history["val_loss"]), max_points)
        if run._frame is not None and run._frame_key == key:
            return run._frame
        copied = {name: list(history[name]) for name in ("steps", "train_loss", "val_steps", "val_loss")}
    steps = np.asarray(copied["steps"], dtype=np.int64)  # (n_steps,)
    losses = np.asarray(copied["train_loss"], dtype=np.float64)  # (n_steps,)
    smoothed = trend(losses)  # (n_steps,)
    stride = max(1, math.ceil(len(steps) / max_points))
    keep = np.arange(len(steps))[::stride]
    if len(steps) and keep[-1] != len(steps) - 1:
        keep = np.append(keep, len(steps) - 1)  # the newest step is always drawn
    parts = [
        pd.DataFrame({"step": steps[keep], "loss": losses[keep], "kind": KIND_RAW}),
        pd.DataFrame({"step": steps[keep], "loss": smoothed[keep], "kind": KIND_SMOOTH}),
        pd.DataFrame({"step": np.asarray(copied["val_steps"], dtype=np.int64),
                      "loss": np.asarray(copied["val_loss"], dtype=np.float64), "kind": KIND_VAL}),
    ]
    frame = pd.concat([p for p in parts if len(p)], ignore_index=True) if len(steps) else \
        pd.DataFrame({"step": pd.Series(dtype="int64"), "loss": pd.Series(dtype="float64"),
                      "kind": pd.Series(dtype="object")})
    run._frame_key, run._frame = key, frame
    return frame


def loss_frame(runs: list[Run], max_points: int = MAX_CHART_POINTS,
               frames: list[pd.DataFrame] | None = None) -> pd.DataFrame:
    """Rows (run, step, loss, kind) of several runs, for one overlaid chart. `frames`: the runs'
    own rows (run_frame) when the caller already has them: a run may move on in between."""
    frames = [run_frame(run, max_points) for run in runs] if frames is None else frames
    labelled = [frame.assign(run=run.label or f"#{run.run_id}") for run, frame in zip(runs, frames) if len(frame)]
    if not labelled:
        return pd.DataFrame(columns=["step", "loss", "kind", "run"])
    return pd.concat(labelled, ignore_index=True)


def chart_runs(book: RunBook, overlay: bool) -> list[Run]:
    """Runs drawn on the Train page's chart: the current one, plus the others when overlaid."""
    current = book.current
    if overlay:
        return [r for r in book.runs if r.step > 0 or r is current]
    return [current] if current is not None else []


# =============================================================================================
# Checkpoints
# =============================================================================================


def run_to_checkpoint(run: Run) -> bytes:
    """The run's model, training config, vocabulary and loss history as a .pt file's bytes."""
    with run.lock:  # never between two halves of an optimizer step (see Run.lock)
        return save_checkpoint(run.model, run.trainer.config, run.tokenizer, run.history,
                               weights_step=run.trainer.weights_step)


def checkpoint_digest(data: bytes) -> str:
    """A checkpoint file's identity: the SHA-256 of its bytes."""
    return hashlib.sha256(data).hexdigest()


def run_from_checkpoint(data: bytes, file_name: str = "checkpoint.pt",
                        limits: budget.Limits | None = None) -> Run:
    """A paused run holding an uploaded model: sample it, or add steps to train it further.

    Raises CheckpointError (a ValueError) with a clear message for a corrupt, foreign or oversized
    file; the caller's current runs are untouched whatever happens here.
    """
    raw = data
    checkpoint = load_checkpoint(data, max_bytes=UPLOAD_MAX_BYTES)
    model_config = checkpoint.model_config
    problems = budget.check_run_size(model_config.num_params(), 1, limits)
    if problems:
        raise CheckpointError("the uploaded model is too large for this server: " + " ".join(problems))
    if isinstance(checkpoint.config, TrainConfig):
        config = dataclasses.replace(checkpoint.config, device="auto")
    else:  # only the architecture was saved: train on with the quick demo's loop settings
        config = dataclasses.replace(PRESETS["quick_demo"](), model=model_config, device="auto")
    data = names_data(model_config.context_size)
    if checkpoint.tokenizer != data.tokenizer:
        raise CheckpointError(
            "this model was trained on another alphabet ("
            + "".join(checkpoint.tokenizer.vocab)[:40] + ") than the names here ("
            + "".join(data.tokenizer.vocab) + "), so its character ids mean something else")
    trainer = Trainer(config, data)
    saved_on = str(getattr(checkpoint.config, "device", "auto")).lower().partition(":")[0]
    if saved_on not in ("auto", trainer.device.type):  # shown where a link's absent device is shown
        trainer.device_message = (f"This checkpoint was trained on {saved_on.upper()}, which this machine "
                                  f"does not offer: it trains further on the {trainer.device.type.upper()}.")
    state = trainer.state_dict()
    history = _clean_history(checkpoint.history, trainer.history)
    state["model"] = {k: v.clone() for k, v in checkpoint.model.state_dict().items()}
    state["history"] = history
    state["step"] = int(history["steps"][-1]) if history["steps"] else 0
    state["elapsed"] = float(history["elapsed"][-1]) if history["elapsed"] else 0.0
    state["tokens"] = int(history["tokens"][-1]) if history["tokens"] else 0
    state["config"]["max_steps"] = max(config.max_steps, state["step"], 1)
    if checkpoint.weights_step is not None and checkpoint.weights_step < state["step"]:
        state["weights_step"] = checkpoint.weights_step  # kept best weights: say which step they are from
    trainer.load_state_dict(state)
    run = Run(run_id=0, settings=settings_from_config(trainer.config), trainer=trainer,
              status="paused", origin=str(file_name)[:80] or "checkpoint.pt",
              upload_digest=checkpoint_digest(raw), upload_step=trainer.step)
    if trainer.done:
        run.status = "done"
    try:
        refresh_samples(run)
    except RuntimeError as exc:  # finite weights so large that the softmax overflows (torch.multinomial)
        raise CheckpointError("the model's weights are so large that its next-character probabilities "
                              "are not numbers (an overflow), so it cannot write names") from exc
    return run


def _clean_history(saved: dict, template: dict) -> dict:
    """The saved history if it has the engine's lists of equal, sane lengths; else an empty one."""
    out = {key: [] for key in template}
    try:
        for key in template:
            values = saved.get(key, [])
            if not isinstance(values, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                       for v in values):
                return {key: [] for key in template}
            out[key] = list(values)
        n = len(out["steps"])
        per_step = ("train_loss", "elapsed", "tokens", "lr")
        if any(len(out[k]) != n for k in per_step) or len(out["val_steps"]) != len(out["val_loss"]):
            return {key: [] for key in template}
        out["steps"] = [int(s) for s in out["steps"]]
        out["val_steps"] = [int(s) for s in out["val_steps"]]
        out["tokens"] = [int(t) for t in out["tokens"]]
    except (AttributeError, TypeError, ValueError, OverflowError):  # OverflowError: int(inf)
        return {key: [] for key in template}
    counts = out["steps"] + out["val_steps"] + out["tokens"]
    if any(v < 0 for v in counts) or not all(math.isfinite(v) and v >= 0 for v in out["elapsed"]) \
            or any(b <= a for a, b in zip(out["steps"], out["steps"][1:])):
        return {key: [] for key in template}  # a step count that goes back or below 0 is not a history
    return out
