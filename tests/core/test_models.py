"""Tests of core.models (the model ladder, GPT config, attention paths, dropout, generation) and core.device."""

import math

import pytest
import torch
import torch.nn.functional as F

from core.data import IGNORE_INDEX
from core.device import available_devices, resolve_device
from core.models import (
    GPT,
    BigramLM,
    CausalSelfAttention,
    GPTConfig,
    SelfAttentionHead,
    SingleHeadLM,
    build_model,
    generate,
)

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: a second thread only waits (tests/conftest.py)

V = 27


def random_ids(batch, time, seed=0, vocab=V):
    return torch.randint(vocab, (batch, time), generator=torch.Generator().manual_seed(seed))


def set_sdpa(model: GPT, use_sdpa: bool) -> None:
    for module in model.modules():
        if isinstance(module, CausalSelfAttention):
            module.use_sdpa = use_sdpa


# ---------------------------------------------------------------------------------------------
# Shapes, losses, registry
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["bigram", "single_head", "gpt"])
def test_every_model_has_the_same_interface(kind):
    model = build_model(kind, V)
    idx = random_ids(3, 8)
    logits, loss = model(idx)
    assert logits.shape == (3, 8, V)
    assert loss is None
    logits, loss = model(idx, random_ids(3, 8, seed=1))
    assert loss.dim() == 0 and torch.isfinite(loss)
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())


@pytest.mark.parametrize("kind", ["bigram", "single_head", "gpt"])
def test_initial_loss_is_close_to_uniform_guess(kind):
    # With std-0.02 init the logits are nearly equal, so the loss starts at about ln(V) = 3.296.
    model = build_model(kind, V)
    _, loss = model(random_ids(64, 8), random_ids(64, 8, seed=1))
    assert abs(loss.item() - math.log(V)) < 0.05


def test_build_model_rejects_unknown_kind_and_settings():
    with pytest.raises(ValueError, match="unknown model kind"):
        build_model("lstm", V)
    with pytest.raises(ValueError, match="invalid settings"):
        build_model("bigram", V, n_layer=2)
    with pytest.raises(ValueError, match="invalid settings"):
        build_model("gpt", V, n_layers=2)
    with pytest.raises(ValueError, match="divisible"):
        build_model("gpt", V, d_embed=30, n_head=4)


def test_bigram_is_a_vocab_by_vocab_table():
    model = BigramLM(V)
    assert model.logits_table.weight.shape == (V, V)
    assert model.num_params() == V * V
    logits, _ = model(torch.tensor([[3, 3, 5]]))
    assert torch.equal(logits[0, 0], logits[0, 1])  # same character -> same row, whatever the context
    assert torch.equal(logits[0, 2], model.logits_table.weight[5])


def test_gpt_config_defaults_are_the_lecture_values():
    config = GPTConfig()
    assert (config.vocab_size, config.context_size, config.n_layer, config.n_head) == (27, 12, 3, 4)
    assert (config.d_embed, config.d_ff, config.dropout) == (64, 256, 0.1)
    assert config.bias is True and config.causal is True and config.use_sdpa is True
    assert config.head_dim == 16


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"d_embed": 64, "n_head": 5}, "divisible"),
        ({"n_layer": 0}, "positive"),
        ({"vocab_size": -1}, "positive"),
        ({"context_size": 2.5}, "whole number"),
        ({"dropout": 1.0}, "below 1"),
        ({"dropout": -0.1}, "at least 0"),
        ({"causal": "yes"}, "true or false"),
    ],
)
def test_gpt_config_validation(changes, message):
    with pytest.raises(ValueError, match=message):
        GPTConfig(**changes)


def test_config_dict_round_trip_and_unknown_keys():
    config = GPTConfig(n_layer=2, dropout=0.0)
    assert GPTConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ValueError, match="unknown model config fields: colour"):
        GPTConfig.from_dict({**config.to_dict(), "colour": "red"})


def test_param_count_formula_and_summary_agree_with_the_model():
    for config in (GPTConfig(), GPTConfig(bias=False, n_layer=1, d_embed=32, n_head=2, d_ff=48)):
        model = GPT(config)
        assert config.num_params() == model.num_params()
        summary = model.layer_summary()
        assert sum(row["params"] for row in summary) == model.num_params()
        assert {"name", "shape", "params"} <= set(summary[0])
    assert GPT(GPTConfig()).num_params() == 154_331


def test_sequence_longer_than_context_is_refused():
    model = GPT(GPTConfig(context_size=4))
    with pytest.raises(ValueError, match="longer than the model's context"):
        model(random_ids(1, 5))
    with pytest.raises(ValueError, match="batch, time"):
        model(torch.zeros(5, dtype=torch.long))


# ---------------------------------------------------------------------------------------------
# Loss and padding
# ---------------------------------------------------------------------------------------------


def test_padding_targets_are_ignored_in_the_loss():
    model = GPT(GPTConfig(dropout=0.0))
    idx = random_ids(2, 6)
    targets = random_ids(2, 6, seed=3)
    targets[0, 4:] = IGNORE_INDEX
    targets[1, 2:] = IGNORE_INDEX
    logits, loss = model(idx, targets)
    valid = targets != IGNORE_INDEX
    manual = F.cross_entropy(logits[valid], targets[valid])  # mean over the 6 real targets only
    assert torch.allclose(loss, manual, atol=1e-6)
    # what the padded inputs hold cannot matter either: they come after every real position
    idx2 = idx.clone()
    idx2[0, 5] = (idx2[0, 5] + 1) % V
    idx2[1, 3:] = 0
    _, loss2 = model(idx2, targets)
    assert torch.allclose(loss, loss2, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# Causality and the two attention paths
# ---------------------------------------------------------------------------------------------


def _future_leak(model, t_change=5, T=8):
    """Max change of logits at positions < t_change when the token at t_change is changed."""
    model.eval()
    idx = random_ids(2, T, seed=7)
    changed = idx.clone()
    changed[:, t_change] = (changed[:, t_change] + 1) % V
    with torch.no_grad():
        a, _ = model(idx)[:2]
        b, _ = model(changed)[:2]
    past = (a[:, :t_change] - b[:, :t_change]).abs().max().item()
    present = (a[:, t_change:] - b[:, t_change:]).abs().max().item()
    return past, present


@pytest.mark.parametrize("use_sdpa", [True, False])
def test_gpt_is_causal(use_sdpa):
    past, present = _future_leak(GPT(GPTConfig(use_sdpa=use_sdpa)))
    assert past == 0.0
    assert present > 0.0


@pytest.mark.parametrize("use_sdpa", [True, False])
def test_gpt_without_causal_mask_leaks_the_future(use_sdpa):
    past, _ = _future_leak(GPT(GPTConfig(causal=False, use_sdpa=use_sdpa)))
    assert past > 1e-6


def test_single_head_is_causal_and_leaks_without_mask():
    past, present = _future_leak(SingleHeadLM(V))
    assert past == 0.0 and present > 0.0
    past, _ = _future_leak(SingleHeadLM(V, causal=False))
    assert past > 1e-7


def test_sdpa_and_explicit_paths_agree_in_eval():
    model = GPT(GPTConfig(dropout=0.1)).eval()
    idx = random_ids(4, 12)
    with torch.no_grad():
        set_sdpa(model, True)
        fast, _ = model(idx)
        set_sdpa(model, False)
        explicit, _ = model(idx)
    assert torch.allclose(fast, explicit, atol=1e-5)
    for causal in (False,):
        model = GPT(GPTConfig(causal=causal)).eval()
        with torch.no_grad():
            set_sdpa(model, True)
            fast, _ = model(idx)
            set_sdpa(model, False)
            explicit, _ = model(idx)
        assert torch.allclose(fast, explicit, atol=1e-5)


def test_return_attn_gives_causal_rows_that_sum_to_one():
    config = GPTConfig()
    model = GPT(config).eval()
    idx = random_ids(2, 7)
    logits, loss, attn_list = model(idx, return_attn=True)
    assert loss is None and len(attn_list) == config.n_layer
    plain_logits, _ = model(idx)
    assert torch.allclose(logits, plain_logits, atol=1e-5)
    for attn in attn_list:
        assert attn.shape == (2, config.n_head, 7, 7)
        assert torch.allclose(attn.sum(-1), torch.ones(2, config.n_head, 7), atol=1e-6)
        assert torch.all(attn.triu(diagonal=1) == 0)  # nothing from the future
        past = torch.ones(7, 7, dtype=torch.bool).tril()
        assert torch.all(attn[..., past] > 0)  # every past position (and itself) gets some weight


def test_mask_is_by_position_not_by_zero_scores():
    # A zero query makes every score exactly 0. Masking "scores == 0" (the slides' bug) would hide
    # everything and give NaN; masking by position gives uniform weights over the past.
    head = SelfAttentionHead(n_embd=4, head_size=4, block_size=5)
    with torch.no_grad():
        head.query.weight.zero_()
    _, attn = head(torch.randn(1, 5, 4, generator=torch.Generator().manual_seed(0)))
    expected = torch.tril(torch.ones(5, 5)) / torch.arange(1, 6).unsqueeze(1)
    assert torch.allclose(attn[0], expected, atol=1e-6)


def test_single_head_without_positions_cannot_see_order():
    # Without a position embedding, attention over the past is a weighted *set*: swapping two earlier
    # tokens leaves the prediction at a later position unchanged. With positions it changes.
    idx = torch.tensor([[1, 2, 3, 4]])
    swapped = torch.tensor([[2, 1, 3, 4]])
    for use_position in (False, True):
        model = SingleHeadLM(V, use_position=use_position, seed=3).eval()
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(15.0)  # weights of a trained size, so that differences are far above rounding
            a = model(idx)[0][0, -1]
            b = model(swapped)[0][0, -1]
        relative_change = ((a - b).abs().max() / a.abs().max()).item()
        if use_position:
            assert relative_change > 0.01
        else:
            assert relative_change < 1e-5


# ---------------------------------------------------------------------------------------------
# Reproducibility without the global RNG
# ---------------------------------------------------------------------------------------------


def test_building_a_model_never_touches_the_global_rng():
    torch.manual_seed(123)
    state = torch.get_rng_state()
    GPT(GPTConfig())
    SingleHeadLM(V)
    BigramLM(V)
    assert torch.equal(state, torch.get_rng_state())


def test_init_is_a_function_of_the_seed_only():
    torch.manual_seed(1)
    a = GPT(GPTConfig(), seed=5)
    torch.manual_seed(2)
    b = GPT(GPTConfig(), seed=5)
    c = GPT(GPTConfig(), seed=6)
    for (name, pa), pb, pc in zip(a.state_dict().items(), b.state_dict().values(), c.state_dict().values()):
        assert torch.equal(pa, pb), name
    assert not torch.equal(a.token_embedding.weight, c.token_embedding.weight)
    # residual projections get the smaller GPT-2 init
    std_out = a.layers[0].self_attention.out.weight.std().item()
    std_q = a.layers[0].self_attention.query.weight.std().item()
    assert std_out < std_q * 0.6


def test_dropout_masks_come_from_the_model_generator():
    idx = random_ids(4, 12)
    outputs = []
    for global_seed in (0, 999):
        torch.manual_seed(global_seed)  # must not matter
        model = GPT(GPTConfig(dropout=0.3)).train()
        model.set_dropout_generator(torch.Generator().manual_seed(42))
        outputs.append(model(idx)[0])
    assert torch.equal(outputs[0], outputs[1])
    model.set_dropout_generator(torch.Generator().manual_seed(43))
    assert not torch.allclose(model(idx)[0], outputs[0])
    model.eval()
    assert not torch.allclose(model(idx)[0], outputs[0])  # eval: no dropout


def test_dropout_in_training_is_unbiased_and_drops_the_right_share():
    from core.models import SeededDropout

    drop = SeededDropout(0.25).train()
    drop.generator = torch.Generator().manual_seed(0)
    out = drop(torch.ones(200_000))
    assert abs((out == 0).float().mean().item() - 0.25) < 0.01
    assert abs(out.mean().item() - 1.0) < 0.01
    assert torch.equal(drop.eval()(torch.ones(3)), torch.ones(3))


# ---------------------------------------------------------------------------------------------
# Generation
# ---------------------------------------------------------------------------------------------


def test_generate_crops_context_and_is_reproducible():
    model = GPT(GPTConfig(context_size=4))
    start = torch.zeros(2, 1, dtype=torch.long)
    out1 = generate(model, start, 10, generator=torch.Generator().manual_seed(1))
    out2 = generate(model, start, 10, generator=torch.Generator().manual_seed(1))
    assert out1.shape == (2, 11)  # longer than the context of 4: cropping works
    assert torch.equal(out1, out2)
    assert model.training  # restored


def test_generate_top_k_one_is_greedy_and_temperature_must_be_positive():
    model = GPT(GPTConfig(), seed=2)
    start = torch.zeros(1, 1, dtype=torch.long)
    out = generate(model, start, 3, top_k=1, generator=torch.Generator().manual_seed(0))
    idx = start
    model.eval()
    for _ in range(3):
        next_id = model(idx)[0][:, -1].argmax(-1, keepdim=True)
        idx = torch.cat((idx, next_id), dim=1)
    assert torch.equal(out, idx)
    for bad in (0, 0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="temperature"):
            generate(model, start, 1, temperature=bad)
    with pytest.raises(ValueError, match="top_k"):
        generate(model, start, 1, top_k=0)


# ---------------------------------------------------------------------------------------------
# Devices
# ---------------------------------------------------------------------------------------------


def test_available_devices_explain_themselves():
    devices = available_devices()
    assert set(devices) == {"cpu", "cuda", "mps"}
    assert devices["cpu"][0] is True
    for ok, reason in devices.values():
        assert isinstance(ok, bool) and isinstance(reason, str) and reason


@pytest.mark.parametrize("name", ["cuda", "mps"])
def test_absent_accelerator_falls_back_with_a_true_message(name):
    available, reason = available_devices()[name]
    device, message = resolve_device(name)
    if available:
        assert device.type == name and message is None
    else:
        assert device == resolve_device("auto")[0]  # what this machine really offers
        assert name.upper() in message and reason in message


@pytest.mark.parametrize("cuda", [False, True])
@pytest.mark.parametrize("mps", [False, True])
@pytest.mark.parametrize("requested", ["auto", "cpu", "cuda", "mps"])
def test_device_messages_are_true_on_every_combination(monkeypatch, cuda, mps, requested):
    """Whatever is present, the device used is present, and any message names the device used."""
    import core.device as device_module

    monkeypatch.setattr(device_module, "_cuda_status", lambda: (cuda, "CUDA GPU: X" if cuda else "no CUDA GPU found by torch"))
    monkeypatch.setattr(device_module, "_mps_status", lambda: (mps, "Apple GPU (MPS)" if mps else "torch build has no MPS (Apple GPU) support"))
    present = {"cpu": True, "cuda": cuda, "mps": mps}
    device, message = device_module.resolve_device(requested)
    assert present[device.type]
    if requested in ("auto", "cpu") or present[requested]:
        assert message is None
        expected = requested if requested != "auto" else ("cuda" if cuda else "mps" if mps else "cpu")
        assert device.type == expected
    else:
        assert message.startswith(f"{requested.upper()} was requested but is not available")
        assert f"using {device_module.DEVICE_TITLES[device.type]} instead" in message
        for other, title in device_module.DEVICE_TITLES.items():
            if other != device.type:
                assert f"using {title}" not in message


def test_fallback_message_when_torch_reports_no_gpu(monkeypatch):
    import core.device as device_module

    monkeypatch.setattr(device_module, "_cuda_status", lambda: (False, "no CUDA GPU found by torch"))
    monkeypatch.setattr(device_module, "_mps_status", lambda: (False, "torch build has no MPS (Apple GPU) support"))
    assert device_module.resolve_device("auto") == (torch.device("cpu"), None)
    device, message = device_module.resolve_device("cuda")
    assert device == torch.device("cpu") and "no CUDA GPU found by torch" in message
    device, message = device_module.resolve_device("mps")
    assert device == torch.device("cpu") and "no MPS" in message


def test_resolve_device_auto_cpu_and_unknown():
    device, message = resolve_device("auto")
    expected = next((n for n in ("cuda", "mps") if available_devices()[n][0]), "cpu")
    assert device.type == expected and message is None
    assert resolve_device("CPU") == (torch.device("cpu"), None)
    for bad in ("tpu", "cpu:1", "", "cuda:x"):
        with pytest.raises(ValueError, match="unknown device"):
            resolve_device(bad)


def test_building_models_and_an_untrained_race_does_not_load_torch_dynamo():
    """PyTorch's meta-device normal_ and triu import torch._dynamo (and sympy): ~70 MiB a server keeps
    for good. Building every rung of the ladder, the tokens lesson's tables and the Small LM race
    (untrained: its optimizers wait for the first step) must not; training may."""
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import sys\n"
        "from core.models import GPT, GPTConfig, BigramLM, SingleHeadLM\n"
        "from core.lessons.tokens_data import seeded_embedding\n"
        "from core.lessons import small_lm\n"
        "GPT(GPTConfig(vocab_size=27)); BigramLM(27); SingleHeadLM(27); seeded_embedding(50, 8, 1)\n"
        "race = small_lm.SmallLMRace('hello world, hello attention. ' * 20)\n"
        "assert 'torch._dynamo' not in sys.modules, 'loaded before training'\n"
        "race.train_step()\n"
        "print('trained', race.step)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "trained 1" in result.stdout
