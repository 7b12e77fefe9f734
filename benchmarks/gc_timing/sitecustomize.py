"""Times the garbage collector inside a server the student simulator starts (a diagnostic).

Python imports `sitecustomize` at start-up from the first folder on its path that has one, so

    python benchmarks/student_sim.py --students 60 --trainers 6 --duration 150 \
        --server-env PYTHONPATH=benchmarks/gc_timing GC_TIMING_OUT=/tmp/gc.json

makes the server record, for each generation, how many collections ran, their total and longest
time and how many took over 50 ms, plus how many objects are frozen (gc.freeze), and rewrite
that JSON file every 10 s. Without GC_TIMING_OUT it does nothing.
"""

import gc
import json
import os
import threading
import time

_OUT = os.environ.get("GC_TIMING_OUT")


def _install(out: str) -> None:
    stats = {g: {"n": 0, "s": 0.0, "max_s": 0.0, "over_50ms": 0} for g in (0, 1, 2)}
    started = [0.0]

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
            return
        took = time.perf_counter() - started[0]
        s = stats[info["generation"]]
        s["n"] += 1
        s["s"] += took
        s["max_s"] = max(s["max_s"], took)
        s["over_50ms"] += took > 0.05

    def dump() -> None:
        while True:
            time.sleep(10)
            with open(out, "w") as f:
                json.dump({"time": time.time(), "by_generation": stats,
                           "frozen": gc.get_freeze_count()}, f)

    gc.callbacks.append(on_gc)
    threading.Thread(target=dump, name="gc-timing", daemon=True).start()


if _OUT:
    _install(_OUT)
