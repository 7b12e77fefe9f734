"""Pitfall 14: "CasualSelfAttention" (documents 000 and 002): causal, not casual.

Buggy: `buggy_find_attention_class` (the lecture's spelling). Fixed: `fixed_find_attention_class`.
Demo: both lookups against core.models, and the attention class names inside our GPT.
"""

from __future__ import annotations

from core.models import GPT, GPTConfig
from core.pitfalls.common import Pitfall, run_caught

PITFALL = Pitfall(
    "spelling", "“CasualSelfAttention”",
    "Document 000 (lecture 7)",
    "A spelling slip: the attention is causal (it follows cause and effect), not casual.",
    "“Causal” means each token may only look at what came before it; the class names here "
    "spell it that way, so searches and the book agree.")


def buggy_find_attention_class():
    """Code written against the lecture's class name, run against ours."""
    from core import models

    return models.CasualSelfAttention  # BUG: "Casual", the lecture's spelling


def fixed_find_attention_class():
    """The same lookup with the right spelling."""
    from core import models

    return models.CausalSelfAttention


def demo() -> dict:
    """Both lookups, and the attention class names inside our GPT."""
    gpt = GPT(GPTConfig(n_layer=1, n_head=1, d_embed=8, d_ff=8, dropout=0.0), seed=0)
    names = sorted({type(m).__name__ for m in gpt.modules() if "Attention" in type(m).__name__})
    buggy, fixed = run_caught(buggy_find_attention_class), run_caught(fixed_find_attention_class)
    return {"attention_classes": names, "buggy_error": buggy.error,
            "fixed_class": fixed.value.__name__ if fixed.ok else None}
