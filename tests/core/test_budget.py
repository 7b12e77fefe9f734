"""core/budget.py: run-size limits and training slots (the chart tests moved to test_viz.py)."""

import threading
import time

import pytest

from core import budget


def test_run_size_caps():
    limits = budget.Limits(hosted=True, torch_threads=1, max_concurrent=1, max_steps=100,
                           max_params=1000)
    assert budget.check_run_size(999, 100, limits) == []
    problems = budget.check_run_size(5000, 500, limits)
    assert len(problems) == 2 and "5,000 parameters" in problems[0]


def test_slots_limit_concurrency_and_queue_in_order():
    slots = budget.TrainingSlots(1)
    inside, peak = [], []
    lock = threading.Lock()

    def work(owner):
        for _ in range(50):
            with slots.slot(owner, timeout=2.0) as got:
                if got:
                    with lock:
                        inside.append(owner)
                        peak.append(len(inside))
                    time.sleep(0.002)
                    with lock:
                        inside.remove(owner)
                    return True
        return False

    threads = [threading.Thread(target=work, args=(f"s{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert max(peak) == 1 and len(peak) == 4


def test_slot_busy_reports_position():
    slots = budget.TrainingSlots(1)
    with slots.slot("a") as got_a:
        assert got_a
        with slots.slot("b", timeout=0.05) as got_b:
            assert not got_b
        assert slots.position("b") == 0  # b is first in line
        with slots.slot("c", timeout=0.05) as got_c:
            assert not got_c
        assert slots.position("c") == 1
    slots.leave("b")
    assert slots.position("c") == 0



TICK = 0.05  # the live fragment's tick (1 s hosted), scaled down 20x: ask, wait half a tick at most, train 0.9 tick


def _ticking_runs(slots, starts: dict[str, float], until: float) -> dict[str, list[float]]:
    """Runs that tick like the live fragment (one request per tick, a 0.9-tick slice when granted),
    each starting at starts[run] seconds; returns the times at which each one trained a slice."""
    t0 = time.monotonic()
    slices = {run: [] for run in starts}

    def work(run):
        time.sleep(starts[run])
        while time.monotonic() - t0 < until:
            tick_start = time.monotonic()
            with slots.slot(run, timeout=TICK / 2) as got:
                if got:
                    slices[run].append(tick_start - t0)
                    time.sleep(0.9 * TICK)
            time.sleep(max(0.0, TICK - (time.monotonic() - tick_start)) + 0.002)

    threads = [threading.Thread(target=work, args=(run,)) for run in starts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return slices


def _scaled_slots() -> budget.TrainingSlots:
    # as hosted: one slot, training at most 30% of the time; these slices sleep, so their cost is
    # their wall time (a slice's CPU time is tested below)
    slots = budget.TrainingSlots(1, share=0.3, work_clock=time.monotonic)
    slots.USAGE_HALF_LIFE_S, slots.ACTIVE_S, slots.GRACE_S = 0.5, 3 * TICK, 0.4 * TICK
    return slots


def test_every_run_gets_a_fair_share_whoever_started_first():
    starts = {f"run{i}": 0.2 * i for i in range(6)}  # run0 alone first, run5 a second later
    slices = _ticking_runs(_scaled_slots(), starts, until=8.0)
    after_all_started = {run: sum(1 for t in times if t > 1.5) for run, times in slices.items()}
    fastest = max(after_all_started.values())
    assert fastest >= 4
    assert min(after_all_started.values()) >= 0.5 * fastest, after_all_started


def test_a_late_run_gets_its_share_at_once_without_shutting_the_others_out():
    starts = {"early1": 0.0, "early2": 0.0, "late": 2.0}
    slices = _ticking_runs(_scaled_slots(), starts, until=4.0)
    window = {run: sum(1 for t in times if t > 2.0) for run, times in slices.items()}
    assert max(window.values()) >= 3
    assert window["late"] >= 0.5 * max(window.values()), window
    assert min(window["early1"], window["early2"]) >= 0.5 * max(window.values()), window


def _busy(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_a_slice_costs_its_owner_the_cpu_time_it_had_not_its_wall_time():
    slots = budget.TrainingSlots(1)  # the default measure: the training thread's CPU time
    for owner in ("busy", "starved"):  # both in line (a newcomer starts level with the others)
        with slots.slot(owner):
            pass
    with slots.slot("busy") as got:
        assert got
        _busy(0.15)  # had the core for its whole slice
    with slots.slot("starved") as got:
        assert got
        time.sleep(0.15)  # the same wall time, but other threads had the core
    # by the wall clock both cost 0.15 s and "busy" (longest ago) would go first
    assert slots.position("starved") == 0 and slots.position("busy") == 1


def test_runs_whose_slices_get_less_of_the_core_get_more_slices():
    """Two runs tick alike; every slice lasts the same wall time, but one run's slices do a third of
    the work (the core was taken by page runs meanwhile). Each gets about the same work done."""
    done = {"full": 0.0, "third": 0.0}
    local = threading.local()
    slots = budget.TrainingSlots(1, work_clock=lambda: getattr(local, "work", 0.0))
    t0 = time.monotonic()

    def work(run: str, per_slice: float) -> None:
        while time.monotonic() - t0 < 3.0:
            with slots.slot(run, timeout=TICK / 2) as got:
                if got:
                    time.sleep(0.9 * TICK)
                    local.work = getattr(local, "work", 0.0) + per_slice
                    done[run] += per_slice
            time.sleep(0.1 * TICK)

    threads = [threading.Thread(target=work, args=a) for a in (("full", 1.0), ("third", 1 / 3))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert done["full"] >= 5
    # charged by wall time the slices alternate and "third" does a third of the work
    assert done["third"] >= 0.7 * done["full"], done


class _Clocks:
    """A wall clock and a process CPU clock the test moves by hand."""

    def __init__(self) -> None:
        self.wall, self.cpu = 0.0, 0.0

    def run(self, wall_s: float, cpu_s: float) -> None:
        self.wall += wall_s
        self.cpu += cpu_s


def test_training_gives_way_to_a_busy_server_down_to_its_floor():
    clocks = _Clocks()
    load = budget.ServerLoad(ceiling=0.55, floor=0.08, window_s=20.0,
                             clock=lambda: clocks.wall, process_clock=lambda: clocks.cpu)
    assert load.allowed(0.25) == 0.25  # nothing measured yet
    # a quiet class: the pages use 0.2 of the core, training 0.25 of it (0.45 in all)
    for _ in range(10):
        clocks.run(2.0, 2.0 * 0.45)
        load.note_training(2.0 * 0.25)
    assert load.others() == pytest.approx(0.2)
    assert load.allowed(0.25) == 0.25  # 0.2 + 0.25 is under the ceiling
    # the class gets busy: the pages alone use 0.4, so training may have 0.15
    for _ in range(10):
        clocks.run(2.0, 2.0 * 0.6)
        load.note_training(2.0 * 0.2)
    assert load.others() == pytest.approx(0.4)  # the last 20 s only; training's own CPU left out
    assert load.allowed(0.25) == pytest.approx(0.15)
    # the pages alone are over the ceiling: training keeps its floor, every run still advances
    for _ in range(10):
        clocks.run(2.0, 2.0 * 0.7)
        load.note_training(2.0 * 0.05)
    assert load.allowed(0.25) == pytest.approx(0.08)
    assert budget.ServerLoad(ceiling=1.0).allowed(0.25) == 0.25  # off


def test_a_busy_server_rests_the_slot_longer():
    clocks = _Clocks()
    load = budget.ServerLoad(ceiling=0.55, window_s=20.0, clock=lambda: clocks.wall,
                             process_clock=lambda: clocks.cpu)
    slots = budget.TrainingSlots(1, share=0.25, load=load, work_clock=lambda: 0.0)

    def rest_after_a_slice(slice_s: float) -> float:
        slots._next_free = 0.0
        with slots._lock:
            slots._rest_after(slice_s)
        return slots._next_free - time.monotonic()

    assert rest_after_a_slice(0.4) == pytest.approx(0.4 * 3, abs=0.05)  # 25%: rest 3x the slice
    assert slots.giving_way() is None
    clocks.run(10.0, 10.0 * 0.5)  # the pages use half the core: training may have 0.05 -> floor
    slots._next_free = 0.0
    with slots.slot("a") as got:  # the slice's end notes its training time and reads the load
        assert got
    assert load.others() == pytest.approx(0.5)
    assert rest_after_a_slice(0.4) == pytest.approx(0.4 * (1 / budget.TRAIN_FLOOR - 1), abs=0.05)
    assert slots.giving_way() == budget.TRAIN_FLOOR


def test_the_cpu_ceiling_is_on_when_hosted(monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_HOSTED", "1")
    monkeypatch.delenv("ATTENTION_LAB_CPU_CEILING", raising=False)
    assert budget.load_limits().cpu_ceiling == budget.HOSTED_CPU_CEILING
    monkeypatch.setenv("ATTENTION_LAB_CPU_CEILING", "0.7")
    assert budget.load_limits().cpu_ceiling == 0.7
    monkeypatch.setenv("ATTENTION_LAB_HOSTED", "0")
    monkeypatch.delenv("ATTENTION_LAB_CPU_CEILING")
    assert budget.load_limits().cpu_ceiling == 1.0


def test_sharing_counts_the_other_runs_that_asked_lately():
    slots = budget.TrainingSlots(1)
    for owner in ("a", "b", "c"):
        with slots.slot(owner, timeout=0.0):
            pass
    assert slots.sharing("a") == 2 and slots.sharing("new") == 3
    slots.leave("b")
    assert slots.sharing("a") == 1


def test_train_share_rests_the_slot_after_each_slice():
    slots = budget.TrainingSlots(1, share=0.5)  # a slice of d seconds is followed by d of rest
    with slots.slot("a") as got:
        assert got
        time.sleep(0.2)
    with slots.slot("b", timeout=0.05) as got:
        assert not got  # still resting: the core is left to page reruns
    t0 = time.monotonic()
    with slots.slot("b", timeout=1.0) as got:
        waited = time.monotonic() - t0
        assert got and 0.05 < waited < 0.5  # granted when the rest is over, not at the timeout


def test_full_share_never_rests():
    slots = budget.TrainingSlots(1, share=1.0)
    with slots.slot("a") as got:
        assert got
        time.sleep(0.05)
    with slots.slot("b", timeout=0.0) as got:
        assert got


def test_training_waits_while_the_pages_are_busy_and_goes_on_when_they_are_through():
    pages = {"now": 3}
    slots = budget.TrainingSlots(1, share=1.0, busy_page_runs=3, page_runs=lambda: pages["now"])
    with slots.slot("a", timeout=0.1) as got:
        assert not got  # three page runs in progress: the slice waits, then skips this tick
    threading.Timer(0.1, lambda: pages.update(now=2)).start()  # the burst is through
    t0 = time.monotonic()
    with slots.slot("a", timeout=1.0) as got:
        waited = time.monotonic() - t0
        assert got and 0.05 < waited < 0.5  # granted soon after, not at the timeout


def test_the_page_run_count_follows_the_runs_in_progress():
    runs = budget.PageRuns()
    with runs.running():
        with runs.running():
            assert runs.now == 2
        assert runs.now == 1
    try:
        with runs.running():
            raise RuntimeError("a page that fails still ends its run")
    except RuntimeError:
        pass
    assert runs.now == 0


def test_page_runs_take_turns_first_come_first_served_and_waiting_ones_count():
    runs = budget.PageRuns(at_once=2)
    inside, peak, order = [0], [0], []
    lock = threading.Lock()
    release = threading.Event()

    def page(name):
        with runs.running():
            with lock:
                inside[0] += 1
                peak[0] = max(peak[0], inside[0])
                order.append(name)
            release.wait(10.0)
            with lock:
                inside[0] -= 1

    threads = []
    for i in range(6):
        threads.append(threading.Thread(target=page, args=(i,)))
        threads[-1].start()
        deadline = time.monotonic() + 10.0
        while runs.now < i + 1 and time.monotonic() < deadline:  # arrive in order 0..5
            time.sleep(0.005)
        time.sleep(0.05)  # from counted to waiting at the gate is a few bytecodes
    assert runs.now == 6  # the four waiting count as busy too (training waits for them)
    with lock:
        assert inside[0] == 2 and order == [0, 1]  # only two run; the rest wait their turn
    release.set()
    for t in threads:
        t.join(10.0)
    assert peak[0] == 2 and order == [0, 1, 2, 3, 4, 5] and runs.now == 0


def test_a_clicked_page_run_goes_before_waiting_background_ones():
    """A follow move (background) waits behind a student's click that arrived later; among
    themselves each kind keeps its arrival order."""
    runs = budget.PageRuns(at_once=1)
    order, release = [], threading.Event()
    lock = threading.Lock()

    def page(name, background):
        with runs.running(background=background):
            with lock:
                order.append(name)
            if name == "first":
                release.wait(10.0)

    def arrive(name, background=False):
        count = runs.now
        thread = threading.Thread(target=page, args=(name, background))
        thread.start()
        deadline = time.monotonic() + 10.0
        while runs.now < count + 1 and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(0.05)  # from counted to waiting at the gate is a few bytecodes
        return thread

    threads = [arrive("first"), arrive("follow 1", True), arrive("follow 2", True),
               arrive("click 1"), arrive("click 2")]
    assert order == ["first"]
    release.set()
    for t in threads:
        t.join(10.0)
    assert order == ["first", "click 1", "click 2", "follow 1", "follow 2"] and runs.now == 0


def test_a_page_that_fails_gives_its_turn_back():
    runs = budget.PageRuns(at_once=1)
    with pytest.raises(RuntimeError), runs.running():
        raise RuntimeError("a page that fails (or st.rerun, st.switch_page) still ends its turn")
    done = threading.Event()
    threading.Thread(target=lambda: (runs.running().__enter__(), done.set()), daemon=True).start()
    assert done.wait(1.0)  # the next run gets the turn


def test_a_run_that_continues_one_that_ended_early_keeps_its_turn():
    runs = budget.PageRuns(at_once=1, handoff_s=5.0)
    holder_in, holder_out = threading.Event(), threading.Event()

    def holder():  # another session's long run holds the only turn
        with runs.running():
            holder_in.set()
            holder_out.wait(10.0)

    threading.Thread(target=holder, daemon=True).start()
    assert holder_in.wait(5.0)
    got_in = threading.Event()

    def script_thread():
        # this session's run ended early (st.rerun, st.switch_page) ...
        runs._ended_early.at = time.monotonic()
        # ... so the run that continues it goes in at once, not behind the holder
        with runs.running():
            got_in.set()

    threading.Thread(target=script_thread, daemon=True).start()
    assert got_in.wait(2.0)
    # a run long after (a new interaction) queues as usual
    late = threading.Event()

    def later_thread():
        runs._ended_early.at = time.monotonic() - 10.0
        with runs.running():
            late.set()

    threading.Thread(target=later_thread, daemon=True).start()
    assert not late.wait(0.3)
    holder_out.set()
    assert late.wait(5.0)


def test_a_gated_run_that_ends_early_hands_over_to_the_next_run_on_its_thread():
    runs = budget.PageRuns(at_once=1)
    with pytest.raises(RuntimeError), runs.running():
        raise RuntimeError("ended early for a rerun")
    assert runs._handed_over()  # the same thread, at once
    assert not runs._handed_over()  # only once
    with runs.running():
        pass  # ended normally
    assert not runs._handed_over()


def test_page_runs_take_turns_only_when_hosted(monkeypatch):
    monkeypatch.delenv("ATTENTION_LAB_PAGE_RUNS_AT_ONCE", raising=False)
    monkeypatch.delenv("ATTENTION_LAB_HOSTED", raising=False)
    assert budget.load_limits().page_runs_at_once == 0  # a lecturer's own machine: no limit
    monkeypatch.setenv("ATTENTION_LAB_HOSTED", "1")
    assert budget.load_limits().page_runs_at_once == budget.HOSTED_PAGE_RUNS_AT_ONCE == 2
    monkeypatch.setenv("ATTENTION_LAB_PAGE_RUNS_AT_ONCE", "0")
    assert budget.load_limits().page_runs_at_once == 0
    monkeypatch.setenv("ATTENTION_LAB_PAGE_RUNS_AT_ONCE", "five")
    assert budget.load_limits().page_runs_at_once == 2


def test_pages_come_first_only_when_hosted(monkeypatch):
    monkeypatch.delenv("ATTENTION_LAB_BUSY_PAGE_RUNS", raising=False)
    monkeypatch.delenv("ATTENTION_LAB_HOSTED", raising=False)
    assert budget.load_limits().busy_page_runs == 0  # a lecturer's own machine: training never waits
    monkeypatch.setenv("ATTENTION_LAB_HOSTED", "1")
    assert budget.load_limits().busy_page_runs == budget.HOSTED_BUSY_PAGE_RUNS == 3
    monkeypatch.setenv("ATTENTION_LAB_BUSY_PAGE_RUNS", "0")
    assert budget.load_limits().busy_page_runs == 0


def test_train_share_is_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_HOSTED", "1")
    assert budget.load_limits().train_share == budget.HOSTED_TRAIN_SHARE == 0.25
    monkeypatch.setenv("ATTENTION_LAB_TRAIN_SHARE", "0.5")
    assert budget.load_limits().train_share == 0.5
    for bad in ("nan", "x"):
        monkeypatch.setenv("ATTENTION_LAB_TRAIN_SHARE", bad)
        assert budget.load_limits().train_share == 0.25
    monkeypatch.setenv("ATTENTION_LAB_TRAIN_SHARE", "7")
    assert budget.load_limits().train_share == 1.0
    monkeypatch.delenv("ATTENTION_LAB_HOSTED")
    monkeypatch.delenv("ATTENTION_LAB_TRAIN_SHARE")
    assert budget.load_limits().train_share == 1.0


def test_torch_threads_leave_a_core_free():
    """Two torch threads on two cores collapse as soon as anything else runs (page_switch.py)."""
    assert budget.default_torch_threads(hosted=False, cores=2) == 1
    assert budget.default_torch_threads(hosted=False, cores=1) == 1
    assert budget.default_torch_threads(hosted=False, cores=4) == 2
    assert budget.default_torch_threads(hosted=False, cores=64) == 2
    assert budget.default_torch_threads(hosted=True, cores=64) == 1
    assert 1 <= budget.usable_cores() <= (__import__("os").cpu_count() or 1)
