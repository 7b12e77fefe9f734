"""Charts of the lessons (pages 1-6): labelled matrices, bars with values, the √d_k curve,
the sliding windows, the small-LM race and the compact tables of the small LM.

Pure functions from numbers to Altair charts; the numbers come from core/lessons.
"""

from __future__ import annotations

import functools
import math
from typing import Sequence

import altair as alt
import numpy as np
import pandas as pd
from altair.utils.schemapi import debug_mode

from core import viz as charts
from core.viz.theme import palette, unique_labels
from core.lessons.small_lm import MODEL_LABELS
from core.lessons.tokens_data import WINDOW_KINDS, LoaderView, window_frame
from core.lessons.walkthrough import SCALE_DKS, number_format

def _unvalidated(builder):
    """Build a chart without Altair validating every channel object as it is created.

    Altair (debug mode, its default) validates each schema object at construction against the
    Vega-Lite JSON schema, several milliseconds per axis or scale. The builders are fixed code,
    validated as a whole by the tests, so pages skip it.
    """
    @functools.wraps(builder)
    def build(*args, **kwargs):
        with debug_mode(False):
            return builder(*args, **kwargs)
    return build


class LessonChart(alt.LayerChart):
    """A layered chart that skips Altair's JSON-schema validation when it is serialised.

    Streamlit serialises every chart on every rerun, and the schema validation costs 10-40 ms
    per chart, more than everything else a walkthrough rerun does. The builders below are
    fixed code whose output the tests validate once (`to_dict(validate=True)`), so the page
    does not pay for it again on each click.
    """

    def __init__(self, data=alt.Undefined, layer=(), **kwargs):
        # "pad": width and height are the PLOT area and the axes come on top. Streamlit's default
        # fits the whole chart (axes, legend, title) into the width, which squeezes small heatmaps
        # to a few pixels.
        kwargs.setdefault("autosize", alt.AutoSizeParams(type="pad"))
        # LayerChart.__init__ deep-copies every layer to merge per-layer data, params and sizes.
        # The builders here put the data and the size on this top-level chart and use no params,
        # so there is nothing to merge: initialise the schema object directly.
        alt.TopLevelLayerSpec.__init__(self, data=data, layer=list(layer), **kwargs)

    def to_dict(self, validate: bool = False, **kwargs):  # noqa: D102 - see the class docstring
        return super().to_dict(validate=validate, **kwargs)

    def copy(self, deep=True, ignore=None):
        """Shallow copies (configure_*, properties) without re-running LayerChart.__init__.

        Altair rebuilds a LayerChart through its __init__ for every shallow copy, which deep
        copies every layer to merge their parameters; a chart built here was merged already.
        """
        if deep is True:
            return super().copy(deep=True, ignore=ignore)
        new = object.__new__(type(self))
        object.__setattr__(new, "_args", self._args)
        object.__setattr__(new, "_kwds", dict(self._kwds))
        for attr in (deep if deep else ()):
            value = new._get(attr)
            new[attr] = value.copy(deep=False) if hasattr(value, "copy") else value
        return new


def _sizes(lecture: bool) -> dict[str, int]:
    return {"text": 16, "char": 10, "row": 42} if lecture else {"text": 11, "char": 7, "row": 30}


def values_fit(n_cols: int, lecture: bool = False, max_width: int = 640,
               max_chars: int = 6) -> bool:
    """Whether each heatmap cell is wide enough to print its value (else colours only)."""
    size = _sizes(lecture)
    needed = max_chars * size["char"] + 8
    return max_width / max(n_cols, 1) >= needed and n_cols <= 24


def label_chars(values: np.ndarray, fmt: str, special: np.ndarray | None = None) -> int:
    """The longest cell text a heatmap of `values` will print (cheap: from the extremes)."""
    finite = values[np.isfinite(values)]
    longest = 2
    if finite.size:
        longest = max(len(format(float(finite.max()), fmt)), len(format(float(finite.min()), fmt)),
                      len(format(float(np.abs(finite).max()), fmt)) + (1 if (finite < 0).any() else 0))
    if special is not None:
        longest = max([longest] + [len(str(s)) for s in np.asarray(special, dtype=object).ravel() if s])
    return longest


def values_shown(values, decimals: int = 2, lecture: bool = False, max_width: int = 640,
                 special: np.ndarray | None = None) -> bool:
    """Whether matrix_chart will write the numbers in the cells for this matrix."""
    values = np.asarray(values, dtype=np.float64)
    chars = label_chars(values, number_format(values, decimals), special)
    return values_fit(values.shape[1], lecture, max_width, chars)


@_unvalidated
def matrix_chart(matrix, row_labels: Sequence[str], col_labels: Sequence[str], *, title: str = "",
                 x_title: str = "", y_title: str = "", lecture: bool = False, decimals: int = 2,
                 domain: tuple[float, float] | None = None, special: np.ndarray | None = None,
                 highlight_row: int | None = None, max_width: int = 640,
                 row_axis: bool = True) -> alt.LayerChart:
    """A heatmap with the value in every cell (when it fits) and labelled axes.

    `special` is an array of strings of the matrix's shape: a non-empty entry replaces the cell's
    text and greys it out (masked "−∞", dropped "✕", undefined "0/0"). Non-finite cells are grey.
    `highlight_row` outlines the query's row; `row_axis=False` drops the row names (for a panel
    standing right of one that shows them).
    """
    values = np.asarray(matrix, dtype=np.float64)
    fmt = number_format(values, decimals)
    df = charts.matrix_frame(values, row_labels, col_labels, fmt)
    if special is not None:
        flat = np.asarray(special, dtype=object).ravel()
        marked = np.array([bool(s) for s in flat])
        df["label"] = np.where(marked, flat, df["label"])
        df["finite"] = df["finite"] & ~marked
        df["value"] = np.where(marked, np.nan, df["value"])
    n_rows, n_cols = values.shape
    size = _sizes(lecture)
    max_chars = label_chars(values, fmt, special)
    show_values = values_fit(n_cols, lecture, max_width, max_chars)
    cell_w = max(size["row"], max_chars * size["char"] + 10) if show_values else \
        max(8, min(size["row"], max_width // max(n_cols, 1)))
    cell_h = size["row"] if show_values else max(8, min(size["row"], 520 // max(n_rows, 1)))
    scheme = "viridis" if lecture else "blues"
    scale = alt.Scale(scheme=scheme, domain=list(domain)) if domain else alt.Scale(scheme=scheme)
    rows = list(dict.fromkeys(df["row"]))
    cols = list(dict.fromkeys(df["col"]))
    # slant the column names when they are wider than a cell (else Vega drops the overlapping ones)
    angle = -45 if max(len(c) for c in cols) * size["char"] > cell_w - 4 else 0
    # the numbers in the cells say what the colours mean; a legend only when they are hidden
    legend = None if show_values else alt.Legend()
    base = alt.Chart().encode(
        x=alt.X(field="col", type="nominal", sort=cols, title=x_title,
                axis=alt.Axis(orient="top", labelAngle=angle, labelOverlap=False)),
        # row_axis=False: a panel to the right of one that already names the rows
        y=alt.Y(field="row", type="nominal", sort=rows, title=y_title if row_axis else None,
                axis=alt.Axis() if row_axis else alt.Axis(labels=False, ticks=False)),
        tooltip=[alt.Tooltip(field="row", type="nominal", title=y_title or "row"),
                 alt.Tooltip(field="col", type="nominal", title=x_title or "column"),
                 alt.Tooltip(field="label", type="nominal", title="value")])
    rect = base.mark_rect(stroke="white").encode(
        # ColorValue with a dict condition: same Vega-Lite as alt.condition, without a slow
        # schema validation at construction (charts are rebuilt on every rerun)
        color=alt.ColorValue("#C8C8C8", condition={
            "test": "datum.finite", "field": "value", "type": "quantitative",
            "scale": scale.to_dict(validate=False), "title": None,
            "legend": legend.to_dict(validate=False) if legend is not None else None}))
    layers = [rect]
    if highlight_row is not None and 0 <= highlight_row < n_rows:
        # same data as the cells (one dataset to send); only the query's row gets a visible stroke
        outline = base.mark_rect(fill=None, stroke="#D55E00", strokeWidth=3 if lecture else 2).encode(
            strokeOpacity=alt.StrokeOpacityValue(0, condition={
                "test": f"datum.row_i == {int(highlight_row)}", "value": 1}))
        layers.append(outline)
    if show_values:
        finite_vals = df.loc[df["finite"], "value"]
        mid = (domain[0] + domain[1]) / 2 if domain else \
            (float((finite_vals.min() + finite_vals.max()) / 2) if len(finite_vals) else 0.0)
        dark_when = ">" if scheme == "blues" else "<"
        text = base.mark_text(fontSize=size["text"]).encode(
            text=alt.Text(field="label", type="nominal"),
            color=alt.ColorValue("black", condition={
                "test": f"datum.finite && datum.value {dark_when} {mid!r}", "value": "white"}))
        layers.append(text)
    # the data sits on the layer chart, not on each layer: Altair would hash every layer's
    # DataFrame (through its text repr) to merge them, the slowest part of building a chart
    return LessonChart(data=df, layer=layers, title=title, width=cell_w * n_cols, height=cell_h * n_rows)


def vector_bars(values, labels: Sequence[str], *, title: str = "", x_title: str = "",
                y_title: str = "", lecture: bool = False, decimals: int = 4,
                highlight: int | None = None, domain: tuple[float, float] | None = None,
                max_labels: int = 16, max_width: int = 640) -> alt.LayerChart:
    """Bars with the value written on each (up to `max_labels` bars; beyond that, hover)."""
    return grouped_bars({"": values}, labels, title=title, x_title=x_title, y_title=y_title,
                        lecture=lecture, decimals=decimals, highlight=highlight, domain=domain,
                        max_labels=max_labels, max_width=max_width)


@_unvalidated
def grouped_bars(series: dict[str, Sequence[float]], labels: Sequence[str], *, title: str = "",
                 x_title: str = "", y_title: str = "", lecture: bool = False, decimals: int = 4,
                 highlight: int | None = None, domain: tuple[float, float] | None = None,
                 max_labels: int = 16, max_width: int = 640) -> alt.LayerChart:
    """Side-by-side bars per label (e.g. softmax beside plain normalisation), values on top."""
    names = charts.unique_labels(labels)
    all_values = np.concatenate([np.asarray(v, dtype=np.float64).ravel() for v in series.values()])
    fmt = number_format(all_values, decimals)
    frames = []
    for kind, vals in series.items():
        vals = np.asarray(vals, dtype=np.float64).ravel()
        if len(vals) != len(names):
            raise ValueError(f"{len(vals)} values but {len(names)} labels")
        frames.append(pd.DataFrame({
            "label": names, "kind": kind, "value": np.where(np.isfinite(vals), vals, np.nan),
            "text": [charts._fmt(v, fmt) for v in vals],
            "highlight": [i == highlight for i in range(len(vals))]}))
    df = pd.concat(frames, ignore_index=True)
    n_series = len(series)
    size = _sizes(lecture)
    colors = charts.palette(lecture)
    n_bars = len(names) * n_series
    bar_w = max(4, min(size["char"] * 7 + 6, max_width // max(n_bars, 1)))
    # values are written on the bars only when they fit side by side
    chars = max((len(t) for f in frames for t in f["text"]), default=4)
    show_text = len(names) <= max_labels and bar_w >= chars * (size["char"] - (1 if n_series > 1 else 0))
    y_scale = alt.Scale(domain=list(domain)) if domain else alt.Scale()
    enc = dict(x=alt.X(field="label", type="nominal", sort=names, title=x_title,
                       axis=alt.Axis(labelAngle=-40 if len(names) > 6 else 0)),
               y=alt.Y(field="value", type="quantitative", title=y_title, scale=y_scale))
    if n_series > 1:
        enc["xOffset"] = alt.XOffset(field="kind", type="nominal", sort=list(series))
    base = alt.Chart().encode(**enc)
    if n_series > 1:
        color = alt.Color(field="kind", type="nominal", sort=list(series),
                          scale=alt.Scale(range=colors), title=None,
                          legend=alt.Legend(orient="top"))
    else:
        color = alt.ColorValue(colors[0], condition={"test": "datum.highlight", "value": colors[1]})
    tooltip = [alt.Tooltip(field="label", type="nominal"),
               alt.Tooltip(field="text", type="nominal", title="value")]
    if n_series > 1:
        tooltip.insert(1, alt.Tooltip(field="kind", type="nominal"))
    bars = base.mark_bar().encode(color=color, tooltip=tooltip)
    layers = [bars]
    if show_text:
        layers.append(base.mark_text(dy=-8, fontSize=size["text"] - (1 if n_series == 1 else 2)).encode(
            text=alt.Text(field="text", type="nominal"),
            y=alt.Y(field="value", type="quantitative", scale=y_scale)))
    width = max(200, min(bar_w * n_bars + 12 * len(names), max_width))
    return LessonChart(data=df, layer=layers, title=title, width=width,
                       height=240 if not lecture else 300)


@_unvalidated
def scaling_chart(table: pd.DataFrame, *, chosen: int | None = None, lecture: bool = False,
                  width: int = 340) -> alt.LayerChart:
    """Mean largest softmax weight vs d_k (log scale), with and without 1/√d_k."""
    colors = charts.palette(lecture)
    base = alt.Chart().encode(
        x=alt.X("d_k:Q", scale=alt.Scale(type="log", base=2), title="d_k (width of q and k)",
                axis=alt.Axis(values=list(SCALE_DKS))),
        y=alt.Y("max_weight:Q", scale=alt.Scale(domain=[0, 1]),
                title="largest softmax weight (mean)"),
        color=alt.Color("kind:N", scale=alt.Scale(range=colors), title=None,
                        sort=["softmax(q·k)", "softmax(q·k / √d_k)"], legend=alt.Legend(orient="top")),
        tooltip=[alt.Tooltip("d_k:Q"), alt.Tooltip("kind:N"), alt.Tooltip("max_weight:Q", format=".3f"),
                 alt.Tooltip("score_std:Q", format=".2f", title="std of the scores")])
    layers = [base.mark_line(point=True, strokeWidth=3 if lecture else 2)]
    if chosen is not None:
        layers.append(alt.Chart().mark_rule(strokeDash=[4, 4], color="#666").encode(
            x=alt.XDatum(chosen)))
    return LessonChart(data=table, layer=layers, title="Softmax slides to one-hot as d_k grows",
                       width=width, height=260)


def window_chart(view: LoaderView, *, max_tokens: int = 24, max_windows: int = 8,
                 lecture: bool = False) -> alt.LayerChart:
    """The windows drawn over the token sequence: overlap and never-read tokens are visible."""
    df = window_frame(view, max_tokens, max_windows)
    colours = palette(lecture)
    kind_scale = alt.Scale(domain=WINDOW_KINDS,
                           range=[colours[0], colours[1], "#E8E8E8", "#C7E9C0", "#74C476"])
    pos_order = list(dict.fromkeys(df["pos"]))
    row_order = list(dict.fromkeys(df.sort_values("order", kind="stable")["row"]))
    # the y labels take ~110 px more: the whole chart stays within the page's ~800 px
    cell = max(22, min(40 if lecture else 36, 640 // max(len(pos_order), 1)))
    base = alt.Chart(df).encode(
        x=alt.X("pos:N", sort=pos_order, title="token position : token",
                axis=alt.Axis(labelAngle=-55, orient="top", labelOverlap=False)),
        y=alt.Y("row:N", sort=row_order, title=None),
        tooltip=["row:N", "pos:N", alt.Tooltip("text:N", title="id / uses"), "kind:N"])
    rect = base.mark_rect(stroke="white", strokeWidth=1.5).encode(
        color=alt.Color("kind:N", scale=kind_scale, title=None,
                        legend=alt.Legend(orient="bottom", columns=3)))
    text = base.mark_text(fontSize=12 if lecture else 10).encode(
        text="text:N",
        color=alt.condition("datum.kind == 'input' || datum.kind == 'target'",
                            alt.value("white"), alt.value("black")))
    return alt.layer(rect, text).properties(width=cell * len(pos_order),
                                            height=(cell - 10) * len(row_order))


def race_loss_chart(history: pd.DataFrame, *, floor: float | None = None, lecture: bool = False,
                    width: int = 640, height: int = 340) -> alt.LayerChart:
    """Train (dashed) and val (solid) loss of every model against the step; the bigram floor dotted."""
    colours = palette(lecture)
    models = list(MODEL_LABELS.values())
    lines = alt.Chart(history).mark_line(strokeWidth=3 if lecture else 2).encode(
        x=alt.X("step:Q", title="training step"),
        y=alt.Y("loss:Q", title="loss (nats / character)", scale=alt.Scale(zero=True)),
        color=alt.Color("model:N", scale=alt.Scale(domain=models, range=colours[:3]), title=None,
                        legend=alt.Legend(orient="top", columns=1, labelLimit=320)),
        strokeDash=alt.StrokeDash("split:N", scale=alt.Scale(domain=["val", "train"],
                                                             range=[[1, 0], [6, 4]]),
                                  title=None, legend=alt.Legend(orient="top")),
        tooltip=["model:N", "split:N", "step:Q", alt.Tooltip("loss:Q", format=".4f")])
    layers = [lines]
    if floor is not None and math.isfinite(floor):
        rule_df = pd.DataFrame({"loss": [floor], "label": [f"best possible bigram (train): {floor:.3f}"]})
        rule = alt.Chart(rule_df).mark_rule(strokeDash=[2, 3], color="#555").encode(y="loss:Q")
        label = alt.Chart(rule_df).mark_text(align="right", dy=-7, x=width - 4, color="#333",
                                             fontSize=14 if lecture else 11).encode(y="loss:Q", text="label:N")
        layers += [rule, label]
    return alt.layer(*layers).properties(width=width, height=height)


def matrix_heatmap(matrix, row_labels: Sequence[str], col_labels: Sequence[str], *,
                   title: str = "", x_title: str = "", y_title: str = "", scheme: str = "blues",
                   max_side: int = 300, domain: tuple[float, float] | None = None,
                   lecture: bool = False) -> alt.Chart:
    """A compact heatmap for tables too big to print a value in each cell (tooltips hold them).

    Cells may be taller than wide, so the row labels (characters) stay readable even when there
    are many columns; the colour legend sits below, so the chart stays narrow.
    """
    values = np.asarray(matrix, dtype=np.float64)
    rows, cols = unique_labels(row_labels), unique_labels(col_labels)
    r_idx, c_idx = np.meshgrid(np.arange(len(rows)), np.arange(len(cols)), indexing="ij")
    df = pd.DataFrame({"row": np.asarray(rows, dtype=object)[r_idx.ravel()],
                       "col": np.asarray(cols, dtype=object)[c_idx.ravel()],
                       "value": values.ravel()})
    cell_w = max(5, min(22, max_side // max(len(cols), 1)))
    cell_h = max(5, min(22, max_side // max(len(rows), 1)))
    font = 13 if lecture else 10
    long_cols = max((len(c) for c in cols), default=0) > 2
    scale = alt.Scale(scheme=scheme, domain=list(domain)) if domain else alt.Scale(scheme=scheme)
    return alt.Chart(df).mark_rect().encode(
        x=alt.X("col:N", sort=cols, title=x_title,
                axis=alt.Axis(labels=cell_w >= 9, labelOverlap=long_cols and cell_w < 11,
                              labelAngle=-90 if long_cols else 0, labelFontSize=min(cell_w, font))),
        y=alt.Y("row:N", sort=rows, title=y_title,
                axis=alt.Axis(labels=cell_h >= 9, labelOverlap=False, labelFontSize=min(cell_h, font))),
        color=alt.Color("value:Q", scale=scale, title=None,
                        legend=alt.Legend(orient="bottom", direction="horizontal", gradientLength=160)),
        tooltip=[alt.Tooltip("row:N", title=y_title or "row"), alt.Tooltip("col:N", title=x_title or "col"),
                 alt.Tooltip("value:Q", format=".3f")],
    ).properties(title=title, width=cell_w * len(cols), height=cell_h * len(rows))
