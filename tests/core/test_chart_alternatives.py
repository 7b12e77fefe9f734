"""Charts for everyone (WCAG 1.1.1, 1.4.1): each chart's text alternative and its numbers as a table,
and palettes that stay apart under colour-vision deficiencies."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from core import viz


def test_description_is_title_then_caption():
    assert viz.description("Attention weights.", "Row i: how query i spreads its attention.") == \
        "Attention weights. Row i: how query i spreads its attention."
    assert viz.description("", "Only a caption") == "Only a caption"
    assert viz.description("", "") == "Chart"


def test_table_of_a_heatmap_has_every_cell_and_says_which_are_masked():
    masked = np.triu(np.ones((3, 3), dtype=bool), k=1)
    chart = viz.heatmap(np.full((3, 3), 0.25), list("abc"), list("abc"), masked=masked,
                        highlight_cells=[(0, 0)])
    table = pd.read_csv(io.BytesIO(viz.table_csv(chart)), encoding="utf-8-sig")
    assert len(table) == 9 and {"row", "col", "value", "label"} <= set(table.columns)
    assert table["label"].str.endswith("(masked)").sum() == 3


def test_table_of_a_layered_chart_gathers_its_layers():
    lines = pd.DataFrame({"step": [0, 1, 0, 1], "loss": [3.0, 2.5, 3.1, 2.0], "run": list("aabb")})
    chart = viz.line_chart(lines, x="step", y="loss", series="run", title="Loss",
                           x_title="step", y_title="loss", points=True)
    table = viz.chart_table(chart)
    assert len(table) >= 4 and {"step", "loss"} <= set(table.columns)


def _linear(hex_colour: str) -> np.ndarray:
    rgb = np.array([int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)])
    return np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)


def _deutan_protan(hex_colour: str) -> list[np.ndarray]:
    """The colour as seen with deuteranopia and protanopia (Viénot, Brettel & Mollon 1999)."""
    rgb = _linear(hex_colour)
    protan = np.array([[0.11238, 0.88762, 0], [0.11238, 0.88762, 0], [0.00401, -0.00401, 1]])
    deutan = np.array([[0.29275, 0.70725, 0], [0.29275, 0.70725, 0], [-0.02234, 0.02234, 1]])
    return [protan @ rgb, deutan @ rgb]


@pytest.mark.parametrize("lecture", [False, True], ids=["student", "lecture"])
def test_palettes_stay_apart_for_red_green_colour_blindness(lecture):
    assert (viz.palette(lecture) == viz.OKABE_ITO) is lecture  # Okabe–Ito on the projector
    first = viz.palette(lecture)[:4]  # the series most charts here draw (two to four)
    for view in range(2):
        seen = [_deutan_protan(c)[view] for c in first]
        gaps = [np.abs(a - b).max() for i, a in enumerate(seen) for b in seen[i + 1:]]
        assert min(gaps) > 0.1, gaps
