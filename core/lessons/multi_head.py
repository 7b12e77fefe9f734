"""Lesson 4 (page 4): multi-head attention, the wrapper of single heads vs the split-head class.

`build_wrapper` makes the book's `MultiHeadAttentionWrapper` from a seed (optionally with every
head starting from head 0's weights); `multi_head` copies it into `MultiHeadAttention`, runs both
(they must agree) and keeps every step of the split-head class for the page's maps.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from core import attention
from core.attention import AttentionSteps, MultiHeadAttention, MultiHeadAttentionWrapper, seeded
from core.lessons.causal_attention import module_check_train, with_book_dropout
from core.lessons.walkthrough import SdpaCheck, WalkthroughSettings, _max_abs_diff, sdpa_check

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
    module_diff: float  # max |mha_out - the steps' output| (the steps in eval mode, causal)
    train_module_diff: float | None  # mha in training mode (seeded) vs the steps; None without dropout
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
    # the page's steps are attention_intermediates on mha's weights: check them against mha itself
    eval_steps = attention.intermediates_from_module(mha, x, training=False)
    mha.causal = settings.causal  # the maps follow the page's mask switch
    steps = attention.intermediates_from_module(mha, x, training=False)
    train_diff = None
    if settings.train_mode and settings.dropout_p > 0:
        # dropout as the book's nn.Dropout draws it, so mha itself (training mode, same seed) agrees
        steps = with_book_dropout(steps, settings.dropout_p, settings.dropout_seed, mha.out_proj)
        train_diff = module_check_train(mha, x, steps.output, settings.dropout_seed)
    else:
        steps = dataclasses.replace(steps, dropout_p=settings.dropout_p, training=settings.train_mode)
    mha.causal = True
    maps = steps.attn_weights  # (H, T, T)
    head_diffs = [_max_abs_diff(maps[h], maps[0]) for h in range(num_heads)]
    head_W = [head.W_query.weight.detach().T.clone() for head in wrapper.heads]
    return MultiHead(wrapper, mha, steps, settings.d_out // num_heads, wrapper_out, mha_out,
                     _max_abs_diff(wrapper_out, mha_out), _max_abs_diff(mha_out, eval_steps.output),
                     train_diff, head_diffs, head_W)


@dataclass(eq=False)
class MultiPage:
    result: MultiHead
    sdpa: SdpaCheck


def multi_page(inputs: torch.Tensor, settings: WalkthroughSettings, num_heads: int) -> MultiPage:
    result = multi_head(inputs, settings, num_heads)
    return MultiPage(result, sdpa_check(result.steps))
