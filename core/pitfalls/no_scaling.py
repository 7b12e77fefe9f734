"""Pitfall 4: no √d_k scaling (a common mistake, not in the originals: documents 001–004 all scale).

Buggy: `buggy_unscaled_weights`. Fixed: `fixed_scaled_weights` (as core.attention scales).
Demo: `demo`, the √d_k experiment (random queries and keys for d_k = 2 ... 512): max weight,
entropy and the norm of the softmax Jacobian (`softmax_jacobian_norm`), unscaled vs scaled.
"""

from __future__ import annotations

import math
from typing import Sequence

import pandas as pd
import torch

from core.lessons.self_attention import scaling_run
from core.pitfalls.common import Pitfall

PITFALL = Pitfall(
    "no_scaling", "No √d_k scaling",
    "Not a bug of the originals but a common mistake: documents 001–004 all divide the scores by "
    "√d_k; this is why",
    "Without the scaling, scores grow like √d_k: softmax turns one-hot and its gradient vanishes.",
    "A dot product of d_k independent unit-variance terms has variance d_k, so unscaled scores "
    "spread further apart as d_k grows and the largest one takes all the weight.",
    in_originals=False)


SCALING_DKS = (2, 4, 8, 16, 32, 64, 128, 256, 512)


def buggy_unscaled_weights(queries, keys):
    """Attention weights without dividing by sqrt(d_k)."""
    attn_scores = queries @ keys.transpose(-2, -1)  # (n, T, T) spread grows like sqrt(d_k)
    return torch.softmax(attn_scores, dim=-1)  # (n, T, T)


def fixed_scaled_weights(queries, keys):
    """The same, scaled as in core.attention.SelfAttentionV1: scores / sqrt(d_k)."""
    attn_scores = queries @ keys.transpose(-2, -1)  # (n, T, T)
    return torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)  # (n, T, T)


def softmax_jacobian_norm(attn_weights: torch.Tensor) -> torch.Tensor:
    """Frobenius norm of d softmax / d scores = diag(p) - p p^T, per row: 0 when p is one-hot."""
    p = attn_weights  # (..., T)
    jacobian = torch.diag_embed(p) - p.unsqueeze(-1) * p.unsqueeze(-2)  # (..., T, T)
    return jacobian.flatten(-2).norm(dim=-1)  # (...)


def _weight_stats(attn_weights: torch.Tensor) -> dict:
    entropy = -(attn_weights * attn_weights.clamp_min(1e-30).log()).sum(dim=-1)  # (n, T)
    return {
        "max weight": float(attn_weights.max(dim=-1).values.mean()),
        "entropy (nats)": float(entropy.mean()),
        "softmax gradient": float(softmax_jacobian_norm(attn_weights).mean()),
    }


def demo(seed: int = 123, d_ks: Sequence[int] = SCALING_DKS, num_tokens: int = 8,
         n_sequences: int = 64) -> pd.DataFrame:
    """The √d_k experiment: the shared draw of `core.lessons.self_attention.scaling_run` (queries
    and keys ~ N(0, 1), seeded; the same experiment as page 2's scaling panel) fed to the buggy
    and the fixed function, averaged over every query row.

    One row per (d_k, version): score std, mean max weight, mean entropy (ln T = uniform) and the
    mean norm of the softmax Jacobian (how much gradient reaches the scores)."""
    rows = []
    for d_k in d_ks:
        run = scaling_run(int(d_k), seed, n_sequences, num_tokens)
        raw_std = run.attn_scores.std()  # the raw scores' spread, about √d_k
        for version, fn, std in (("no scaling (buggy)", buggy_unscaled_weights, raw_std),
                                 ("÷ √d_k (fixed)", fixed_scaled_weights, raw_std / math.sqrt(d_k))):
            rows.append({"d_k": int(d_k), "version": version, "score std": float(std),
                         **_weight_stats(fn(run.queries, run.keys))})
    return pd.DataFrame(rows)


def softmax_grad_norm(scores: torch.Tensor, seed: int = 0) -> float:
    """Autograd check of the vanishing gradient: |d(sum of weights * random) / d scores|."""
    scores = scores.detach().clone().requires_grad_(True)
    upstream = torch.randn(scores.shape, generator=torch.Generator().manual_seed(seed), dtype=scores.dtype)
    (torch.softmax(scores, dim=-1) * upstream).sum().backward()
    return float(scores.grad.norm())
