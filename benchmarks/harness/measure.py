"""What a process and the machine use, read from Linux /proc: CPU seconds, resident memory (now
and at its peak), the processes below one, the load average; and the percentile the reports use."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages (empty where /proc/loadavg cannot be read). Printed
    beside a timing, it tells a slow figure on a busy shared machine from a slow program."""
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except OSError:
        return []


def percentile(values: list[float], q: float) -> float | None:
    """The value at quantile `q` (0..1) of `values`, nearest rank, no interpolation; None if empty."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process, all its threads (0.0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _status_kb(pid: int, key: str) -> int:
    """One "key: N kB" line of /proc/PID/status, in bytes (0 if the process is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def rss_bytes(pid: int, with_children: bool = False) -> int:
    """Resident memory of a process now (with its direct children's if `with_children`)."""
    pids = [pid]
    if with_children:
        try:
            pids += [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
        except OSError:
            pass
    return sum(_status_kb(p, "VmRSS") for p in pids)


def peak_rss_bytes(pid: int) -> int:
    """The highest resident memory the process has had since it started (the kernel's VmHWM)."""
    return _status_kb(pid, "VmHWM")


def descendants(root: int) -> set[int]:
    """Every live process below `root`, children's children included (e.g. Playwright's driver
    and the Chromium processes it started)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


class RssWatch(threading.Thread):
    """Samples `read()` (bytes of resident memory) every `interval` seconds in a daemon thread;
    keeps the peak and every (monotonic time, bytes) sample. A sampled peak, unlike VmHWM, can
    follow a server across restarts (a new process) when `read` looks up the current one."""

    def __init__(self, read: Callable[[], int], interval: float = 0.5):
        super().__init__(daemon=True)
        self.read, self.interval = read, interval
        self.peak = 0
        self.samples: list[tuple[float, int]] = []
        self._stop_event = threading.Event()

    def sample(self) -> None:
        """One reading; subclasses add their own measurements here."""
        value = self.read()
        self.peak = max(self.peak, value)
        self.samples.append((time.monotonic(), value))

    def run(self) -> None:
        while not self._stop_event.is_set():
            self.sample()
            time.sleep(self.interval)

    def stop(self) -> None:
        """Ask the thread to end after its current sample and wait for it."""
        self._stop_event.set()
        if self.is_alive():
            self.join()
