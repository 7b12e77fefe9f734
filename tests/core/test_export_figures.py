"""scripts/export_figures.py writes the lecture set as PNG (2x) and SVG with no browser or server."""

import json
import re
import struct

from scripts import export_figures


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def svg_size(text: str) -> tuple[float, float]:
    match = re.search(r'<svg[^>]*width="([\d.]+)"[^>]*height="([\d.]+)"', text)
    assert match, "the SVG has no width/height"
    return float(match.group(1)), float(match.group(2))


def test_export_writes_every_figure_at_twice_the_svg_size(tmp_path):
    manifest = export_figures.export(tmp_path, steps=20)
    names = [item["name"] for item in manifest]
    for expected in ("01_scores", "02_weights", "03_context", "04_all_weights",
                     "06_masked_scores", "07_causal_weights", "08_head_0", "08_head_1",
                     "09_loss_curve", "10_embedding_pca"):
        assert expected in names
    for item in manifest:
        png = (tmp_path / item["png"]).read_bytes()
        svg = (tmp_path / item["svg"]).read_text(encoding="utf-8")
        assert len(png) > 5_000 and len(svg) > 2_000
        w_png, h_png = png_size(png)
        w_svg, h_svg = svg_size(svg)
        assert abs(w_png - 2 * w_svg) <= 2 and abs(h_png - 2 * h_svg) <= 2
        assert w_svg >= 250 and h_svg >= 150
        assert "seed" in item["caption"] or "book" in item["caption"]
    saved = json.loads((tmp_path / "manifest.json").read_text())
    assert saved == manifest

    weights = next(i for i in manifest if i["name"] == "02_weights")
    svg = (tmp_path / weights["svg"]).read_text(encoding="utf-8")
    assert "softmax" in svg and "journey" in svg


def test_a_figure_of_more_than_five_thousand_cells_downloads():
    """The Download menu's PNG and SVG of a model's embedding matrix (27 x 256 = 6,912 cells here)
    failed with Altair's MaxRowsError: its guard against notebooks embedding big tables."""
    import numpy as np
    from core import viz
    weights = np.random.default_rng(0).normal(size=(27, 256))
    chart = viz.heatmap(weights, list(".abcdefghijklmnopqrstuvwxyz"), [str(i) for i in range(256)],
                        show_values=False, diverging=True)
    assert len(chart.data) > 5000
    png = viz.figure_bytes(chart, title="Token embedding matrix", caption="(27, 256)", fmt="png")
    width, height = png_size(png)
    svg = viz.figure_bytes(chart, title="Token embedding matrix", caption="(27, 256)", fmt="svg").decode()
    assert (width, height) == tuple(round(2 * v) for v in svg_size(svg))
    assert svg.count("<path") >= 27 * 256  # every cell drawn
