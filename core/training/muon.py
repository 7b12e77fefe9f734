"""`MuonAdamW`: Muon for the transformer blocks' weight matrices, AdamW for everything else, as one optimizer.

Muon (Keller Jordan, 2024) keeps a momentum of each matrix's gradient, like SGD with Nesterov momentum, and
then *orthogonalises* it before the step: it replaces the update U S Vᵀ (its singular value decomposition)
by about U Vᵀ, so every direction of the matrix moves by the same amount instead of the few directions
with large singular values taking almost all of the step. A few iterations of a polynomial
(Newton-Schulz) compute it with matrix products only. It is for 2-D weights that map one activation to
another; embeddings, the output layer, biases and LayerNorm gains stay with AdamW.

On the names GPT it reaches a given validation loss in about half the steps of AdamW (docs/PRESETS.md,
2026-11-28). `torch.optim.Muon` computes the same update (tested against it), but orthogonalises in
bfloat16, one matrix at a time: on a 2-core CPU that made a quick-demo step 45% slower (53.8 ms against
37.0 ms for AdamW). Here it runs in float32 and all matrices of one shape go through one batched product
(+9%), so the saving in steps is a saving in seconds.
"""

from __future__ import annotations

import math
from collections import defaultdict

import torch

# Coefficients of the quintic Newton-Schulz iteration, as in torch.optim.Muon: they push small singular
# values up fast; the result has singular values in about [0.7, 1.2] instead of exactly 1, which works
# as well for training and needs only 5 iterations.
NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)
NS_STEPS = 5


def orthogonalise(updates: torch.Tensor, steps: int = NS_STEPS, eps: float = 1e-7) -> torch.Tensor:
    """About U Vᵀ for each matrix U S Vᵀ of `updates` (N, rows, cols), by Newton-Schulz in float32."""
    a, b, c = NS_COEFFICIENTS
    x = updates.float()  # (N, rows, cols)
    wide = x.size(-2) <= x.size(-1)
    if not wide:
        x = x.mT  # (N, cols, rows): the Gram matrix below is then the smaller one
    x = x / x.norm(dim=(-2, -1), keepdim=True).clamp(min=eps)  # spectral norm <= Frobenius norm = 1
    for _ in range(steps):
        gram = x @ x.mT  # (N, r, r) with r = min(rows, cols)
        poly = torch.baddbmm(gram, gram, gram, beta=b, alpha=c)  # b·G + c·G²
        x = torch.baddbmm(x, poly, x, beta=a)  # a·X + (b·G + c·G²)·X
    return x if wide else x.mT


def muon_lr_scale(shape: torch.Size) -> float:
    """Muon's step relative to the group's lr, so one learning rate suits both halves of the optimizer:
    0.2·sqrt(max(rows, cols)) gives the update about the RMS size of an AdamW update (as
    torch.optim.Muon's adjust_lr_fn="match_rms_adamw")."""
    return 0.2 * math.sqrt(max(shape[0], shape[1]))


def hidden_matrices(model: torch.nn.Module) -> list[torch.Tensor]:
    """The weight matrices inside the transformer blocks (`layers.*`): the ones Muon trains."""
    return [p for name, p in model.named_parameters() if p.dim() == 2 and name.startswith("layers.")]


class MuonAdamW(torch.optim.Optimizer):
    """Muon on the groups marked `muon=True`, AdamW (PyTorch's, fused where it can be) on the others.

    Both halves read their learning rate from their own groups, so a schedule that sets every group's
    "lr" drives both; state_dict()/load_state_dict() are the standard ones, over all groups.
    """

    def __init__(self, muon_params: list[torch.Tensor], adamw_groups: list[dict], lr: float,
                 weight_decay: float, betas: tuple[float, float] = (0.9, 0.99), momentum: float = 0.95,
                 fused: bool = False):
        adamw_groups = [g for g in adamw_groups if g["params"]]
        self.adamw = torch.optim.AdamW(adamw_groups, lr=lr, betas=betas, fused=fused) if adamw_groups else None
        groups = list(self.adamw.param_groups) if self.adamw is not None else []
        if muon_params:
            groups.append({"params": muon_params, "lr": lr, "weight_decay": weight_decay,
                           "momentum": momentum, "muon": True})
        super().__init__(groups, defaults={"lr": lr, "muon": False})
        self._link()

    def _link(self) -> None:
        """The AdamW half works on this optimizer's own group dicts and state (shared, not copied)."""
        if self.adamw is None:
            return
        self.adamw.param_groups = [g for g in self.param_groups if not g["muon"]]
        self.adamw.state = self.state

    def load_state_dict(self, state_dict: dict) -> None:
        super().load_state_dict(state_dict)  # makes new group dicts and a new state
        self._link()

    @torch.no_grad()
    def step(self, closure=None):
        if closure is not None:
            raise ValueError("MuonAdamW takes no closure")
        if self.adamw is not None:
            self.adamw.step()
        for group in self.param_groups:
            if group["muon"]:
                self._muon_step(group)
        return None

    def _muon_step(self, group: dict) -> None:
        """One Muon step of a group's matrices: momentum with a Nesterov look-ahead, decoupled weight
        decay, then each matrix moves by its orthogonalised update."""
        params = [p for p in group["params"] if p.grad is not None]
        if not params:
            return
        updates = self._nesterov_updates(params, group["momentum"])
        lr = float(group["lr"])
        if group["weight_decay"]:
            torch._foreach_mul_(params, 1 - lr * group["weight_decay"])  # as in AdamW
        for batch in _same_shape(params):  # one batched Newton-Schulz per shape
            wide = torch.stack([updates[i] if _is_wide(params[i]) else updates[i].mT
                                for i in batch])  # (N, r, c) with r <= c
            for i, ortho in zip(batch, orthogonalise(wide)):
                p = params[i]
                p.add_(ortho if _is_wide(p) else ortho.mT, alpha=-lr * muon_lr_scale(p.shape))

    def _nesterov_updates(self, params: list[torch.Tensor], momentum: float) -> list[torch.Tensor]:
        """buf = momentum·buf + (1 - momentum)·grad for each matrix; the update looks one momentum step
        ahead: grad + momentum·(buf - grad)."""
        for p in params:
            if "momentum_buffer" not in self.state[p]:  # made once, at the first step
                self.state[p]["momentum_buffer"] = torch.zeros_like(p)
        bufs = [self.state[p]["momentum_buffer"] for p in params]
        grads = [p.grad for p in params]
        torch._foreach_lerp_(bufs, grads, 1 - momentum)
        return torch._foreach_lerp(grads, bufs, momentum)


def _is_wide(matrix: torch.Tensor) -> bool:
    return matrix.size(0) <= matrix.size(1)


def _same_shape(params: list[torch.Tensor]) -> list[list[int]]:
    """Indices of `params` grouped by shape; a (rows, cols) matrix and a (cols, rows) one share a group."""
    groups: dict[tuple, list[int]] = defaultdict(list)
    for i, p in enumerate(params):
        groups[tuple(sorted(p.shape))].append(i)
    return list(groups.values())
