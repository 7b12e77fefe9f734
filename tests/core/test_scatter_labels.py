"""Labels of the labelled scatter (core.viz.bars.scatter: the Inside page's 2-D PCA of the character
embeddings). Written 10 px right of their points, the labels of nearby points ran into each other
("y", "e" and "u" on top of one another). Now none overlaps another or leaves the plot, at the
width the chart is built at and at the narrower widths a fitted chart is laid out at (core/viz/fit.py):
checked on the placement itself and, through Vega (vl-convert), on the drawn SVG.
tests/browser/test_pca_labels_browser.py checks the same in Chromium on the real page.
"""

from __future__ import annotations

import io
import re

import numpy as np
import pandas as pd
import pytest

from core.lessons.inside_model import embedding_pca
from core.models import GPT, GPTConfig
from core.tokenizers import CharTokenizer
from core.viz import bars, export, fit, names_model, vega_spec
from core.viz.theme import font_sizes

vlc = pytest.importorskip("vl_convert")

CHARS = list(".abcdefghijklmnopqrstuvwxyz")
# the box Chromium gives a label's line: 21 px tall at 16 px (measured on the Inside page)
LINE_EM = 21 / 16


def crowded() -> pd.DataFrame:
    """27 points: seven at nearly one place, four more close together, the rest scattered."""
    rng = np.random.default_rng(1)
    xy = rng.normal(size=(27, 2))
    xy[5:12] = xy[5] + rng.normal(scale=1e-3, size=(7, 2))
    xy[20:24] = xy[20] + rng.normal(scale=0.05, size=(4, 2))
    return pd.DataFrame({"PC1": xy[:, 0], "PC2": xy[:, 1], "char": CHARS,
                         "group": ["vowel" if c in "aeiou" else "consonant" for c in CHARS]})


def untrained_pca(seed: int) -> pd.DataFrame:
    """The page's own PCA (core.lessons.inside_model.embedding_pca) of a small untrained GPT."""
    model = GPT(GPTConfig(context_size=8, n_layer=1, n_head=2, d_embed=16, d_ff=32), seed=seed)
    return embedding_pca(model, CharTokenizer.from_text("".join(CHARS[1:])))[0]


FRAMES = {"crowded": crowded, "untrained PCA, seed 0": lambda: untrained_pca(0),
          "untrained PCA, seed 1": lambda: untrained_pca(1)}


def overlapping(boxes: list[tuple[float, float, float, float, str]]) -> list[str]:
    """Pairs of (left, right, top, bottom, text) boxes that overlap (by more than rounding)."""
    return [f"{a[4]}|{b[4]}" for i, a in enumerate(boxes) for b in boxes[i + 1:]
            if min(a[1], b[1]) - max(a[0], b[0]) > 0.01 and min(a[3], b[3]) - max(a[2], b[2]) > 0.01]


def outside(boxes, width: float, height: float) -> list[str]:
    return [b[4] for b in boxes if b[0] < -0.01 or b[1] > width + 0.01 or b[2] < -0.01 or b[3] > height + 0.01]


# ------------------------------------------------------------------ the placement, in the chart's table
def placed_boxes(chart, plot_width: float, lecture: bool) -> list[tuple[float, float, float, float, str]]:
    """Each label's box where the chart puts it in a plot `plot_width` px wide: its point's place in
    the fixed axis domains, plus the px offset of the band of widths that holds `plot_width`."""
    spec = chart.to_dict(validate=False)
    points = spec["layer"][0]["encoding"]
    (x_lo, x_hi), (y_lo, y_hi) = points["x"]["scale"]["domain"], points["y"]["scale"]["domain"]
    band = next(k for k in range(len(bars.LABEL_WIDTHS) - 1)
                if plot_width >= spec["width"] * bars.LABEL_WIDTHS[k + 1] - 1e-9)
    data, size = chart.data, font_sizes(lecture)["text"]
    cx = (data["PC1"] - x_lo) / (x_hi - x_lo) * plot_width + data[f"label_dx_{band}"]
    cy = (y_hi - data["PC2"]) / (y_hi - y_lo) * spec["height"] + data[f"label_dy_{band}"]
    half_w = np.array([fit.text_px(c, size) / 2 for c in data["char"]])
    half_h = LINE_EM * size / 2
    return list(zip(cx - half_w, cx + half_w, cy - half_h, cy + half_h, data["char"]))


@pytest.mark.parametrize("lecture", [False, True], ids=["plain", "lecture"])
@pytest.mark.parametrize("frame", list(FRAMES))
def test_placed_labels_never_overlap_and_stay_inside_the_plot(frame, lecture):
    """At every plot width from the built one down to the narrowest band (a fitted chart in a
    narrow column), not only at each band's two ends."""
    chart = names_model.pca_chart(FRAMES[frame](), np.array([0.3, 0.2]), lecture=lecture)
    built = chart.to_dict(validate=False)
    for share in np.linspace(bars.LABEL_WIDTHS[-1], bars.LABEL_WIDTHS[0], 15):
        plot_width = share * built["width"]
        boxes = placed_boxes(chart, plot_width, lecture)
        assert overlapping(boxes) == [], (frame, round(plot_width))
        assert outside(boxes, plot_width, built["height"]) == [], (frame, round(plot_width))


def test_the_placement_is_a_pure_function_of_the_table():
    first, again = (bars.scatter(crowded(), x="PC1", y="PC2", label="char").to_dict() for _ in range(2))
    assert first == again
    shuffled = crowded().sample(frac=1.0, random_state=0)  # another order: still no overlaps
    chart = names_model.pca_chart(shuffled, np.array([0.3, 0.2]))
    assert overlapping(placed_boxes(chart, chart.to_dict(validate=False)["width"], False)) == []


def test_a_label_crowded_out_of_the_first_ring_gets_a_line_to_its_point():
    data = bars.scatter(crowded(), x="PC1", y="PC2", label="char").data
    offsets = np.hypot(data["label_dx_0"], data["label_dy_0"])
    led = data["lead_to_0"] > 0
    # seven points at one place: at most eight places in the first ring, and others' labels near
    assert led.sum() >= 2
    assert offsets[led].min() > offsets[~led].max()  # only the labels pushed farther out
    assert (data["lead_from_0"][led] < data["lead_to_0"][led]).all()  # from the circle toward the label


def test_one_point_and_equal_points_get_a_domain_and_a_label():
    for df in (pd.DataFrame({"x": [0.0], "y": [1.0], "c": ["a"]}),
               pd.DataFrame({"x": [0.0, 0.0], "y": [0.0, 0.0], "c": ["a", "b"]})):
        spec = bars.scatter(df, x="x", y="y", label="c").to_dict(validate=True)
        for axis in ("x", "y"):
            lo, hi = spec["layer"][0]["encoding"][axis]["scale"]["domain"]
            assert lo < hi
        svg = rendered(vega_spec(bars.scatter(df, x="x", y="y", label="c")), 480)
        assert [t["text"] for t in label_texts(svg)] == list(df["c"])


def test_the_csv_holds_the_points_not_the_label_offsets():
    """The chart's table holds the labels' offsets for Vega; its CSV download is the PCA alone."""
    frame = crowded()
    chart = bars.scatter(frame, x="PC1", y="PC2", label="char", group="group")
    assert "label_dx_0" in chart.data.columns
    table = pd.read_csv(io.BytesIO(export.table_csv(chart)), encoding="utf-8-sig", keep_default_na=False)
    assert list(table.columns) == list(frame.columns)
    assert table["char"].tolist() == CHARS and np.allclose(table["PC1"], frame["PC1"])


# ------------------------------------------------------------------ the drawn SVG (Vega, vl-convert)
def rendered(spec: dict, width: int) -> str:
    rows = {name: data.to_dict("records") if isinstance(data, pd.DataFrame) else data
            for name, data in spec.get("datasets", {}).items()}
    return vlc.vegalite_to_svg({**spec, "datasets": rows, "width": width})


def plot_size(svg: str) -> tuple[float, float]:
    """The plot's width and height: its frame, the first background Vega draws in the view."""
    match = re.search(r'class="background"[^>]*d="M[\d.]+,[\d.]+h([\d.]+)v([\d.]+)', svg)
    return float(match[1]), float(match[2])


def label_texts(svg: str) -> list[dict]:
    """The labels as Vega drew them: the last text mark of the chart (the first ones are axes)."""
    group = re.findall(r'<g class="mark-text role-mark[^"]*"[^>]*>(.*?)</g>', svg, flags=re.S)[-1]
    found = []
    for attrs, text in re.findall(r"<text([^>]*)>([^<]*)</text>", group):
        x, y = map(float, re.search(r"translate\(([-\d.e]+),([-\d.e]+)\)", attrs).groups())
        anchor = re.search(r'text-anchor="(\w+)"', attrs)
        found.append({"text": text, "x": x, "y": y, "size": float(re.search(r'font-size="([\d.]+)px"', attrs)[1]),
                      "anchor": anchor[1] if anchor else "start"})
    return found


def drawn_boxes(svg: str) -> list[tuple[float, float, float, float, str]]:
    """Each label's box in the plot's px: as wide as core.viz.fit.text_px estimates Source Sans, a
    line tall, its middle where Vega anchored it (Vega writes a middle-baseline text 0.3 em lower)."""
    boxes = []
    for t in label_texts(svg):
        width, middle = fit.text_px(t["text"], t["size"]), t["y"] - round(0.3 * t["size"])
        left = t["x"] - width / 2 if t["anchor"] == "middle" else t["x"]
        boxes.append((left, left + width, middle - LINE_EM * t["size"] / 2, middle + LINE_EM * t["size"] / 2,
                      t["text"]))
    return boxes


def pca_spec(frame: str, lecture: bool) -> dict:
    chart = names_model.pca_chart(FRAMES[frame](), np.array([0.3, 0.2]), lecture=lecture)
    return fit.fit_to_column(vega_spec(chart, lecture))


# On the old code (one text mark 10 px right of every point, align left) this fails at its
# overlap assertion: 24 pairs ("e|f", "e|g", ...) in the crowded frame at its natural width (26 in
# lecture mode), and "f|z" in the untrained PCA of seed 0. (The placement tests above fail there
# too: the old table has no label_dx_k columns.)
@pytest.mark.parametrize("lecture", [False, True], ids=["plain", "lecture"])
@pytest.mark.parametrize("frame", ["crowded", "untrained PCA, seed 0"])
def test_drawn_labels_never_overlap_and_stay_inside_the_plot(frame, lecture):
    """The chart drawn at its own width, and laid out again in narrower columns (in a 1024 px
    window the PCA's column gives it about 410 px in all)."""
    spec = pca_spec(frame, lecture)
    for width in (fit.drawn_width(spec), 480, 410, 340):
        svg = rendered(spec, width)
        boxes = drawn_boxes(svg)
        assert len(boxes) == 27
        assert overlapping(boxes) == [], (frame, width)
        assert outside(boxes, *plot_size(svg)) == [], (frame, width)


def test_the_check_finds_the_old_overlapping_labels():
    """The drawn-label check is not blind: the old layout (every label 10 px right of its point,
    align left) drawn from the same spec has overlapping labels in the crowded frame."""
    spec = pca_spec("crowded", False)
    text = spec["layer"][2]
    old = {**text, "mark": {"type": "text", "dx": 10, "align": "left", "fontSize": text["mark"]["fontSize"]}}
    spec = {**spec, "layer": spec["layer"][:2] + [old]}
    assert len(overlapping(drawn_boxes(rendered(spec, fit.drawn_width(spec))))) >= 5
