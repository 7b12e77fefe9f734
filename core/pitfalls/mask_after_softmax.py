"""Pitfall 3: masking after the softmax without renormalising (a common mistake, not in the originals).

Buggy: `buggy_mask_after_softmax` (softmax, then zero the future weights).
Fixed: `renormalised_mask_after_softmax` (the book's first fix) and
`core.pitfalls.mask_zero.fixed_mask_by_position` (−∞ before the softmax); the two agree.
Demo: SelfAttentionV2(3, 2) seeded on the book's six tokens, masked the three ways.
"""

from __future__ import annotations

import pandas as pd
import torch

from core import attention
from core.pitfalls.common import Pitfall, build_seeded, row_sums
from core.pitfalls.mask_zero import fixed_mask_by_position

PITFALL = Pitfall(
    "mask_after_softmax", "Masking after the softmax",
    "Not a bug of the originals but a common mistake: the book's 3.5.1 (document 004's chapter) "
    "zeroes the future after the softmax as a first step, then renormalises; document 004 masks "
    "with −∞ before it",
    "Zeroing future weights after the softmax leaves rows that sum to less than 1.",
    "The softmax already shared the whole budget of 1 among all keys; masking afterwards throws "
    "part of it away, so you must renormalise, or mask with −∞ before the softmax.",
    in_originals=False)


def buggy_mask_after_softmax(scaled_scores):
    """Softmax first, then zero the future weights (no renormalisation)."""
    attn_weights = torch.softmax(scaled_scores, dim=-1)  # (T, T) rows sum to 1 ...
    keep = torch.tril(torch.ones_like(attn_weights))  # (T, T) 1 on and below the diagonal
    return attn_weights * keep  # (T, T) ... but not any more


def renormalised_mask_after_softmax(scaled_scores):
    """The book's first fix: divide each masked row by its sum."""
    masked_weights = buggy_mask_after_softmax(scaled_scores)  # (T, T)
    return masked_weights / masked_weights.sum(dim=-1, keepdim=True)  # (T, T)


def demo(seed: int = 789) -> dict:
    """SelfAttentionV2(3, 2) seeded (the book uses 789) on the six tokens, masked three ways."""
    x = attention.book_embeddings()  # (6, 3)
    module = build_seeded(seed, lambda: attention.SelfAttentionV2(3, 2))
    with torch.no_grad():
        queries, keys = module.W_query(x), module.W_key(x)  # (6, 2), (6, 2)
        scaled_scores = queries @ keys.T / keys.shape[-1] ** 0.5  # (6, 6)
    buggy = buggy_mask_after_softmax(scaled_scores)  # (6, 6)
    renorm = renormalised_mask_after_softmax(scaled_scores)  # (6, 6)
    fixed = fixed_mask_by_position(scaled_scores)  # (6, 6)
    tokens = attention.BOOK_TOKENS
    sums = pd.DataFrame({
        "query": tokens * 3,
        "version": ["mask after softmax"] * 6 + ["… then renormalise"] * 6 + ["−∞ before softmax"] * 6,
        "row_sum": row_sums(buggy) + row_sums(renorm) + row_sums(fixed),
    })
    return {
        "tokens": tokens,
        "buggy_weights": buggy,
        "renormalised_weights": renorm,
        "fixed_weights": fixed,
        "sums": sums,
        "max_diff_renorm_vs_fixed": float((renorm - fixed).abs().max()),
    }
