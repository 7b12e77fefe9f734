"""A real `streamlit run streamlit_app.py` on loopback, the way the benchmarks and the browser tests
start it: headless, on a free port, optionally pinned to some cores and at another CPU priority;
ready once `/_stcore/health` answers; stopped cleanly (or killed, to test a crash)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_healthy(url: str, timeout: float = 90.0, proc: subprocess.Popen | None = None) -> float:
    """Poll `url`/_stcore/health until it answers 200; returns the seconds waited. Raises
    RuntimeError after `timeout`, or at once if `proc` (the server) has exited."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"streamlit exited early (code {proc.returncode})")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return time.monotonic() - t0
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer /_stcore/health within {timeout:.0f} s")


def _in_child(cores: set[int] | None, nice: int):
    """What the child runs before exec (so every thread of the server inherits it): taskset-like
    pinning to `cores` and the CPU priority `nice`."""
    if not cores and not nice:
        return None

    def apply() -> None:
        if cores:
            os.sched_setaffinity(0, cores)
        if nice:
            try:
                os.setpriority(os.PRIO_PROCESS, 0, nice)
            except OSError:
                pass  # not permitted: the server keeps the default priority (os.getpriority tells)
    return apply


def _new_log() -> Path:
    fd, path = tempfile.mkstemp(prefix="attention-lab-server-", suffix=".log")
    os.close(fd)
    return Path(path)


class StreamlitServer:
    """`streamlit run streamlit_app.py --server.headless true` on 127.0.0.1.

    port:    where it listens (default: a free port)
    env:     variables added to this process's environment for the server
    cores:   CPU cores the server may use (None: all), as `taskset -c`
    nice:    CPU priority of the server (0: unchanged; below 0 needs root)
    options: more `--name value` options of `streamlit run`, e.g. {"server.disconnectedSessionTTL": 30}
    log:     file the server's stdout and stderr are appended to (default: a new temporary file)

    `start()` may be called again after `kill()` (a restart on the same port).
    """

    def __init__(self, port: int | None = None, env: dict | None = None, cores: set[int] | None = None,
                 nice: int = 0, options: dict | None = None, log: str | Path | None = None):
        self.port = port or free_port()
        self.env, self.cores, self.nice = dict(env or {}), cores, nice
        self.options = dict(options or {})
        self.log = Path(log) if log else _new_log()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.proc.pid if self.proc else 0

    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "streamlit", "run", str(ROOT / "streamlit_app.py"),
               "--server.port", str(self.port), "--server.address", "127.0.0.1",
               "--server.headless", "true", "--browser.gatherUsageStats", "false"]
        for name, value in self.options.items():
            cmd += [f"--{name}", str(value)]
        return cmd

    def start(self, timeout: float = 90.0) -> float:
        """Launch it and wait until /_stcore/health answers; returns the seconds from launch (the
        cold start). On failure the server is killed and RuntimeError carries its log's end."""
        t0 = time.monotonic()
        with open(self.log, "a") as out:
            self.proc = subprocess.Popen(self.command(), cwd=ROOT, env={**os.environ, **self.env},
                                         stdout=out, stderr=subprocess.STDOUT,
                                         preexec_fn=_in_child(self.cores, self.nice))
        try:
            wait_healthy(self.url, timeout, self.proc)
        except RuntimeError as exc:
            self.kill()
            raise RuntimeError(f"{exc}\n{self.log_tail()}") from None
        return time.monotonic() - t0

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """kill -9, as a crash would, and reap it."""
        if self.alive():
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL if it has not exited within `timeout` seconds."""
        if not self.alive():
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> "StreamlitServer":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
