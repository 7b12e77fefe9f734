"""Pitfall 5: names shorter than the context dropped (document 000, lecture 7, `NamesDataset`).

Buggy: `buggy_lecture_windows`, the lecture's windowing (also the source of pitfall 11's shapes).
Fixed: `core.data.name_windows_loop` (pads short names instead; `name_windows` is the same, vectorised).
Demo: every name of data/names.txt windowed both ways, counted by name length.
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence

import pandas as pd

from core.data import IGNORE_INDEX, PAD_ID, name_windows, name_windows_loop
from core.pitfalls.common import Pitfall
from core.tokenizers import CharTokenizer

PITFALL = Pitfall(
    "short_names", "Names shorter than the context dropped",
    "Document 000 (lecture 7), `NamesDataset`",
    "Windows only where a name with its closing “.” is longer than `context_size`: every name shorter "
    "than `context_size` letters, almost all of them, gives no example.",
    "`range(len(tokens) - context_size)` is empty unless the name's tokens (its letters and the "
    "closing “.”) outnumber the context; padding short names instead keeps every name.")


def buggy_lecture_windows(names, tokenizer, context_size):
    """Lecture 7's NamesDataset.__init__, as written (lists; torch.tensor of them is (N, T, 1))."""
    inputs, targets = [], []
    for name in names:
        tokens = [tokenizer.encode(char) for char in name + "."]  # BUG: a list [id] per character
        # BUG: empty range unless the name is LONGER than the context: short names give nothing
        for i in range(len(tokens) - context_size):
            inputs.append(tokens[i:i + context_size])
            targets.append(tokens[i + 1:i + context_size + 1])
    return inputs, targets


def examples_by_length(names: Sequence[str], tokenizer: CharTokenizer, context_size: int) -> pd.DataFrame:
    """Per name length: how many names, and how many examples ONE such name gives each way.

    Both windowings depend on a name's length only, so one representative name per length is run
    through `buggy_lecture_windows` and `core.data.name_windows_loop`."""
    by_length: dict[int, str] = {}
    counts = Counter(len(name) for name in names)
    for name in names:
        by_length.setdefault(len(name), name)
    rows = []
    for length in sorted(by_length):
        example = by_length[length]
        lecture_inputs, _ = buggy_lecture_windows([example], tokenizer, context_size)
        our_inputs, _ = name_windows_loop([example], tokenizer, context_size)
        rows.append({"name length": length, "names": counts[length],
                     "lecture examples per name": len(lecture_inputs),
                     "our examples per name": len(our_inputs)})
    return pd.DataFrame(rows)


def demo(names: Sequence[str], tokenizer: CharTokenizer, context_size: int) -> dict:
    """How many names give zero examples with the lecture's windowing and with ours (all names)."""
    table = examples_by_length(names, tokenizer, context_size)
    lecture_zero = int(table.loc[table["lecture examples per name"] == 0, "names"].sum())
    # ours, counted on the full tensor: every name's FIRST window starts with "." (id 0), and no
    # later window does (it starts inside the name), so those windows count the names with examples.
    # name_windows: name_windows_loop's windows for all ~32,000 names at once (10x faster)
    our_inputs, our_targets = name_windows(names, tokenizer, context_size)  # (N, T)
    names_with_example = int((our_inputs[:, 0] == PAD_ID).sum())
    return {
        "n_names": len(names),
        "context_size": context_size,
        "lecture_zero": lecture_zero,
        "lecture_windows": int((table["names"] * table["lecture examples per name"]).sum()),
        "our_zero": len(names) - names_with_example,
        "our_windows": int(our_inputs.shape[0]),
        "our_targets": int((our_targets != IGNORE_INDEX).sum()),
        "table": table,
    }
