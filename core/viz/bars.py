"""Bar charts (one series or several side by side, values written on the bars) and labelled scatter."""

from __future__ import annotations

import re
from typing import Sequence

import altair as alt
import numpy as np
import pandas as pd

from core.viz.fit import bar_values, text_px, value_em
from core.viz.theme import (LECTURE_MIN_VALUE_PX, fast_build, font_sizes, format_value, layered, palette,
                            unique_labels)

MIN_DECIMALS = {"f": 2, "%": 0, "e": 1}  # what a number on a bar keeps however narrow it is


def shorter_formats(fmt: str) -> list[str]:
    """The ways to write a number on a bar with fewer decimals, one and two fewer than `fmt`
    (".4f" -> [".3f", ".2f"]), keeping MIN_DECIMALS: the full value is in the tooltip."""
    match = re.fullmatch(r"([^.]*)\.(\d+)([fe%])", fmt)
    if not match:
        return []
    prefix, decimals, kind = match[1], int(match[2]), match[3]
    return [f"{prefix}.{k}{kind}" for k in range(decimals - 1, max(MIN_DECIMALS[kind], decimals - 2) - 1, -1)]


@fast_build
def bar_chart(values, labels: Sequence[str], *, title: str = "", x_title: str = "",
              y_title: str = "", fmt: str = ".4f", lecture: bool = False,
              highlight: int | None = None, domain: tuple[float, float] | None = None,
              width: int | None = None, height: int = 220) -> alt.LayerChart:
    """Vertical bars with their value written above each bar; bar `highlight` in the 2nd colour."""
    return grouped_bars({"": values}, labels, title=title, x_title=x_title, y_title=y_title,
                        fmt=fmt, lecture=lecture, highlight=highlight, domain=domain,
                        width=width, height=height)


@fast_build
def grouped_bars(series: dict[str, Sequence[float]], labels: Sequence[str], *, title: str = "",
                 x_title: str = "", y_title: str = "", fmt: str = ".4f", lecture: bool = False,
                 highlight: int | None = None, domain: tuple[float, float] | None = None,
                 max_labels: int = 16, width: int | None = None, height: int = 220) -> alt.LayerChart:
    """Bars per label, one colour per series side by side (e.g. softmax beside plain
    normalisation); values written on the bars while at most `max_labels` labels."""
    names = unique_labels(labels)
    written = len(names) <= max_labels
    # fewer decimals where the bars get too narrow for the numbers (see core.viz.fit.bar_values)
    shorter = shorter_formats(fmt) if written else []
    frames = []
    for kind, vals in series.items():
        vals = np.asarray(vals, dtype=np.float64).ravel()
        if len(vals) != len(names):
            raise ValueError(f"{len(vals)} values but {len(names)} labels")
        frame = pd.DataFrame({
            "label": names, "kind": kind, "value": np.where(np.isfinite(vals), vals, np.nan),
            "text": [format_value(v, fmt) for v in vals],
            "highlight": [i == highlight for i in range(len(vals))]})
        for k, short in enumerate(shorter, start=1):
            frame[f"text_{k}"] = [format_value(v, short) for v in vals]
        frames.append(frame)
    df = pd.concat(frames, ignore_index=True)
    colors = palette(lecture)
    grouped = len(series) > 1
    width = width or max(240, min(56 * len(names) * (len(series) if grouped else 1), 700))
    # names upright while they fit their bars as built; a chart laid out narrower slants them
    # (core.viz.fit._slant_when_narrow)
    label_px = max((text_px(name, font_sizes(lecture)["label"]) for name in names), default=0.0)
    upright = label_px + 6 <= width / max(len(names), 1)
    y_scale = alt.Scale(domain=list(domain)) if domain else alt.Scale()
    enc = dict(x=alt.X(field="label", type="nominal", sort=names, title=x_title,
                       axis=alt.Axis(labelAngle=0 if upright else -40, labelOverlap=False)),
               y=alt.Y(field="value", type="quantitative", title=y_title, scale=y_scale))
    if grouped:
        enc["xOffset"] = alt.XOffset(field="kind", type="nominal", sort=list(series))
    base = alt.Chart().encode(**enc)
    color = alt.Color(field="kind", type="nominal", sort=list(series), scale=alt.Scale(range=colors),
                      title=None, legend=alt.Legend(orient="top")) if grouped else \
        alt.ColorValue(colors[0], condition={"test": "datum.highlight", "value": colors[1]})
    tooltip = [alt.Tooltip(field="label", type="nominal")] + \
        ([alt.Tooltip(field="kind", type="nominal")] if grouped else []) + \
        [alt.Tooltip(field="text", type="nominal", title="value")]
    layers = [base.mark_bar().encode(color=color, tooltip=tooltip)]
    if written:
        font = font_sizes(lecture)["text"] - (2 if grouped else 1)
        font = max(font, LECTURE_MIN_VALUE_PX) if lecture else font
        # in a chart laid out narrower than built (core/viz/fit.py) the numbers shrink with the
        # bars, lose decimals, and at last stand upright: neighbours never run into each other
        ems = [max((value_em(t) for t in df[column]), default=1.0)
               for column in ["text"] + [f"text_{k}" for k in range(1, len(shorter) + 1)]]
        # lecture mode: the floor is the built size; plain: all the decimals down to 2 px smaller,
        # and the shortest numbers turn upright rather than go below that (7 px made 27 bars'
        # numbers unreadable)
        floor = LECTURE_MIN_VALUE_PX if lecture else font - 2
        mark, conditions = bar_values(font, floor, ems, bars=len(names), groups=len(series), readable=floor)
        text = {"field": "text", "type": "nominal"}
        if conditions:
            text["condition"] = conditions
        layers.append(base.mark_text(baseline="middle", **mark).encode(text=text))
    return layered(layers, data=df, title=title, width=width, height=height)


@fast_build
def hbar_chart(values, labels: Sequence[str], *, texts: Sequence[str] | None = None,
               title: str = "", x_title: str = "", lecture: bool = False,
               domain: tuple[float, float] | None = None, x_format: str | None = None,
               width: int = 280, row_px: int | None = None) -> alt.LayerChart:
    """Horizontal bars, one colour per label, `texts` (default: the values) right of each bar."""
    values = np.asarray(values, dtype=np.float64).ravel()
    names = unique_labels(labels)
    if len(names) != len(values):
        raise ValueError(f"{len(values)} values but {len(names)} labels")
    df = pd.DataFrame({"label": names, "value": values,
                       "text": list(texts) if texts is not None else [f"{v:.3g}" for v in values]})
    base = alt.Chart().encode(
        y=alt.Y(field="label", type="nominal", sort=names, title=None, axis=alt.Axis(labelOverlap=False)),
        x=alt.X(field="value", type="quantitative", title=x_title,
                scale=alt.Scale(domain=list(domain)) if domain else alt.Scale(),
                axis=alt.Axis(format=x_format) if x_format else alt.Axis()))
    bars = base.mark_bar().encode(color=alt.Color(
        field="label", type="nominal", sort=names, legend=None,
        scale=alt.Scale(range=palette(lecture)[:len(names)])))
    text = base.mark_text(align="left", dx=4, fontSize=16 if lecture else 12).encode(
        text=alt.Text(field="text", type="nominal"))
    row_px = row_px or (42 if lecture else 32)
    return layered([bars, text], data=df, title=title, width=width,
                          height=row_px * len(names))


@fast_build
def scatter(df: pd.DataFrame, *, x: str, y: str, label: str, group: str | None = None,
            title: str = "", lecture: bool = False, x_title: str | None = None,
            y_title: str | None = None, width: int = 480, height: int = 400) -> alt.LayerChart:
    """Labelled points (e.g. a 2-D PCA of embeddings), coloured by group."""
    color = alt.Color(field=group, type="nominal", scale=alt.Scale(range=palette(lecture)), title=None) \
        if group else alt.ColorValue(palette(lecture)[0])
    base = alt.Chart().encode(x=alt.X(field=x, type="quantitative", title=x_title or x),
                              y=alt.Y(field=y, type="quantitative", title=y_title or y))
    points = base.mark_circle(size=160 if lecture else 90).encode(
        color=color, tooltip=[alt.Tooltip(field=label, type="nominal")])
    text = base.mark_text(dx=10, align="left", fontSize=font_sizes(lecture)["text"]).encode(
        text=alt.Text(field=label, type="nominal"))
    return layered([points, text], data=df, title=title, width=width, height=height)
