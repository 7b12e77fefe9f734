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
                                  (default 1.0 = no limit; hosted 0.3)

Why a share: benchmarks/student_sim.py with the server on ONE core (Community Cloud's size) showed
that K trainers keep the single slot busy back to back (each tick trains a 0.9 s slice), so every
page rerun of the other students shared the core (and the GIL) with training all the time. After
a slice of d seconds the slot now stays closed for d * (1 / share - 1) seconds: with share 0.3,
training takes at most 30% of the core and page reruns get the rest; the trainers still all
advance, in turn, more slowly.

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

import contextlib
import os
import threading
import time
from dataclasses import dataclass
from typing import Iterator


def _env_int(name: str, default: int) -> int:
    try:
        return max(1, int(os.environ.get(name, default)))
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
        train_share=_env_share("ATTENTION_LAB_TRAIN_SHARE", 0.3 if hosted else 1.0),
    )


def _env_share(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return min(1.0, max(0.05, value)) if value == value else default  # NaN -> default



LIMITS = load_limits()


def configure_torch_threads(limits: Limits = LIMITS) -> None:
    """Fix torch's intra-op threads once per process (safe to call on every rerun)."""
    import torch

    if torch.get_num_threads() != limits.torch_threads:
        torch.set_num_threads(limits.torch_threads)


def check_run_size(n_params: int, max_steps: int, limits: Limits = LIMITS) -> list[str]:
    """Reasons a run is too large for this server (empty when it fits)."""
    problems = []
    if n_params > limits.max_params:
        problems.append(f"the model has {n_params:,} parameters; this server allows "
                        f"{limits.max_params:,}. Use fewer layers or a smaller d_embed.")
    if max_steps > limits.max_steps:
        problems.append(f"{max_steps:,} steps asked; this server allows {limits.max_steps:,}.")
    return problems


class TrainingSlots:
    """A fair, bounded set of training slots with a visible queue.

    `slot(owner)` is a context manager: it enters only when a slot is free and `owner` is first
    in line, waiting at most `timeout` seconds; otherwise it yields False so the caller can show
    "busy, your place in the queue is N" and try again on the next tick. Slots are held only for
    one short training slice, so nobody waits for a whole run.
    """

    def __init__(self, capacity: int, share: float = 1.0) -> None:
        self.capacity = capacity
        self.share = share  # most of the wall time slices may take, per slot
        self._next_free = 0.0  # monotonic time before which no new slice starts (the share's rest)
        self._lock = threading.Condition()
        self._running: set[str] = set()
        self._queue: list[str] = []
        self._last_seen: dict[str, float] = {}

    def position(self, owner: str) -> int:
        """0 when running or next to run; otherwise how many are ahead."""
        with self._lock:
            self._drop_stale()
            if owner in self._running or owner not in self._queue:
                return 0
            return self._queue.index(owner)

    def _drop_stale(self, max_age: float = 20.0) -> None:
        # a session that closed its tab stops asking; forget it so it does not block the line
        now = time.monotonic()
        self._queue = [o for o in self._queue if now - self._last_seen.get(o, now) < max_age]

    @contextlib.contextmanager
    def slot(self, owner: str, timeout: float = 0.5) -> Iterator[bool]:
        got = False
        with self._lock:
            self._last_seen[owner] = time.monotonic()
            if owner not in self._queue:
                self._queue.append(owner)
            deadline = time.monotonic() + timeout
            while True:
                self._drop_stale()
                if owner not in self._queue:
                    self._queue.append(owner)
                now = time.monotonic()
                free = len(self._running) < self.capacity and now >= self._next_free
                ahead = self._queue.index(owner)
                if free and ahead < self.capacity - len(self._running):
                    self._queue.remove(owner)
                    self._running.add(owner)
                    got = True
                    break
                remaining = deadline - now
                if remaining <= 0:
                    break
                # wake at the end of the rest period too (nobody notifies then)
                rest = self._next_free - now
                self._lock.wait(min(remaining, rest) if rest > 0 else remaining)
        started = time.monotonic()
        try:
            yield got
        finally:
            if got:
                with self._lock:
                    self._running.discard(owner)
                    self._rest_after(time.monotonic() - started)
                    self._lock.notify_all()

    def _rest_after(self, busy_s: float) -> None:
        """Keep training within its share: a slice of busy_s seconds is followed by a rest."""
        if self.share >= 1.0:
            return
        rest = busy_s * (1.0 / self.share - 1.0) / self.capacity
        self._next_free = max(self._next_free, time.monotonic() + rest)

    def leave(self, owner: str) -> None:
        """Remove `owner` from the queue (paused or stopped runs do not hold a place)."""
        with self._lock:
            if owner in self._queue:
                self._queue.remove(owner)
            self._lock.notify_all()

    @property
    def running(self) -> int:
        with self._lock:
            return len(self._running)


SLOTS = TrainingSlots(LIMITS.max_concurrent, LIMITS.train_share)
