"""How long the Tokens and Small language model pages take to rerun after a control change.

    python benchmarks/lesson_rerun.py [--runs 30]

These two pages take the largest share of the server's time in a class of 60 (benchmarks/student_sim.py
under py-spy: 22% and 19% of the samples). In process (AppTest: entry point + page, every chart
and table serialised), one control is moved back and forth between two values, so after the first
two reruns everything the page caches is warm: what is timed is what every click costs, not a
first computation. Reports the median and 95th percentile of the wall time and of the CPU time of
the whole process (the script runs in AppTest's own thread), and the fastest run ("best": the
least disturbed by other load on a shared machine, where the medians of two runs of the same code
can differ by a third). Prints a line per control; last line: one JSON object. No target: a figure to
compare before and after a change, on the same machine, best run against run in turn.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.harness import load_average, open_app_test, percentile  # noqa: E402

PAGES = {
    "tokens_data": ("pages/5_tokens_data.py", "tokens",
                    ["batch_index", "show_dims", "name_context", "stride"]),
    "small_lm": ("pages/6_small_lm.py", "small_lm",
                 ["ce_target", "sample_chars", "temperature", "steps_per_tick"]),
}


def widget(at, key: str):
    """The bound widget whose key is `key` (number box or slider)."""
    for w in list(at.text_input) + list(at.slider):
        if w.key == key:
            return w
    raise KeyError(key)


def set_number(widget, value) -> None:
    """A slider takes the number; a number box (a text box checked on the server) its text."""
    widget.set_value(str(value) if isinstance(widget.value, str) else value)


def field_key(at, prefix: str, field: str) -> str:
    return f"{prefix}.{at.session_state[prefix + '.__gen']}.{field}"


def time_control(path: str, prefix: str, field: str, runs: int) -> dict[str, float]:
    at = open_app_test(path)
    key = field_key(at, prefix, field)
    first = widget(at, key)
    if isinstance(first.value, str):  # a number box: one up (the fields timed here take it)
        low = int(first.value)
        high = low + 1
    else:
        low = first.value
        high = low + (first.step or 1) if first.max is None or low + (first.step or 1) <= first.max \
            else low - (first.step or 1)
    wall, cpu = [], []
    for i in range(runs + 2):  # two warm-up reruns: both values computed once
        set_number(widget(at, key), high if i % 2 == 0 else low)
        start, start_cpu = time.perf_counter(), time.process_time()
        at.run()
        if at.exception:
            raise RuntimeError(f"{path}: {[e.value for e in at.exception]}")
        if i >= 2:
            wall.append((time.perf_counter() - start) * 1000)
            cpu.append((time.process_time() - start_cpu) * 1000)
    return {"median_ms": round(statistics.median(wall), 1), "p95_ms": round(percentile(wall, 0.95), 1),
            "best_ms": round(min(wall), 1),
            "cpu_median_ms": round(statistics.median(cpu), 1), "runs": len(wall),
            "values": [low, high]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    load_before = load_average()[0]
    results: dict[str, dict] = {}
    for name, (path, prefix, fields) in PAGES.items():
        results[name] = {}
        for field in fields:
            stats = time_control(path, prefix, field, args.runs)
            results[name][field] = stats
            print(f"{name:12s} {field:16s} best {stats['best_ms']:6.1f} ms   median "
                  f"{stats['median_ms']:6.1f} ms   p95 {stats['p95_ms']:6.1f} ms   "
                  f"(CPU median {stats['cpu_median_ms']:6.1f} ms)", flush=True)
    print(json.dumps({"benchmark": "lesson_rerun", "results": results,
                      "load_average_1min": [round(load_before, 2), round(load_average()[0], 2)]}))


if __name__ == "__main__":
    main()
