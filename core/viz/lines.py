"""Line charts from long-form DataFrames: loss curves, one colour per series, optional dash per kind."""

from __future__ import annotations

import altair as alt
import pandas as pd

from core.viz.theme import fast_build, font_sizes, layered, palette


@fast_build
def line_chart(df: pd.DataFrame, *, x: str, y: str, series: str, title: str = "",
               x_title: str = "", y_title: str = "", lecture: bool = False,
               dash: str | None = None, points: bool = False, width: int = 620,
               height: int = 320, log_y: bool = False, rule: tuple[float, str] | None = None,
               y_format: str = ".4f") -> alt.TopLevelMixin:
    """Lines from a long-form DataFrame (one row per point: x, y, series[, dash]).

    `series` picks the colour, `dash` (a column) the dash pattern; `log_y` a log y scale;
    `rule` = (y value, text) draws a dashed reference line with its text (e.g. the loss of a
    uniform guess)."""
    color_range = palette(lecture)
    enc = dict(x=alt.X(field=x, type="quantitative", title=x_title or x),
               y=alt.Y(field=y, type="quantitative", title=y_title or y,
                       scale=alt.Scale(type="log") if log_y else alt.Scale(zero=False)),
               color=alt.Color(field=series, type="nominal", scale=alt.Scale(range=color_range),
                               title=None),
               tooltip=[alt.Tooltip(field=series, type="nominal"),
                        alt.Tooltip(field=x, type="quantitative"),
                        alt.Tooltip(field=y, type="quantitative", format=y_format)])
    if dash:
        enc["strokeDash"] = alt.StrokeDash(field=dash, type="nominal", title=None)
    if rule is None:
        return alt.Chart(df, title=title, width=width, height=height).mark_line(
            point=points, strokeWidth=3 if lecture else 2).encode(**enc)
    value, text = rule
    rule_data = alt.InlineData(values=[{"y": float(value), "text": text}])
    lines = alt.Chart().mark_line(point=points, strokeWidth=3 if lecture else 2).encode(**enc)
    line = alt.Chart(rule_data).mark_rule(color="#888", strokeDash=[2, 3]).encode(
        y=alt.Y(field="y", type="quantitative"))
    label = alt.Chart(rule_data).mark_text(align="left", dx=4, dy=-7, color="#444",
                                           fontSize=font_sizes(lecture)["text"] - 1).encode(
        y=alt.Y(field="y", type="quantitative"), x=alt.XValue(4),
        text=alt.Text(field="text", type="nominal"))
    return layered([lines, line, label], data=df, title=title, width=width,
                          height=height)
