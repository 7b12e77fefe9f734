"""Phases shared by the simulator's runs (benchmarks/classroom_sim/classroom.py and class_mode.py):
when the students arrive, the warm-up student, and waiting for every client of a class with the
run's time and CPU figures."""

from __future__ import annotations

import asyncio
import random
import time

from benchmarks.classroom_sim.client import Client
from benchmarks.classroom_sim.stats import Stats


def arrival_times(n: int, within_s: float, seed: int = 0) -> list[float]:
    """When each of n students arrives, in seconds from the start: spread at random over `within_s`
    (one generator for all of them; the same seed gives the same class every run)."""
    rng = random.Random(seed)
    return sorted(rng.uniform(0, within_s) for _ in range(n))


async def warm_up(base: str, stats: Stats) -> tuple[Client, float]:
    """One student opens every page once (torch is imported, the shared caches fill)."""
    client = Client("warm-up student", base, stats, random.Random(7))
    await client.connect("")
    for title in list(client.pages):
        await client.goto(title)
    await client.goto(next(iter(client.pages)))
    return client, 0.0


async def await_clients(tasks: list, args, server, stats: Stats, result: dict, start: float,
                        cpu_before: tuple[float, float]) -> None:
    """Wait for the class's clients (each bounds its own time; a straggler is an error), then the
    run's wall seconds, the server's CPU seconds and this process's CPU seconds since `cpu_before`."""
    _done, pending = await asyncio.wait(tasks, timeout=args.duration + 150)
    for task in pending:
        task.cancel()
        stats.errors.append("a client did not stop within its time bound")
    result["wall_s"] = round(time.monotonic() - start, 1)
    result["server_cpu_s"] = round(server.cpu() - cpu_before[0], 1)
    result["sim_cpu_s"] = round(time.process_time() - cpu_before[1], 1)
