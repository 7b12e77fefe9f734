"""Pitfall 13: `def foward`, `nn.Liner`, `out_proj = Linear(d_in, d_out)` (document 002).

Buggy: `BuggyForwardTypo`, `buggy_build_liner`, `BuggyOutProj`.
Fixed: `core.attention.MultiHeadAttention`.
Demo: each module run on the book's batch (2, 6, 3); the error each raises.
"""

from __future__ import annotations

import pandas as pd
import torch
from torch import nn

from core import attention
from core.pitfalls.common import Pitfall, build_seeded, run_caught

PITFALL = Pitfall(
    "module_typos", "`def foward`, `nn.Liner`, `Linear(d_in, d_out)`",
    "Document 002, the multi-head classes",
    "The modules cannot run: a missing forward, a missing class, a shape mismatch.",
    "`nn.Module.__call__` looks for a method named exactly `forward`, `torch.nn` has no `Liner`, "
    "and out_proj receives the d_out-wide concatenated heads, not d_in.")


class BuggyForwardTypo(nn.Module):
    """Document 002's first MultiheadAttention: heads, concatenation, output layer ... `foward`."""

    def __init__(self, d_in, d_out, num_heads):
        super().__init__()
        self.head = nn.ModuleList(
            [attention.CausalAttention(d_in, d_out // num_heads, 6, 0.0) for _ in range(num_heads)])
        self.out = nn.Linear(d_out, d_out)

    def foward(self, x):  # BUG: nn.Module calls a method named `forward`
        outputs = torch.cat([head(x) for head in self.head], dim=-1)  # (b, T, d_out)
        return self.out(outputs)  # (b, T, d_out)


def buggy_build_liner(d_in, d_out):
    """Document 002's MultiHeadAttention.__init__ line for the output projection."""
    return nn.Liner(d_in, d_out)  # BUG: torch.nn has no "Liner"


class BuggyOutProj(nn.Module):
    """Document 002's MultiHeadAttention with `Liner` corrected: out_proj is still Linear(d_in, d_out)."""

    def __init__(self, d_in, d_out, context_length, num_heads):
        super().__init__()
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=False)
        self.W_key = nn.Linear(d_in, d_out, bias=False)
        self.W_value = nn.Linear(d_in, d_out, bias=False)
        self.out_proj = nn.Linear(d_in, d_out)  # BUG: it receives d_out features, not d_in
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        split = lambda t: t.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        queries, keys, values = split(self.W_query(x)), split(self.W_key(x)), split(self.W_value(x))
        attn_scores = queries @ keys.transpose(2, 3)  # (b, H, T, T)
        attn_scores = attn_scores.masked_fill(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / self.head_dim ** 0.5, dim=-1)  # (b, H, T, T)
        context_vec = (attn_weights @ values).transpose(1, 2).reshape(b, num_tokens, self.d_out)  # (b, T, d_out)
        return self.out_proj(context_vec)  # fails: (b*T, d_out) @ (d_in, d_out)


def demo(seed: int = 123) -> pd.DataFrame:
    """Run each broken module on the book's batch (2, 6, 3), and core.attention.MultiHeadAttention."""
    batch = torch.stack([attention.book_embeddings()] * 2)  # (2, 6, 3)
    typo = build_seeded(seed, lambda: BuggyForwardTypo(3, 4, 2))
    out_proj = build_seeded(seed, lambda: BuggyOutProj(3, 4, 6, 2))
    fixed = build_seeded(seed, lambda: attention.MultiHeadAttention(3, 4, 6, 0.0, num_heads=2)).eval()
    rows = []
    for what, fn in (("def foward(self, x)", lambda: typo(batch)),
                     ("nn.Liner(d_in, d_out)", lambda: buggy_build_liner(3, 4)),
                     ("out_proj = nn.Linear(d_in, d_out)", lambda: out_proj(batch)),
                     ("fixed: core.attention.MultiHeadAttention", lambda: fixed(batch))):
        with torch.no_grad():
            result = run_caught(fn)
        shown = result.error if not result.ok else f"ran: output shape {tuple(result.value.shape)}"
        rows.append({"code": what, "outcome": shown})
    return pd.DataFrame(rows)
