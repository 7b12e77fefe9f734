"""How long a walkthrough page takes to rerun after a control change (AppTest, in process).

    python benchmarks/page_latency.py [--runs 20]

For each of the four attention walkthrough pages, at the default size (the book's 6 tokens x 3
dimensions) and at a large size (32 tokens x 64 dimensions, from a shareable link), change one
control per rerun and time `AppTest.run()`. Two kinds of change: "step" (the stepper, cycling, as a
lecturer clicks Next: the page's numbers come from its cache) and "recompute" (a value never seen
before: new random embeddings on page 1, a new weight seed on pages 2-4, so everything is
recomputed). Each rerun is timed: the whole script (entry point + page), every chart serialised. Reports the
median and the 95th percentile per page and size, of the wall time (what the target is about) and
of the process CPU time (the same work, but not inflated when other processes share the cores;
the load average is printed too, so a slow figure on a busy machine can be told apart).
Targets: median <= 150 ms at the default size, <= 400 ms at the large one.
Torch's intra-op threads follow the app (core.budget: ATTENTION_LAB_TORCH_THREADS, default 2); on
a busy machine the tiny tensors here run faster with 1 (waking a thread pool costs more than the op).
Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core import budget  # noqa: E402
from core import settings as core_settings  # noqa: E402
from core.lessons import embeddings as emb  # noqa: E402
from core.lessons import walkthrough as wt  # noqa: E402
from benchmarks.harness import load_average, open_app_test, percentile  # noqa: E402
from ui.walkthrough import SETTINGS_MENU_KEY  # noqa: E402

PREFIX = "walkthrough"
TARGET_MS = {"default": 150.0, "large": 400.0}
PAGES = {
    "simple_attention": ("pages/1_simple_attention.py", "step", wt.SIMPLE_STEPS),
    "self_attention": ("pages/2_self_attention.py", "sa_step", wt.SELF_STEPS),
    "causal_attention": ("pages/3_causal_attention.py", "causal_step", wt.CAUSAL_STEPS),
    "multi_head": ("pages/4_multi_head.py", "mh_step", wt.MULTI_STEPS),
}
RECOMPUTE = {"simple_attention": "embed_seed", "multi_head": "heads_seed"}  # the others: weight_seed
# the expander holding that control; the weight and head seeds are in the step bar's Settings
# popover, whose controls are built only while it is open (ui.walkthrough.SETTINGS_MENU_KEY)
OPEN_FOR = {"embed_seed": f"{PREFIX}.embeddings_open.0"}


def large_params() -> dict[str, str]:
    """A link carrying 32 random tokens of 64 dimensions."""
    settings = wt.WalkthroughSettings(tokens=[f"t{i + 1}" for i in range(32)],
                                      embeddings=emb.random_embeddings(32, 64, seed=0), query=3)
    return core_settings.to_params(settings)


def change(at, field: str, value) -> None:
    """Set a bound widget the way a click does (next run applies it)."""
    key = f"{PREFIX}.{at.session_state[PREFIX + '.__gen']}.{field}"
    if field.endswith("step"):
        at.segmented_control(key=key).set_value(value)
    else:  # a number box: its text, checked on the server
        at.text_input(key=key).set_value(str(value))
    if field == "embed_seed":  # new random embeddings of the same shape, from the new seed
        at.button(key=f"{PREFIX}.random").click()


def time_page(path: str, field: str, values, query: dict | None,
              runs: int) -> tuple[list[float], list[float]]:
    """Wall and CPU milliseconds of `runs` reruns, each after one control change."""
    at = open_app_test(path, query=query)
    at.session_state[SETTINGS_MENU_KEY] = True  # the Settings popover open, as a click would
    expander = OPEN_FOR.get(field) or OPEN_FOR.get(f"{field}@{path}")
    if expander:  # the control sits in a state-tracking expander: open it as a click would
        at.session_state[expander] = True
    at.run()
    if at.exception:
        raise RuntimeError(f"{path}: {[e.value for e in at.exception]}")
    wall, cpu = [], []
    for i in range(runs + 2):  # two warm-up reruns (first-use caches)
        change(at, field, values[(i + 1) % len(values)])
        start, start_cpu = time.perf_counter(), time.process_time()
        at.run()
        elapsed, elapsed_cpu = time.perf_counter() - start, time.process_time() - start_cpu
        if at.exception:
            raise RuntimeError(f"{path}: {[e.value for e in at.exception]}")
        if i >= 2:
            wall.append(elapsed * 1000)
            cpu.append(elapsed_cpu * 1000)
    return wall, cpu


def summary(wall: list[float], cpu: list[float]) -> dict[str, float]:
    return {"median_ms": round(statistics.median(wall), 1), "p95_ms": round(percentile(wall, 0.95), 1),
            "cpu_median_ms": round(statistics.median(cpu), 1),
            "cpu_p95_ms": round(percentile(cpu, 0.95), 1), "runs": len(wall)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    sizes = {"default": None, "large": large_params()}
    results: dict[str, dict] = {}
    ok = True
    load_before = load_average()[0]
    for size, query in sizes.items():
        results[size] = {}
        for name, (path, step_field, steps) in PAGES.items():
            seed_field = RECOMPUTE.get(name, "weight_seed")
            fresh_seeds = list(range(1000, 1000 + args.runs + 2))  # never seen: nothing cached
            results[size][name] = {}
            for kind, field, values in (("step", step_field, steps),
                                        ("recompute", seed_field, fresh_seeds)):
                stats = summary(*time_page(path, field, values, query, args.runs))
                stats["meets_target"] = stats["median_ms"] <= TARGET_MS[size]
                ok &= stats["meets_target"]
                results[size][name][kind] = stats
                print(f"{size:8s} {name:18s} {kind:9s} median {stats['median_ms']:7.1f} ms   "
                      f"p95 {stats['p95_ms']:7.1f} ms   (CPU median {stats['cpu_median_ms']:6.1f} ms)"
                      f"   target {TARGET_MS[size]:.0f} ms", flush=True)
    print(json.dumps({"benchmark": "page_latency", "sizes": {"default": "6 tokens x 3 dims",
                      "large": "32 tokens x 64 dims"}, "target_median_ms": TARGET_MS,
                      "results": results, "all_targets_met": ok, "cpu_count": os.cpu_count(),
                      "torch_threads": budget.LIMITS.torch_threads,
                      "load_average_1min": [round(load_before, 2), round(load_average()[0], 2)]}))


if __name__ == "__main__":
    main()
