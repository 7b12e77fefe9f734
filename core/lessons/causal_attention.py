"""Lesson 3 (page 3): the causal mask, where it goes (before or after the softmax), and dropout.

The steps come from `core.attention.attention_intermediates` with the page's mask switch. Dropout
is drawn exactly as the book's `nn.Dropout` draws it after torch.manual_seed(dropout_seed), so the
book's `CausalAttention`, run in training mode after the same seed, must give the same numbers:
`causal_page` checks it in eval mode and in training mode.

The words of each step (chart titles, captions, sentences) come from the small functions at the
end (`StepWords`, `*_words`): they take the mask and dropout settings, so with the mask off no
caption claims a mask, and with dropout off none claims dropped weights.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
import torch.nn as nn

from core import attention
from core.attention import AttentionSteps, CausalAttention, seeded
from core.lessons.self_attention import Projection, module_check
from core.lessons.walkthrough import SdpaCheck, WalkthroughSettings, max_abs_diff, sdpa_check

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
    max_diff = max_abs_diff(before[defined], after_renorm[defined]) if defined.any() else 0.0
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


def book_dropout_keep(shape, dropout_p: float, seed: int) -> torch.Tensor:
    """Which weights the book's `nn.Dropout(p)` keeps in training mode right after
    torch.manual_seed(seed), for weights of `shape` (float64, as this page computes).

    nn.Dropout draws one Bernoulli(1 - p) number per weight from torch's global generator; drawing
    on a tensor of ones of the same shape and dtype gives the very same numbers, so the book's
    CausalAttention, run in training mode after the same seed, drops the same weights.
    """
    dropout = nn.Dropout(dropout_p).train()
    with seeded(seed):  # the global generator, seeded, and restored afterwards
        kept = dropout(torch.ones(shape, dtype=torch.float64))  # (H, T, T): 1/(1-p) kept, 0 dropped
    return kept != 0  # (H, T, T) bool, True = kept


def with_book_dropout(steps: AttentionSteps, dropout_p: float, seed: int,
                      out_proj: nn.Linear | None = None) -> AttentionSteps:
    """`steps` (computed without dropout) with the attention weights dropped as the book's
    nn.Dropout(p) drops them after torch.manual_seed(seed), and every later step recomputed:
    the kept weights scaled by 1/(1 - p), the context vectors, and `out_proj` (multi-head)."""
    keep = book_dropout_keep(steps.attn_weights.shape, dropout_p, seed)  # (H, T, T)
    # zero the dropped weights, scale the kept ones so each weight keeps its expected value
    dropped = steps.attn_weights * keep * (1.0 / (1.0 - dropout_p))  # (H, T, T)
    context_per_head = dropped @ steps.values_h  # (H, T, head_dim)
    num_heads, num_tokens, head_dim = context_per_head.shape
    context_vec = context_per_head.transpose(0, 1).reshape(num_tokens, num_heads * head_dim)  # (T, d_out)
    output = context_vec
    if out_proj is not None:
        with torch.no_grad():
            output = out_proj(context_vec)  # (T, d_out)
    return dataclasses.replace(steps, dropout_keep=keep, attn_weights_dropped=dropped,
                               context_per_head=context_per_head, context_vec=context_vec,
                               output=output, dropout_p=dropout_p, training=True)


def causal_attention(inputs: torch.Tensor, projection: Projection,
                     settings: WalkthroughSettings) -> AttentionSteps:
    """Page 3: the projection's steps with the page's mask, then dropout as the book draws it.

    The steps up to the weights come from `attention_intermediates` (no dropout there); in
    training mode with p > 0, `with_book_dropout` drops weights exactly as the book's
    CausalAttention does after torch.manual_seed(dropout_seed) and recomputes the context.
    """
    steps = attention.attention_intermediates(inputs, **projection.kwargs(), num_heads=1,
                                              causal=settings.causal)
    if not (settings.train_mode and settings.dropout_p > 0):  # eval mode, or nothing to drop
        return dataclasses.replace(steps, dropout_p=settings.dropout_p, training=settings.train_mode)
    return with_book_dropout(steps, settings.dropout_p, settings.dropout_seed)


def module_check_train(module, inputs: torch.Tensor, ours: torch.Tensor, seed: int) -> float:
    """Max |module(x) in training mode after torch.manual_seed(seed) - our result|: the book's
    class with its own nn.Dropout, drawing from the seeded global generator."""
    module.train()
    try:
        with torch.no_grad(), seeded(seed):
            out = module(inputs.to(torch.float64)[None])[0]  # (T, d_out)
    finally:
        module.eval()
    return max_abs_diff(out, ours)


@dataclass(eq=False)
class CausalPage:
    steps: AttentionSteps
    sdpa: SdpaCheck
    module_diff: float | None  # CausalAttention (eval) vs the steps; None with the mask off
    train_module_diff: float | None  # CausalAttention (training, seeded) vs the steps; None if no dropout
    orders: MaskingOrders  # always with the causal mask


def causal_page(inputs: torch.Tensor, projection: Projection, settings: WalkthroughSettings,
                qkv_bias: bool) -> CausalPage:
    steps = causal_attention(inputs, projection, settings)
    module_diff = train_diff = None
    if settings.causal:  # the book's class is always causal: compare it only with the mask on
        module = causal_module(projection, inputs.shape[0], settings.dropout_p, qkv_bias)
        eval_steps = causal_attention(inputs, projection, dataclasses.replace(settings, train_mode=False))
        module_diff = module_check(module, inputs, eval_steps.context_vec, batched=True)
        if steps.training and steps.dropout_p > 0:
            train_diff = module_check_train(module, inputs, steps.context_vec, settings.dropout_seed)
    orders = masking_orders(steps.scaled_scores[0], attention.causal_mask(inputs.shape[0]))
    return CausalPage(steps, sdpa_check(steps), module_diff, train_diff, orders)


# ----------------------------------------------------------------------------- the steps' words
@dataclass(frozen=True)
class StepWords:
    """What one step's figure says: its title and caption, and a sentence beside it ('' = none)."""

    title: str
    caption: str
    text: str = ""


def dropout_active(settings: WalkthroughSettings) -> bool:
    """Dropout changes the weights only in training mode and with p > 0."""
    return settings.train_mode and settings.dropout_p > 0


def dropout_off_reason(settings: WalkthroughSettings) -> str:
    """Why dropout leaves the weights alone ('' when it is active)."""
    if not settings.train_mode:
        return "eval mode: dropout is off"
    if settings.dropout_p == 0:
        return "p = 0: nothing is dropped"
    return ""


def scores_words(causal: bool) -> StepWords:
    return StepWords("Q Kᵀ / √d_k", "Scaled scores, before the mask is applied" if causal else
                     "Scaled scores; the mask is off, so the next steps hide none of them")


def mask_words(causal: bool) -> StepWords:
    if causal:
        return StepWords("mask (1 = hidden)", "1 above the diagonal: token i may only look at "
                         "tokens 1 … i")
    return StepWords("mask (1 = hidden)", "The mask is off: every entry is 0, so every query "
                     "sees every token", "The mask is off: nothing is hidden, every query sees "
                     "every token.")


def masked_words(causal: bool) -> StepWords:
    if causal:
        return StepWords("masked_fill(mask, −∞)", "Hidden scores are −∞ (grey), so exp(−∞) = 0 "
                         "after softmax")
    return StepWords("scaled scores, nothing masked", "The mask is off: nothing is hidden, "
                     "these are the scaled scores unchanged")


def weights_words(causal: bool, dropout: bool = False) -> StepWords:
    """Title, caption, and the predict-then-reveal question of the weights step (whose weights
    are those before dropout: with dropout active, the caption says so)."""
    later = " (before dropout, the next steps drop some)" if dropout else ""
    if causal:
        return StepWords("A = softmax(masked scores)", "Masked softmax: zeros above the diagonal, "
                         f"every row sums to 1{later}",
                         "after masking, which token does “{q}” attend to most?")
    return StepWords("A = softmax(scaled scores)", "Softmax of the unmasked scores: every token "
                     f"gets some weight, every row sums to 1{later}",
                     "with the mask off, which token does “{q}” attend to most?")


def dropout_words(settings: WalkthroughSettings) -> StepWords:
    """Title and caption of the dropout figure: the ✕ and 0 marks are named only when present."""
    marks = []
    if dropout_active(settings):
        title = "weights after dropout"
        marks.append("✕ = dropped by dropout, the kept weights are scaled by 1/(1 − p)")
    else:
        title = "weights, unchanged by dropout"
        marks.append(f"Unchanged ({dropout_off_reason(settings)})")
    if settings.causal:
        marks.append("0 = hidden by the mask")
    return StepWords(title, "; ".join(marks))


def context_words(settings: WalkthroughSettings) -> StepWords:
    """The sentence about the first token's context vector, true for the current settings."""
    if not settings.causal:
        text = ("With the mask off, the first token sees every token too: its context vector "
                "mixes all the value vectors.")
    elif dropout_active(settings):
        text = ("The first token can only attend to itself (weight 1). Dropout either dropped "
                "that weight, making its context vector 0, or kept it and scaled it by "
                f"1/(1 − p) = {1 / (1 - settings.dropout_p):.4f}: its own value vector times that.")
    else:
        text = ("The first token can only attend to itself, so its context vector is its own "
                "value vector.")
    formula = "Z = dropout(A) V" if dropout_active(settings) else \
        f"Z = A V ({dropout_off_reason(settings)})"
    return StepWords("Z", f"Context vectors, {formula}", text)
