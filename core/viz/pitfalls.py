"""Charts of the Pitfalls lesson (core.pitfalls): attention weights side by side, row sums, the
√d_k curves, names by length, the fit and race loss curves.

Pure functions from a demo's numbers to Altair charts, built on the core.viz primitives (its one
heatmap builder, grouped bars, the line chart, the Train page's loss chart); the page shows them
with ui.charts.show_chart.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from core import viz
from core.pitfalls.no_scaling import SCALING_DKS
from core.viz.theme import fast_build, layered
from core.viz.training import loss_chart

SCALING_METRICS = ("max weight", "entropy (nats)", "softmax gradient")  # the columns scaling_figure plots
NAMES_KEPT, NAMES_DROPPED = "gives examples", "gives no example (dropped)"  # names_length_chart's colours


def shared_domain(panels: list[tuple], weights: bool = True) -> tuple[float, float] | None:
    """The colour scale panels drawn as separate charts share: 0..1 for attention weights, else the
    finite values' range over every panel (None: no finite value; each chart picks its own)."""
    if weights:
        return (0.0, 1.0)
    values = np.concatenate([matrix.detach().double().numpy().ravel() for matrix, _ in panels])
    finite = values[np.isfinite(values)]
    return (float(finite.min()), float(finite.max())) if finite.size else None


def heatmap_row(panels: list[tuple], tokens: list[str], *, weights: bool = True, lecture: bool = False,
                cell: int | None = None, domain: tuple[float, float] | None = None) -> alt.TopLevelMixin:
    """Several (T, T) matrices as panels of ONE heatmap figure (one download for the slide); one
    (matrix, title) pair gives a plain heatmap (the page draws each panel so, side by side).

    panels: (matrix, title) pairs; weights=True puts every panel on the same 0..1 colour scale;
    `domain` sets another scale (shared_domain: one panel drawn alone keeps the figure's)."""
    shape = tuple(panels[0][0].shape)
    matrices = np.stack([matrix.detach().double().numpy() for matrix, _ in panels])  # (panels, T, T)
    options = dict(x_title="key", y_title="query", fmt=".2f", lecture=lecture, cell=cell,
                   domain=domain or ((0.0, 1.0) if weights else None))
    if len(panels) == 1:
        return viz.heatmap(matrices[0], tokens, tokens, title=f"{panels[0][1]} {shape}", **options)
    return viz.heatmap(matrices, tokens, tokens, facets=[f"{title} {shape}" for _, title in panels], **options)


@fast_build
def row_sums_chart(sums: pd.DataFrame, *, lecture: bool = False, title: str = "Row sums") -> alt.LayerChart:
    """Bars of each query's row sum, one colour per version side by side, values written on the
    bars, and a dashed rule at 1 (what every row of a correct attention sums to)."""
    queries = list(dict.fromkeys(sums["query"]))
    series = {version: group.set_index("query").loc[queries, "row_sum"].to_numpy()
              for version, group in sums.groupby("version", sort=False)}
    bars = viz.grouped_bars(series, queries, title=title, x_title="query token (row)",
                            y_title="sum of the row's weights", fmt=".2f", lecture=lecture,
                            width=max(360, 90 * len(queries)), height=260)
    one = alt.Chart(alt.InlineData(values=[{"y": 1.0}])).mark_rule(strokeDash=[6, 4], color="black").encode(y="y:Q")
    return layered([*bars.layer, one], data=bars.data, title=title, width=bars.width,
                          height=bars.height)


@fast_build
def scaling_chart(table: pd.DataFrame, metric: str, *, lecture: bool = False, width: int = 210) -> alt.Chart:
    """One metric of `core.pitfalls.no_scaling.demo` against d_k (log scale), one line per version."""
    chart = viz.line_chart(table, x="d_k", y=metric, series="version", title=metric, points=True,
                           lecture=lecture, width=width, height=220)
    return chart.encode(  # d_k doubles at each point: a log axis spaces them evenly
        x=alt.X("d_k:Q", scale=alt.Scale(type="log", base=2), title="d_k (log scale)",
                axis=alt.Axis(values=list(SCALING_DKS))),
        y=alt.Y(f"{metric}:Q", title=metric, scale=alt.Scale(zero=True)),
        # the legend above the plots: on their right it widened the figure by a fifth
        color=alt.Color("version:N", scale=alt.Scale(range=viz.palette(lecture)), title=None,
                        legend=alt.Legend(orient="top")))


def scaling_figure(table: pd.DataFrame, *, lecture: bool = False) -> alt.ConcatChart:
    """The three metrics in one figure, two a row, one shared legend above them. Three in a row
    were 942 px wide: wider than the page's column even at 1920 px, so the whole figure was
    shrunk as a picture (its text 6.6 px at 1024 px); two a row fit a 1024 px laptop's column."""
    width = 170 if lecture else 185
    return alt.concat(*[scaling_chart(table, metric, lecture=lecture, width=width) for metric in SCALING_METRICS],
                      columns=2, spacing=28)


@fast_build
def names_length_chart(table: pd.DataFrame, *, lecture: bool = False) -> alt.Chart:
    """Names by length, coloured by whether the lecture's windowing keeps or drops them (a name's
    length alone decides it, so each bar has one colour)."""
    dropped = table["lecture examples per name"] == 0
    long = pd.DataFrame({"name length": table["name length"], "names": table["names"],
                         "lecture windowing": np.where(dropped, NAMES_DROPPED, NAMES_KEPT)})
    colors = viz.palette(lecture)
    return alt.Chart(long).mark_bar().encode(
        x=alt.X("name length:O", title="name length (characters)", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("names:Q", title="number of names"),
        color=alt.Color("lecture windowing:N", scale=alt.Scale(
            domain=[NAMES_DROPPED, NAMES_KEPT], range=[colors[1], colors[0]]),  # dropped: the warm colour
            title=None, legend=alt.Legend(orient="top")),
        tooltip=["name length:O", "lecture windowing:N", "names:Q"],
    ).properties(title="Names by length: which ones the lecture's windowing drops", width=560, height=260)


def fit_curve_chart(curve: pd.DataFrame, *, lecture: bool = False) -> alt.Chart:
    """Validation loss of the buggy and the fixed fit (core.pitfalls.fit_indent.demo's curve)."""
    chart = viz.line_chart(curve, x="iteration", y="loss", series="version", points=True,
                           title="Validation loss during fit", x_title="iteration",
                           y_title="validation loss (nats)", lecture=lecture)
    # the legend above the plot: its labels ("fixed: 200 optimizer steps") took a third of the
    # width on its right in lecture mode
    return chart.encode(color=alt.Color(field="version", type="nominal", title=None,
                                        scale=alt.Scale(range=viz.palette(lecture)),
                                        legend=alt.Legend(orient="top")))


def order_change_chart(max_logit_diff: dict[str, float], *, lecture: bool = False) -> alt.LayerChart:
    """One bar per model: how much its last output moves when the earlier tokens are permuted."""
    return viz.bar_chart(list(max_logit_diff.values()), list(max_logit_diff),
                         title="How much the last output changes",
                         y_title="max |Δ logit| at the last position", fmt=".2e", lecture=lecture)


def race_chart(frame: pd.DataFrame, *, lecture: bool = False) -> alt.LayerChart:
    """The SGD/AdamW race's loss curves (core.pitfalls.sgd.race_frame) on the Train page's loss
    chart: one colour per optimizer; per step, smoothed and validation; the uniform guess ln 27."""
    return loss_chart(frame, vocab_size=27, lecture=lecture,
                      title="SGD (lecture) vs AdamW: same model, data, batches and steps")
