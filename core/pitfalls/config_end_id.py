"""Pitfall 12: `self.config` never set and `end_id` a list (document 000, `GPT.generate`).

Buggy: `BuggyLectureGPT`, the lecture's forward and generate around one of our GPTs.
Fixed: `core.models.generate(..., stop_token=0)`.
Demo: the lecture's generate crashing twice, and ours sampling from the same GPT.
"""

from __future__ import annotations

import torch
from torch import nn

from core.models import GPT, GPTConfig, generate
from core.pitfalls.common import Pitfall, run_caught
from core.tokenizers import CharTokenizer

PITFALL = Pitfall(
    "config_end_id", "`self.config` never set; `end_id` a list",
    "Document 000 (lecture 7), `GPT.forward` and `GPT.generate`",
    "Sampling crashes with an AttributeError; with `self.config` patched, the list `end_id` makes "
    "the context (1, T, 1) and `forward` fails to unpack it; and the stop test `id == [0]` could "
    "never be true anyway.",
    "The lecture's GPT stores `self.context_size` but reads `self.config.context_size`, and "
    "`tokenizer.encode('.')` is the list [0], not the id 0.")


class BuggyLectureGPT(nn.Module):
    """Lecture 7's GPT.generate around one of our GPTs: it stores context_size, never self.config."""

    def __init__(self, gpt: GPT):
        super().__init__()
        self.gpt = gpt
        self.context_size = gpt.block_size  # the lecture sets this ... but reads self.config below

    def forward(self, x):
        batch_size, context_size = x.size()
        assert context_size <= self.context_size, \
            f"context_size should be <= {self.config.context_size}, got {context_size}"  # BUG: self.config
        return self.gpt(x)[0]  # (B, T, V)

    @torch.no_grad()
    def generate(self, tokenizer, generator, max_len=20):
        self.eval()
        end_id = tokenizer.encode(".")  # BUG: the list [0], not the id 0
        context = [end_id] * self.context_size
        context = torch.tensor(context, dtype=torch.long).unsqueeze(0)  # (1, T, 1), not (1, T)
        name = ""
        for _ in range(max_len):  # the lecture loops `while True`
            context = context[:, -self.config.context_size:]  # BUG: self.config was never set
            logits = self.forward(context)[:, -1, :]  # (1, V)
            next_token = torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator)  # (1, 1)
            context = torch.cat((context, next_token), dim=-1)
            name += tokenizer.decode([next_token[0].item()])
            if next_token[0].item() == end_id:  # BUG: an int never equals a list
                break
        return name


def demo(tokenizer: CharTokenizer, seed: int = 123, model: GPT | None = None) -> dict:
    """The lecture's generate crashing twice, and core.models.generate sampling from the same GPT."""
    if model is None:
        model = GPT(GPTConfig(vocab_size=tokenizer.vocab_size, dropout=0.0), seed=seed)
    buggy = BuggyLectureGPT(model)
    first = run_caught(buggy.generate, tokenizer, torch.Generator().manual_seed(seed))
    too_long = torch.zeros(1, model.block_size + 1, dtype=torch.long)  # (1, T + 1) one id too many
    with torch.no_grad():
        assert_error = run_caught(buggy, too_long)
    buggy.config = model.config  # patch the first bug by hand: the next one appears
    second = run_caught(buggy.generate, tokenizer, torch.Generator().manual_seed(seed))
    end_id = tokenizer.encode(".")
    start = torch.zeros(4, 1, dtype=torch.long)  # (4, 1) four names, each starting from "."
    out = generate(model, start, max_new_tokens=20, generator=torch.Generator().manual_seed(seed),
                   stop_token=0)  # (4, <= 21)
    names = []
    for row in out[:, 1:].tolist():
        names.append(tokenizer.decode(row[:row.index(0)] if 0 in row else row))
    return {"first_error": first.error, "assert_error": assert_error.error, "second_error": second.error,
            "end_id": end_id,
            "end_test": (0 == end_id), "fixed_names": names}
