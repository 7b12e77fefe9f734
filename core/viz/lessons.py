"""Charts of the lessons (pages 1-6), built on the core.viz primitives.

The walkthrough's labelled matrices and bars are `viz.heatmap` and `viz.bar_chart` /
`viz.grouped_bars` themselves (called from ui/walkthrough.py); this module holds what is specific
to a lesson: the √d_k curve, the sliding windows drawn over the tokens, the small-LM race's loss
curves and the compact heatmaps of the small LM's tables. Pure functions from numbers (computed
in core/lessons) to Altair charts.
"""

from __future__ import annotations

import math
from typing import Sequence

import altair as alt
import numpy as np
import pandas as pd

from core import viz
from core.lessons.small_lm import MODEL_LABELS
from core.lessons.tokens_data import WINDOW_KINDS, LoaderView, window_frame
from core.lessons.walkthrough import SCALE_DKS
from core.viz.fit import cell_values, value_em
from core.viz.theme import LECTURE_MIN_VALUE_PX, fast_build, palette, text_on

UNSCALED, SCALED = "softmax(q·k)", "softmax(q·k / √d_k)"  # the two lines of the scaling chart


def values_written(chart: alt.TopLevelMixin) -> bool:
    """Whether a `viz.heatmap` writes its numbers in the cells (it has a text layer)."""
    for layer in getattr(chart, "layer", ()):
        mark = layer.mark
        if (mark if isinstance(mark, str) else getattr(mark, "type", None)) == "text":
            return True
    return False


@fast_build
def scaling_chart(table: pd.DataFrame, *, chosen: int | None = None, lecture: bool = False,
                  width: int = 340) -> alt.LayerChart:
    """Mean largest softmax weight vs d_k (log scale), with and without 1/√d_k
    (`core.lessons.self_attention.scaling_table`); a dashed rule at the chosen d_k."""
    lines = viz.line_chart(table, x="d_k", y="max_weight", series="kind", points=True,
                           lecture=lecture, width=width, height=260).encode(
        # d_k doubles at each point: a log axis spaces them evenly
        x=alt.X("d_k:Q", scale=alt.Scale(type="log", base=2), title="d_k (width of q and k)",
                axis=alt.Axis(values=list(SCALE_DKS))),
        y=alt.Y("max_weight:Q", scale=alt.Scale(domain=[0, 1]), title="largest softmax weight (mean)"),
        color=alt.Color("kind:N", scale=alt.Scale(range=palette(lecture)), title=None,
                        sort=[UNSCALED, SCALED], legend=alt.Legend(orient="top")),
        tooltip=[alt.Tooltip("d_k:Q"), alt.Tooltip("kind:N"), alt.Tooltip("max_weight:Q", format=".3f"),
                 alt.Tooltip("score_std:Q", format=".2f", title="std of the scores")])
    layers = [lines]
    if chosen is not None:
        layers.append(alt.Chart(table).mark_rule(strokeDash=[4, 4], color="#666").encode(
            x=alt.XDatum(chosen)))
    return alt.layer(*layers).properties(title="Softmax slides to one-hot as d_k grows",
                                         width=width, height=260)


@fast_build
def window_chart(view: LoaderView, *, max_tokens: int = 24, max_windows: int = 8,
                 lecture: bool = False) -> alt.LayerChart:
    """The windows drawn over the token sequence: overlap and never-read tokens are visible.
    A window that runs past the tokens shown is left out (it was drawn as one input cell and no
    target); the ids shrink with their cells in a narrow column, and turn upright where a
    five-digit id no longer fits across its cell."""
    df = window_frame(view, max_tokens, max_windows)
    rows = df.groupby("row", sort=False)["pos"].transform("size")
    whole = (df["order"] == 0) | (rows == view.settings.max_length)
    cut = set(df.loc[~whole, "order"].map(lambda order: (order - 1) // 2))  # windows not drawn whole
    df = df[~((df["order"] > 0) & ((df["order"] - 1) // 2).isin(cut))]
    colours = palette(lecture)
    fills = [colours[0], colours[1], "#E8E8E8", "#C7E9C0", "#74C476"]
    kind_scale = alt.Scale(domain=WINDOW_KINDS, range=fills)
    # an id is black or white by its cell's colour: white on the dark orange read at 4.5:1 only
    text_scale = alt.Scale(domain=WINDOW_KINDS, range=[text_on(fill) for fill in fills])
    pos_order = list(dict.fromkeys(df["pos"]))
    row_order = list(dict.fromkeys(df.sort_values("order", kind="stable")["row"]))
    # the y labels take ~110 px more: the whole chart stays within the page's ~800 px
    cell = max(22, min(40 if lecture else 36, 640 // max(len(pos_order), 1)))
    font = LECTURE_MIN_VALUE_PX if lecture else 10
    id_em = max((value_em(t) for t in df["text"]), default=1.0)
    # rows tall enough for an id turned upright (a narrow column), at least as built before
    row_px = max(cell - 10, math.ceil(id_em * font) + 6)
    size = cell_values(font, LECTURE_MIN_VALUE_PX if lecture else 8, id_em)
    base = alt.Chart(df).encode(
        x=alt.X("pos:N", sort=pos_order, title="token position : token",
                axis=alt.Axis(labelAngle=-55, orient="top", labelOverlap=False)),
        y=alt.Y("row:N", sort=row_order, title=None),
        tooltip=["row:N", "pos:N", alt.Tooltip("text:N", title="id / uses"), "kind:N"])
    rect = base.mark_rect(stroke="white", strokeWidth=1.5).encode(
        color=alt.Color("kind:N", scale=kind_scale, title=None,
                        # squares as large as a letter, outlined: the pale "never an input" one
                        # was a 4-px dot that vanished into the white page
                        legend=alt.Legend(orient="bottom", columns=3, symbolType="square",
                                          symbolSize=260 if lecture else 150, symbolStrokeColor="#767676",
                                          symbolStrokeWidth=1)))
    text = base.mark_text(**size).encode(
        text="text:N",
        color=alt.Color("kind:N", scale=text_scale, legend=None))
    # the cells' colours and the ids' colours are two scales of the same field
    return alt.layer(rect, text).resolve_scale(color="independent").properties(width=cell * len(pos_order),
                                            height=row_px * len(row_order))


SPLIT_WORDS = {"val": "validation (solid)", "train": "train (dashed)"}  # the race's splits as drawn


@fast_build
def race_loss_chart(history: pd.DataFrame, *, floor: float | None = None, lecture: bool = False,
                    width: int = 640, height: int = 340, min_steps: int = 1) -> alt.TopLevelMixin:
    """Train (dashed) and val (solid) loss of every model against the step; the bigram floor dotted
    (`core.lessons.small_lm.SmallLMRace.history_frame` and `bigram_floor`).

    Before the second evaluation each line is one point, which a line mark does not draw: the
    evaluations are then drawn as points, and the step axis spans at least `min_steps` (e.g. the
    evaluation interval) so that it reads 0 … min_steps instead of one tick at 0.000000."""
    rule = None
    if floor is not None and math.isfinite(floor):
        rule = (floor, f"best possible bigram (train): {floor:.3f}")
    if "split" in history:  # the dash legend's entries in words, so that their width is known (fit)
        history = history.assign(split=history["split"].map(SPLIT_WORDS).fillna(history["split"]))
    steps = history["step"] if "step" in history else pd.Series(dtype=float)
    few_points = steps.nunique() < 2
    chart = viz.line_chart(history, x="step", y="loss", series="model", dash="split",
                           x_title="training step", y_title="loss (nats / character)",
                           lecture=lecture, width=width, height=height, rule=rule,
                           points=few_points)
    last_step = float(steps.max()) if len(steps) else 0.0
    x_scale = (alt.Scale(domain=[0, max(min_steps, 1)]) if last_step < min_steps
               else alt.Scale(domainMin=0))
    # the models in the lesson's order, and validation solid (the number that matters), train dashed
    lines = (chart.layer[0] if rule else chart).encode(
        color=alt.Color("model:N", scale=alt.Scale(domain=list(MODEL_LABELS.values()),
                                                   range=palette(lecture)[:len(MODEL_LABELS)]),
                        title=None, legend=alt.Legend(orient="top", columns=1, labelLimit=320)),
        # the dash legend draws line segments, solid and dashed, named in words: with the chart's
        # default symbols "val" and "train" were two identical dots (squares once trained)
        strokeDash=alt.StrokeDash("split:N", scale=alt.Scale(domain=[SPLIT_WORDS["val"], SPLIT_WORDS["train"]],
                                                             range=[[1, 0], [6, 4]]),
                                  # one above the other, beside the models: in a row they
                                  # ran past the chart's right edge ("train (dash…" cut in
                                  # lecture mode at 1024 px)
                                  title=None, legend=alt.Legend(
                                      orient="top", columns=1, symbolType="stroke", symbolSize=900,
                                      symbolStrokeWidth=3 if lecture else 2,
                                      symbolStrokeColor="#333", symbolFillColor="transparent")),
        y=alt.Y("loss:Q", title="loss (nats / character)", scale=alt.Scale(zero=True)),
        x=alt.X("step:Q", title="training step", scale=x_scale,
                axis=alt.Axis(format=",d", tickMinStep=1)))
    if not rule:
        return lines
    chart.layer[0] = lines
    return chart


@fast_build
def compact_heatmap(matrix, row_labels: Sequence[str], col_labels: Sequence[str], *,
                    title: str = "", x_title: str = "", y_title: str = "",
                    diverging: bool = False, scheme: str | None = None, max_side: int = 300,
                    domain: tuple[float, float] | None = None, thin_labels: bool = False,
                    lecture: bool = False) -> alt.TopLevelMixin:
    """`viz.heatmap` for tables too big to print a value in each cell (tooltips hold them): cells
    may be taller than wide, so the row labels (characters) stay readable with many columns.
    `thin_labels`: column names that may be thinned out in a narrow column (dimension indices).

    Rows (and columns named by one character, not thinned) are at least a line of the axis labels
    tall (wide) while that keeps the table under LABELLED_TABLE_PX: in `max_side` px, the 28
    characters of the names data got 10 px rows for 11 px letters (19 px in lecture mode), which
    ran into one another. A larger vocabulary (50 characters shown) keeps the smaller cells."""
    values = np.asarray(matrix, dtype=np.float64)
    n_rows, n_cols = values.shape
    line = viz.font_sizes(lecture)["label"] + 3  # a line of axis labels, with a little air
    cell_w = max(5, min(22, max_side // max(n_cols, 1)))
    cell_h = max(5, min(22, max_side // max(n_rows, 1)))
    if n_rows * line <= LABELLED_TABLE_PX:
        cell_h = max(cell_h, line)
    one_letter = all(len(str(name)) == 1 for name in col_labels)
    if one_letter and not thin_labels and n_cols * line <= LABELLED_TABLE_PX:
        cell_w = max(cell_w, line)  # upright letters, one per column
    return viz.heatmap(values, row_labels, col_labels, title=title, x_title=x_title,
                       y_title=y_title, fmt=".3f", lecture=lecture, diverging=diverging, scheme=scheme,
                       domain=domain, show_values=False, legend=True, thin_labels=thin_labels,
                       cell_w=cell_w, cell_h=cell_h)


LABELLED_TABLE_PX = 600  # the tallest (widest) compact_heatmap grows to so that every label reads
