"""A slower machine, simulated: a process given only a share of the wall time (`CpuShare`).

A benchmark that passes on a quiet, fast machine should still pass on a slower core. `CpuShare(pid,
share)` starts a small watcher process that stops the process `pid` (SIGSTOP) for `1 - share` of
every period and lets it go on (SIGCONT) for the rest, as a container's CPU quota does (Linux's CFS
quota works in periods of 100 ms; this one uses 50 ms). All the process's threads stop and go
together, so two torch threads never wait for a partner that was preempted alone: it is one whole
machine running at `share` of its speed, not a busy neighbour. The process's own clock keeps
running while it is stopped, so its wall-clock timings are those of the slower machine.

    with CpuShare(os.getpid(), 0.8):
        ...  # runs at 80% of this machine's speed

The watcher always lets the process go on when it ends, and ends by itself when the process is gone.
Run as a script (`python benchmarks/harness/cpu_share.py PID SHARE PERIOD_S`) it is the watcher;
it needs only the standard library.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

PERIOD_S = 0.05  # one stop-and-go cycle


def check_share(share: float) -> float:
    """`share` if it is a fraction of the time a process can run, else ValueError with the reason."""
    if not 0.05 <= share <= 1.0:  # nan fails both comparisons
        raise ValueError(f"a CPU share must be from 0.05 to 1.0 (got {share})")
    return share


class CpuShare:
    """Run the process `pid` at `share` of the machine's speed while the context is open (1.0: no watcher)."""

    def __init__(self, pid: int, share: float, period_s: float = PERIOD_S):
        self.pid, self.share, self.period_s = pid, check_share(share), period_s
        self.watcher: subprocess.Popen | None = None

    def __enter__(self) -> "CpuShare":
        if self.share < 1.0:
            self.watcher = subprocess.Popen(
                [sys.executable, __file__, str(self.pid), str(self.share), str(self.period_s)])
        return self

    def __exit__(self, *exc) -> None:
        if self.watcher is not None:
            self.watcher.terminate()  # its handler sends SIGCONT before it exits
            self.watcher.wait(timeout=10)
            self.watcher = None
        if self.pid != os.getpid():
            _go_on(self.pid)  # in case the watcher was killed between a stop and a go


def _go_on(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGCONT)
    except ProcessLookupError:
        pass


def watch(pid: int, share: float, period_s: float) -> None:
    """The watcher's loop: go for share x period, stop for the rest, until the process is gone or
    this watcher is told to end (SIGTERM/SIGINT), and always leave the process going."""
    ending = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: ending.append(True))
    run_s, stop_s = share * period_s, (1.0 - share) * period_s
    try:
        while not ending:
            time.sleep(run_s)
            if ending:
                break
            os.kill(pid, signal.SIGSTOP)
            time.sleep(stop_s)
            os.kill(pid, signal.SIGCONT)
    except ProcessLookupError:
        return
    finally:
        _go_on(pid)


if __name__ == "__main__":
    watch(int(sys.argv[1]), check_share(float(sys.argv[2])), float(sys.argv[3]))
