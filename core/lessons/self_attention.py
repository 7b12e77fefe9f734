"""Lesson 2 (page 2): self-attention with trainable W_q, W_k, W_v, and why scores are scaled by 1/√d_k.

- the projection: the weights the book's `SelfAttention_v1` (nn.Parameter, torch.rand) or
  `SelfAttention_v2` (nn.Linear) starts with after torch.manual_seed(seed), or hand-edited ones;
- the steps (Q, K, V, scores, scaled scores, weights, context) from
  `core.attention.attention_intermediates`, and the check that the book's class gives the same;
- the √d_k experiment, the ONE implementation in the project (the pitfalls page uses it too):
  softmax of random unit-variance scores with and without 1/√d_k as d_k grows.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Sequence

import pandas as pd
import torch

from core import attention
from core.attention import AttentionSteps, SelfAttentionV1, SelfAttentionV2, seeded
from core.lessons.walkthrough import SCALE_DKS, SdpaCheck, WalkthroughSettings, max_abs_diff, sdpa_check

SLIDE_LOGITS = (0.1, 0.4, -0.9, 0.02, 0.35, -0.62)  # the slides' example of peaky softmax


@dataclass(frozen=True, eq=False)  # frozen: seeded projections are cached and shared
class Projection:
    """W_query, W_key, W_value (d_in, d_out) in the book's x @ W convention, plus optional biases."""

    W_query: torch.Tensor  # (d_in, d_out)
    W_key: torch.Tensor  # (d_in, d_out)
    W_value: torch.Tensor  # (d_in, d_out)
    b_query: torch.Tensor | None  # (d_out,)
    b_key: torch.Tensor | None  # (d_out,)
    b_value: torch.Tensor | None  # (d_out,)
    variant: str  # "v1" or "v2"
    seed: int
    edited: bool  # hand-edited weights in use
    note: str | None = None  # why hand-edited weights were not used

    def kwargs(self) -> dict:
        """Keyword arguments for attention.attention_intermediates."""
        return {"W_query": self.W_query, "W_key": self.W_key, "W_value": self.W_value,
                "b_query": self.b_query, "b_key": self.b_key, "b_value": self.b_value}

    def matrices(self) -> list[torch.Tensor]:
        return [self.W_query, self.W_key, self.W_value]


def weights_words(projection: Projection) -> str:
    """How the W_q, W_k, W_v on screen were made: by the book's class after a seed, or by hand."""
    if projection.edited:
        return ("Each matrix maps a d_in-dimensional embedding to a d_out-dimensional vector. "
                "These were **edited by hand** (the seeded weights are not in use); training "
                "would change them, here they stay as typed.")
    made = ("**V1** creates them with `nn.Parameter(torch.rand(d_in, d_out))`: uniform in [0, 1)."
            if projection.variant == "v1" else
            "**V2** uses `nn.Linear(d_in, d_out)`: uniform in ±1/√d_in, stored transposed as "
            "`weight` (d_out, d_in); shown here as W = weight.T so that Q = X W.")
    return ("Each matrix maps a d_in-dimensional embedding to a d_out-dimensional vector. " + made
            + " Training would change them; here they stay at their initial values.")


def seeded_module(d_in: int, d_out: int, variant: str, seed: int, qkv_bias: bool = False):
    """SelfAttentionV1/V2 right after torch.manual_seed(seed), as the book builds it."""
    with seeded(seed):
        if variant == "v1":
            module = SelfAttentionV1(d_in, d_out)
        else:
            module = SelfAttentionV2(d_in, d_out, qkv_bias=qkv_bias)
    return module.double().eval()


def _module_projection(module, variant: str, seed: int) -> Projection:
    with torch.no_grad():
        if variant == "v1":
            mats = [module.W_query.detach().clone(), module.W_key.detach().clone(),
                    module.W_value.detach().clone()]
            biases = [None, None, None]
        else:
            linears = [module.W_query, module.W_key, module.W_value]
            mats = [lin.weight.detach().T.clone() for lin in linears]  # (d_in, d_out) each
            biases = [lin.bias.detach().clone() if lin.bias is not None else None for lin in linears]
    return Projection(*mats, *biases, variant=variant, seed=seed, edited=False)


@functools.lru_cache(maxsize=128)
def seeded_projection(d_in: int, d_out: int, variant: str, seed: int,
                      qkv_bias: bool = False) -> Projection:
    """The weights the book's class starts with after torch.manual_seed(seed) (cached; read-only)."""
    return _module_projection(seeded_module(d_in, d_out, variant, seed, qkv_bias), variant, seed)


def projection_for(settings: WalkthroughSettings, d_in: int) -> Projection:
    """Hand-edited weights when they fit (d_in, d_out), else the seeded ones (with a note why)."""
    qkv_bias = settings.qkv_bias and settings.variant == "v2"
    seeded = seeded_projection(d_in, settings.d_out, settings.variant, settings.weight_seed, qkv_bias)
    if not settings.custom_weights:
        return seeded
    wanted = (d_in, settings.d_out)
    mats = [torch.tensor(m, dtype=torch.float64) for m in settings.custom_weights]
    if any(tuple(m.shape) != wanted for m in mats):
        got = tuple(mats[0].shape)
        return dataclasses.replace(seeded, note=(
            f"The hand-edited weights have shape {got}, but the embeddings and d_out now need "
            f"{wanted}: the seeded weights are used instead."))
    return dataclasses.replace(seeded, W_query=mats[0], W_key=mats[1], W_value=mats[2], edited=True)


def projection_module(projection: Projection, qkv_bias: bool):
    """The book's class (V1 or V2) holding exactly `projection`'s weights, for the module check."""
    d_in, d_out = projection.W_query.shape
    with seeded(0):  # its random init is overwritten below
        module = (SelfAttentionV1(d_in, d_out) if projection.variant == "v1"
                  else SelfAttentionV2(d_in, d_out, qkv_bias=qkv_bias)).double().eval()
    with torch.no_grad():
        for name, W, b in (("W_query", projection.W_query, projection.b_query),
                           ("W_key", projection.W_key, projection.b_key),
                           ("W_value", projection.W_value, projection.b_value)):
            target = getattr(module, name)
            if projection.variant == "v1":
                target.copy_(W)
            else:
                target.weight.copy_(W.T)  # nn.Linear stores (d_out, d_in)
                if target.bias is not None and b is not None:
                    target.bias.copy_(b)
    return module


def self_attention(inputs: torch.Tensor, projection: Projection, **kwargs) -> AttentionSteps:
    """Every step of scaled dot-product attention with trainable weights (no mask by default)."""
    options = {"num_heads": 1, "causal": False, "dropout_p": 0.0, **kwargs}
    return attention.attention_intermediates(inputs, **projection.kwargs(), **options)


def module_check(module, inputs: torch.Tensor, ours: torch.Tensor, batched: bool = False) -> float:
    """Max |module(x) - our step-by-step result|: the book's class computes the same thing."""
    with torch.no_grad():
        x = inputs.to(torch.float64)
        out = module(x[None])[0] if batched else module(x)  # (T, d_out)
    return max_abs_diff(out, ours)


def weight_rows_equal(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]]) -> bool:
    return len(a) == len(b) and all(list(x) == list(y) for x, y in zip(a, b))


@dataclass(frozen=True, eq=False)  # frozen: runs are cached and shared; do not modify the tensors
class ScalingRun:
    """One d_k of the √d_k experiment: random queries and keys, their scores, both softmaxes."""

    d_k: int  # width of the queries and keys
    queries: torch.Tensor  # (n, T, d_k) N(0, 1) entries
    keys: torch.Tensor  # (n, T, d_k) N(0, 1) entries
    attn_scores: torch.Tensor  # (n, T, T) raw q·k: spread (std) about √d_k
    unscaled: torch.Tensor  # (n, T, T) softmax(q·k): slides to one-hot as d_k grows
    scaled: torch.Tensor  # (n, T, T) softmax(q·k / √d_k): spread stays about 1


# Not cached itself: a draw at d_k = 1024 holds 6-8 MB of float64 queries and keys, and every
# cache kept the largest ones. What is built from the draws is small and cached: softmax_peak,
# _scaling_table, and the pitfall's demo table (in its page).
def scaling_run(d_k: int, seed: int = 0, num_sequences: int = 64, num_tokens: int = 6) -> ScalingRun:
    """The √d_k experiment, the one implementation in the project (page 2's scaling panel and the
    "no scaling" pitfall both read it): `num_sequences` sequences of `num_tokens` random queries
    and keys with unit-variance entries, every query scored against the keys of its sequence.

    A dot product of d_k independent N(0, 1) products has variance d_k, so the raw scores spread
    by √d_k and softmax slides to one-hot; dividing by √d_k brings the spread back to 1.
    Seeded by (seed, d_k), so each d_k has its own draw (the same on every call).
    """
    generator = torch.Generator().manual_seed(seed * 1000 + int(d_k))
    shape = (num_sequences, num_tokens, d_k)
    queries = torch.randn(shape, generator=generator, dtype=torch.float64)  # (n, T, d_k)
    keys = torch.randn(shape, generator=generator, dtype=torch.float64)  # (n, T, d_k)
    attn_scores = queries @ keys.transpose(-2, -1)  # (n, T, T)
    unscaled = torch.softmax(attn_scores, dim=-1)  # (n, T, T)
    scaled = torch.softmax(attn_scores / math.sqrt(d_k), dim=-1)  # (n, T, T)
    return ScalingRun(int(d_k), queries, keys, attn_scores, unscaled, scaled)


def softmax_peak(d_k: int, num_keys: int = 6, seed: int = 0) -> dict:
    """How peaked softmax gets at width d_k, with and without 1/√d_k (from `scaling_run`):
    the spread of the scores, the mean largest weight over every query row, and one example row."""
    peak = _softmax_peak(int(d_k), int(num_keys), int(seed))
    return {name: list(value) if isinstance(value, list) else value for name, value in peak.items()}


@functools.lru_cache(maxsize=256)
def _softmax_peak(d_k: int, num_keys: int, seed: int) -> dict:
    # a pure function of its arguments, cached (a few hundred bytes each; a draw costs ~10 ms)
    run = scaling_run(d_k, seed, num_tokens=num_keys)
    return {
        "d_k": d_k,
        "score_std": float(run.attn_scores.std()),
        "scaled_std": float((run.attn_scores / math.sqrt(d_k)).std()),
        "max_unscaled": float(run.unscaled.max(dim=-1).values.mean()),
        "max_scaled": float(run.scaled.max(dim=-1).values.mean()),
        "row_scores": run.attn_scores[0, 0].tolist(),
        "row_unscaled": run.unscaled[0, 0].tolist(),
        "row_scaled": run.scaled[0, 0].tolist(),
    }


def scaling_table(seed: int = 0, num_keys: int = 6, dks: Sequence[int] = SCALE_DKS) -> pd.DataFrame:
    """One line per d_k and kind: mean largest softmax weight (1.0 = one-hot)."""
    return _scaling_table(int(seed), int(num_keys), tuple(dks)).copy()


@functools.lru_cache(maxsize=64)
def _scaling_table(seed: int, num_keys: int, dks: tuple[int, ...]) -> pd.DataFrame:
    # a pure function of its arguments, cached: 9 draws of 64 x 6 x d_k cost ~0.1 s to redo
    rows = []
    for d_k in dks:
        peak = softmax_peak(d_k, num_keys, seed)
        rows.append({"d_k": d_k, "kind": "softmax(q·k)", "max_weight": peak["max_unscaled"],
                     "score_std": peak["score_std"]})
        rows.append({"d_k": d_k, "kind": "softmax(q·k / √d_k)", "max_weight": peak["max_scaled"],
                     "score_std": peak["scaled_std"]})
    return pd.DataFrame(rows)


def slide_logits() -> tuple[list[float], list[float], list[float]]:
    """The slides' logits, softmax(logits) (diffuse) and softmax(logits × 100) (one-hot)."""
    logits = torch.tensor(SLIDE_LOGITS, dtype=torch.float64)  # (6,)
    return (logits.tolist(), torch.softmax(logits, dim=0).tolist(),
            torch.softmax(logits * 100, dim=0).tolist())


@dataclass(eq=False)
class SelfPage:
    steps: AttentionSteps
    sdpa: SdpaCheck
    module_diff: float  # max |SelfAttention_v1/v2.forward - the steps|


def self_page(inputs: torch.Tensor, projection: Projection, qkv_bias: bool) -> SelfPage:
    steps = self_attention(inputs, projection)
    module = projection_module(projection, qkv_bias)
    return SelfPage(steps, sdpa_check(steps), module_check(module, inputs, steps.context_vec))
