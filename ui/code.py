"""'Show the code': the real source of the core/ function that computed what is on screen."""

from __future__ import annotations

import inspect
from typing import Callable, Iterable

import streamlit as st


def source_of(fn: Callable) -> str:
    """Source text of a function or class, read from core/ at run time (never a copy)."""
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        return f"# source of {getattr(fn, '__qualname__', fn)!r} is not available"


def show_code(fns: Callable | Iterable[Callable], label: str = "Show the code",
              expanded: bool = False) -> None:
    """An expander with the source of one or more core/ functions."""
    fns = [fns] if callable(fns) else list(fns)
    with st.expander(label, expanded=expanded, icon=":material/code:"):
        for fn in fns:
            module = getattr(fn, "__module__", "")
            st.caption(f"`{module}.{getattr(fn, '__qualname__', '')}`")
            st.code(source_of(fn), language="python")
