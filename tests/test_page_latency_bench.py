"""benchmarks/page_latency.py still drives every walkthrough page (it broke once, unnoticed, when
the Settings popover began building its controls only while open): one timed rerun per page and
kind of change, timings not checked (speed targets live in the benchmark, not in tests)."""

from __future__ import annotations

import pytest

from benchmarks import page_latency


@pytest.mark.parametrize("name", sorted(page_latency.PAGES))
def test_the_benchmark_changes_each_control_and_times_the_rerun(name):
    path, step_field, steps = page_latency.PAGES[name]
    seed_field = page_latency.RECOMPUTE.get(name, "weight_seed")
    for field, values in ((step_field, steps), (seed_field, [1000, 1001, 1002])):
        wall, cpu = page_latency.time_page(path, field, values, None, runs=1)
        assert len(wall) == len(cpu) == 1 and wall[0] > 0
