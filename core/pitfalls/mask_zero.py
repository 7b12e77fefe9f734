"""Pitfall 2: masking by `scores == 0` (document 001, the small-LM slides).

Buggy: `buggy_mask_by_zero` (tril, then `masked_fill(scores == 0, -inf)`).
Fixed: `fixed_mask_by_position`, built on `core.attention.causal_mask`.
Demo: five constructed tokens whose scores hold two genuine zeros below the diagonal.
"""

from __future__ import annotations

import pandas as pd
import torch

from core import attention
from core.pitfalls.common import Pitfall

PITFALL = Pitfall(
    "mask_zero", "Masking by `scores == 0`",
    "Document 001 (small LM slides), `SelfAttentionHead.forward`",
    "`tril` then `masked_fill(scores == 0, -inf)` also hides every genuine score of exactly 0.",
    "`tril` writes 0 above the diagonal, but a past token can also score exactly 0, and the "
    "`== 0` test cannot tell the two apart: the mask must be defined by position.")


# Five tokens built so that "on" has two GENUINE zero scores with earlier tokens:
# on . the = -1 + 0 + 1 = 0 and on . sat = -1 + 1 + 0 = 0 (exact in floating point).
ZERO_TOKENS = ["the", "cat", "sat", "on", "mat"]
ZERO_EMBEDDINGS = [
    [1.0, 0.0, 1.0],  # the
    [0.0, 1.0, 1.0],  # cat
    [1.0, 1.0, 0.0],  # sat
    [-1.0, 1.0, 1.0],  # on
    [0.5, 0.5, 1.0],  # mat
]


def buggy_mask_by_zero(autocorrs):
    """Document 001's future mask: tril, then hide every score that equals 0."""
    autocorrs = torch.tril(autocorrs)  # (T, T): zeros above the diagonal
    # BUG: also hides any score BELOW the diagonal that happens to be exactly 0
    autocorrs = autocorrs.masked_fill(autocorrs == 0, float("-inf"))  # (T, T)
    return torch.softmax(autocorrs, dim=-1)  # (T, T)


def fixed_mask_by_position(attn_scores):
    """The future mask by POSITION (core.attention.causal_mask), then the softmax over keys."""
    mask = attention.causal_mask(attn_scores.shape[-1])  # (T, T) True above the diagonal
    attn_scores = attn_scores.masked_fill(mask, float("-inf"))  # (T, T)
    return torch.softmax(attn_scores, dim=-1)  # (T, T)


def demo() -> dict:
    """Scores x @ x.T / sqrt(d) of the constructed tokens, masked both ways."""
    x = torch.tensor(ZERO_EMBEDDINGS)  # (5, 3)
    attn_scores = attention.all_attn_scores(x) * x.shape[1] ** -0.5  # (5, 5), as the slides scale
    buggy = buggy_mask_by_zero(attn_scores)  # (5, 5)
    fixed = fixed_mask_by_position(attn_scores)  # (5, 5)
    visible = ~attention.causal_mask(len(ZERO_TOKENS))  # (5, 5) past and present
    genuine_zero = visible & (attn_scores == 0)  # (5, 5)
    wrongly_hidden = visible & (buggy == 0)  # (5, 5)
    rows = []
    for i, j in genuine_zero.nonzero().tolist():
        rows.append({"query": ZERO_TOKENS[i], "key": ZERO_TOKENS[j], "score": float(attn_scores[i, j]),
                     "buggy weight": float(buggy[i, j]), "fixed weight": float(fixed[i, j])})
    return {
        "tokens": ZERO_TOKENS,
        "attn_scores": attn_scores,
        "buggy_weights": buggy,
        "fixed_weights": fixed,
        "n_genuine_zero": int(genuine_zero.sum()),
        "n_wrongly_hidden": int(wrongly_hidden.sum()),
        "zero_cells": pd.DataFrame(rows),
    }
