"""Tests of core/attention.py: the book's published numbers, PyTorch references, and edge cases.

References: F.scaled_dot_product_attention and nn.MultiheadAttention are independent
implementations, so agreement with them checks our masking, scaling and head splitting.
"""

import dataclasses
import inspect
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from core import attention
from core.attention import (
    BOOK_TOKENS,
    AttentionSteps,
    CausalAttention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    SelfAttentionV1,
    SelfAttentionV2,
    all_attn_scores,
    all_attn_weights,
    all_context_vecs,
    attention_intermediates,
    attn_scores_loop,
    attn_scores_matmul,
    attn_weights_plain,
    attn_weights_softmax,
    book_embeddings,
    causal_mask,
    context_vec_loop,
    context_vec_matmul,
    intermediates_from_module,
    wrapper_to_multihead,
)

# ----------------------------------------------------------------------------- helpers


def assert_close(actual, expected, atol=1e-6, rtol=1e-6):
    """Float comparison at the tolerance the project promises between equivalent computations."""
    torch.testing.assert_close(actual, expected.to(actual.dtype), atol=atol, rtol=rtol)


def assert_4_decimals(actual, expected):
    """The book prints 4 decimals: agree to within half a unit of the 4th decimal."""
    expected = torch.tensor(expected, dtype=actual.dtype)
    assert actual.shape == expected.shape
    assert (actual.detach() - expected).abs().max().item() < 5e-5, actual


def book_batch():
    return torch.stack((book_embeddings(), book_embeddings()), dim=0)  # (2, 6, 3)


def randn(*shape, seed=0, dtype=torch.float32):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator, dtype=dtype)


def sdpa_from_linears(x, W_query, W_key, W_value, num_heads, causal):
    """PyTorch's fused attention on (b, T, d_in) with nn.Linear projections split into heads."""
    b, num_tokens, _ = x.shape

    def heads(t):
        return t.view(b, num_tokens, num_heads, -1).transpose(1, 2)  # (b, H, T, head_dim)

    context = F.scaled_dot_product_attention(
        heads(W_query(x)), heads(W_key(x)), heads(W_value(x)), is_causal=causal
    )  # (b, H, T, head_dim)
    return context.transpose(1, 2).reshape(b, num_tokens, -1)  # (b, T, d_out)


def identity_value_module(num_tokens, dropout):
    """A CausalAttention whose output IS its attention weights: x = I and W_value = I."""
    torch.manual_seed(5)
    module = CausalAttention(num_tokens, num_tokens, num_tokens, dropout)
    with torch.no_grad():
        module.W_value.weight.copy_(torch.eye(num_tokens))
        module.W_query.weight.mul_(4.0)  # sharper, more varied weights
    x = torch.eye(num_tokens).unsqueeze(0)  # (1, T, T)
    return module, x


MODULE_FACTORIES = {
    "v1": lambda: SelfAttentionV1(3, 2),
    "v2": lambda: SelfAttentionV2(3, 2),
    "v2_bias": lambda: SelfAttentionV2(3, 4, qkv_bias=True),
    "causal": lambda: CausalAttention(3, 2, 6, 0.0),
    "causal_bias": lambda: CausalAttention(3, 4, 8, 0.0, qkv_bias=True),
    "wrapper": lambda: MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=3),
    "wrapper_out_proj": lambda: MultiHeadAttentionWrapper(3, 2, 6, 0.0, 2, True, out_proj=True),
    "mha": lambda: MultiHeadAttention(3, 4, 6, 0.0, num_heads=2),
    "mha_bias": lambda: MultiHeadAttention(3, 6, 6, 0.0, num_heads=3, qkv_bias=True),
    "mha_not_causal": lambda: MultiHeadAttention(3, 4, 6, 0.0, num_heads=2, causal=False),
}


def build(name):
    torch.manual_seed(123)
    return MODULE_FACTORIES[name]().eval()


def module_forward_one(module, x):
    """Module output for one (T, d_in) sequence; V1/V2 take 2-D input like the book."""
    if isinstance(module, (SelfAttentionV1, SelfAttentionV2)):
        return module(x)
    return module(x.unsqueeze(0))[0]


# ----------------------------------------------------------------------------- book numbers


def test_book_tokens_and_embeddings():
    assert BOOK_TOKENS == ["Your", "journey", "starts", "with", "one", "step"]
    inputs = book_embeddings()
    assert inputs.shape == (6, 3)
    assert inputs.dtype == torch.float32
    assert_4_decimals(inputs[1], [0.55, 0.87, 0.66])
    inputs[0, 0] = 99.0  # a fresh tensor each call: a caller cannot corrupt the next one
    assert book_embeddings()[0, 0].item() == pytest.approx(0.43)


def test_book_journey_scores_weights_and_context():
    inputs = book_embeddings()
    attn_scores = attn_scores_loop(inputs, 1)
    assert_4_decimals(attn_scores, [0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865])
    attn_weights = attn_weights_softmax(attn_scores)
    assert_4_decimals(attn_weights, [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581])
    assert_4_decimals(context_vec_loop(inputs, attn_weights), [0.4419, 0.6515, 0.5683])
    assert_4_decimals(context_vec_matmul(inputs, attn_weights), [0.4419, 0.6515, 0.5683])


def test_book_plain_normalisation():
    attn_scores = attn_scores_matmul(book_embeddings(), 1)
    assert_4_decimals(attn_weights_plain(attn_scores), [0.1455, 0.2278, 0.2249, 0.1285, 0.1077, 0.1656])


def test_book_all_tokens_row_matches_single_query():
    inputs = book_embeddings()
    attn_weights = all_attn_weights(all_attn_scores(inputs))
    context_vecs = all_context_vecs(attn_weights, inputs)
    assert_4_decimals(attn_weights[1], [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581])
    assert_4_decimals(context_vecs[1], [0.4419, 0.6515, 0.5683])
    assert context_vecs.shape == (6, 3)


def test_book_self_attention_v1_seed_123():
    torch.manual_seed(123)
    out = SelfAttentionV1(3, 2)(book_embeddings())
    assert out.shape == (6, 2)
    assert_4_decimals(out[0], [0.2996, 0.8053])


def test_book_self_attention_v2_seed_789():
    torch.manual_seed(789)
    out = SelfAttentionV2(3, 2)(book_embeddings())
    assert out.shape == (6, 2)
    assert_4_decimals(out[0], [-0.0739, 0.0713])


CAUSAL_BOOK_ROWS = [
    [-0.4519, 0.2216],
    [-0.5874, 0.0058],
    [-0.6300, -0.0632],
    [-0.5675, -0.0843],
    [-0.5526, -0.0981],
    [-0.5299, -0.1081],
]
SECOND_HEAD_BOOK_ROWS = [
    [0.4772, 0.1063],
    [0.5891, 0.3257],
    [0.6202, 0.3860],
    [0.5478, 0.3589],
    [0.5321, 0.3428],
    [0.5077, 0.3493],
]


def test_book_causal_attention_seed_123():
    torch.manual_seed(123)
    out = CausalAttention(3, 2, 6, 0.0)(book_batch())
    assert out.shape == (2, 6, 2)
    assert_4_decimals(out[0], CAUSAL_BOOK_ROWS)
    assert_4_decimals(out[1], CAUSAL_BOOK_ROWS)


def test_book_wrapper_seed_123():
    torch.manual_seed(123)
    out = MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=2)(book_batch())
    assert out.shape == (2, 6, 4)
    expected = [a + b for a, b in zip(CAUSAL_BOOK_ROWS, SECOND_HEAD_BOOK_ROWS)]
    assert_4_decimals(out[0], expected)
    assert_4_decimals(out[0, 0], [-0.4519, 0.2216, 0.4772, 0.1063])


def test_wrapper_out_proj_is_created_after_heads():
    torch.manual_seed(123)
    wrapper = MultiHeadAttentionWrapper(3, 2, 6, 0.0, 2, out_proj=True)
    assert isinstance(wrapper.out_proj, nn.Linear)
    assert wrapper.out_proj.weight.shape == (4, 4)
    with torch.no_grad():
        heads_only = torch.cat([head(book_batch()) for head in wrapper.heads], dim=-1)
    assert_4_decimals(heads_only[0, 0], [-0.4519, 0.2216, 0.4772, 0.1063])
    assert MultiHeadAttentionWrapper(3, 2, 6, 0.0, 2).out_proj is None


def test_book_intermediates_reproduce_causal_numbers():
    steps = intermediates_from_module(build("causal"), book_embeddings())
    assert_4_decimals(steps.output, CAUSAL_BOOK_ROWS)


# ----------------------------------------------------------------------------- step functions


@pytest.mark.parametrize("query_idx", range(6))
def test_loop_and_matmul_versions_agree(query_idx):
    inputs = book_embeddings()
    scores_loop = attn_scores_loop(inputs, query_idx)
    scores_matmul = attn_scores_matmul(inputs, query_idx)
    assert_close(scores_loop, scores_matmul)
    assert_close(scores_matmul, all_attn_scores(inputs)[query_idx])
    attn_weights = attn_weights_softmax(scores_matmul)
    assert_close(context_vec_loop(inputs, attn_weights), context_vec_matmul(inputs, attn_weights))


def test_plain_and_softmax_weights_sum_to_one_but_differ():
    attn_scores = torch.tensor([2.0, 1.0, 0.5])
    plain = attn_weights_plain(attn_scores)
    soft = attn_weights_softmax(attn_scores)
    assert plain.sum().item() == pytest.approx(1.0)
    assert soft.sum().item() == pytest.approx(1.0)
    assert soft[0] > plain[0]  # softmax makes the largest score stand out more
    # plain normalisation gives a negative weight for a negative score; softmax never does
    mixed = torch.tensor([2.0, -1.0, 0.5])
    assert attn_weights_plain(mixed).min() < 0
    assert attn_weights_softmax(mixed).min() > 0


def test_all_attn_weights_normalise_over_keys():
    attn_scores = randn(5, 5)
    attn_weights = all_attn_weights(attn_scores)
    assert_close(attn_weights.sum(dim=-1), torch.ones(5))
    assert not torch.allclose(attn_weights.sum(dim=0), torch.ones(5))


STEP_FUNCTIONS = [
    attn_scores_loop,
    attn_scores_matmul,
    attn_weights_plain,
    attn_weights_softmax,
    context_vec_loop,
    context_vec_matmul,
    all_attn_scores,
    all_attn_weights,
    all_context_vecs,
]


@pytest.mark.parametrize("fn", STEP_FUNCTIONS, ids=lambda fn: fn.__name__)
def test_step_functions_are_self_contained_for_display(fn):
    source = inspect.getsource(fn)
    assert source.startswith(f"def {fn.__name__}(")
    assert fn.__doc__
    # the app shows only this function's source, so it must not lean on private helpers
    assert not [name for name in fn.__code__.co_names if name.startswith("_")]


def test_core_attention_does_not_import_streamlit():
    assert "streamlit" not in inspect.getsource(attention)


# ----------------------------------------------------------------------------- causal mask


def test_causal_mask_hides_positions_above_the_diagonal():
    mask = causal_mask(4)
    assert mask.dtype == torch.bool
    assert mask.shape == (4, 4)
    expected = torch.tensor(
        [[0, 1, 1, 1], [0, 0, 1, 1], [0, 0, 0, 1], [0, 0, 0, 0]], dtype=torch.bool
    )
    assert torch.equal(mask, expected)
    assert torch.equal(causal_mask(1), torch.tensor([[False]]))
    with pytest.raises(ValueError, match="at least 1"):
        causal_mask(0)


def test_mask_is_by_position_so_a_genuine_zero_score_stays_visible():
    # with W_query = W_key = I and orthogonal tokens, the score of query 1 on key 0 is exactly 0
    module = CausalAttention(2, 2, 2, 0.0).eval()
    with torch.no_grad():
        for linear in (module.W_query, module.W_key, module.W_value):
            linear.weight.copy_(torch.eye(2))
    x = torch.eye(2).unsqueeze(0)  # (1, 2, 2)
    out = module(x)[0]  # values = I, so out = attention weights
    assert out[1, 0].item() > 0.0  # a buggy `scores == 0` mask would have hidden it
    # query 1 scores [0, 1] on keys 0 and 1, scaled by 1/sqrt(2) before the softmax
    expected_row = torch.softmax(torch.tensor([0.0, 1.0]) / math.sqrt(2), dim=0)
    assert_close(out, torch.stack([torch.tensor([1.0, 0.0]), expected_row]))
    steps = intermediates_from_module(module, torch.eye(2))
    assert steps.attn_scores[0, 1, 0].item() == 0.0
    assert_close(steps.attn_weights[0, 1], expected_row)


# ----------------------------------------------------------------------------- PyTorch references


def test_self_attention_v1_matches_sdpa():
    module = build("v1")
    x = randn(7, 3, seed=1)
    with torch.no_grad():
        q, k, v = (x @ W for W in (module.W_query, module.W_key, module.W_value))
        expected = F.scaled_dot_product_attention(q, k, v)  # (T, d_out)
        assert_close(module(x), expected)


@pytest.mark.parametrize("name", ["v2", "v2_bias"])
def test_self_attention_v2_matches_sdpa(name):
    module = build(name)
    x = randn(7, 3, seed=2)
    with torch.no_grad():
        expected = sdpa_from_linears(
            x.unsqueeze(0), module.W_query, module.W_key, module.W_value, 1, causal=False
        )[0]
        assert_close(module(x), expected)


@pytest.mark.parametrize("name", ["causal", "causal_bias"])
def test_causal_attention_matches_sdpa(name):
    module = build(name)
    x = randn(3, 6, 3, seed=3)
    with torch.no_grad():
        expected = sdpa_from_linears(x, module.W_query, module.W_key, module.W_value, 1, causal=True)
        assert_close(module(x), expected)
        wrong = sdpa_from_linears(x, module.W_query, module.W_key, module.W_value, 1, causal=False)
        assert not torch.allclose(module(x), wrong, atol=1e-4)  # the mask really matters


def test_wrapper_matches_sdpa_per_head():
    module = build("wrapper")
    x = randn(2, 6, 3, seed=4)
    with torch.no_grad():
        expected = torch.cat(
            [sdpa_from_linears(x, h.W_query, h.W_key, h.W_value, 1, causal=True) for h in module.heads],
            dim=-1,
        )
        assert_close(module(x), expected)


@pytest.mark.parametrize("name", ["mha", "mha_bias", "mha_not_causal"])
def test_multihead_attention_matches_sdpa(name):
    module = build(name)
    x = randn(2, 5, 3, seed=5)
    with torch.no_grad():
        context = sdpa_from_linears(
            x, module.W_query, module.W_key, module.W_value, module.num_heads, causal=module.causal
        )
        assert_close(module(x), module.out_proj(context))


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("qkv_bias", [True, False])
def test_multihead_attention_matches_nn_multiheadattention(causal, qkv_bias):
    d_model, num_heads, num_tokens = 8, 2, 5
    torch.manual_seed(0)
    ours = MultiHeadAttention(d_model, d_model, num_tokens, 0.0, num_heads, qkv_bias, causal=causal)
    ours.eval()
    theirs = nn.MultiheadAttention(d_model, num_heads, bias=True, batch_first=True).eval()
    with torch.no_grad():
        theirs.in_proj_weight.copy_(
            torch.cat([ours.W_query.weight, ours.W_key.weight, ours.W_value.weight], dim=0)
        )
        if qkv_bias:
            biases = [ours.W_query.bias, ours.W_key.bias, ours.W_value.bias]
            theirs.in_proj_bias.copy_(torch.cat(biases))
        else:
            theirs.in_proj_bias.zero_()
        theirs.out_proj.weight.copy_(ours.out_proj.weight)
        theirs.out_proj.bias.copy_(ours.out_proj.bias)

        x = randn(3, num_tokens, d_model, seed=6)
        attn_mask = causal_mask(num_tokens) if causal else None  # bool: True = not allowed
        expected, expected_weights = theirs(
            x, x, x, attn_mask=attn_mask, need_weights=True, average_attn_weights=False
        )
        assert_close(ours(x), expected)
        steps = intermediates_from_module(ours, x[0])
        assert_close(steps.attn_weights, expected_weights[0])
        assert_close(steps.output, expected[0])


# ----------------------------------------------------------------------------- wrapper <-> split heads


@pytest.mark.parametrize("out_proj", [False, True])
@pytest.mark.parametrize("qkv_bias", [False, True])
def test_wrapper_to_multihead_computes_the_same(out_proj, qkv_bias):
    torch.manual_seed(11)
    wrapper = MultiHeadAttentionWrapper(4, 3, 7, 0.0, 3, qkv_bias, out_proj=out_proj).eval()
    multihead = wrapper_to_multihead(wrapper)
    assert isinstance(multihead, MultiHeadAttention)
    assert (multihead.num_heads, multihead.head_dim, multihead.d_out) == (3, 3, 9)
    assert not multihead.training
    x = randn(2, 7, 4, seed=7)
    with torch.no_grad():
        assert_close(multihead(x), wrapper(x))
        assert_close(multihead(x[:, :4]), wrapper(x[:, :4]))  # shorter than context_length


def test_wrapper_to_multihead_leaves_global_rng_alone():
    torch.manual_seed(3)
    wrapper = MultiHeadAttentionWrapper(3, 2, 6, 0.0, 2)
    state = torch.get_rng_state()
    wrapper_to_multihead(wrapper)
    assert torch.equal(torch.get_rng_state(), state)


def test_wrapper_heads_are_the_split_heads_of_the_intermediates():
    wrapper = build("wrapper")
    x = randn(6, 3, seed=8)
    steps = intermediates_from_module(wrapper, x)
    for h, head in enumerate(wrapper.heads):
        head_steps = intermediates_from_module(head, x)
        assert_close(steps.attn_weights[h], head_steps.attn_weights[0])
        assert_close(steps.context_per_head[h], head_steps.context_vec)


# ----------------------------------------------------------------------------- engine vs modules


@pytest.mark.parametrize("name", list(MODULE_FACTORIES))
def test_intermediates_agree_with_module_forward(name):
    module = build(name)
    x = randn(6, 3, seed=9)
    steps = intermediates_from_module(module, x)
    with torch.no_grad():
        expected = module_forward_one(module, x)
    assert steps.output.shape == expected.shape
    assert_close(steps.output, expected)
    assert not steps.training
    assert steps.output.dtype == x.dtype


@pytest.mark.parametrize(
    "name, causal",
    [
        ("v1", False), ("v2", False), ("causal", True),
        ("wrapper", True), ("mha", True), ("mha_not_causal", False),
    ],
)
def test_intermediates_read_causality_from_the_module(name, causal):
    steps = intermediates_from_module(build(name), randn(6, 3, seed=10))
    assert steps.causal is causal
    assert bool(steps.mask.any()) is causal
    if not causal:
        assert (steps.attn_weights > 0).all()


def test_attention_intermediates_matches_manual_reference():
    # a from-scratch reference with plain torch ops, in float64 so agreement can be tight
    x = randn(5, 4, seed=11, dtype=torch.float64)
    W_query, W_key, W_value = (randn(4, 6, seed=s, dtype=torch.float64) for s in (12, 13, 14))
    b_query = randn(6, seed=15, dtype=torch.float64)
    out_w, out_b = randn(6, 6, seed=16, dtype=torch.float64), randn(6, seed=17, dtype=torch.float64)
    steps = attention_intermediates(
        x, W_query, W_key, W_value, b_query=b_query, num_heads=3,
        out_proj_weight=out_w, out_proj_bias=out_b,
    )
    queries = x @ W_query + b_query
    q_h = queries.view(5, 3, 2).transpose(0, 1)
    k_h = (x @ W_key).view(5, 3, 2).transpose(0, 1)
    v_h = (x @ W_value).view(5, 3, 2).transpose(0, 1)
    scores = q_h @ k_h.transpose(1, 2)
    scaled = scores / math.sqrt(2)
    weights = torch.softmax(scaled.masked_fill(causal_mask(5), -torch.inf), dim=-1)
    context = (weights @ v_h).transpose(0, 1).reshape(5, 6)
    for actual, expected in [
        (steps.queries, queries), (steps.queries_h, q_h), (steps.attn_scores, scores),
        (steps.scaled_scores, scaled), (steps.attn_weights, weights),
        (steps.context_vec, context), (steps.output, context @ out_w + out_b),
    ]:
        assert_close(actual, expected, atol=1e-12, rtol=1e-12)


def test_attention_steps_shapes_and_fields():
    x = randn(5, 3, seed=18)
    torch.manual_seed(0)
    module = MultiHeadAttention(3, 8, 5, 0.0, num_heads=4).eval()
    steps = intermediates_from_module(module, x)
    assert isinstance(steps, AttentionSteps)
    H, T, hd, d_out = 4, 5, 2, 8
    expected_shapes = {
        "queries": (T, d_out), "keys": (T, d_out), "values": (T, d_out),
        "queries_h": (H, T, hd), "keys_h": (H, T, hd), "values_h": (H, T, hd),
        "attn_scores": (H, T, T), "scaled_scores": (H, T, T), "mask": (T, T),
        "masked_scores": (H, T, T), "attn_weights": (H, T, T), "dropout_keep": (H, T, T),
        "attn_weights_dropped": (H, T, T), "context_per_head": (H, T, hd),
        "context_vec": (T, d_out), "output": (T, d_out),
    }
    tensors = steps.tensors()
    assert list(tensors) == list(expected_shapes)
    assert {name: tuple(t.shape) for name, t in tensors.items()} == expected_shapes
    assert steps.mask.dtype == torch.bool and steps.dropout_keep.dtype == torch.bool
    assert (steps.num_heads, steps.head_dim, steps.num_tokens) == (H, hd, T)
    assert steps.dropout_keep.all()
    assert torch.equal(steps.attn_weights_dropped, steps.attn_weights)
    assert_close(steps.scaled_scores, steps.attn_scores / math.sqrt(hd))
    assert torch.isinf(steps.masked_scores[:, steps.mask]).all()
    assert torch.equal(steps.masked_scores[:, ~steps.mask], steps.scaled_scores[:, ~steps.mask])
    assert not steps.output.requires_grad  # an inspection tool builds no autograd graph
    with pytest.raises(dataclasses.FrozenInstanceError):
        steps.num_heads = 2


def test_output_equals_context_vec_without_out_proj():
    weights = [randn(3, 4, seed=s) for s in (1, 2, 3)]
    steps = attention_intermediates(randn(4, 3, seed=19), *weights, num_heads=2)
    assert torch.equal(steps.output, steps.context_vec)


# ----------------------------------------------------------------------------- weights


@pytest.mark.parametrize("causal", [True, False])
def test_weight_rows_sum_to_one(causal):
    steps = attention_intermediates(
        randn(9, 4, seed=20), *(randn(4, 6, seed=s) for s in (4, 5, 6)), num_heads=3, causal=causal
    )
    assert_close(steps.attn_weights.sum(dim=-1), torch.ones(3, 9))
    assert (steps.attn_weights >= 0).all()


def test_causal_weights_are_exactly_zero_above_the_diagonal():
    steps = attention_intermediates(
        randn(8, 4, seed=21), *(randn(4, 4, seed=s) for s in (7, 8, 9)), num_heads=2
    )
    above = steps.attn_weights[:, causal_mask(8)]
    assert torch.equal(above, torch.zeros_like(above))
    assert (steps.attn_weights[:, ~causal_mask(8)] > 0).all()
    assert steps.attn_weights[:, 0, 0].eq(1.0).all()  # the first token can only see itself

    module, x = identity_value_module(6, 0.0)
    with torch.no_grad():
        module_weights = module.eval()(x)[0]  # (T, T)
    assert torch.equal(module_weights[causal_mask(6)], torch.zeros(15))
    assert_close(module_weights.sum(dim=-1), torch.ones(6))


# ----------------------------------------------------------------------------- dropout


def test_engine_dropout_zeroes_some_and_rescales_kept_exactly():
    p = 0.5
    x = randn(12, 4, seed=22, dtype=torch.float64)
    weights = [randn(4, 4, seed=s, dtype=torch.float64) for s in (10, 11, 12)]
    steps = attention_intermediates(x, *weights, dropout_p=p, dropout_seed=7, training=True)
    keep = steps.dropout_keep
    assert keep.dtype == torch.bool
    assert 0 < (~keep).sum() < keep.numel()
    dropped = steps.attn_weights_dropped
    assert torch.equal(dropped[~keep], torch.zeros(int((~keep).sum()), dtype=torch.float64))
    assert torch.equal(dropped[keep], steps.attn_weights[keep] * (1.0 / (1.0 - p)))
    # unlike the weights, the dropped weights no longer sum to 1 (only on average)
    assert not torch.allclose(dropped.sum(dim=-1), torch.ones(1, 12, dtype=torch.float64))


def test_engine_dropout_matches_reference_with_same_keep_mask():
    p = 0.3
    x = randn(10, 6, seed=23, dtype=torch.float64)
    W_query, W_key, W_value = (randn(6, 6, seed=s, dtype=torch.float64) for s in (13, 14, 15))
    steps = attention_intermediates(
        x, W_query, W_key, W_value, num_heads=2, dropout_p=p, dropout_seed=1, training=True
    )
    q_h, k_h, v_h = ((x @ W).view(10, 2, 3).transpose(0, 1) for W in (W_query, W_key, W_value))
    scores = (q_h @ k_h.transpose(1, 2)) / math.sqrt(3)
    weights = torch.softmax(scores.masked_fill(causal_mask(10), -torch.inf), dim=-1)
    dropped = weights * steps.dropout_keep / (1.0 - p)
    context = (dropped @ v_h).transpose(0, 1).reshape(10, 6)
    assert_close(steps.attn_weights_dropped, dropped, atol=1e-12, rtol=1e-12)
    assert_close(steps.context_vec, context, atol=1e-12, rtol=1e-12)


def test_engine_dropout_is_reproducible_and_leaves_global_rng_alone():
    args = (randn(16, 4, seed=24), *(randn(4, 4, seed=s) for s in (16, 17, 18)))
    state = torch.get_rng_state()
    first = attention_intermediates(*args, dropout_p=0.4, dropout_seed=3, training=True)
    again = attention_intermediates(*args, dropout_p=0.4, dropout_seed=3, training=True)
    other = attention_intermediates(*args, dropout_p=0.4, dropout_seed=4, training=True)
    assert torch.equal(torch.get_rng_state(), state)
    assert torch.equal(first.dropout_keep, again.dropout_keep)
    assert torch.equal(first.output, again.output)
    assert not torch.equal(first.dropout_keep, other.dropout_keep)
    fraction_dropped = (~first.dropout_keep).float().mean().item()
    assert 0.3 < fraction_dropped < 0.5  # 256 draws at p = 0.4


def test_engine_dropout_is_off_in_eval_mode():
    args = (randn(6, 4, seed=25), *(randn(4, 4, seed=s) for s in (19, 20, 21)))
    steps = attention_intermediates(*args, dropout_p=0.5, training=False)
    assert steps.dropout_keep.all()
    assert torch.equal(steps.attn_weights_dropped, steps.attn_weights)
    assert steps.dropout_p == 0.5 and steps.training is False


def test_module_dropout_zeroes_some_and_rescales_kept_by_1_over_1_minus_p():
    # nn.Dropout draws from the global RNG, so only its structure can be compared with the engine
    p = 0.5
    module, x = identity_value_module(32, p)
    with torch.no_grad():
        eval_weights = module.eval()(x)[0]  # (T, T)
        torch.manual_seed(0)
        train_weights = module.train()(x)[0]  # (T, T)
    visible = ~causal_mask(32)
    dropped = visible & (train_weights == 0)
    kept = visible & (train_weights != 0)
    assert dropped.any() and kept.any()
    assert_close(train_weights[kept], eval_weights[kept] * (1.0 / (1.0 - p)))
    fraction_dropped = dropped.sum().item() / visible.sum().item()  # 528 draws at p = 0.5
    assert 0.4 < fraction_dropped < 0.6


def test_module_and_engine_dropout_share_structure():
    p = 0.25
    module, x = identity_value_module(24, p)
    module.train()
    with torch.no_grad():
        torch.manual_seed(1)
        module_dropped = module(x)[0]  # (T, T): the module's weights after dropout
    steps = intermediates_from_module(module, x[0], dropout_seed=5)
    assert steps.training and steps.dropout_p == p
    eval_steps = intermediates_from_module(module, x[0], training=False)
    assert not eval_steps.training and eval_steps.dropout_keep.all()
    with torch.no_grad():
        assert_close(eval_steps.output, module.eval()(x)[0])
    visible = ~causal_mask(24)
    scale = 1.0 / (1.0 - p)
    for dropped_weights in (module_dropped, steps.attn_weights_dropped[0]):
        kept = visible & (dropped_weights != 0)
        assert_close(dropped_weights[kept], eval_steps.attn_weights[0][kept] * scale)
        fraction_dropped = 1.0 - kept.sum().item() / visible.sum().item()  # 300 draws at p = 0.25
        assert 0.15 < fraction_dropped < 0.35


# ----------------------------------------------------------------------------- bad inputs


def valid_args(d_in=3, d_out=4):
    return (randn(5, d_in, seed=26), *(randn(d_in, d_out, seed=s) for s in (22, 23, 24)))


def test_non_divisible_heads_raise_value_error():
    with pytest.raises(ValueError, match="divisible by num_heads"):
        MultiHeadAttention(3, 5, 6, 0.0, num_heads=2)
    with pytest.raises(ValueError, match="divisible by num_heads"):
        attention_intermediates(*valid_args(d_out=5), num_heads=2)
    with pytest.raises(ValueError, match="num_heads"):
        attention_intermediates(*valid_args(), num_heads=0)
    with pytest.raises(ValueError, match="num_heads"):
        MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=0)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_input_raises_value_error(bad):
    x, W_query, W_key, W_value = valid_args()
    x[2, 1] = bad
    with pytest.raises(ValueError, match="NaN or infinite"):
        attention_intermediates(x, W_query, W_key, W_value)
    with pytest.raises(ValueError, match="x contains NaN"):
        intermediates_from_module(build("mha"), x)
    W_key = W_key.clone()
    W_key[0, 0] = bad
    with pytest.raises(ValueError, match="W_key"):
        attention_intermediates(valid_args()[0], W_query, W_key, W_value)


def test_wrong_shapes_raise_value_error():
    x, W_query, W_key, W_value = valid_args()
    with pytest.raises(ValueError, match="2 dimension"):
        attention_intermediates(x.unsqueeze(0), W_query, W_key, W_value)
    with pytest.raises(ValueError, match="d_in=3"):
        attention_intermediates(randn(5, 4), W_query, W_key, W_value)
    with pytest.raises(ValueError, match="W_value has shape"):
        attention_intermediates(x, W_query, W_key, randn(3, 6))
    with pytest.raises(ValueError, match="b_key"):
        attention_intermediates(x, W_query, W_key, W_value, b_key=randn(3))
    with pytest.raises(ValueError, match="out_proj_weight"):
        attention_intermediates(x, W_query, W_key, W_value, out_proj_weight=randn(3, 4))
    with pytest.raises(ValueError, match="without out_proj_weight"):
        attention_intermediates(x, W_query, W_key, W_value, out_proj_bias=randn(4))
    with pytest.raises(ValueError, match="floating-point"):
        attention_intermediates(x.long(), W_query, W_key, W_value)
    with pytest.raises(ValueError, match="at least one token"):
        attention_intermediates(x[:0], W_query, W_key, W_value)
    with pytest.raises(ValueError, match="torch tensor"):
        attention_intermediates(x.tolist(), W_query, W_key, W_value)


@pytest.mark.parametrize("dropout_p", [-0.1, 1.0, 1.5, float("nan")])
def test_bad_dropout_raises_value_error(dropout_p):
    with pytest.raises(ValueError, match="dropout_p"):
        attention_intermediates(*valid_args(), dropout_p=dropout_p)


def test_module_input_errors_are_value_errors():
    causal = build("causal")
    with pytest.raises(ValueError, match="context_length=6"):
        causal(randn(1, 7, 3))
    with pytest.raises(ValueError, match="context_length=6"):
        intermediates_from_module(causal, randn(7, 3))
    with pytest.raises(ValueError, match=r"\(b, num_tokens, d_in\)"):
        build("mha")(randn(6, 3))
    with pytest.raises(ValueError, match="d_in is 3"):
        build("wrapper")(randn(1, 6, 4))
    with pytest.raises(ValueError, match="Cannot read attention weights"):
        intermediates_from_module(nn.Linear(3, 3), randn(6, 3))


# ----------------------------------------------------------------------------- numerics and sizes


def test_huge_inputs_give_finite_weights_summing_to_one():
    x = randn(6, 3, seed=27) * 1e30  # scores ~1e60 overflow float32
    module = build("mha")
    steps = intermediates_from_module(module, x)
    assert torch.isfinite(steps.attn_weights).all()
    assert_close(steps.attn_weights.sum(dim=-1), torch.ones(2, 6))
    assert torch.isfinite(steps.output).all()
    assert torch.equal(steps.attn_weights[:, causal_mask(6)], torch.zeros(2, 15))


def test_scores_beyond_float64_are_clamped_not_nan():
    # all-positive numbers, so every dot product overflows to +inf instead of inf - inf = NaN
    x = torch.full((4, 2), 1e200, dtype=torch.float64)
    x[1] *= 2.0
    W = torch.ones(2, 2, dtype=torch.float64)
    steps = attention_intermediates(x, W, W, W, causal=False)
    assert torch.isinf(steps.attn_scores).all()  # (2e200)^2 * 2 > 1.8e308
    assert torch.isfinite(steps.attn_weights).all()
    assert_close(steps.attn_weights.sum(dim=-1), torch.ones(1, 4, dtype=torch.float64))
    # tied (clamped) scores share the weight equally: the limit of softmax as scores grow
    assert_close(steps.attn_weights[0, 0], torch.full((4,), 0.25, dtype=torch.float64))


def test_overflow_even_in_float64_raises_value_error():
    x = torch.full((3, 4), 1e308, dtype=torch.float64)
    W = torch.full((4, 2), 10.0, dtype=torch.float64)
    with pytest.raises(ValueError, match="too large"):
        attention_intermediates(x, W, W, W)


@pytest.mark.parametrize("causal", [True, False])
def test_single_token(causal):
    x = randn(1, 3, seed=28)
    weights = [randn(3, 4, seed=s) for s in (25, 26, 27)]
    steps = attention_intermediates(x, *weights, num_heads=2, causal=causal)
    assert torch.equal(steps.attn_weights, torch.ones(2, 1, 1))
    assert_close(steps.context_vec, steps.values)  # one token can only attend to itself
    for name in ["causal", "wrapper", "mha", "v2"]:
        module = build(name)
        with torch.no_grad():
            assert_close(intermediates_from_module(module, x).output, module_forward_one(module, x))


def test_64_tokens_by_64_dims():
    torch.manual_seed(0)
    module = MultiHeadAttention(64, 64, 64, 0.0, num_heads=8).eval()
    x = randn(64, 64, seed=29)
    steps = intermediates_from_module(module, x)
    assert steps.attn_weights.shape == (8, 64, 64)
    assert steps.output.shape == (64, 64)
    with torch.no_grad():
        expected = module(x.unsqueeze(0))[0]
        assert_close(steps.output, expected)
        linears = (module.W_query, module.W_key, module.W_value)
        context = sdpa_from_linears(x.unsqueeze(0), *linears, num_heads=8, causal=True)
        assert_close(steps.context_vec, context[0])
    assert_close(steps.attn_weights.sum(dim=-1), torch.ones(8, 64))
