"""Attention, step by step, as chapter 3 of rasbt's *LLMs from Scratch* builds it.

Three layers, each mapping to a part of the book so a student can follow along:

1. One query at a time, then all tokens at once (book 3.3): tiny functions such as
   `attn_scores_loop` whose source the app shows next to their output.
2. The book's classes: `SelfAttentionV1`, `SelfAttentionV2`, `CausalAttention`,
   `MultiHeadAttentionWrapper`, `MultiHeadAttention`. Attribute names and the order in which
   parameters are created follow the book, so `torch.manual_seed(123)` gives the printed numbers.
   The bonus material's PyTorch versions: `PyTorchMultiHeadAttention` (one fused qkv projection
   and `F.scaled_dot_product_attention`, as in the book's package) and `MHAPyTorchClass` (the
   bonus notebook's `nn.MultiheadAttention` version). Where the book would raise an AssertionError or a
   RuntimeError, the errors here are subclasses of both that and ValueError (core.errors).
3. The walkthrough engine: `attention_intermediates(...)` returns every intermediate tensor
   (scores, scaled scores, mask, weights, dropout keep-mask, per-head contexts, output) as an
   `AttentionSteps`; `intermediates_from_module(...)` reads the weights out of any of the classes.

Shape letters: b = batch size, T = number of tokens, H = num_heads.
"""

from __future__ import annotations

import contextlib
import math
import threading
from dataclasses import dataclass, fields, replace

import torch
from torch import nn
from torch.nn import functional as F

from core.errors import InvalidSettingError, ShapeMismatchError

BOOK_TOKENS = ["Your", "journey", "starts", "with", "one", "step"]


def book_embeddings() -> torch.Tensor:
    """The book's 3-d embeddings of "Your journey starts with one step" (a fresh tensor each call)."""
    return torch.tensor(
        [
            [0.43, 0.15, 0.89],  # Your     (x^1)
            [0.55, 0.87, 0.66],  # journey  (x^2)
            [0.57, 0.85, 0.64],  # starts   (x^3)
            [0.22, 0.58, 0.33],  # with     (x^4)
            [0.77, 0.25, 0.10],  # one      (x^5)
            [0.05, 0.80, 0.55],  # step     (x^6)
        ]
    )  # (6, 3)


# ---------------------------------------------------------------------------------------------
# 1. Simple attention without trainable weights (book 3.3)
# ---------------------------------------------------------------------------------------------


def attn_scores_loop(inputs, query_idx):
    """Attention scores ω of one query against every token, one dot product at a time."""
    query = inputs[query_idx]  # (d_in,)
    attn_scores = torch.empty(inputs.shape[0], dtype=inputs.dtype)  # (T,)
    for i, x_i in enumerate(inputs):
        # a large dot product means token i points the same way as the query
        attn_scores[i] = torch.dot(x_i, query)  # scalar
    return attn_scores


def attn_scores_matmul(inputs, query_idx):
    """The same scores in one matrix-vector product: every row of inputs dotted with the query."""
    query = inputs[query_idx]  # (d_in,)
    attn_scores = inputs @ query  # (T,)
    return attn_scores


def attn_weights_plain(attn_scores):
    """Weights α by dividing by the sum: they add up to 1, but a negative score stays negative."""
    attn_weights = attn_scores / attn_scores.sum()  # (T,)
    return attn_weights


def attn_weights_softmax(attn_scores):
    """Weights α by softmax: always positive, they add up to 1, and large scores stand out more."""
    attn_weights = torch.softmax(attn_scores, dim=0)  # (T,)
    return attn_weights


def context_vec_loop(inputs, attn_weights):
    """Context vector z: the weighted sum of all input vectors, one term at a time."""
    context_vec = torch.zeros(inputs.shape[1], dtype=inputs.dtype)  # (d_in,)
    for i, x_i in enumerate(inputs):
        # each token contributes in proportion to how much the query attends to it
        context_vec += attn_weights[i] * x_i  # (d_in,)
    return context_vec


def context_vec_matmul(inputs, attn_weights):
    """The same context vector as one vector-matrix product."""
    context_vec = attn_weights @ inputs  # (d_in,)
    return context_vec


def all_attn_scores(inputs):
    """Scores of every query against every key at once: entry [i, j] is x_i · x_j."""
    attn_scores = inputs @ inputs.T  # (T, T)
    return attn_scores


def all_attn_weights(attn_scores):
    """Softmax of each row, so that every query's weights over the keys add up to 1."""
    # dim=-1 is the key axis: normalising over dim=0 (the queries) is a classic bug
    attn_weights = torch.softmax(attn_scores, dim=-1)  # (T, T)
    return attn_weights


def all_context_vecs(attn_weights, inputs):
    """One context vector per token: row i is the weighted sum for query i."""
    context_vecs = attn_weights @ inputs  # (T, d_in)
    return context_vecs


# ---------------------------------------------------------------------------------------------
# 2. The book's classes (book 3.4 - 3.6)
# ---------------------------------------------------------------------------------------------


# The book's classes draw their initial weights from torch's global generator right after
# torch.manual_seed(...). Several sessions run in one server process (threads), so whoever seeds
# and builds must hold this lock for both steps, or another thread's draw can land in between.
GLOBAL_RNG_LOCK = threading.RLock()


@contextlib.contextmanager
def seeded(seed: int):
    """Run a block right after seeding torch's CPU generator, then restore the global state.

    Equivalent to the book's torch.manual_seed(seed) for modules built on the CPU, without its
    cost of seeding every accelerator, and invisible to other sessions in the same process (they
    wait on GLOBAL_RNG_LOCK instead of seeing their numbers shift).
    """
    with GLOBAL_RNG_LOCK, torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(int(seed))
        yield


def causal_mask(num_tokens: int) -> torch.Tensor:
    """Positions to hide: True above the diagonal, where query i would look at a later token j > i."""
    if num_tokens < 1:
        raise ValueError(f"The number of tokens must be at least 1, got {num_tokens}.")
    ones = torch.ones(num_tokens, num_tokens, dtype=torch.bool)  # (T, T)
    return torch.triu(ones, diagonal=1)  # (T, T)


def _check_context_length(num_tokens: int, context_length: int) -> None:
    """The causal mask buffer only covers context_length tokens; say so instead of a shape error."""
    if num_tokens > context_length:
        # the book's code fails here with a RuntimeError (mask and scores differ in size)
        raise ShapeMismatchError(
            f"The input has {num_tokens} tokens but this attention module was built with "
            f"context_length={context_length}. Use at most {context_length} tokens."
        )


def _check_heads(d_out: int, num_heads: int) -> None:
    """Every head gets d_out // num_heads dimensions, so the split must be exact."""
    if num_heads < 1 or d_out % num_heads != 0:
        # the book: assert d_out % num_heads == 0
        raise InvalidSettingError(
            f"d_out ({d_out}) must be divisible by num_heads ({num_heads}): "
            "every head gets d_out // num_heads dimensions."
        )


def _check_batch(x: torch.Tensor, d_in: int, context_length: int) -> tuple[int, int, int]:
    """Return (b, num_tokens, d_in) of a batch, or raise a ValueError a page can show."""
    if x.dim() != 3:
        raise ShapeMismatchError(
            f"Expected a batch of shape (b, num_tokens, d_in), got shape {tuple(x.shape)}."
        )
    b, num_tokens, x_d_in = x.shape
    if x_d_in != d_in:
        # the book's code fails here with a RuntimeError from the matrix product
        raise ShapeMismatchError(f"The input has {x_d_in} features per token but d_in is {d_in}.")
    _check_context_length(num_tokens, context_length)
    return b, num_tokens, x_d_in


class SelfAttentionV1(nn.Module):
    """Book 3.4.1 (`SelfAttention_v1`): trainable W_query, W_key, W_value as plain matrices."""

    def __init__(self, d_in, d_out):
        super().__init__()
        # created in the book's order, so torch.manual_seed(123) reproduces the book's numbers
        self.W_query = nn.Parameter(torch.rand(d_in, d_out))  # (d_in, d_out)
        self.W_key = nn.Parameter(torch.rand(d_in, d_out))  # (d_in, d_out)
        self.W_value = nn.Parameter(torch.rand(d_in, d_out))  # (d_in, d_out)

    def forward(self, x):
        keys = x @ self.W_key  # (T, d_out)
        queries = x @ self.W_query  # (T, d_out)
        values = x @ self.W_value  # (T, d_out)
        attn_scores = queries @ keys.T  # (T, T)
        # divide by sqrt(d_k): large dot products would push softmax towards one-hot
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)  # (T, T)
        context_vec = attn_weights @ values  # (T, d_out)
        return context_vec


class SelfAttentionV2(nn.Module):
    """Book 3.4.2 (`SelfAttention_v2`): the same with nn.Linear (better init, optional bias)."""

    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        keys = self.W_key(x)  # (T, d_out)
        queries = self.W_query(x)  # (T, d_out)
        values = self.W_value(x)  # (T, d_out)
        attn_scores = queries @ keys.T  # (T, T)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)  # (T, T)
        context_vec = attn_weights @ values  # (T, d_out)
        return context_vec


class CausalAttention(nn.Module):
    """Book 3.5.3: one causal head on a batch; the mask lives in a buffer sliced to the input length."""

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        # a buffer follows .to(device) and is saved in state_dict, but is never trained
        self.register_buffer("mask", causal_mask(context_length))  # (context_length, context_length)

    def forward(self, x):
        b, num_tokens, d_in = _check_batch(x, self.W_query.in_features, self.mask.shape[0])
        keys = self.W_key(x)  # (b, T, d_out)
        queries = self.W_query(x)  # (b, T, d_out)
        values = self.W_value(x)  # (b, T, d_out)
        attn_scores = queries @ keys.transpose(1, 2)  # (b, T, T)
        # hide later tokens by POSITION (a genuine score of 0 must stay visible)
        mask = self.mask[:num_tokens, :num_tokens]  # (T, T)
        attn_scores = attn_scores.masked_fill(mask, -torch.inf)  # (b, T, T)
        # exp(-inf) = 0, so hidden positions get weight exactly 0
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)  # (b, T, T)
        attn_weights = self.dropout(attn_weights)  # (b, T, T)
        context_vec = attn_weights @ values  # (b, T, d_out)
        return context_vec


class MultiHeadAttentionWrapper(nn.Module):
    """Book 3.6.1: num_heads independent CausalAttention heads, outputs concatenated.

    out_proj=True adds the mixing layer of "Method A" in the course notebook; the book has none.
    """

    def __init__(
        self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False, out_proj=False
    ):
        super().__init__()
        if num_heads < 1:
            raise InvalidSettingError(f"num_heads must be at least 1, got {num_heads}.")
        self.heads = nn.ModuleList(
            [CausalAttention(d_in, d_out, context_length, dropout, qkv_bias) for _ in range(num_heads)]
        )
        # created after the heads, so the heads get the same random numbers either way
        self.out_proj = nn.Linear(d_out * num_heads, d_out * num_heads) if out_proj else None

    def forward(self, x):
        context_vec = torch.cat([head(x) for head in self.heads], dim=-1)  # (b, T, num_heads * d_out)
        if self.out_proj is not None:
            context_vec = self.out_proj(context_vec)  # (b, T, num_heads * d_out)
        return context_vec


class MultiHeadAttention(nn.Module):
    """Book 3.6.2: all heads in one set of projections, split into heads with view/transpose.

    `causal` (keyword only, not in the book) turns the mask off to show bidirectional attention.
    """

    def __init__(
        self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False, *, causal=True
    ):
        super().__init__()
        _check_heads(d_out, num_heads)
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads  # each head works in a smaller space
        self.causal = causal
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)  # mixes what the heads found
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))  # (context_length, context_length)

    def _split_heads(self, t, b, num_tokens):
        # (b, T, d_out) -> (b, T, H, head_dim) -> heads before tokens, so @ works per head
        t = t.view(b, num_tokens, self.num_heads, self.head_dim)  # (b, T, num_heads, head_dim)
        return t.transpose(1, 2)  # (b, num_heads, T, head_dim)

    def forward(self, x):
        b, num_tokens, d_in = _check_batch(x, self.W_query.in_features, self.mask.shape[0])
        keys = self._split_heads(self.W_key(x), b, num_tokens)  # (b, num_heads, T, head_dim)
        queries = self._split_heads(self.W_query(x), b, num_tokens)  # (b, num_heads, T, head_dim)
        values = self._split_heads(self.W_value(x), b, num_tokens)  # (b, num_heads, T, head_dim)

        # explicit masked softmax, so every step can be inspected; PyTorch's fused kernel
        #   F.scaled_dot_product_attention(queries, keys, values,
        #       dropout_p=self.dropout.p if self.training else 0.0, is_causal=self.causal)
        # computes the same context (with its own dropout random numbers).
        attn_scores = queries @ keys.transpose(2, 3)  # (b, num_heads, T, T)
        if self.causal:
            mask = self.mask[:num_tokens, :num_tokens]  # (T, T), broadcast over b and heads
            attn_scores = attn_scores.masked_fill(mask, -torch.inf)  # (b, num_heads, T, T)
        attn_weights = torch.softmax(attn_scores / self.head_dim**0.5, dim=-1)  # (b, num_heads, T, T)
        attn_weights = self.dropout(attn_weights)  # (b, num_heads, T, T)

        context_vec = (attn_weights @ values).transpose(1, 2)  # (b, T, num_heads, head_dim)
        # put the heads side by side again: contiguous() because transpose only changed strides
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)  # (b, T, d_out)
        return self.out_proj(context_vec)  # (b, T, d_out)


class PyTorchMultiHeadAttention(nn.Module):
    """Book ch. 3 bonus, as the book's package defines it: one fused projection and PyTorch's fused kernel.

    The three projections W_query, W_key, W_value become one Linear(d_in, 3 * d_out) (`qkv`), whose
    output is cut into queries, keys and values; `F.scaled_dot_product_attention(..., is_causal=True)`
    does scores, scaling, mask, softmax, dropout and the weighted sum in one call; `proj` mixes the
    heads as `out_proj` does in MultiHeadAttention. Any d_in works, as in MultiHeadAttention.
    """

    def __init__(self, d_in, d_out, num_heads, dropout=0.0, qkv_bias=False):
        super().__init__()
        _check_heads(d_out, num_heads)
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.d_in = d_in
        self.d_out = d_out
        self.qkv = nn.Linear(d_in, 3 * d_out, bias=qkv_bias)  # W_query, W_key, W_value side by side
        self.proj = nn.Linear(d_out, d_out)
        self.dropout = dropout  # a probability: the fused kernel applies it to the attention weights

    def forward(self, x):
        b, num_tokens, d_in = _check_batch(x, self.d_in, math.inf)  # no mask buffer, so no length limit
        qkv = self.qkv(x)  # (b, T, 3 * d_out)
        qkv = qkv.view(b, num_tokens, 3, self.num_heads, self.head_dim)  # (b, T, 3, num_heads, head_dim)
        queries, keys, values = qkv.permute(2, 0, 3, 1, 4)  # each (b, num_heads, T, head_dim)
        dropout_p = self.dropout if self.training else 0.0  # dropout only while training
        context_vec = F.scaled_dot_product_attention(
            queries, keys, values, dropout_p=dropout_p, is_causal=True
        )  # (b, num_heads, T, head_dim)
        context_vec = context_vec.transpose(1, 2).contiguous()  # (b, T, num_heads, head_dim)
        context_vec = context_vec.view(b, num_tokens, self.d_out)  # (b, T, d_out)
        return self.proj(context_vec)  # (b, T, d_out)


class MHAPyTorchClass(nn.Module):
    """Book ch. 3 bonus notebook: the same causal multi-head attention, computed by nn.MultiheadAttention.

    nn.MultiheadAttention holds the query/key/value projections as one (3 * d_out, d_out) matrix
    (`in_proj_weight`) plus its own output projection; the notebook puts one more Linear after it
    (`proj`). qkv_bias=True also turns on `add_bias_kv`, as the notebook does: a learned extra key and
    value that every query may attend to, which MultiHeadAttention above does not have.

    nn.MultiheadAttention needs its input to be d_out wide, so d_in must equal d_out. The causal mask
    is a buffer (it follows .to(device)). need_weights=False lets PyTorch use its fused kernel.
    """

    def __init__(self, d_in, d_out, num_heads, context_length, dropout=0.0, qkv_bias=False, need_weights=True):
        super().__init__()
        if d_in != d_out:
            raise InvalidSettingError(
                f"nn.MultiheadAttention projects from d_out to d_out, so d_in ({d_in}) must equal d_out ({d_out})."
            )
        _check_heads(d_out, num_heads)
        self.d_in = d_in
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.context_length = context_length
        self.need_weights = need_weights
        self.multihead_attn = nn.MultiheadAttention(
            embed_dim=d_out,
            num_heads=num_heads,
            dropout=dropout,
            bias=qkv_bias,
            add_bias_kv=qkv_bias,
            batch_first=True,  # (b, T, d) like every other class here, not PyTorch's default (T, b, d)
        )
        self.proj = nn.Linear(d_out, d_out)
        self.register_buffer("mask", causal_mask(context_length))  # (context_length, context_length)

    def forward(self, x):
        b, num_tokens, d_in = _check_batch(x, self.d_in, self.context_length)
        attn_mask = self.mask[:num_tokens, :num_tokens]  # (T, T), the same for every sequence and head
        context_vec, _ = self.multihead_attn(
            x, x, x, attn_mask=attn_mask, need_weights=self.need_weights
        )  # (b, T, d_out)
        return self.proj(context_vec)  # (b, T, d_out)


# the book's spelling, so code copied from the book runs against this module
SelfAttention_v1 = SelfAttentionV1
SelfAttention_v2 = SelfAttentionV2


# ---------------------------------------------------------------------------------------------
# 3. The walkthrough engine
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)  # eq=False: comparing tensors with == gives tensors, not a bool
class AttentionSteps:
    """Every intermediate tensor of one attention pass over one sequence, in the order computed.

    Float tensors have the dtype of the input x (the engine computes in float64 and casts back).
    """

    queries: torch.Tensor  # (T, d_out) x @ W_query (+ b_query)
    keys: torch.Tensor  # (T, d_out) x @ W_key (+ b_key)
    values: torch.Tensor  # (T, d_out) x @ W_value (+ b_value)
    queries_h: torch.Tensor  # (H, T, head_dim) queries split into heads
    keys_h: torch.Tensor  # (H, T, head_dim)
    values_h: torch.Tensor  # (H, T, head_dim)
    attn_scores: torch.Tensor  # (H, T, T) raw dot products queries_h @ keys_h.T
    scaled_scores: torch.Tensor  # (H, T, T) attn_scores / sqrt(head_dim)
    mask: torch.Tensor  # (T, T) bool, True = hidden (above the diagonal); all False if not causal
    masked_scores: torch.Tensor  # (H, T, T) scaled scores with -inf where mask is True
    attn_weights: torch.Tensor  # (H, T, T) softmax over keys; every row sums to 1
    dropout_keep: torch.Tensor  # (H, T, T) bool, True = weight kept; all True without dropout
    attn_weights_dropped: torch.Tensor  # (H, T, T) kept weights * 1/(1-p), zeros elsewhere
    context_per_head: torch.Tensor  # (H, T, head_dim) attn_weights_dropped @ values_h
    context_vec: torch.Tensor  # (T, d_out) heads concatenated side by side
    output: torch.Tensor  # (T, d_proj) after the output projection (= context_vec, d_proj = d_out, if none)
    num_heads: int  # H
    head_dim: int  # d_out // num_heads
    causal: bool  # whether later tokens were hidden
    dropout_p: float  # probability of dropping a weight (only applied when training)
    training: bool  # whether dropout was active

    @property
    def num_tokens(self) -> int:
        """T, the length of the sequence."""
        return self.queries.shape[0]

    def tensors(self) -> dict[str, torch.Tensor]:
        """The tensor fields by name, in the order they were computed (handy for tabs and charts)."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        return {name: v for name, v in values.items() if isinstance(v, torch.Tensor)}


_TOO_LARGE = (
    "The values are too large to compute attention even in float64 "
    "(an intermediate result overflowed). Scale the input or the weights down."
)


def _require_tensor(name: str, t, ndim: int) -> None:
    """A finite floating-point tensor with ndim dimensions, or a ValueError naming it."""
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{name} must be a torch tensor, got {type(t).__name__}.")
    if not t.is_floating_point():
        raise ValueError(f"{name} must hold floating-point numbers, got dtype {t.dtype}.")
    if t.dim() != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {tuple(t.shape)}.")
    if not torch.isfinite(t).all():
        raise ValueError(f"{name} contains NaN or infinite values; attention needs finite numbers.")


def _validate_projection(x, W_query, W_key, W_value, biases) -> None:
    """Check x (T, d_in), the three (d_in, d_out) matrices and the optional (d_out,) biases."""
    _require_tensor("x", x, 2)
    if x.shape[0] < 1:
        raise ValueError("x must hold at least one token.")
    for name, W in (("W_query", W_query), ("W_key", W_key), ("W_value", W_value)):
        _require_tensor(name, W, 2)
        if W.shape != W_query.shape:
            raise ValueError(
                f"{name} has shape {tuple(W.shape)} but W_query has {tuple(W_query.shape)}."
            )
    if W_query.shape[0] != x.shape[1]:
        raise ValueError(
            f"x has {x.shape[1]} features per token but W_query expects d_in={W_query.shape[0]}."
        )
    for name, bias in biases.items():
        if bias is not None:
            _require_tensor(name, bias, 1)
            if bias.shape[0] != W_query.shape[1]:
                raise ValueError(
                    f"{name} must have d_out={W_query.shape[1]} entries, got {bias.shape[0]}."
                )


def _validate_heads_and_dropout(d_out: int, num_heads, dropout_p) -> None:
    """num_heads must split d_out evenly; dropout_p must be a probability below 1."""
    if isinstance(num_heads, bool) or not isinstance(num_heads, int) or num_heads < 1:
        raise ValueError(f"num_heads must be a whole number of at least 1, got {num_heads!r}.")
    if d_out % num_heads != 0:
        raise ValueError(
            f"d_out ({d_out}) must be divisible by num_heads ({num_heads}): "
            "every head gets d_out // num_heads dimensions."
        )
    if not isinstance(dropout_p, (int, float)) or not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"dropout_p must satisfy 0 <= dropout_p < 1, got {dropout_p!r}.")


def _validate_out_proj(d_out: int, out_proj_weight, out_proj_bias) -> None:
    """The output projection is (d_out, d_proj) in the book's x @ W convention, bias (d_proj,)."""
    if out_proj_weight is None:
        if out_proj_bias is not None:
            raise ValueError("out_proj_bias was given without out_proj_weight.")
        return
    _require_tensor("out_proj_weight", out_proj_weight, 2)
    if out_proj_weight.shape[0] != d_out:
        raise ValueError(
            f"out_proj_weight must have d_out={d_out} rows (x @ W convention), "
            f"got shape {tuple(out_proj_weight.shape)}."
        )
    if out_proj_bias is not None:
        _require_tensor("out_proj_bias", out_proj_bias, 1)
        if out_proj_bias.shape[0] != out_proj_weight.shape[1]:
            raise ValueError(
                f"out_proj_bias must have {out_proj_weight.shape[1]} entries, "
                f"got {out_proj_bias.shape[0]}."
            )


def _project(x64: torch.Tensor, W: torch.Tensor, bias) -> torch.Tensor:
    """x @ W (+ bias) in float64, the book's convention for a linear map."""
    out = x64 @ W.detach().to(torch.float64)  # (T, d_out)
    if bias is not None:
        out = out + bias.detach().to(torch.float64)  # (T, d_out)
    return out


def _split_heads(t: torch.Tensor, num_heads: int) -> torch.Tensor:
    """(T, d_out) -> (H, T, head_dim): head h owns columns h*head_dim ... (h+1)*head_dim - 1."""
    num_tokens, d_out = t.shape
    return t.view(num_tokens, num_heads, d_out // num_heads).transpose(0, 1)  # (H, T, head_dim)


def _mask_for(num_tokens: int, causal: bool) -> torch.Tensor:
    """The causal mask, or a mask that hides nothing when every token may see every other."""
    if causal:
        return causal_mask(num_tokens)  # (T, T)
    return torch.zeros(num_tokens, num_tokens, dtype=torch.bool)  # (T, T)


def _masked_scores(scaled_scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Clamp overflowed scores to the largest float64, then write -inf at the hidden positions.

    Why clamp: softmax subtracts each row's maximum before exp. If a score overflowed to +inf,
    that is inf - inf = NaN. Clamped to +-1.8e308 instead, the largest scores give exp(0) = 1 and
    the rest exp(-huge) = 0, which is exactly the limit of softmax as the scores grow. The -inf of
    the mask is written after the clamp so that hidden positions stay at weight exactly 0.
    """
    largest = torch.finfo(torch.float64).max
    clamped = scaled_scores.clamp(-largest, largest)  # (H, T, T)
    return clamped.masked_fill(mask, -torch.inf)  # (H, T, T)


def _dropout_keep(shape, dropout_p: float, dropout_seed: int) -> torch.Tensor:
    """Which weights survive dropout, drawn from a local generator so the global RNG is untouched."""
    if dropout_p == 0.0:
        return torch.ones(shape, dtype=torch.bool)  # (H, T, T)
    generator = torch.Generator().manual_seed(dropout_seed)
    # each weight is kept with probability 1 - p
    return torch.rand(shape, generator=generator, dtype=torch.float64) >= dropout_p  # (H, T, T)


def _apply_dropout(attn_weights: torch.Tensor, keep: torch.Tensor, dropout_p: float) -> torch.Tensor:
    """Zero the dropped weights and scale the kept ones by 1/(1-p), as nn.Dropout does.

    The scaling keeps the expected value of every weight unchanged, so eval mode (no dropout)
    sees the same average signal as training.
    """
    if dropout_p == 0.0:
        return attn_weights.clone()  # (H, T, T)
    return attn_weights * keep * (1.0 / (1.0 - dropout_p))  # (H, T, T)


def _merge_heads(context_per_head: torch.Tensor) -> torch.Tensor:
    """(H, T, head_dim) -> (T, H * head_dim): the heads' outputs side by side, head 0 first."""
    num_heads, num_tokens, head_dim = context_per_head.shape
    return context_per_head.transpose(0, 1).reshape(num_tokens, num_heads * head_dim)  # (T, d_out)


def _require_finite_result(*tensors: torch.Tensor) -> None:
    """Finite inputs can still overflow float64 when multiplied; say so instead of returning NaN."""
    for t in tensors:
        if not torch.isfinite(t).all():
            raise ValueError(_TOO_LARGE)


def attention_intermediates(
    x,
    W_query,
    W_key,
    W_value,
    *,
    b_query=None,
    b_key=None,
    b_value=None,
    num_heads=1,
    causal=True,
    dropout_p=0.0,
    dropout_seed=0,
    training=False,
    out_proj_weight=None,
    out_proj_bias=None,
) -> AttentionSteps:
    """Run (multi-head) scaled dot-product attention on one sequence and keep every step.

    x is (T, d_in); W_* are (d_in, d_out) in the book's `x @ W` convention (for an nn.Linear pass
    `linear.weight.T`, and likewise `out_proj.weight.T` for out_proj_weight). Dropout is applied
    only when training and dropout_p > 0, with a keep-mask drawn from `dropout_seed`.

    Numerics: everything is computed in float64 (scores of inputs around 1e30 are about 1e60, far
    beyond float32 but fine in float64), overflowed scores are clamped before the softmax (see
    `_masked_scores`), and the results are cast back to x's dtype. The weights are therefore
    always finite; the raw score tensors may read +-inf after the cast when they exceed x's dtype
    (pass a float64 x to see them). If even float64 overflows, a ValueError says so.
    """
    biases = {"b_query": b_query, "b_key": b_key, "b_value": b_value}
    _validate_projection(x, W_query, W_key, W_value, biases)
    d_out = W_query.shape[1]
    _validate_heads_and_dropout(d_out, num_heads, dropout_p)
    _validate_out_proj(d_out, out_proj_weight, out_proj_bias)
    active_p = float(dropout_p) if training else 0.0

    with torch.no_grad():  # an inspection tool: no autograd graph, plain tensors for the charts
        x64 = x.detach().to(torch.float64)  # (T, d_in)
        queries = _project(x64, W_query, b_query)  # (T, d_out)
        keys = _project(x64, W_key, b_key)  # (T, d_out)
        values = _project(x64, W_value, b_value)  # (T, d_out)
        _require_finite_result(queries, keys, values)

        queries_h = _split_heads(queries, num_heads)  # (H, T, head_dim)
        keys_h = _split_heads(keys, num_heads)  # (H, T, head_dim)
        values_h = _split_heads(values, num_heads)  # (H, T, head_dim)
        head_dim = d_out // num_heads

        attn_scores = queries_h @ keys_h.transpose(1, 2)  # (H, T, T)
        if torch.isnan(attn_scores).any():  # +inf and -inf products met inside a dot product
            raise ValueError(_TOO_LARGE)
        scaled_scores = attn_scores / math.sqrt(head_dim)  # (H, T, T)
        num_tokens = x.shape[0]
        mask = _mask_for(num_tokens, causal)  # (T, T)
        masked_scores = _masked_scores(scaled_scores, mask)  # (H, T, T)
        attn_weights = torch.softmax(masked_scores, dim=-1)  # (H, T, T), over the keys

        dropout_keep = _dropout_keep(attn_weights.shape, active_p, dropout_seed)  # (H, T, T)
        attn_weights_dropped = _apply_dropout(attn_weights, dropout_keep, active_p)  # (H, T, T)
        context_per_head = attn_weights_dropped @ values_h  # (H, T, head_dim)
        context_vec = _merge_heads(context_per_head)  # (T, d_out)
        output = context_vec  # (T, d_out)
        if out_proj_weight is not None:
            output = _project(context_vec, out_proj_weight, out_proj_bias)  # (T, d_proj)
        _require_finite_result(context_vec, output)

    steps = AttentionSteps(
        queries=queries,
        keys=keys,
        values=values,
        queries_h=queries_h,
        keys_h=keys_h,
        values_h=values_h,
        attn_scores=attn_scores,
        scaled_scores=scaled_scores,
        mask=mask,
        masked_scores=masked_scores,
        attn_weights=attn_weights,
        dropout_keep=dropout_keep,
        attn_weights_dropped=attn_weights_dropped,
        context_per_head=context_per_head,
        context_vec=context_vec,
        output=output,
        num_heads=num_heads,
        head_dim=head_dim,
        causal=bool(causal),
        dropout_p=float(dropout_p),
        training=bool(training),
    )
    return _cast_steps(steps, x.dtype)


# one-step helpers of attention_intermediates that the pages show beside it, where they do the
# page's work: the causal mask (page 3) and the split into heads and back (page 4). The pages draw
# their dropout as the book's nn.Dropout does (causal_attention.with_book_dropout), not with these.
MASK_HELPERS = (_mask_for, _masked_scores)
HEAD_HELPERS = (_split_heads, _merge_heads)


def _cast_steps(steps: AttentionSteps, dtype: torch.dtype) -> AttentionSteps:
    """The float64 working tensors back in the caller's dtype; the bool masks stay bool."""
    cast = {
        name: t.to(dtype) for name, t in steps.tensors().items() if t.is_floating_point()
    }
    return replace(steps, **cast)


def _linear_weights(q: nn.Linear, k: nn.Linear, v: nn.Linear) -> dict:
    """nn.Linear stores weight as (d_out, d_in) and computes x @ weight.T; the engine wants x @ W."""
    return {
        "W_query": q.weight.T,
        "W_key": k.weight.T,
        "W_value": v.weight.T,
        "b_query": q.bias,
        "b_key": k.bias,
        "b_value": v.bias,
    }


def _wrapper_weights(wrapper: MultiHeadAttentionWrapper) -> dict:
    """Head h's columns placed at h*head_dim..., so splitting d_out into heads recovers each head."""
    weights = {}
    for short in ("query", "key", "value"):
        linears = [getattr(head, "W_" + short) for head in wrapper.heads]
        weights["W_" + short] = torch.cat([lin.weight.T for lin in linears], dim=1)  # (d_in, H * d_out)
        has_bias = linears[0].bias is not None
        weights["b_" + short] = torch.cat([lin.bias for lin in linears]) if has_bias else None
    return weights


def _module_settings(module: nn.Module) -> tuple[dict, int | None]:
    """The keyword arguments for attention_intermediates, and the module's context_length (or None)."""
    if isinstance(module, SelfAttentionV1):
        weights = {"W_query": module.W_query, "W_key": module.W_key, "W_value": module.W_value}
        return {**weights, "num_heads": 1, "causal": False, "dropout_p": 0.0}, None
    if isinstance(module, SelfAttentionV2):
        weights = _linear_weights(module.W_query, module.W_key, module.W_value)
        return {**weights, "num_heads": 1, "causal": False, "dropout_p": 0.0}, None
    if isinstance(module, CausalAttention):
        weights = _linear_weights(module.W_query, module.W_key, module.W_value)
        settings = {**weights, "num_heads": 1, "causal": True, "dropout_p": module.dropout.p}
        return settings, module.mask.shape[0]
    if isinstance(module, MultiHeadAttentionWrapper):
        first = module.heads[0]
        settings = {**_wrapper_weights(module), "num_heads": len(module.heads), "causal": True}
        settings["dropout_p"] = first.dropout.p
        if module.out_proj is not None:
            settings["out_proj_weight"] = module.out_proj.weight.T
            settings["out_proj_bias"] = module.out_proj.bias
        return settings, first.mask.shape[0]
    if isinstance(module, MultiHeadAttention):
        weights = _linear_weights(module.W_query, module.W_key, module.W_value)
        settings = {**weights, "num_heads": module.num_heads, "causal": module.causal}
        settings["dropout_p"] = module.dropout.p
        settings["out_proj_weight"] = module.out_proj.weight.T
        settings["out_proj_bias"] = module.out_proj.bias
        return settings, module.mask.shape[0]
    raise ValueError(f"Cannot read attention weights from a {type(module).__name__}.")


def intermediates_from_module(module, x, *, dropout_seed=0, training=None, causal=None) -> AttentionSteps:
    """All the steps of `module` on one sequence x of shape (T, d_in).

    Works for the five classes above. training=None follows module.training; causal=None follows
    the module (the book's classes are always causal; causal=False shows the same weights with
    the mask off). In training mode the dropout keep-mask comes from dropout_seed, not from the
    module's nn.Dropout (which draws from the global RNG), so the zeros differ from a module call;
    their distribution is the same. (The walkthrough pages call it in eval mode and redraw the
    dropout as nn.Dropout does, `causal_attention.with_book_dropout`, so theirs match the module.)
    """
    settings, context_length = _module_settings(module)
    if isinstance(x, torch.Tensor) and x.dim() == 2 and context_length is not None:
        _check_context_length(x.shape[0], context_length)
    if training is None:
        training = module.training
    if causal is not None:
        settings = {**settings, "causal": causal}
    return attention_intermediates(x, **settings, dropout_seed=dropout_seed, training=training)


def wrapper_to_multihead(wrapper: MultiHeadAttentionWrapper) -> MultiHeadAttention:
    """A MultiHeadAttention that computes exactly what `wrapper` computes.

    Each head's projection becomes a block of columns in the fused projection. A wrapper without
    out_proj gets an identity out_proj, since MultiHeadAttention always has one.
    """
    first = wrapper.heads[0]
    num_heads = len(wrapper.heads)
    head_d_out = first.W_query.out_features
    reference = first.W_query.weight
    # the throwaway random init below must not shift anyone's global random numbers
    with seeded(0):
        mha = MultiHeadAttention(
            first.W_query.in_features,
            head_d_out * num_heads,
            first.mask.shape[0],
            first.dropout.p,
            num_heads,
            qkv_bias=first.W_query.bias is not None,
        )
    mha = mha.to(device=reference.device, dtype=reference.dtype)
    _copy_wrapper_into(wrapper, mha)
    mha.train(wrapper.training)
    return mha


def multihead_to_fused(mha: MultiHeadAttention) -> PyTorchMultiHeadAttention:
    """A PyTorchMultiHeadAttention that computes exactly what the causal `mha` computes.

    Its one fused projection is mha's three side by side: `qkv`'s rows are W_query's, then W_key's,
    then W_value's (the course's `qkv_linear = nn.Linear(h, 3h)` is the same idea, but it keeps
    each head's q, k and v side by side before `chunk(3)`, so its rows are in another order), and `proj` is
    `out_proj`. The fused class is always causal, so compare it with a causal `mha`.
    """
    reference = mha.W_query.weight
    with seeded(0):  # the throwaway random init must not shift anyone's global random numbers
        fused = PyTorchMultiHeadAttention(mha.W_query.in_features, mha.d_out, mha.num_heads, mha.dropout.p,
                                          qkv_bias=mha.W_query.bias is not None)
    fused = fused.to(device=reference.device, dtype=reference.dtype)
    with torch.no_grad():
        fused.qkv.weight.copy_(torch.cat([mha.W_query.weight, mha.W_key.weight,
                                          mha.W_value.weight]))  # (3 * d_out, d_in)
        if fused.qkv.bias is not None:
            fused.qkv.bias.copy_(torch.cat([mha.W_query.bias, mha.W_key.bias, mha.W_value.bias]))  # (3 * d_out,)
        fused.proj.weight.copy_(mha.out_proj.weight)  # (d_out, d_out)
        fused.proj.bias.copy_(mha.out_proj.bias)  # (d_out,)
    fused.train(mha.training)
    return fused


def _copy_wrapper_into(wrapper: MultiHeadAttentionWrapper, mha: MultiHeadAttention) -> None:
    """Stack the heads' (d_out, d_in) weights row-wise: head h fills rows h*head_dim ... of mha's."""
    with torch.no_grad():
        for name in ("W_query", "W_key", "W_value"):
            linears = [getattr(head, name) for head in wrapper.heads]
            target = getattr(mha, name)
            target.weight.copy_(torch.cat([lin.weight for lin in linears], dim=0))  # (H * d_out, d_in)
            if target.bias is not None:
                target.bias.copy_(torch.cat([lin.bias for lin in linears]))  # (H * d_out,)
        if wrapper.out_proj is not None:
            mha.out_proj.weight.copy_(wrapper.out_proj.weight)  # (d_out, d_out)
            mha.out_proj.bias.copy_(wrapper.out_proj.bias)  # (d_out,)
        else:
            mha.out_proj.weight.copy_(torch.eye(mha.d_out))  # (d_out, d_out): pass-through
            mha.out_proj.bias.zero_()  # (d_out,)
