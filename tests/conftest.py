"""Shared test setup: thread settings before torch is imported, the `one_thread` fixture, and
AppTest made to run streamlit_app.py on every run, as a real server does (`_every_run_from_the_entry`).

Readers of AppTest output live in `tests/helpers.py`; page-family helpers in `tests/app/*_helpers.py`.
"""

import os

os.environ.setdefault("ATTENTION_LAB_TORCH_THREADS", "2")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch is imported (see streamlit_app.py)
os.environ.setdefault("GOMP_SPINCOUNT", "30000")

import pytest


@pytest.fixture
def one_thread(monkeypatch):
    """One torch thread, also for whatever the app configures on each run: tiny models gain nothing
    from a second thread, and on a shared 2-core machine two OpenMP threads wait on each other
    (~10x slower). Modules use it with `pytestmark = pytest.mark.usefixtures("one_thread")`."""
    import torch

    from core import budget

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    monkeypatch.setattr(budget, "configure_torch_threads", lambda *a, **k: torch.set_num_threads(1))
    yield
    torch.set_num_threads(before)


def _every_run_from_the_entry() -> None:
    """Streamlit 1.67's AppTest resets `PagesManager.uses_pages_directory` before each run, and an
    app with a pages/ folder then has its second and later runs execute the page file alone: no
    streamlit_app.py, so no sidebar, no follow-the-lecturer panel, no lecturer's publishing. A
    real server always runs the entry (st.navigation set the flag to False on the first run). The
    flag is one class attribute shared by the whole process, and in one CI run a test ran with
    the entry where it runs without it alone, and failed. Here it is False for every AppTest run."""
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.testing.v1 import app_test

    class EntryPagesManager(PagesManager):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            PagesManager.uses_pages_directory = False  # what st.navigation sets on a server

    if getattr(app_test, "PagesManager", None) is PagesManager:
        app_test.PagesManager = EntryPagesManager


_every_run_from_the_entry()
