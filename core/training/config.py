"""What defines a training run of the names GPT: `TrainConfig`, its validation, its learning-rate schedule.

Every hyper-parameter is one field declared with `spec(...)` (core.settings): the Train page, links,
lesson files, run labels and `TrainConfig.validate` all read the same bounds and choices from it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from core.device import REQUEST_NAMES
from core.models import GPTConfig
from core.settings import check_fields, check_value, field_type, spec

OPTIMIZERS = ("adamw", "muon", "sgd")
SCHEDULES = ("constant", "cosine")
AUTOCAST_MODES = ("auto", "bf16", "off")


@dataclass
class TrainConfig:
    """Everything that defines a training run of the names GPT (besides the data).

    Each field is declared with `spec(default, ...)` (core.settings): its bounds or choices, the
    label of its control, its group on the Train page, its wording in run labels (`short`), and
    `none_is` for a None default. The Train page, links, lesson files and run labels derive from
    it (core/train_settings.py): a new field needs no other edit. A field that is no page control
    says why with `internal="..."`.
    """

    model: GPTConfig = field(default_factory=GPTConfig)  # architecture (vocab_size is taken from the data)
    # "adamw", "muon" (Muon for the blocks' matrices, AdamW for the rest; core.training.muon) or "sgd";
    # the lecture used SGD, which converges slowly
    optimizer: str = spec("adamw", choices=OPTIMIZERS, group="training", label="Optimizer",
                          choice_labels={"adamw": "AdamW", "muon": "Muon + AdamW", "sgd": "SGD"},
                          help="Muon + AdamW: the weight matrices inside the blocks take Muon steps (each "
                               "update orthogonalised, so all its directions move alike), the rest AdamW. "
                               "On the names it needs about half of AdamW's steps for the same loss.",
                          short="{}")
    # peak learning rate (the lecture: 0.01 with SGD)
    lr: float = spec(3e-3, min=1e-6, max=10.0, step=0.001, format="%g", group="training",
                     label="Learning rate", short="lr {:g}")
    # decay of weight matrices and embeddings (never biases or LayerNorm)
    weight_decay: float = spec(0.01, min=0.0, max=10.0, step=0.01, format="%g", group="fine print",
                               label="Weight decay", short="decay {:g}")
    # name windows per optimisation step (rows of pack_length tokens when packing)
    batch_size: int = spec(32, min=1, max=1024, step=16, group="training", label="Batch size",
                           short="batch {}")
    # length of the run in optimisation steps
    max_steps: int = spec(1000, min=1, max=100_000, step=100, group="training", label="Steps",
                          short="{:,} steps")
    # evaluate on the validation split every this many steps (and at the end)
    val_interval: int = spec(100, min=1, max=100_000, step=50, group="training",
                             label="Validate every (steps)")
    # batches of eval_batch_size per validation; None = the full split
    val_batches: int | None = spec(None, min=0, max=10_000, step=1, none_is=0, group="more",
                                   label="Validation batches (0 = the whole split)",
                                   help="Fewer batches measure the validation loss faster, on part of the split.",
                                   short="val on {} batches", short_off="full val")
    # windows per forward pass in evaluate(); speed only, same result
    eval_batch_size: int = spec(1024, min=1, max=8192, step=256, group="more",
                                label="Evaluation batch size (speed only)")
    # seeds the initial weights, the batch order and the dropout masks
    seed: int = spec(101, min=0, max=2**31 - 1, step=1, group="training", label="Seed",
                     help="Fixes the initial weights, the batch order and the dropout masks.",
                     short="seed {}")
    # "auto", "cpu", "cuda" or "mps"; an absent device falls back to the CPU
    device: str = spec("auto", choices=REQUEST_NAMES, group="fine print", label="Device",
                       choice_labels={"auto": "auto (best available)", "cpu": "CPU", "cuda": "CUDA GPU",
                                      "mps": "Apple GPU (MPS)"},
                       short="{}")
    # pack whole names into rows of this many tokens (None: one window a row)
    pack_length: int | None = spec(None, min=0, max=256, step=8, none_is=0, group="fine print",
                                   label="Pack names into rows of (tokens, 0 = off)",
                                   help="Whole names back to back in each row, each attending only to "
                                        "itself: no compute is spent on padding. The batch size then "
                                        "counts rows.",
                                   short="packed {}", short_off="not packed")
    # clip the global gradient norm to this value; None = no clipping
    grad_clip: float | None = spec(None, min=0.0, max=1000.0, step=0.5, format="%g", none_is=0.0,
                                   group="fine print", label="Gradient clipping (0 = off)",
                                   short="clip {:g}", short_off="no clip")
    # learning rate after warm-up: "constant" or "cosine" decay to the end
    schedule: str = spec("constant", choices=SCHEDULES, group="fine print", label="Learning-rate schedule",
                         short="{} lr")
    # linear warm-up from ~0 to lr over this many steps
    warmup_steps: int = spec(0, min=0, max=100_000, step=50, group="fine print", label="Warm-up steps",
                             short="warm-up {}")
    # the cosine schedule ends at lr * min_lr_ratio
    min_lr_ratio: float = spec(0.1, min=0.0, max=1.0, step=0.05, format="%g", group="fine print",
                               label="Cosine ends at (share of the peak lr)",
                               short="final lr ×{:g}")
    # bfloat16 autocast of the training forward pass on a CUDA GPU that supports it: "auto" (only for
    # CUDA-graph steps, where it pays), "bf16" (always) or "off"; never on the CPU
    autocast: str = spec("auto", choices=AUTOCAST_MODES,
                         internal="GPU speed: the engine picks it for the run's device")
    # read training losses back to the host every this many steps; None: 1 on the CPU, 32 on a GPU
    loss_read_every: int | None = spec(None, min=1, max=10_000,
                                       internal="GPU speed: one host sync per this many steps")
    # on a CUDA GPU with packed rows, replay each training step as one recorded CUDA graph
    cuda_graph: bool = spec(True, internal="GPU speed: far less CPU work per step; no effect elsewhere")
    # keep a copy of the weights at the lowest validation loss; at max_steps the model gets them back
    restore_best: bool = spec(False, group="more", label="End with the weights of the best validation point",
                              help="Keeps a copy of the weights whenever the validation loss is the lowest "
                                   "so far; at the last step the model gets that copy back (the curve "
                                   "still shows the whole run). Early stopping without cutting the run short.",
                              short={True: "best weights kept", False: "last weights"})
    # an exponential moving average of the weights (core/training/average.py); None = off. Validation,
    # sampling and saved models use the average; training steps go on from the trained weights
    ema_decay: float | None = spec(None, min=0.0, max=0.9999, step=0.001, format="%g", none_is=0.0, group="more",
                                   label="Average of the weights (EMA decay, 0 = off)",
                                   help="Validation, sampling and the saved model use a running average of "
                                        "the weights instead of the last step's weights: smoother, and "
                                        "usually a lower validation loss once the model starts to over-fit. "
                                        "After each step: average = decay × average + (1 − decay) × weights, "
                                        "so 0.99 averages over about the last 100 steps, 0.999 over about "
                                        "1,000. Training itself goes on from the last weights.",
                                   short="EMA {:g}", short_off="no EMA")

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ValueError with a readable message naming the field for any setting that cannot run.

        Each field is checked against its own `spec(...)` (type, bounds, choices), the very rules of
        the Train page's controls (core.settings.check_fields); below are the rules spec cannot say.
        """
        if not isinstance(self.model, GPTConfig):
            raise ValueError("model must be a GPTConfig")
        self.model.validate()
        check_fields(self, skip=("device",))
        # a device may name its index ("cuda:1"): its kind is what must be known
        device_kind = str(self.device).lower().partition(":")[0]
        check_value("device", device_kind, str, field_rules("device"))
        if self.pack_length is not None:
            if self.pack_length < self.model.context_size:
                raise ValueError(f"pack_length must be at least the context size ({self.model.context_size}) "
                                 f"to hold a window, got {self.pack_length}")
            if not self.model.causal:
                raise ValueError("pack_length needs the causal mask (names in a packed row must not see each other)")

    def to_dict(self) -> dict:
        """Plain values only (nested dict for the model), for checkpoints and URLs."""
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> "TrainConfig":
        """Inverse of to_dict; unknown keys are an error."""
        if not isinstance(values, dict):
            raise ValueError(f"training config must be a mapping, got {type(values).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown training config fields: {', '.join(map(str, unknown))}")
        values = dict(values)
        if "model" in values and not isinstance(values["model"], GPTConfig):
            values["model"] = GPTConfig.from_dict(values["model"])
        return cls(**values)


_FIELDS = {f.name: f for f in fields(TrainConfig)}


def field_rules(name: str) -> dict[str, Any]:
    """The `spec(...)` rules of TrainConfig's field `name` (bounds, choices, label, ...)."""
    return dict(_FIELDS[name].metadata)


def check_setting(name: str, value: Any) -> None:
    """Raise ValueError naming the field unless `value` may be TrainConfig's field `name`."""
    check_value(name, value, field_type(TrainConfig, name), field_rules(name))


def learning_rate(config: TrainConfig, step: int) -> float:
    """Learning rate for optimisation step `step` (0-based): linear warm-up, then constant or cosine."""
    if step < config.warmup_steps:
        return config.lr * (step + 1) / config.warmup_steps
    if config.schedule == "constant":
        return config.lr
    decay_steps = max(1, config.max_steps - config.warmup_steps)
    progress = min(1.0, (step - config.warmup_steps) / decay_steps)  # 0 -> 1 over the decay
    min_lr = config.lr * config.min_lr_ratio
    return min_lr + 0.5 * (config.lr - min_lr) * (1.0 + math.cos(math.pi * progress))
