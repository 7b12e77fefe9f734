"""The server under test as the simulator sees it: the app pinned to its cores, its resident memory
sampled (peak and samples, across a kill -9 and restart), its CPU summed over those restarts; and
what else was busy on the machine."""

from __future__ import annotations

import time
from pathlib import Path

from benchmarks.harness import RssWatch, StreamlitServer, cpu_seconds, rss_bytes


class SimServer:
    """`streamlit run streamlit_app.py` on loopback, pinned to `cores`, sessions kept `ttl` seconds
    after their browser leaves; kill -9 and restart."""

    def __init__(self, cores: set[int], env: dict, ttl: int, log: Path):
        self.app = StreamlitServer(env=env, cores=cores, log=log,
                                   options={"server.disconnectedSessionTTL": ttl})
        self.cpu_before = 0.0  # CPU of killed incarnations, summed
        self.watch = RssWatch(self.rss, interval=0.5)

    @property
    def base(self) -> str:
        return self.app.url

    @property
    def proc(self):
        return self.app.proc

    @property
    def peak(self) -> int:
        return self.watch.peak

    @property
    def samples(self) -> list[tuple[float, int]]:
        return self.watch.samples

    def start(self) -> float:
        """Start (or restart) the app; returns the seconds until it answered."""
        took = self.app.start(timeout=90)
        if not self.watch.is_alive():
            self.watch.start()
        return took

    def kill9(self) -> None:
        self.cpu_before += cpu_seconds(self.app.pid)
        self.app.kill()

    def rss(self) -> int:
        return rss_bytes(self.app.pid) if self.app.proc else 0

    def cpu(self) -> float:
        return self.cpu_before + (cpu_seconds(self.app.pid) if self.app.proc else 0.0)

    def stop(self) -> None:
        self.watch.stop()
        self.app.stop()


def other_processes_cpu(exclude: set[int], top: int = 6) -> list[tuple[str, float]]:
    """Busiest other processes over the last 2 s (what else shared the machine)."""
    def snapshot() -> dict[int, tuple[str, float]]:
        out = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) not in exclude:
                try:
                    comm = (entry / "comm").read_text().strip()
                    out[int(entry.name)] = (comm, cpu_seconds(int(entry.name)))
                except OSError:
                    continue
        return out

    a = snapshot()
    time.sleep(2.0)
    b = snapshot()
    busy = [(f"{b[p][0]}[{p}]", round((b[p][1] - a[p][1]) / 2.0, 2)) for p in b if p in a]
    return sorted([x for x in busy if x[1] > 0.02], key=lambda x: -x[1])[:top]
