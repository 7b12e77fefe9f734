"""The app in process through Streamlit's AppTest: the real entry point, then one page."""

from __future__ import annotations

from benchmarks.harness.server import ROOT

ENTRY = str(ROOT / "streamlit_app.py")


def open_app_test(page: str | None = None, *, query: dict[str, str] | None = None,
                  timeout: float = 60, state: dict | None = None):
    """Run the app (optionally with URL query params and session `state` set before its first
    run) and switch to `page` (e.g. 'pages/home.py'); returns the AppTest, ready for widget
    changes and `at.run()`."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(ENTRY, default_timeout=timeout)
    if query:
        at.query_params.update(query)
    for key, value in (state or {}).items():
        at.session_state[key] = value
    at.run()
    if page:
        at.switch_page(str(ROOT / page))
        at.run()
    return at
