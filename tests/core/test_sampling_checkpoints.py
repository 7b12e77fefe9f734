"""Tests of core.sampling (names, labels, next-character distributions) and core.checkpoints (safe I/O)."""

import io
import os
import pickle

import pytest
import torch

from core.checkpoints import FORMAT_TAG, CheckpointError, Checkpoint, load_checkpoint, save_checkpoint
from core.data import build_names_data
from core.training import Trainer, TrainConfig
from core.models import GPT, GPTConfig, SingleHeadLM
from core.sampling import SampledName, label_shares, next_char_distributions, sample_names
from core.tokenizers import CharTokenizer

NAMES = ["anna", "bella", "carla", "dora", "emma", "fiona", "gina", "hanna", "ida", "julia", "kira", "lena"]


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def memorised():
    """A GPT that has memorised a dozen names: its samples are mostly training names."""
    torch.set_num_threads(1)
    data = build_names_data(names=NAMES, val_size=0.25, seed=3)
    config = TrainConfig(
        model=GPTConfig(n_layer=2, n_head=2, d_embed=32, d_ff=64, dropout=0.0),
        lr=1e-2,
        batch_size=16,
        max_steps=250,
        val_interval=250,
        device="cpu",
        seed=1,
    )
    trainer = Trainer(config, data)
    trainer.train()
    return trainer, data


# ---------------------------------------------------------------------------------------------
# Sampling
# ---------------------------------------------------------------------------------------------


def test_samples_are_labelled_against_the_splits(memorised):
    trainer, data = memorised
    samples = sample_names(
        trainer.model, data.tokenizer, 60, seed=0, train_names=data.train_names, val_names=data.val_names
    )
    assert len(samples) == 60 and all(isinstance(s, SampledName) for s in samples)
    for sample in samples:
        expected = ("empty" if not sample.name else "train" if sample.name in data.train_names
                    else "val" if sample.name in data.val_names else "new")
        assert sample.label == expected
        assert "." not in sample.name
    shares = label_shares(samples)
    assert shares["train"] > 0.5  # it memorised them
    assert sum(shares.values()) == pytest.approx(1.0)
    # the same names, checked against other lists, get other labels
    relabelled = sample_names(trainer.model, data.tokenizer, 60, seed=0, val_names=NAMES)
    assert [s.name for s in relabelled] == [s.name for s in samples]
    assert {s.label for s in relabelled if s.name in NAMES} == {"val"}


def test_label_shares_of_nothing_and_of_a_mix():
    assert label_shares([]) == {"new": 0.0, "train": 0.0, "val": 0.0, "empty": 0.0}
    mix = [SampledName("a", "new"), SampledName("b", "train"), SampledName("c", "train"), SampledName("d", "val")]
    assert label_shares(mix) == {"new": 0.25, "train": 0.5, "val": 0.25, "empty": 0.0}


def test_a_draw_that_ends_at_once_is_empty_not_new(memorised):
    # the model wrote "." first: no name, which the page counted as an invented one ("(empty)",
    # "new", in the share of new names)
    _, data = memorised
    model = GPT(GPTConfig(vocab_size=data.tokenizer.vocab_size, n_layer=1, n_head=1, d_embed=8, d_ff=16,
                          bias=True))
    with torch.no_grad():  # "." is the only character this model writes
        model.lm_head.bias.fill_(-1e4)
        model.lm_head.bias[data.tokenizer.stoi["."]] = 1e4
    samples = sample_names(model, data.tokenizer, 5, seed=0, train_names=data.train_names)
    assert [(s.name, s.label) for s in samples] == [("", "empty")] * 5
    assert label_shares(samples)["new"] == 0.0 and label_shares(samples)["empty"] == 1.0


def test_sampling_is_reproducible_and_honours_the_prefix(memorised):
    trainer, data = memorised
    a = sample_names(trainer.model, data.tokenizer, 20, seed=5, temperature=1.5)
    b = sample_names(trainer.model, data.tokenizer, 20, seed=5, temperature=1.5)
    c = sample_names(trainer.model, data.tokenizer, 20, seed=6, temperature=1.5)
    assert a == b
    assert a != c
    prefixed = sample_names(trainer.model, data.tokenizer, 20, prefix="jul", seed=1)
    assert all(s.name.startswith("jul") for s in prefixed)
    assert trainer.model.training  # sampling restores the mode


def test_sampling_does_not_touch_the_global_rng(memorised):
    trainer, data = memorised
    torch.manual_seed(0)
    state = torch.get_rng_state()
    sample_names(trainer.model, data.tokenizer, 5, seed=1)
    assert torch.equal(state, torch.get_rng_state())


def test_max_len_caps_the_name_length():
    model = GPT(GPTConfig())  # untrained: rarely writes "." early
    tokenizer = CharTokenizer.from_text("abcdefghijklmnopqrstuvwxyz")
    samples = sample_names(model, tokenizer, 10, max_len=4, prefix="ab", seed=0)
    assert all(len(s.name) <= 4 and s.name.startswith("ab") for s in samples)
    assert any(len(s.name) == 4 for s in samples)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"temperature": 0}, "temperature"),
        ({"temperature": -0.5}, "temperature"),
        ({"prefix": "a1"}, "does not know"),
        ({"prefix": "a.b"}, "must not contain"),
        ({"n": -1}, "n must be"),
        ({"max_len": 0}, "max_len"),
        ({"prefix": "abcdef", "max_len": 3}, "longer than max_len"),
        ({"top_k": 0}, "top_k"),
    ],
)
def test_sampling_arguments_are_validated(memorised, kwargs, message):
    trainer, data = memorised
    args = {"n": 3, **kwargs}
    with pytest.raises(ValueError, match=message):
        sample_names(trainer.model, data.tokenizer, **args)


def test_sample_names_works_for_the_other_models():
    tokenizer = CharTokenizer.from_text("abc")
    samples = sample_names(SingleHeadLM(tokenizer.vocab_size, block_size=4), tokenizer, 5, seed=0, max_len=10)
    assert len(samples) == 5 and all(set(s.name) <= set("abc") for s in samples)


def test_next_char_distributions(memorised):
    trainer, data = memorised
    probs = next_char_distributions(trainer.model, data.tokenizer, "emma")
    assert probs.shape == (5, data.tokenizer.vocab_size)
    assert torch.allclose(probs.sum(-1), torch.ones(5), atol=1e-5)
    ids = torch.tensor([data.tokenizer.encode(".emma")])
    trainer.model.eval()
    with torch.no_grad():
        expected = torch.softmax(trainer.model(ids)[0][0], dim=-1)
    trainer.model.train()
    assert torch.allclose(probs, expected, atol=1e-6)
    # a memorised name: after ".emm" the model is confident about "a", and then about the end "."
    stoi = {c: i for i, c in enumerate(data.tokenizer.vocab)}
    assert probs[3, stoi["a"]] > 0.5 and probs[4, stoi["."]] > 0.5
    with pytest.raises(ValueError):
        next_char_distributions(trainer.model, data.tokenizer, "em.ma")


def test_next_char_distributions_slide_past_the_context():
    model = GPT(GPTConfig(context_size=4)).eval()
    tokenizer = CharTokenizer.from_text("abcdefghijklmnopqrstuvwxyz")
    name = "abcdefgh"
    probs = next_char_distributions(model, tokenizer, name)
    assert probs.shape == (9, 27)
    ids = tokenizer.encode("." + name)
    with torch.no_grad():
        last = torch.softmax(model(torch.tensor([ids[-4:]]))[0][0, -1], dim=-1)
    assert torch.allclose(probs[-1], last, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# Checkpoints
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def saved(memorised):
    trainer, data = memorised
    return save_checkpoint(trainer.model, trainer.config, data.tokenizer, trainer.history)


def _payload(data: bytes) -> dict:
    return torch.load(io.BytesIO(data), weights_only=True)


def _bytes(payload) -> bytes:
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    return buffer.getvalue()


def test_checkpoint_round_trip_gives_identical_logits_and_samples(memorised, saved):
    trainer, data = memorised
    checkpoint = load_checkpoint(saved)
    assert isinstance(checkpoint, Checkpoint)
    assert checkpoint.config == trainer.config and checkpoint.model_config == trainer.model.config
    assert checkpoint.tokenizer == data.tokenizer
    assert checkpoint.history == trainer.history
    assert not checkpoint.model.training
    idx = torch.tensor([data.tokenizer.encode(".emma"), data.tokenizer.encode(".kira")])
    trainer.model.eval()
    with torch.no_grad():
        assert torch.equal(checkpoint.model(idx)[0], trainer.model(idx)[0])
    trainer.model.train()
    kwargs = dict(seed=11, temperature=0.9, train_names=data.train_names, val_names=data.val_names)
    assert sample_names(checkpoint.model, checkpoint.tokenizer, 15, **kwargs) == sample_names(
        trainer.model, data.tokenizer, 15, **kwargs
    )


def test_weights_step_is_saved_and_older_files_without_it_read_as_none(memorised, saved):
    trainer, data = memorised
    assert load_checkpoint(saved).weights_step is None
    kept = save_checkpoint(trainer.model, trainer.config, data.tokenizer, trainer.history, weights_step=40)
    assert load_checkpoint(kept).weights_step == 40
    older = _payload(saved)
    del older["weights_step"]  # a file written before restore_best existed
    assert load_checkpoint(_bytes(older)).weights_step is None


def test_checkpoint_of_a_bare_gpt_config():
    model = GPT(GPTConfig(n_layer=1))
    tokenizer = CharTokenizer.from_text("abcdefghijklmnopqrstuvwxyz")
    checkpoint = load_checkpoint(save_checkpoint(model, model.config, tokenizer, {"note": ("a", 1)}))
    assert checkpoint.config == model.config
    assert checkpoint.history == {"note": ["a", 1]}


def test_save_refuses_what_cannot_be_loaded_back():
    model = GPT(GPTConfig(n_layer=1))
    tokenizer = CharTokenizer.from_text("abcdefghijklmnopqrstuvwxyz")
    with pytest.raises(CheckpointError, match="tokenizer"):
        save_checkpoint(model, model.config, CharTokenizer.from_text("abc"), {})
    with pytest.raises(CheckpointError, match="only numbers"):
        save_checkpoint(model, model.config, tokenizer, {"bad": object()})
    with pytest.raises(CheckpointError, match="only GPT"):
        save_checkpoint(SingleHeadLM(27), model.config, tokenizer, {})
    with pytest.raises(CheckpointError, match="architecture"):
        save_checkpoint(model, GPTConfig(n_layer=2), tokenizer, {})


@pytest.mark.parametrize(
    "mangle, message",
    [
        (lambda b: b"hello, not a checkpoint", "not a PyTorch checkpoint"),
        (lambda b: b"", "not a PyTorch checkpoint"),
        (lambda b: b[: len(b) // 2], "corrupt or truncated"),
        (lambda b: b[:-30], "corrupt or truncated"),
        (lambda b: b[:100] + bytes(500) + b[600:], "corrupt"),
    ],
)
def test_tampered_bytes_are_refused(saved, mangle, message):
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(mangle(saved))


def test_every_single_byte_flip_in_the_weights_is_caught_or_harmless(saved):
    # Flipping bytes inside the pickled dict/records must never crash with anything but CheckpointError.
    for offset in range(0, len(saved), max(1, len(saved) // 40)):
        corrupted = bytearray(saved)
        corrupted[offset] ^= 0xFF
        try:
            load_checkpoint(bytes(corrupted))
        except CheckpointError:
            pass


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_pickle_with_code_is_refused_and_never_runs(tmp_path, saved):
    marker = tmp_path / "pwned"
    payload = _payload(saved)
    payload["history"] = {"x": _Evil(marker)}
    evil = _bytes(payload)  # a well-formed torch.save file whose pickle calls os.system
    with pytest.raises(CheckpointError, match="refused for safety") as error:
        load_checkpoint(evil)
    assert "weights_only" not in str(error.value)  # no advice to turn the protection off
    assert not marker.exists()
    # a bare pickle (no torch zip) is refused as well, before anything reads it
    with pytest.raises(CheckpointError):
        load_checkpoint(pickle.dumps(_Evil(marker)))
    assert not marker.exists()
    # sanity check of the test itself: unpickling it for real WOULD create the marker
    pickle.loads(pickle.dumps(_Evil(marker)))
    assert marker.exists()


def test_oversized_files_are_refused(saved):
    with pytest.raises(CheckpointError, match="MB allowed"):
        load_checkpoint(saved, max_bytes=len(saved) - 1)
    assert load_checkpoint(saved, max_bytes=len(saved)).model is not None


def test_compressed_archive_is_refused(saved):
    import zipfile

    source = zipfile.ZipFile(io.BytesIO(saved))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            target.writestr(info.filename, source.read(info.filename))
    with pytest.raises(CheckpointError, match="compressed"):
        load_checkpoint(buffer.getvalue())


def _edited(saved: bytes, edit) -> bytes:
    payload = _payload(saved)
    edit(payload)
    return _bytes(payload)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda p: p.update(format="someone-else/v1"), "not an Attention Lab checkpoint"),
        (lambda p: p.update(version=99), "version 99"),
        (lambda p: p.pop("vocab"), "missing: vocab"),
        (lambda p: p["model_config"].update(n_head=5), "model config is invalid"),
        (lambda p: p["model_config"].update(wings=2), "model config is invalid"),
        (lambda p: p["train_config"].update(lr=-1), "training config is invalid"),
        (lambda p: p.update(vocab=p["vocab"][:-1]), "vocabulary mismatch"),
        (lambda p: p.update(vocab=p["vocab"][::-1]), "vocabulary is invalid"),
        (lambda p: p["state_dict"].update({"token_embedding.weight": torch.zeros(5, 32)}), "vocabulary mismatch"),
        (lambda p: p["state_dict"].update({"layers.0.feed_forward.fc1.weight": torch.zeros(32, 64)}), "has shape"),
        (lambda p: p["state_dict"].update({"extra.weight": torch.zeros(0)}), "unexpected weights"),
        (lambda p: p["state_dict"].pop("lm_head.bias"), "do not fit the config"),
        (lambda p: p["state_dict"]["lm_head.weight"].__setitem__((0, 0), float("nan")), "NaN or infinite"),
        (lambda p: p["state_dict"]["final_norm.weight"].__setitem__(0, float("inf")), "NaN or infinite"),
        (lambda p: p.update(state_dict=[1, 2]), "no weights|not all named tensors"),
        (lambda p: p.update(weights_step="best"), "weights_step is not a step number"),
        (lambda p: p.update(weights_step=-3), "weights_step is not a step number"),
    ],
)
def test_inconsistent_checkpoints_are_refused(saved, edit, message):
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(_edited(saved, edit))


def test_a_huge_config_is_refused_before_building_the_model(saved):
    def edit(payload):
        payload["model_config"].update(d_embed=4096, d_ff=16384, n_layer=48)

    with pytest.raises(CheckpointError, match="do not fit the config"):
        load_checkpoint(_edited(saved, edit))


def test_format_tag_is_in_the_file(saved):
    payload = _payload(saved)
    assert payload["format"] == FORMAT_TAG and payload["version"] == 1
    assert isinstance(payload["vocab"], list) and isinstance(payload["history"], dict)
