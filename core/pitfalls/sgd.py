"""Pitfall 6: SGD at lr 0.01 against AdamW (document 000, lecture 7, `train`).

Buggy: `buggy_sgd_config`, the lecture's run (`core.training.lecture_config`: SGD, lr 0.01).
Fixed: `fixed_adamw_config`, the same run with AdamW (`core.training.make_optimizer` builds it).
Demo: `OptimizerRace`, two `core.training.Trainer` runs from the same seed on the same batches, a
`core.live_training.TrainerGroup`, so the page trains it a slice per tick through the app's one
live-training protocol (`advance(budget_s, slot)`, `done`, `history`); `race_result` is what a
finished race keeps, and `FinishedRaces` shares finished races between sessions.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import ContextManager

import numpy as np
import pandas as pd
import torch

from core.data import NamesData
from core.training import TrainConfig, Trainer, lecture_config, make_optimizer
from core.live_training import Outcome, TrainerGroup
from core.models import GPT, GPTConfig
from core.pitfalls.common import Pitfall
from core.runs import KIND_RAW, KIND_SMOOTH, KIND_VAL, smooth

PITFALL = Pitfall(
    "sgd", "SGD at lr 0.01 against AdamW",
    "Document 000 (lecture 7), `train`",
    "Plain SGD at lr 0.01 converges slowly: after the same steps its validation loss is higher than "
    "AdamW's at a learning rate that suits it (0.003 here; at SGD's 0.01, AdamW ends no better than SGD).",
    "SGD moves every weight by lr × gradient, and the gradients of a small transformer are tiny "
    "and badly scaled; AdamW divides each by its own running size, so every weight moves.")
ADAMW_LRS = (0.001, 0.003, 0.01)  # AdamW learning rates offered on the page
RaceKey = tuple  # (steps, seed, adamw_lr): the settings that decide a race's numbers


def buggy_sgd_config(steps: int, seed: int) -> TrainConfig:
    """The lecture's run: its GPTConfig, batch 32, plain SGD at lr 0.01 (shortened to `steps`)."""
    config = lecture_config()  # core.training: optimizer="sgd", lr=0.01, no weight decay
    return replace(config, max_steps=steps, seed=seed, device="cpu")


def fixed_adamw_config(steps: int, seed: int, lr: float = 0.003) -> TrainConfig:
    """The same model, data, batches and steps; only the optimizer changes to AdamW."""
    config = buggy_sgd_config(steps, seed)
    return replace(config, optimizer="adamw", lr=lr, weight_decay=0.01)


RACE_VAL_WINDOWS = 1024  # curve points are measured on this many held-out windows (one eval batch)


def optimizer_race_configs(steps: int, seed: int, adamw_lr: float) -> dict[str, TrainConfig]:
    """The two runs of the race, by label, with the same measuring schedule: a validation point
    every tenth of the run (at least every 10 steps) on the first RACE_VAL_WINDOWS held-out windows,
    because a full pass per point would cost more than the training itself."""
    measure = {"val_interval": max(10, steps // 10), "val_batches": 1, "eval_batch_size": RACE_VAL_WINDOWS}
    return {"SGD lr 0.01 (lecture)": replace(buggy_sgd_config(steps, seed), **measure),
            f"AdamW lr {adamw_lr:g}": replace(fixed_adamw_config(steps, seed, adamw_lr), **measure)}


def optimizer_table(steps: int, seed: int, adamw_lr: float) -> pd.DataFrame:
    """What the two runs differ in: the optimizer `core.training.make_optimizer` builds from each
    config, one column per run, one row per setting (eight columns side by side hid the last ones
    behind a scroll bar at 1024 px; as rows, the settings that do not change read as equal pairs).
    Built on a stand-in layer (left uninitialised, so no random numbers are drawn): an optimizer's
    settings do not depend on the model it updates."""
    columns = {}
    for label, config in optimizer_race_configs(steps, seed, adamw_lr).items():
        optimizer = make_optimizer(torch.nn.utils.skip_init(torch.nn.Linear, 2, 2), config)
        group = optimizer.param_groups[0]  # the weight matrices (biases get no weight decay)
        values = {"optimizer": type(optimizer).__name__, "lr": group["lr"], "weight decay": group["weight_decay"],
                  "betas": group.get("betas", "—"), "steps": config.max_steps, "batch": config.batch_size,
                  "seed": config.seed}
        # text: one column holds names and numbers (0.003, not 0.0030000000000000001)
        columns[label] = [f"{v:g}" if isinstance(v, float) else str(v) for v in values.values()]
    return pd.DataFrame({"setting": list(values), **columns})


def race_trainers(steps: int, seed: int, adamw_lr: float, data: NamesData) -> dict[str, Trainer]:
    """One core.training.Trainer per optimizer, on the same names data (trained by the page in slices)."""
    return {label: Trainer(config, data) for label, config in optimizer_race_configs(steps, seed, adamw_lr).items()}


class OptimizerRace(TrainerGroup):
    """The two runs of one race, advanced together (an equal share of each slice, step for step).

    `lock` is held while a slice trains, so a redraw from another script run never reads a
    history that is being appended to (ui.live.live_fragment holds it while drawing)."""

    def __init__(self, key: RaceKey, trainers: dict[str, Trainer]):
        super().__init__(trainers)
        self.key = key  # (steps, seed, adamw_lr): the settings this race was built from
        self.lock = threading.Lock()

    def advance(self, budget_s: float | None, slot: ContextManager | None = None) -> Outcome:
        with self.lock:
            return super().advance(budget_s, slot)


def demo(steps: int, seed: int, adamw_lr: float, data: NamesData) -> OptimizerRace:
    """The race, ready to be trained in slices: `advance(budget_s, slot)` until `done`."""
    return OptimizerRace((steps, seed, float(adamw_lr)), race_trainers(steps, seed, adamw_lr, data))


def race_result(trainers: dict[str, Trainer]) -> dict:
    """What a finished race keeps: loss histories, the final validation loss of each run (one full
    pass over the held-out windows), and the AdamW model's weights (for sampling on another pitfall)."""
    adamw_label = next(label for label in trainers if label.startswith("AdamW"))
    adamw = trainers[adamw_label]
    return {
        "histories": {label: {k: list(v) for k, v in t.history.items()} for label, t in trainers.items()},
        # the reported number: one pass over the WHOLE validation split
        "final_val": {label: t.evaluate("val") for label, t in trainers.items()},
        "steps": {label: t.step for label, t in trainers.items()},
        "adamw_model": {k: v.detach().cpu().clone() for k, v in adamw.model.state_dict().items()},
        "model_config": adamw.config.model.to_dict(),
    }


def model_from_result(result: dict) -> GPT:
    """The AdamW-trained GPT of a finished race, rebuilt from its weights."""
    model = GPT(GPTConfig.from_dict(result["model_config"]), seed=0)
    model.load_state_dict(result["adamw_model"])
    return model.eval()


def race_frame(histories: dict[str, dict]) -> pd.DataFrame:
    """Long-form loss curves (run, step, loss, kind) of the race from Trainer.history dicts: the rows
    the Train page's loss chart draws (core.viz.training.loss_chart), one run per optimizer.

    Kinds (core.runs): every step's training loss, its smoothed curve (single batches of 32 are
    noisy), and the validation points, measured on the first RACE_VAL_WINDOWS held-out windows
    during training (the final numbers, on all of them, come from race_result)."""
    frames = []
    for label, history in histories.items():
        losses = np.asarray(history["train_loss"], dtype=np.float64)  # (n_steps,)
        frames += [pd.DataFrame({"run": label, "step": history["steps"], "loss": losses, "kind": KIND_RAW}),
                   pd.DataFrame({"run": label, "step": history["steps"], "loss": smooth(losses),
                                 "kind": KIND_SMOOTH}),
                   pd.DataFrame({"run": label, "step": history["val_steps"], "loss": history["val_loss"],
                                 "kind": KIND_VAL})]
    frames = [frame for frame in frames if len(frame)]
    if not frames:
        return pd.DataFrame(columns=["run", "step", "loss", "kind"])
    return pd.concat(frames, ignore_index=True)


class FinishedRaces:
    """Finished races by RaceKey, shared by every session of the server: the runs are seeded and
    deterministic, so a class pressing Train at once trains each setting only once. The oldest
    are dropped beyond `capacity` (each keeps a small GPT's weights, about 0.6 MB)."""

    def __init__(self, capacity: int = 24):
        self.capacity = capacity  # finished races kept
        self._results: dict[RaceKey, dict] = {}  # RaceKey -> race_result(...), oldest first

    def get(self, key: RaceKey) -> dict | None:
        return self._results.get(key)

    def put(self, key: RaceKey, result: dict) -> None:
        self._results[key] = result
        while len(self._results) > self.capacity:  # dicts keep insertion order: oldest first
            self._results.pop(next(iter(self._results)), None)

    def latest_with_seed(self, seed: int) -> RaceKey | None:
        """The key of the newest finished race trained with `seed` (None if there is none)."""
        return next((key for key in reversed(list(self._results)) if key[1] == seed), None)
