"""Everything the four attention walkthrough pages compute, on top of core/attention.py.

The pages (simple attention, trainable weights, causal mask and dropout, multi-head) share one
`WalkthroughSettings` object, so an embedding edited on page 1 is the one page 4 splits into heads.
This module holds:

- the settings dataclass (URL- and lesson-ready through core.settings);
- the validation of the embeddings table and of pasted CSV (one function each), random
  embeddings and the small table edits (add or remove a dimension);
- the computations of each page: the one-query walk (ω, α, z), the projections W_q, W_k, W_v
  (V1 `nn.Parameter` or V2 `nn.Linear`, seeded or hand-edited), causal masking and the
  masking-order comparison, dropout, multi-head with the wrapper vs the split-head class;
- checks against references: PyTorch's `F.scaled_dot_product_attention`, the book's classes,
  and the numbers printed in the book;
- the numbers of the scaling panel (softmax with and without 1/√d_k as d_k grows);
- chart builders specific to these lessons (bars with values, labelled heatmaps with masked,
  dropped and undefined cells marked).

Everything is computed in float64: embeddings up to 1e100 still give finite scores, and the
published 4-decimal numbers of the book are reproduced exactly.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import hashlib
import math
from dataclasses import dataclass
from typing import Sequence

import altair as alt
import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from core import attention, viz as charts
from core.attention import (
    BOOK_TOKENS,
    AttentionSteps,
    CausalAttention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    SelfAttentionV1,
    SelfAttentionV2,
)
from core.settings import spec
from altair.utils.schemapi import debug_mode

# ----------------------------------------------------------------------------------- limits
MAX_TOKENS = 64          # a 64 x 64 attention map is still readable as colours
MAX_DIMS = 64            # embedding dimensions d_in, and the largest d_out
MAX_ABS = 1e100          # larger values overflow float64 once multiplied (1e100^2 * 64 > 1e308)
MAX_TOKEN_CHARS = 40     # longer names would swamp the chart axes
MAX_CSV_CHARS = 200_000  # a 64 x 64 table of long numbers is about 100k characters
LARGE_VALUE = 1e6        # above this, softmax of the scores is one-hot; worth telling the student
MAX_SEED = 2**31 - 1
SHOWN_PROBLEMS = 5       # how many bad cells one message lists

# ----------------------------------------------------------------------------------- steps
SIMPLE_STEPS = ("scores", "weights", "context", "matrix")
SIMPLE_STEP_LABELS = {"scores": "1 · ω scores", "weights": "2 · α weights",
                      "context": "3 · z context", "matrix": "4 · all tokens"}
SELF_STEPS = ("weights", "qkv", "scores", "scaled", "softmax", "context")
SELF_STEP_LABELS = {"weights": "1 · W_q W_k W_v", "qkv": "2 · Q K V", "scores": "3 · scores QKᵀ",
                    "scaled": "4 · ÷ √d_k", "softmax": "5 · softmax", "context": "6 · context"}
CAUSAL_STEPS = ("scores", "mask", "masked", "weights", "order", "dropout", "context")
CAUSAL_STEP_LABELS = {"scores": "1 · scaled scores", "mask": "2 · mask", "masked": "3 · masked scores",
                      "weights": "4 · weights", "order": "5 · mask order",
                      "dropout": "6 · dropout", "context": "7 · context"}
MULTI_STEPS = ("heads", "concat", "classes", "why")
MULTI_STEP_LABELS = {"heads": "1 · one map per head", "concat": "2 · concat + out_proj",
                     "classes": "3 · two classes", "why": "4 · why heads differ"}
SCALE_DKS = (2, 4, 8, 16, 32, 64, 128, 256, 512)
SLIDE_LOGITS = (0.1, 0.4, -0.9, 0.02, 0.35, -0.62)  # the slides' example of peaky softmax

# numbers printed in the course material, for the "matches the book" checks
BOOK_EMBEDDINGS = [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64],
                   [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]]
BOOK_V1_SEED, BOOK_V1_FIRST_ROW = 123, [0.2996, 0.8053]
BOOK_V2_SEED, BOOK_V2_FIRST_ROW = 789, [-0.0739, 0.0713]
BOOK_CAUSAL_ROWS = [[-0.4519, 0.2216], [-0.5874, 0.0058], [-0.6300, -0.0632],
                    [-0.5675, -0.0843], [-0.5526, -0.0981], [-0.5299, -0.1081]]
BOOK_WRAPPER_FIRST_ROW = [-0.4519, 0.2216, 0.4772, 0.1063]


def _book_tokens() -> list[str]:
    return list(BOOK_TOKENS)


def _book_rows() -> list[list[float]]:
    return [list(row) for row in BOOK_EMBEDDINGS]


# ----------------------------------------------------------------------------------- settings
@dataclass
class WalkthroughSettings:
    """The controls of the four walkthrough pages (one object, shared; URL prefix "walkthrough")."""

    tokens: list[str] = spec(factory=_book_tokens, max_len=MAX_TOKENS)  # token names, one per row
    embeddings: list[list[float]] = spec(factory=_book_rows, max_len=MAX_TOKENS)  # (T, d_in), last valid
    embed_seed: int = spec(0, min=0, max=MAX_SEED)  # seed of "random embeddings"
    query: int = spec(1, min=0, max=MAX_TOKENS - 1)  # index of the query token (1 = "journey")
    step: str = spec("scores", choices=SIMPLE_STEPS)  # page 1 stepper
    sa_step: str = spec("weights", choices=SELF_STEPS)  # page 2 stepper
    causal_step: str = spec("mask", choices=CAUSAL_STEPS)  # page 3 stepper
    mh_step: str = spec("heads", choices=MULTI_STEPS)  # page 4 stepper
    d_out: int = spec(2, min=1, max=MAX_DIMS)  # width of queries, keys, values (all heads together)
    weight_seed: int = spec(123, min=0, max=MAX_SEED)  # torch.manual_seed before building W_q, W_k, W_v
    variant: str = spec("v1", choices=("v1", "v2"))  # v1: nn.Parameter(torch.rand), v2: nn.Linear
    qkv_bias: bool = spec(False)  # v2 only: nn.Linear(..., bias=True)
    custom_weights: list[list[list[float]]] = spec(factory=list, max_len=3)  # [] or hand-edited W_q, W_k, W_v
    causal: bool = spec(True)  # hide later tokens (pages 3 and 4)
    dropout_p: float = spec(0.0, min=0.0, max=0.9)  # probability of dropping an attention weight
    dropout_seed: int = spec(0, min=0, max=MAX_SEED)  # which weights get dropped
    train_mode: bool = spec(False)  # dropout is active only in training mode
    num_heads: int = spec(2, min=1, max=MAX_DIMS)  # page 4; must divide d_out
    same_init: bool = spec(False)  # page 4: give every head head 0's initial weights
    scale_dk: int = spec(64, choices=SCALE_DKS)  # page 2 scaling panel
    predict: bool = spec(False)  # hide each result until the student commits a guess

    def problems(self) -> list[str]:
        """Cross-field rules for a shared link or a lesson file (checked on load)."""
        if len(self.tokens) != len(self.embeddings):
            return [f"{len(self.tokens)} token names for {len(self.embeddings)} embedding rows"]
        try:
            validate_embedding_table(embedding_frame(self.tokens, self.embeddings))
        except ValueError as exc:
            return [f"embeddings: {exc}"]
        if self.custom_weights and not _weights_well_formed(self.custom_weights):
            return ["custom_weights: expected three matrices of the same shape with finite values"]
        return []


def _weights_well_formed(weights) -> bool:
    if len(weights) != 3:
        return False
    shapes = set()
    for matrix in weights:
        if not matrix or any(len(row) != len(matrix[0]) for row in matrix):
            return False
        arr = np.asarray(matrix, dtype=np.float64)
        if not np.isfinite(arr).all() or np.abs(arr).max() > MAX_ABS:
            return False
        shapes.add(arr.shape)
    return len(shapes) == 1


def settings_equal_book(settings: WalkthroughSettings) -> bool:
    """True when the page computes on the book's six tokens and embeddings."""
    return settings.tokens == list(BOOK_TOKENS) and settings.embeddings == BOOK_EMBEDDINGS


# ----------------------------------------------------------------------------------- embeddings
class EmbeddingError(ValueError):
    """An embeddings table that cannot be used; the message says which cell and why."""


@dataclass
class EmbeddingTable:
    """A validated table: unique-or-warned token names and a (T, d_in) list of finite floats."""

    tokens: list[str]
    embeddings: list[list[float]]
    warnings: list[str]

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.embeddings), len(self.embeddings[0])


def dim_names(d_in: int) -> list[str]:
    """Column names of the embedding dimensions: d1, d2, ..."""
    return [f"d{j + 1}" for j in range(d_in)]


def embedding_frame(tokens: Sequence[str], embeddings: Sequence[Sequence[float]]) -> pd.DataFrame:
    """The editor's table: a token column, then one column per dimension."""
    widths = {len(row) for row in embeddings}
    if len(widths) > 1:
        raise EmbeddingError("the rows have different lengths")
    d_in = widths.pop() if widths else 0
    frame = pd.DataFrame(np.asarray(embeddings, dtype=np.float64).reshape(len(embeddings), d_in),
                         columns=dim_names(d_in))
    names = [str(t) for t in tokens][:len(embeddings)]
    frame.insert(0, "token", names + [""] * (len(embeddings) - len(names)))
    return frame


def _parse_cell(raw) -> tuple[float | None, str | None]:
    """A number from one table cell, or the reason it is not usable."""
    if raw is None or (isinstance(raw, float) and math.isnan(raw)):
        return None, "the cell is empty"
    if isinstance(raw, (bool, np.bool_)):
        return None, "true/false is not a number"
    if isinstance(raw, (int, float, np.integer, np.floating)):
        value = float(raw)
    elif isinstance(raw, str):
        text = raw.strip().replace("−", "-")  # a minus sign pasted from a document
        if not text:
            return None, "the cell is empty"
        try:
            value = float(text)
        except ValueError:
            return None, f"“{text[:20]}” is not a number"
        if math.isnan(value):
            return None, "NaN (not a number) cannot be used"
    else:
        return None, f"a {type(raw).__name__} is not a number"
    if math.isnan(value):
        return None, "the cell is empty"
    if math.isinf(value):
        return None, f"{'−' if value < 0 else ''}∞ cannot be used; attention needs finite numbers"
    if abs(value) > MAX_ABS:
        return None, f"{value:.3g} is too large; use values between −1e100 and 1e100"
    return value, None


def _token_name(raw) -> str:
    if raw is None or (isinstance(raw, float) and math.isnan(raw)):
        return ""
    return str(raw).strip()


def _raise_problems(problems: list[str]) -> None:
    if problems:
        more = f" (and {len(problems) - SHOWN_PROBLEMS} more)" if len(problems) > SHOWN_PROBLEMS else ""
        raise EmbeddingError("; ".join(problems[:SHOWN_PROBLEMS]) + more + ".")


def _numeric_block(block: pd.DataFrame, row_label, col_names) -> tuple[np.ndarray, list[str]]:
    """The values as a float array, and a message for every unusable cell."""
    if all(pd.api.types.is_float_dtype(t) or pd.api.types.is_integer_dtype(t) for t in block.dtypes):
        values = block.to_numpy(dtype=np.float64)
        bad = ~np.isfinite(values) | (np.abs(np.nan_to_num(values)) > MAX_ABS)
        if not bad.any():  # the common case (the data editor's float columns): no Python loop
            return values, []
        cells = [(i, j) for i, j in zip(*np.nonzero(bad))]
    else:
        values = np.zeros(block.shape, dtype=np.float64)
        cells = [(i, j) for i in range(block.shape[0]) for j in range(block.shape[1])]
    raw = block.to_numpy(dtype=object)
    problems = []
    for i, j in cells:
        value, problem = _parse_cell(raw[i, j])
        if problem:
            problems.append(f"{row_label(i)}, column {col_names[j]}: {problem}")
        else:
            values[i, j] = value
    return values, problems


def validate_embedding_table(table: pd.DataFrame, *, row_word: str = "row",
                             row_numbers: Sequence[int] | None = None) -> EmbeddingTable:
    """Check an embeddings table (a 'token' column, then one column per dimension).

    Raises EmbeddingError naming every unusable cell (text, empty, NaN, ±inf, beyond ±1e100),
    or a bad shape (no tokens, more than 64, no dimension, more than 64). Repeated token names
    and very large values are allowed, with a warning.
    """
    if not isinstance(table, pd.DataFrame):
        raise EmbeddingError("expected a table of tokens and numbers")
    if "token" not in table.columns:
        raise EmbeddingError("the table needs a “token” column with the token names")
    dim_cols = [c for c in table.columns if c != "token"]
    num_tokens = len(table)
    if num_tokens == 0:
        raise EmbeddingError("there are no tokens: add at least one row")
    if num_tokens > MAX_TOKENS:
        raise EmbeddingError(f"{num_tokens} tokens is too many: use at most {MAX_TOKENS}")
    if not dim_cols:
        raise EmbeddingError("each token needs at least one dimension (one number)")
    if len(dim_cols) > MAX_DIMS:
        raise EmbeddingError(f"{len(dim_cols)} dimensions is too many: use at most {MAX_DIMS}")

    numbers = list(row_numbers) if row_numbers is not None else list(range(1, num_tokens + 1))
    tokens = [_token_name(t) for t in table["token"].tolist()]

    def row_label(i: int) -> str:
        name = f" (“{tokens[i][:20]}”)" if tokens[i] else ""
        return f"{row_word.capitalize()} {numbers[i]}{name}"

    problems = [f"{row_label(i)} has no token name" for i, t in enumerate(tokens) if not t]
    problems += [f"{row_label(i)}: the token name is longer than {MAX_TOKEN_CHARS} characters"
                 for i, t in enumerate(tokens) if len(t) > MAX_TOKEN_CHARS]
    values, cell_problems = _numeric_block(table[dim_cols], row_label, [str(c) for c in dim_cols])
    _raise_problems(problems + cell_problems)
    return EmbeddingTable(tokens, values.tolist(), _table_warnings(tokens, values))


def _table_warnings(tokens: list[str], values: np.ndarray) -> list[str]:
    warnings = []
    seen: dict[str, list[int]] = {}
    for i, t in enumerate(tokens):
        seen.setdefault(t, []).append(i + 1)
    repeats = {t: rows for t, rows in seen.items() if len(rows) > 1}
    if repeats:
        listed = ", ".join(f"“{t}” (rows {', '.join(map(str, rows))})"
                           for t, rows in list(repeats.items())[:4])
        warnings.append(f"Repeated token names: {listed}. The charts add the position "
                        "(“one #4”) to tell them apart; rename them to make the charts clearer.")
    largest = float(np.abs(values).max())
    if largest > LARGE_VALUE:
        warnings.append(f"Very large values (up to {largest:.3g}): the dot products are huge, so "
                        "softmax puts (almost) all the weight on the largest score, a one-hot "
                        "row. Plain normalisation still spreads the weight.")
    return warnings


def _looks_numeric(text: str) -> bool:
    """Whether a CSV cell was meant as a number (inf and nan included, so they get reported)."""
    try:
        float(str(text).strip().replace("−", "-"))
    except ValueError:
        return False
    return True


def _sniff_delimiter(line: str) -> str:
    if "\t" in line:
        return "\t"  # pasted from a spreadsheet
    if ";" in line and "," not in line:
        return ";"
    return ","


def parse_embeddings_csv(text: str) -> EmbeddingTable:
    """Embeddings from pasted CSV: one line per token, `name, v1, v2, ...`.

    Commas, semicolons or tabs separate values; blank lines are skipped; a first line whose
    values are all text (like `token,d1,d2`) is a header. Lines of numbers only get token names
    t1, t2, ... Every line must have the same number of values. Errors name the line.
    """
    if not isinstance(text, str) or not text.strip():
        raise EmbeddingError("the CSV box is empty: paste lines like “journey, 0.55, 0.87, 0.66”")
    if len(text) > MAX_CSV_CHARS:
        raise EmbeddingError(f"the CSV text is too long ({len(text):,} characters; "
                             f"the limit is {MAX_CSV_CHARS:,})")
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    delimiter = _sniff_delimiter(lines[0][1])
    try:
        parsed = [(n, [cell.strip() for cell in row])
                  for (n, _), row in zip(lines, csv.reader([line for _, line in lines],
                                                           delimiter=delimiter))]
    except csv.Error as exc:
        raise EmbeddingError(f"the CSV could not be read: {exc}") from exc
    first = parsed[0][1]
    if len(parsed) > 1 and len(first) > 1 and not any(_looks_numeric(c) for c in first[1:]):
        parsed = parsed[1:]  # a header line such as "token,d1,d2,d3"
    first_line, expected = parsed[0][0], len(parsed[0][1])
    ragged = [f"line {n} has {len(cells)}" for n, cells in parsed if len(cells) != expected]
    if ragged:
        raise EmbeddingError(
            f"the lines have different numbers of values: line {first_line} has {expected}, but "
            + ", ".join(ragged[:4]) + ". Every line needs a token name, then one value per dimension")
    numbers_only = all(_looks_numeric(c) for _, cells in parsed for c in cells)
    if numbers_only:
        tokens = [f"t{i + 1}" for i in range(len(parsed))]
        rows = [cells for _, cells in parsed]
    else:
        tokens = [cells[0] for _, cells in parsed]
        rows = [cells[1:] for _, cells in parsed]
    d_in = len(rows[0]) if rows else 0
    frame = pd.DataFrame(rows, columns=dim_names(d_in), dtype=object)
    frame.insert(0, "token", tokens)
    return validate_embedding_table(frame, row_word="line", row_numbers=[n for n, _ in parsed])


def embeddings_to_csv(tokens: Sequence[str], embeddings: Sequence[Sequence[float]]) -> str:
    """The table as CSV with a header, the format parse_embeddings_csv reads back."""
    frame = embedding_frame(tokens, embeddings)
    return frame.to_csv(index=False)


def random_embeddings(num_tokens: int, d_in: int, seed: int) -> list[list[float]]:
    """Uniform [0, 1) values rounded to 2 decimals, like the book's example (reproducible by seed)."""
    if not 1 <= num_tokens <= MAX_TOKENS or not 1 <= d_in <= MAX_DIMS:
        raise EmbeddingError(f"random embeddings need 1–{MAX_TOKENS} tokens and 1–{MAX_DIMS} dimensions")
    generator = torch.Generator().manual_seed(int(seed))
    values = torch.rand(num_tokens, d_in, generator=generator, dtype=torch.float64)  # (T, d_in)
    return [[round(v, 2) for v in row] for row in values.tolist()]


def resized_tokens(tokens: Sequence[str], num_tokens: int) -> list[str]:
    """Keep the first names; new rows get tok7, tok8, ..."""
    names = list(tokens)[:num_tokens]
    return names + [f"tok{i + 1}" for i in range(len(names), num_tokens)]


def add_dimension(embeddings: list[list[float]]) -> list[list[float]]:
    """A new last dimension, 0.0 for every token (so the scores do not change until edited)."""
    if len(embeddings[0]) >= MAX_DIMS:
        raise EmbeddingError(f"there are already {MAX_DIMS} dimensions, the most this page allows")
    return [list(row) + [0.0] for row in embeddings]


def remove_dimension(embeddings: list[list[float]]) -> list[list[float]]:
    """Drop the last dimension; one dimension must remain."""
    if len(embeddings[0]) <= 1:
        raise EmbeddingError("each token needs at least one dimension, so the last one stays")
    return [list(row[:-1]) for row in embeddings]


def inputs_tensor(settings: WalkthroughSettings) -> torch.Tensor:
    """The embeddings as the float64 tensor every page computes on."""
    return torch.tensor(settings.embeddings, dtype=torch.float64)  # (T, d_in)


def labels_of(settings: WalkthroughSettings) -> list[str]:
    """Unique display names of the tokens (repeats get their position)."""
    return charts.unique_labels(settings.tokens)


# ----------------------------------------------------------------------------------- page 1
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
    loop_vs_matmul = max(_max_abs_diff(attn_scores, scores_matmul),
                         _max_abs_diff(context_vec, context_matmul))
    row_vs_single = max(_max_abs_diff(all_weights[query_idx], attn_weights),
                        _max_abs_diff(all_context[query_idx], context_vec))
    return SimpleAttention(query_idx, attn_scores, attn_weights, plain, note, context_vec,
                           attn_weights[:, None] * inputs, all_scores, all_weights, all_context,
                           loop_vs_matmul, row_vs_single)


def _max_abs_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.to(torch.float64) - b.to(torch.float64)).abs().max()) if a.numel() else 0.0


def argmax_tokens(weights: torch.Tensor) -> list[int]:
    """Every position holding the largest weight (ties all count as a right guess)."""
    top = float(weights.max())
    return [i for i, w in enumerate(weights.tolist()) if w >= top - 1e-12 * max(1.0, abs(top))]


# ----------------------------------------------------------------------------------- SDPA check
@dataclass
class SdpaCheck:
    """Does our result agree with PyTorch's fused F.scaled_dot_product_attention?"""

    max_diff: float
    agrees: bool
    note: str  # what exactly was compared


def _agreement(ours: torch.Tensor, reference: torch.Tensor) -> tuple[float, bool]:
    diff = _max_abs_diff(ours, reference)
    size = float(ours.abs().max()) if ours.numel() else 0.0
    return diff, diff <= 1e-9 * max(1.0, size)


def sdpa_check_simple(inputs: torch.Tensor, all_context: torch.Tensor) -> SdpaCheck:
    """Page 1 has no W and no scaling: SDPA(X, X, X) with scale=1 must give A X."""
    x = inputs.to(torch.float64)[None]  # (1, T, d_in)
    reference = F.scaled_dot_product_attention(x, x, x, scale=1.0)[0]  # (T, d_in)
    diff, agrees = _agreement(all_context, reference)
    return SdpaCheck(diff, agrees, "queries = keys = values = X, scale = 1 (no √d_k here)")


def sdpa_check(steps: AttentionSteps) -> SdpaCheck:
    """Compare the per-head contexts with F.scaled_dot_product_attention on the same Q, K, V."""
    q, k, v = (t.to(torch.float64) for t in (steps.queries_h, steps.keys_h, steps.values_h))
    reference = F.scaled_dot_product_attention(q, k, v, is_causal=steps.causal)  # (H, T, head_dim)
    dropout_active = steps.training and steps.dropout_p > 0
    ours = steps.attn_weights.to(torch.float64) @ v if dropout_active else steps.context_per_head
    diff, agrees = _agreement(ours, reference)
    note = f"Q, K, V of {steps.num_heads} head(s), is_causal={steps.causal}"
    if dropout_active:
        note += "; compared before dropout (PyTorch's kernel draws its own random zeros)"
    return SdpaCheck(diff, agrees, note)


# ----------------------------------------------------------------------------------- page 2
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


seeded = attention.seeded  # the book's torch.manual_seed(seed), safe across sessions


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
    return _max_abs_diff(out, ours)


def weight_rows_equal(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]]) -> bool:
    return len(a) == len(b) and all(list(x) == list(y) for x, y in zip(a, b))


def book_reference(settings: WalkthroughSettings, page: str) -> tuple[str, list[list[float]]] | None:
    """The book's printed rows when the settings reproduce a printed example, else None."""
    if not settings_equal_book(settings) or settings.custom_weights:
        return None
    eval_like = not settings.train_mode or settings.dropout_p == 0.0
    if page == "self":
        if settings.d_out != 2:
            return None
        if settings.variant == "v1" and settings.weight_seed == BOOK_V1_SEED:
            return "SelfAttention_v1(3, 2) after torch.manual_seed(123), first row", [BOOK_V1_FIRST_ROW]
        if settings.variant == "v2" and settings.weight_seed == BOOK_V2_SEED and not settings.qkv_bias:
            return "SelfAttention_v2(3, 2) after torch.manual_seed(789), first row", [BOOK_V2_FIRST_ROW]
    if page == "causal" and settings.variant == "v2" and settings.weight_seed == 123 \
            and settings.d_out == 2 and not settings.qkv_bias and settings.causal and eval_like:
        return "CausalAttention(3, 2, 6, 0.0) after torch.manual_seed(123)", BOOK_CAUSAL_ROWS
    if page == "multi" and settings.weight_seed == 123 and settings.d_out == 4 \
            and settings.num_heads == 2 and not settings.qkv_bias and settings.causal \
            and eval_like and not settings.same_init:
        return ("MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2) after "
                "torch.manual_seed(123), first row (the concatenation)", [BOOK_WRAPPER_FIRST_ROW])
    return None


def book_rows_match(ours: torch.Tensor, expected: list[list[float]]) -> bool:
    """Agree with the printed rows to the 4 decimals the book shows."""
    got = ours[:len(expected)].to(torch.float64)
    return bool((got - torch.tensor(expected, dtype=torch.float64)).abs().max() < 5e-5)


def validate_weight_table(table: pd.DataFrame, name: str, shape: tuple[int, int]) -> list[list[float]]:
    """Check a hand-edited weight matrix (every cell a finite number within ±1e100)."""
    if not isinstance(table, pd.DataFrame) or tuple(table.shape) != tuple(shape):
        got = tuple(table.shape) if isinstance(table, pd.DataFrame) else None
        raise EmbeddingError(f"{name} must have shape {tuple(shape)}, got {got}")
    labels = [str(i) for i in table.index]
    values, problems = _numeric_block(table, lambda i: f"{name} row {labels[i]}",
                                      [str(c) for c in table.columns])
    _raise_problems(problems)
    return values.tolist()


def weight_frame(W: torch.Tensor) -> pd.DataFrame:
    """A weight matrix for the editor: rows are input dimensions, columns output dimensions."""
    d_in, d_out = W.shape
    return pd.DataFrame(W.tolist(), index=[f"in {i + 1}" for i in range(d_in)],
                        columns=[f"out {j + 1}" for j in range(d_out)])


# ----------------------------------------------------------------------------------- scaling
@functools.lru_cache(maxsize=256)
def softmax_peak(d_k: int, num_keys: int = 6, seed: int = 0, trials: int = 256) -> dict:
    """How peaked softmax gets for random unit-variance q and k of width d_k, with and without 1/√d_k.

    A dot product of d_k independent N(0, 1) products has variance d_k, so the raw scores spread
    by √d_k and softmax slides to one-hot; dividing by √d_k brings the spread back to 1.
    Returns the mean largest weight over `trials` random queries and one example row
    (cached: a pure function of its arguments; do not modify the returned dict).
    """
    generator = torch.Generator().manual_seed(seed * 1009 + d_k)
    queries = torch.randn(trials, d_k, generator=generator, dtype=torch.float64)  # (trials, d_k)
    keys = torch.randn(num_keys, d_k, generator=generator, dtype=torch.float64)  # (num_keys, d_k)
    attn_scores = queries @ keys.T  # (trials, num_keys)
    unscaled = torch.softmax(attn_scores, dim=-1)  # (trials, num_keys)
    scaled = torch.softmax(attn_scores / math.sqrt(d_k), dim=-1)  # (trials, num_keys)
    return {
        "d_k": d_k,
        "score_std": float(attn_scores.std()),
        "scaled_std": float((attn_scores / math.sqrt(d_k)).std()),
        "max_unscaled": float(unscaled.max(dim=-1).values.mean()),
        "max_scaled": float(scaled.max(dim=-1).values.mean()),
        "row_scores": attn_scores[0].tolist(),
        "row_unscaled": unscaled[0].tolist(),
        "row_scaled": scaled[0].tolist(),
    }


def scaling_table(seed: int = 0, num_keys: int = 6, dks: Sequence[int] = SCALE_DKS) -> pd.DataFrame:
    """One line per d_k and kind: mean largest softmax weight (1.0 = one-hot)."""
    return _scaling_table(int(seed), int(num_keys), tuple(dks)).copy()


@functools.lru_cache(maxsize=64)
def _scaling_table(seed: int, num_keys: int, dks: tuple[int, ...]) -> pd.DataFrame:
    # a pure function of its arguments, cached: 9 x 256 random rows cost ~0.1 s to redo
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


# ----------------------------------------------------------------------------------- page 3
@dataclass(eq=False)
class MaskingOrders:
    """Where the mask goes: before softmax, after it with renormalising, after it without."""

    before: torch.Tensor  # (T, T) softmax(scores with -inf above the diagonal)
    after_renorm: torch.Tensor  # (T, T) softmax, zero the future, divide by the row sum
    after_no_renorm: torch.Tensor  # (T, T) softmax, zero the future: rows no longer sum to 1
    undefined_rows: list[int]  # rows where every visible weight underflowed (0/0 on renormalising)
    max_diff: float  # max |before - after_renorm| over the defined rows

    def row_sums(self) -> dict[str, list[float]]:
        return {name: getattr(self, name).sum(dim=-1).tolist()
                for name in ("before", "after_renorm", "after_no_renorm")}


def masking_orders(scaled_scores: torch.Tensor, mask: torch.Tensor) -> MaskingOrders:
    """Mask before softmax (the book) vs after softmax, with and without renormalisation."""
    scores = scaled_scores.to(torch.float64)  # (T, T)
    before = torch.softmax(scores.masked_fill(mask, -torch.inf), dim=-1)  # (T, T)
    after_no_renorm = torch.softmax(scores, dim=-1).masked_fill(mask, 0.0)  # (T, T)
    row_sums = after_no_renorm.sum(dim=-1, keepdim=True)  # (T, 1)
    # a row whose visible weights all underflowed to 0 cannot be renormalised (0 / 0)
    undefined = (row_sums[:, 0] == 0).nonzero().flatten().tolist()
    safe_sums = torch.where(row_sums == 0, torch.ones_like(row_sums), row_sums)  # (T, 1)
    after_renorm = after_no_renorm / safe_sums  # (T, T)
    defined = torch.ones(scores.shape[0], dtype=torch.bool)
    defined[undefined] = False
    max_diff = _max_abs_diff(before[defined], after_renorm[defined]) if defined.any() else 0.0
    return MaskingOrders(before, after_renorm, after_no_renorm, undefined, max_diff)


def rows_sum_to_one(matrix: torch.Tensor, tol: float = 1e-9) -> bool:
    return bool(((matrix.sum(dim=-1) - 1.0).abs() <= tol).all())


@dataclass(eq=False)
class DropoutView:
    """Which attention weights dropout removed, and how the kept ones were rescaled."""

    active: bool  # training mode and p > 0
    p: float
    scale: float  # 1 / (1 - p) when active, else 1
    keep: torch.Tensor  # (T, T) bool
    weights: torch.Tensor  # (T, T) before dropout
    dropped_weights: torch.Tensor  # (T, T) after dropout
    n_dropped: int  # among the visible (unmasked) positions
    n_visible: int

    def row_sums(self) -> list[float]:
        return self.dropped_weights.sum(dim=-1).tolist()


def dropout_view(steps: AttentionSteps, head: int = 0) -> DropoutView:
    active = steps.training and steps.dropout_p > 0
    visible = ~steps.mask  # (T, T)
    keep = steps.dropout_keep[head]  # (T, T)
    return DropoutView(active, steps.dropout_p, 1.0 / (1.0 - steps.dropout_p) if active else 1.0,
                       keep, steps.attn_weights[head], steps.attn_weights_dropped[head],
                       int((~keep & visible).sum()), int(visible.sum()))


def causal_module(projection: Projection, num_tokens: int, dropout_p: float, qkv_bias: bool):
    """The book's CausalAttention holding `projection`'s weights (for the module check)."""
    d_in, d_out = projection.W_query.shape
    with seeded(0):  # its random init is overwritten below
        module = CausalAttention(d_in, d_out, num_tokens, dropout_p, qkv_bias=qkv_bias)
    module = module.double().eval()
    with torch.no_grad():
        for name, W, b in (("W_query", projection.W_query, projection.b_query),
                           ("W_key", projection.W_key, projection.b_key),
                           ("W_value", projection.W_value, projection.b_value)):
            linear = getattr(module, name)
            linear.weight.copy_(W.T)
            if linear.bias is not None:
                linear.bias.copy_(b if b is not None else torch.zeros(d_out, dtype=torch.float64))
    return module


def causal_attention(inputs: torch.Tensor, projection: Projection,
                     settings: WalkthroughSettings) -> AttentionSteps:
    """Page 3: the same projection with the mask and dropout switched as the settings say."""
    return attention.attention_intermediates(
        inputs, **projection.kwargs(), num_heads=1, causal=settings.causal,
        dropout_p=settings.dropout_p, dropout_seed=settings.dropout_seed,
        training=settings.train_mode)


# ----------------------------------------------------------------------------------- page 4
def head_choices(d_out: int) -> list[int]:
    """Head counts that split d_out evenly (each head gets d_out // num_heads dimensions)."""
    return [h for h in range(1, d_out + 1) if d_out % h == 0]


def nearest_heads(d_out: int, wanted: int) -> int:
    """The largest valid head count not above `wanted` (at least 1)."""
    return max(h for h in head_choices(d_out) if h <= max(1, wanted))


@dataclass(eq=False)
class MultiHead:
    """Page 4: a MultiHeadAttentionWrapper, its MultiHeadAttention copy, and every step."""

    wrapper: MultiHeadAttentionWrapper
    mha: MultiHeadAttention
    steps: AttentionSteps  # of mha (with the page's mask setting), including out_proj
    head_dim: int
    wrapper_out: torch.Tensor  # (T, d_out) the wrapper's output (eval, causal)
    mha_out: torch.Tensor  # (T, d_out) MultiHeadAttention's output (eval, causal)
    impl_diff: float  # max |wrapper_out - mha_out|
    head_diffs: list[float]  # max |A_h - A_0| per head
    head_W_query: list[torch.Tensor]  # each head's (d_in, head_dim) W_query


def build_wrapper(d_in: int, d_out: int, num_heads: int, num_tokens: int, dropout_p: float,
                  qkv_bias: bool, seed: int, same_init: bool) -> MultiHeadAttentionWrapper:
    """The book's wrapper of `num_heads` causal heads of width d_out // num_heads, plus out_proj.

    same_init copies head 0's initial weights into every head: the lesson's "what if they all
    started the same?" experiment.
    """
    if num_heads < 1 or d_out % num_heads:
        raise ValueError(f"d_out ({d_out}) must be divisible by the number of heads ({num_heads}).")
    with seeded(seed):
        wrapper = MultiHeadAttentionWrapper(d_in, d_out // num_heads, num_tokens, dropout_p,
                                            num_heads, qkv_bias=qkv_bias, out_proj=True)
    if same_init:
        first = wrapper.heads[0].state_dict()
        for head in wrapper.heads[1:]:
            head.load_state_dict(first)
    return wrapper.double().eval()


def multi_head(inputs: torch.Tensor, settings: WalkthroughSettings, num_heads: int) -> MultiHead:
    """Build the heads from the seed, copy them into the split-head class, run both, keep the steps."""
    num_tokens, d_in = inputs.shape
    wrapper = build_wrapper(d_in, settings.d_out, num_heads, num_tokens, settings.dropout_p,
                            settings.qkv_bias, settings.weight_seed, settings.same_init)
    mha = attention.wrapper_to_multihead(wrapper).double().eval()
    x = inputs.to(torch.float64)
    with torch.no_grad():  # both book classes are causal: compare them that way, in eval mode
        wrapper_out = wrapper(x[None])[0]  # (T, d_out)
        mha_out = mha(x[None])[0]  # (T, d_out)
    mha.causal = settings.causal  # the maps follow the page's mask switch
    steps = attention.intermediates_from_module(mha, x, dropout_seed=settings.dropout_seed,
                                                training=settings.train_mode)
    mha.causal = True
    maps = steps.attn_weights  # (H, T, T)
    head_diffs = [_max_abs_diff(maps[h], maps[0]) for h in range(num_heads)]
    head_W = [head.W_query.weight.detach().T.clone() for head in wrapper.heads]
    return MultiHead(wrapper, mha, steps, settings.d_out // num_heads, wrapper_out, mha_out,
                     _max_abs_diff(wrapper_out, mha_out), head_diffs, head_W)


# ----------------------------------------------------------------------------------- page bundles
# Everything one page shows, computed in one call: the pages cache these (keyed on the settings
# that feed them), so a rerun that only changes the step or the lecture mode recomputes nothing.
@dataclass(eq=False)
class SimplePage:
    result: SimpleAttention
    sdpa: SdpaCheck


def simple_page(inputs: torch.Tensor, query_idx: int) -> SimplePage:
    result = simple_attention(inputs, query_idx)
    return SimplePage(result, sdpa_check_simple(inputs, result.all_context))


@dataclass(eq=False)
class SelfPage:
    steps: AttentionSteps
    sdpa: SdpaCheck
    module_diff: float  # max |SelfAttention_v1/v2.forward - the steps|


def self_page(inputs: torch.Tensor, projection: Projection, qkv_bias: bool) -> SelfPage:
    steps = self_attention(inputs, projection)
    module = projection_module(projection, qkv_bias)
    return SelfPage(steps, sdpa_check(steps), module_check(module, inputs, steps.context_vec))


@dataclass(eq=False)
class CausalPage:
    steps: AttentionSteps
    sdpa: SdpaCheck
    module_diff: float | None  # CausalAttention (eval) vs the steps; None with the mask off
    orders: MaskingOrders  # always with the causal mask


def causal_page(inputs: torch.Tensor, projection: Projection, settings: WalkthroughSettings,
                qkv_bias: bool) -> CausalPage:
    steps = causal_attention(inputs, projection, settings)
    module_diff = None
    if settings.causal:
        module = causal_module(projection, inputs.shape[0], settings.dropout_p, qkv_bias)
        eval_steps = causal_attention(inputs, projection, dataclasses.replace(settings, train_mode=False))
        module_diff = module_check(module, inputs, eval_steps.context_vec, batched=True)
    orders = masking_orders(steps.scaled_scores[0], attention.causal_mask(inputs.shape[0]))
    return CausalPage(steps, sdpa_check(steps), module_diff, orders)


@dataclass(eq=False)
class MultiPage:
    result: MultiHead
    sdpa: SdpaCheck


def multi_page(inputs: torch.Tensor, settings: WalkthroughSettings, num_heads: int) -> MultiPage:
    result = multi_head(inputs, settings, num_heads)
    return MultiPage(result, sdpa_check(result.steps))


def cache_key(settings: WalkthroughSettings, *fields: str, extra=()) -> str:
    """A short digest of the embeddings and the named settings fields (the pages' cache key)."""
    h = hashlib.sha1()
    h.update(np.asarray(settings.embeddings, dtype=np.float64).tobytes())
    h.update(repr(np.asarray(settings.embeddings).shape).encode())
    for name in fields:
        value = getattr(settings, name)
        h.update(name.encode())
        h.update(np.asarray(value, dtype=np.float64).tobytes() if name == "custom_weights" and value
                 else repr(value).encode())
    h.update(repr(extra).encode())
    return h.hexdigest()


# ----------------------------------------------------------------------------------- predictions
def question_id(kind: str, *parts) -> str:
    """A short id that changes whenever the inputs of a question change (so it is asked anew)."""
    digest = hashlib.sha1(repr((kind, parts)).encode("utf-8")).hexdigest()[:12]
    return f"{kind}.{digest}"


# ----------------------------------------------------------------------------------- formatting
def shape_text(t) -> str:
    """`(6, 2)`: the shape as the book prints it (a 1-d shape keeps its comma)."""
    shape = tuple(t.shape) if hasattr(t, "shape") else tuple(t)
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def number_format(values, decimals: int = 4) -> str:
    """Fixed decimals, or scientific notation when a value is too large to read that way."""
    arr = np.asarray(values, dtype=np.float64)
    finite = arr[np.isfinite(arr)]
    if finite.size and np.abs(finite).max() >= 1e5:
        return ".2e"
    return f".{decimals}f"


def fmt_number(value: float, decimals: int = 4) -> str:
    if math.isinf(value):
        return charts.NEG_INF_LABEL if value < 0 else "+∞"
    return format(value, number_format([value], decimals))


def latex_number(value: float, decimals: int = 4) -> str:
    """A number for st.latex: 1.23 \\times 10^{30} instead of 1.23e+30."""
    text = fmt_number(value, decimals)
    if "e" in text:
        mantissa, exponent = text.split("e")
        return rf"{mantissa} \times 10^{{{int(exponent)}}}"
    return text.replace("−∞", r"-\infty")


def latex_text(name: str) -> str:
    """A token name safe inside \\text{...}."""
    out = []
    for ch in name[:MAX_TOKEN_CHARS]:
        if ch in "\\":
            out.append(r"\textbackslash{}")
        elif ch in "{}_^#$%&~":
            out.append("\\" + ch if ch not in "^~" else {"^": r"\^{}", "~": r"\~{}"}[ch])
        else:
            out.append(ch)
    return "".join(out)


def dot_product_latex(query: Sequence[float], key: Sequence[float], result: float,
                      i: int, j: int, max_terms: int = 4) -> str:
    """ω_ij = x^(i) · x^(j) written out with the actual numbers, one line per step (first terms only)."""
    terms = [rf"{latex_number(a, 2)} \cdot {latex_number(b, 2)}"
             for a, b in zip(query[:max_terms], key[:max_terms])]
    if len(query) > max_terms:
        terms.append(rf"\dots\ (\text{{{len(query) - max_terms} more}})")
    return (rf"\begin{{aligned}} \omega_{{{i}{j}}} &= x^{{({i})}} \cdot x^{{({j})}} \\ "
            rf"&= " + " + ".join(terms) + rf" \\ &= {latex_number(result)} \end{{aligned}}")


def weighted_sum_latex(weights: Sequence[float], column: Sequence[float], result: float,
                       i: int, max_terms: int = 3) -> str:
    """z^(i)_1 = α_i1 x^(1)_1 + α_i2 x^(2)_1 + ... written out with the actual numbers."""
    terms = [rf"{latex_number(a)} \cdot {latex_number(x, 2)}"
             for a, x in zip(weights[:max_terms], column[:max_terms])]
    if len(weights) > max_terms:
        terms.append(rf"\dots\ (\text{{{len(weights) - max_terms} more}})")
    return (rf"\begin{{aligned}} z^{{({i})}}_1 &= \textstyle\sum_j \alpha_{{{i}j}}\, x^{{(j)}}_1 \\ "
            rf"&= " + " + ".join(terms) + rf" \\ &= {latex_number(result)} \end{{aligned}}")


# ----------------------------------------------------------------------------------- charts
def _unvalidated(builder):
    """Build a chart without Altair validating every channel object as it is created.

    Altair (debug mode, its default) validates each schema object at construction against the
    Vega-Lite JSON schema, several milliseconds per axis or scale. The builders are fixed code,
    validated as a whole by the tests, so pages skip it.
    """
    @functools.wraps(builder)
    def build(*args, **kwargs):
        with debug_mode(False):
            return builder(*args, **kwargs)
    return build


class LessonChart(alt.LayerChart):
    """A layered chart that skips Altair's JSON-schema validation when it is serialised.

    Streamlit serialises every chart on every rerun, and the schema validation costs 10-40 ms
    per chart, more than everything else a walkthrough rerun does. The builders below are
    fixed code whose output the tests validate once (`to_dict(validate=True)`), so the page
    does not pay for it again on each click.
    """

    def __init__(self, data=alt.Undefined, layer=(), **kwargs):
        # "pad": width and height are the PLOT area and the axes come on top. Streamlit's default
        # fits the whole chart (axes, legend, title) into the width, which squeezes small heatmaps
        # to a few pixels.
        kwargs.setdefault("autosize", alt.AutoSizeParams(type="pad"))
        # LayerChart.__init__ deep-copies every layer to merge per-layer data, params and sizes.
        # The builders here put the data and the size on this top-level chart and use no params,
        # so there is nothing to merge: initialise the schema object directly.
        alt.TopLevelLayerSpec.__init__(self, data=data, layer=list(layer), **kwargs)

    def to_dict(self, validate: bool = False, **kwargs):  # noqa: D102 - see the class docstring
        return super().to_dict(validate=validate, **kwargs)

    def copy(self, deep=True, ignore=None):
        """Shallow copies (configure_*, properties) without re-running LayerChart.__init__.

        Altair rebuilds a LayerChart through its __init__ for every shallow copy, which deep
        copies every layer to merge their parameters; a chart built here was merged already.
        """
        if deep is True:
            return super().copy(deep=True, ignore=ignore)
        new = object.__new__(type(self))
        object.__setattr__(new, "_args", self._args)
        object.__setattr__(new, "_kwds", dict(self._kwds))
        for attr in (deep if deep else ()):
            value = new._get(attr)
            new[attr] = value.copy(deep=False) if hasattr(value, "copy") else value
        return new


def _sizes(lecture: bool) -> dict[str, int]:
    return {"text": 16, "char": 10, "row": 42} if lecture else {"text": 11, "char": 7, "row": 30}


def values_fit(n_cols: int, lecture: bool = False, max_width: int = 640,
               max_chars: int = 6) -> bool:
    """Whether each heatmap cell is wide enough to print its value (else colours only)."""
    size = _sizes(lecture)
    needed = max_chars * size["char"] + 8
    return max_width / max(n_cols, 1) >= needed and n_cols <= 24


def label_chars(values: np.ndarray, fmt: str, special: np.ndarray | None = None) -> int:
    """The longest cell text a heatmap of `values` will print (cheap: from the extremes)."""
    finite = values[np.isfinite(values)]
    longest = 2
    if finite.size:
        longest = max(len(format(float(finite.max()), fmt)), len(format(float(finite.min()), fmt)),
                      len(format(float(np.abs(finite).max()), fmt)) + (1 if (finite < 0).any() else 0))
    if special is not None:
        longest = max([longest] + [len(str(s)) for s in np.asarray(special, dtype=object).ravel() if s])
    return longest


def values_shown(values, decimals: int = 2, lecture: bool = False, max_width: int = 640,
                 special: np.ndarray | None = None) -> bool:
    """Whether matrix_chart will write the numbers in the cells for this matrix."""
    values = np.asarray(values, dtype=np.float64)
    chars = label_chars(values, number_format(values, decimals), special)
    return values_fit(values.shape[1], lecture, max_width, chars)


@_unvalidated
def matrix_chart(matrix, row_labels: Sequence[str], col_labels: Sequence[str], *, title: str = "",
                 x_title: str = "", y_title: str = "", lecture: bool = False, decimals: int = 2,
                 domain: tuple[float, float] | None = None, special: np.ndarray | None = None,
                 highlight_row: int | None = None, max_width: int = 640,
                 row_axis: bool = True) -> alt.LayerChart:
    """A heatmap with the value in every cell (when it fits) and labelled axes.

    `special` is an array of strings of the matrix's shape: a non-empty entry replaces the cell's
    text and greys it out (masked "−∞", dropped "✕", undefined "0/0"). Non-finite cells are grey.
    `highlight_row` outlines the query's row; `row_axis=False` drops the row names (for a panel
    standing right of one that shows them).
    """
    values = np.asarray(matrix, dtype=np.float64)
    fmt = number_format(values, decimals)
    df = charts.matrix_frame(values, row_labels, col_labels, fmt)
    if special is not None:
        flat = np.asarray(special, dtype=object).ravel()
        marked = np.array([bool(s) for s in flat])
        df["label"] = np.where(marked, flat, df["label"])
        df["finite"] = df["finite"] & ~marked
        df["value"] = np.where(marked, np.nan, df["value"])
    n_rows, n_cols = values.shape
    size = _sizes(lecture)
    max_chars = label_chars(values, fmt, special)
    show_values = values_fit(n_cols, lecture, max_width, max_chars)
    cell_w = max(size["row"], max_chars * size["char"] + 10) if show_values else \
        max(8, min(size["row"], max_width // max(n_cols, 1)))
    cell_h = size["row"] if show_values else max(8, min(size["row"], 520 // max(n_rows, 1)))
    scheme = "viridis" if lecture else "blues"
    scale = alt.Scale(scheme=scheme, domain=list(domain)) if domain else alt.Scale(scheme=scheme)
    rows = list(dict.fromkeys(df["row"]))
    cols = list(dict.fromkeys(df["col"]))
    # slant the column names when they are wider than a cell (else Vega drops the overlapping ones)
    angle = -45 if max(len(c) for c in cols) * size["char"] > cell_w - 4 else 0
    # the numbers in the cells say what the colours mean; a legend only when they are hidden
    legend = None if show_values else alt.Legend()
    base = alt.Chart().encode(
        x=alt.X(field="col", type="nominal", sort=cols, title=x_title,
                axis=alt.Axis(orient="top", labelAngle=angle, labelOverlap=False)),
        # row_axis=False: a panel to the right of one that already names the rows
        y=alt.Y(field="row", type="nominal", sort=rows, title=y_title if row_axis else None,
                axis=alt.Axis() if row_axis else alt.Axis(labels=False, ticks=False)),
        tooltip=[alt.Tooltip(field="row", type="nominal", title=y_title or "row"),
                 alt.Tooltip(field="col", type="nominal", title=x_title or "column"),
                 alt.Tooltip(field="label", type="nominal", title="value")])
    rect = base.mark_rect(stroke="white").encode(
        # ColorValue with a dict condition: same Vega-Lite as alt.condition, without a slow
        # schema validation at construction (charts are rebuilt on every rerun)
        color=alt.ColorValue("#C8C8C8", condition={
            "test": "datum.finite", "field": "value", "type": "quantitative",
            "scale": scale.to_dict(validate=False), "title": None,
            "legend": legend.to_dict(validate=False) if legend is not None else None}))
    layers = [rect]
    if highlight_row is not None and 0 <= highlight_row < n_rows:
        # same data as the cells (one dataset to send); only the query's row gets a visible stroke
        outline = base.mark_rect(fill=None, stroke="#D55E00", strokeWidth=3 if lecture else 2).encode(
            strokeOpacity=alt.StrokeOpacityValue(0, condition={
                "test": f"datum.row_i == {int(highlight_row)}", "value": 1}))
        layers.append(outline)
    if show_values:
        finite_vals = df.loc[df["finite"], "value"]
        mid = (domain[0] + domain[1]) / 2 if domain else \
            (float((finite_vals.min() + finite_vals.max()) / 2) if len(finite_vals) else 0.0)
        dark_when = ">" if scheme == "blues" else "<"
        text = base.mark_text(fontSize=size["text"]).encode(
            text=alt.Text(field="label", type="nominal"),
            color=alt.ColorValue("black", condition={
                "test": f"datum.finite && datum.value {dark_when} {mid!r}", "value": "white"}))
        layers.append(text)
    # the data sits on the layer chart, not on each layer: Altair would hash every layer's
    # DataFrame (through its text repr) to merge them, the slowest part of building a chart
    return LessonChart(data=df, layer=layers, title=title, width=cell_w * n_cols, height=cell_h * n_rows)


def vector_bars(values, labels: Sequence[str], *, title: str = "", x_title: str = "",
                y_title: str = "", lecture: bool = False, decimals: int = 4,
                highlight: int | None = None, domain: tuple[float, float] | None = None,
                max_labels: int = 16, max_width: int = 640) -> alt.LayerChart:
    """Bars with the value written on each (up to `max_labels` bars; beyond that, hover)."""
    return grouped_bars({"": values}, labels, title=title, x_title=x_title, y_title=y_title,
                        lecture=lecture, decimals=decimals, highlight=highlight, domain=domain,
                        max_labels=max_labels, max_width=max_width)


@_unvalidated
def grouped_bars(series: dict[str, Sequence[float]], labels: Sequence[str], *, title: str = "",
                 x_title: str = "", y_title: str = "", lecture: bool = False, decimals: int = 4,
                 highlight: int | None = None, domain: tuple[float, float] | None = None,
                 max_labels: int = 16, max_width: int = 640) -> alt.LayerChart:
    """Side-by-side bars per label (e.g. softmax beside plain normalisation), values on top."""
    names = charts.unique_labels(labels)
    all_values = np.concatenate([np.asarray(v, dtype=np.float64).ravel() for v in series.values()])
    fmt = number_format(all_values, decimals)
    frames = []
    for kind, vals in series.items():
        vals = np.asarray(vals, dtype=np.float64).ravel()
        if len(vals) != len(names):
            raise ValueError(f"{len(vals)} values but {len(names)} labels")
        frames.append(pd.DataFrame({
            "label": names, "kind": kind, "value": np.where(np.isfinite(vals), vals, np.nan),
            "text": [charts._fmt(v, fmt) for v in vals],
            "highlight": [i == highlight for i in range(len(vals))]}))
    df = pd.concat(frames, ignore_index=True)
    n_series = len(series)
    size = _sizes(lecture)
    colors = charts.palette(lecture)
    n_bars = len(names) * n_series
    bar_w = max(4, min(size["char"] * 7 + 6, max_width // max(n_bars, 1)))
    # values are written on the bars only when they fit side by side
    chars = max((len(t) for f in frames for t in f["text"]), default=4)
    show_text = len(names) <= max_labels and bar_w >= chars * (size["char"] - (1 if n_series > 1 else 0))
    y_scale = alt.Scale(domain=list(domain)) if domain else alt.Scale()
    enc = dict(x=alt.X(field="label", type="nominal", sort=names, title=x_title,
                       axis=alt.Axis(labelAngle=-40 if len(names) > 6 else 0)),
               y=alt.Y(field="value", type="quantitative", title=y_title, scale=y_scale))
    if n_series > 1:
        enc["xOffset"] = alt.XOffset(field="kind", type="nominal", sort=list(series))
    base = alt.Chart().encode(**enc)
    if n_series > 1:
        color = alt.Color(field="kind", type="nominal", sort=list(series),
                          scale=alt.Scale(range=colors), title=None,
                          legend=alt.Legend(orient="top"))
    else:
        color = alt.ColorValue(colors[0], condition={"test": "datum.highlight", "value": colors[1]})
    tooltip = [alt.Tooltip(field="label", type="nominal"),
               alt.Tooltip(field="text", type="nominal", title="value")]
    if n_series > 1:
        tooltip.insert(1, alt.Tooltip(field="kind", type="nominal"))
    bars = base.mark_bar().encode(color=color, tooltip=tooltip)
    layers = [bars]
    if show_text:
        layers.append(base.mark_text(dy=-8, fontSize=size["text"] - (1 if n_series == 1 else 2)).encode(
            text=alt.Text(field="text", type="nominal"),
            y=alt.Y(field="value", type="quantitative", scale=y_scale)))
    width = max(200, min(bar_w * n_bars + 12 * len(names), max_width))
    return LessonChart(data=df, layer=layers, title=title, width=width,
                       height=240 if not lecture else 300)


@_unvalidated
def scaling_chart(table: pd.DataFrame, *, chosen: int | None = None, lecture: bool = False,
                  width: int = 340) -> alt.LayerChart:
    """Mean largest softmax weight vs d_k (log scale), with and without 1/√d_k."""
    colors = charts.palette(lecture)
    base = alt.Chart().encode(
        x=alt.X("d_k:Q", scale=alt.Scale(type="log", base=2), title="d_k (width of q and k)",
                axis=alt.Axis(values=list(SCALE_DKS))),
        y=alt.Y("max_weight:Q", scale=alt.Scale(domain=[0, 1]),
                title="largest softmax weight (mean)"),
        color=alt.Color("kind:N", scale=alt.Scale(range=colors), title=None,
                        sort=["softmax(q·k)", "softmax(q·k / √d_k)"], legend=alt.Legend(orient="top")),
        tooltip=[alt.Tooltip("d_k:Q"), alt.Tooltip("kind:N"), alt.Tooltip("max_weight:Q", format=".3f"),
                 alt.Tooltip("score_std:Q", format=".2f", title="std of the scores")])
    layers = [base.mark_line(point=True, strokeWidth=3 if lecture else 2)]
    if chosen is not None:
        layers.append(alt.Chart().mark_rule(strokeDash=[4, 4], color="#666").encode(
            x=alt.XDatum(chosen)))
    return LessonChart(data=table, layer=layers, title="Softmax slides to one-hot as d_k grows",
                       width=width, height=260)


def describe_inputs(settings: WalkthroughSettings) -> str:
    """A caption fragment naming the embeddings in use (for figures taken to slides)."""
    num_tokens, d_in = len(settings.embeddings), len(settings.embeddings[0])
    if settings_equal_book(settings):
        return f"embeddings: the book's “Your journey starts with one step”, ({num_tokens}, {d_in})"
    return f"embeddings: edited, ({num_tokens}, {d_in})"


def describe_weights(settings: WalkthroughSettings, projection: Projection | None = None) -> str:
    """A caption fragment naming how W_q, W_k, W_v were made."""
    if projection is not None and projection.edited:
        return f"W_q, W_k, W_v: edited by hand, d_out {settings.d_out}"
    kind = "SelfAttention_v1 (nn.Parameter, torch.rand)" if settings.variant == "v1" else \
        f"SelfAttention_v2 (nn.Linear{', bias' if settings.qkv_bias else ''})"
    return f"W_q, W_k, W_v: {kind}, d_out {settings.d_out}, torch.manual_seed({settings.weight_seed})"


BOOK_SETUPS = {
    "v1": {"variant": "v1", "weight_seed": BOOK_V1_SEED, "d_out": 2, "qkv_bias": False,
           "custom_weights": []},
    "v2": {"variant": "v2", "weight_seed": BOOK_V2_SEED, "d_out": 2, "qkv_bias": False,
           "custom_weights": []},
    "causal": {"variant": "v2", "weight_seed": 123, "d_out": 2, "qkv_bias": False,
               "custom_weights": [], "causal": True, "dropout_p": 0.0},
    "multi": {"weight_seed": 123, "d_out": 4, "num_heads": 2, "qkv_bias": False, "causal": True,
              "dropout_p": 0.0, "same_init": False},
}
