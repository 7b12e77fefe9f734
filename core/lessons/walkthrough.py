"""What the four attention walkthrough pages share: the settings, the steps, the book's numbers.

The pages (simple attention, trainable weights, causal mask and dropout, multi-head) share one
`WalkthroughSettings` object, so an embedding edited on page 1 is the one page 4 splits into heads.
This module holds that settings dataclass (URL- and lesson-ready through core.settings), the step
lists of the four steppers, the numbers printed in the book (for the "matches the book" badges),
the comparison with PyTorch's `F.scaled_dot_product_attention`, cache keys and question ids, and
the plain-text captions that say which inputs a figure was made from.

Everything is computed in float64: embeddings up to 1e100 still give finite scores, and the
published 4-decimal numbers of the book are reproduced exactly.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from core.attention import BOOK_TOKENS, AttentionSteps
from core.lessons.embeddings import (  # noqa: F401 - the limits are part of the settings' contract
    MAX_ABS,
    MAX_DIMS,
    MAX_SEED,
    MAX_TOKENS,
    check_embeddings,
)
from core.settings import spec
from core.viz import NEG_INF_LABEL, unique_labels

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
                     "classes": "3 · three classes", "why": "4 · why several heads"}

SCALE_DKS = (2, 4, 8, 16, 32, 64, 128, 256, 512)

QK_SCALES = (1, 2, 4, 8)  # page 4: W_q and W_k multiplied by this (1 = the book's initial weights)

# page 4's defaults: 2 (of up to 4) heads whose maps differ clearly: the two most alike heads
# differ by 0.77 (2 heads) and 0.55 (4 heads) somewhere on the 0..1 scale (tests/core). At the
# book's nn.Linear init (scale 1) the best of seeds 0..399 reaches 0.13 with 2 heads: fresh
# weights are small, so every softmax is nearly uniform and the heads look alike.
HEADS_D_OUT, HEADS_SEED, HEADS_QK_SCALE = 4, 590, 4


# numbers printed in the course material, for the "matches the book" checks
BOOK_EMBEDDINGS = [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64],
                   [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]]


BOOK_V1_SEED, BOOK_V1_FIRST_ROW = 123, [0.2996, 0.8053]

BOOK_V2_SEED, BOOK_V2_FIRST_ROW = 789, [-0.0739, 0.0713]

BOOK_CAUSAL_ROWS = [[-0.4519, 0.2216], [-0.5874, 0.0058], [-0.6300, -0.0632],
                    [-0.5675, -0.0843], [-0.5526, -0.0981], [-0.5299, -0.1081]]

BOOK_WRAPPER_FIRST_ROW = [-0.4519, 0.2216, 0.4772, 0.1063]

# 3.5.1: SelfAttention_v2(3, 2) after torch.manual_seed(789), the causal mask's weights (masked
# with -inf, then softmax); 3.5.2: torch.manual_seed(123), then nn.Dropout(0.5) on those weights
BOOK_MASKED_ROWS = [[1.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.5517, 0.4483, 0.0, 0.0, 0.0, 0.0],
                    [0.3800, 0.3097, 0.3103, 0.0, 0.0, 0.0], [0.2758, 0.2460, 0.2462, 0.2319, 0.0, 0.0],
                    [0.2175, 0.1983, 0.1984, 0.1888, 0.1971, 0.0],
                    [0.1935, 0.1663, 0.1666, 0.1542, 0.1666, 0.1529]]
BOOK_DROPOUT_ROWS = [[2.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
                     [0.7599, 0.6194, 0.6206, 0.0, 0.0, 0.0], [0.0, 0.4921, 0.4925, 0.0, 0.0, 0.0],
                     [0.0, 0.3966, 0.0, 0.3775, 0.0, 0.0], [0.0, 0.3327, 0.3331, 0.3084, 0.3331, 0.0]]


def _book_tokens() -> list[str]:
    return list(BOOK_TOKENS)


def _book_rows() -> list[list[float]]:
    return [list(row) for row in BOOK_EMBEDDINGS]


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
    heads_d_out: int = spec(HEADS_D_OUT, min=1, max=MAX_DIMS)  # page 4: width of all heads together
    num_heads: int = spec(2, min=1, max=MAX_DIMS)  # page 4; must divide heads_d_out
    heads_seed: int = spec(HEADS_SEED, min=0, max=MAX_SEED)  # page 4: torch.manual_seed before the heads
    qk_scale: int = spec(HEADS_QK_SCALE, choices=QK_SCALES)  # page 4: W_q, W_k times this (sharper maps)
    same_init: bool = spec(False)  # page 4: give every head head 0's initial weights
    scale_dk: int = spec(64, choices=SCALE_DKS)  # page 2 scaling panel
    predict: bool = spec(False)  # hide each result until the student commits a guess

    def problems(self) -> list[str]:
        """Cross-field rules for a shared link or a lesson file (checked on load)."""
        if len(self.tokens) != len(self.embeddings):
            return [f"{len(self.tokens)} token names for {len(self.embeddings)} embedding rows"]
        try:
            check_embeddings(self.tokens, self.embeddings)
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


def inputs_tensor(settings: WalkthroughSettings) -> torch.Tensor:
    """The embeddings as the float64 tensor every page computes on."""
    return torch.tensor(settings.embeddings, dtype=torch.float64)  # (T, d_in)


def labels_of(settings: WalkthroughSettings) -> list[str]:
    """Unique display names of the tokens (repeats get their position)."""
    return unique_labels(settings.tokens)


def query_moved_text(wanted: int, used: int, labels: list[str]) -> str:
    """Why the query is not the one asked for (a link's index beyond the tokens, a shorter
    table). Tokens are numbered from 1 as on the pages' "Query token" box: x^(1), x^(2) ..."""
    count = "there is only 1 token" if len(labels) == 1 else f"there are {len(labels)} tokens"
    which = "only" if len(labels) == 1 else ("first" if used == 0 else "last")
    return (f"Query token x^({wanted + 1}) does not exist: {count}, so the {which} one, "
            f"“{labels[used]}” · x^({used + 1}), is used.")


def max_abs_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    """The largest |a - b| over all entries, in float64 (0.0 for empty tensors); divided by the
    largest |value| of a and b when that is above 1. Why: float64 rounds to ~1e-16 of a number's
    size, so two correct ways of computing scores of 1e4-sized embeddings differ by ~1e-9 in
    absolute terms, and the pages' "agree" check (1e-9) would call them different."""
    if not a.numel():
        return 0.0
    a, b = a.to(torch.float64), b.to(torch.float64)
    scale = max(1.0, float(a.abs().max()), float(b.abs().max()))
    return float((a - b).abs().max()) / scale


def argmax_tokens(weights: torch.Tensor) -> list[int]:
    """Every position holding the largest weight (ties all count as a right guess)."""
    top = float(weights.max())
    return [i for i, w in enumerate(weights.tolist()) if w >= top - 1e-12 * max(1.0, abs(top))]


@dataclass
class SdpaCheck:
    """Does our result agree with PyTorch's fused F.scaled_dot_product_attention?"""

    max_diff: float
    agrees: bool
    note: str  # what exactly was compared


def agreement(ours: torch.Tensor, reference: torch.Tensor) -> tuple[float, bool]:
    """(max |ours - reference|, whether it is within float64 rounding of ours' size)."""
    diff = max_abs_diff(ours, reference)
    size = float(ours.abs().max()) if ours.numel() else 0.0
    return diff, diff <= 1e-9 * max(1.0, size)


def sdpa_check(steps: AttentionSteps) -> SdpaCheck:
    """Compare the per-head contexts with F.scaled_dot_product_attention on the same Q, K, V."""
    q, k, v = (t.to(torch.float64) for t in (steps.queries_h, steps.keys_h, steps.values_h))
    reference = F.scaled_dot_product_attention(q, k, v, is_causal=steps.causal)  # (H, T, head_dim)
    dropout_active = steps.training and steps.dropout_p > 0
    ours = steps.attn_weights.to(torch.float64) @ v if dropout_active else steps.context_per_head
    diff, agrees = agreement(ours, reference)
    note = f"Q, K, V of {steps.num_heads} head(s), is_causal={steps.causal}"
    if dropout_active:
        note += "; compared before dropout (PyTorch's kernel draws its own random zeros)"
    return SdpaCheck(diff, agrees, note)


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
    if page == "multi" and settings.heads_seed == 123 and settings.heads_d_out == 4 \
            and settings.num_heads == 2 and settings.qk_scale == 1 and not settings.qkv_bias \
            and settings.causal and eval_like and not settings.same_init:
        return ("MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2) after "
                "torch.manual_seed(123), first row (the concatenation)", [BOOK_WRAPPER_FIRST_ROW])
    return None


def book_weight_references(settings: WalkthroughSettings) -> list[tuple[str, str, str, list[list[float]]]]:
    """The book's printed attention weights of 3.5.1 (masked) and 3.5.2 (dropout) when the
    settings reproduce them: [(short name, what, the AttentionSteps field to compare, rows)]."""
    if not settings_equal_book(settings) or settings.custom_weights or not settings.causal or \
            settings.variant != "v2" or settings.weight_seed != BOOK_V2_SEED or settings.d_out != 2 \
            or settings.qkv_bias:
        return []
    found = [("3.5.1, masked weights", "3.5.1: the masked attention weights of SelfAttention_v2(3, 2) after "
              "torch.manual_seed(789)", "attn_weights", BOOK_MASKED_ROWS)]
    if settings.train_mode and settings.dropout_p == 0.5 and settings.dropout_seed == 123:
        found.append(("3.5.2, after dropout", "3.5.2: those weights after torch.manual_seed(123) and nn.Dropout(0.5)",
                      "attn_weights_dropped", BOOK_DROPOUT_ROWS))
    return found


def book_rows_match(ours: torch.Tensor, expected: list[list[float]]) -> bool:
    """Agree with the printed rows to the 4 decimals the book shows."""
    got = ours[:len(expected)].to(torch.float64)
    return bool((got - torch.tensor(expected, dtype=torch.float64)).abs().max() < 5e-5)


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


def question_id(kind: str, *parts) -> str:
    """A short id that changes whenever the inputs of a question change (so it is asked anew)."""
    digest = hashlib.sha1(repr((kind, parts)).encode("utf-8")).hexdigest()[:12]
    return f"{kind}.{digest}"


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
        return NEG_INF_LABEL if value < 0 else "+∞"
    return format(value, number_format([value], decimals))


def describe_inputs(settings: WalkthroughSettings) -> str:
    """A caption fragment naming the embeddings in use (for figures taken to slides)."""
    num_tokens, d_in = len(settings.embeddings), len(settings.embeddings[0])
    if settings_equal_book(settings):
        return f"embeddings: the book's “Your journey starts with one step”, ({num_tokens}, {d_in})"
    return f"embeddings: edited, ({num_tokens}, {d_in})"


def describe_weights(settings: WalkthroughSettings, projection=None) -> str:
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
    "masked": {"variant": "v2", "weight_seed": BOOK_V2_SEED, "d_out": 2, "qkv_bias": False,
               "custom_weights": [], "causal": True, "dropout_p": 0.5, "dropout_seed": 123,
               "train_mode": True},
    "multi": {"heads_seed": 123, "heads_d_out": 4, "num_heads": 2, "qk_scale": 1, "qkv_bias": False,
              "causal": True, "dropout_p": 0.0, "same_init": False},
}
