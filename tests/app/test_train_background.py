"""AppTest of the Train page when a worker thread trains the run between the page's draws (what a
CUDA run does when not hosted; ATTENTION_LAB_BACKGROUND_TRAINING=1 makes a CPU run do it here):
the run advances between page runs, pauses, resumes, finishes, and stops for another page."""

from __future__ import annotations

import time

import pytest

from tests.app.conftest import ROOT, assert_no_exception
from tests.app.gpt_helpers import current, loss_rows, tiny_page
from tests.helpers import wait_for
from ui.live import WORKERS_KEY

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(autouse=True)
def in_background(monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_BACKGROUND_TRAINING", "1")


def worker_of(at):
    return at.session_state[WORKERS_KEY]["train.live"]


def test_the_worker_trains_between_page_runs_pauses_and_resumes():
    at = tiny_page()
    at.button(key="train.start").click().run()
    assert_no_exception(at)
    run, worker = current(at), worker_of(at)
    assert run.status == "running" and worker.run is run
    at_draw = run.step
    assert wait_for(lambda: run.step > at_draw + 5)  # no page run in between: the worker trained
    at.run()
    assert len(loss_rows(at)) > 0 and "step" in at.get("progress")[0].proto.text
    at.button(key="train.pause").click().run()
    assert run.status == "paused" and wait_for(lambda: not worker.alive, timeout=5)
    paused_at = run.step
    time.sleep(0.2)
    at.run()
    assert run.step == paused_at  # paused: nothing trains, in the worker or in the page
    at.button(key="train.resume").click().run()
    assert wait_for(lambda: run.step > paused_at)
    at.button(key="train.stop").click().run()
    assert wait_for(lambda: not worker.alive, timeout=5)
    assert run.status == "stopped" and worker.error is None
    assert_no_exception(at)


def test_a_run_finished_by_the_worker_ends_like_one_finished_in_ticks():
    at = tiny_page(max_steps="40")
    at.button(key="train.start").click().run()
    run = current(at)
    assert wait_for(lambda: run.done, timeout=60)
    at.run()  # the tick that finds the run finished reruns the page: the controls follow
    assert_no_exception(at)
    assert run.status == "done" and run.step == 40
    keys = {b.key for b in at.button}
    assert "train.pause" not in keys and "train.extend" in keys
    assert not worker_of(at).alive


def test_a_whole_page_run_stops_the_worker_and_the_train_page_lets_it_go_on():
    """streamlit_app.py calls stop_workers() at the start of every whole-page run, before the page
    runs. The call is made here on its own, so the worker can be seen stopped before the Train
    page's next tick lets it go on (the browser test checks a real page switch)."""
    from ui.live import stop_workers

    at = tiny_page()
    at.button(key="train.start").click().run()
    run, worker = current(at), worker_of(at)
    assert wait_for(lambda: run.step > 3)
    stop_workers(at.session_state)
    assert not worker.alive and not run.lock.locked()  # stopped between two chunks
    left_at = run.step
    time.sleep(0.2)
    assert run.step == left_at and run.status == "running"
    at.run()  # the Train page's next tick
    assert wait_for(lambda: run.step > left_at)  # it trains on
    at.button(key="train.stop").click().run()
    assert_no_exception(at)


def test_a_worker_that_breaks_pauses_the_run_with_its_message_and_resume_tries_again():
    """The GPU out of memory (or a bug) in the worker: the page says so, the run is paused with its
    model, and Resume trains on in a new worker."""
    at = tiny_page()
    at.button(key="train.start").click().run()
    run, worker = current(at), worker_of(at)
    assert wait_for(lambda: run.step > 2)

    def out_of_memory(*args, **kwargs):
        raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")

    run.trainer.train = out_of_memory  # the instance's attribute: the next chunk raises
    assert wait_for(lambda: worker.error is not None)
    broke_at = run.step
    at.run()
    assert_no_exception(at)
    assert run.status == "paused"
    assert any("out of memory" in e.value for e in at.error)
    assert "train.resume" in {b.key for b in at.button}
    del run.trainer.train  # the memory is free again
    at.button(key="train.resume").click().run()
    assert_no_exception(at)
    assert run.status == "running" and run.message == ""
    assert worker_of(at) is not worker  # a new worker
    assert wait_for(lambda: run.step > broke_at)
    at.run()
    assert not any("out of memory" in e.value for e in at.error)
    at.button(key="train.stop").click().run()


def test_the_entry_point_stops_the_workers_before_the_page_runs():
    source = (ROOT / "streamlit_app.py").read_text()
    assert source.index("live.stop_workers()") < source.index("page.run()")
