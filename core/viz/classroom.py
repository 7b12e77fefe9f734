"""Class-mode charts: the class's answers to a poll (one bar per choice, the right ones coloured)."""

from __future__ import annotations

from typing import Sequence

import altair as alt
import pandas as pd

from core.viz.theme import RIGHT_ANSWER, fast_build, font_sizes, layered, palette, unique_labels


@fast_build
def poll_chart(labels: Sequence[str], counts: Sequence[int], *, right: Sequence[bool] | None = None,
               title: str = "", lecture: bool = False, width: int = 420) -> alt.LayerChart:
    """Horizontal bars: how many students chose each answer, the count written beside each bar.

    `right`: which answers are right, known only after the reveal; those bars turn green and
    their label says "(right)". Before the reveal every bar has the same colour, so the
    projected chart gives nothing away."""
    names = unique_labels(labels)
    if len(names) != len(counts):
        raise ValueError(f"{len(counts)} counts but {len(names)} answers")
    right = list(right) if right is not None else [False] * len(names)
    shown = [f"{name} (right)" if ok else name for name, ok in zip(names, right)]
    total = max(1, sum(int(c) for c in counts))
    df = pd.DataFrame({"answer": shown, "count": [int(c) for c in counts], "right": right,
                       "text": [f"{int(c)} ({100 * int(c) / total:.0f}%)" for c in counts]})
    colors = palette(lecture)
    base = alt.Chart().encode(
        y=alt.Y(field="answer", type="nominal", sort=shown, title=None, axis=alt.Axis(labelOverlap=False,
                                                                                      labelLimit=260)),
        x=alt.X(field="count", type="quantitative", title="students",
                scale=alt.Scale(domain=[0, max(1, max((int(c) for c in counts), default=0))], nice=False),
                axis=alt.Axis(tickMinStep=1, format="d")))
    bars = base.mark_bar().encode(
        color=alt.ColorValue(colors[0], condition={"test": "datum.right", "value": RIGHT_ANSWER}),
        tooltip=[alt.Tooltip(field="answer", type="nominal"), alt.Tooltip(field="count", type="quantitative")])
    text = base.mark_text(align="left", dx=4, fontSize=font_sizes(lecture)["text"]).encode(
        text=alt.Text(field="text", type="nominal"))
    row_px = 44 if lecture else 30
    return layered([bars, text], data=df, title=title, width=width,
                          height=max(row_px * len(names), 60))
