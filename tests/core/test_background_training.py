"""core.live_training.BackgroundTraining: a live run trained by a worker thread between the page's
draws (a GPU run with one viewer), and core.budget.background_training, which decides when."""

import sys
import threading
import time

import pytest

from core import budget, runs, train_settings
from tests.helpers import wait_for
from core.live_training import (BackgroundTraining, Outcome, SteppedTraining, WorkerSwitchInterval,
                                 DEFAULT_SWITCH_MS, _switch_interval_s)

pytestmark = pytest.mark.usefixtures("one_thread")

TINY = dict(context_size=8, n_layer=1, n_head=2, d_embed=16, d_ff=32, batch_size=16,
            max_steps=30, val_interval=10, warmup_steps=0, dropout=0.1)


class Countdown(SteppedTraining):
    """`left` steps to go, each taking `step_s`; `fail` raises something the protocol does not expect."""

    def __init__(self, steps: int, step_s: float = 0.0, fail: bool = False, busy: bool = False):
        self.left, self.history, self.step_s, self.fail, self.busy = steps, [], step_s, fail, busy
        self.lock = threading.Lock()
        self.threads: set[str] = set()

    @property
    def done(self) -> bool:
        return self.left == 0 or self.error is not None

    def advance(self, budget_s, slot=None, **kw) -> Outcome:
        with self.lock:
            return super().advance(budget_s, slot, **kw)

    def train_step(self) -> None:
        self.threads.add(threading.current_thread().name)
        if self.fail:
            raise RuntimeError("CUDA out of memory")
        if self.busy:  # Python work holding the GIL, as a small model's step does
            end = time.perf_counter() + self.step_s
            while time.perf_counter() < end:
                pass
        else:
            time.sleep(self.step_s)
        self.left -= 1
        self.history.append(self.left)


def test_the_worker_trains_the_run_to_its_end_off_the_calling_thread():
    run = Countdown(40, step_s=0.002)
    worker = BackgroundTraining(run, lambda: True)
    worker.beat()
    assert wait_for(lambda: run.done and not worker.alive)
    assert run.history == list(range(39, -1, -1)) and worker.steps == 40
    assert run.threads == {"live-training"}  # never the page's thread
    finished = worker.take_finished()
    assert finished is not None and finished.finished and finished.error is None
    assert worker.take_finished() is None  # handed over once
    worker.beat()  # a done run starts nothing
    assert not worker.alive


def test_pausing_stops_the_worker_and_a_beat_resumes_it():
    run = Countdown(10_000, step_s=0.001)
    active = {"on": True}
    worker = BackgroundTraining(run, lambda: active["on"])
    worker.beat()
    assert wait_for(lambda: worker.steps > 5)
    active["on"] = False  # the Pause button: the worker sees it between two chunks
    assert wait_for(lambda: not worker.alive, timeout=2)
    paused_at = len(run.history)
    time.sleep(0.1)
    assert len(run.history) == paused_at  # nothing trains while paused
    active["on"] = True
    worker.beat()
    assert wait_for(lambda: len(run.history) > paused_at)
    worker.stop()
    assert not worker.alive


def test_without_beats_the_worker_stops_as_a_closed_tab_stops_training():
    run = Countdown(100_000, step_s=0.001)
    worker = BackgroundTraining(run, lambda: True, idle_stop_s=0.2)
    worker.beat()
    assert wait_for(lambda: not worker.alive, timeout=3)
    assert 0 < len(run.history) < 100_000 and not run.done


def test_stop_waits_for_the_chunk_in_progress_so_the_weights_are_left_whole():
    run = Countdown(100_000, step_s=0.01)
    worker = BackgroundTraining(run, lambda: True, chunk_s=0.2)
    worker.beat()
    assert wait_for(lambda: worker.steps > 0 or run.lock.locked())
    worker.stop()
    assert not worker.alive and not run.lock.locked()
    at_stop = len(run.history)
    time.sleep(0.05)
    assert len(run.history) == at_stop


def test_an_unexpected_error_is_kept_for_the_page_and_not_retried():
    run = Countdown(10, fail=True)
    worker = BackgroundTraining(run, lambda: True)
    worker.beat()
    assert wait_for(lambda: worker.error is not None)
    assert "RuntimeError" in worker.error and "out of memory" in worker.error
    assert wait_for(lambda: not worker.alive)
    finished = worker.take_finished()
    assert finished.finished and finished.error == worker.error  # the page's tick reruns the page
    worker.beat()
    assert not worker.alive  # a broken run is not started again and again


def test_on_error_hears_of_the_error_from_the_worker_before_the_page_does():
    heard = []
    run = Countdown(10, fail=True)
    worker = BackgroundTraining(run, lambda: True,
                                on_error=lambda message: heard.append((message, threading.current_thread().name)))
    worker.beat()
    assert wait_for(lambda: worker.error is not None)
    assert heard == [(worker.error, "live-training")] and "out of memory" in worker.error


def test_a_failing_on_error_is_added_to_the_message_not_lost():
    def broken_hook(message):
        raise KeyError("run")

    worker = BackgroundTraining(Countdown(10, fail=True), lambda: True, on_error=broken_hook)
    worker.beat()
    assert wait_for(lambda: worker.error is not None)
    assert "out of memory" in worker.error and "KeyError" in worker.error


def test_a_busy_slot_is_retried_without_spinning():
    slots = budget.TrainingSlots(1)
    run = Countdown(20)
    worker = BackgroundTraining(run, lambda: True, lambda: slots.slot("me", timeout=0.001))
    with slots.slot("someone-else"):
        worker.beat()
        time.sleep(0.2)
        assert run.history == [] and worker.alive
    assert wait_for(lambda: run.done)


def test_a_names_gpt_run_trained_by_the_worker_equals_one_trained_in_ticks():
    """When it trains (page ticks or a worker) never changes what it computes."""
    in_ticks = runs.RunBook(owner="a").create(train_settings.TrainSettings(**TINY))
    runs.start(in_ticks)
    while in_ticks.active:
        in_ticks.advance(0.05)
    by_worker = runs.RunBook(owner="b").create(train_settings.TrainSettings(**TINY))
    runs.start(by_worker)
    worker = BackgroundTraining(by_worker, lambda: by_worker.active)
    worker.beat()
    assert wait_for(lambda: by_worker.done and not worker.alive, timeout=60)
    assert worker.take_finished().finished and by_worker.status == "done"
    assert by_worker.history["train_loss"] == in_ticks.history["train_loss"]
    assert by_worker.history["val_loss"] == in_ticks.history["val_loss"]
    assert by_worker.samples  # refreshed at the last step, as in the page's ticks


@pytest.mark.parametrize("setting, device, expected", [
    ("auto", "cuda", True), ("auto", "cpu", False), ("auto", "mps", False),
    ("1", "cpu", True), ("on", "mps", True), ("0", "cuda", False), ("off", "cuda", False),
])
def test_background_training_is_for_gpu_runs_unless_set(setting, device, expected):
    local = budget.load_limits()
    local = type(local)(**{**local.__dict__, "hosted": False})
    assert budget.background_training(device, local, setting=setting) is expected
    hosted = type(local)(**{**local.__dict__, "hosted": True})
    assert budget.background_training(device, hosted, setting=setting) is False  # never in a class


def test_the_page_gets_the_lock_between_two_chunks_however_busy_the_worker():
    """A plain lock let the worker take the run back chunk after chunk while the page waited."""
    run = Countdown(1_000_000, step_s=0.001, busy=True)
    worker = BackgroundTraining(run, lambda: True, chunk_s=0.05)
    worker.beat()
    assert wait_for(lambda: worker.steps > 0)
    waits = []
    for _ in range(10):
        asked = time.perf_counter()
        with worker.drawing():
            waits.append(time.perf_counter() - asked)
            at = len(run.history)
            time.sleep(0.01)
            assert len(run.history) == at  # nothing trains while the page reads
        worker.beat()
        time.sleep(0.02)
    worker.stop()
    assert max(waits) < 0.05 * 2 + 0.05, waits  # at most the chunk in progress (with slack for a busy machine)


def test_a_worker_shortens_the_switch_interval_while_it_trains_and_puts_it_back():
    """While a worker trains, a script thread's Python hands the GIL over sooner (WORKER_SWITCH)."""
    from core.live_training import WORKER_SWITCH

    before = sys.getswitchinterval()
    seen = []
    run = Countdown(30, step_s=0.002)
    original = run.train_step

    def noting_step():
        seen.append(sys.getswitchinterval())
        original()

    run.train_step = noting_step
    worker = BackgroundTraining(run, lambda: True)
    worker.beat()
    assert wait_for(lambda: run.done and not worker.alive)
    assert seen and all(value == pytest.approx(min(WORKER_SWITCH.seconds, before)) for value in seen)
    assert sys.getswitchinterval() == before


def test_the_switch_interval_comes_back_only_when_the_last_of_two_workers_stops():
    switch = WorkerSwitchInterval(0.0001)
    before = sys.getswitchinterval()
    with switch:
        with switch:
            assert sys.getswitchinterval() == pytest.approx(0.0001)
        assert sys.getswitchinterval() == pytest.approx(0.0001)  # the other worker still trains
    assert sys.getswitchinterval() == before
    with WorkerSwitchInterval(None):  # "off": Python's own interval
        assert sys.getswitchinterval() == before


@pytest.mark.parametrize("value, expected", [("0.2", 0.0002), ("5", 0.005), ("off", None), ("0", None), ("0.0", None), ("", None)])
def test_the_switch_interval_setting(monkeypatch, value, expected):
    monkeypatch.setenv("ATTENTION_LAB_WORKER_SWITCH_MS", value)
    assert _switch_interval_s() == (pytest.approx(expected) if expected is not None else None)


@pytest.mark.parametrize("value", ["fast", "-1", "nan", "500"])
def test_a_bad_switch_interval_setting_is_logged_and_the_default_used(monkeypatch, caplog, value):
    monkeypatch.setenv("ATTENTION_LAB_WORKER_SWITCH_MS", value)
    assert _switch_interval_s() == pytest.approx(DEFAULT_SWITCH_MS / 1000)
    assert "ATTENTION_LAB_WORKER_SWITCH_MS" in caplog.text and repr(value) in caplog.text


def test_the_chart_copies_the_history_under_the_lock_and_builds_its_rows_after():
    """The worker (and its GPU) waits only for the list copies, not for pandas."""
    run = runs.RunBook(owner="c").create(train_settings.TrainSettings(**TINY))
    runs.start(run)
    run.advance(None, n_steps=12)
    held = []

    class NotingLock:
        def __enter__(self):
            held.append("in")

        def __exit__(self, *exc):
            held.append("out")

    original = runs.trend  # the smoothed line: the rows' pandas work
    try:
        runs.trend = lambda values: (held.append("smooth"), original(values))[1]
        frame = runs.run_frame(run, lock=NotingLock())
    finally:
        runs.trend = original
    assert held == ["in", "out", "smooth"]
    assert frame[frame.kind == runs.KIND_RAW]["step"].iloc[-1] == 12
    assert runs.run_frame(run, lock=NotingLock()) is frame and held[-2:] == ["in", "out"]  # cached
