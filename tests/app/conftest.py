"""AppTest harness: run the real entry point, then switch to a page by its file."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from benchmarks.harness import open_app_test

ROOT = Path(__file__).resolve().parents[2]
ENTRY = str(ROOT / "streamlit_app.py")
open_page = open_app_test  # run the app, then switch to a page (the benchmarks open pages this way)


def assert_no_exception(at: AppTest) -> None:
    """No uncaught exception and no traceback shown."""
    assert not at.exception, [e.value for e in at.exception]


@pytest.fixture
def page():
    return open_page
