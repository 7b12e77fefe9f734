"""Live training of the names GPT for the lecture hall: runs, their slices, labels and charts.

No Streamlit here: the Train, Sample and Inside-the-model pages keep a `RunBook` in each session's
state and call these functions; `benchmarks/train_live.py` calls the very same ones.

* `TrainSettings` (the Train page's controls), `SampleSettings`, `InsideSettings`: pure dataclasses
  built with `core.settings.spec`, so links and lesson files work.
* `Run`: one training run = a `Trainer` + status + label + latest sampled names.
  `run.advance(budget_s, slot)` (the core.live_training protocol) trains one time slice and refreshes the samples whenever a
  validation point was measured. A run never depends on anything outside itself, so a rerun, a
  widget change or a page switch only decides *when* the next slice happens.
* `RunBook`: the session's runs (overlaid on one chart), labelled by what differs between them.
* Chart builders: loss curves (per-step, smoothed, validation; overlay of runs), attention maps of
  every layer and head, next-character distributions, the embedding matrix and its 2-D PCA.
* Checkpoints: a run to bytes and back (`run_to_checkpoint`, `run_from_checkpoint`).

Randomness is explicit everywhere: a run's seed fixes its weights, batches and dropout masks; the
names shown during training are always drawn with the same sampling seed, so they change only
because the model changed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, ContextManager

import altair as alt
import numpy as np
import pandas as pd
import torch

from altair.utils.schemapi import debug_mode

from core import budget
from core.viz import heatmap, palette
from core.checkpoints import MAX_BYTES, CheckpointError, load_checkpoint, save_checkpoint
from core.data import NamesData, build_names_data
from core.device import REQUEST_NAMES, available_devices, resolve_device
from core.live_training import Outcome
from core.engine import OPTIMIZERS, PRESETS, SCHEDULES, TrainConfig, Trainer, TrainingError
from core.models import GPT, GPTConfig
from core.sampling import SampledName, label_shares, next_char_distributions, sample_names
from core.settings import spec
from core.tokenizers import BOUNDARY_TOKEN, CharTokenizer

SPLIT_SEED = 101  # the train/validation split is the same for every run, so runs compare fairly
VAL_SIZE = 0.1  # share of the names held out for validation (the lecture's val_size)
N_LIVE_SAMPLES = 8  # names shown while training, refreshed at each validation point
MAX_RUNS = 6  # runs kept per session (the oldest finished one goes first)
MAX_CHART_POINTS = 600  # per-step points per run on the chart (thinned beyond that)
SMOOTHING = 0.1  # weight of the newest step in the smoothed training loss (EMA, bias-corrected)
STATUSES = ("idle", "running", "paused", "stopped", "done", "error")
PRESET_TITLES = {"lecture": "Lecture 7", "quick_demo": "quick demo", "best": "best"}
UPLOAD_MAX_BYTES = min(MAX_BYTES, 8 * budget.LIMITS.max_params + 2_000_000)  # weights + history


def _fast_altair(builder: Callable) -> Callable:
    """Build a chart without Altair's validation at construction time (it validates once more when
    the chart is rendered, so nothing is lost); it halves the build time of a chart."""

    @functools.wraps(builder)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with debug_mode(False):
            return _padded(builder(*args, **kwargs))

    return wrapper


def _padded(chart: alt.TopLevelMixin) -> alt.TopLevelMixin:
    """Keep the plot at its set size and add the legend and axes around it. Without this,
    Streamlit applies "fit", which shrinks a heatmap's cells to make room for its legend."""
    return chart.properties(autosize=alt.AutoSizeParams(type="pad", contains="padding"))


# =============================================================================================
# Settings of the three pages
# =============================================================================================

_QUICK = PRESETS["quick_demo"]()  # the page opens on the preset that trains well in ~30 s


@dataclass
class TrainSettings:
    """Controls of the Train page: the lecture's GPTConfig plus the training loop's knobs."""

    context_size: int = spec(_QUICK.model.context_size, min=2, max=32)  # characters the model reads
    n_layer: int = spec(_QUICK.model.n_layer, min=1, max=8)  # decoder layers
    n_head: int = spec(_QUICK.model.n_head, min=1, max=16)  # attention heads per layer
    d_embed: int = spec(_QUICK.model.d_embed, min=4, max=512)  # width of the residual stream
    d_ff: int = spec(_QUICK.model.d_ff, min=4, max=2048)  # hidden width of the feed-forward
    dropout: float = spec(_QUICK.model.dropout, min=0.0, max=0.8)  # on attention and residuals
    causal: bool = spec(True)  # False = "break it": every position may look at the future
    batch_size: int = spec(_QUICK.batch_size, min=1, max=1024)  # windows per step
    max_steps: int = spec(_QUICK.max_steps, min=1, max=100_000)  # length of the run
    lr: float = spec(_QUICK.lr, min=1e-6, max=10.0)  # peak learning rate
    optimizer: str = spec(_QUICK.optimizer, choices=OPTIMIZERS)  # "adamw" or "sgd"
    val_interval: int = spec(_QUICK.val_interval, min=1, max=100_000)  # steps between validations
    seed: int = spec(_QUICK.seed, min=0, max=2**31 - 1)  # weights, batch order, dropout masks
    device: str = spec("auto", choices=REQUEST_NAMES)  # "auto", "cpu", "cuda" or "mps"
    weight_decay: float = spec(_QUICK.weight_decay, min=0.0, max=10.0)  # AdamW/SGD decay
    grad_clip: float = spec(_QUICK.grad_clip or 0.0, min=0.0, max=1000.0)  # 0 = no clipping
    schedule: str = spec(_QUICK.schedule, choices=SCHEDULES)  # learning rate after warm-up
    warmup_steps: int = spec(_QUICK.warmup_steps, min=0, max=100_000)  # linear warm-up steps
    min_lr_ratio: float = spec(_QUICK.min_lr_ratio, min=0.0, max=1.0)  # cosine ends at lr * this
    pack_length: int = spec(_QUICK.pack_length or 0, min=0, max=256)  # names packed in rows; 0 = off
    overlay: bool = spec(True)  # draw the session's earlier runs on the same chart

    def problems(self) -> list[str]:
        return settings_problems(self)


def settings_problems(settings: TrainSettings) -> list[str]:
    """Cross-field rules of the Train page, in words for the student (empty when it can run)."""
    problems = []
    if 0 < settings.pack_length < settings.context_size:
        problems.append(f"packed rows ({settings.pack_length} tokens) must hold at least one window "
                        f"of the context ({settings.context_size}); use 0 to switch packing off.")
    if settings.n_head > 0 and settings.d_embed % settings.n_head != 0:
        problems.append(f"d_embed ({settings.d_embed}) must be divisible by the number of heads "
                        f"({settings.n_head}): each head gets d_embed / heads dimensions.")
    return problems


def settings_from_config(config: TrainConfig) -> TrainSettings:
    """The page's settings for a TrainConfig (a preset, an uploaded checkpoint)."""
    model = config.model
    return TrainSettings(
        context_size=model.context_size, n_layer=model.n_layer, n_head=model.n_head,
        d_embed=model.d_embed, d_ff=model.d_ff, dropout=float(model.dropout), causal=model.causal,
        batch_size=config.batch_size, max_steps=config.max_steps, lr=float(config.lr),
        optimizer=config.optimizer, val_interval=config.val_interval, seed=config.seed,
        device=str(config.device).partition(":")[0], weight_decay=float(config.weight_decay),
        grad_clip=float(config.grad_clip or 0.0), schedule=config.schedule,
        warmup_steps=config.warmup_steps, min_lr_ratio=float(config.min_lr_ratio),
        pack_length=config.pack_length or 0)


def to_train_config(settings: TrainSettings, vocab_size: int = 27) -> TrainConfig:
    """The engine's TrainConfig for the page's settings; ValueError with a readable message."""
    problems = settings_problems(settings)
    if problems:
        raise ValueError(" ".join(problems))
    model = GPTConfig(vocab_size=vocab_size, context_size=settings.context_size,
                      n_layer=settings.n_layer, n_head=settings.n_head, d_embed=settings.d_embed,
                      d_ff=settings.d_ff, dropout=float(settings.dropout), causal=settings.causal)
    return TrainConfig(model=model, optimizer=settings.optimizer, lr=float(settings.lr),
                       weight_decay=float(settings.weight_decay), batch_size=settings.batch_size,
                       max_steps=settings.max_steps, val_interval=settings.val_interval,
                       seed=settings.seed, device=settings.device,
                       grad_clip=float(settings.grad_clip) if settings.grad_clip > 0 else None,
                       schedule=settings.schedule, warmup_steps=settings.warmup_steps,
                       min_lr_ratio=float(settings.min_lr_ratio), pack_length=packing(settings))


def packing(settings: TrainSettings) -> int | None:
    """Rows of packed names, or None. Packing keeps each name from seeing the others through the
    causal mask, so a mask-off run ("break it") trains one window per row instead."""
    if settings.pack_length <= 0 or not settings.causal:
        return None
    return max(settings.pack_length, settings.context_size)


def preset_settings(name: str) -> TrainSettings:
    """Settings of a named preset ("lecture", "quick_demo", "best")."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}: choose one of {', '.join(PRESETS)}")
    return settings_from_config(PRESETS[name]())


_TRAINING_FIELDS = tuple(f.name for f in dataclasses.fields(TrainSettings) if f.name != "overlay")


def matching_preset(settings: TrainSettings) -> str | None:
    """The preset these settings equal (device and chart options aside), or None."""
    ignore = {"device", "overlay"}
    for name in PRESETS:
        preset = preset_settings(name)
        if all(getattr(settings, f) == getattr(preset, f) for f in _TRAINING_FIELDS if f not in ignore):
            return name
    return None


@dataclass
class SampleSettings:
    """Controls of the Sample page."""

    n: int = spec(20, min=1, max=200)  # how many names to sample
    temperature: float = spec(1.0, min=0.05, max=5.0)  # < 1 sharpens, > 1 flattens the distribution
    top_k: int = spec(0, min=0, max=200)  # keep the k most likely characters; 0 = all of them
    prefix: str = spec("", max_len=20)  # every name starts with this
    seed: int = spec(42, min=0, max=2**31 - 1)  # same seed, same model -> same names
    chosen: int = spec(0, min=0, max=199)  # which sampled name to take apart
    step: int = spec(0, min=0, max=60)  # which step of that name the bar chart shows


@dataclass
class InsideSettings:
    """Controls of the Inside-the-model page."""

    name: str = spec("emma", max_len=40)  # the name fed to the model
    layer: int = spec(0, min=0, max=15)  # layer of the enlarged attention map (0-based)
    head: int = spec(0, min=0, max=15)  # head of the enlarged attention map (0-based)


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
    """(parameter count, the module tree as text, a table per part) of the model to be trained."""
    model_config = dataclasses.replace(config.model, use_sdpa=True)
    n_params, text, rows = _structure(tuple(sorted(model_config.to_dict().items())))
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
        return min(1.0, self.step / max(1, self.max_steps))

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


def new_run(run_id: int, settings: TrainSettings, *, limits: budget.Limits = budget.LIMITS) -> Run:
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
        run.status = "running"


def pause(run: Run) -> None:
    if run.status == "running":
        run.status = "paused"


def stop(run: Run) -> None:
    """End the run where it is; the model is kept (sample it, download it, or add steps)."""
    if run.status in ("running", "paused", "idle"):
        run.status = "stopped"


def extend(run: Run, extra_steps: int) -> None:
    """Train `extra_steps` more steps (a finished, stopped or uploaded run continues)."""
    if isinstance(extra_steps, bool) or not isinstance(extra_steps, int) or extra_steps < 1:
        raise ValueError(f"extra steps must be a whole number of at least 1, got {extra_steps!r}")
    new_total = run.step + extra_steps
    problems = budget.check_run_size(run.n_params, new_total)
    if problems:
        raise ValueError("Cannot train that long on this server: " + " ".join(problems))
    run.trainer.set_max_steps(new_total)
    run.settings.max_steps = new_total
    if run.status == "done":
        run.status = "paused"
    run.message = ""


# -- the session's runs ----------------------------------------------------------------------------


@dataclass(eq=False)
class RunBook:
    """The runs of one session (kept in its session state; freed with it)."""

    owner: str  # this session's name in the training queue (core.budget.SLOTS)
    runs: list[Run] = field(default_factory=list)
    current_id: int | None = None  # the run the Train page drives
    next_id: int = 1

    @property
    def current(self) -> Run | None:
        return self.get(self.current_id)

    def get(self, run_id: int | None) -> Run | None:
        return next((r for r in self.runs if r.run_id == run_id), None)

    def create(self, settings: TrainSettings, limits: budget.Limits = budget.LIMITS) -> Run:
        """A new run from `settings` (ValueError if it cannot run), made current."""
        run = new_run(self.next_id, settings, limits=limits)
        self.add(run)
        return run

    def add(self, run: Run) -> None:
        """Keep `run` (make it current); beyond MAX_RUNS the oldest other run is dropped."""
        run.run_id = self.next_id
        self.next_id += 1
        current = self.current
        if current is not None:
            pause(current)  # only one run trains at a time in a session
        self.runs.append(run)
        self.current_id = run.run_id
        while len(self.runs) > MAX_RUNS:
            self.runs.remove(next(r for r in self.runs if r.run_id != self.current_id))
        self.relabel()

    def remove(self, run_id: int) -> None:
        self.runs = [r for r in self.runs if r.run_id != run_id]
        if self.current_id == run_id:
            self.current_id = self.runs[-1].run_id if self.runs else None
        self.relabel()

    def clear_others(self) -> None:
        """Forget every run except the current one."""
        self.runs = [r for r in self.runs if r.run_id == self.current_id]
        self.relabel()

    def trained(self) -> list[Run]:
        """Runs with a model worth sampling (at least one step, or uploaded), newest first."""
        return [r for r in reversed(self.runs) if r.step > 0 or r.origin]

    def relabel(self) -> None:
        labels = run_labels([r.settings for r in self.runs], [r.origin for r in self.runs],
                            [r.run_id for r in self.runs])
        for run, label in zip(self.runs, labels):
            run.label = label


# -- labels: what differs between runs -----------------------------------------------------------

_LABEL_PARTS: list[tuple[str, Callable[[Any], str]]] = [
    ("causal", lambda v: "mask on" if v else "mask off"),
    ("optimizer", lambda v: {"adamw": "AdamW", "sgd": "SGD"}.get(v, v)),
    ("lr", lambda v: f"lr {v:g}"),
    ("dropout", lambda v: f"dropout {v:g}"),
    ("n_layer", lambda v: f"{v} layers"),
    ("n_head", lambda v: f"{v} heads"),
    ("d_embed", lambda v: f"d_embed {v}"),
    ("d_ff", lambda v: f"d_ff {v}"),
    ("context_size", lambda v: f"context {v}"),
    ("batch_size", lambda v: f"batch {v}"),
    ("weight_decay", lambda v: f"decay {v:g}"),
    ("grad_clip", lambda v: f"clip {v:g}" if v else "no clip"),
    ("schedule", lambda v: f"{v} lr"),
    ("warmup_steps", lambda v: f"warm-up {v}"),
    ("min_lr_ratio", lambda v: f"final lr ×{v:g}"),
    ("pack_length", lambda v: f"packed {v}" if v else "not packed"),
    ("max_steps", lambda v: f"{v:,} steps"),
    ("seed", lambda v: f"seed {v}"),
    ("device", lambda v: str(v)),
]
MAX_LABEL_PARTS = 3


def run_labels(settings: list[TrainSettings], origins: list[str] | None = None,
               run_ids: list[int] | None = None) -> list[str]:
    """One short label per run, naming only the settings that differ between the runs.

    "#2 SGD, lr 0.01" next to "#1 AdamW, lr 0.003"; a lone run is named after its preset.
    """
    origins = origins or [""] * len(settings)
    run_ids = run_ids or list(range(1, len(settings) + 1))
    varying = [(name, fmt) for name, fmt in _LABEL_PARTS
               if len({getattr(s, name) for s in settings}) > 1]
    labels = []
    for s, origin, run_id in zip(settings, origins, run_ids):
        parts = [fmt(getattr(s, name)) for name, fmt in varying]
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


# =============================================================================================
# Loss curves
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


def run_frame(run: Run, max_points: int = MAX_CHART_POINTS) -> pd.DataFrame:
    """Long-form rows (step, loss, kind) of one run, cached until the run moves on."""
    history = run.history
    key = (run.step, len(history["val_loss"]), max_points)
    if run._frame is not None and run._frame_key == key:
        return run._frame
    steps = np.asarray(history["steps"], dtype=np.int64)  # (n_steps,)
    losses = np.asarray(history["train_loss"], dtype=np.float64)  # (n_steps,)
    smoothed = smooth(losses)  # (n_steps,)
    stride = max(1, math.ceil(len(steps) / max_points))
    keep = np.arange(len(steps))[::stride]
    if len(steps) and keep[-1] != len(steps) - 1:
        keep = np.append(keep, len(steps) - 1)  # the newest step is always drawn
    parts = [
        pd.DataFrame({"step": steps[keep], "loss": losses[keep], "kind": KIND_RAW}),
        pd.DataFrame({"step": steps[keep], "loss": smoothed[keep], "kind": KIND_SMOOTH}),
        pd.DataFrame({"step": np.asarray(history["val_steps"], dtype=np.int64),
                      "loss": np.asarray(history["val_loss"], dtype=np.float64), "kind": KIND_VAL}),
    ]
    frame = pd.concat([p for p in parts if len(p)], ignore_index=True) if len(steps) else \
        pd.DataFrame({"step": pd.Series(dtype="int64"), "loss": pd.Series(dtype="float64"),
                      "kind": pd.Series(dtype="object")})
    run._frame_key, run._frame = key, frame
    return frame


def loss_frame(runs: list[Run], max_points: int = MAX_CHART_POINTS) -> pd.DataFrame:
    """Rows (run, step, loss, kind) of several runs, for one overlaid chart."""
    frames = []
    for run in runs:
        frame = run_frame(run, max_points)
        if len(frame):
            frames.append(frame.assign(run=run.label or f"#{run.run_id}"))
    if not frames:
        return pd.DataFrame(columns=["step", "loss", "kind", "run"])
    return pd.concat(frames, ignore_index=True)


def _loss_layers(runs: tuple[str, ...], vocab_size: int, lecture: bool, title: str,
                 width: int, height: int) -> alt.LayerChart:
    """The loss chart without its data (rows come from the parent): the same for every tick."""
    runs = list(runs) or ["(no run yet)"]
    colours = palette(lecture)
    color = alt.Color("run:N", sort=runs, title="run",
                      scale=alt.Scale(domain=runs, range=[colours[i % len(colours)] for i in range(len(runs))]),
                      legend=alt.Legend(orient="bottom", columns=2, labelLimit=320))
    kind_legend = alt.Legend(orient="bottom", title=None, symbolStrokeColor="#444", symbolType="stroke")
    base = alt.Chart().encode(
        x=alt.X("step:Q", title="optimisation step", scale=alt.Scale(domainMin=0)),
        y=alt.Y("loss:Q", title="loss (nats per character)", scale=alt.Scale(zero=False)),
        color=color,
        tooltip=["run:N", "kind:N", "step:Q", alt.Tooltip("loss:Q", format=".3f")],
    )
    lines = base.mark_line().encode(
        detail="kind:N",
        strokeDash=alt.StrokeDash("kind:N", scale=alt.Scale(domain=list(KINDS),
                                  range=[[1, 0], [1, 0], [7, 4]]), legend=kind_legend),
        strokeWidth=alt.StrokeWidth("kind:N", scale=alt.Scale(domain=list(KINDS),
                                    range=[1, 3.5 if lecture else 2.5, 2.5 if lecture else 2]),
                                    legend=kind_legend),
        opacity=alt.Opacity("kind:N", scale=alt.Scale(domain=list(KINDS), range=[0.3, 1, 1]),
                            legend=kind_legend),
    )
    points = base.transform_filter(alt.datum.kind == KIND_VAL).mark_point(
        filled=True, size=110 if lecture else 70)
    uniform = math.log(max(2, vocab_size))
    rule_data = alt.InlineData(values=[{"uniform": uniform,
                                        "text": f"uniform guess: ln {vocab_size} = {uniform:.2f}"}])
    rule = alt.Chart(rule_data).mark_rule(color="#888", strokeDash=[2, 3]).encode(y="uniform:Q")
    rule_text = alt.Chart(rule_data).mark_text(align="left", dx=4, dy=-7, color="#555",
                                               fontSize=15 if lecture else 11).encode(
        y="uniform:Q", x=alt.value(4), text="text:N")
    return _padded(alt.layer(lines, points, rule, rule_text).properties(title=title, width=width,
                                                                         height=height))


@_fast_altair
def loss_chart(frame: pd.DataFrame, *, vocab_size: int = 27, lecture: bool = False,
               title: str = "Loss (nats per character)", width: int = 640,
               height: int = 340) -> alt.LayerChart:
    """Training loss per step (faint), smoothed (solid), validation (dashed, dots); one colour per
    run; a grey rule at ln(V), the loss of a uniform guess."""
    runs = tuple(dict.fromkeys(frame["run"])) if len(frame) else ()
    chart = _loss_layers(runs, vocab_size, lecture, title, width, height)
    chart.data = frame
    return chart


@functools.lru_cache(maxsize=64)
def _loss_spec_json(runs: tuple[str, ...], vocab_size: int, lecture: bool, width: int,
                    height: int) -> str:
    from core.viz import themed

    with debug_mode(False):
        chart = _loss_layers(runs, vocab_size, lecture, "Loss (nats per character)", width, height)
        spec = themed(chart, lecture).to_dict()
    # Altair gives layers without data an empty placeholder dataset; drop it so those layers read
    # the rows sent with each tick (the top-level data)
    spec.get("datasets", {}).pop("empty", None)
    for part in [spec] + spec.get("layer", []):
        if part.get("data") == {"name": "empty"}:
            del part["data"]
    return json.dumps(spec)


def loss_chart_spec(runs: tuple[str, ...], *, vocab_size: int = 27, lecture: bool = False,
                    width: int = 640, height: int = 340) -> dict:
    """The loss chart as a themed Vega-Lite spec without data, built once per set of runs.

    A tick only sends new rows: rebuilding and re-validating the Altair chart every half second
    would cost about a fifth of the training time."""
    return json.loads(_loss_spec_json(tuple(runs), vocab_size, lecture, width, height))


def chart_runs(book: RunBook, overlay: bool) -> list[Run]:
    """Runs drawn on the Train page's chart: the current one, plus the others when overlaid."""
    current = book.current
    if overlay:
        return [r for r in book.runs if r.step > 0 or r is current]
    return [current] if current is not None else []


@dataclass
class ChartView:
    """The loss chart of the Train page: its rows and its (cached, data-free) spec."""

    frame: pd.DataFrame  # the chart's rows (run, step, loss, kind)
    spec: dict  # the loss chart's Vega-Lite spec (themed, without data)
    vocab_size: int  # for the uniform-guess rule


def chart_view(book: RunBook, *, overlay: bool = True, lecture: bool = False) -> ChartView:
    """The loss chart's rows and spec for the runs on the Train page's chart."""
    run = book.current
    frame = loss_frame(chart_runs(book, overlay))
    vocab_size = run.tokenizer.vocab_size if run is not None else 27
    runs = tuple(dict.fromkeys(frame["run"])) if len(frame) else ()
    return ChartView(frame, loss_chart_spec(runs, vocab_size=vocab_size, lecture=lecture), vocab_size)


# =============================================================================================
# Checkpoints
# =============================================================================================


def run_to_checkpoint(run: Run) -> bytes:
    """The run's model, training config, vocabulary and loss history as a .pt file's bytes."""
    with run.lock:  # never between two halves of an optimizer step (see Run.lock)
        return save_checkpoint(run.model, run.trainer.config, run.tokenizer, run.history)


def run_from_checkpoint(data: bytes, file_name: str = "checkpoint.pt",
                        limits: budget.Limits = budget.LIMITS) -> Run:
    """A paused run holding an uploaded model: sample it, or add steps to train it further.

    Raises CheckpointError (a ValueError) with a clear message for a corrupt, foreign or oversized
    file; the caller's current runs are untouched whatever happens here.
    """
    checkpoint = load_checkpoint(data, max_bytes=UPLOAD_MAX_BYTES)
    model_config = checkpoint.model_config
    problems = budget.check_run_size(model_config.num_params(), 1, limits)
    if problems:
        raise CheckpointError("the uploaded model is too large for this server: " + " ".join(problems))
    if isinstance(checkpoint.config, TrainConfig):
        config = dataclasses.replace(checkpoint.config, device="auto")
    else:  # only the architecture was saved: train on with the quick demo's loop settings
        config = dataclasses.replace(_QUICK, model=model_config, device="auto")
    data = names_data(model_config.context_size)
    if checkpoint.tokenizer != data.tokenizer:
        raise CheckpointError(
            "this model was trained on another alphabet ("
            + "".join(checkpoint.tokenizer.vocab)[:40] + ") than the names here ("
            + "".join(data.tokenizer.vocab) + "), so its character ids mean something else")
    trainer = Trainer(config, data)
    state = trainer.state_dict()
    history = _clean_history(checkpoint.history, trainer.history)
    state["model"] = {k: v.clone() for k, v in checkpoint.model.state_dict().items()}
    state["history"] = history
    state["step"] = int(history["steps"][-1]) if history["steps"] else 0
    state["elapsed"] = float(history["elapsed"][-1]) if history["elapsed"] else 0.0
    state["tokens"] = int(history["tokens"][-1]) if history["tokens"] else 0
    state["config"]["max_steps"] = max(config.max_steps, state["step"], 1)
    trainer.load_state_dict(state)
    run = Run(run_id=0, settings=settings_from_config(trainer.config), trainer=trainer,
              status="paused", origin=str(file_name)[:80] or "checkpoint.pt")
    if trainer.done:
        run.status = "done"
    refresh_samples(run)
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
    except (AttributeError, TypeError, ValueError):
        return {key: [] for key in template}
    return out


# =============================================================================================
# Sample page
# =============================================================================================

LABEL_TITLES = {"new": "new", "train": "in the training split", "val": "in the validation split"}


def sample_for_page(run: Run, settings: SampleSettings) -> list[SampledName]:
    """The Sample page's names (ValueError for a prefix the model cannot read)."""
    prefix = clean_prefix(settings.prefix, run.tokenizer)
    train_set, val_set = split_sets(run)
    return sample_names(run.model, run.tokenizer, settings.n, temperature=settings.temperature,
                        top_k=settings.top_k or None, prefix=prefix, seed=settings.seed,
                        max_len=max(30, len(prefix) + 1), train_names=train_set, val_names=val_set)


def _in_alphabet(text: str, tokenizer: CharTokenizer, what: str) -> str:
    """`text` lower-cased and trimmed, or ValueError if it holds "." or characters outside the vocab."""
    text = str(text).strip().lower()
    if BOUNDARY_TOKEN in text:
        raise ValueError(f'{what} must not contain "." (it marks the start and end of a name).')
    unknown = sorted(set(text) - set(tokenizer.vocab))
    if unknown:
        raise ValueError(f"{what} has characters the model never saw: "
                         + ", ".join(repr(c) for c in unknown) + " (names use the letters a–z).")
    return text


def clean_prefix(prefix: str, tokenizer: CharTokenizer) -> str:
    """The prefix in the model's alphabet (lower-cased, spaces trimmed), or ValueError saying why."""
    return _in_alphabet(prefix, tokenizer, "the prefix")


def samples_table(samples: list[SampledName]) -> pd.DataFrame:
    """One row per sampled name: the name, its length and where it stands."""
    return pd.DataFrame({"name": [s.name or "(empty)" for s in samples],
                         "length": [len(s.name) for s in samples],
                         "where": [LABEL_TITLES[s.label] for s in samples]})


@_fast_altair
def shares_chart(samples: list[SampledName], *, lecture: bool = False) -> alt.LayerChart:
    """Bars: share of names that are new / in the training split / in the validation split."""
    shares = label_shares(samples)
    df = pd.DataFrame({"where": [LABEL_TITLES[k] for k in shares],
                       "share": list(shares.values()),
                       "count": [sum(s.label == k for s in samples) for k in shares]})
    df["text"] = [f"{s:.0%} ({c})" for s, c in zip(df["share"], df["count"])]
    colours = palette(lecture)
    base = alt.Chart(df).encode(
        y=alt.Y("where:N", sort=list(df["where"]), title=None, axis=alt.Axis(labelOverlap=False)),
        x=alt.X("share:Q", title="share of the sampled names", scale=alt.Scale(domain=[0, 1]),
                axis=alt.Axis(format="%")))
    bars = base.mark_bar().encode(color=alt.Color("where:N", sort=list(df["where"]), legend=None,
                                                  scale=alt.Scale(range=colours[:3])))
    text = base.mark_text(align="left", dx=4, fontSize=16 if lecture else 12).encode(text="text:N")
    return alt.layer(bars, text).properties(width=280, height=130 if not lecture else 170)


@dataclass
class NameSteps:
    """What the model weighed at every step of one name."""

    contexts: list[str]  # what the model had read before each step: ".", ".e", ".em", ...
    chosen: list[str]  # the character that actually came next ("." ends the name)
    probs: np.ndarray  # (steps, V) next-character probabilities
    vocab: list[str]  # column labels of probs


def name_steps(run: Run, name: str) -> NameSteps:
    """Next-character distributions along `name` (ValueError for characters the model lacks)."""
    probs = next_char_distributions(run.model, run.tokenizer, name).numpy()  # (len(name) + 1, V)
    text = BOUNDARY_TOKEN + name
    contexts = [text[: t + 1] for t in range(len(name) + 1)]
    chosen = list(name) + [BOUNDARY_TOKEN]
    return NameSteps(contexts, chosen, probs, run.tokenizer.vocab)


def steps_table(steps: NameSteps, top: int = 3) -> pd.DataFrame:
    """Per step: context, the character that came, its probability, the top alternatives."""
    rows = []
    for t, (context, char) in enumerate(zip(steps.contexts, steps.chosen)):
        p = steps.probs[t]  # (V,)
        order = np.argsort(-p)[:top]
        rows.append({"step": t, "read so far": context, "next": char,
                     "p(next)": float(p[steps.vocab.index(char)]),
                     "most likely": ", ".join(f"{steps.vocab[i]} {p[i]:.2f}" for i in order)})
    return pd.DataFrame(rows)


@_fast_altair
def step_bars_chart(steps: NameSteps, step: int, *, lecture: bool = False) -> alt.LayerChart:
    """Probability of every next character at one step; the character that came is highlighted."""
    p = steps.probs[step]  # (V,)
    chosen = steps.vocab.index(steps.chosen[step])
    labels = ["end (.)" if c == BOUNDARY_TOKEN else c for c in steps.vocab]
    colours = palette(lecture)
    df = pd.DataFrame({"char": labels, "p": p, "came": [i == chosen for i in range(len(p))],
                       "text": [f"{v:.2f}" if v >= 0.005 else "" for v in p]})
    base = alt.Chart(df).encode(x=alt.X("char:N", sort=labels, title="next character",
                                        axis=alt.Axis(labelAngle=0)),
                                y=alt.Y("p:Q", title="probability", scale=alt.Scale(domain=[0, 1])))
    bars = base.mark_bar().encode(
        color=alt.condition("datum.came", alt.value(colours[1]), alt.value(colours[0])),
        tooltip=["char:N", alt.Tooltip("p:Q", format=".4f")])
    text = base.mark_text(dy=-7, fontSize=13 if lecture else 9).encode(text="text:N")
    title = (f"After “{steps.contexts[step]}”: the model gave "
             f"“{steps.chosen[step]}” p = {p[chosen]:.2f}")
    return alt.layer(bars, text).properties(title=title, width=34 * len(labels) if lecture else 24 * len(labels),
                                            height=240)


@_fast_altair
def steps_heatmap(steps: NameSteps, *, lecture: bool = False) -> alt.LayerChart:
    """Every step at once: rows = what was read, columns = next character, colour = probability."""
    cols = ["." if c == BOUNDARY_TOKEN else c for c in steps.vocab]
    rows = [f"{ctx} → {nxt}" for ctx, nxt in zip(steps.contexts, steps.chosen)]
    return heatmap(steps.probs, rows, cols, x_title="next character",
                   y_title="read so far → what came", fmt=".1f", lecture=lecture,
                   cell=26 if not lecture else 32, show_values=False, domain=(0.0, 1.0))


# =============================================================================================
# Inside the model
# =============================================================================================


@dataclass
class Inspection:
    """Everything the Inside page shows for one typed name."""

    tokens: list[str]  # ".", then the characters of the name (what the model reads)
    attn: np.ndarray  # (n_layer, n_head, T, T) attention weights: query rows, key columns
    probs: np.ndarray  # (T, V) next-character probabilities at each position
    vocab: list[str]  # column labels of probs
    truncated: bool  # the name was longer than the context and was cut
    causal: bool = True  # the model hides the future (False: trained with the mask off)


def clean_name(name: str, tokenizer: CharTokenizer) -> str:
    """The typed name in the model's alphabet, or ValueError saying what is wrong."""
    if not str(name).strip():
        raise ValueError("type a name (letters a–z).")
    return _in_alphabet(name, tokenizer, "the name")


@torch.no_grad()
def inspect_name(model: GPT, tokenizer: CharTokenizer, name: str) -> Inspection:
    """Attention weights of every layer and head, and next-character probabilities, for `name`."""
    text = clean_name(name, tokenizer)
    block = model.config.context_size
    truncated = len(text) + 1 > block
    tokens = [BOUNDARY_TOKEN] + list(text[: block - 1])
    device = next(model.parameters()).device
    idx = torch.tensor([tokenizer.encode("".join(tokens))], dtype=torch.long, device=device)  # (1, T)
    was_training = model.training
    model.eval()
    try:
        logits, _, attn_list = model(idx, return_attn=True)  # (1, T, V), [(1, n_head, T, T)] * n_layer
    finally:
        model.train(was_training)
    attn = torch.stack([a[0] for a in attn_list]).cpu().numpy()  # (n_layer, n_head, T, T)
    probs = torch.softmax(logits[0], dim=-1).cpu().numpy()  # (T, V)
    return Inspection(tokens, attn, probs, tokenizer.vocab, truncated, model.config.causal)


def attention_grid_frame(inspection: Inspection) -> pd.DataFrame:
    """Long-form rows (layer, head, query, key, weight, masked) of every attention map."""
    from core.viz import unique_labels

    n_layer, n_head, T, _ = inspection.attn.shape
    labels = np.asarray(unique_labels(inspection.tokens), dtype=object)
    layer, head, q, k = np.meshgrid(np.arange(n_layer), np.arange(n_head), np.arange(T), np.arange(T),
                                    indexing="ij")
    weights = inspection.attn.reshape(-1)  # (n_layer * n_head * T * T,)
    return pd.DataFrame({
        "layer": [f"layer {i + 1}" for i in layer.ravel()],
        "head": [f"head {i + 1}" for i in head.ravel()],
        "query": labels[q.ravel()], "key": labels[k.ravel()],
        "weight": weights,
        # a causal model gives exactly 0 to the future; grey says "masked", not "ignored"
        "masked": (k.ravel() > q.ravel()) & inspection.causal,
    })


@_fast_altair
def attention_grid_chart(inspection: Inspection, *, lecture: bool = False,
                         cell: int | None = None) -> alt.FacetChart:
    """Small multiples: one row per layer, one map per head (queries down, keys across)."""
    from core.viz import unique_labels

    T = len(inspection.tokens)
    cell = cell or max(12, min(28 if not lecture else 32, int(220 / max(T, 1))))
    order = unique_labels(inspection.tokens)
    df = attention_grid_frame(inspection)
    scheme = "viridis" if lecture else "blues"
    heat = alt.Chart(df).mark_rect(stroke="white", strokeWidth=0.5).encode(
        x=alt.X("key:N", sort=order, title="key (attended to)", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("query:N", sort=order, title="query"),
        color=alt.condition("datum.masked", alt.value("#BBBBBB"),
                            alt.Color("weight:Q", title="weight",
                                      scale=alt.Scale(scheme=scheme, domain=[0, 1]))),
        tooltip=["layer:N", "head:N", "query:N", "key:N", alt.Tooltip("weight:Q", format=".3f")],
    ).properties(width=cell * T, height=cell * T)
    n_layer, n_head = inspection.attn.shape[:2]
    return heat.facet(
        row=alt.Row("layer:N", sort=[f"layer {i + 1}" for i in range(n_layer)], title=None,
                    header=alt.Header(labelFontSize=16 if lecture else 12, labelFontWeight="bold")),
        column=alt.Column("head:N", sort=[f"head {i + 1}" for i in range(n_head)], title=None,
                          header=alt.Header(labelFontSize=16 if lecture else 12, labelFontWeight="bold")),
        spacing=10,
    )


@_fast_altair
def attention_head_chart(inspection: Inspection, layer: int, head: int, *,
                         lecture: bool = False) -> alt.LayerChart:
    """One head, large, with the weight written in every cell."""
    return heatmap(inspection.attn[layer, head], inspection.tokens, inspection.tokens,
                   title=f"Layer {layer + 1}, head {head + 1}: attention weights",
                   x_title="key (the character attended to)", y_title="query (the position reading)",
                   fmt=".2f", lecture=lecture, domain=(0.0, 1.0))


@_fast_altair
def next_char_chart(inspection: Inspection, *, lecture: bool = False) -> alt.LayerChart:
    """Rows = positions (what was read so far), columns = characters, colour = p(next)."""
    text = "".join(inspection.tokens)
    rows = [f"{text[: t + 1]}" for t in range(len(inspection.tokens))]
    cols = list(inspection.vocab)
    return heatmap(inspection.probs, rows, cols, x_title="next character",
                   y_title="read so far", lecture=lecture, show_values=False,
                   cell=26 if not lecture else 30, domain=(0.0, 1.0))


def top_predictions(inspection: Inspection, k: int = 3) -> pd.DataFrame:
    """Per position: what was read, the k most likely next characters and their probabilities."""
    text = "".join(inspection.tokens)
    rows = []
    for t in range(len(inspection.tokens)):
        order = np.argsort(-inspection.probs[t])[:k]
        rows.append({"position": t, "read so far": text[: t + 1],
                     "actually next": text[t + 1] if t + 1 < len(text) else "(end or beyond)",
                     "most likely next": ", ".join(f"{inspection.vocab[i]} {inspection.probs[t, i]:.2f}"
                                                   for i in order)})
    return pd.DataFrame(rows)


VOWELS = set("aeiou")


def char_group(char: str) -> str:
    if char == BOUNDARY_TOKEN:
        return "start/end ."
    return "vowel" if char in VOWELS else "consonant"


def embedding_matrix(model: GPT) -> np.ndarray:
    return model.token_embedding.weight.detach().cpu().numpy()  # (V, d_embed)


@_fast_altair
def embedding_heatmap(model: GPT, tokenizer: CharTokenizer, *, lecture: bool = False) -> alt.LayerChart:
    """The token embedding matrix: one row per character, one column per dimension."""
    weights = embedding_matrix(model)  # (V, d_embed)
    limit = float(np.abs(weights).max()) or 1.0
    cell = max(6, min(20, int(900 / weights.shape[1])))
    chart = heatmap(weights, tokenizer.vocab, [str(i) for i in range(weights.shape[1])],
                    x_title="embedding dimension", y_title="character", lecture=lecture,
                    scheme="redblue", cell=cell, show_values=False, domain=(-limit, limit))
    return chart.properties(height=16 * weights.shape[0] if not lecture else 20 * weights.shape[0])


def embedding_pca(model: GPT, tokenizer: CharTokenizer) -> tuple[pd.DataFrame, np.ndarray]:
    """2-D PCA of the character embeddings: rows (char, PC1, PC2, group), explained variance ratios."""
    from sklearn.decomposition import PCA  # imported here: only this page needs it

    weights = embedding_matrix(model)  # (V, d_embed)
    pca = PCA(n_components=2, random_state=0)
    coords = pca.fit_transform(weights)  # (V, 2)
    # PCA's sign is arbitrary: fix it so the picture does not flip between runs of the page
    for dim in range(2):
        if coords[int(np.argmax(np.abs(coords[:, dim]))), dim] < 0:
            coords[:, dim] *= -1
    df = pd.DataFrame({"char": tokenizer.vocab, "PC1": coords[:, 0], "PC2": coords[:, 1],
                       "group": [char_group(c) for c in tokenizer.vocab]})
    return df, pca.explained_variance_ratio_


@_fast_altair
def pca_chart(df: pd.DataFrame, ratios: np.ndarray, *, lecture: bool = False) -> alt.LayerChart:
    """Labelled scatter of the 2-D PCA, coloured vowel / consonant / boundary."""
    colours = palette(lecture)
    groups = ["vowel", "consonant", "start/end ."]
    x_title = f"PC1 ({ratios[0]:.0%} of the variance)"
    y_title = f"PC2 ({ratios[1]:.0%} of the variance)"
    base = alt.Chart(df).encode(x=alt.X("PC1:Q", title=x_title), y=alt.Y("PC2:Q", title=y_title))
    points = base.mark_circle(size=200 if lecture else 110, opacity=0.9).encode(
        color=alt.Color("group:N", sort=groups, title=None,
                        scale=alt.Scale(domain=groups, range=[colours[1], colours[0], colours[2]]),
                        legend=alt.Legend(orient="bottom")),
        tooltip=["char:N", "group:N", alt.Tooltip("PC1:Q", format=".3f"), alt.Tooltip("PC2:Q", format=".3f")])
    text = base.mark_text(dx=9, dy=-4, align="left", fontSize=18 if lecture else 13,
                          fontWeight="bold").encode(text="char:N")
    return alt.layer(points, text).properties(width=480, height=400)


def vowel_separation(df: pd.DataFrame) -> float:
    """Distance between the vowel and consonant centroids in the PCA plane, over the mean spread
    (a number that grows as training separates the two groups)."""
    vowels = df[df["group"] == "vowel"][["PC1", "PC2"]].to_numpy()
    consonants = df[df["group"] == "consonant"][["PC1", "PC2"]].to_numpy()
    if len(vowels) == 0 or len(consonants) == 0:
        return 0.0
    gap = np.linalg.norm(vowels.mean(0) - consonants.mean(0))
    spread = np.concatenate([vowels - vowels.mean(0), consonants - consonants.mean(0)])
    return float(gap / (np.linalg.norm(spread, axis=1).mean() + 1e-12))


@functools.lru_cache(maxsize=16)
def _initial_separation(config_items: tuple, seed: int) -> float:
    model = GPT(GPTConfig(**dict(config_items)), seed=seed)
    tokenizer = CharTokenizer.from_text("abcdefghijklmnopqrstuvwxyz"[: model.config.vocab_size - 1])
    return vowel_separation(embedding_pca(model, tokenizer)[0])


def initial_separation(run: Run) -> float:
    """Vowel/consonant separation of the same model before training (same architecture, seed)."""
    config = run.trainer.config
    return _initial_separation(tuple(sorted(config.model.to_dict().items())), config.seed)

