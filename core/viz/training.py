"""The Train page's loss curves: every run of the session on one chart, redrawn twice a second.

The rows come from core.runs (`loss_frame`: per-step, smoothed and validation losses of each run).
While a run trains, the page sends only new rows: the chart's spec, without data, is built and
validated once per set of runs (`loss_chart_spec`), because rebuilding it every tick would cost
about a fifth of the training time.
"""

from __future__ import annotations

import functools
import json
import math

import altair as alt
import pandas as pd

from core.runs import KIND_VAL, KINDS
from core.viz.fit import LEGEND_COLUMN_GAP_PX, SYMBOL_PX, text_px
from core.viz.theme import fast_build, font_sizes, layered, palette, themed

TITLE = "Loss (nats per character)"
RUN_LABEL_LIMIT_PX = 320  # a run's name is cut beyond this (it says the preset and what changed)
# the two legends go one under the other: side by side they were cut on a phone (Vega does not
# wrap a row of legends); a Vega legend-layout setting, which Vega-Lite's schema does not describe
LEGENDS_STACKED = {"bottom": {"direction": "vertical", "anchor": "start", "margin": 6}}


def _row_px(labels, size: float) -> float:
    """How wide a legend's entries are in one row (symbol, label, gap) at label size `size`."""
    return sum(SYMBOL_PX + text_px(label, size) for label in labels) + \
        LEGEND_COLUMN_GAP_PX * (len(labels) - 1)


def _legend_columns(labels, size: float, most: int, limit_px: float = 1e9) -> alt.ExprRef:
    """A legend's number of columns as a Vega expression of the plot's drawn width: `most` (0: all
    in one row) where they fit, else one column, so a phone-wide chart does not cut its legend."""
    widest = max(min(text_px(label, size), limit_px) for label in labels)
    row = _row_px(labels, size) if most == 0 else \
        most * (SYMBOL_PX + widest) + LEGEND_COLUMN_GAP_PX * (most - 1)
    return alt.ExprRef(f"width >= {math.ceil(row)} ? {most} : 1")


def loss_layers(runs: tuple[str, ...], vocab_size: int, lecture: bool, title: str = TITLE,
                width: int = 640, height: int = 340) -> alt.LayerChart:
    """The loss chart without its rows: one colour per run; per step (faint), smoothed (solid),
    validation (dashed, dots); a grey rule at ln(V), the loss of a uniform guess."""
    runs = list(runs) or ["(no run yet)"]
    colours = palette(lecture)
    label_px = font_sizes(lecture)["label"]
    run_legend = alt.Legend(orient="bottom", columns=_legend_columns(runs, label_px, 2, RUN_LABEL_LIMIT_PX),
                            labelLimit=alt.ExprRef(f"min({RUN_LABEL_LIMIT_PX}, max(60, width - {SYMBOL_PX}))"))
    color = alt.Color("run:N", sort=runs, title="run",
                      scale=alt.Scale(domain=runs, range=[colours[i % len(colours)] for i in range(len(runs))]),
                      legend=run_legend)
    kind_legend = alt.Legend(orient="bottom", title=None, symbolStrokeColor="#444", symbolType="stroke",
                             columns=_legend_columns(KINDS, label_px, 0))
    base = alt.Chart().encode(
        x=alt.X("step:Q", title="optimisation step", scale=alt.Scale(domainMin=0)),
        y=alt.Y("loss:Q", title="loss (nats per character)", scale=alt.Scale(zero=False)),
        color=color,
        tooltip=["run:N", "kind:N", "step:Q", alt.Tooltip("loss:Q", format=".3f")],
    )
    lines = base.mark_line().encode(
        detail="kind:N",
        strokeDash=alt.StrokeDash("kind:N", scale=alt.Scale(domain=list(KINDS),
                                  range=[[1, 0], [1, 0], [7, 4]]), legend=kind_legend),
        strokeWidth=alt.StrokeWidth("kind:N", scale=alt.Scale(domain=list(KINDS),
                                    range=[1, 3.5 if lecture else 2.5, 2.5 if lecture else 2]),
                                    legend=kind_legend),
        opacity=alt.Opacity("kind:N", scale=alt.Scale(domain=list(KINDS), range=[0.3, 1, 1]),
                            legend=kind_legend),
    )
    points = base.transform_filter(alt.datum.kind == KIND_VAL).mark_point(
        filled=True, size=110 if lecture else 70)
    uniform = math.log(max(2, vocab_size))
    rule_data = alt.InlineData(values=[{"uniform": uniform,
                                        "text": f"uniform guess: ln {vocab_size} = {uniform:.2f}"}])
    rule = alt.Chart(rule_data).mark_rule(color="#888", strokeDash=[2, 3]).encode(y="uniform:Q")
    rule_text = alt.Chart(rule_data).mark_text(align="left", dx=4, dy=-7, color="#555",
                                               fontSize=font_sizes(lecture)["text"] - 1).encode(
        y="uniform:Q", x=alt.value(4), text="text:N")
    return layered([lines, points, rule, rule_text], title=title, width=width, height=height)


@fast_build
def loss_chart(frame: pd.DataFrame, *, vocab_size: int = 27, lecture: bool = False,
               title: str = TITLE, width: int = 640, height: int = 340) -> alt.LayerChart:
    """The loss chart with its rows (run, step, loss, kind): for downloads and exports."""
    runs = tuple(dict.fromkeys(frame["run"])) if len(frame) else ()
    chart = loss_layers(runs, vocab_size, lecture, title, width, height)
    chart.data = frame
    return chart


@functools.lru_cache(maxsize=64)
def _loss_spec_json(runs: tuple[str, ...], vocab_size: int, lecture: bool, width: int,
                    height: int) -> str:
    chart = fast_build(loss_layers)(runs, vocab_size, lecture, TITLE, width, height)
    spec = themed(chart, lecture).to_dict()
    # Altair gives layers without data an empty placeholder dataset; drop it so those layers read
    # the rows sent with each tick (the top-level data)
    spec.get("datasets", {}).pop("empty", None)
    for part in [spec] + spec.get("layer", []):
        if part.get("data") == {"name": "empty"}:
            del part["data"]
    config = spec.setdefault("config", {})
    config["legend"] = {**config.get("legend", {}), "layout": LEGENDS_STACKED}
    return json.dumps(spec)


def loss_chart_spec(runs: tuple[str, ...], *, vocab_size: int = 27, lecture: bool = False,
                    width: int = 640, height: int = 340) -> dict:
    """The loss chart as a themed Vega-Lite spec without data, built once per set of runs."""
    return json.loads(_loss_spec_json(tuple(runs), vocab_size, lecture, width, height))
