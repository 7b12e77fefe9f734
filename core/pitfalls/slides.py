"""The small-LM slides' setting, shared by pitfalls 8, 9 and 10 (document 001).

The slides train on a tiny repeated sentence; `SLIDES_TEXT` is ours, in the same spirit.
`slides_setup` gives their data: a character tokenizer, a 90/10 split, random blocks (B=6, T=8)
from a seeded generator, and an evaluation loss over fixed validation batches.
"""

from __future__ import annotations

import torch

from core.data import encode_corpus, get_batch, train_val_split_tensor
from core.tokenizers import CharTokenizer

SLIDES_TEXT = "the quick brown fox jumps over the lazy dog. " * 40


def slides_setup(seed: int, block_size: int = 8, batch_size: int = 6):
    """The slides' data: char tokenizer, 90/10 split, random blocks (B=6, T=8) from a seeded generator."""
    tokenizer = CharTokenizer.from_text(SLIDES_TEXT)
    train_data, val_data = train_val_split_tensor(encode_corpus(SLIDES_TEXT, tokenizer), 0.1)
    generator = torch.Generator().manual_seed(seed)
    splits = {"train": train_data, "val": val_data}

    def batch(split):
        return get_batch(splits[split], block_size, batch_size, generator)  # (B, T), (B, T)

    val_generator_seed = seed + 1

    @torch.no_grad()
    def eval_loss(model, n_batches=10):
        val_generator = torch.Generator().manual_seed(val_generator_seed)  # the same batches each time
        model.eval()
        losses = [model(*get_batch(val_data, block_size, batch_size, val_generator))[1] for _ in range(n_batches)]
        model.train()
        return float(torch.stack(losses).mean())

    return tokenizer, batch, eval_loss
