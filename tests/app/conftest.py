"""AppTest harness: run the real entry point, then switch to a page by its file."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
ENTRY = str(ROOT / "streamlit_app.py")


def open_page(page: str | None = None, *, query: dict[str, str] | None = None,
              timeout: float = 60) -> AppTest:
    """Run the app (optionally with URL query params) and switch to `page` (e.g. 'pages/home.py')."""
    at = AppTest.from_file(ENTRY, default_timeout=timeout)
    if query:
        at.query_params.update(query)
    at.run()
    if page:
        at.switch_page(str(ROOT / page))
        at.run()
    return at


def assert_no_exception(at: AppTest) -> None:
    """No uncaught exception and no traceback shown."""
    assert not at.exception, [e.value for e in at.exception]


def chart_frames(at: AppTest):
    """The Arrow data behind every chart on the page, as pandas DataFrames."""
    frames = []
    for el in at.get("arrow_vega_lite_chart") + at.get("vega_lite_chart"):
        proto = el.proto
        for ds in getattr(proto, "datasets", []):
            frames.append(ds)
    return frames


@pytest.fixture
def page():
    return open_page
