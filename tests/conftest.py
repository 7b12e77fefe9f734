"""Shared test setup: thread settings before torch is imported, the `one_thread` fixture, AppTest
made to run streamlit_app.py on every run, as a real server does, and the groups the tests run in
for a run on two pytest-xdist workers (`python -m pytest -n 2 --dist loadgroup`).

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


# The suite runs one test at a time (pytest.ini; on CI two workers were slower). Run on two workers
# (`python -m pytest -n 2 --dist loadgroup`, on a machine with two free cores), every test that starts
# a real server or Chromium goes to one group, so one worker runs them one after another, in order,
# against one shared server and browser (two servers and two browsers on two cores would slow each
# other's timeouts); the other worker runs the CPU-bound tests meanwhile (the browser tests leave
# about 40% of the two cores idle, waiting on the server and the browser). Every other test is
# grouped by its module, so a module's fixtures (a trained model, a database server) are built once.
SERVER_GROUP = "server-and-browser"
SERVER_MODULES = ("test_follow_push_live.py",)  # its followers must land within 2 s: not beside a browser
# (tests/test_server_live.py starts its own server and browser and asserts no timing: it runs beside)


def xdist_group_of(path) -> str:
    """The xdist group of a test in the file at `path` (a pathlib.Path)."""
    if "browser" in path.parent.name or path.name in SERVER_MODULES:
        return SERVER_GROUP
    return f"module:{path.parent.name}/{path.name}"


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups into the test ids
def pytest_collection_modifyitems(config, items):
    for item in items:
        item.add_marker(pytest.mark.xdist_group(xdist_group_of(item.path)))


@pytest.hookimpl(trylast=True)  # after the durations and the short summary: the last lines CI shows
def pytest_terminal_summary(terminalreporter):
    """The machine the suite ran on and the CPU time it took, in the log's tail (CI shows the tail):
    whether a slow run was a slow machine, a busy one, or the tests."""
    try:  # Linux and macOS; the line is left out where these calls do not exist (Windows)
        import resource

        own = resource.getrusage(resource.RUSAGE_SELF)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except (ImportError, AttributeError, OSError):
        return
    cpu_s = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()  # not on macOS
    terminalreporter.write_line(
        f"machine: {usable} CPUs usable of {os.cpu_count()}; load average {load}; CPU time of pytest "
        f"and its finished children: {cpu_s:.0f} s")
