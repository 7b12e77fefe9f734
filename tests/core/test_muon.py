"""core.training.muon: the Newton-Schulz orthogonalisation, the Muon update against torch.optim.Muon, the
split of the names GPT's parameters between Muon and AdamW, and a Muon run saved and resumed."""

from dataclasses import replace

import pytest
import torch

from core.data import build_names_data
from core.training import Trainer
from core.training.config import TrainConfig
from core.training.muon import MuonAdamW, hidden_matrices, muon_lr_scale, orthogonalise
from core.training.trainer import make_optimizer
from core.models import GPT, GPTConfig


@pytest.mark.parametrize("shape", [(8, 32), (32, 8), (16, 16)])
def test_orthogonalise_brings_every_singular_value_near_one(shape):
    g = torch.Generator().manual_seed(0)
    r = min(shape)
    left, _ = torch.linalg.qr(torch.randn(shape[0], r, generator=g))
    right, _ = torch.linalg.qr(torch.randn(shape[1], r, generator=g))
    grad = (left @ torch.diag(torch.logspace(-1, 1, r)) @ right.T)[None]  # singular values 0.1 ... 10
    before = torch.linalg.svdvals(grad[0])
    after = torch.linalg.svdvals(orthogonalise(grad)[0])
    assert before.max() / before.min() > 50  # a badly conditioned update...
    assert after.min() > 0.6 and after.max() < 1.25  # ...whose directions now all move about alike


def test_orthogonalise_batched_equals_one_matrix_at_a_time_and_respects_transposes():
    g = torch.Generator().manual_seed(1)
    batch = torch.randn(3, 8, 24, generator=g)
    together = orthogonalise(batch)
    for i in range(3):
        torch.testing.assert_close(together[i], orthogonalise(batch[i:i + 1])[0], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(orthogonalise(batch.mT), together.mT, rtol=1e-5, atol=1e-6)


def test_orthogonalise_matches_pytorchs_newton_schulz():
    from torch.optim._muon import _zeropower_via_newtonschulz  # PyTorch's own, in bfloat16
    g = torch.Generator().manual_seed(2)
    for shape in [(16, 48), (48, 16)]:
        grad = torch.randn(*shape, generator=g)
        ours = orthogonalise(grad[None])[0]
        theirs = _zeropower_via_newtonschulz(grad, (3.4445, -4.775, 2.0315), 5, 1e-7).float()
        assert (ours - theirs).norm() / theirs.norm() < 0.02  # bfloat16 keeps ~3 significant digits


def _muon_pair(weight_decay=0.1, lr=0.02):
    """The same three matrices in our optimizer and in torch.optim.Muon."""
    g = torch.Generator().manual_seed(3)
    start = [torch.randn(16, 16, generator=g), torch.randn(64, 16, generator=g), torch.randn(16, 64, generator=g)]
    ours = [torch.nn.Parameter(t.clone()) for t in start]
    theirs = [torch.nn.Parameter(t.clone()) for t in start]
    opt_ours = MuonAdamW(ours, [], lr=lr, weight_decay=weight_decay)
    opt_theirs = torch.optim.Muon(theirs, lr=lr, weight_decay=weight_decay, momentum=0.95, nesterov=True,
                                  adjust_lr_fn="match_rms_adamw")
    return start, ours, theirs, opt_ours, opt_theirs


def test_three_muon_steps_equal_torch_optim_muon():
    start, ours, theirs, opt_ours, opt_theirs = _muon_pair()
    g = torch.Generator().manual_seed(4)
    for _ in range(3):
        grads = [torch.randn(t.shape, generator=g) for t in start]
        for p, q, grad in zip(ours, theirs, grads):
            p.grad, q.grad = grad.clone(), grad.clone()
        opt_ours.step()
        opt_theirs.step()
    for s, p, q in zip(start, ours, theirs):
        moved_ours, moved_theirs = p.detach() - s, q.detach() - s
        assert moved_theirs.norm() > 0.1
        # the same step up to PyTorch's bfloat16 orthogonalisation (a wrong scale, momentum or decay is >5% off)
        assert (moved_ours - moved_theirs).norm() / moved_theirs.norm() < 0.02


def test_the_step_size_is_the_rms_of_an_adamw_step():
    assert muon_lr_scale(torch.Size([64, 256])) == pytest.approx(0.2 * 16)
    assert muon_lr_scale(torch.Size([256, 64])) == muon_lr_scale(torch.Size([64, 256]))


def _gpt():
    return GPT(GPTConfig(vocab_size=27, context_size=8, n_layer=2, n_head=2, d_embed=16, d_ff=32, dropout=0.0))


def test_make_optimizer_gives_the_blocks_matrices_to_muon_and_everything_else_to_adamw():
    model = _gpt()
    optimizer = make_optimizer(model, TrainConfig(optimizer="muon", lr=0.01, weight_decay=0.05))
    assert isinstance(optimizer, MuonAdamW)
    muon = [p for g in optimizer.param_groups if g["muon"] for p in g["params"]]
    adamw = [p for g in optimizer.param_groups if not g["muon"] for p in g["params"]]
    names = {id(p): n for n, p in model.named_parameters()}
    assert sorted(names[id(p)] for p in muon) == sorted(
        n for n, p in model.named_parameters() if p.dim() == 2 and n.startswith("layers."))
    assert {"token_embedding.weight", "lm_head.weight"} <= {names[id(p)] for p in adamw}
    assert sorted(map(id, muon + adamw)) == sorted(map(id, model.parameters()))  # each exactly once
    assert all(g["lr"] == 0.01 for g in optimizer.param_groups)
    assert [g["weight_decay"] for g in optimizer.param_groups] == [0.05, 0.0, 0.05]  # none on biases/gains
    assert len(hidden_matrices(model)) == len(muon) == 2 * 6  # q, k, v, out, fc1, fc2 per block


def test_a_schedule_setting_every_groups_lr_drives_both_halves():
    start, ours, _, optimizer, _ = _muon_pair(weight_decay=0.0)
    for group in optimizer.param_groups:
        group["lr"] = 0.0
    for p in ours:
        p.grad = torch.ones_like(p)
    optimizer.step()
    assert all(torch.equal(p.detach(), s) for p, s in zip(ours, start))


@pytest.fixture(scope="module")
def names_data():
    return build_names_data(context_size=8)


def _config(**changes):
    return replace(TrainConfig(model=GPTConfig(context_size=8, n_layer=2, n_head=2, d_embed=32, d_ff=64, dropout=0.0),
                               optimizer="muon", lr=1e-2, batch_size=16, pack_length=16, max_steps=60,
                               val_interval=1000, val_batches=4, seed=5, device="cpu"), **changes)


def test_a_muon_run_saved_and_resumed_equals_one_run(names_data):
    whole = Trainer(_config(), names_data)
    whole.train(n_steps=60)
    first = Trainer(_config(), names_data)
    first.train(n_steps=25)
    resumed = Trainer.from_state_dict(first.state_dict(), names_data)
    assert isinstance(resumed.optimizer, MuonAdamW)
    resumed.train(n_steps=35)
    for (name, a), b in zip(whole.model.state_dict().items(), resumed.model.state_dict().values()):
        torch.testing.assert_close(a, b, msg=name)


def test_muon_is_ahead_of_adamw_after_the_same_steps(names_data):
    losses = {}
    for optimizer in ("adamw", "muon"):
        trainer = Trainer(_config(optimizer=optimizer, max_steps=150, val_batches=None), names_data)
        trainer.train()
        losses[optimizer] = trainer.evaluate("val")
    assert losses["muon"] < losses["adamw"] - 0.02, losses


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_muon_run_on_a_gpu_trains_eagerly_and_learns(names_data):
    trainer = Trainer(_config(device="cuda", max_steps=80, val_batches=None), names_data)
    assert trainer.cuda is not None and not trainer.cuda.use_graph  # Muon reads its lr on the host
    start = trainer.evaluate("val")
    trainer.train()
    assert trainer.evaluate("val") < start - 0.3


def test_the_cpu_presets_train_with_muon_and_the_gpu_versions_as_measured():
    from core.training import PRESETS
    from core.training.presets import GPU_PRESETS
    # docs/PRESETS.md, 2026-11-28: Muon needs about a third of AdamW's steps for the quick demo's loss
    assert {name: PRESETS[name]().optimizer for name in ("quick_demo", "better", "best")} == dict.fromkeys(
        ("quick_demo", "better", "best"), "muon")
    assert PRESETS["lecture"]().optimizer == "sgd"  # the lecture's own values
    # the GPU versions were measured with AdamW (and best's with its decay and schedule of then)
    quick_gpu, best_gpu = GPU_PRESETS["quick_demo"](), GPU_PRESETS["best"]()
    assert (quick_gpu.optimizer, quick_gpu.batch_size, quick_gpu.lr, quick_gpu.max_steps) == ("adamw", 480, 1.2e-2, 700)
    assert (best_gpu.optimizer, best_gpu.batch_size, best_gpu.lr, best_gpu.weight_decay, best_gpu.min_lr_ratio,
            best_gpu.max_steps) == ("adamw", 240, 1.5e-2, 0.1, 0.05, 1200)
    assert best_gpu.model == GPTConfig(context_size=12, n_layer=4, n_head=4, d_embed=96, d_ff=384, dropout=0.1)
