"""Sampling names from a trained model, and looking at what it predicts.

* `sample_names(...)`: start from "." (+ an optional prefix), draw one character at a time until the
  model writes "." again; each name is labelled "train" (the model reproduced a training name), "val"
  (it produced a held-out name it never saw), "new" (an invention) or "empty" (it wrote "." at once:
  no name at all, which is not an invention). Randomness comes from a local
  `torch.Generator(seed)`, so the same seed gives the same names.
* `label_shares(samples)`: fraction of each label, for a bar chart.
* `next_char_distributions(model, tokenizer, name)`: the model's probability of every next character
  at each step of ". n a m e", for a heatmap.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import torch

from core.models import check_sampling_args, generate
from core.tokenizers import BOUNDARY_TOKEN, CharTokenizer

LABELS = ("new", "train", "val", "empty")  # label_shares() keys, in display order


@dataclass
class SampledName:
    """One generated name and where it stands relative to the data."""

    name: str  # the generated name, prefix included, without the "." markers
    label: str  # "new" (not in the data), "train" (a training name), "val" (a held-out name), "empty"


def _model_device(model: torch.nn.Module) -> torch.device:
    first = next(model.parameters(), None)
    return first.device if first is not None else torch.device("cpu")


def _check_name_text(text: str, tokenizer: CharTokenizer, what: str) -> None:
    if not isinstance(text, str):
        raise ValueError(f"{what} must be text, got {type(text).__name__}")
    if BOUNDARY_TOKEN in text:
        raise ValueError(f'{what} must not contain "{BOUNDARY_TOKEN}": it marks the start and end of a name')
    unknown = sorted(set(text) - set(tokenizer.vocab))
    if unknown:
        shown = ", ".join(repr(char) for char in unknown)
        raise ValueError(f"{what} has characters the model does not know: {shown}")


@torch.no_grad()
def sample_names(
    model: torch.nn.Module,
    tokenizer: CharTokenizer,
    n: int,
    *,
    temperature: float = 1.0,
    top_k: int | None = None,
    prefix: str = "",
    seed: int = 0,
    max_len: int = 50,
    train_names: Collection[str] = (),
    val_names: Collection[str] = (),
    device: torch.device | str | None = None,
) -> list[SampledName]:
    """Sample `n` names (all in one batch), each starting with `prefix`, labelled against the data.

    A name ends at the first "." the model writes, or after `max_len` characters (prefix included).
    """
    check_sampling_args(temperature, top_k)
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a whole number >= 0, got {n!r}")
    if isinstance(max_len, bool) or not isinstance(max_len, int) or max_len < 1:
        raise ValueError(f"max_len must be a positive whole number, got {max_len!r}")
    _check_name_text(prefix, tokenizer, "prefix")
    if len(prefix) > max_len:
        raise ValueError(f"prefix is longer than max_len ({len(prefix)} > {max_len})")
    if n == 0:
        return []

    device = torch.device(device) if device is not None else _model_device(model)
    end_id = tokenizer.encode(BOUNDARY_TOKEN)[0]
    start_ids = tokenizer.encode(BOUNDARY_TOKEN + prefix)
    idx = torch.tensor([start_ids] * n, dtype=torch.long, device=device)  # (n, 1 + len(prefix))
    generator = torch.Generator().manual_seed(seed)  # CPU: the same names on any device
    out = generate(
        model,
        idx,
        max_new_tokens=max_len - len(prefix) + 1,  # room for the closing "."
        temperature=temperature,
        top_k=top_k,
        generator=generator,
        stop_token=end_id,
    )
    new_ids = out[:, len(start_ids) :].tolist()  # (n, <= max_new_tokens)

    train_set = train_names if isinstance(train_names, (set, frozenset)) else set(train_names)
    val_set = val_names if isinstance(val_names, (set, frozenset)) else set(val_names)
    samples = []
    for row in new_ids:
        if end_id in row:
            row = row[: row.index(end_id)]
        name = (prefix + tokenizer.decode(row))[:max_len]
        label = ("empty" if not name else "train" if name in train_set else "val" if name in val_set
                 else "new")
        samples.append(SampledName(name, label))
    return samples


def label_shares(samples: Sequence[SampledName]) -> dict[str, float]:
    """Fraction of samples with each label ("new", "train", "val", "empty"); all 0.0 for no samples."""
    counts = {label: 0 for label in LABELS}
    for sample in samples:
        counts[sample.label] += 1
    total = len(samples)
    return {label: (count / total if total else 0.0) for label, count in counts.items()}


@torch.no_grad()
def next_char_distributions(model: torch.nn.Module, tokenizer: CharTokenizer, name: str) -> torch.Tensor:
    """Probabilities (len(name) + 1, V): row t is the model's next-character distribution after
    reading ". n a m e"[: t + 1]; the last row is how likely the name ends (column of ".")."""
    _check_name_text(name, tokenizer, "name")
    device = _model_device(model)
    ids = torch.tensor(tokenizer.encode(BOUNDARY_TOKEN + name), dtype=torch.long, device=device)  # (L + 1,)
    block_size = getattr(model, "block_size", None) or len(ids)
    was_training = model.training
    model.eval()
    try:
        # Positions that fit in the first window come from one forward pass ...
        first = ids[:block_size].unsqueeze(0)  # (1, <= block_size)
        logits = model(first)[0][0]  # (<= block_size, V)
        rows = [logits]
        # ... later ones slide the window, as the model saw long names in training and in sampling.
        for end in range(block_size + 1, len(ids) + 1):
            window = ids[end - block_size : end].unsqueeze(0)  # (1, block_size)
            rows.append(model(window)[0][0, -1:])  # (1, V)
    finally:
        model.train(was_training)
    return torch.softmax(torch.cat(rows), dim=-1).cpu()  # (L + 1, V)
