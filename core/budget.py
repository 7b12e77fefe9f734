"""Per-process budgets: torch threads, caps on training runs, and a limit on concurrent training.

One Streamlit server holds every session of a class in one process. These limits keep it fair:
torch gets a fixed small thread count (more threads do not speed up tiny models and would let one
session starve the others), training runs are capped in size and length when hosted, and only a
few sessions may run a training slice at the same moment; the others wait their turn and are told
their place in the queue.

Settings (environment variables, read once at import):
- ATTENTION_LAB_TORCH_THREADS     threads per torch op (default: half the usable cores, at most 2, at
                                  least 1; so 1 on a 2-core machine, and 1 when hosted)
- ATTENTION_LAB_MAX_CONCURRENT    training slices running at once (default 2, hosted 1)
- ATTENTION_LAB_HOSTED            "1" applies the hosted caps below (default off)
- ATTENTION_LAB_MAX_STEPS         cap on steps of one run (default 20000, hosted 3000)
- ATTENTION_LAB_MAX_PARAMS        cap on model parameters (default 5_000_000, hosted 400_000)
- ATTENTION_LAB_TRAIN_SHARE       most of the wall time training slices may take together, per slot
                                  (default 1.0 = no limit; hosted 0.25)
- ATTENTION_LAB_CPU_CEILING       of one core, the most the server should use: while the rest of the
                                  server (pages, sessions) uses more than the ceiling minus the
                                  training share, training rests longer, down to ATTENTION_LAB_TRAIN_FLOOR
                                  (default 1.0 = off; hosted 0.55; see ServerLoad)
- ATTENTION_LAB_TRAIN_FLOOR       the least share training keeps however busy the pages are
                                  (default and hosted 0.08)
- ATTENTION_LAB_BUSY_PAGE_RUNS    training slices wait while this many page runs are in progress
                                  (default 0 = never; hosted 3)
- ATTENTION_LAB_PAGE_RUNS_AT_ONCE whole-page runs at the same moment, the rest wait their turn
                                  (default 0 = no limit; hosted 2; see PageRuns)
- ATTENTION_LAB_BACKGROUND_TRAINING "auto" (default): a run on a CUDA GPU trains in a worker thread
                                  while its page draws (core.live_training.BackgroundTraining);
                                  "1": every device; "0": never. Never when hosted.
                                  (ATTENTION_LAB_WORKER_SWITCH_MS, the GIL hand-over while such a
                                  worker trains, is read by core.live_training.)

Why a share: benchmarks/student_sim.py with the server on ONE core (Community Cloud's size) showed
that K trainers keep the single slot busy back to back (each tick trained a 0.9 s slice), so every
page rerun of the other students shared the core (and the GIL) with training all the time. After
a slice of d seconds the slot stays closed for d * (1 / share - 1) seconds: with share 0.25,
training takes at most 25% of the core and page reruns get the rest; the trainers still all
advance, in turn, more slowly. 0.25, not 0.3: a 10-minute class of 60 (6 training) then used 0.60
of the server's core instead of 0.63 (issue 24's target: at most 0.6), for ~14% fewer steps per
trainer (docs/HOSTING.md, 2026-11-25).

Why at most half the cores: a torch op split over 2 threads waits at its end for the slower of
them. On a 2-core machine, as soon as anything else wants a core (the browser drawing the chart,
another session's rerun, sampling on another page), one of the two threads is descheduled and every
op waits for it. benchmarks/page_switch.py traced the "training crawls after a page switch" report
to this: the quick demo at 2 threads fell to 3-6 steps/s whenever another process was busy (38-58
at 1 thread in the same conditions), and headless with one core kept busy by another process, 2.7
steps/s at 2 threads against 23-33 at 1. On an idle machine the quick demo is no faster at 2.

Training is not given a lower thread priority (a Linux nice value per thread), though it was tried:
the training thread holds Python's GIL for much of a small model's step, so a deprioritised holder
can make every session of the server wait (priority inversion), and in benchmarks/classroom_load.py
it brought nothing measurable (first renders 69-90 s with training at nice 10 or 19, 87 s without;
the browsers sharing the machine were the bottleneck). Fairness comes from the slot limit (one
slice at a time when hosted, so a core stays free for page reruns) and one torch thread per slice.
"""

from __future__ import annotations

import collections
import contextlib
import math
import os
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterator


def _env_int(name: str, default: int, least: int = 1) -> int:
    try:
        return max(least, int(os.environ.get(name, default)))
    except ValueError:
        return default


@dataclass(frozen=True)
class Limits:
    """Caps applied to every training run in this process."""

    hosted: bool          # running for a class on shared hardware
    torch_threads: int    # threads per torch op
    max_concurrent: int   # training slices that may run at the same moment
    max_steps: int        # longest run, in optimisation steps
    max_params: int       # largest model, in parameters
    tick_s: float = 0.5   # the Train page redraws (and trains a slice) this often while a run trains
    train_share: float = 1.0  # most of the wall time training may take per slot (1.0 = no limit)
    cpu_ceiling: float = 1.0  # the server's most CPU (of one core) before training gives way (1.0 = off)
    train_floor: float = 0.08  # the least share training keeps when it gives way
    busy_page_runs: int = 0  # training waits while this many page runs are in progress (0 = never)
    page_runs_at_once: int = 0  # whole-page runs that may run at the same moment (0 = no limit)


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity: taskset, a container's cpuset)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


def default_torch_threads(hosted: bool, cores: int | None = None) -> int:
    """1 when hosted; else half the usable cores, at most 2 (see the module docstring)."""
    if hosted:
        return 1
    cores = usable_cores() if cores is None else cores
    return max(1, min(2, cores // 2))


def load_limits() -> Limits:
    hosted = os.environ.get("ATTENTION_LAB_HOSTED", "0") == "1"
    return Limits(
        hosted=hosted,
        torch_threads=_env_int("ATTENTION_LAB_TORCH_THREADS", default_torch_threads(hosted)),
        # hosted: one training slice at a time, so a core is always left for page reruns
        max_concurrent=_env_int("ATTENTION_LAB_MAX_CONCURRENT", 1 if hosted else 2),
        max_steps=_env_int("ATTENTION_LAB_MAX_STEPS", 3000 if hosted else 20000),
        max_params=_env_int("ATTENTION_LAB_MAX_PARAMS", 400_000 if hosted else 5_000_000),
        # hosted: a redraw a second, not two: each redraw costs the student's browser a chart render
        tick_s=1.0 if hosted else 0.5,
        train_share=_env_share("ATTENTION_LAB_TRAIN_SHARE", HOSTED_TRAIN_SHARE if hosted else 1.0),
        # hosted: headroom. The pages' clicks cannot wait; training can. When the rest of the
        # server uses more than the ceiling minus training's share, training rests longer.
        cpu_ceiling=_env_share("ATTENTION_LAB_CPU_CEILING", HOSTED_CPU_CEILING if hosted else 1.0),
        train_floor=_env_share("ATTENTION_LAB_TRAIN_FLOOR", TRAIN_FLOOR),
        # hosted: pages first. When a class moves at once (the lecturer's next step, a reveal),
        # 60 page runs queue on the core; a training slice then waits until they are through.
        busy_page_runs=_env_int("ATTENTION_LAB_BUSY_PAGE_RUNS", HOSTED_BUSY_PAGE_RUNS if hosted else 0, least=0),
        # hosted: page runs take turns (PageRuns) instead of all sharing the core at once
        page_runs_at_once=_env_int("ATTENTION_LAB_PAGE_RUNS_AT_ONCE",
                                   HOSTED_PAGE_RUNS_AT_ONCE if hosted else 0, least=0),
    )


HOSTED_TRAIN_SHARE = 0.25  # training's most share of the server's time when hosted (see the docstring)
HOSTED_CPU_CEILING = 0.55  # hosted: the server's CPU (of one core) above which training gives way
TRAIN_FLOOR = 0.08  # the least share training keeps when it gives way (every run still advances)
HOSTED_BUSY_PAGE_RUNS = 3  # hosted: page runs in progress at which training slices wait
HOSTED_PAGE_RUNS_AT_ONCE = 2  # hosted: page runs at the same moment (2: one may wait on the database)


class PageRuns:
    """Whole-page runs in this process (streamlit_app.py wraps each one in `running()`).

    * `now`: how many are in progress, waiting ones included: the training slots' measure of how
      busy the pages are.
    * `at_once` > 0: at most that many run at the same moment; the others wait their turn, first
      come first served. Why: Streamlit runs each session's script in a thread of its own, and
      Python's lock (the GIL) hands the core round-robin to every thread that wants it, 5 ms each.
      When a class of 54 follows the lecturer to the next step, 54 page runs of ~40 ms all share
      the core and all finish together, ~2 s later, and the server's event loop (which reads the
      clicks and sends the pages) gets one turn in 55. In turn, the first page is out after 40 ms,
      the median one after half the burst, and the event loop keeps its share. Runs that nobody
      clicked for (`background`: the class following the lecturer) go after the clicked ones.
      A run that continues this thread's previous run (st.rerun, st.switch_page) keeps the turn
      (see `_handed_over`).
    """

    def __init__(self, at_once: int = 0, handoff_s: float = 0.5) -> None:
        self._count = 0
        self._lock = threading.Lock()
        self._gate = _Turns(at_once) if at_once > 0 else None
        self.at_once = at_once
        self.handoff_s = handoff_s
        self._ended_early = threading.local()  # per script thread: when its last turn ended early

    @contextlib.contextmanager
    def running(self, background: bool = False) -> Iterator[None]:
        """One page run. `background`: nobody clicked for it (a follow move, a reveal reaching the
        class): it waits until no clicked run is waiting, so a student's click is answered first."""
        with self._lock:
            self._count += 1
        try:
            if self._gate is None:
                yield
            else:
                turn = contextlib.nullcontext() if self._handed_over() else self._gate.seat(background)
                with turn, self._note_early_end():
                    yield
        finally:
            with self._lock:
                self._count -= 1

    def _handed_over(self) -> bool:
        """A run that follows at once, on the same script thread, a turn that ended early goes in
        without queueing again: st.rerun and st.switch_page in a page (a button's action, the
        lecturer's Next) continue the same interaction, which already waited its turn. (A click
        while a run is in progress gets a new script thread from Streamlit, runner.fastReruns;
        the replaced run stops at its first element, so its turn is short.)"""
        ended = getattr(self._ended_early, "at", None)
        self._ended_early.at = None
        return ended is not None and time.monotonic() - ended < self.handoff_s

    @contextlib.contextmanager
    def _note_early_end(self) -> Iterator[None]:
        try:
            yield
        except BaseException:
            self._ended_early.at = time.monotonic()
            raise

    @property
    def now(self) -> int:
        return self._count


class _Turns:
    """The seats of PageRuns: a clicked run before a background one, each kind in arrival order."""

    def __init__(self, seats: int) -> None:
        self._free = seats
        self._changed = threading.Condition()
        self._waiting = (collections.deque(), collections.deque())  # (clicked, background)

    def _first(self) -> object | None:
        clicked, background = self._waiting
        return clicked[0] if clicked else (background[0] if background else None)

    @contextlib.contextmanager
    def seat(self, background: bool) -> Iterator[None]:
        me = object()
        with self._changed:
            line = self._waiting[bool(background)]
            line.append(me)
            try:
                while not (self._free > 0 and self._first() is me):
                    self._changed.wait()
            finally:
                line.remove(me)
            self._free -= 1
            self._changed.notify_all()  # a seat may still be free for the next in line
        try:
            yield
        finally:
            with self._changed:
                self._free += 1
                self._changed.notify_all()


def _env_share(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return min(1.0, max(0.05, value)) if value == value else default  # NaN -> default


LIMITS = load_limits()
PAGE_RUNS = PageRuns(LIMITS.page_runs_at_once)


def background_training(device_type: str, limits: Limits = LIMITS,
                        setting: str | None = None) -> bool:
    """Whether a live run on `device_type` ("cpu", "cuda", "mps") trains in a worker thread
    (ATTENTION_LAB_BACKGROUND_TRAINING, above). Only on a GPU by default: there the training thread
    mostly waits for the device, while on the CPU a worker would take the cores the page draws with."""
    if limits.hosted:
        return False  # a class: the page's ticks and the shared slots pace every session
    setting = os.environ.get("ATTENTION_LAB_BACKGROUND_TRAINING", "auto") if setting is None else setting
    setting = setting.strip().lower()
    if setting in ("1", "on", "true"):
        return True
    if setting in ("0", "off", "false"):
        return False
    return device_type == "cuda"


def configure_torch_threads(limits: Limits = LIMITS) -> None:
    """Fix torch's intra-op threads once per process (safe to call on every rerun)."""
    import torch

    if torch.get_num_threads() != limits.torch_threads:
        torch.set_num_threads(limits.torch_threads)


def check_run_size(n_params: int, max_steps: int, limits: Limits | None = None,
                   advice: bool = True) -> list[str]:
    """Reasons a run is too large for this server (empty when it fits); `limits`: LIMITS when None,
    read at the call (so a test may swap LIMITS). `advice`: say what to change (not for a preset,
    whose settings the user did not choose)."""
    limits = LIMITS if limits is None else limits
    problems = []
    if n_params > limits.max_params:
        problems.append(f"the model has {n_params:,} parameters; this server allows "
                        f"{limits.max_params:,}." + (" Use fewer layers or a smaller d_embed." if advice else ""))
    if max_steps > limits.max_steps:
        problems.append(f"{max_steps:,} steps asked; this server allows {limits.max_steps:,}.")
    return problems


class ServerLoad:
    """How much of one core this process used lately, training excluded (the pages, the sessions,
    the websocket): the load training must leave room for.

    Why: a share caps training, but the pages' load is what varies. A 10-minute class of 60 on one
    core (benchmarks/student_sim.py) used 0.66-0.69 of the core with a 25% training share; the
    pages alone were ~0.55. On a slower core the same clicks cost more, and the headroom that keeps
    answers within a second is what goes. Training is the one part of the load that can wait, so
    it takes what the pages leave under a ceiling: `allowed(share)` is the training share to use
    now, between `floor` and `share`.

    Read from `time.process_time()` (all threads of the process) at the end of each slice, against
    the training seconds noted so far, over the last `window_s` seconds.
    """

    def __init__(self, ceiling: float = 1.0, floor: float = TRAIN_FLOOR, window_s: float = 20.0,
                 clock: Callable[[], float] = time.monotonic,
                 process_clock: Callable[[], float] = time.process_time) -> None:
        self.ceiling, self.floor, self.window_s = ceiling, floor, window_s
        self.clock, self.process_clock = clock, process_clock
        self._training_s = 0.0  # training CPU seconds noted so far
        self._samples: collections.deque[tuple[float, float, float]] = collections.deque()
        self._samples.append((clock(), process_clock(), 0.0))  # (wall, process CPU, training CPU)

    def note_training(self, cpu_s: float) -> None:
        """A slice ended, having used `cpu_s` seconds of CPU (callers hold their own lock)."""
        self._training_s += cpu_s
        now = self.clock()
        self._samples.append((now, self.process_clock(), self._training_s))
        while len(self._samples) > 2 and now - self._samples[1][0] >= self.window_s:
            self._samples.popleft()  # keep one sample at least window_s old as the base

    def others(self) -> float:
        """The share of one core the rest of the process used since the window's first sample."""
        t0, cpu0, train0 = self._samples[0]
        t1, cpu1, train1 = self._samples[-1]
        if t1 - t0 < 1.0:
            return 0.0  # too short to tell
        return max(0.0, (cpu1 - cpu0) - (train1 - train0)) / (t1 - t0)

    def allowed(self, share: float) -> float:
        """The training share to use now: `share`, less what the others use above the ceiling."""
        if self.ceiling >= 1.0:
            return share
        return min(share, max(self.floor, self.ceiling - self.others()))


class TrainingSlots:
    """A fair, bounded set of training slots with a visible queue.

    `slot(owner)` is a context manager: it enters when a slot is free and `owner` is next in line,
    waiting at most `timeout` seconds; otherwise it yields False so the caller can show "busy, your
    place in the queue is N" and try again on the next tick. Slots are held only for one short
    training slice, so nobody waits for a whole run.

    Who is next: the run that has trained least lately, among the runs that asked in the last
    ACTIVE_S seconds. A run asks once per tick and waits only half a tick, so the one whose turn it
    is may be between two ticks when the slot frees: the slot is kept for it for GRACE_S seconds
    (with a training share below 1 the slot rests after each slice anyway, and the next run is
    back in that time), then goes to whoever is waiting. GRACE_S is shorter than the half tick a
    run waits, so a waiting run still gets a free slot within its wait when the other has gone. Without the reservation the slot went to
    whichever run happened to be waiting at the moment it freed, and runs whose ticks fell at those
    moments trained several times as often as the others. Each owner's training seconds
    are summed with a half-life of USAGE_HALF_LIFE_S, so a run that has had the core for a while
    lets the others go first, and a run that starts while others train begins at the smallest
    current sum: it gets its fair turn at once, without taking every slice until it has caught up
    with runs that have been training for minutes. Ties go to whoever trained longest ago.

    What a slice costs its owner is the CPU time of the thread that trained it (`work_clock`),
    not its wall time. Every slice lasted the same 0.9 s (now 0.45 s, ui.live.SLICE_S), but on a
    busy server the page runs that start during it take the core (and Python's lock) for part of
    it: measured in a burst of 60
    students, one slice had 0.9 s of CPU and trained 49 steps, another 0.25 s and 7 steps, at the
    same ~44 steps per CPU second. Charged by the wall clock, a run whose slices fell in busy
    moments trained a third of the steps of another in the same minutes (benchmarks/student_sim.py:
    slowest / fastest trainer 0.34-0.54). Charged by CPU time it is next in line sooner, and the
    half-life is 30 s, longer than a round of six runs (6 slices and their rests: ~22 s with 0.9 s
    slices, ~11 s now), so a poor slice is still remembered when the others' next turns come up.
    """

    USAGE_HALF_LIFE_S = 30.0  # how fast past training time stops counting against an owner
    ACTIVE_S = 3.0  # an owner that asked this recently is in line (it asks once per tick)
    GRACE_S = 0.4  # how long a free slot waits for the run whose turn it is (under the 0.5 s a run waits)
    SHARING_S = 10.0  # an owner that asked this recently counts as a run sharing the server
    FORGET_S = 60.0  # owners silent this long are forgotten (closed tabs, paused runs)

    PAGES_POLL_S = 0.05  # how often a slice held back by busy pages looks again

    def __init__(self, capacity: int, share: float = 1.0, busy_page_runs: int = 0,
                 page_runs: Callable[[], int] = lambda: PAGE_RUNS.now,
                 work_clock: Callable[[], float] = time.thread_time,
                 load: ServerLoad | None = None) -> None:
        self.capacity = capacity
        self.load = load or ServerLoad()  # the rest of the server's CPU: training gives way above a ceiling
        self.work_clock = work_clock  # what a slice costs its owner: this thread's CPU seconds
        self.share = share  # most of the wall time slices may take, per slot
        self.busy_page_runs = busy_page_runs  # 0: training never waits for the pages
        self.page_runs = page_runs
        self._next_free = 0.0  # monotonic time before which no new slice starts (the share's rest)
        self._lock = threading.Condition()
        self._running: set[str] = set()
        self._blocked: set[str] = set()  # owners inside slot() right now, waiting
        self._order: dict[str, int] = {}  # owner -> when it joined the line (a counter), for ties
        self._usage: dict[str, tuple[float, float]] = {}  # owner -> (training seconds, as of time)
        self._last_seen: dict[str, float] = {}
        self._counter = 0
        self._free_since = 0.0  # monotonic time the last slice ended
        self._last_slice: dict[str, float] = {}  # owner -> when its last slice ended

    def _usage_at(self, owner: str, now: float) -> float:
        seconds, stamp = self._usage.get(owner, (0.0, now))
        return seconds * 0.5 ** ((now - stamp) / self.USAGE_HALF_LIFE_S)

    def _recent(self, now: float, max_age: float) -> list[str]:
        return [o for o, seen in self._last_seen.items() if now - seen < max_age]

    def _join(self, owner: str, now: float) -> None:
        """Note that `owner` asks for a slot; a newcomer starts level with the least-served run."""
        if owner not in self._order:
            others = [self._usage_at(o, now) for o in self._recent(now, self.ACTIVE_S)]
            self._usage[owner] = (min(others, default=0.0), now)
            self._counter += 1
            self._order[owner] = self._counter
        self._last_seen[owner] = now

    def _rank(self, owners, now: float) -> list[str]:
        # least training lately first; on a tie, whoever trained longest ago, then who asked first
        # (to the millisecond: a newcomer starts level with someone, float rounding must not split them)
        return sorted(owners, key=lambda o: (round(self._usage_at(o, now), 3), self._last_slice.get(o, -math.inf),
                                             self._order.get(o, 0)))

    def _forget_silent(self, now: float) -> None:
        for owner in [o for o, seen in self._last_seen.items() if now - seen >= self.FORGET_S]:
            if owner not in self._running and owner not in self._blocked:
                for table in (self._last_seen, self._order, self._usage, self._last_slice):
                    table.pop(owner, None)

    def position(self, owner: str) -> int:
        """0 when running or next to run; otherwise how many waiting runs go before it."""
        with self._lock:
            now = time.monotonic()
            if owner in self._running or owner not in self._order:
                return 0
            line = self._rank([o for o in self._recent(now, self.ACTIVE_S) if o not in self._running], now)
            return line.index(owner) if owner in line else 0

    def sharing(self, owner: str) -> int:
        """How many other runs asked for a slot in the last SHARING_S seconds (train beside this one)."""
        with self._lock:
            return len([o for o in self._recent(time.monotonic(), self.SHARING_S) if o != owner])

    def giving_way(self) -> float | None:
        """The share training has now if it is below its usual one (the class's pages come
        first, ServerLoad); None when it has its usual share."""
        with self._lock:
            share = self.load.allowed(self.share)
        return share if share < self.share else None

    def _grace_ends(self) -> float:
        return max(self._free_since, self._next_free) + self.GRACE_S

    def _pages_busy(self) -> bool:
        return self.busy_page_runs > 0 and self.page_runs() >= self.busy_page_runs

    def _may_start(self, owner: str, now: float) -> bool:
        if self._pages_busy():
            return False  # the class's page runs go first; this tick's slice waits (or skips)
        free = self.capacity - len(self._running)
        if free <= 0 or now < self._next_free:
            return False
        in_line = set(self._recent(now, self.ACTIVE_S)) - self._running
        turn = self._rank(in_line | self._blocked, now)[:free]  # whose turn it is
        if owner in turn:
            return True
        if any(o in self._blocked for o in turn) or now < self._grace_ends():
            return False  # the run whose turn it is is here, or may still come
        return owner in self._rank(self._blocked, now)[:free]

    @contextlib.contextmanager
    def slot(self, owner: str, timeout: float = 0.5) -> Iterator[bool]:
        got = False
        with self._lock:
            now = time.monotonic()
            self._forget_silent(now)
            self._join(owner, now)
            self._blocked.add(owner)
            deadline = now + timeout
            try:
                while True:
                    now = time.monotonic()
                    if self._may_start(owner, now):
                        self._running.add(owner)
                        got = True
                        break
                    remaining = deadline - now
                    if remaining <= 0:
                        break
                    # wake when the rest or the grace period ends too (nobody notifies then)
                    wakes = [t - now for t in (self._next_free, self._grace_ends()) if t > now]
                    if self._pages_busy():  # nobody notifies when a page run ends: look again soon
                        wakes.append(self.PAGES_POLL_S)
                    self._lock.wait(min([remaining, *wakes]))
            finally:
                self._blocked.discard(owner)
                self._lock.notify_all()  # the next in line may be someone else now
        started, work_started = time.monotonic(), self.work_clock()
        try:
            yield got
        finally:
            if got:
                work = max(0.0, self.work_clock() - work_started)  # read on the thread that trained
                with self._lock:
                    now = time.monotonic()
                    self._running.discard(owner)
                    self._usage[owner] = (self._usage_at(owner, now) + work, now)
                    self._last_seen[owner] = now
                    self._free_since = self._last_slice[owner] = now
                    self.load.note_training(work)
                    self._rest_after(now - started)
                    self._lock.notify_all()

    def _rest_after(self, busy_s: float) -> None:
        """Keep training within its share: a slice of busy_s seconds is followed by a rest. The
        share is lowered while the rest of the server is busy (ServerLoad)."""
        share = self.load.allowed(self.share)
        if share >= 1.0:
            return
        rest = busy_s * (1.0 / share - 1.0) / self.capacity
        self._next_free = max(self._next_free, time.monotonic() + rest)

    def leave(self, owner: str) -> None:
        """Remove `owner` from the line (paused or stopped runs do not hold a place)."""
        with self._lock:
            for table in (self._last_seen, self._order, self._usage, self._last_slice):
                table.pop(owner, None)
            self._lock.notify_all()

    @property
    def running(self) -> int:
        with self._lock:
            return len(self._running)


SLOTS = TrainingSlots(LIMITS.max_concurrent, LIMITS.train_share, LIMITS.busy_page_runs,
                      load=ServerLoad(LIMITS.cpu_ceiling, LIMITS.train_floor))
