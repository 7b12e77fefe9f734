"""What every pitfall module shares: the `Pitfall` record, `Caught`/`run_caught` (the buggy code
is meant to crash), `build_seeded` (the book's global-seed builds) and `row_sums`.

The pitfall modules import these from here, and the package's `__init__` imports the modules for
its registry, so this file imports nothing of the package.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch

from core import attention


@dataclass(frozen=True)
class Pitfall:
    """One bug of the originals (or a common mistake they avoid), as the page introduces it."""

    key: str  # stable id, used in the URL (?pitfall=key) and as the module's name
    title: str  # short title for the menu
    where: str  # which original document and which code (or that the originals avoid it)
    effect: str  # what goes wrong, in one line
    why: str  # one sentence on why it goes wrong
    in_originals: bool = True  # False: a common mistake the originals avoid, shown for contrast


@dataclass
class Caught:
    """What running a piece of code gave: its value, or the error it raised as one line of text."""

    value: Any = None
    error: str | None = None  # "ErrorType: message", never a traceback

    @property
    def ok(self) -> bool:
        return self.error is None


def run_caught(fn: Callable, *args, **kwargs) -> Caught:
    """Run fn and catch whatever it raises: these demos exist to show the originals crashing."""
    try:
        return Caught(value=fn(*args, **kwargs))
    except Exception as exc:  # noqa: BLE001 - any crash of the buggy code is the lesson itself
        return Caught(error=f"{type(exc).__name__}: {exc}")


def build_seeded(seed: int, build: Callable[[], Any]) -> Any:
    """Build something that draws from torch's global RNG (the book's classes) after
    `torch.manual_seed(seed)`, without changing the global random state seen by anyone else."""
    with attention.seeded(seed):
        return build()


def row_sums(weights: torch.Tensor) -> list[float]:
    """Sum of each row of a (T, T) weight matrix: 1.0 for every row of a correct attention."""
    return [float(v) for v in weights.sum(dim=-1)]
