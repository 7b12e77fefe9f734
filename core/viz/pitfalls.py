"""Charts of the Pitfalls lesson (core.pitfalls): row sums, the √d_k curves, names by length.

Pure functions from a demo's numbers to Altair charts; the page shows them with ui.charts.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from core import viz as charts
from core.pitfalls.no_scaling import SCALING_DKS


def row_sums_chart(sums: pd.DataFrame, *, lecture: bool = False, title: str = "Row sums") -> alt.LayerChart:
    """Grouped bars of each query's row sum, one colour per version, a rule at 1 and the values."""
    size = 16 if lecture else 11
    order = list(dict.fromkeys(sums["query"]))
    base = alt.Chart(sums).encode(
        x=alt.X("query:N", sort=order, title="query token (row)", axis=alt.Axis(labelAngle=0)),
        xOffset=alt.XOffset("version:N", sort=list(dict.fromkeys(sums["version"]))),
        y=alt.Y("row_sum:Q", title="sum of the row's weights"),
        color=alt.Color("version:N", scale=alt.Scale(range=charts.palette(lecture)), title=None,
                        sort=list(dict.fromkeys(sums["version"])), legend=alt.Legend(orient="top")),
        tooltip=["query:N", "version:N", alt.Tooltip("row_sum:Q", format=".4f")],
    )
    bars = base.mark_bar()
    labels = base.mark_text(dy=-7, fontSize=size - 2).encode(text=alt.Text("row_sum:Q", format=".2f"))
    rule = alt.Chart(pd.DataFrame({"y": [1.0]})).mark_rule(strokeDash=[6, 4], color="black").encode(y="y:Q")
    return alt.layer(bars, labels, rule).properties(title=title, width=max(360, 90 * len(order)), height=260)


SCALING_METRICS = ("max weight", "entropy (nats)", "softmax gradient")


def scaling_chart(table: pd.DataFrame, metric: str, *, lecture: bool = False, width: int = 210) -> alt.Chart:
    """One metric of `core.pitfalls.no_scaling.demo` against d_k (log scale), one line per version."""
    return alt.Chart(table).mark_line(point=True, strokeWidth=3 if lecture else 2).encode(
        x=alt.X("d_k:Q", scale=alt.Scale(type="log", base=2), title="d_k (log scale)",
                axis=alt.Axis(values=list(SCALING_DKS))),
        y=alt.Y(f"{metric}:Q", title=metric, scale=alt.Scale(zero=True)),
        color=alt.Color("version:N", scale=alt.Scale(range=charts.palette(lecture)), title=None,
                        legend=alt.Legend(orient="top")),
        tooltip=["d_k:Q", "version:N", alt.Tooltip(f"{metric}:Q", format=".4f")],
    ).properties(title=metric, width=width, height=220)


def scaling_figure(table: pd.DataFrame, *, lecture: bool = False) -> alt.HConcatChart:
    """The three metrics side by side in one figure, one shared legend."""
    width = 170 if lecture else 185
    return alt.hconcat(*[scaling_chart(table, metric, lecture=lecture, width=width) for metric in SCALING_METRICS],
                       spacing=28)


def names_length_chart(table: pd.DataFrame, *, lecture: bool = False) -> alt.Chart:
    """Names by length, split into those the lecture's windowing keeps and drops."""
    long = pd.DataFrame({
        "name length": list(table["name length"]) * 2,
        "names": list(table["names"].where(table["lecture examples per name"] == 0, 0))
        + list(table["names"].where(table["lecture examples per name"] > 0, 0)),
        "lecture windowing": ["gives no example (dropped)"] * len(table) + ["gives examples"] * len(table),
    })
    long = long[long["names"] > 0]
    colors = charts.palette(lecture)
    return alt.Chart(long).mark_bar().encode(
        x=alt.X("name length:O", title="name length (characters)", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("names:Q", title="number of names"),
        color=alt.Color("lecture windowing:N", scale=alt.Scale(
            domain=["gives no example (dropped)", "gives examples"], range=[colors[3], colors[2]]),
            title=None, legend=alt.Legend(orient="top")),
        tooltip=["name length:O", "lecture windowing:N", "names:Q"],
    ).properties(title="Names by length: which ones the lecture's windowing drops", width=560, height=260)


def heatmap_row(panels: list[tuple], tokens: list[str], *, weights: bool = True, lecture: bool = False,
                cell: int | None = None) -> alt.HConcatChart:
    """Several (T, T) heatmaps side by side in ONE figure (one download for the slide).

    panels: (matrix, title) pairs; weights=True puts every panel on the same 0..1 colour scale."""
    shape = tuple(panels[0][0].shape)
    row = [charts.heatmap(matrix.detach().numpy(), tokens, tokens, title=f"{title} {shape}",
                          x_title="key", y_title="query", fmt=".2f", lecture=lecture, cell=cell,
                          domain=(0.0, 1.0) if weights else None)
           for matrix, title in panels]
    return alt.hconcat(*row, spacing=24).resolve_scale(color="shared" if weights else "independent")


def fit_curve_chart(curve: pd.DataFrame, *, lecture: bool = False) -> alt.Chart:
    """Validation loss of the buggy and the fixed fit (core.pitfalls.fit_indent.demo's curve)."""
    return charts.line_chart(curve, x="iteration", y="loss", series="version", points=True,
                             title="Validation loss during fit", x_title="iteration",
                             y_title="validation loss (nats)", lecture=lecture)


def order_change_chart(max_logit_diff: dict[str, float], *, lecture: bool = False) -> alt.LayerChart:
    """One bar per model: how much its last output moves when the earlier tokens are permuted."""
    return charts.bar_chart(list(max_logit_diff.values()), list(max_logit_diff),
                            title="How much the last output changes",
                            y_title="max |Δ logit| at the last position", fmt=".2e", lecture=lecture)


def race_chart(frame: pd.DataFrame, *, lecture: bool = False) -> alt.Chart:
    """The SGD/AdamW race's loss curves (core.pitfalls.sgd.race_frame): colour per optimizer,
    dash per split."""
    return charts.line_chart(frame, x="step", y="loss", series="optimizer", dash="split",
                             title="SGD (lecture) vs AdamW: same model, data, batches and steps",
                             x_title="optimisation step", y_title="loss (nats per character)",
                             lecture=lecture)
