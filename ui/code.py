"""'Show the code': the real source of the core/ function that computed what is on screen.

A page passes `show_code` the function(s) that really computed the numbers beside it (a class
stands for its `__init__` and `forward`); a page that lays out source its own way calls
`note_shown`. `recording()` lets a test collect every function a script run showed, to check
under a profiler that each of them really ran (tests/app/test_show_code_is_honest.py); outside a
test nothing is recorded.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
from typing import Callable, Iterable

import streamlit as st


def source_of(fn: Callable) -> str:
    """Source text of a function or class, read from core/ at run time (never a copy)."""
    try:
        path = inspect.getsourcefile(fn)
        stamp = os.path.getmtime(path) if path else 0.0
    except (OSError, TypeError):
        stamp = 0.0
    return _source(fn, stamp)


@functools.lru_cache(maxsize=512)
def _source(fn: Callable, stamp: float) -> str:
    # cached per file modification time: inspect.getsource of a class parses its whole module
    # (tens of ms); an edited file has a new time, so the shown code never goes stale
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        return f"# source of {getattr(fn, '__qualname__', fn)!r} is not available"


_recorders: list[list[Callable]] = []  # one list per active recording() (tests only)


@contextlib.contextmanager
def recording():
    """Collect every function or class shown (show_code, note_shown) while the block runs (for tests)."""
    shown: list[Callable] = []
    _recorders.append(shown)
    try:
        yield shown
    finally:
        _recorders.remove(shown)


def note_shown(fns: Iterable[Callable]) -> None:
    """Tell every active recording() that these functions are on screen. show_code calls it; a
    page that lays out source its own way (the Pitfalls page's side-by-side columns) calls it too."""
    for shown in _recorders:
        shown.extend(fns)


def show_code(fns: Callable | Iterable[Callable], label: str = "Show the code",
              expanded: bool = False, note: str | None = None) -> None:
    """An expander with the source of one or more core/ functions (and a `note` above them)."""
    fns = [fns] if callable(fns) else list(fns)
    note_shown(fns)
    with st.expander(label, expanded=expanded, icon=":material/code:"):
        if note:
            st.markdown(note)
        for fn in fns:
            module = getattr(fn, "__module__", "")
            st.caption(f"`{module}.{getattr(fn, '__qualname__', '')}`")
            st.code(source_of(fn), language="python")
