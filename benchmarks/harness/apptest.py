"""The app in process through Streamlit's AppTest: the real entry point, then one page."""

from __future__ import annotations

from benchmarks.harness.server import ROOT

ENTRY = str(ROOT / "streamlit_app.py")


def entry_point_every_run() -> None:
    """Make every AppTest run go through streamlit_app.py, as every run on a real server does.

    AppTest resets `PagesManager.uses_pages_directory` before each run, and with a `pages/` folder
    beside the entry point Streamlit then runs the page file on its own (its old multipage mode):
    after `switch_page` the entry point (navigation, lecture mode, the sidebar, housekeeping) never
    ran. A real server leaves that mode for good at the first `st.navigation` (ui.state.
    ensure_entry_point). Here the PagesManager that AppTest makes leaves it at once."""
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.testing.v1 import app_test

    if getattr(app_test.PagesManager, "entry_point_every_run", False):
        return

    class NavigationPages(PagesManager):
        entry_point_every_run = True

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            PagesManager.uses_pages_directory = False

    app_test.PagesManager = NavigationPages


def open_app_test(page: str | None = None, *, query: dict[str, str] | None = None,
                  timeout: float = 60, state: dict | None = None):
    """Run the app (optionally with URL query params and session `state` set before its first
    run) and switch to `page` (e.g. 'pages/home.py'); returns the AppTest, ready for widget
    changes and `at.run()`."""
    from streamlit.testing.v1 import AppTest

    entry_point_every_run()
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
