"""core/charts.py builders and export, core/budget.py limits and training slots."""

import threading
import time

import numpy as np
import pytest

from core import budget, charts


def test_heatmap_data_labels_and_neg_inf():
    m = np.array([[0.5, -np.inf], [0.25, 0.75]])
    df = charts.matrix_frame(m, ["Your", "Your"], ["a", "b"], ".2f")
    assert list(df["row"].unique()) == ["Your #0", "Your #1"]
    assert df.loc[1, "label"] == charts.NEG_INF_LABEL and not df.loc[1, "finite"]
    assert df.loc[3, "label"] == "0.75"


def test_heatmap_rejects_mismatched_labels():
    with pytest.raises(ValueError, match="does not match"):
        charts.heatmap(np.zeros((2, 3)), ["a", "b"], ["x", "y"])


def test_png_export_is_2x_and_svg_has_caption():
    chart = charts.bar_chart([0.1, 0.9], ["a", "b"], title="weights")
    fig = charts.with_caption(chart, "Attention weights", "query journey, seed 123")
    png = charts.to_png(fig, scale=2.0)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width = int.from_bytes(png[16:20], "big")
    one_x = charts.to_png(fig, scale=1.0)
    assert width == 2 * int.from_bytes(one_x[16:20], "big")
    svg = charts.to_svg(fig)
    assert "<svg" in svg and "seed 123" in svg


def test_run_size_caps():
    limits = budget.Limits(hosted=True, torch_threads=1, max_concurrent=1, max_steps=100,
                           max_params=1000)
    assert budget.check_run_size(999, 100, limits) == []
    problems = budget.check_run_size(5000, 500, limits)
    assert len(problems) == 2 and "5,000 parameters" in problems[0]


def test_slots_limit_concurrency_and_queue_in_order():
    slots = budget.TrainingSlots(1)
    inside, peak = [], []
    lock = threading.Lock()

    def work(owner):
        for _ in range(50):
            with slots.slot(owner, timeout=2.0) as got:
                if got:
                    with lock:
                        inside.append(owner)
                        peak.append(len(inside))
                    time.sleep(0.002)
                    with lock:
                        inside.remove(owner)
                    return True
        return False

    threads = [threading.Thread(target=work, args=(f"s{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert max(peak) == 1 and len(peak) == 4


def test_slot_busy_reports_position():
    slots = budget.TrainingSlots(1)
    with slots.slot("a") as got_a:
        assert got_a
        with slots.slot("b", timeout=0.05) as got_b:
            assert not got_b
        assert slots.position("b") == 0  # b is first in line
        with slots.slot("c", timeout=0.05) as got_c:
            assert not got_c
        assert slots.position("c") == 1
    slots.leave("b")
    assert slots.position("c") == 0

