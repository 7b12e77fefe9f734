"""How fast a training worker can queue torch calls while another thread runs Python (the GIL hand-over).

    python benchmarks/gil_handover.py [--seconds 1.0] [--repeats 3] [--intervals 5,1,0.2,0.1]

Why it matters: on a GPU the live Train page trains in a worker thread
(`core.live_training.BackgroundTraining`) while the page's script thread draws and the server's event
loop answers the browser, all in one process. Every torch call lets go of the GIL while its kernel is
queued and must take it back afterwards; if another thread is running Python then, the worker waits
until the interpreter makes that thread hand the GIL over, which it does every
`sys.getswitchinterval()` seconds (5 ms by default). A step is a dozen torch calls, so while the page
draws the worker can fall from thousands of calls a second to a few hundred, and the GPU runs dry.
`core.live_training.WORKER_SWITCH` shortens the interval while a worker trains; this measures both
sides of that trade on this machine, for each interval:

* worker calls/s: one thread calling `x.add_(1.0)` on a small tensor (a queued kernel's worth of
  host work) alone, and while the main thread runs pure Python (a draw that never pauses);
* drawing Python/s: the main thread's loop iterations per second alone, and beside the worker: what
  the page pays for the worker's hand-overs.

Each figure is the median of `--repeats` windows of `--seconds`. No target: the closing note of
issue 26 reads it with the live page's figures from benchmarks/server_live.py.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time

import torch


def _python_work(seconds: float) -> float:
    """Loop iterations per second of plain Python for `seconds` (the drawing thread's stand-in)."""
    start, loops, total = time.perf_counter(), 0, 0
    while (elapsed := time.perf_counter() - start) < seconds:
        for i in range(100):
            total += i
        loops += 1
    return loops / elapsed


class _Worker:
    """A thread calling one small in-place torch op as fast as it can, counting the calls."""

    def __init__(self):
        self.calls = 0
        self._stop = threading.Event()
        self._tensor = torch.zeros(8)
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._tensor.add_(1.0)
            self.calls += 1

    def __enter__(self) -> "_Worker":
        self._thread.start()
        time.sleep(0.05)
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def rate_while(self, main_thread_work) -> tuple[float, object]:
        """The worker's calls/s while the main thread does `main_thread_work()`, and what it returned."""
        before, start = self.calls, time.perf_counter()
        result = main_thread_work()
        return (self.calls - before) / (time.perf_counter() - start), result


def measure(interval_s: float, seconds: float, repeats: int) -> dict:
    """The four figures for one switch interval (medians over `repeats` windows)."""
    saved = sys.getswitchinterval()
    sys.setswitchinterval(interval_s)
    try:
        alone, contended, python_beside = [], [], []
        python_alone = [_python_work(seconds) for _ in range(repeats)]
        with _Worker() as worker:
            for _ in range(repeats):
                alone.append(worker.rate_while(lambda: time.sleep(seconds))[0])
                calls_per_s, python_per_s = worker.rate_while(lambda: _python_work(seconds))
                contended.append(calls_per_s)
                python_beside.append(python_per_s)
    finally:
        sys.setswitchinterval(saved)
    return {
        "interval_ms": interval_s * 1000,
        "worker_calls_per_s_alone": statistics.median(alone),
        "worker_calls_per_s_beside_python": statistics.median(contended),
        "python_per_s_alone": statistics.median(python_alone),
        "python_per_s_beside_worker": statistics.median(python_beside),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="length of one measuring window")
    parser.add_argument("--repeats", type=int, default=3, help="windows per figure (the median is printed)")
    parser.add_argument("--intervals", default="5,1,0.2,0.1",
                        help="switch intervals to try, in milliseconds, comma-separated")
    args = parser.parse_args()
    if args.seconds <= 0 or args.repeats < 1:
        parser.error("--seconds must be > 0 and --repeats >= 1")
    try:
        intervals = [float(v) / 1000 for v in args.intervals.split(",")]
    except ValueError:
        parser.error(f"--intervals must be numbers of milliseconds, got {args.intervals!r}")
    if any(not 0 < v <= 0.1 for v in intervals):
        parser.error("each interval must be more than 0 and at most 100 ms")
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}; Python {sys.version.split()[0]}; default switch interval "
          f"{sys.getswitchinterval() * 1000:g} ms; {args.repeats} windows of {args.seconds:g} s each")
    print(f"{'interval':>9} | {'worker calls/s':>15} | {'beside Python':>14} | {'share':>6} | "
          f"{'Python/s':>10} | {'beside worker':>13} | {'share':>6}")
    for interval in intervals:
        r = measure(interval, args.seconds, args.repeats)
        print(f"{r['interval_ms']:>7g}ms | {r['worker_calls_per_s_alone']:>15,.0f} | "
              f"{r['worker_calls_per_s_beside_python']:>14,.0f} | "
              f"{r['worker_calls_per_s_beside_python'] / r['worker_calls_per_s_alone']:>6.1%} | "
              f"{r['python_per_s_alone']:>10,.0f} | {r['python_per_s_beside_worker']:>13,.0f} | "
              f"{r['python_per_s_beside_worker'] / r['python_per_s_alone']:>6.1%}")


if __name__ == "__main__":
    main()
