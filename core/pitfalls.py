"""The Pitfalls lesson: every bug of the original course documents, run live beside the fix.

Each pitfall has
* a `buggy_*` function (or class) that reproduces the original code as written, small enough to
  show on screen, and that really runs (or really crashes) so the numbers come from it;
* a fixed counterpart, which calls the project's real core code where it exists
  (`core.attention`, `core.data.name_windows`, `core.tokenizers.CharTokenizer`, `core.models`,
  `core.engine.Trainer`) and is otherwise a `fixed_*` function here;
* a `*_demo(...)` function that runs both on the same inputs and returns the numbers that show
  the difference (plain values and pandas DataFrames, ready for a table or a chart).

`PITFALLS` is the catalogue (title, where in the originals, the effect, one sentence on why);
`PitfallsSettings` holds the page's controls (`?pitfall=...` opens one pitfall directly).

Randomness is explicit: every demo takes a `seed`. The book's classes (`CausalAttention`, ...)
draw their initial weights from torch's global RNG, so they are built inside `_seeded`, which
forks that RNG and holds a lock, leaving every other session's random numbers untouched.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

import altair as alt
import pandas as pd
import torch
from torch import nn

from core import attention, viz as charts
from core.data import (IGNORE_INDEX, PAD_ID, NamesData, encode_corpus, get_batch, name_windows,
                       train_val_split_tensor)
from core.engine import TrainConfig, Trainer, lecture_config
from core.models import GPT, GPTConfig, SingleHeadLM, generate
from core.settings import spec
from core.tokenizers import CharTokenizer

# ---------------------------------------------------------------------------------------------
# The catalogue
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pitfall:
    """One bug of the originals, as the page introduces it."""

    key: str  # stable id, used in the URL (?pitfall=key)
    title: str  # short title for the menu
    where: str  # which original document and which code
    effect: str  # what goes wrong, in one line
    why: str  # one sentence on why it goes wrong


PITFALL_LIST = [
    Pitfall("softmax_dim", "Softmax over the wrong dimension",
            "Document 003, Method A (`CausalSelfAttention.forward`)",
            "`softmax(..., dim=1)` on (b, T, T) scores normalises over the queries: rows stop summing to 1.",
            "Row i of the scores holds query i against every key, so the weights of one query must be "
            "normalised along the LAST axis (dim=-1); dim=1 normalises each column instead."),
    Pitfall("mask_zero", "Masking by `scores == 0`",
            "Document 001 (small LM slides), `SelfAttentionHead.forward`",
            "`tril` then `masked_fill(scores == 0, -inf)` also hides every genuine score of exactly 0.",
            "`tril` writes 0 above the diagonal, but a past token can also score exactly 0, and the "
            "`== 0` test cannot tell the two apart: the mask must be defined by position."),
    Pitfall("mask_after_softmax", "Masking after the softmax",
            "Book 3.5.1 (document 004's chapter): the first, simple causal mask",
            "Zeroing future weights after the softmax leaves rows that sum to less than 1.",
            "The softmax already shared the whole budget of 1 among all keys; masking afterwards throws "
            "part of it away, so you must renormalise, or mask with −∞ before the softmax."),
    Pitfall("no_scaling", "No √d_k scaling",
            "Documents 001 and 004: why the scores are divided by √d_k",
            "Without the scaling, scores grow like √d_k: softmax turns one-hot and its gradient vanishes.",
            "A dot product of d_k independent unit-variance terms has variance d_k, so unscaled scores "
            "spread further apart as d_k grows and the largest one takes all the weight."),
    Pitfall("short_names", "Names shorter than the context dropped",
            "Document 000 (lecture 7), `NamesDataset`",
            "Windows only where a name is longer than `context_size`: almost every name gives no example.",
            "`range(len(tokens) - context_size)` is empty unless the name is longer than the context; "
            "padding short names instead keeps every name."),
    Pitfall("sgd", "SGD at lr 0.01 against AdamW",
            "Document 000 (lecture 7), `train`",
            "Plain SGD at lr 0.01 converges slowly: after the same steps its validation loss is much higher.",
            "SGD moves every weight by lr × gradient, and the gradients of a small transformer are tiny "
            "and badly scaled; AdamW divides each by its own running size, so every weight moves."),
    Pitfall("vocab_order", "Unsorted vocabulary from `list(set(...))`",
            "Document 000 (lecture 7), `Tokenizer.__init__`",
            "Token ids change between Python processes, so a saved model decodes garbage after a restart.",
            "Python orders a set of strings by their hash, which is salted per process "
            "(PYTHONHASHSEED), so `list(set(...))` lists the characters in a new order every run."),
    Pitfall("fit_indent", "Training step indented inside the `if`",
            "Document 001 (small LM slides), `fit`",
            "The optimizer steps only when `iteration % eval_iters == 0`: 1 step in `eval_iters`.",
            "Python's indentation is the block structure: the four training lines sit inside the "
            "evaluation `if`, so they run only on evaluation iterations."),
    Pitfall("prep_global", "`prep` reads a global instead of its argument",
            "Document 001 (small LM slides), `prep`",
            "The split and the data come from the global `text`, whatever corpus you pass.",
            "Inside a function a name that is not a parameter or a local is looked up in the module, so "
            "`text` silently means the notebook's global, not `corpus`."),
    Pitfall("no_position", "No position embedding",
            "Document 001 (small LM slides), the self-attention model",
            "The model cannot tell order: permuting the earlier tokens leaves the last output unchanged.",
            "Attention is a weighted sum over a set: without a position vector added to each token, "
            "the same tokens in another order give the same scores, weights and context."),
    Pitfall("encode_shape", "`tokenizer.encode(char)` per character",
            "Document 000 (lecture 7), `NamesDataset`",
            "Each token becomes a one-element list: batches of shape (B, T, 1), and the model fails to unpack.",
            "`encode` returns a list of ids for a string, so encoding one character at a time wraps "
            "every id in its own list, adding a trailing dimension of size 1."),
    Pitfall("config_end_id", "`self.config` never set; `end_id` a list",
            "Document 000 (lecture 7), `GPT.forward` and `GPT.generate`",
            "Sampling crashes with an AttributeError; even with it fixed, the end test `id == [0]` is never true.",
            "The lecture's GPT stores `self.context_size` but reads `self.config.context_size`, and "
            "`tokenizer.encode('.')` is the list [0], not the id 0."),
    Pitfall("module_typos", "`def foward`, `nn.Liner`, `Linear(d_in, d_out)`",
            "Document 002, the multi-head classes",
            "The modules cannot run: a missing forward, a missing class, a shape mismatch.",
            "`nn.Module.__call__` looks for a method named exactly `forward`, `torch.nn` has no `Liner`, "
            "and out_proj receives the d_out-wide concatenated heads, not d_in."),
    Pitfall("spelling", "“CasualSelfAttention”",
            "Documents 000 and 002",
            "A spelling slip: the attention is causal (it follows cause and effect), not casual.",
            "“Causal” means each token may only look at what came before it; the class names here "
            "spell it that way, so searches and the book agree."),
]
PITFALLS: dict[str, Pitfall] = {p.key: p for p in PITFALL_LIST}
PITFALL_CHOICES = ("overview",) + tuple(PITFALLS)
ADAMW_LRS = (0.001, 0.003, 0.01)
MAX_CORPUS_CHARS = 2000


@dataclass
class PitfallsSettings:
    """Controls of the Pitfalls page (one pitfall open at a time)."""

    pitfall: str = spec("overview", choices=PITFALL_CHOICES)  # which pitfall is open ("overview": all)
    seed: int = spec(123, min=0, max=1_000_000)  # seeds every random input, model and batch order
    context_size: int = spec(12, min=1, max=32)  # window length for the names pitfalls (lecture: 12)
    optim_steps: int = spec(300, min=10, max=1000)  # steps of EACH optimizer in the SGD/AdamW race
    adamw_lr: float = spec(0.003, choices=ADAMW_LRS)  # AdamW's learning rate (SGD keeps the lecture's 0.01)
    hash_seed_a: int = spec(1, min=0, max=10_000)  # stands in for PYTHONHASHSEED of the run that saved
    hash_seed_b: int = spec(2, min=0, max=10_000)  # ... and of the run that loads
    fit_iters: int = spec(200, min=10, max=1000)  # train_iters of the slides' fit
    eval_iters: int = spec(10, min=1, max=500)  # eval_iters of the slides' fit
    prep_corpus: str = spec("hello world, hello class", max_len=MAX_CORPUS_CHARS)  # corpus passed to prep

    def problems(self) -> list[str]:
        if self.eval_iters > self.fit_iters:
            return [f"eval_iters ({self.eval_iters}) must not exceed fit_iters ({self.fit_iters})"]
        return []


def validate_corpus(corpus: str) -> str:
    """The corpus typed for the `prep` pitfall, or ValueError with a message for the student."""
    if not isinstance(corpus, str):
        raise ValueError("the corpus must be text")
    if len(corpus) > MAX_CORPUS_CHARS:
        raise ValueError(f"the corpus is too long ({len(corpus):,} characters; at most {MAX_CORPUS_CHARS:,})")
    if len(corpus.strip()) < 10:
        raise ValueError("type a corpus of at least 10 characters, so a 90/10 split leaves some validation text")
    return corpus


# ---------------------------------------------------------------------------------------------
# Shared helpers
# ---------------------------------------------------------------------------------------------


@dataclass
class Caught:
    """What running a piece of code gave: its value, or the error it raised as one line of text."""

    value: Any = None
    error: str | None = None  # "ErrorType: message", never a traceback

    @property
    def ok(self) -> bool:
        return self.error is None


def run_caught(fn: Callable, *args, **kwargs) -> Caught:
    """Run fn and catch whatever it raises: these demos exist to show the originals crashing."""
    try:
        return Caught(value=fn(*args, **kwargs))
    except Exception as exc:  # noqa: BLE001 - any crash of the buggy code is the lesson itself
        return Caught(error=f"{type(exc).__name__}: {exc}")


def _seeded(seed: int, build: Callable[[], Any]) -> Any:
    """Build something that draws from torch's global RNG (the book's classes) after
    `torch.manual_seed(seed)`, without changing the global random state seen by anyone else."""
    with attention.seeded(seed):
        return build()


def row_sums(weights: torch.Tensor) -> list[float]:
    """Sum of each row of a (T, T) weight matrix: 1.0 for every row of a correct attention."""
    return [float(v) for v in weights.sum(dim=-1)]


# ---------------------------------------------------------------------------------------------
# 1. Softmax over the wrong dimension (document 003, Method A)
# ---------------------------------------------------------------------------------------------


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


def softmax_dim_demo(seed: int = 123) -> dict:
    """The book's six tokens (batch of 2, as document 002 prints), CausalAttention(3, 2) seeded.

    Fixed: `core.attention.CausalAttention` and `core.attention.intermediates_from_module`."""
    batch = torch.stack([attention.book_embeddings()] * 2)  # (2, 6, 3)
    module = _seeded(seed, lambda: attention.CausalAttention(3, 2, 6, 0.0)).eval()
    with torch.no_grad():
        buggy_weights, buggy_context = buggy_causal_attention(module, batch)  # (2, 6, 6), (2, 6, 2)
        fixed_context = module(batch)  # (2, 6, 2)
    fixed_weights = attention.intermediates_from_module(module, batch[0]).attn_weights[0]  # (6, 6)
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
    }


# ---------------------------------------------------------------------------------------------
# 2. Masking by `scores == 0` (document 001)
# ---------------------------------------------------------------------------------------------

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


def mask_zero_demo() -> dict:
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


# ---------------------------------------------------------------------------------------------
# 3. Masking after the softmax (book 3.5.1)
# ---------------------------------------------------------------------------------------------


def buggy_mask_after_softmax(scaled_scores):
    """Softmax first, then zero the future weights (no renormalisation)."""
    attn_weights = torch.softmax(scaled_scores, dim=-1)  # (T, T) rows sum to 1 ...
    keep = torch.tril(torch.ones_like(attn_weights))  # (T, T) 1 on and below the diagonal
    return attn_weights * keep  # (T, T) ... but not any more


def renormalised_mask_after_softmax(scaled_scores):
    """The book's first fix: divide each masked row by its sum."""
    masked_weights = buggy_mask_after_softmax(scaled_scores)  # (T, T)
    return masked_weights / masked_weights.sum(dim=-1, keepdim=True)  # (T, T)


def mask_after_softmax_demo(seed: int = 789) -> dict:
    """SelfAttentionV2(3, 2) seeded (the book uses 789) on the six tokens, masked three ways."""
    x = attention.book_embeddings()  # (6, 3)
    module = _seeded(seed, lambda: attention.SelfAttentionV2(3, 2))
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


# ---------------------------------------------------------------------------------------------
# 4. No sqrt(d_k) scaling
# ---------------------------------------------------------------------------------------------

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


def scaling_demo(seed: int = 123, d_ks: Sequence[int] = SCALING_DKS, num_tokens: int = 8,
                 n_sequences: int = 64) -> pd.DataFrame:
    """Queries and keys ~ N(0, 1) (seeded), unscaled vs scaled, averaged over every query row.

    One row per (d_k, version): score std, mean max weight, mean entropy (ln T = uniform) and the
    mean norm of the softmax Jacobian (how much gradient reaches the scores)."""
    rows = []
    for d_k in d_ks:
        generator = torch.Generator().manual_seed(seed * 1000 + int(d_k))
        queries = torch.randn(n_sequences, num_tokens, d_k, generator=generator, dtype=torch.float64)  # (n, T, d_k)
        keys = torch.randn(n_sequences, num_tokens, d_k, generator=generator, dtype=torch.float64)  # (n, T, d_k)
        raw_scores = queries @ keys.transpose(-2, -1)  # (n, T, T)
        for version, fn, std in (("no scaling (buggy)", buggy_unscaled_weights, raw_scores.std()),
                                 ("÷ √d_k (fixed)", fixed_scaled_weights, raw_scores.std() / math.sqrt(d_k))):
            rows.append({"d_k": int(d_k), "version": version, "score std": float(std),
                         **_weight_stats(fn(queries, keys))})
    return pd.DataFrame(rows)


def softmax_grad_norm(scores: torch.Tensor, seed: int = 0) -> float:
    """Autograd check of the vanishing gradient: |d(sum of weights * random) / d scores|."""
    scores = scores.detach().clone().requires_grad_(True)
    upstream = torch.randn(scores.shape, generator=torch.Generator().manual_seed(seed), dtype=scores.dtype)
    (torch.softmax(scores, dim=-1) * upstream).sum().backward()
    return float(scores.grad.norm())


# ---------------------------------------------------------------------------------------------
# 5. Names shorter than the context dropped, and 11. encode(char) per character (document 000)
# ---------------------------------------------------------------------------------------------


def buggy_lecture_windows(names, tokenizer, context_size):
    """Lecture 7's NamesDataset.__init__, as written (lists; torch.tensor of them is (N, T, 1))."""
    inputs, targets = [], []
    for name in names:
        tokens = [tokenizer.encode(char) for char in name + "."]  # BUG: a list [id] per character
        # BUG: empty range unless the name is LONGER than the context: short names give nothing
        for i in range(len(tokens) - context_size):
            inputs.append(tokens[i:i + context_size])
            targets.append(tokens[i + 1:i + context_size + 1])
    return inputs, targets


def examples_by_length(names: Sequence[str], tokenizer: CharTokenizer, context_size: int) -> pd.DataFrame:
    """Per name length: how many names, and how many examples ONE such name gives each way.

    Both windowings depend on a name's length only, so one representative name per length is run
    through `buggy_lecture_windows` and `core.data.name_windows`."""
    by_length: dict[int, str] = {}
    counts = Counter(len(name) for name in names)
    for name in names:
        by_length.setdefault(len(name), name)
    rows = []
    for length in sorted(by_length):
        example = by_length[length]
        lecture_inputs, _ = buggy_lecture_windows([example], tokenizer, context_size)
        our_inputs, _ = name_windows([example], tokenizer, context_size)
        rows.append({"name length": length, "names": counts[length],
                     "lecture examples per name": len(lecture_inputs),
                     "our examples per name": len(our_inputs)})
    return pd.DataFrame(rows)


def short_names_demo(names: Sequence[str], tokenizer: CharTokenizer, context_size: int) -> dict:
    """How many names give zero examples with the lecture's windowing and with ours (all names)."""
    table = examples_by_length(names, tokenizer, context_size)
    lecture_zero = int(table.loc[table["lecture examples per name"] == 0, "names"].sum())
    # ours, counted on the full tensor: every name's FIRST window starts with "." (id 0), and no
    # later window does (it starts inside the name), so those windows count the names with examples
    our_inputs, our_targets = name_windows(names, tokenizer, context_size)  # (N, T)
    names_with_example = int((our_inputs[:, 0] == PAD_ID).sum())
    return {
        "n_names": len(names),
        "context_size": context_size,
        "lecture_zero": lecture_zero,
        "lecture_windows": int((table["names"] * table["lecture examples per name"]).sum()),
        "our_zero": len(names) - names_with_example,
        "our_windows": int(our_inputs.shape[0]),
        "our_targets": int((our_targets != IGNORE_INDEX).sum()),
        "table": table,
    }


def buggy_unpack(x):
    """The first line of the lecture's GPT.forward: it expects ids of shape (batch, time)."""
    batch_size, context_size = x.size()
    return batch_size, context_size


def encode_shape_demo(names: Sequence[str], tokenizer: CharTokenizer, context_size: int = 8,
                      batch_size: int = 32) -> dict:
    """Shapes of a batch each way, and what our GPT and the lecture's forward make of them."""
    long_names = [name for name in names if len(name) + 1 > context_size][:batch_size]
    lecture_inputs, lecture_targets = buggy_lecture_windows(long_names, tokenizer, context_size)
    if not lecture_inputs:  # no name is longer than the context: the lecture's dataset is empty
        return {"buggy_shape": None}
    buggy_x = torch.tensor(lecture_inputs[:batch_size])  # (B, T, 1)
    buggy_y = torch.tensor(lecture_targets[:batch_size])  # (B, T, 1)
    fixed_x, fixed_y = name_windows(list(names[:batch_size]), tokenizer, context_size)  # (N, T)
    fixed_x, fixed_y = fixed_x[:batch_size], fixed_y[:batch_size]  # (B, T)
    model = GPT(GPTConfig(vocab_size=tokenizer.vocab_size, context_size=context_size, n_layer=1,
                          n_head=1, d_embed=16, d_ff=32, dropout=0.0), seed=0).eval()
    with torch.no_grad():
        fixed_run = run_caught(lambda: model(fixed_x, fixed_y))
        buggy_run = run_caught(lambda: model(buggy_x, buggy_y))
    return {
        "buggy_first": lecture_inputs[0],  # the lecture's first example: a list of one-element lists
        "fixed_first": fixed_x[0].tolist(),  # ours: a flat list of ids
        "buggy_shape": tuple(buggy_x.shape),
        "buggy_target_shape": tuple(buggy_y.shape),
        "fixed_shape": tuple(fixed_x.shape),
        "fixed_target_shape": tuple(fixed_y.shape),
        "buggy_unpack": run_caught(buggy_unpack, buggy_x),
        "fixed_unpack": run_caught(buggy_unpack, fixed_x),
        "buggy_model": buggy_run,
        "fixed_logits_shape": tuple(fixed_run.value[0].shape) if fixed_run.ok else None,
        "fixed_loss": float(fixed_run.value[1]) if fixed_run.ok else None,
    }


# ---------------------------------------------------------------------------------------------
# 6. SGD at lr 0.01 against AdamW (document 000)
# ---------------------------------------------------------------------------------------------


def buggy_sgd_config(steps: int, seed: int) -> TrainConfig:
    """The lecture's run: its GPTConfig, batch 32, plain SGD at lr 0.01 (shortened to `steps`)."""
    config = lecture_config()  # core.engine: optimizer="sgd", lr=0.01, no weight decay
    return replace(config, max_steps=steps, seed=seed, device="cpu")


def fixed_adamw_config(steps: int, seed: int, lr: float = 0.003) -> TrainConfig:
    """The same model, data, batches and steps; only the optimizer changes to AdamW."""
    config = buggy_sgd_config(steps, seed)
    return replace(config, optimizer="adamw", lr=lr, weight_decay=0.01)


RACE_VAL_WINDOWS = 1024  # curve points are measured on this many held-out windows (one eval batch)


def optimizer_race_configs(steps: int, seed: int, adamw_lr: float) -> dict[str, TrainConfig]:
    """The two runs of the race, by label, with the same measuring schedule: a validation point
    every tenth of the run (at least every 10 steps) on the first RACE_VAL_WINDOWS held-out windows,
    because a full pass per point would cost more than the training itself."""
    measure = {"val_interval": max(10, steps // 10), "val_batches": 1, "eval_batch_size": RACE_VAL_WINDOWS}
    return {"SGD lr 0.01 (lecture)": replace(buggy_sgd_config(steps, seed), **measure),
            f"AdamW lr {adamw_lr:g}": replace(fixed_adamw_config(steps, seed, adamw_lr), **measure)}


def race_trainers(steps: int, seed: int, adamw_lr: float, data: NamesData) -> dict[str, Trainer]:
    """One core.engine.Trainer per optimizer, on the same names data (trained by the page in slices)."""
    return {label: Trainer(config, data) for label, config in optimizer_race_configs(steps, seed, adamw_lr).items()}


def race_result(trainers: dict[str, Trainer]) -> dict:
    """What a finished race keeps: loss histories, the final validation loss of each run on the whole
    validation split, and the AdamW model's weights (for sampling on another pitfall)."""
    adamw_label = next(label for label in trainers if label.startswith("AdamW"))
    adamw = trainers[adamw_label]
    return {
        "histories": {label: {k: list(v) for k, v in t.history.items()} for label, t in trainers.items()},
        # the reported number: one pass over the WHOLE validation split
        "final_val": {label: t.evaluate("val") for label, t in trainers.items()},
        "steps": {label: t.step for label, t in trainers.items()},
        "adamw_model": {k: v.detach().cpu().clone() for k, v in adamw.model.state_dict().items()},
        "model_config": adamw.config.model.to_dict(),
    }


def model_from_result(result: dict) -> GPT:
    """The AdamW-trained GPT of a finished race, rebuilt from its weights."""
    model = GPT(GPTConfig.from_dict(result["model_config"]), seed=0)
    model.load_state_dict(result["adamw_model"])
    return model.eval()


def race_frame(histories: dict[str, dict]) -> pd.DataFrame:
    """Long-form loss curves (step, loss, optimizer, split) from Trainer.history dicts.

    The training loss is a running mean over 10 steps, so the noise of single batches of 32 does
    not hide the trend; the validation loss is measured on the whole validation split."""
    frames = []
    for label, history in histories.items():
        if history["steps"]:
            smooth = pd.Series(history["train_loss"]).rolling(10, min_periods=1).mean()
            frames.append(pd.DataFrame({"step": history["steps"], "loss": smooth,
                                        "optimizer": label, "split": "train (mean of 10 steps)"}))
        if history["val_steps"]:
            frames.append(pd.DataFrame({"step": history["val_steps"], "loss": history["val_loss"],
                                        "optimizer": label, "split": "validation"}))
    if not frames:
        return pd.DataFrame(columns=["step", "loss", "optimizer", "split"])
    return pd.concat(frames, ignore_index=True)


# ---------------------------------------------------------------------------------------------
# 7. Unsorted vocabulary (document 000)
# ---------------------------------------------------------------------------------------------


def buggy_vocab(names, hash_seed):
    """Lecture 7's vocabulary: `list(set(...))` then "." in front.

    A set of strings is ordered by string hashes, which Python salts per process
    (PYTHONHASHSEED). This process has one salt, so the shuffle by `hash_seed` stands in for
    the order another process (another run, a restart) would list the same set in."""
    vocab = list(set("".join(names)))
    random.Random(hash_seed).shuffle(vocab)  # stand-in for a new process's hash order
    vocab.insert(0, ".")
    return vocab


def fixed_vocab(names, hash_seed):
    """core.tokenizers.CharTokenizer: sorted, "." first, whatever order the set comes in."""
    chars = list(set("".join(names)))
    random.Random(hash_seed).shuffle(chars)  # the same stand-in for the hash order
    return CharTokenizer.from_text("".join(chars)).vocab


def fit_bigram_probs(names: Sequence[str], vocab: Sequence[str]) -> torch.Tensor:
    """A bigram model "trained and saved" under one vocabulary: next-id probabilities (V, V)."""
    stoi = {char: idx for idx, char in enumerate(vocab)}
    ids = torch.tensor([stoi[char] for char in "".join(f".{name}" for name in names) + "."])  # (n_chars,)
    counts = torch.ones(len(vocab), len(vocab))  # (V, V) add-one smoothing
    counts.index_put_((ids[:-1], ids[1:]), torch.ones(len(ids) - 1), accumulate=True)  # (V, V)
    return counts / counts.sum(dim=1, keepdim=True)  # (V, V)


def sample_bigram_ids(probs: torch.Tensor, n: int, seed: int, max_len: int = 20) -> list[list[int]]:
    """Sample `n` id sequences from the saved bigram model, each until id 0 (".")."""
    generator = torch.Generator().manual_seed(seed)
    samples = []
    for _ in range(n):
        ids, current = [], 0
        for _ in range(max_len):
            current = int(torch.multinomial(probs[current], 1, generator=generator))
            if current == 0:
                break
            ids.append(current)
        samples.append(ids)
    return samples


def vocab_order_demo(names: Sequence[str], hash_seed_a: int, hash_seed_b: int, seed: int = 0,
                     n_samples: int = 8) -> dict:
    """Save a model under run A's ids, load it in run B: decode its samples with both vocabularies."""
    buggy_a, buggy_b = buggy_vocab(names, hash_seed_a), buggy_vocab(names, hash_seed_b)
    fixed_a, fixed_b = fixed_vocab(names, hash_seed_a), fixed_vocab(names, hash_seed_b)
    buggy_ids = sample_bigram_ids(fit_bigram_probs(names, buggy_a), n_samples, seed)
    fixed_ids = sample_bigram_ids(fit_bigram_probs(names, fixed_a), n_samples, seed)
    decode = lambda vocab, ids: "".join(vocab[i] for i in ids)  # noqa: E731
    samples = pd.DataFrame({
        "saved ids (run A)": [" ".join(map(str, ids)) for ids in buggy_ids],
        "buggy: decoded in run A": [decode(buggy_a, ids) for ids in buggy_ids],
        "buggy: decoded in run B": [decode(buggy_b, ids) for ids in buggy_ids],
        "fixed: decoded in run A": [decode(fixed_a, ids) for ids in fixed_ids],
        "fixed: decoded in run B": [decode(fixed_b, ids) for ids in fixed_ids],
    })
    letters = sorted(set("".join(names)))
    ids_table = pd.DataFrame({
        "character": letters,
        "buggy id, run A": [buggy_a.index(c) for c in letters],
        "buggy id, run B": [buggy_b.index(c) for c in letters],
        "fixed id, run A": [fixed_a.index(c) for c in letters],
        "fixed id, run B": [fixed_b.index(c) for c in letters],
    })
    return {
        "samples": samples,
        "ids": ids_table,
        "buggy_changed": int((ids_table["buggy id, run A"] != ids_table["buggy id, run B"]).sum()),
        "fixed_changed": int((ids_table["fixed id, run A"] != ids_table["fixed id, run B"]).sum()),
        "n_chars": len(letters),
        "buggy_same_samples": int((samples["buggy: decoded in run A"] == samples["buggy: decoded in run B"]).sum()),
        "fixed_same_samples": int((samples["fixed: decoded in run A"] == samples["fixed: decoded in run B"]).sum()),
    }


# ---------------------------------------------------------------------------------------------
# 8. The training step inside the evaluation `if`, and 9. `prep` reading a global (document 001)
# ---------------------------------------------------------------------------------------------

# The small-LM slides train on a tiny repeated sentence; this is ours, in the same spirit.
SLIDES_TEXT = "the quick brown fox jumps over the lazy dog. " * 40
FIT_LR = 0.01  # Adam's learning rate in the fit demo (the slides' default 1e-4 barely moves in 200 steps)


def buggy_fit(model, get_batch, eval_loss,
              train_iters=100, eval_iters=10,
              lr=FIT_LR):
    """The slides' fit, indentation as written."""
    optimizer = torch.optim.Adam(
        model.parameters(), lr=lr)
    optimizer_steps, curve = 0, []
    for iteration in range(train_iters):
        if iteration % eval_iters == 0:
            loss = eval_loss(model)
            curve.append((iteration, loss))
            # BUG: one level too deep, so the
            # model trains only on eval iterations
            x, y = get_batch("train")
            _, ce_loss = model(x, y)
            optimizer.zero_grad()
            ce_loss.backward()
            optimizer.step()
            optimizer_steps += 1
    return optimizer_steps, curve


def fixed_fit(model, get_batch, eval_loss,
              train_iters=100, eval_iters=10,
              lr=FIT_LR):
    """The same loop, training on every iteration."""
    optimizer = torch.optim.Adam(
        model.parameters(), lr=lr)
    optimizer_steps, curve = 0, []
    for iteration in range(train_iters):
        if iteration % eval_iters == 0:
            loss = eval_loss(model)
            curve.append((iteration, loss))
        # one level out: every iteration trains
        x, y = get_batch("train")
        _, ce_loss = model(x, y)
        optimizer.zero_grad()
        ce_loss.backward()
        optimizer.step()
        optimizer_steps += 1
    return optimizer_steps, curve


def _slides_setup(seed: int, block_size: int = 8, batch_size: int = 6):
    """The slides' data: char tokenizer, 90/10 split, random blocks (B=6, T=8) from a seeded generator."""
    tokenizer = CharTokenizer.from_text(SLIDES_TEXT)
    train_data, val_data = train_val_split_tensor(encode_corpus(SLIDES_TEXT, tokenizer), 0.1)
    generator = torch.Generator().manual_seed(seed)
    splits = {"train": train_data, "val": val_data}

    def batch(split):
        return get_batch(splits[split], block_size, batch_size, generator)  # (B, T), (B, T)

    val_generator_seed = seed + 1

    @torch.no_grad()
    def eval_loss(model, n_batches=10):
        val_generator = torch.Generator().manual_seed(val_generator_seed)  # the same batches each time
        model.eval()
        losses = [model(*get_batch(val_data, block_size, batch_size, val_generator))[1] for _ in range(n_batches)]
        model.train()
        return float(torch.stack(losses).mean())

    return tokenizer, batch, eval_loss


def check_fit_args(fit_iters: int, eval_iters: int) -> None:
    """ValueError unless the fit demo's iteration counts make sense."""
    if not 1 <= eval_iters <= fit_iters:
        raise ValueError(f"eval_iters ({eval_iters}) must be between 1 and train_iters ({fit_iters})")


def fit_indent_demo(fit_iters: int = 200, eval_iters: int = 10, seed: int = 123) -> dict:
    """Both fits on the slides' one-head model, same seed, same data; count the optimizer steps."""
    check_fit_args(fit_iters, eval_iters)
    results = {}
    for label, fit in (("buggy", buggy_fit), ("fixed", fixed_fit)):
        tokenizer, batch, eval_loss = _slides_setup(seed)
        model = SingleHeadLM(tokenizer.vocab_size, n_embd=32, block_size=8, head_size=16, seed=seed)
        steps, curve = fit(model, batch, eval_loss, train_iters=fit_iters, eval_iters=eval_iters)
        results[label] = {"steps": steps, "curve": curve, "final_val": eval_loss(model)}
    curve = pd.DataFrame(
        [{"iteration": it, "loss": loss, "version": f"{label}: {results[label]['steps']} optimizer steps"}
         for label in results for it, loss in results[label]["curve"]]
        + [{"iteration": fit_iters, "loss": results[label]["final_val"],
            "version": f"{label}: {results[label]['steps']} optimizer steps"} for label in results])
    return {"buggy_steps": results["buggy"]["steps"], "fixed_steps": results["fixed"]["steps"],
            "buggy_val": results["buggy"]["final_val"], "fixed_val": results["fixed"]["final_val"],
            "curve": curve}


text = SLIDES_TEXT  # the notebook's global; buggy_prep reads it by accident


def buggy_prep(corpus):
    """The slides' prep (as a function): the vocabulary comes from `corpus`, the data from `text`."""
    vocab = sorted(list(set(corpus)))
    c2i = {c: i for i, c in enumerate(vocab)}
    encoder = lambda doc: [c2i[c] for c in doc]
    n = len(text)  # BUG: the global `text`, not the argument `corpus`
    train_text = text[:int(n * 0.9)]
    val_text = text[int(n * 0.9):]
    train_data = torch.tensor(encoder(train_text), dtype=torch.long)
    val_data = torch.tensor(encoder(val_text), dtype=torch.long)
    return {"vocab": vocab, "train_text": train_text, "val_text": val_text,
            "train_data": train_data, "val_data": val_data}


def fixed_prep(corpus):
    """The same with core code on the argument: CharTokenizer, encode_corpus, a 90/10 split."""
    tokenizer = CharTokenizer.from_text(corpus)
    train_data, val_data = train_val_split_tensor(encode_corpus(corpus, tokenizer), 0.1)
    n_train = len(train_data)
    return {"vocab": tokenizer.vocab, "train_text": corpus[:n_train], "val_text": corpus[n_train:],
            "train_data": train_data, "val_data": val_data}


def prep_global_demo(corpus: str) -> dict:
    """Run both on the student's corpus; the buggy one either crashes or silently uses `text`."""
    corpus = validate_corpus(corpus)
    buggy, fixed = run_caught(buggy_prep, corpus), run_caught(fixed_prep, corpus)

    def describe(result: Caught) -> dict:
        if not result.ok:
            return {"outcome": result.error, "characters split": "—", "train text starts": "—",
                    "train data shape": "—"}
        out = result.value
        return {"outcome": "ran", "characters split": str(len(out["train_text"]) + len(out["val_text"])),
                "train text starts": repr(out["train_text"][:40]),
                "train data shape": str(tuple(out["train_data"].shape))}

    table = pd.DataFrame([{"version": "buggy prep (reads global text)", **describe(buggy)},
                          {"version": "fixed prep (reads corpus)", **describe(fixed)}])
    return {"corpus_chars": len(corpus), "global_chars": len(text), "buggy": buggy, "fixed": fixed,
            "table": table}


# ---------------------------------------------------------------------------------------------
# 10. No position embedding (document 001)
# ---------------------------------------------------------------------------------------------

ORDER_TEXT = " lazy do"  # 8 characters (the slides' block size); what follows "o" depends on order


def buggy_forward_no_position(self, in_ids):
    """The slides' forward (`self` is a SingleHeadLM): token embeddings only, no positions."""
    in_ids_emb = self.token_embedding(in_ids)  # (B, T, n_embd)  BUG: no position embedding added
    sa_head_outputs, _ = self.sa_head(in_ids_emb)  # (B, T, head_size)
    logits = self.lm_head(sa_head_outputs)  # (B, T, V)
    return logits


def _permute_prefix(text_in: str, seed: int) -> str:
    """The same characters with all but the last shuffled (seeded), guaranteed to differ."""
    prefix = list(text_in[:-1])
    rng = random.Random(seed)
    for _ in range(20):
        rng.shuffle(prefix)
        if "".join(prefix) != text_in[:-1]:
            break
    return "".join(prefix) + text_in[-1]


def no_position_demo(seed: int = 123, train_iters: int = 300) -> dict:
    """Train the slides' model without and with position embeddings (same seed, same batches),
    then compare their next-character predictions after ORDER_TEXT and after a permutation."""
    models = {}
    for label, use_position in (("buggy: no positions", False), ("fixed: + position embedding", True)):
        tokenizer, batch, eval_loss = _slides_setup(seed)
        model = SingleHeadLM(tokenizer.vocab_size, n_embd=32, block_size=8, head_size=16,
                             use_position=use_position, seed=seed)
        fixed_fit(model, batch, eval_loss, train_iters=train_iters, eval_iters=train_iters)
        models[label] = model.eval()
    permuted = _permute_prefix(ORDER_TEXT, seed)
    ids = torch.tensor([tokenizer.encode(ORDER_TEXT), tokenizer.encode(permuted)])  # (2, 8)
    rows, diffs = [], {}
    with torch.no_grad():
        for label, model in models.items():
            logits = buggy_forward_no_position(model, ids) if not model.use_position else model(ids)[0]  # (2, 8, V)
            probs = torch.softmax(logits[:, -1], dim=-1)  # (2, V) next character after the last token
            diffs[label] = float((logits[0, -1] - logits[1, -1]).abs().max())
            for row, shown in enumerate((ORDER_TEXT, permuted)):
                top = torch.topk(probs[row], 3)
                rows.append({"model": label, "input": repr(shown),
                             "top next characters": ", ".join(f"{tokenizer.decode([int(i)])!r} {float(p):.3f}"
                                                              for p, i in zip(top.values, top.indices))})
    return {"text": ORDER_TEXT, "permuted": permuted, "predictions": pd.DataFrame(rows),
            "max_logit_diff": diffs, "train_iters": train_iters}


# ---------------------------------------------------------------------------------------------
# 12. self.config never set, end_id a list (document 000)
# ---------------------------------------------------------------------------------------------


class BuggyLectureGPT(nn.Module):
    """Lecture 7's GPT.generate around one of our GPTs: it stores context_size, never self.config."""

    def __init__(self, gpt: GPT):
        super().__init__()
        self.gpt = gpt
        self.context_size = gpt.block_size  # the lecture sets this ... but reads self.config below

    def forward(self, x):
        batch_size, context_size = x.size()
        assert context_size <= self.context_size, \
            f"context_size should be <= {self.config.context_size}, got {context_size}"  # BUG: self.config
        return self.gpt(x)[0]  # (B, T, V)

    @torch.no_grad()
    def generate(self, tokenizer, generator, max_len=20):
        self.eval()
        end_id = tokenizer.encode(".")  # BUG: the list [0], not the id 0
        context = [end_id] * self.context_size
        context = torch.tensor(context, dtype=torch.long).unsqueeze(0)  # (1, T, 1), not (1, T)
        name = ""
        for _ in range(max_len):  # the lecture loops `while True`
            context = context[:, -self.config.context_size:]  # BUG: self.config was never set
            logits = self.forward(context)[:, -1, :]  # (1, V)
            next_token = torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator)  # (1, 1)
            context = torch.cat((context, next_token), dim=-1)
            name += tokenizer.decode([next_token[0].item()])
            if next_token[0].item() == end_id:  # BUG: an int never equals a list
                break
        return name


def config_end_id_demo(tokenizer: CharTokenizer, seed: int = 123, model: GPT | None = None) -> dict:
    """The lecture's generate crashing twice, and core.models.generate sampling from the same GPT."""
    if model is None:
        model = GPT(GPTConfig(vocab_size=tokenizer.vocab_size, dropout=0.0), seed=seed)
    buggy = BuggyLectureGPT(model)
    first = run_caught(buggy.generate, tokenizer, torch.Generator().manual_seed(seed))
    too_long = torch.zeros(1, model.block_size + 1, dtype=torch.long)  # (1, T + 1) one id too many
    with torch.no_grad():
        assert_error = run_caught(buggy, too_long)
    buggy.config = model.config  # patch the first bug by hand: the next one appears
    second = run_caught(buggy.generate, tokenizer, torch.Generator().manual_seed(seed))
    end_id = tokenizer.encode(".")
    start = torch.zeros(4, 1, dtype=torch.long)  # (4, 1) four names, each starting from "."
    out = generate(model, start, max_new_tokens=20, generator=torch.Generator().manual_seed(seed),
                   stop_token=0)  # (4, <= 21)
    names = []
    for row in out[:, 1:].tolist():
        names.append(tokenizer.decode(row[:row.index(0)] if 0 in row else row))
    return {"first_error": first.error, "assert_error": assert_error.error, "second_error": second.error,
            "end_id": end_id,
            "end_test": (0 == end_id), "fixed_names": names}


# ---------------------------------------------------------------------------------------------
# 13. def foward, nn.Liner, out_proj = Linear(d_in, d_out) (document 002)
# ---------------------------------------------------------------------------------------------


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


def module_typos_demo(seed: int = 123) -> pd.DataFrame:
    """Run each broken module on the book's batch (2, 6, 3), and core.attention.MultiHeadAttention."""
    batch = torch.stack([attention.book_embeddings()] * 2)  # (2, 6, 3)
    typo = _seeded(seed, lambda: BuggyForwardTypo(3, 4, 2))
    out_proj = _seeded(seed, lambda: BuggyOutProj(3, 4, 6, 2))
    fixed = _seeded(seed, lambda: attention.MultiHeadAttention(3, 4, 6, 0.0, num_heads=2)).eval()
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


def buggy_find_attention_class():
    """Code written against the lecture's class name, run against ours."""
    from core import models

    return models.CasualSelfAttention  # BUG: "Casual", the lecture's spelling


def fixed_find_attention_class():
    """The same lookup with the right spelling."""
    from core import models

    return models.CausalSelfAttention


def spelling_demo() -> dict:
    """Both lookups, and the attention class names inside our GPT."""
    gpt = GPT(GPTConfig(n_layer=1, n_head=1, d_embed=8, d_ff=8, dropout=0.0), seed=0)
    names = sorted({type(m).__name__ for m in gpt.modules() if "Attention" in type(m).__name__})
    buggy, fixed = run_caught(buggy_find_attention_class), run_caught(fixed_find_attention_class)
    return {"attention_classes": names, "buggy_error": buggy.error,
            "fixed_class": fixed.value.__name__ if fixed.ok else None}


# ---------------------------------------------------------------------------------------------
# Chart builders (pure Altair)
# ---------------------------------------------------------------------------------------------


def row_sums_chart(sums: pd.DataFrame, *, lecture: bool = False, title: str = "Row sums") -> alt.LayerChart:
    """Grouped bars of each query's row sum, one colour per version, a rule at 1 and the values."""
    size = 16 if lecture else 11
    order = list(dict.fromkeys(sums["query"]))
    base = alt.Chart(sums).encode(
        x=alt.X("query:N", sort=order, title="query token (row)", axis=alt.Axis(labelAngle=0)),
        xOffset=alt.XOffset("version:N", sort=list(dict.fromkeys(sums["version"]))),
        y=alt.Y("row_sum:Q", title="sum of the row's weights"),
        color=alt.Color("version:N", scale=alt.Scale(range=charts.palette(lecture)), title=None,
                        sort=list(dict.fromkeys(sums["version"])), legend=alt.Legend(orient="top")),
        tooltip=["query:N", "version:N", alt.Tooltip("row_sum:Q", format=".4f")],
    )
    bars = base.mark_bar()
    labels = base.mark_text(dy=-7, fontSize=size - 2).encode(text=alt.Text("row_sum:Q", format=".2f"))
    rule = alt.Chart(pd.DataFrame({"y": [1.0]})).mark_rule(strokeDash=[6, 4], color="black").encode(y="y:Q")
    return alt.layer(bars, labels, rule).properties(title=title, width=max(360, 90 * len(order)), height=260)


SCALING_METRICS = ("max weight", "entropy (nats)", "softmax gradient")


def scaling_chart(table: pd.DataFrame, metric: str, *, lecture: bool = False, width: int = 210) -> alt.Chart:
    """One metric of `scaling_demo` against d_k (log scale), one line per version."""
    return alt.Chart(table).mark_line(point=True, strokeWidth=3 if lecture else 2).encode(
        x=alt.X("d_k:Q", scale=alt.Scale(type="log", base=2), title="d_k (log scale)",
                axis=alt.Axis(values=list(SCALING_DKS))),
        y=alt.Y(f"{metric}:Q", title=metric, scale=alt.Scale(zero=True)),
        color=alt.Color("version:N", scale=alt.Scale(range=charts.palette(lecture)), title=None,
                        legend=alt.Legend(orient="top")),
        tooltip=["d_k:Q", "version:N", alt.Tooltip(f"{metric}:Q", format=".4f")],
    ).properties(title=metric, width=width, height=220)


def scaling_figure(table: pd.DataFrame, *, lecture: bool = False) -> alt.HConcatChart:
    """The three metrics side by side in one figure, one shared legend."""
    width = 170 if lecture else 185
    return alt.hconcat(*[scaling_chart(table, metric, lecture=lecture, width=width) for metric in SCALING_METRICS],
                       spacing=28)


def names_length_chart(table: pd.DataFrame, *, lecture: bool = False) -> alt.Chart:
    """Names by length, split into those the lecture's windowing keeps and drops."""
    long = pd.DataFrame({
        "name length": list(table["name length"]) * 2,
        "names": list(table["names"].where(table["lecture examples per name"] == 0, 0))
        + list(table["names"].where(table["lecture examples per name"] > 0, 0)),
        "lecture windowing": ["gives no example (dropped)"] * len(table) + ["gives examples"] * len(table),
    })
    long = long[long["names"] > 0]
    colors = charts.palette(lecture)
    return alt.Chart(long).mark_bar().encode(
        x=alt.X("name length:O", title="name length (characters)", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("names:Q", title="number of names"),
        color=alt.Color("lecture windowing:N", scale=alt.Scale(
            domain=["gives no example (dropped)", "gives examples"], range=[colors[3], colors[2]]),
            title=None, legend=alt.Legend(orient="top")),
        tooltip=["name length:O", "lecture windowing:N", "names:Q"],
    ).properties(title="Names by length: which ones the lecture's windowing drops", width=560, height=260)
