"""Copies of a run's training state: `StateSnapshot` (device-side copies of the weights and optimizer
state, put back in place) and `optimizer_snapshot` (the optimizer's state for a saved run).

The trainer keeps a `StateSnapshot` as its restore point after a non-finite loss (with the running
average of the weights, when the run keeps one), and another for the weights of the best validation
point (`restore_best`).
"""

from __future__ import annotations

import copy
from typing import Sequence

import torch


def optimizer_snapshot(optimizer: torch.optim.Optimizer) -> dict:
    """A deep copy of the optimizer's state_dict with plain-float learning rates (a CUDA graph keeps its
    lr in a device tensor), so the saved run resumes on any device."""
    snapshot = copy.deepcopy(optimizer.state_dict())
    for group in snapshot["param_groups"]:
        if isinstance(group.get("lr"), torch.Tensor):
            group["lr"] = float(group["lr"])
        group["capturable"] = False
    return snapshot


class StateSnapshot:
    """A copy, on the model's device, of a model's parameters and buffers and (optionally) its
    optimizer's state and `extra` tensors of the run (the average of the weights), to put back later.

    `take()` copies the live tensors with `copy_()` into tensors allocated once (again only when the
    set of live tensors changed, e.g. when the optimizer created its state at the first step), and
    `restore()` copies them back in place: the live tensors keep their memory, so a recorded CUDA
    graph still reads and writes the right addresses, and on a GPU both are only queued (no host sync).
    An optimizer tensor that did not exist yet when the snapshot was taken is zeroed on restore: zero
    moments and a zero step count are exactly a fresh AdamW state.
    """

    def __init__(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer | None = None,
                 extra: Sequence[torch.Tensor] = ()):
        self.model, self.optimizer, self.extra = model, optimizer, list(extra)
        self._pairs: list[tuple[torch.Tensor, torch.Tensor]] = []  # (live tensor, its copy)

    def _model_tensors(self) -> dict[str, torch.Tensor]:
        return {**dict(self.model.named_parameters()), **dict(self.model.named_buffers())}

    def _live(self) -> list[torch.Tensor]:
        tensors = list(self._model_tensors().values())
        if self.optimizer is not None:
            tensors += [t for state in self.optimizer.state.values() for t in state.values()
                        if isinstance(t, torch.Tensor)]
        return tensors + self.extra

    @torch.no_grad()
    def take(self) -> None:
        """Copy the live tensors into the snapshot (only queued on a GPU)."""
        live = self._live()
        if len(live) != len(self._pairs) or any(t is not kept for t, (kept, _) in zip(live, self._pairs)):
            self._pairs = [(t, torch.empty_like(t)) for t in live]
        # one fused copy per device and dtype (as PyTorch's optimizers do), not ~100 small launches
        torch._foreach_copy_([c for _, c in self._pairs], [t for t, _ in self._pairs])

    @torch.no_grad()
    def restore(self) -> None:
        """Copy the snapshot back into the live tensors, in place; tensors made since are zeroed."""
        copies = {id(t): copy_of_t for t, copy_of_t in self._pairs}  # _pairs keeps each t alive: ids are unique
        live = self._live()
        kept = [t for t in live if id(t) in copies]
        torch._foreach_copy_(kept, [copies[id(t)] for t in kept])
        for t in live:
            if id(t) not in copies:
                t.zero_()

    def is_finite(self) -> bool:
        """True when every floating-point copy is finite (a host sync: for error paths only)."""
        return all(bool(torch.isfinite(c).all()) for _, c in self._pairs if c.is_floating_point())

    def model_copies(self) -> dict[str, torch.Tensor]:
        """The copies of the model's parameters and buffers, by name (on the CPU, for a saved run)."""
        copies = {id(t): copy_of_t for t, copy_of_t in self._pairs}
        return {name: copies[id(t)].detach().cpu().clone() for name, t in self._model_tensors().items()}

    def load_model_copies(self, saved: dict[str, torch.Tensor]) -> None:
        """Set the model part of the snapshot from `model_copies()` output (a resumed run)."""
        self.take()  # allocates the copies
        copies = {id(t): copy_of_t for t, copy_of_t in self._pairs}
        with torch.no_grad():
            for name, t in self._model_tensors().items():
                copies[id(t)].copy_(saved[name])
