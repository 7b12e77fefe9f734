"""Per-process budgets: torch threads, caps on training runs, and a limit on concurrent training.

One Streamlit server holds every session of a class in one process. These limits keep it fair:
torch gets a fixed small thread count (more threads do not speed up tiny models and would let one
session starve the others), training runs are capped in size and length when hosted, and only a
few sessions may run a training slice at the same moment; the others wait their turn and are told
their place in the queue.

Settings (environment variables, read once at import):
- ATTENTION_LAB_TORCH_THREADS     threads per torch op (default 2, or 1 when hosted)
- ATTENTION_LAB_MAX_CONCURRENT    training slices running at once (default 2)
- ATTENTION_LAB_HOSTED            "1" applies the hosted caps below (default off)
- ATTENTION_LAB_MAX_STEPS         cap on steps of one run (default 20000, hosted 3000)
- ATTENTION_LAB_MAX_PARAMS        cap on model parameters (default 5_000_000, hosted 400_000)
- ATTENTION_LAB_TRAIN_NICE        nice value of the threads that train (default 10; 0 turns it off)

Training runs at a lower CPU priority than everything else the server does. A slice of training is
handed to a small pool of worker threads whose Linux nice value is raised once when they start (the
nice value is per thread on Linux; raising it needs no privilege). The script thread that asked for
the slice just waits. So when the cores are busy, a student clicking "Next" on a walkthrough page is
served first and training takes what is left; when they are idle, training runs at full speed.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterator, TypeVar

T = TypeVar("T")


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
    train_nice: int = 10  # nice value of training threads (Linux); 0 = same priority as the rest


def load_limits() -> Limits:
    hosted = os.environ.get("ATTENTION_LAB_HOSTED", "0") == "1"
    return Limits(
        hosted=hosted,
        torch_threads=_env_int("ATTENTION_LAB_TORCH_THREADS", 1 if hosted else 2),
        max_concurrent=_env_int("ATTENTION_LAB_MAX_CONCURRENT", 2),
        max_steps=_env_int("ATTENTION_LAB_MAX_STEPS", 3000 if hosted else 20000),
        max_params=_env_int("ATTENTION_LAB_MAX_PARAMS", 400_000 if hosted else 5_000_000),
        train_nice=min(19, _env_int_or_zero("ATTENTION_LAB_TRAIN_NICE", 10)),
    )


def _env_int_or_zero(name: str, default: int) -> int:
    try:
        return max(0, int(os.environ.get(name, default)))
    except ValueError:
        return default


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


def _lower_this_thread(nice: int) -> None:
    """Raise the nice value of the calling thread (Linux only; elsewhere nothing happens)."""
    if nice <= 0 or not sys.platform.startswith("linux"):
        return
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, max(nice, os.getpriority(os.PRIO_PROCESS, tid)))
    except (OSError, AttributeError):  # not permitted or not supported: run at normal priority
        pass


class LowPriorityWorkers:
    """Runs functions in worker threads whose CPU priority is lowered once, when each starts.

    `run(fn)` blocks the caller until `fn()` has run in a worker and returns its result (or raises
    its exception). The caller's thread waits without using CPU. torch's own worker threads for an
    op (when threads > 1) are created by the worker and inherit its nice value.
    """

    def __init__(self, n_workers: int, nice: int) -> None:
        self.nice = nice
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=n_workers, thread_name_prefix="attention-lab-train",
            initializer=_lower_this_thread, initargs=(nice,))

    def run(self, fn: Callable[[], T]) -> T:
        import torch

        threads = torch.get_num_threads()  # the caller's setting; torch keeps one per thread

        def call() -> T:
            if torch.get_num_threads() != threads:
                torch.set_num_threads(threads)
            return fn()

        return self._pool.submit(call).result()

    @staticmethod
    def thread_nice() -> int | None:
        """The calling thread's nice value (Linux), for tests and benchmarks."""
        if not sys.platform.startswith("linux"):
            return None
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


class TrainingSlots:
    """A fair, bounded set of training slots with a visible queue.

    `slot(owner)` is a context manager: it enters only when a slot is free and `owner` is first
    in line, waiting at most `timeout` seconds; otherwise it yields False so the caller can show
    "busy, your place in the queue is N" and try again on the next tick. Slots are held only for
    one short training slice, so nobody waits for a whole run.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
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
                free = len(self._running) < self.capacity
                ahead = self._queue.index(owner)
                if free and ahead < self.capacity - len(self._running):
                    self._queue.remove(owner)
                    self._running.add(owner)
                    got = True
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._lock.wait(remaining)
        try:
            yield got
        finally:
            if got:
                with self._lock:
                    self._running.discard(owner)
                    self._lock.notify_all()

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


SLOTS = TrainingSlots(LIMITS.max_concurrent)
# one worker per slot (a spare one for a slice that outlives its tick)
TRAIN_WORKERS = LowPriorityWorkers(LIMITS.max_concurrent + 1, LIMITS.train_nice)
