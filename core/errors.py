"""Error types that are a `ValueError` for the app and also what the book's own code raises.

The app catches `ValueError` and shows its message. A student who pastes code from rasbt's *LLMs from
Scratch* may instead catch what the book's version raises at the same point: an `AssertionError`
where the book writes `assert ...`, a `RuntimeError` where the book's tensors fail on a shape
mismatch. These subclasses are both, so either `except` clause catches them, with our clear message.
"""

from __future__ import annotations


class InvalidSettingError(ValueError, AssertionError):
    """A setting the book checks with `assert` (e.g. d_out divisible by num_heads, a text long enough)."""


class ShapeMismatchError(ValueError, RuntimeError):
    """Input the book's tensors reject with a RuntimeError (too many tokens for the mask, wrong d_in)."""
