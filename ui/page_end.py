"""Ending a page early without `st.stop()`, so the entry point's work after the page still runs.

After `st.stop()` every later Streamlit call, even reading `st.session_state`, raises Streamlit's
StopException. `streamlit_app.py` publishes a lecturer's place to the class and sends the desk
cookie after the page, so on a page that stopped early (Sample names before any model is trained,
a class poll waiting for its reveal) the students did not follow the lecturer there, and their
sidebar kept naming the lecturer's previous page. `end_page()` ends the page with its own
exception instead, which the entry point catches around `page.run()`; anywhere else (a page run
without the entry point) it falls back to `st.stop()`.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import NoReturn

import streamlit as st

_IN_PAGE_RUN: contextvars.ContextVar[bool] = contextvars.ContextVar("attention_lab_in_page_run", default=False)


class PageEnded(Exception):  # noqa: N818 - not an error: the page has said all it has to say
    """Raised by `end_page()` inside `running_page()`, which swallows it."""


@contextlib.contextmanager
def running_page() -> Iterator[None]:
    """Around the entry point's `page.run()`: a page that ends early returns here normally."""
    token = _IN_PAGE_RUN.set(True)
    try:
        yield
    except PageEnded:
        pass
    finally:
        _IN_PAGE_RUN.reset(token)


def end_page() -> NoReturn:
    """Stop drawing this page; what the entry point does after every page still runs."""
    if _IN_PAGE_RUN.get():
        raise PageEnded
    st.stop()
    raise AssertionError("st.stop() returned")  # pragma: no cover - it never does in a script run
