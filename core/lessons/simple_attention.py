"""Lesson 1 (page 1): simple attention without trainable weights, for one query and for all tokens.

The book's chapter 3.3: scores ω by dot products, weights α by softmax (beside plain
normalisation ω / Σω, which can fail), the context vector z as the weighted sum of the inputs, and
the same three steps as matrix products. Every number comes from the book-style functions of
core/attention.py; the loop and matrix forms are checked against each other and against
`F.scaled_dot_product_attention`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from core import attention
from core.lessons.walkthrough import SdpaCheck, agreement, max_abs_diff

@dataclass(eq=False)
class SimpleAttention:
    """Lesson 1-2: one query's scores, weights, context vector, and the all-tokens matrix form."""

    query_idx: int
    attn_scores: torch.Tensor  # (T,) ω: the query dotted with every token
    attn_weights: torch.Tensor  # (T,) α by softmax
    attn_weights_plain: torch.Tensor | None  # (T,) α by ω / Σω, None when Σω = 0
    plain_note: str | None  # why plain normalisation is undefined or odd here
    context_vec: torch.Tensor  # (d_in,) z
    contributions: torch.Tensor  # (T, d_in) α_j x^(j); the rows add up to z
    all_scores: torch.Tensor  # (T, T) X Xᵀ
    all_weights: torch.Tensor  # (T, T) row-wise softmax
    all_context: torch.Tensor  # (T, d_in) A X
    loop_vs_matmul: float  # max |loop - matmul| over scores and context
    row_vs_single: float  # max |row query of the matrix form - the one-query result|


def plain_normalisation(attn_scores: torch.Tensor) -> tuple[torch.Tensor | None, str | None]:
    """ω / Σω when it is defined; otherwise None and the reason (never a NaN weight)."""
    total = float(attn_scores.sum())
    if total == 0.0:
        return None, ("the scores add up to 0, so ω / Σω divides by zero: plain normalisation "
                      "is undefined here. Softmax still works, one reason it is preferred.")
    weights = attention.attn_weights_plain(attn_scores)  # (T,)
    if not torch.isfinite(weights).all():
        return None, "ω / Σω overflowed: the scores nearly cancel out. Softmax still works."
    if (weights < 0).any():
        return weights, ("some plain weights are negative (a negative score stays negative), "
                         "so they are not proportions. Softmax weights are always positive.")
    return weights, None


def simple_attention(inputs: torch.Tensor, query_idx: int) -> SimpleAttention:
    """Every number of page 1, computed by the book-style functions of core/attention.py."""
    attn_scores = attention.attn_scores_loop(inputs, query_idx)  # (T,)
    scores_matmul = attention.attn_scores_matmul(inputs, query_idx)  # (T,)
    attn_weights = attention.attn_weights_softmax(attn_scores)  # (T,)
    plain, note = plain_normalisation(attn_scores)
    context_vec = attention.context_vec_loop(inputs, attn_weights)  # (d_in,)
    context_matmul = attention.context_vec_matmul(inputs, attn_weights)  # (d_in,)
    all_scores = attention.all_attn_scores(inputs)  # (T, T)
    all_weights = attention.all_attn_weights(all_scores)  # (T, T)
    all_context = attention.all_context_vecs(all_weights, inputs)  # (T, d_in)
    loop_vs_matmul = max(max_abs_diff(attn_scores, scores_matmul),
                         max_abs_diff(context_vec, context_matmul))
    row_vs_single = max(max_abs_diff(all_weights[query_idx], attn_weights),
                        max_abs_diff(all_context[query_idx], context_vec))
    return SimpleAttention(query_idx, attn_scores, attn_weights, plain, note, context_vec,
                           attn_weights[:, None] * inputs, all_scores, all_weights, all_context,
                           loop_vs_matmul, row_vs_single)


def sdpa_check_simple(inputs: torch.Tensor, all_context: torch.Tensor) -> SdpaCheck:
    """Page 1 has no W and no scaling: SDPA(X, X, X) with scale=1 must give A X."""
    x = inputs.to(torch.float64)[None]  # (1, T, d_in)
    reference = F.scaled_dot_product_attention(x, x, x, scale=1.0)[0]  # (T, d_in)
    diff, agrees = agreement(all_context, reference)
    return SdpaCheck(diff, agrees, "queries = keys = values = X, scale = 1 (no √d_k here)")


# Everything one page shows, computed in one call: the pages cache these (keyed on the settings
# that feed them), so a rerun that only changes the step or the lecture mode recomputes nothing.
@dataclass(eq=False)
class SimplePage:
    result: SimpleAttention
    sdpa: SdpaCheck


def simple_page(inputs: torch.Tensor, query_idx: int) -> SimplePage:
    result = simple_attention(inputs, query_idx)
    return SimplePage(result, sdpa_check_simple(inputs, result.all_context))
