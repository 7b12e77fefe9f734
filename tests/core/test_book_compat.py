"""The book's calls, pasted as the book writes them, run against core (ch. 2 loader, ch. 3 attention).

Also: where the book raises AssertionError / RuntimeError, core's clear ValueErrors are caught by the
book's `except` clauses too.
"""

from __future__ import annotations

import pytest
import torch

from core.attention import (
    CausalAttention,
    MHAPyTorchClass,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    multihead_to_fused,
    PyTorchMultiHeadAttention,
)
from core.data import create_dataloader_v1
from core.errors import InvalidSettingError, ShapeMismatchError

STORY = ("In the beginning the house was quiet, and the garden behind it was full of old trees. " * 60).strip()


# ---------------------------------------------------------------------------------------------
# ch. 2: the data loader
# ---------------------------------------------------------------------------------------------


def test_book_dataloader_call_runs_unchanged():
    dataloader = create_dataloader_v1(
        STORY, batch_size=4, max_length=256, stride=128, shuffle=True, drop_last=True, num_workers=0
    )
    inputs, targets = next(iter(dataloader))
    assert inputs.shape == (4, 256) and targets.shape == (4, 256)
    assert dataloader.num_workers == 0
    # targets are the inputs shifted by one token, as in the book
    assert torch.equal(inputs[:, 1:], targets[:, :-1])


def test_book_dataloader_positional_call_and_num_workers_pass_through():
    # the book's parameters in the book's order, positionally
    dataloader = create_dataloader_v1(STORY, 8, 4, 4, False, True, 0)
    first_inputs, _ = next(iter(dataloader))
    assert first_inputs.shape == (8, 4)
    assert dataloader.num_workers == 0
    assert create_dataloader_v1(STORY, batch_size=2, max_length=4, stride=4, num_workers=1).num_workers == 1


def test_book_dataloader_negative_workers_is_a_value_error():
    with pytest.raises(ValueError):
        create_dataloader_v1(STORY, batch_size=2, max_length=4, stride=4, num_workers=-1)


def test_too_short_text_is_caught_as_the_books_assertion():
    # the book's GPTDatasetV1 asserts the text has more than max_length tokens
    with pytest.raises(AssertionError, match="needs at least 257"):
        create_dataloader_v1("Too short.", batch_size=4, max_length=256, stride=128, num_workers=0)
    with pytest.raises(ValueError):
        create_dataloader_v1("Too short.", batch_size=4, max_length=256, stride=128, num_workers=0)


# ---------------------------------------------------------------------------------------------
# ch. 3 bonus: nn.MultiheadAttention
# ---------------------------------------------------------------------------------------------


def _book_inputs(seed=0, batch_size=2, context_len=6, embed_dim=12):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(batch_size, context_len, embed_dim, generator=generator)  # (b, T, d)


def test_book_test_mha_runs_unchanged():
    # the book package's own test: d_in differs from d_out
    context_length, d_in, d_out = 100, 256, 16
    mha = MultiHeadAttention(d_in, d_out, context_length, dropout=0.0, num_heads=2)
    assert mha(torch.rand(8, 6, d_in)).shape == torch.Size([8, 6, d_out])
    mha = PyTorchMultiHeadAttention(d_in, d_out, num_heads=2)
    assert mha(torch.rand(8, 6, d_in)).shape == torch.Size([8, 6, d_out])


def test_pytorch_mha_is_one_fused_projection_and_an_output_projection():
    mha = PyTorchMultiHeadAttention(d_in=12, d_out=8, num_heads=2, dropout=0.0, qkv_bias=True)
    assert mha.qkv.weight.shape == (24, 12) and mha.qkv.bias is not None
    assert mha.proj.weight.shape == (8, 8)
    assert set(mha.state_dict()) == {"qkv.weight", "qkv.bias", "proj.weight", "proj.bias"}
    assert PyTorchMultiHeadAttention(12, 8, 2).qkv.bias is None
    # positional, as in the bonus text
    assert PyTorchMultiHeadAttention(12, 12, 3, 0.1, True)(_book_inputs()).shape == (2, 6, 12)


def test_notebook_class_runs_with_its_signature_and_state_dict_names():
    embeddings = _book_inputs()
    mha = MHAPyTorchClass(d_in=12, d_out=12, context_length=6, dropout=0.0, num_heads=3, qkv_bias=False)
    assert mha(embeddings).shape == (2, 6, 12)
    assert isinstance(mha.multihead_attn, torch.nn.MultiheadAttention)
    assert mha.multihead_attn.batch_first and mha.multihead_attn.bias_k is None
    keys = set(mha.state_dict())
    assert {"proj.weight", "proj.bias", "mask", "multihead_attn.in_proj_weight"} <= keys
    assert not any(key.startswith("out_proj") for key in keys)
    with_bias = MHAPyTorchClass(12, 12, 3, 6, qkv_bias=True)
    assert with_bias.multihead_attn.bias_k is not None and with_bias.multihead_attn.in_proj_bias is not None


def _is_causal(mha, d_in):
    x = _book_inputs(seed=1, embed_dim=d_in)
    changed = x.clone()
    changed[:, 4:] = _book_inputs(seed=2, embed_dim=d_in)[:, 4:]  # new tokens 4 and 5 only
    with torch.no_grad():
        out, out_changed = mha(x), mha(changed)
    # earlier positions never see later tokens...
    torch.testing.assert_close(out[:, :4], out_changed[:, :4])
    # ...and the changed positions do change (the check is not vacuous)
    assert (out[:, 4:] - out_changed[:, 4:]).abs().max() > 1e-3


@pytest.mark.parametrize("qkv_bias", [False, True])
def test_both_pytorch_classes_are_causal(qkv_bias):
    torch.manual_seed(0)
    _is_causal(PyTorchMultiHeadAttention(10, 12, num_heads=4, qkv_bias=qkv_bias).eval(), d_in=10)
    _is_causal(MHAPyTorchClass(12, 12, 4, context_length=6, qkv_bias=qkv_bias).eval(), d_in=12)


def _copy_into_notebook_class(source: MultiHeadAttention, target: MHAPyTorchClass) -> None:
    """Put MultiHeadAttention's weights into the nn.MultiheadAttention version (qkv_bias=False)."""
    d = source.d_out
    with torch.no_grad():
        in_proj = torch.cat([source.W_query.weight, source.W_key.weight, source.W_value.weight])  # (3d, d)
        target.multihead_attn.in_proj_weight.copy_(in_proj)
        # the inner output projection passes through; the notebook's extra proj does the mixing
        target.multihead_attn.out_proj.weight.copy_(torch.eye(d))
        target.proj.weight.copy_(source.out_proj.weight)
        target.proj.bias.copy_(source.out_proj.bias)


@pytest.mark.parametrize("num_heads, num_tokens", [(1, 6), (2, 6), (4, 3), (4, 8)])
def test_pytorch_classes_match_multihead_attention_with_copied_weights(num_heads, num_tokens):
    torch.manual_seed(7)
    for d_in in (16, 24):
        reference = MultiHeadAttention(d_in, 16, context_length=8, dropout=0.0, num_heads=num_heads).eval()
        fused = multihead_to_fused(reference).eval()
        x = _book_inputs(seed=3, context_len=num_tokens, embed_dim=d_in)
        with torch.no_grad():
            torch.testing.assert_close(fused(x), reference(x), rtol=1e-5, atol=1e-6)
            # a differently initialised module does NOT match, so the comparison has teeth
            assert (PyTorchMultiHeadAttention(d_in, 16, num_heads).eval()(x) - reference(x)).abs().max() > 1e-3
    reference = MultiHeadAttention(16, 16, context_length=8, dropout=0.0, num_heads=num_heads).eval()
    notebook = MHAPyTorchClass(16, 16, num_heads, context_length=8).eval()
    _copy_into_notebook_class(reference, notebook)
    x = _book_inputs(seed=3, context_len=num_tokens, embed_dim=16)
    with torch.no_grad():
        torch.testing.assert_close(notebook(x), reference(x), rtol=1e-5, atol=1e-6)


def test_pytorch_mha_dropout_acts_only_in_training():
    torch.manual_seed(0)
    mha = PyTorchMultiHeadAttention(8, 8, 2, dropout=0.5)
    x = _book_inputs(embed_dim=8)
    with torch.no_grad():
        mha.eval()
        torch.testing.assert_close(mha(x), mha(x))
        mha.train()
        assert (mha(x) - mha(x)).abs().max() > 1e-4


def test_pytorch_mha_bad_settings_are_book_and_app_errors():
    with pytest.raises(AssertionError, match="divisible"):
        PyTorchMultiHeadAttention(12, 12, num_heads=5)
    with pytest.raises(ValueError, match="divisible"):
        PyTorchMultiHeadAttention(12, 12, num_heads=0)
    with pytest.raises(ValueError, match="d_in"):
        MHAPyTorchClass(8, 12, num_heads=2, context_length=4)
    with pytest.raises(ValueError, match="features per token"):
        PyTorchMultiHeadAttention(8, 12, num_heads=2)(_book_inputs(embed_dim=12))
    mha = MHAPyTorchClass(8, 8, 2, context_length=4)
    with pytest.raises(RuntimeError, match="context_length=4"):
        mha(_book_inputs(context_len=5, embed_dim=8))
    with pytest.raises(ValueError, match="context_length=4"):
        mha(_book_inputs(context_len=5, embed_dim=8))

# ---------------------------------------------------------------------------------------------
# Errors: caught the book's way and the app's way
# ---------------------------------------------------------------------------------------------


def test_error_types_are_both():
    assert issubclass(InvalidSettingError, ValueError) and issubclass(InvalidSettingError, AssertionError)
    assert issubclass(ShapeMismatchError, ValueError) and issubclass(ShapeMismatchError, RuntimeError)


def test_heads_not_dividing_d_out_is_the_books_assertion():
    # the book: assert d_out % num_heads == 0
    try:
        MultiHeadAttention(d_in=3, d_out=4, context_length=6, dropout=0.0, num_heads=3)
    except AssertionError as error:
        assert "divisible by num_heads" in str(error)
        assert isinstance(error, ValueError)
    else:
        pytest.fail("no error for d_out=4, num_heads=3")
    with pytest.raises(AssertionError, match="at least 1"):
        MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=0)


@pytest.mark.parametrize(
    "module",
    [
        lambda: CausalAttention(3, 2, context_length=4, dropout=0.0),
        lambda: MultiHeadAttention(3, 2, context_length=4, dropout=0.0, num_heads=2),
        lambda: MultiHeadAttentionWrapper(3, 2, context_length=4, dropout=0.0, num_heads=2),
    ],
)
def test_too_many_tokens_is_the_books_runtime_error(module):
    # the book's classes fail with a RuntimeError when the mask is shorter than the input
    torch.manual_seed(123)
    attention = module()
    batch = torch.rand(2, 6, 3)  # 6 tokens > context_length 4
    with pytest.raises(RuntimeError, match="context_length=4"):
        attention(batch)
    with pytest.raises(ValueError, match="context_length=4"):
        attention(batch)


def test_wrong_feature_count_is_the_books_runtime_error():
    torch.manual_seed(123)
    attention = MultiHeadAttention(3, 2, context_length=4, dropout=0.0, num_heads=2)
    with pytest.raises(RuntimeError, match="features per token"):
        attention(torch.rand(2, 4, 5))


@pytest.mark.parametrize("qkv_bias", [False, True])
def test_multihead_to_fused_puts_q_k_v_side_by_side_and_computes_the_same(qkv_bias):
    """core.attention.multihead_to_fused (page 4's third class): qkv's rows are W_query's, W_key's
    and W_value's in that order, with their biases; the output is MultiHeadAttention's."""
    torch.manual_seed(11)
    reference = MultiHeadAttention(6, 8, context_length=5, dropout=0.0, num_heads=2,
                                   qkv_bias=qkv_bias).double().eval()
    before = torch.get_rng_state()
    fused = multihead_to_fused(reference)
    assert torch.equal(torch.get_rng_state(), before)  # its throwaway init draws from a forked RNG
    assert fused.qkv.weight.dtype == torch.float64 and not fused.training
    assert torch.equal(fused.qkv.weight[:8], reference.W_query.weight)
    assert torch.equal(fused.qkv.weight[8:16], reference.W_key.weight)
    assert torch.equal(fused.qkv.weight[16:], reference.W_value.weight)
    assert (fused.qkv.bias is not None) == qkv_bias
    if qkv_bias:
        assert torch.equal(fused.qkv.bias[8:16], reference.W_key.bias)
    x = _book_inputs(seed=4, context_len=5, embed_dim=6).double()
    with torch.no_grad():
        torch.testing.assert_close(fused(x), reference(x), rtol=0, atol=1e-12)
        # keys and queries swapped: a different module, so the equality above is not vacuous
        swapped = multihead_to_fused(reference)
        swapped.qkv.weight[:16] = torch.cat([reference.W_key.weight, reference.W_query.weight])
        assert (swapped(x) - reference(x)).abs().max() > 1e-3
