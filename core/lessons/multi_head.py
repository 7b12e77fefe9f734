"""Lesson 4 (page 4): multi-head attention, the wrapper of single heads vs the split-head class.

`build_wrapper` makes the book's `MultiHeadAttentionWrapper` from a seed (optionally with every
head starting from head 0's weights, optionally with W_q and W_k scaled up so that the maps are
as sharp as a trained head's); `multi_head` copies it into `MultiHeadAttention`, runs both
(they must agree) and keeps every step of the split-head class for the page's maps.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from core import attention
from core.attention import AttentionSteps, MultiHeadAttention, MultiHeadAttentionWrapper, seeded
from core.lessons.causal_attention import dropout_active, module_check_train, with_book_dropout
from core.lessons.walkthrough import SdpaCheck, WalkthroughSettings, max_abs_diff, sdpa_check

def head_choices(d_out: int) -> list[int]:
    """Head counts that split d_out evenly (each head gets d_out // num_heads dimensions)."""
    return [h for h in range(1, d_out + 1) if d_out % h == 0]


def nearest_heads(d_out: int, wanted: int) -> int:
    """The largest valid head count not above `wanted` (at least 1)."""
    return max(h for h in head_choices(d_out) if h <= max(1, wanted))


@dataclass(eq=False)
class MultiHead:
    """Page 4: a MultiHeadAttentionWrapper, its MultiHeadAttention and fused-qkv copies, and every step."""

    wrapper: MultiHeadAttentionWrapper
    mha: MultiHeadAttention
    steps: AttentionSteps  # of mha (with the page's mask setting), including out_proj
    head_dim: int
    wrapper_out: torch.Tensor  # (T, d_out) the wrapper's output (eval, causal), after its out_proj
    wrapper_concat: torch.Tensor  # (T, d_out) its heads concatenated: what the book's wrapper returns
    mha_out: torch.Tensor  # (T, d_out) MultiHeadAttention's output (eval, causal)
    impl_diff: float  # max |wrapper_out - mha_out|
    fused_out: torch.Tensor  # (T, d_out) PyTorchMultiHeadAttention's output, mha's weights in one qkv
    fused_diff: float  # max |fused_out - mha_out|
    module_diff: float  # max |mha_out - the steps' output| (the steps in eval mode, causal)
    train_module_diff: float | None  # mha in training mode (seeded) vs the steps; None without dropout
    head_diffs: list[float]  # max |A_h - A_0| per head
    head_W_query: list[torch.Tensor]  # each head's (d_in, head_dim) W_query


def build_wrapper(d_in: int, d_out: int, num_heads: int, num_tokens: int, dropout_p: float,
                  qkv_bias: bool, seed: int, same_init: bool,
                  qk_scale: float = 1.0) -> MultiHeadAttentionWrapper:
    """The book's wrapper of `num_heads` causal heads of width d_out // num_heads, plus out_proj.

    same_init copies head 0's initial weights into every head: the lesson's "what if they all
    started the same?" experiment. qk_scale multiplies every head's W_query and W_key (and their
    biases): each score q·k grows by qk_scale², so the maps are as sharp as trained heads' are.
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
    if qk_scale != 1:
        # nn.Linear starts small (±1/√d_in): fresh heads score every token about the same and
        # their softmax is nearly uniform, so their maps look alike whatever the seed
        with torch.no_grad():
            for head in wrapper.heads:
                for linear in (head.W_query, head.W_key):
                    linear.weight.mul_(qk_scale)
                    if linear.bias is not None:
                        linear.bias.mul_(qk_scale)
    return wrapper.double().eval()


def multi_head(inputs: torch.Tensor, settings: WalkthroughSettings, num_heads: int) -> MultiHead:
    """Build the heads from the seed, copy them into the split-head class, run both, keep the steps."""
    num_tokens, d_in = inputs.shape
    wrapper = build_wrapper(d_in, settings.heads_d_out, num_heads, num_tokens, settings.dropout_p,
                            settings.qkv_bias, settings.heads_seed, settings.same_init,
                            settings.qk_scale)
    mha = attention.wrapper_to_multihead(wrapper).double().eval()
    fused = attention.multihead_to_fused(mha).eval()
    x = inputs.to(torch.float64)
    with torch.no_grad():  # the book's classes are all causal: compare them that way, in eval mode
        wrapper_out = wrapper(x[None])[0]  # (T, d_out)
        wrapper_concat = torch.cat([head(x[None])[0] for head in wrapper.heads], dim=-1)  # (T, d_out)
        mha_out = mha(x[None])[0]  # (T, d_out)
        fused_out = fused(x[None])[0]  # (T, d_out)
    # the page's steps are attention_intermediates on mha's weights: check them against mha itself
    # (causal, as the book's class is), then draw them with the page's mask switch
    eval_steps = attention.intermediates_from_module(mha, x, training=False)
    steps = (eval_steps if settings.causal else
             attention.intermediates_from_module(mha, x, training=False, causal=False))
    train_diff = None
    if settings.train_mode and settings.dropout_p > 0:
        # dropout as the book's nn.Dropout draws it, so mha itself (training mode, same seed) agrees
        steps = with_book_dropout(steps, settings.dropout_p, settings.dropout_seed, mha.out_proj)
        mha.causal = settings.causal  # the class in training mode, with the page's mask switch
        try:
            train_diff = module_check_train(mha, x, steps.output, settings.dropout_seed)
        finally:
            mha.causal = True  # the book's class is causal: mha is compared that way elsewhere
    else:
        steps = dataclasses.replace(steps, dropout_p=settings.dropout_p, training=settings.train_mode)
    maps = steps.attn_weights  # (H, T, T)
    head_diffs = [max_abs_diff(maps[h], maps[0]) for h in range(num_heads)]
    head_W = [head.W_query.weight.detach().T.clone() for head in wrapper.heads]
    return MultiHead(wrapper, mha, steps, settings.heads_d_out // num_heads, wrapper_out, wrapper_concat, mha_out,
                     max_abs_diff(wrapper_out, mha_out), fused_out, max_abs_diff(fused_out, mha_out),
                     max_abs_diff(mha_out, eval_steps.output),
                     train_diff, head_diffs, head_W)


@dataclass(eq=False)
class MultiPage:
    result: MultiHead
    sdpa: SdpaCheck


def multi_page(inputs: torch.Tensor, settings: WalkthroughSettings, num_heads: int) -> MultiPage:
    result = multi_head(inputs, settings, num_heads)
    return MultiPage(result, sdpa_check(result.steps))


def smallest_pair_difference(maps: torch.Tensor) -> float:
    """min over head pairs of max |A_i - A_j|: how different the two most alike heads are (0 for one head)."""
    num_heads = maps.shape[0]
    diffs = [max_abs_diff(maps[i], maps[j]) for i in range(num_heads) for j in range(i + 1, num_heads)]
    return min(diffs) if diffs else 0.0


# ----------------------------------------------------------------------------- the steps' words
def heads_phrase(num_heads: int, head_dim: int, d_out: int) -> str:
    """'2 heads × head_dim 2 = d_out 4', or '1 head of head_dim 4 = d_out 4'."""
    if num_heads == 1:
        return f"1 head of head_dim {head_dim} = d_out {d_out}"
    return f"{num_heads} heads × head_dim {head_dim} = d_out {d_out}"


def describe_heads(settings: WalkthroughSettings, num_heads: int) -> str:
    """The caption fragment naming how page 4's heads were made (for figures taken to slides)."""
    head_dim = settings.heads_d_out // num_heads
    text = (f"{heads_phrase(num_heads, head_dim, settings.heads_d_out)}; "
            f"torch.manual_seed({settings.heads_seed})")
    if settings.qk_scale != 1:
        text += f"; W_q, W_k × {settings.qk_scale}"
    text += f"; mask {'on' if settings.causal else 'off'}"
    if settings.same_init and num_heads > 1:
        text += "; every head starts from head 1's weights"
    if dropout_active(settings):
        text += f"; dropout p={settings.dropout_p:g} (training, seed {settings.dropout_seed})"
    return text


def map_caption(settings: WalkthroughSettings, head: int) -> str:
    """Caption of one head's map: says that the map is before dropout when dropout is active."""
    caption = f"Attention weights of head {head + 1}"
    if dropout_active(settings):
        caption += " (before dropout; the dropped weights change the concatenated outputs)"
    return caption


WHY_SEVERAL = (
    "**Why several heads?** One row of attention weights is one weighted average: a token can "
    "look hard at one place or spread its look over many, but not look at two places for two "
    "different reasons at once. Several heads each compute their own weights, so one can follow "
    "the token just before while another looks back further; their outputs, concatenated "
    "and mixed by `out_proj`, give the token both. It needs no more weights and about the same "
    "arithmetic as one wide head: d_out is split, each of the H heads working in d_out / H "
    "dimensions; what it adds is H attention maps of T × T to compute and keep.\n\n"
    "**Why do the heads differ?** ")


def why_words(settings: WalkthroughSettings, num_heads: int) -> str:
    """Why several heads, and why they differ, said for the current settings (same initial
    weights, weight scale)."""
    return WHY_SEVERAL + _why_they_differ(settings, num_heads)


def _why_they_differ(settings: WalkthroughSettings, num_heads: int) -> str:
    if settings.same_init and num_heads > 1:
        return ("Every head sees the same embeddings, and here every head also starts from the "
                "same W_q, W_k, W_v (**Same initial weights** is on): identical heads give identical "
                "maps, so for now several heads see no more than one. Switch it off to give each "
                "head its own random start.")
    text = ("Every head sees the same embeddings. What differs is where its W_q, W_k, W_v start: "
            "drawn at random, so each head projects the tokens differently and gets a different "
            "map. During training each head then receives its own gradients, so they usually end "
            "up looking at different things (nothing guarantees it: in trained models some heads "
            "turn out redundant, and can be removed with little loss). Turn on **Same initial "
            "weights** to see the other case: identical heads give identical maps.")
    if settings.qk_scale == 1:
        text += (" At the book's initial weights (scale 1) the scores are all close to 0, so "
                 "every map is nearly uniform and the heads differ only a little; trained heads "
                 "have larger weights and sharper maps (try **W_q, W_k scale** 4).")
    else:
        text += (f" W_q and W_k are multiplied by {settings.qk_scale}, so every score is "
                 f"{settings.qk_scale ** 2}× what the unscaled initial weights give: sharp maps, as trained heads "
                 "have, where the differences show.")
    return text
