"""Shared test setup: thread settings before torch is imported, the `one_thread` fixture, and
AppTest made to run streamlit_app.py on every run, as a real server does.

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


# Every AppTest run goes through streamlit_app.py, as on a real server, in every test module: the
# tests/app harness did this only once one of its tests had run, so a class test run alone saw page
# reruns without the entry (no sidebar, no follow panel) and the same test in the full suite saw
# them with it; CI once failed on that difference (benchmarks.harness.apptest says why it is needed).
from benchmarks.harness.apptest import entry_point_every_run  # noqa: E402

entry_point_every_run()


@pytest.fixture(autouse=True)
def _no_desks_left_behind():
    """AppTest sessions file their runs on the server's desks (server.desks, for a reload); they
    would keep up to MAX_PARKED test sessions' models alive for the rest of the suite."""
    yield
    from server.desks import DESKS

    DESKS.clear()
