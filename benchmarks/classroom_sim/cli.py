"""The simulator's command line: one class, a curve over class sizes, or the widget inventory."""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import tempfile
from pathlib import Path

from benchmarks.classroom_sim.class_mode import TOUR
from benchmarks.classroom_sim.classroom import run_once
from benchmarks.classroom_sim.client import Client
from benchmarks.classroom_sim.report import TABLE_HEADER, print_row, print_targets
from benchmarks.classroom_sim.server import SimServer
from benchmarks.classroom_sim.stats import Stats


async def inventory(base: str) -> None:
    stats = Stats()
    client = Client("inventory", base, stats, random.Random(0))
    await client.connect("")
    for title in list(client.pages):
        took = await client.goto(title)
        print(f"== {title} ({took:.2f} s, {len(client.nodes)} nodes, query '{client.query_string[:60]}')")
        for node in client.widgets():
            value = client.values.get(node.widget.id)
            shown = value.WhichOneof("value") if value is not None else None
            print(f"   {node.kind:15} {'(disabled) ' if node.widget.disabled else ''}{node.widget.label[:60]!r}"
                  f" main={node.script_hash == client.main_hash} value={shown}")
    print("errors:", stats.errors[:5])
    await client.close()



def positive_seconds(text: str) -> float:
    """A finite number of seconds above 0 (argparse turns the ValueError into a plain message)."""
    value = float(text)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(text)
    return value


def positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise ValueError(text)
    return value

def class_options(parser: argparse.ArgumentParser) -> None:
    """--class-mode and its settings (benchmarks/classroom_sim/class_mode.py)."""
    group = parser.add_argument_group("class mode")
    group.add_argument("--class-mode", action="store_true",
                       help="one class: a lecturer reveals and steps, students join, follow and answer polls, "
                            "trainers submit runs to a challenge (with --soak: a kill -9 halfway, see --soak)")
    group.add_argument("--poll-s", type=positive_seconds, default=15.0, help="the lecturer waits this long on a poll")
    group.add_argument("--step-s", type=positive_seconds, default=5.0, help="the lecturer stays this long on a step")
    group.add_argument("--tour", default=",".join(TOUR), help="url paths of the pages the lecturer presents")
    group.add_argument("--train-steps", type=positive_int, default=300,
                       help="steps of a trainer's quick-demo run (0: the preset's own length)")
    group.add_argument("--max-params", type=positive_int, default=200_000, help="the challenge's parameter limit")
    group.add_argument("--max-seconds", type=positive_seconds, default=300.0, help="the challenge's training-time limit")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="protocol-level classroom load test")
    parser.add_argument("--students", type=int, default=60)
    parser.add_argument("--trainers", type=int, default=6)
    parser.add_argument("--duration", type=float, default=None,
                        help="seconds the class lasts (150: the arrival burst; 600: a 10-minute class; "
                             "--class-mode: 300)")
    parser.add_argument("--server-cores", default="0", help="cores of the server: 0 or 0,1")
    parser.add_argument("--browsers", type=int, default=0, help="real Chromium tabs alongside")
    parser.add_argument("--arrival-s", type=float, default=60.0)
    parser.add_argument("--think-s", type=float, nargs=2, default=(2.0, 6.0))
    parser.add_argument("--session-ttl", type=int, default=120,
                        help="server.disconnectedSessionTTL (Streamlit's default 120 s)")
    parser.add_argument("--leave-wait", type=float, default=None,
                        help="seconds to wait after everyone left before reading RSS (default TTL + 40)")
    parser.add_argument("--classes", type=int, default=1,
                        help="classes one after the other on the same server (RSS after each)")
    parser.add_argument("--baseline-s", type=float, default=0.0,
                        help="before the class, a class of one student (trains, then walks the pages) "
                             "for this many seconds; its RSS after leaving is a second one-student level")
    parser.add_argument("--skip-pages", default="", help="regex of page titles students never open")
    parser.add_argument("--not-hosted", action="store_true", help="without the hosted caps")
    parser.add_argument("--trainer-preset", default="",
                        help="title of the preset button trainers press before each Start, e.g. 'Class demo' "
                             "(default: the page's own settings, the quick demo)")
    parser.add_argument("--curve", action="store_true", help="N = 10, 30, 60, 90 and a table")
    parser.add_argument("--curve-n", type=int, nargs="+", default=[10, 30, 60, 90])
    parser.add_argument("--soak", action="store_true",
                        help="kill -9 the server halfway, restart it (same port and environment); the clients "
                             "reconnect. With --class-mode: the same lecturer key and SQLite store; students join "
                             "again (as <nickname>-r1), the lecturer takes the class back with key + code, and the "
                             "run checks that every answer and run acknowledged before the kill is stored once")
    parser.add_argument("--inventory", action="store_true", help="print every page's widgets and exit")
    parser.add_argument("--memory-probe", nargs="?", const="on", default="", choices=["", "on", "tracemalloc"],
                        help="the server writes server/memory_probe.py's report every 30 s (to tmp/memory.jsonl)")
    parser.add_argument("--server-env", nargs="*", default=[], metavar="NAME=VALUE",
                        help="extra environment variables of the server (e.g. MALLOC_ARENA_MAX=2)")
    class_options(parser)
    args = parser.parse_args(argv)
    if args.duration is None:
        args.duration = 300.0 if args.class_mode else 150.0
    if args.leave_wait is None:  # class mode measures the class, not the memory after it
        args.leave_wait = 0 if args.class_mode else args.session_ttl + 40

    if args.inventory:
        os.sched_setaffinity(0, {1} if os.cpu_count() > 1 else {0})
        tmp = Path(tempfile.mkdtemp(prefix="attention-lab-sim-"))
        server = SimServer({0}, {"ATTENTION_LAB_HOSTED": "1"}, 120, log=tmp / "server.log")
        try:
            server.start()
            asyncio.run(inventory(server.base))
        finally:
            server.stop()
        return 0

    if args.curve:
        rows = []
        for n in args.curve_n:
            sub = argparse.Namespace(**{**vars(args), "students": n, "trainers": max(1, n // 10),
                                        "curve": False})
            r = run_once(sub)
            rows.append(r)
            print(json.dumps({k: r[k] for k in ("students", "trainers", "interaction_median_s",
                                                "interaction_p95_s", "peak_rss_mb", "errors")}), flush=True)
        print(TABLE_HEADER)
        for r in rows:
            print_row(r)
        print(json.dumps({"curve": [{k: r.get(k) for k in (
            "students", "trainers", "server_cores", "duration_s", "interactions", "interaction_median_s",
            "interaction_p95_s", "server_run_p95_s", "tick_p95_s", "peak_rss_mb", "rss_one_student_mb",
            "rss_after_leave_mb", "errors", "every_trainer_advances", "steps_per_min",
            "sim_cpu_per_client", "server_cpu_s", "loadavg_before", "loadavg_after")} for r in rows]}))
        return 0

    result = run_once(args)
    for key, value in result.items():
        if key not in ("error_samples", "by_kind", "soak_trainers", "targets", "class_details", "soak_details"):
            print(f"{key:>28}: {value}")
    for key in ("by_kind", "soak_trainers", "class_details", "soak_details", "error_samples"):
        if key in result:
            print(f"{key:>28}: {json.dumps(result[key], default=str)[:2000]}")
    print(TABLE_HEADER)
    print_row(result)
    print_targets(result)
    print(json.dumps(result, default=str))
    return 0
