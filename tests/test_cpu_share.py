"""benchmarks.harness.CpuShare: a process run at a share of the machine's speed (the benchmarks'
headroom), checked on a sleeping child process through its state in /proc, not by timing."""

from __future__ import annotations

import math
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.harness import CpuShare, check_share
from tests.helpers import wait_for

ROOT = Path(__file__).resolve().parent.parent


def state(pid: int) -> str:
    """The one-letter state of /proc/PID/stat: "T" while stopped, "S" while sleeping."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


@pytest.fixture
def sleeper():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield child
    child.kill()
    child.wait()


@pytest.mark.parametrize("share", [0.05, 0.5, 1.0])
def test_a_share_from_a_twentieth_to_the_whole(share):
    assert check_share(share) == share


@pytest.mark.parametrize("share", [0.0, 0.01, -0.5, 1.5, math.nan])
def test_other_shares_are_refused_with_the_range(share):
    with pytest.raises(ValueError, match="from 0.05 to 1.0"):
        check_share(share)


def test_the_process_is_stopped_part_of_the_time_and_left_going(sleeper):
    with CpuShare(sleeper.pid, 0.3) as throttle:
        assert throttle.watcher is not None
        assert wait_for(lambda: state(sleeper.pid) == "T", timeout=5)  # stopped ...
        assert wait_for(lambda: state(sleeper.pid) != "T", timeout=5)  # ... and going on again
    assert throttle.watcher is None
    time.sleep(0.2)  # two periods: a watcher left behind would have stopped it again by now
    assert state(sleeper.pid) != "T"


def test_the_whole_share_starts_no_watcher(sleeper):
    with CpuShare(sleeper.pid, 1.0) as throttle:
        assert throttle.watcher is None


def test_the_watcher_ends_by_itself_when_the_process_is_gone(sleeper):
    throttle = CpuShare(sleeper.pid, 0.5).__enter__()
    sleeper.kill()
    sleeper.wait()
    assert wait_for(lambda: throttle.watcher.poll() is not None, timeout=5)
    assert throttle.watcher.returncode == 0


def test_train_speed_refuses_a_share_over_one():
    done = subprocess.run([sys.executable, "benchmarks/train_speed.py", "--cpu-share", "2"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "a CPU share must be from 0.05 to 1.0 (got 2.0)" in done.stderr
