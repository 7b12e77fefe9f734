"""Saving a trained names GPT to bytes (a download) and loading one back (an upload), safely.

A checkpoint is one dict of tensors and plain values (str, int, float, bool, None, lists, dicts),
written with `torch.save`:

    {"format": FORMAT_TAG, "version": FORMAT_VERSION,
     "model_config": {...GPTConfig...}, "train_config": {...TrainConfig without model...} or None,
     "vocab": ["." , "a", ...], "state_dict": {name: tensor}, "history": {...},
     "weights_step": int or None}   # optional: the step the weights come from when not the last one

`weights_step` is set when a run with TrainConfig.restore_best ended on the weights of its best
validation point; older files have no such key and read as None.

An uploaded file is untrusted. A pickle can run any code while it is being read, so `load_checkpoint`
reads ONLY with `torch.load(..., weights_only=True)`, whose restricted unpickler refuses anything but
tensors and plain containers. Before that it checks the size and the zip structure (no compression, so
no zip bomb), and after it checks everything a model needs: format tag and version, config, vocabulary,
parameter shapes, finite weights. Every refusal is a `CheckpointError` (a ValueError) whose message can be
shown to the user as is.
"""

from __future__ import annotations

import io
import pickle
import zipfile
from dataclasses import dataclass

import torch

from core.training import TrainConfig
from core.models import GPT, GPTConfig
from core.tokenizers import CharTokenizer

FORMAT_TAG = "attention-lab/names-gpt-checkpoint"  # identifies our files
FORMAT_VERSION = 1  # bump when the layout changes; newer files are refused by older code
MAX_BYTES = 50_000_000  # default upload limit
REQUIRED_KEYS = ("format", "version", "model_config", "train_config", "vocab", "state_dict", "history")


class CheckpointError(ValueError):
    """A checkpoint cannot be saved or loaded; the message says why in plain words."""


@dataclass
class Checkpoint:
    """A loaded checkpoint."""

    model: GPT  # on the CPU, in eval mode
    config: GPTConfig | TrainConfig  # what was saved: the training config if there was one
    tokenizer: CharTokenizer  # the vocabulary the model was trained with
    history: dict  # loss history as saved (plain lists)
    model_config: GPTConfig  # always the architecture (config.model for a TrainConfig)
    weights_step: int | None = None  # the step the weights come from, when not the history's last (restore_best)


# ---------------------------------------------------------------------------------------------
# Saving
# ---------------------------------------------------------------------------------------------


def _plain(value, where: str = "history"):
    """A copy of `value` made of plain types only (tuples become lists); ValueError otherwise."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(item, f"{where}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise CheckpointError(f"{where} keys must be text, got {key!r}")
            out[key] = _plain(item, f"{where}[{key!r}]")
        return out
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return value.item()
    raise CheckpointError(f"{where} holds a {type(value).__name__}; only numbers, text, lists and dicts can be saved")


def save_checkpoint(model: GPT, config: GPTConfig | TrainConfig, tokenizer: CharTokenizer, history: dict,
                    weights_step: int | None = None) -> bytes:
    """The model, its config, vocabulary and history as the bytes of one torch.save file; `weights_step`:
    the step the weights come from when it is not the history's last (a run that kept its best weights)."""
    if not isinstance(model, GPT):
        raise CheckpointError(f"only GPT models can be saved, got {type(model).__name__}")
    if isinstance(config, TrainConfig):
        model_config, train_config = config.model, config
    elif isinstance(config, GPTConfig):
        model_config, train_config = config, None
    else:
        raise CheckpointError(f"config must be a GPTConfig or TrainConfig, got {type(config).__name__}")
    if model_config != model.config:
        raise CheckpointError("the config does not describe this model (its architecture differs)")
    if tokenizer.vocab_size != model.config.vocab_size:
        raise CheckpointError(
            f"the tokenizer has {tokenizer.vocab_size} characters but the model expects {model.config.vocab_size}"
        )
    state_dict = {name: t.detach().cpu().clone() for name, t in model.state_dict().items()}
    _check_finite(state_dict)
    train_dict = None
    if train_config is not None:
        train_dict = train_config.to_dict()
        del train_dict["model"]
    payload = {
        "format": FORMAT_TAG,
        "version": FORMAT_VERSION,
        "model_config": model_config.to_dict(),
        "train_config": train_dict,
        "vocab": tokenizer.to_list(),
        "state_dict": state_dict,
        "history": _plain(history or {}),
        "weights_step": None if weights_step is None else int(weights_step),
    }
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    return buffer.getvalue()


# ---------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------


def _check_finite(state_dict: dict[str, torch.Tensor]) -> None:
    for name, tensor in state_dict.items():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise CheckpointError(f"the weights contain NaN or infinite values (in {name})")


def _read_untrusted(data: bytes, max_bytes: int) -> object:
    """torch.load with weights_only=True, after size and zip-structure checks; clean errors only."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise CheckpointError(f"expected the file's bytes, got {type(data).__name__}")
    data = bytes(data)
    if len(data) > max_bytes:
        raise CheckpointError(
            f"the file is {len(data) / 1e6:.1f} MB, more than the {max_bytes / 1e6:.1f} MB allowed for a checkpoint"
        )
    if not data.startswith(b"PK\x03\x04"):
        raise CheckpointError("this is not a PyTorch checkpoint file (.pt saved with torch.save)")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, EOFError, ValueError, OSError):
        raise CheckpointError("the checkpoint file is corrupt or truncated (its archive cannot be read)") from None
    if any(entry.compress_type != zipfile.ZIP_STORED for entry in entries):
        raise CheckpointError("the checkpoint archive is compressed; torch.save files never are, so it is refused")
    if sum(entry.file_size for entry in entries) > max_bytes:
        raise CheckpointError("the checkpoint archive claims more content than the size limit; refused")

    try:
        return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        # weights_only refused an import (GLOBAL), a class or a call: the pickle wanted to run something.
        detail = str(exc).split("WeightsUnpickler error:")[-1].lower()  # skip torch's generic preamble
        if any(word in detail for word in ("global", "class", "reduce", "build", "allowlist")):
            raise CheckpointError(
                "the checkpoint contains Python objects or code, not just tensors and plain values; "
                "it was refused for safety and nothing in it was run"
            ) from None
        raise CheckpointError("the checkpoint file is corrupt (its data cannot be decoded)") from None
    except Exception:  # zip/record errors from torch's reader, EOF, bad storage sizes, ...
        raise CheckpointError("the checkpoint file is corrupt or truncated (torch cannot read it)") from None


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise CheckpointError(message)


def load_checkpoint(data: bytes, max_bytes: int = MAX_BYTES) -> Checkpoint:
    """Load bytes made by `save_checkpoint`; CheckpointError (with a clear message) if anything is off."""
    payload = _read_untrusted(data, max_bytes)

    _expect(isinstance(payload, dict), "this file is not an Attention Lab checkpoint (no dictionary inside)")
    _expect(
        payload.get("format") == FORMAT_TAG,
        f"this file is not an Attention Lab checkpoint (format tag {payload.get('format')!r})",
    )
    version = payload.get("version")
    _expect(isinstance(version, int) and not isinstance(version, bool), "the checkpoint has no valid version number")
    _expect(
        1 <= version <= FORMAT_VERSION,
        f"the checkpoint has format version {version}; this app reads versions up to {FORMAT_VERSION}",
    )
    missing = [key for key in REQUIRED_KEYS if key not in payload]
    _expect(not missing, f"the checkpoint is missing: {', '.join(missing)}")

    # Configs
    try:
        model_config = GPTConfig.from_dict(payload["model_config"])
    except (ValueError, TypeError) as exc:
        raise CheckpointError(f"the checkpoint's model config is invalid: {exc}") from None
    config: GPTConfig | TrainConfig = model_config
    if payload["train_config"] is not None:
        try:
            _expect(isinstance(payload["train_config"], dict), "training config is not a mapping")
            config = TrainConfig.from_dict({**payload["train_config"], "model": model_config})
        except (ValueError, TypeError) as exc:
            raise CheckpointError(f"the checkpoint's training config is invalid: {exc}") from None

    # Vocabulary
    vocab = payload["vocab"]
    _expect(isinstance(vocab, list), "the checkpoint's vocabulary is not a list of characters")
    try:
        tokenizer = CharTokenizer(vocab)
    except (ValueError, TypeError) as exc:
        raise CheckpointError(f"the checkpoint's vocabulary is invalid: {exc}") from None
    _expect(
        tokenizer.vocab_size == model_config.vocab_size,
        f"vocabulary mismatch: {tokenizer.vocab_size} characters, but the model config says {model_config.vocab_size}",
    )

    # Weights
    state_dict = payload["state_dict"]
    _expect(isinstance(state_dict, dict) and state_dict, "the checkpoint has no weights")
    _expect(
        all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state_dict.items()),
        "the checkpoint's weights are not all named tensors",
    )
    embedding = state_dict.get("token_embedding.weight")
    _expect(embedding is not None, "the checkpoint's weights have no token embedding")
    _expect(
        embedding.dim() == 2 and embedding.size(0) == tokenizer.vocab_size,
        f"vocabulary mismatch: {tokenizer.vocab_size} characters, but the embedding has "
        f"{embedding.size(0) if embedding.dim() else 0} rows",
    )
    # Count before building, so a config asking for a huge model cannot allocate it.
    stored = sum(t.numel() for t in state_dict.values())
    _expect(
        stored == model_config.num_params(),
        f"the weights ({stored:,} numbers) do not fit the config ({model_config.num_params():,} parameters)",
    )
    _expect(
        all(t.is_floating_point() for t in state_dict.values()),
        "the checkpoint's weights must be floating-point tensors",
    )
    _check_finite(state_dict)

    model = GPT(model_config)
    expected = model.state_dict()
    unexpected = sorted(set(state_dict) - set(expected))
    absent = sorted(set(expected) - set(state_dict))
    _expect(not unexpected and not absent, _key_message(absent, unexpected))
    for name, tensor in expected.items():
        _expect(
            state_dict[name].shape == tensor.shape,
            f"weight {name} has shape {tuple(state_dict[name].shape)}, the model needs {tuple(tensor.shape)}",
        )
    model.load_state_dict({k: v.to(expected[k].dtype) for k, v in state_dict.items()})
    model.eval()

    history = payload["history"]
    _expect(isinstance(history, dict), "the checkpoint's history is not a mapping")
    weights_step = payload.get("weights_step")
    _expect(weights_step is None or (isinstance(weights_step, int) and not isinstance(weights_step, bool)
                                     and weights_step >= 0),
            "the checkpoint's weights_step is not a step number")
    return Checkpoint(model=model, config=config, tokenizer=tokenizer, history=history, model_config=model_config,
                      weights_step=weights_step)


def _key_message(absent: list[str], unexpected: list[str]) -> str:
    parts = []
    if absent:
        parts.append(f"missing weights: {', '.join(absent[:3])}{' ...' if len(absent) > 3 else ''}")
    if unexpected:
        parts.append(f"unexpected weights: {', '.join(unexpected[:3])}{' ...' if len(unexpected) > 3 else ''}")
    return "the weights do not match the model: " + "; ".join(parts)
