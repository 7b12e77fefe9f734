"""Pitfall 7: an unsorted vocabulary from `list(set(...))` (document 000, `Tokenizer.__init__`).

Buggy: `buggy_vocab`. Fixed: `fixed_vocab`, i.e. `core.tokenizers.CharTokenizer.from_text` (sorted).
Demo: a bigram model "saved" under run A's ids, its samples decoded with run A's and run B's
vocabularies (a shuffle by a "hash seed" stands in for a new process's set order).
"""

from __future__ import annotations

import random
from typing import Sequence

import pandas as pd
import torch

from core.pitfalls.common import Pitfall
from core.tokenizers import CharTokenizer

PITFALL = Pitfall(
    "vocab_order", "Unsorted vocabulary from `list(set(...))`",
    "Document 000 (lecture 7), `Tokenizer.__init__`",
    "Token ids change between Python processes, so a saved model decodes garbage after a restart.",
    "Python orders a set of strings by their hash, which is salted per process "
    "(PYTHONHASHSEED), so `list(set(...))` lists the characters in a new order every run.")


def buggy_vocab(names, hash_seed):
    """Lecture 7's vocabulary: `list(set(...))` then "." in front.

    A set of strings is ordered by string hashes, which Python salts per process
    (PYTHONHASHSEED). This process has one salt, so the shuffle by `hash_seed` stands in for
    the order another process (another run, a restart) would list the same set in."""
    vocab = list(set("".join(names)))
    random.Random(hash_seed).shuffle(vocab)  # stand-in for a new process's hash order
    vocab.insert(0, ".")
    return vocab


def fixed_vocab(names, hash_seed):
    """core.tokenizers.CharTokenizer: sorted, "." first, whatever order the set comes in."""
    chars = list(set("".join(names)))
    random.Random(hash_seed).shuffle(chars)  # the same stand-in for the hash order
    return CharTokenizer.from_text("".join(chars)).vocab


def fit_bigram_probs(names: Sequence[str], vocab: Sequence[str]) -> torch.Tensor:
    """A bigram model "trained and saved" under one vocabulary: next-id probabilities (V, V)."""
    stoi = {char: idx for idx, char in enumerate(vocab)}
    ids = torch.tensor([stoi[char] for char in "".join(f".{name}" for name in names) + "."])  # (n_chars,)
    counts = torch.ones(len(vocab), len(vocab))  # (V, V) add-one smoothing
    counts.index_put_((ids[:-1], ids[1:]), torch.ones(len(ids) - 1), accumulate=True)  # (V, V)
    return counts / counts.sum(dim=1, keepdim=True)  # (V, V)


def sample_bigram_ids(probs: torch.Tensor, n: int, seed: int, max_len: int = 20) -> list[list[int]]:
    """Sample `n` id sequences from the saved bigram model, each until id 0 (".")."""
    generator = torch.Generator().manual_seed(seed)
    samples = []
    for _ in range(n):
        ids, current = [], 0
        for _ in range(max_len):
            current = int(torch.multinomial(probs[current], 1, generator=generator))
            if current == 0:
                break
            ids.append(current)
        samples.append(ids)
    return samples


def demo(names: Sequence[str], hash_seed_a: int, hash_seed_b: int, seed: int = 0,
         n_samples: int = 8) -> dict:
    """Save a model under run A's ids, load it in run B: decode its samples with both vocabularies."""
    buggy_a, buggy_b = buggy_vocab(names, hash_seed_a), buggy_vocab(names, hash_seed_b)
    fixed_a, fixed_b = fixed_vocab(names, hash_seed_a), fixed_vocab(names, hash_seed_b)
    buggy_ids = sample_bigram_ids(fit_bigram_probs(names, buggy_a), n_samples, seed)
    fixed_ids = sample_bigram_ids(fit_bigram_probs(names, fixed_a), n_samples, seed)
    decode = lambda vocab, ids: "".join(vocab[i] for i in ids)  # noqa: E731
    samples = pd.DataFrame({
        "saved ids (run A)": [" ".join(map(str, ids)) for ids in buggy_ids],
        "buggy: decoded in run A": [decode(buggy_a, ids) for ids in buggy_ids],
        "buggy: decoded in run B": [decode(buggy_b, ids) for ids in buggy_ids],
        "fixed: decoded in run A": [decode(fixed_a, ids) for ids in fixed_ids],
        "fixed: decoded in run B": [decode(fixed_b, ids) for ids in fixed_ids],
    })
    letters = sorted(set("".join(names)))
    ids_table = pd.DataFrame({
        "character": letters,
        "buggy id, run A": [buggy_a.index(c) for c in letters],
        "buggy id, run B": [buggy_b.index(c) for c in letters],
        "fixed id, run A": [fixed_a.index(c) for c in letters],
        "fixed id, run B": [fixed_b.index(c) for c in letters],
    })
    return {
        "samples": samples,
        "ids": ids_table,
        "buggy_changed": int((ids_table["buggy id, run A"] != ids_table["buggy id, run B"]).sum()),
        "fixed_changed": int((ids_table["fixed id, run A"] != ids_table["fixed id, run B"]).sum()),
        "n_chars": len(letters),
        "buggy_same_samples": int((samples["buggy: decoded in run A"] == samples["buggy: decoded in run B"]).sum()),
        "fixed_same_samples": int((samples["fixed: decoded in run A"] == samples["fixed: decoded in run B"]).sum()),
    }
