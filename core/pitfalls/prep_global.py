"""Pitfall 9: `prep` reads a global instead of its argument (document 001, `prep`).

Buggy: `buggy_prep` (the vocabulary from `corpus`, the data from the global `text`).
Fixed: `fixed_prep`, core code on the argument (CharTokenizer, encode_corpus, a 90/10 split).
Demo: both run on the student's corpus; the buggy one crashes or silently splits `text`.
"""

from __future__ import annotations

import pandas as pd
import torch

from core.data import encode_corpus, train_val_split_tensor
from core.pitfalls.common import Caught, Pitfall, run_caught
from core.pitfalls.slides import SLIDES_TEXT
from core.tokenizers import CharTokenizer

PITFALL = Pitfall(
    "prep_global", "`prep` reads a global instead of its argument",
    "Document 001 (small LM slides), `prep`",
    "The split and the data come from the global `text`, whatever corpus you pass.",
    "Inside a function a name that is not a parameter or a local is looked up in the module, so "
    "`text` silently means the notebook's global, not `corpus`.")
MAX_CORPUS_CHARS = 2000  # longest corpus a student may type


def validate_corpus(corpus: str) -> str:
    """The corpus typed for the `prep` pitfall, or ValueError with a message for the student."""
    if not isinstance(corpus, str):
        raise ValueError("the corpus must be text")
    if len(corpus) > MAX_CORPUS_CHARS:
        raise ValueError(f"the corpus is too long ({len(corpus):,} characters; at most {MAX_CORPUS_CHARS:,})")
    if len(corpus.strip()) < 10:
        raise ValueError("type a corpus of at least 10 characters, so a 90/10 split leaves some validation text")
    return corpus


text = SLIDES_TEXT  # the notebook's global; buggy_prep reads it by accident


def buggy_prep(corpus):
    """The slides' prep (as a function): the vocabulary comes from `corpus`, the data from `text`."""
    vocab = sorted(list(set(corpus)))
    c2i = {c: i for i, c in enumerate(vocab)}
    encoder = lambda doc: [c2i[c] for c in doc]
    n = len(text)  # BUG: the global `text`, not the argument `corpus`
    train_text = text[:int(n * 0.9)]
    val_text = text[int(n * 0.9):]
    train_data = torch.tensor(encoder(train_text), dtype=torch.long)
    val_data = torch.tensor(encoder(val_text), dtype=torch.long)
    return {"vocab": vocab, "train_text": train_text, "val_text": val_text,
            "train_data": train_data, "val_data": val_data}


def fixed_prep(corpus):
    """The same with core code on the argument: CharTokenizer, encode_corpus, a 90/10 split."""
    tokenizer = CharTokenizer.from_text(corpus)
    train_data, val_data = train_val_split_tensor(encode_corpus(corpus, tokenizer), 0.1)
    n_train = len(train_data)
    return {"vocab": tokenizer.vocab, "train_text": corpus[:n_train], "val_text": corpus[n_train:],
            "train_data": train_data, "val_data": val_data}


def _chars_split(result: Caught) -> int | None:
    """How many characters a prep split into train and validation text (None: it crashed)."""
    return len(result.value["train_text"]) + len(result.value["val_text"]) if result.ok else None


def demo(corpus: str) -> dict:
    """Run both on the student's corpus; the buggy one either crashes or silently uses `text`."""
    corpus = validate_corpus(corpus)
    buggy, fixed = run_caught(buggy_prep, corpus), run_caught(fixed_prep, corpus)

    def describe(result: Caught) -> dict:
        if not result.ok:
            return {"outcome": result.error, "characters split": "—", "train text starts": "—"}
        out = result.value
        return {"outcome": "ran", "characters split": str(len(out["train_text"]) + len(out["val_text"])),
                "train text starts": repr(out["train_text"][:32])}

    # short row labels and no "train data shape" column (the characters split, 90% of them, again):
    # the longer table hid its last column behind a scroll bar at 1024 px
    table = pd.DataFrame([{"prep": "buggy", **describe(buggy)}, {"prep": "fixed", **describe(fixed)}])
    return {"corpus_chars": len(corpus), "global_chars": len(text), "buggy": buggy, "fixed": fixed,
            "buggy_chars": _chars_split(buggy), "fixed_chars": _chars_split(fixed),
            "table": table}
