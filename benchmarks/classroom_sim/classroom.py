"""One run of the simulated class: cold start, a warm-up student, the class (students, trainers,
browsers, the optional kill -9 halfway), the memory after everyone has left."""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.classroom_sim.behaviours import student
from benchmarks.classroom_sim.browsers import browsers
from benchmarks.classroom_sim.client import Client
from benchmarks.classroom_sim.phases import arrival_times, await_clients, warm_up
from benchmarks.classroom_sim.report import summarise
from benchmarks.classroom_sim.server import SimServer, other_processes_cpu
from benchmarks.classroom_sim.stats import Plan, Stats
from benchmarks.classroom_sim.trainers import trainer
from benchmarks.harness import load_average


async def one_student_class(args: argparse.Namespace, base: str, stats: Stats, result: dict,
                            server: SimServer) -> Client:
    """The one-student level after a class of one (--baseline-s): one student trains on the Train
    page for half the time, then walks the other pages for the other half, and leaves; after the
    sessions' TTL (--leave-wait) the RSS is read. Beside the level after a single visit of every
    page, this one includes what training and a class's length load for good (PyTorch's autograd
    and optimizer code, the pages' first-use caches), so the class of N is compared with a class of
    one on the same protocol: what remains is what the N students added."""
    half = args.baseline_s / 2
    solo = Stats()  # its clicks are not the class's; its errors are
    for role in (trainer, student):
        plan = Plan(seconds=half, think=tuple(args.think_s), deadline=time.monotonic() + half)
        await role(9000, base, solo, plan, 0.0)
    stats.errors.extend(f"one-student class: {e}" for e in solo.errors)
    steps = solo.trainer_steps.get("trainer 9000", [])
    result["one_student_class_steps"] = steps[-1][1] if steps else 0
    await asyncio.sleep(args.leave_wait)
    result["rss_one_student_class_mb"] = round(server.rss() / 2**20, 1)
    warm = Client("warm-up student", base, stats, random.Random(7))
    await warm.connect("")
    return warm


async def classroom(args: argparse.Namespace, server: SimServer, stats: Stats, result: dict) -> None:
    base = server.base
    warm, _ = await warm_up(base, stats)
    await asyncio.sleep(35.0 if args.memory_probe else 3.0)  # the probe reports every 30 s
    result.setdefault("rss_one_student_mb", round(server.rss() / 2**20, 1))
    if args.baseline_s > 0 and "rss_one_student_class_mb" not in result:
        await warm.close()
        warm = await one_student_class(args, base, stats, result, server)
    n, k = args.students, args.trainers
    start = time.monotonic()
    plan = Plan(seconds=args.duration, think=tuple(args.think_s), deadline=start + args.duration,
                skip_pages=args.skip_pages, preset=args.trainer_preset)
    if args.soak:
        plan.soak_kill_at = start + args.duration / 2
    arrivals = arrival_times(n, args.arrival_s)
    tasks = []
    for i, arrival in enumerate(arrivals):
        role = trainer if i % max(1, n // max(1, k)) == 0 and i // max(1, n // max(1, k)) < k else student
        tasks.append(asyncio.create_task(role(i, base, stats, plan, arrival)))
    n_trainers = sum(1 for i in range(n) if i % max(1, n // max(1, k)) == 0 and i // max(1, n // max(1, k)) < k)
    result["trainers"] = n_trainers
    browser_stats = {"first_render": [], "latency": [], "errors": [], "trainers_started": 0,
                     "trainer_steps": []}
    if args.browsers:
        tasks.append(asyncio.create_task(browsers(base, args.browsers, browser_stats,
                                                  args.duration - args.arrival_s / 2)))
    if args.soak:
        tasks.append(asyncio.create_task(soak_restart(server, plan, result)))
    cpu0, client_cpu0 = server.cpu(), time.process_time()
    await warm.close()
    await await_clients(tasks, args, server, stats, result, start, (cpu0, client_cpu0))
    result["browser"] = browser_stats


async def soak_restart(server: SimServer, plan: Plan, result: dict) -> None:
    await asyncio.sleep(max(0.0, plan.soak_kill_at - time.monotonic()))
    result["soak_rss_before_kill_mb"] = round(server.rss() / 2**20, 1)
    await asyncio.to_thread(server.kill9)
    t0 = time.monotonic()
    result["soak_restart_s"] = round(await asyncio.to_thread(server.start), 2)
    result["soak_restart_at_s"] = round(t0 - (plan.deadline - 2 * (plan.deadline - plan.soak_kill_at)), 1)
    before = [v for t, v in server.samples if t < plan.soak_kill_at]
    result["soak_peak_rss_before_kill_mb"] = round(max(before, default=0) / 2**20, 1)
    await asyncio.sleep(60)  # every client has reconnected by then
    after = [v for t, v in server.samples if t > t0]
    result["soak_peak_rss_first_minute_after_restart_mb"] = round(max(after, default=0) / 2**20, 1)


def run_once(args: argparse.Namespace) -> dict:
    cores = {int(c) for c in args.server_cores.split(",")}
    client_cores = ({0, 1} - cores) or {1}
    os.sched_setaffinity(0, client_cores)  # this process (and the browsers it starts): the other core
    tmp = Path(tempfile.mkdtemp(prefix="attention-lab-sim-"))
    env = {"ATTENTION_LAB_TIMING_LOG": str(tmp / "runs.tsv")}
    if not args.not_hosted:
        env["ATTENTION_LAB_HOSTED"] = "1"
    if args.memory_probe:  # server/memory_probe.py: one JSON line every 30 s in the server's temp folder
        env["ATTENTION_LAB_MEMORY_PROBE"] = str(tmp / "memory.jsonl")
        if args.memory_probe == "tracemalloc":
            env["PYTHONTRACEMALLOC"] = "1"
    for pair in args.server_env:
        name, _, value = pair.partition("=")
        env[name] = value
    class_mode = getattr(args, "class_mode", False)
    if class_mode:  # a lecturer key and a fresh class store in this run's folder
        from benchmarks.classroom_sim import class_mode as lecture

        class_env, key, store_dir = lecture.server_env(tmp)
        env.update(class_env)
    server = SimServer(cores, env, args.session_ttl, log=tmp / "server.log")
    result: dict[str, Any] = {"students": args.students, "trainers_asked": args.trainers,
                              "duration_s": args.duration, "server_cores": args.server_cores,
                              "client_cores": ",".join(map(str, sorted(client_cores))),
                              "hosted": not args.not_hosted, "think_s": list(args.think_s),
                              "arrival_s": args.arrival_s, "soak": args.soak,
                              "loadavg_before": load_average(), "server_env": args.server_env,
                              "tmp": str(tmp)}
    stats = Stats()
    busy_before = other_processes_cpu({os.getpid()})
    result["other_busy_before"] = busy_before
    try:
        result["cold_start_s"] = round(server.start(), 2)
        result["rss_idle_cold_mb"] = round(server.rss() / 2**20, 1)
        for lesson in range(args.classes):  # a second class on the same server: a leak grows
            stats.lesson = lesson
            if class_mode:
                asyncio.run(lecture.class_session(args, server, stats, result, key, store_dir))
            else:
                asyncio.run(classroom(args, server, stats, result))
            result["rss_end_of_class_mb"] = round(server.rss() / 2**20, 1)
            if args.leave_wait > 0:  # every student has left; their sessions expire after the TTL
                time.sleep(args.leave_wait)
                result["rss_after_leave_mb"] = round(server.rss() / 2**20, 1)
                result.setdefault("rss_after_each_class_mb", []).append(result["rss_after_leave_mb"])
        result["server_alive"] = server.proc.poll() is None
    finally:
        server.stop()
    result["loadavg_after"] = load_average()
    result["other_busy_after"] = other_processes_cpu({os.getpid()})
    summarise(result, stats, server, tmp, args)
    return result
