"""Chart builders: pure functions from numbers to Altair charts, plus PNG/SVG export.

Pages show these charts, `scripts/export_figures.py` saves them for slides, tests read their data.
Lecture mode is a theme applied here (bigger text, a colour-blind-safe high-contrast palette), so
no page has to know about fonts. Every heatmap writes its value in each cell, because a projected
colour alone cannot be checked against the book.
"""

from __future__ import annotations

import math
import textwrap
from typing import Sequence

import altair as alt
import numpy as np
import pandas as pd

# Okabe-Ito: distinguishable under the common colour-vision deficiencies, and on a projector.
OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
DEFAULT_PALETTE = ["#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#B279A2", "#EECA3B"]
NEG_INF_LABEL = "−∞"


def palette(lecture: bool = False) -> list[str]:
    """The categorical palette for the current mode."""
    return OKABE_ITO if lecture else DEFAULT_PALETTE


def _font_sizes(lecture: bool) -> dict[str, int]:
    # 1280x720 projector: axis labels must stay readable from the back row
    return {"label": 16, "title": 18, "text": 16, "heading": 22} if lecture else \
           {"label": 11, "title": 12, "text": 11, "heading": 14}


def themed(chart: alt.TopLevelMixin, lecture: bool = False) -> alt.TopLevelMixin:
    """Apply font sizes for the current mode."""
    size = _font_sizes(lecture)
    return (chart.configure_axis(labelFontSize=size["label"], titleFontSize=size["title"],
                                 labelLimit=220)
                 .configure_legend(labelFontSize=size["label"], titleFontSize=size["title"])
                 .configure_title(fontSize=size["heading"], subtitleFontSize=size["label"],
                                  anchor="start"))


def unique_labels(labels: Sequence[str]) -> list[str]:
    """Axis labels must be unique: repeated token names get their position appended."""
    labels = [str(x) if str(x) != "" else "∅" for x in labels]
    counts: dict[str, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    return [f"{label} #{i}" if counts[label] > 1 else label for i, label in enumerate(labels)]


def _fmt(value: float, fmt: str) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return NEG_INF_LABEL if value < 0 else "+∞"
    return format(value, fmt)


def matrix_frame(matrix, row_labels: Sequence[str], col_labels: Sequence[str],
                 fmt: str = ".2f") -> pd.DataFrame:
    """Long-form table (row, col, value, label, finite) of a 2-D array."""
    values = np.asarray(matrix, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(f"a heatmap needs a 2-D matrix, got shape {values.shape}")
    rows, cols = unique_labels(row_labels), unique_labels(col_labels)
    if values.shape != (len(rows), len(cols)):
        raise ValueError(f"matrix shape {values.shape} does not match the labels "
                         f"({len(rows)} rows, {len(cols)} columns)")
    r_idx, c_idx = np.meshgrid(np.arange(len(rows)), np.arange(len(cols)), indexing="ij")
    flat = values.ravel()
    finite = np.isfinite(flat)
    return pd.DataFrame({
        "row": np.asarray(rows, dtype=object)[r_idx.ravel()],
        "col": np.asarray(cols, dtype=object)[c_idx.ravel()],
        "row_i": r_idx.ravel(), "col_i": c_idx.ravel(),
        # non-finite cells (masked -inf) carry no colour value; their text says what they are
        "value": np.where(finite, flat, np.nan),
        "label": [_fmt(v, fmt) for v in flat],
        "finite": finite,
    })


def heatmap(matrix, row_labels: Sequence[str], col_labels: Sequence[str], *, title: str = "",
            x_title: str = "", y_title: str = "", fmt: str = ".2f", lecture: bool = False,
            scheme: str | None = None, cell: int | None = None, show_values: bool = True,
            domain: tuple[float, float] | None = None) -> alt.LayerChart:
    """A labelled heatmap with the value written in each cell; −∞ cells are grey."""
    df = matrix_frame(matrix, row_labels, col_labels, fmt)
    n_rows, n_cols = df["row_i"].max() + 1, df["col_i"].max() + 1
    cell = cell or (54 if lecture else 44)
    cell = max(14, min(cell, int(640 / max(n_cols, 1))))
    show_values = show_values and cell >= 30
    scheme = scheme or ("viridis" if lecture else "blues")
    scale = alt.Scale(scheme=scheme, domain=list(domain)) if domain else alt.Scale(scheme=scheme)
    size = _font_sizes(lecture)
    base = alt.Chart(df).encode(
        x=alt.X("col:N", sort=list(dict.fromkeys(df["col"])), title=x_title,
                axis=alt.Axis(labelAngle=-40 if n_cols > 6 else 0)),
        y=alt.Y("row:N", sort=list(dict.fromkeys(df["row"])), title=y_title),
        tooltip=[alt.Tooltip("row:N", title=y_title or "row"),
                 alt.Tooltip("col:N", title=x_title or "column"), alt.Tooltip("label:N", title="value")],
    )
    rect = base.mark_rect(stroke="white").encode(
        color=alt.condition("datum.finite", alt.Color("value:Q", scale=scale, title=None),
                            alt.value("#BBBBBB")))
    layers = [rect]
    if show_values:
        mid = (domain[0] + domain[1]) / 2 if domain else \
            (float(np.nanmean(df["value"])) if df["finite"].any() else 0.0)
        # dark cells get white text: the dark end is high for "blues", low for "viridis"
        dark_when = ">" if scheme == "blues" else "<"
        font = size["text"] if cell >= 44 else size["text"] - 3
        text = base.mark_text(fontSize=font).encode(
            text="label:N",
            color=alt.condition(f"datum.finite && datum.value {dark_when} {mid}",
                                alt.value("white"), alt.value("black")))
        layers.append(text)
    return alt.layer(*layers).properties(title=title, width=cell * n_cols, height=cell * n_rows)


def bar_chart(values, labels: Sequence[str], *, title: str = "", x_title: str = "",
              y_title: str = "", fmt: str = ".4f", lecture: bool = False,
              highlight: int | None = None, domain: tuple[float, float] | None = None) -> alt.LayerChart:
    """Vertical bars with their value written above each bar."""
    values = np.asarray(values, dtype=np.float64).ravel()
    names = unique_labels(labels)
    if len(names) != len(values):
        raise ValueError(f"{len(values)} values but {len(names)} labels")
    df = pd.DataFrame({"label": names, "value": np.where(np.isfinite(values), values, np.nan),
                       "text": [_fmt(v, fmt) for v in values],
                       "highlight": [i == highlight for i in range(len(values))]})
    colors = palette(lecture)
    y_scale = alt.Scale(domain=list(domain)) if domain else alt.Scale()
    base = alt.Chart(df).encode(x=alt.X("label:N", sort=names, title=x_title,
                                        axis=alt.Axis(labelAngle=-40 if len(names) > 6 else 0)),
                                y=alt.Y("value:Q", title=y_title, scale=y_scale))
    bars = base.mark_bar().encode(
        color=alt.condition("datum.highlight", alt.value(colors[1]), alt.value(colors[0])),
        tooltip=["label:N", "text:N"])
    text = base.mark_text(dy=-8, fontSize=_font_sizes(lecture)["text"] - 1).encode(text="text:N")
    width = max(240, min(56 * len(names), 700))
    return alt.layer(bars, text).properties(title=title, width=width, height=220)


def line_chart(df: pd.DataFrame, *, x: str, y: str, series: str, title: str = "",
               x_title: str = "", y_title: str = "", lecture: bool = False,
               dash: str | None = None, points: bool = False, width: int = 620,
               height: int = 320) -> alt.Chart:
    """Lines from a long-form DataFrame, one colour per series, optional dash per kind."""
    enc = dict(x=alt.X(f"{x}:Q", title=x_title or x), y=alt.Y(f"{y}:Q", title=y_title or y,
                                                             scale=alt.Scale(zero=False)),
               color=alt.Color(f"{series}:N", scale=alt.Scale(range=palette(lecture)), title=None),
               tooltip=[f"{series}:N", f"{x}:Q", alt.Tooltip(f"{y}:Q", format=".4f")])
    if dash:
        enc["strokeDash"] = alt.StrokeDash(f"{dash}:N", title=None)
    chart = alt.Chart(df).mark_line(point=points, strokeWidth=3 if lecture else 2).encode(**enc)
    return chart.properties(title=title, width=width, height=height)


def scatter(df: pd.DataFrame, *, x: str, y: str, label: str, group: str | None = None,
            title: str = "", lecture: bool = False) -> alt.LayerChart:
    """Labelled points (e.g. a 2-D PCA of embeddings), coloured by group."""
    color = alt.Color(f"{group}:N", scale=alt.Scale(range=palette(lecture)), title=None) \
        if group else alt.value(palette(lecture)[0])
    base = alt.Chart(df).encode(x=alt.X(f"{x}:Q", title=x), y=alt.Y(f"{y}:Q", title=y))
    points = base.mark_circle(size=160 if lecture else 90).encode(color=color, tooltip=[f"{label}:N"])
    text = base.mark_text(dx=10, align="left", fontSize=_font_sizes(lecture)["text"]).encode(
        text=f"{label}:N")
    return alt.layer(points, text).properties(title=title, width=480, height=400)


# ---------------------------------------------------------------- export for slides
def with_caption(chart: alt.TopLevelMixin, title: str, caption: str) -> alt.TopLevelMixin:
    """Put the caption (what it shows, settings, seed) under the title of an exported figure."""
    lines = textwrap.wrap(caption, 95) if caption else []
    return chart.properties(title=alt.TitleParams(text=title or " ", subtitle=lines, anchor="start"))


def to_png(chart: alt.TopLevelMixin, scale: float = 2.0) -> bytes:
    """PNG bytes at `scale`x through vl-convert (no browser, no server)."""
    import vl_convert as vlc  # imported lazily: only exports need it
    return vlc.vegalite_to_png(chart.to_json(), scale=scale)


def to_svg(chart: alt.TopLevelMixin) -> str:
    """SVG text through vl-convert."""
    import vl_convert as vlc
    return vlc.vegalite_to_svg(chart.to_json())
