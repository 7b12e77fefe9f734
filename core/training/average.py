"""A running average of the weights over the training steps: `WeightAverage` (TrainConfig.ema_decay).

An exponential moving average (EMA) of the parameters, updated after every optimisation step:

    average = decay * average + (1 - decay) * weights

so the average follows the weights over roughly the last 1 / (1 - decay) steps (0.99: ~100 steps). The
last step's weights carry the noise of the last few batches; their average is smoother, and usually
has a lower validation loss, most of all late in a run whose model starts to over-fit.

Early on a plain EMA would mostly remember the random initial weights. So each update is bias-corrected
as Adam's moments are: the average is always exactly the EMA of the weights seen so far, started from
zero and divided by the sum of its coefficients. The first update then copies the weights, and later
ones move towards them by (1 - decay) / (1 - decay ** t) at update t (1 - decay once t is large).

The trainer shows the average (core/training/trainer.py): validation and whatever reads the model
between slices (sampling, checkpoints, restore_best's copy) see it, while training steps go on from the
trained weights. `show()` puts the average into the model's parameters and keeps the trained weights
aside; `hide()` puts them back. Both copy in place, so a recorded CUDA graph keeps its addresses. The
update reads its coefficient from a device tensor (`take`) filled before each step, so a CUDA graph
records the update with the step and every replay averages again (core/training/gpu.py).
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import torch


def average_weight(decay: float, update: int) -> float:
    """How far update number `update` (1, 2, ...) moves the average towards the weights, bias-corrected:
    1 at the first update (the average starts as the weights), then down towards 1 - decay."""
    return (1.0 - decay) / (1.0 - decay ** update)


class WeightAverage:
    """The EMA of a model's parameters, and the in-place swap that shows it in the model.

    Buffers (the causal masks) are never trained, so they are neither averaged nor swapped.
    """

    def __init__(self, model: torch.nn.Module, decay: float):
        self.decay = decay
        named = list(model.named_parameters())
        self.names = [name for name, _ in named]
        self.params = [p for _, p in named]  # the live parameters the optimizer updates
        with torch.no_grad():
            self.average = [p.detach().clone() for p in self.params]
            self.trained = [p.detach().clone() for p in self.params]  # the trained weights while the average is shown
        # the coefficient of the next update, on the device: a CUDA graph reads it at every replay
        self.take = torch.ones((), dtype=torch.float32, device=self.params[0].device)
        self.weight = 1.0  # the same coefficient on the host: the CPU's update takes it as a number
        self.on_cpu = self.params[0].device.type == "cpu"
        self.shown = False  # True while the model's parameters hold the average (or restore_best's copy of it)

    # -- the update ---------------------------------------------------------------------------

    @torch.no_grad()
    def set_update(self, update: int) -> None:
        """Make the next `apply()` update number `update` (a device write, no host sync)."""
        self.weight = average_weight(self.decay, update)
        self.take.fill_(self.weight)

    @torch.no_grad()
    def apply(self) -> None:
        """average += take * (weights - average), all tensors at once; recordable in a CUDA graph (the
        coefficient is read on the device, and nothing here changes on the host). On the CPU, where
        nothing is recorded, the same update is one fused op with the coefficient as a number
        (measured: 45 instead of 163 microseconds a step for the quick demo's 38 tensors)."""
        if self.on_cpu:
            torch._foreach_lerp_(self.average, self.params, self.weight)
            return
        moved = torch._foreach_sub(self.params, self.average)
        torch._foreach_mul_(moved, self.take)
        torch._foreach_add_(self.average, moved)

    def update(self, update: int) -> None:
        """Update number `update` of the average, from the weights the optimizer has just stepped."""
        self.set_update(update)
        self.apply()

    # -- showing the average in the model -------------------------------------------------------

    @torch.no_grad()
    def show(self) -> None:
        """Put the average into the model's parameters; the trained weights are kept aside."""
        torch._foreach_copy_(self.trained, self.params)
        torch._foreach_copy_(self.params, self.average)
        self.shown = True

    @torch.no_grad()
    def hide(self) -> None:
        """Put the trained weights back into the model's parameters (what the model showed is dropped)."""
        torch._foreach_copy_(self.params, self.trained)
        self.shown = False

    @contextlib.contextmanager
    def trained_weights_in_model(self) -> Iterator[None]:
        """The trained weights in the parameters for a moment (e.g. to copy them with the optimizer's
        state), then exactly what the model showed before: swapped, not recomputed."""
        if not self.shown:
            yield
            return
        with torch.no_grad():
            shown = [p.detach().clone() for p in self.params]
            torch._foreach_copy_(self.params, self.trained)
        try:
            yield
        finally:
            with torch.no_grad():
                torch._foreach_copy_(self.params, shown)

    # -- saving and loading ---------------------------------------------------------------------

    def state(self) -> dict[str, dict[str, torch.Tensor]]:
        """The average and the trained weights by parameter name, on the CPU (for a saved run)."""
        trained = self.trained if self.shown else self.params
        return {"average": _by_name(self.names, self.average), "trained": _by_name(self.names, trained)}

    @torch.no_grad()
    def load(self, saved: dict | None) -> None:
        """Set the average and the trained weights from `state()` output; the model's parameters already
        hold the weights it showed when saved. None: both start from the model's weights (a run saved
        before its first step, or a model file that keeps only the weights it showed)."""
        if saved is None:
            torch._foreach_copy_(self.average, self.params)
            torch._foreach_copy_(self.trained, self.params)
            self.shown = False
            return
        for name, average, trained in zip(self.names, self.average, self.trained):
            average.copy_(saved["average"][name])
            trained.copy_(saved["trained"][name])
        self.shown = True


def _by_name(names: list[str], tensors: list[torch.Tensor]) -> dict[str, torch.Tensor]:
    return {name: t.detach().cpu().clone() for name, t in zip(names, tensors)}
