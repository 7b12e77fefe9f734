"""Pitfall 10: no position embedding (document 001, the slides' self-attention model).

Buggy: `buggy_forward_no_position` (token embeddings only).
Fixed: `core.models.SingleHeadLM.forward` with `use_position=True`.
Demo: both models trained on the slides' sentence (same seed, same batches), then asked for the
next character after a text and after a permutation of its earlier characters.
"""

from __future__ import annotations

import random

import pandas as pd
import torch

from core.models import SingleHeadLM
from core.pitfalls.common import Pitfall
from core.pitfalls.fit_indent import fixed_fit
from core.pitfalls.slides import slides_setup

PITFALL = Pitfall(
    "no_position", "No position embedding",
    "Document 001 (small LM slides), the self-attention model",
    "The model cannot tell order: permuting the earlier tokens leaves the last output unchanged.",
    "Attention is a weighted sum over a set: without a position vector added to each token, a "
    "position's output depends only on which tokens it can see, not on their order. So the last "
    "output is the same for the earlier tokens in any order; only the causal mask's growing "
    "prefixes carry any order.")


ORDER_TEXT = " lazy do"  # 8 characters (the slides' block size); what follows "o" depends on order


def buggy_forward_no_position(self, in_ids):
    """The slides' forward (`self` is a SingleHeadLM): token embeddings only, no positions."""
    in_ids_emb = self.token_embedding(in_ids)  # (B, T, n_embd)  BUG: no position embedding added
    sa_head_outputs, _ = self.sa_head(in_ids_emb)  # (B, T, head_size)
    logits = self.lm_head(sa_head_outputs)  # (B, T, V)
    return logits


def _permute_prefix(text_in: str, seed: int) -> str:
    """The same characters with all but the last shuffled (seeded), guaranteed to differ."""
    prefix = list(text_in[:-1])
    rng = random.Random(seed)
    for _ in range(20):
        rng.shuffle(prefix)
        if "".join(prefix) != text_in[:-1]:
            break
    return "".join(prefix) + text_in[-1]


def demo(seed: int = 123, train_iters: int = 300) -> dict:
    """Train the slides' model without and with position embeddings (same seed, same batches),
    then compare their next-character predictions after ORDER_TEXT and after a permutation."""
    models = {}
    for label, use_position in (("buggy: no positions", False), ("fixed: + position embedding", True)):
        tokenizer, batch, eval_loss = slides_setup(seed)
        model = SingleHeadLM(tokenizer.vocab_size, n_embd=32, block_size=8, head_size=16,
                             use_position=use_position, seed=seed)
        fixed_fit(model, batch, eval_loss, train_iters=train_iters, eval_iters=train_iters)
        models[label] = model.eval()
    permuted = _permute_prefix(ORDER_TEXT, seed)
    ids = torch.tensor([tokenizer.encode(ORDER_TEXT), tokenizer.encode(permuted)])  # (2, 8)
    rows, diffs = [], {}
    with torch.no_grad():
        for label, model in models.items():
            logits = buggy_forward_no_position(model, ids) if not model.use_position else model(ids)[0]  # (2, 8, V)
            probs = torch.softmax(logits[:, -1], dim=-1)  # (2, V) next character after the last token
            diffs[label] = float((logits[0, -1] - logits[1, -1]).abs().max())
            for row, shown in enumerate((ORDER_TEXT, permuted)):
                top = torch.topk(probs[row], 3)
                rows.append({"model": label, "input": repr(shown),
                             "top next characters": ", ".join(f"{tokenizer.decode([int(i)])!r} {float(p):.3f}"
                                                              for p, i in zip(top.values, top.indices))})
    return {"text": ORDER_TEXT, "permuted": permuted, "predictions": pd.DataFrame(rows),
            "max_logit_diff": diffs, "train_iters": train_iters}
