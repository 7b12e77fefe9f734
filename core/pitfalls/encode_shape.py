"""Pitfall 11: `tokenizer.encode(char)` per character (document 000, lecture 7, `NamesDataset`).

Buggy: `core.pitfalls.short_names.buggy_lecture_windows` (a one-element list per character) and
`buggy_unpack`, the first line of the lecture's `GPT.forward`.
Fixed: `core.data.name_windows_loop` (flat ids, shape (N, T)).
Demo: a batch each way, and what the lecture's forward and our GPT make of it.
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd
import torch

from core.data import name_windows_loop
from core.models import GPT, GPTConfig
from core.pitfalls.common import Pitfall, run_caught
from core.pitfalls.short_names import buggy_lecture_windows
from core.tokenizers import CharTokenizer

PITFALL = Pitfall(
    "encode_shape", "`tokenizer.encode(char)` per character",
    "Document 000 (lecture 7), `NamesDataset`",
    "Each token becomes a one-element list: batches of shape (B, T, 1), and the model fails to unpack.",
    "`encode` returns a list of ids for a string, so encoding one character at a time wraps "
    "every id in its own list, adding a trailing dimension of size 1.")


def buggy_unpack(x):
    """The first line of the lecture's GPT.forward: it expects ids of shape (batch, time)."""
    batch_size, context_size = x.size()
    return batch_size, context_size


def demo(names: Sequence[str], tokenizer: CharTokenizer, context_size: int = 8,
         batch_size: int = 32) -> dict:
    """Shapes of a batch each way, and what our GPT and the lecture's forward make of them."""
    long_names = [name for name in names if len(name) + 1 > context_size][:batch_size]
    lecture_inputs, lecture_targets = buggy_lecture_windows(long_names, tokenizer, context_size)
    if not lecture_inputs:  # no name is longer than the context: the lecture's dataset is empty
        return {"buggy_shape": None}
    buggy_x = torch.tensor(lecture_inputs[:batch_size])  # (B, T, 1)
    buggy_y = torch.tensor(lecture_targets[:batch_size])  # (B, T, 1)
    fixed_x, fixed_y = name_windows_loop(list(names[:batch_size]), tokenizer, context_size)  # (N, T)
    fixed_x, fixed_y = fixed_x[:batch_size], fixed_y[:batch_size]  # (B, T)
    model = GPT(GPTConfig(vocab_size=tokenizer.vocab_size, context_size=context_size, n_layer=1,
                          n_head=1, d_embed=16, d_ff=32, dropout=0.0), seed=0).eval()
    with torch.no_grad():
        fixed_run = run_caught(lambda: model(fixed_x, fixed_y))
        buggy_run = run_caught(lambda: model(buggy_x, buggy_y))
    return {
        "buggy_first": lecture_inputs[0],  # the lecture's first example: a list of one-element lists
        "fixed_first": fixed_x[0].tolist(),  # ours: a flat list of ids
        "buggy_shape": tuple(buggy_x.shape),
        "buggy_target_shape": tuple(buggy_y.shape),
        "fixed_shape": tuple(fixed_x.shape),
        "fixed_target_shape": tuple(fixed_y.shape),
        "buggy_unpack": run_caught(buggy_unpack, buggy_x),
        "fixed_unpack": run_caught(buggy_unpack, fixed_x),
        "buggy_model": buggy_run,
        "fixed_logits_shape": tuple(fixed_run.value[0].shape) if fixed_run.ok else None,
        "fixed_loss": float(fixed_run.value[1]) if fixed_run.ok else None,
    }


def shape_table(result: dict) -> pd.DataFrame:
    """The shapes of `demo`'s two batches, one row per version."""
    return pd.DataFrame([
        {"version": "lecture (encode per char)", "inputs": str(result["buggy_shape"]),
         "targets": str(result["buggy_target_shape"])},
        {"version": "ours (name_windows_loop)", "inputs": str(result["fixed_shape"]),
         "targets": str(result["fixed_target_shape"])}])
