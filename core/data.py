"""Datasets for the lessons, built as whole tensors.

Three lessons, three shapes of data:

* Names GPT (lecture 7): `names.txt`, a de-duplicated train/val split, and windows of
  `context_size` characters per name. Names shorter than the context are right-padded (the
  original notebook dropped them, so most names gave no example at all); longer names slide.
* Data loader (book ch. 2): sliding windows of `max_length` GPT-2 tokens with a `stride`, as a
  `Dataset` and a `DataLoader` (`GPTDatasetV1`, `create_dataloader_v1`).
* Small LM (slides): one encoded corpus, a 90/10 split by position, random blocks as batches.

Window tensors are gathered with index arithmetic (numpy fancy indexing, `Tensor.unfold`), never
appended one example at a time.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from core.errors import InvalidSettingError
from core.tokenizers import END_OF_TEXT, CharTokenizer, gpt2_encoding

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = REPO_ROOT / "data"
NAMES_PATH = DATA_DIR / "names.txt"
IGNORE_INDEX = -1  # target id of padding positions; losses use ignore_index=-1
PAD_ID = 0  # inputs are padded with "." (id 0), the token a finished name ends with anyway


# ---------------------------------------------------------------------------------------------
# Names
# ---------------------------------------------------------------------------------------------


def load_names(path: Path | str = NAMES_PATH) -> list[str]:
    """Names from a text file, one per line; blank lines and surrounding spaces are dropped."""
    text = Path(path).read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip()]


def split_names(
    names: Sequence[str], val_size: float = 0.1, seed: int = 101
) -> tuple[list[str], list[str]]:
    """Train/validation split of the distinct names (a name never lands in both): scikit-learn's
    `train_test_split(unique_names, test_size=val_size, random_state=seed)`.

    For the shipped `names.txt` with the default size and seed, the same split is read from
    `data/names_split.json`, which scikit-learn made (`scripts/make_names_split.py`; a test checks
    that the file still equals what scikit-learn gives). Importing scikit-learn costs a server
    ~65 MiB and ~2 s, so it is imported only to split other names."""
    if not 0 < val_size < 1:
        raise ValueError(f"val_size must be between 0 and 1 (exclusive), got {val_size}.")
    unique_names = list(dict.fromkeys(names))  # de-duplicate, keeping the file order
    if len(unique_names) < 2:
        raise ValueError("Need at least two distinct names to split into train and validation.")
    shipped = shipped_split(unique_names, val_size, seed)
    if shipped is not None:
        return shipped
    from sklearn.model_selection import train_test_split

    train_names, val_names = train_test_split(
        unique_names, test_size=val_size, random_state=seed
    )
    return list(train_names), list(val_names)


NAMES_SPLIT_PATH = DATA_DIR / "names_split.json"


def split_key(unique_names: Sequence[str], val_size: float, seed: int) -> str:
    """What a stored split was made from: the distinct names in order, the size and the seed."""
    digest = hashlib.sha256("\n".join(unique_names).encode("utf-8")).hexdigest()
    return f"{digest}:{val_size!r}:{seed}"


def shipped_split(unique_names: Sequence[str], val_size: float, seed: int,
                  path: Path = NAMES_SPLIT_PATH) -> tuple[list[str], list[str]] | None:
    """The stored split for exactly these names, size and seed, or None."""
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if stored.get("key") != split_key(unique_names, val_size, seed):
        return None
    return ([unique_names[i] for i in stored["train_index"]],
            [unique_names[i] for i in stored["val_index"]])


def name_windows(
    names: Sequence[str], tokenizer: CharTokenizer, context_size: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(inputs, targets) windows of `context_size` for every name, both LongTensors (N, T).

    Each name becomes the sequence "." + name + "." (L + 2 ids); inputs are seq[:-1] and targets
    seq[1:], L + 1 positions each. A name that fits gives one window, right-padded: inputs with
    "." (id 0) and targets with IGNORE_INDEX, so the loss skips the padding. A longer name gives
    L + 2 - T windows with stride 1, so every one of its targets is predicted at least once.
    """
    if context_size < 1:
        raise ValueError(f"context_size must be at least 1, got {context_size}.")
    _check_names(names)
    if not names:
        empty = torch.empty(0, context_size, dtype=torch.long)  # (0, T)
        return empty, empty.clone()

    seq_lengths = np.array([len(name) + 2 for name in names])  # (n_names,)
    # One encode call for all names: "." + name + "." back to back.
    flat_ids = np.array(tokenizer.encode("".join(f".{name}." for name in names)))  # (total,)
    seq_starts = np.cumsum(seq_lengths) - seq_lengths  # (n_names,)
    seq_ends = seq_starts + seq_lengths  # (n_names,)

    # A window reads T + 1 ids (T inputs, plus the last target); short names still get one.
    windows_per_name = np.maximum(1, seq_lengths - context_size)  # (n_names,)
    name_of_window = np.repeat(np.arange(len(names)), windows_per_name)  # (N,)
    first_window = np.cumsum(windows_per_name) - windows_per_name  # (n_names,)
    offset_in_name = np.arange(len(name_of_window)) - first_window[name_of_window]  # (N,)
    window_starts = seq_starts[name_of_window] + offset_in_name  # (N,)

    positions = window_starts[:, None] + np.arange(context_size + 1)  # (N, T+1)
    window_ends = seq_ends[name_of_window][:, None]  # (N, 1)
    gathered = flat_ids[np.minimum(positions, len(flat_ids) - 1)]  # (N, T+1)

    inputs = gathered[:, :-1].copy()  # (N, T)
    targets = gathered[:, 1:].copy()  # (N, T)
    # Inputs stop one id before the end of the sequence (seq[:-1]); targets run to its end.
    inputs[positions[:, :-1] >= window_ends - 1] = PAD_ID
    targets[positions[:, 1:] >= window_ends] = IGNORE_INDEX
    return torch.from_numpy(inputs).long(), torch.from_numpy(targets).long()


def name_windows_loop(
    names: Sequence[str], tokenizer: CharTokenizer, context_size: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """`name_windows`, one name at a time (what the lessons show; the trainer's numpy version cuts
    the same windows for all ~32,000 names at once, tested on every name)."""
    if context_size < 1:
        raise ValueError(f"context_size must be at least 1, got {context_size}.")
    _check_names(names)
    inputs, targets = [], []
    for name in names:
        seq = tokenizer.encode("." + name + ".")  # "." marks where a name starts and ends
        # a name that fits gives one window; a longer one slides by one, so every target is seen
        for start in range(max(1, len(seq) - context_size)):
            chunk = seq[start:start + context_size + 1]  # T inputs and one more id for the last target
            x, y = chunk[:-1], chunk[1:]  # the targets are the inputs one step later
            # a short name is padded on the right: inputs with ".", targets with IGNORE_INDEX,
            # which the loss skips (the padding never counts as something to predict)
            inputs.append(x + [PAD_ID] * (context_size - len(x)))
            targets.append(y + [IGNORE_INDEX] * (context_size - len(y)))
    as_tensor = lambda rows: torch.tensor(rows, dtype=torch.long).reshape(-1, context_size)  # noqa: E731
    return as_tensor(inputs), as_tensor(targets)  # (N, T), (N, T)


def _check_names(names: Sequence[str]) -> None:
    empty = [index for index, name in enumerate(names) if not name]
    if empty:
        raise ValueError(f"Names must not be empty (line {empty[0] + 1} is).")
    with_dot = [name for name in names if "." in name]
    if with_dot:
        raise ValueError(f'Names must not contain "." (it marks start and end): {with_dot[:3]!r}.')


@dataclass
class NamesData:
    """Everything the names GPT trains on: tokenizer, the split and its window tensors."""

    tokenizer: CharTokenizer  # built from all names, so train and val share the ids
    train_names: list[str]  # names the model trains on
    val_names: list[str]  # held-out names, disjoint from train_names
    context_size: int  # window length T
    train_x: torch.Tensor  # (N_train, T) input ids
    train_y: torch.Tensor  # (N_train, T) target ids, IGNORE_INDEX on padding
    val_x: torch.Tensor  # (N_val, T) input ids
    val_y: torch.Tensor  # (N_val, T) target ids, IGNORE_INDEX on padding

    @property
    def n_train_tokens(self) -> int:
        """Number of real (non-padding) targets in the training windows."""
        return int((self.train_y != IGNORE_INDEX).sum())


def build_names_data(
    context_size: int = 12,
    val_size: float = 0.1,
    seed: int = 101,
    names: Sequence[str] | None = None,
) -> NamesData:
    """Load (or take) the names, split them and build train/val windows."""
    if names is None:
        names = load_names()
    tokenizer = CharTokenizer.from_text("".join(names))
    train_names, val_names = split_names(names, val_size=val_size, seed=seed)
    train_x, train_y = name_windows(train_names, tokenizer, context_size)
    val_x, val_y = name_windows(val_names, tokenizer, context_size)
    return NamesData(
        tokenizer=tokenizer,
        train_names=train_names,
        val_names=val_names,
        context_size=context_size,
        train_x=train_x,
        train_y=train_y,
        val_x=val_x,
        val_y=val_y,
    )


def random_batch(
    x: torch.Tensor, y: torch.Tensor, batch_size: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """`batch_size` rows of (x, y) drawn with replacement, using only `generator`'s randomness."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}.")
    if len(x) == 0:
        raise ValueError("There are no examples to draw a batch from.")
    rows = torch.randint(len(x), (batch_size,), generator=generator)  # (B,)
    rows = rows.to(x.device)
    return x[rows], y[rows]  # (B, T), (B, T)


# ---------------------------------------------------------------------------------------------
# Data loader lesson (book ch. 2): sliding windows over GPT-2 tokens
# ---------------------------------------------------------------------------------------------


def count_windows(n_tokens: int, max_length: int, stride: int) -> int:
    """How many windows the book's loop `range(0, n_tokens - max_length, stride)` makes.

    A window starting at i needs ids up to i + max_length (its last target), so the last start is
    n_tokens - max_length - 1; counting the multiples of `stride` up to it gives the closed form.
    """
    _check_window_args(max_length, stride)
    if n_tokens <= max_length:
        return 0
    return (n_tokens - max_length - 1) // stride + 1


def sliding_windows(
    token_ids: Sequence[int] | torch.Tensor, max_length: int, stride: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(inputs, targets) of shape (N, max_length); targets are the inputs shifted by one token."""
    ids = torch.as_tensor(token_ids, dtype=torch.long).reshape(-1)  # (n_tokens,)
    n_windows = count_windows(len(ids), max_length, stride)
    if n_windows == 0:
        # the book: assert len(token_ids) > max_length
        raise InvalidSettingError(
            f"The text has {len(ids)} tokens; one window of max_length {max_length} needs at "
            f"least {max_length + 1} (the inputs plus one more token for the last target)."
        )
    # unfold(dim, size, step) gives every window start 0, stride, 2*stride, ... as a view.
    inputs = ids[:-1].unfold(0, max_length, stride)[:n_windows]  # (N, max_length)
    targets = ids[1:].unfold(0, max_length, stride)[:n_windows]  # (N, max_length)
    return inputs.contiguous(), targets.contiguous()


def _check_window_args(max_length: int, stride: int) -> None:
    if max_length < 1:
        raise ValueError(f"max_length must be at least 1, got {max_length}.")
    if stride <= 0:
        raise ValueError(f"stride must be a positive number of tokens, got {stride}.")


class GPTDatasetV1(Dataset):
    """The book's GPTDatasetV1: overlapping windows of a tokenized text, cut by the book's loop.

    A plain loop on purpose, independent of `sliding_windows` (one `unfold`): the Tokens page
    checks its batches against this loader, so the two must be able to disagree."""

    def __init__(self, txt: str, tokenizer, max_length: int, stride: int):
        _check_window_args(max_length, stride)
        self.tokenizer = tokenizer
        token_ids = _encode_text(txt, tokenizer)
        if len(token_ids) <= max_length:  # the last target is the token after the window
            raise InvalidSettingError(
                f"The text has {len(token_ids)} tokens; one window of max_length {max_length} "
                f"needs at least {max_length + 1}.")
        self.input_ids, self.target_ids = [], []
        # a window starts every `stride` tokens; the last start leaves one token for its last target
        for i in range(0, len(token_ids) - max_length, stride):
            input_chunk = token_ids[i:i + max_length]  # tokens i .. i+max_length-1
            target_chunk = token_ids[i + 1:i + max_length + 1]  # the same, one token later
            self.input_ids.append(torch.tensor(input_chunk))  # (T,)
            self.target_ids.append(torch.tensor(target_chunk))  # (T,)

    def __len__(self) -> int:
        return len(self.input_ids)

    def __getitem__(self, idx: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.input_ids[idx], self.target_ids[idx]  # (T,), (T,)


def create_dataloader_v1(
    txt: str,
    batch_size: int = 4,
    max_length: int = 256,
    stride: int = 128,
    shuffle: bool = True,
    drop_last: bool = True,
    num_workers: int = 0,
    seed: int | None = None,
    tokenizer=None,
) -> DataLoader:
    """DataLoader over `GPTDatasetV1`; GPT-2 BPE by default; `seed` makes the shuffle repeatable.

    The arguments up to `num_workers` are the book's, in the book's order, so its calls run unchanged;
    `num_workers` goes to torch's DataLoader (0: batches are made in this process, the book's choice).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}.")
    tokenizer = gpt2_encoding() if tokenizer is None else tokenizer
    dataset = GPTDatasetV1(txt, tokenizer, max_length, stride)
    if drop_last and len(dataset) < batch_size:
        # Otherwise the loader would silently yield no batch at all.
        raise ValueError(
            f"The text gives {len(dataset)} windows, fewer than one batch of {batch_size}; "
            "use a longer text, a smaller batch size or stride, or keep the last partial batch."
        )
    # A private generator: the shuffle order never depends on (or changes) the global RNG.
    generator = torch.Generator().manual_seed(seed) if seed is not None else None
    return DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=shuffle,
        drop_last=drop_last,
        num_workers=num_workers,
        generator=generator,
    )


def _encode_text(text: str, tokenizer) -> list[int]:
    """Ids of `text` with a tiktoken encoding (end-of-text allowed) or a CharTokenizer."""
    if hasattr(tokenizer, "encode_ordinary"):  # a tiktoken.Encoding
        return tokenizer.encode(text, allowed_special={END_OF_TEXT})
    return tokenizer.encode(text)


# ---------------------------------------------------------------------------------------------
# Small LM lesson (slides): one corpus, split by position, random blocks
# ---------------------------------------------------------------------------------------------


def encode_corpus(text: str, tokenizer) -> torch.Tensor:
    """The whole corpus as one LongTensor of ids (a CharTokenizer or a tiktoken encoding)."""
    return torch.tensor(_encode_text(text, tokenizer), dtype=torch.long)  # (n_tokens,)


def train_val_split_tensor(
    data: torch.Tensor, val_frac: float = 0.1
) -> tuple[torch.Tensor, torch.Tensor]:
    """First (1 - val_frac) of the ids for training, the rest for validation (no shuffling)."""
    if not 0 < val_frac < 1:
        raise ValueError(f"val_frac must be between 0 and 1 (exclusive), got {val_frac}.")
    n_train = int(len(data) * (1 - val_frac))
    return data[:n_train], data[n_train:]  # (n_train,), (n_tokens - n_train,)


def get_batch(
    data: torch.Tensor, block_size: int, batch_size: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """`batch_size` random blocks of `block_size` ids and the same blocks shifted by one."""
    if block_size < 1 or batch_size < 1:
        raise ValueError(
            f"block_size and batch_size must be at least 1, got {block_size} and {batch_size}."
        )
    if len(data) < block_size + 1:
        raise ValueError(
            f"The data has {len(data)} tokens; a block of {block_size} needs at least "
            f"{block_size + 1} (one more for the last target)."
        )
    starts = torch.randint(len(data) - block_size, (batch_size,), generator=generator)  # (B,)
    positions = starts[:, None] + torch.arange(block_size)  # (B, T)
    positions = positions.to(data.device)
    return data[positions], data[positions + 1]  # (B, T), (B, T)
