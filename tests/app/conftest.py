"""AppTest harness: run the real entry point, then switch to a page by its file."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from benchmarks.harness import open_app_test
from ui.walkthrough import SETTINGS_MENU_KEY

ROOT = Path(__file__).resolve().parents[2]
ENTRY = str(ROOT / "streamlit_app.py")
SETTINGS_OPEN = {SETTINGS_MENU_KEY: True}  # the walkthrough's Settings popover open


def open_page(page: str | None = None, *, query: dict[str, str] | None = None, timeout: float = 60,
              settings_open: bool = True) -> AppTest:
    """Run the app, then switch to a page (the benchmarks open pages this way). The walkthrough's
    Settings popover is open, as a presenter who changes its controls has it, unless
    `settings_open=False` (then its controls are not made: ui.walkthrough.Controls)."""
    return open_app_test(page, query=query, timeout=timeout, state=SETTINGS_OPEN if settings_open else None)


def assert_no_exception(at: AppTest) -> None:
    """No uncaught exception and no traceback shown."""
    assert not at.exception, [e.value for e in at.exception]


@pytest.fixture
def page():
    return open_page
