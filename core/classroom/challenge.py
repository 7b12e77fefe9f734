"""The class challenge, judged by the server: a submitted names-GPT checkpoint in, a score out.

A submission is the bytes of a finished run's checkpoint (`core.runs.run_to_checkpoint`, the same
file the Train page downloads). Nothing the client says is believed:
* the file goes through `core.checkpoints.load_checkpoint` (size and zip checks, then
  `torch.load(weights_only=True)`, so a pickle payload is refused without running anything, then
  format, shapes and finite weights), with a size limit derived from the challenge's parameter limit;
* the parameter count is counted from the weights, and the model must be causal (a model that sees
  the next characters would "predict" them and win unfairly);
* the validation loss is computed here, on the held-out split of the names data (the split every run
  of the Train page uses), and five names are sampled with a fixed seed;
* training time is a number the weights cannot prove: `evaluate_run` takes it from the run object the
  server trained itself, and refuses runs that started from an uploaded file.
Every refusal is a `SubmissionError` (a ClassroomError, so a ValueError) with a message to show.
"""

from __future__ import annotations

import functools
import math
import urllib.parse
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from core.checkpoints import MAX_BYTES, CheckpointError, load_checkpoint
from core.classroom.security import ClassroomError, escape_markdown
from core.data import IGNORE_INDEX
from core.runs import names_data, run_to_checkpoint
from core.sampling import sample_names
from core.settings import to_params
from core.train_settings import PRESET_SECONDS, settings_from_config
from core.training import TrainConfig, preset_config

SAMPLE_SEED = 2024  # the same five-name draw for every entry, so the board compares like with like
N_SAMPLES = 5
EVAL_BATCH = 512  # validation windows per forward pass


class SubmissionError(ClassroomError):
    """A submission was refused; the message says why."""


# ------------------------------------------------------------------------------ default limits
# The limits a lecturer's "Open a challenge" form starts with, derived from the Train page's presets
# (core.training.PRESETS) so that they follow the presets when those change. A student who opens the
# Train page and presses Start trains the quick demo (the page's default); with the limits before
# (50,000 parameters, 60 s) no preset shown on a laptop could enter, and a student found out only
# after training. So the defaults admit the quick demo and the lecture's own model, and no larger
# preset: the challenge is to do better than those within their size and time.
FITTING_PRESETS = ("quick_demo", "lecture")  # the presets the default limits admit (on a CPU)
PARAMS_ROUNDING = 10_000  # the parameter limit is rounded up to this: 160,000, not 154,331
# The time limit is judged on the run's training seconds (`trained_seconds`: the server's clock over
# its optimizer steps; validation, page redraws and waiting for the server's training slot excluded),
# which is a little less than the wall time the preset buttons show (PRESET_SECONDS, Start to the last
# step in the browser: 39.1 s for the quick demo on a quiet 2-core machine, 30.5 s for Lecture 7 on a
# busy server). Headless at one torch thread on a 2-core machine (measured for this default) the quick demo trained
# 36.3 s and Lecture 7 16.4 s. A class shares one server, and on a loaded one every step takes longer
# (other sessions' page runs hold the core and the GIL while a step runs), so the default allows 3
# times the slower preset's measured figure, rounded up to half a minute: 3 x 39.1 s -> 120 s, over
# three times the quick demo's training seconds. The larger presets would fit that time on a quick
# machine, but not the parameter limit.
SECONDS_MARGIN = 3.0
SECONDS_ROUNDING = 30.0


@functools.lru_cache(maxsize=64)  # the presets are fixed; the Train page asks on every rerun
def preset_params(name: str, device: str = "cpu") -> int:
    """Parameters of preset `name` for a run on `device` (its GPU version on a CUDA GPU)."""
    return preset_config(name, device).model.num_params()


def default_limits() -> "ChallengeLimits":
    """The limits a new challenge starts with (see FITTING_PRESETS): the larger of the fitting
    presets' parameter counts and SECONDS_MARGIN times the slower one's measured CPU time, rounded up."""
    params = max(preset_params(name) for name in FITTING_PRESETS)
    seconds = max(PRESET_SECONDS[(name, "cpu")][0] for name in FITTING_PRESETS) * SECONDS_MARGIN
    return ChallengeLimits(max_params=math.ceil(params / PARAMS_ROUNDING) * PARAMS_ROUNDING,
                           max_seconds=math.ceil(seconds / SECONDS_ROUNDING) * SECONDS_ROUNDING)


def presets_within(max_params: int, names, device: str = "cpu") -> tuple[list[str], list[str]]:
    """(the presets among `names` whose model has at most `max_params` parameters, those over it),
    each in the order given: what the Train page's challenge box says before anyone trains."""
    fits, too_big = [], []
    for name in names:
        (fits if preset_params(name, device) <= max_params else too_big).append(name)
    return fits, too_big


@dataclass(frozen=True)
class ChallengeLimits:
    """What a challenge allows."""

    max_params: int  # parameters of the model, counted from its weights
    max_seconds: float  # seconds of training, as measured by the server that trained it

    @property
    def max_bytes(self) -> int:
        """Largest checkpoint file accepted: float32 weights (with room for float64) plus the history."""
        return min(MAX_BYTES, 8 * self.max_params + 2_000_000)


@dataclass(frozen=True)
class Evaluation:
    """The server's verdict on a submission (what `ClassroomStore.submit` stores)."""

    val_loss: float  # mean cross-entropy per character on the held-out names, computed here
    n_params: int
    steps: int  # training steps of the run
    seconds: float  # training seconds of the run (server-measured, see evaluate_run)
    settings: dict  # the run's settings as Train-page query parameters (a link reproduces them)
    samples: list[str]  # five names sampled with SAMPLE_SEED


def evaluate_submission(data: bytes, limits: ChallengeLimits, *, trained_seconds: float,
                        steps: int | None = None) -> Evaluation:
    """Check and score checkpoint bytes. `trained_seconds` (and `steps`) come from the server's
    own record of the run, never from the file."""
    try:
        checkpoint = load_checkpoint(data, max_bytes=limits.max_bytes)
    except CheckpointError as exc:
        raise SubmissionError(f"This file cannot enter the challenge: {_shown(exc)}.") from None
    model, config = checkpoint.model, checkpoint.model_config
    n_params = sum(p.numel() for p in model.parameters())
    if n_params > limits.max_params:
        raise SubmissionError(f"The model has {n_params:,} parameters; this challenge allows at most "
                              f"{limits.max_params:,}.")
    if not config.causal:
        raise SubmissionError("The model is not causal (it sees the characters it should predict); "
                              "only causal models can enter.")
    seconds = float(trained_seconds)
    if not math.isfinite(seconds) or seconds < 0:
        raise SubmissionError("The run's training time is unknown, so it cannot enter.")
    if seconds > limits.max_seconds:
        raise SubmissionError(f"The run trained for {seconds:.1f} s; this challenge allows at most "
                              f"{limits.max_seconds:g} s.")
    data_split = names_data(config.context_size)  # the Train page's split, shared and cached
    if checkpoint.tokenizer != data_split.tokenizer:
        raise SubmissionError("This model was trained on another alphabet than the class's names.")

    val_loss = validation_loss(model, data_split.val_x, data_split.val_y)
    if not math.isfinite(val_loss):
        raise SubmissionError("The model's validation loss is not a finite number; it cannot enter.")
    samples = sample_names(model, checkpoint.tokenizer, N_SAMPLES, seed=SAMPLE_SEED, max_len=30)
    train_config = checkpoint.config if isinstance(checkpoint.config, TrainConfig) else None
    settings = to_params(settings_from_config(train_config)) if train_config is not None else {}
    if steps is None:
        steps = _last_step(checkpoint.history)
    return Evaluation(val_loss=val_loss, n_params=n_params, steps=int(steps), seconds=seconds,
                      settings=settings, samples=[s.name for s in samples])


def evaluate_run(run, limits: ChallengeLimits) -> Evaluation:
    """Score a finished run of the Train page (a core.runs.Run this server trained)."""
    if run.origin:
        raise SubmissionError("This run started from an uploaded file, so its training time cannot be "
                              "checked; train a run here to enter.")
    if run.status == "running":
        raise SubmissionError("The run is still training; pause or stop it, then submit.")
    if run.step < 1:
        raise SubmissionError("This run has not trained yet.")
    return evaluate_submission(run_to_checkpoint(run), limits, trained_seconds=trained_seconds(run),
                               steps=run.step)


def trained_seconds(run) -> float:
    """The run's training seconds as the server measured them (what the time limit is judged on)."""
    elapsed = run.history.get("elapsed") or [0.0]
    return float(elapsed[-1])


def run_figures(run) -> tuple[int, int, float]:
    """What the store recognises a run at its current step by (ClassroomStore.entry_of): its steps,
    parameter count and training seconds. The store keeps no run id; the seconds are measured by the
    server's clock to the microsecond, so two runs never share them, and a run trained further since
    its submission has more steps and seconds, so it can enter again."""
    return int(run.step), int(run.n_params), trained_seconds(run)


def _last_step(history: dict) -> int:
    """The last step the file's history names (display only); 0 when it names none sensibly."""
    try:
        return max(0, int((history.get("steps") or [0])[-1]))
    except (TypeError, ValueError, OverflowError):
        return 0


def _shown(exc: Exception, max_chars: int = 300) -> str:
    """A loader's message made fit for st.error: it may quote the file (a format tag), so it is cut
    short and its Markdown characters are escaped."""
    text = str(exc)
    return escape_markdown(text if len(text) <= max_chars else text[:max_chars] + "…")


def settings_query(settings: dict) -> str:
    """The query string that opens the Train page on an entry's settings ("n_layer=2&lr=0.004");
    the page reads it like any link (core.settings.from_params refuses bad values with a notice)."""
    return urllib.parse.urlencode({str(k): str(v) for k, v in settings.items()})


@torch.no_grad()
def validation_loss(model: torch.nn.Module, val_x: torch.Tensor, val_y: torch.Tensor) -> float:
    """Mean cross-entropy per real (non-padding) target over all validation windows."""
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    try:
        for start in range(0, len(val_x), EVAL_BATCH):
            x, y = val_x[start:start + EVAL_BATCH], val_y[start:start + EVAL_BATCH]  # (b, T)
            logits, _ = model(x)  # (b, T, V)
            loss_sum = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1),
                                       ignore_index=IGNORE_INDEX, reduction="sum")
            total += float(loss_sum)
            count += int((y != IGNORE_INDEX).sum())
    finally:
        model.train(was_training)
    return total / max(1, count)
