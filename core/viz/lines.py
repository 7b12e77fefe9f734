"""Line charts from long-form DataFrames: loss curves, one colour per series, optional dash per kind."""

from __future__ import annotations

import altair as alt
import pandas as pd

from core.viz.theme import fast_build, font_sizes, palette


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
    enc = dict(x=alt.X(f"{x}:Q", title=x_title or x),
               y=alt.Y(f"{y}:Q", title=y_title or y,
                       scale=alt.Scale(type="log") if log_y else alt.Scale(zero=False)),
               color=alt.Color(f"{series}:N", scale=alt.Scale(range=palette(lecture)), title=None),
               tooltip=[f"{series}:N", f"{x}:Q", alt.Tooltip(f"{y}:Q", format=y_format)])
    if dash:
        enc["strokeDash"] = alt.StrokeDash(f"{dash}:N", title=None)
    chart = alt.Chart(df).mark_line(point=points, strokeWidth=3 if lecture else 2).encode(**enc)
    if rule is None:
        return chart.properties(title=title, width=width, height=height)
    value, text = rule
    rule_data = alt.InlineData(values=[{"y": float(value), "text": text}])
    line = alt.Chart(rule_data).mark_rule(color="#888", strokeDash=[2, 3]).encode(y="y:Q")
    label = alt.Chart(rule_data).mark_text(align="left", dx=4, dy=-7, color="#444",
                                           fontSize=font_sizes(lecture)["text"] - 1).encode(
        y="y:Q", x=alt.value(4), text="text:N")
    return alt.layer(chart, line, label).properties(title=title, width=width, height=height)
