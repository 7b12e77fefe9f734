"""Pitfall 1: softmax over the wrong dimension (document 003, Method A).

Buggy: `buggy_causal_attention`, document 003's forward with `softmax(..., dim=1)`.
Fixed: `fixed_causal_attention`, the same lines with dim=-1, which returns the weights too;
`core.attention.CausalAttention.forward` computes the same context (the demo checks it).
Demo: the book's six tokens (a batch of 2, as document 002 prints) through CausalAttention(3, 2).
"""

from __future__ import annotations

import pandas as pd
import torch

from core import attention
from core.pitfalls.common import Pitfall, build_seeded, row_sums

PITFALL = Pitfall(
    "softmax_dim", "Softmax over the wrong dimension",
    "Document 003, Method A (`CausalSelfAttention.forward`)",
    "`softmax(..., dim=1)` on (b, T, T) scores normalises over the queries: rows stop summing to 1.",
    "Row i of the scores holds query i against every key, so the weights of one query must be "
    "normalised along the LAST axis (dim=-1); dim=1 normalises each column instead.")


def buggy_causal_attention(self, x):
    """Document 003's CausalSelfAttention.forward, as written (`self` is a CausalAttention)."""
    b, n_tokens, d_in = x.shape
    keys = self.W_key(x)  # (b, T, d_out)
    queries = self.W_query(x)  # (b, T, d_out)
    values = self.W_value(x)  # (b, T, d_out)
    attn_scores = queries @ keys.transpose(1, 2)  # (b, T, T)
    attn_scores = attn_scores.masked_fill(self.mask.bool()[:n_tokens, :n_tokens], -torch.inf)  # (b, T, T)
    # BUG: dim=1 is the QUERY axis of (b, T, T): each column sums to 1, not each row
    attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=1)  # (b, T, T)
    context_vec = attn_weights @ values  # (b, T, d_out)
    return attn_weights, context_vec


def fixed_causal_attention(self, x):
    """The same forward with the softmax over the keys (dim=-1), as core.attention.CausalAttention."""
    b, n_tokens, d_in = x.shape
    keys = self.W_key(x)  # (b, T, d_out)
    queries = self.W_query(x)  # (b, T, d_out)
    values = self.W_value(x)  # (b, T, d_out)
    attn_scores = queries @ keys.transpose(1, 2)  # (b, T, T)
    attn_scores = attn_scores.masked_fill(self.mask.bool()[:n_tokens, :n_tokens], -torch.inf)  # (b, T, T)
    # dim=-1 is the KEY axis: each query's weights over the keys sum to 1
    attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)  # (b, T, T)
    context_vec = attn_weights @ values  # (b, T, d_out)
    return attn_weights, context_vec


def demo(seed: int = 123) -> dict:
    """The book's six tokens (batch of 2, as document 002 prints), CausalAttention(3, 2) seeded,
    through the buggy and the fixed forward; the module's own forward must agree with the fix."""
    batch = torch.stack([attention.book_embeddings()] * 2)  # (2, 6, 3)
    module = build_seeded(seed, lambda: attention.CausalAttention(3, 2, 6, 0.0)).eval()
    with torch.no_grad():
        buggy_weights, buggy_context = buggy_causal_attention(module, batch)  # (2, 6, 6), (2, 6, 2)
        fixed_weights, fixed_context = fixed_causal_attention(module, batch)  # (2, 6, 6), (2, 6, 2)
        module_context = module(batch)  # (2, 6, 2) core.attention.CausalAttention.forward
    fixed_weights = fixed_weights[0]  # (6, 6)
    tokens = attention.BOOK_TOKENS
    sums = pd.DataFrame({
        "query": tokens * 2,
        "version": ["buggy dim=1"] * 6 + ["fixed dim=-1"] * 6,
        "row_sum": row_sums(buggy_weights[0]) + row_sums(fixed_weights),
        "column_sum": [float(v) for v in buggy_weights[0].sum(dim=0)] + [float(v) for v in fixed_weights.sum(dim=0)],
    })
    return {
        "tokens": tokens,
        "buggy_weights": buggy_weights[0],  # (6, 6)
        "fixed_weights": fixed_weights,  # (6, 6)
        "sums": sums,
        "buggy_context_row0": [float(v) for v in buggy_context[0, 0]],
        "fixed_context_row0": [float(v) for v in fixed_context[0, 0]],
        # the fix and the project's module compute the same thing
        "fixed_vs_module": float((fixed_context - module_context).abs().max()),
    }
