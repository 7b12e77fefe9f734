"""Charts of the names GPT's pages (TEMPORARY: moves to core/viz once it exists)."""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from typing import Any, Callable

import altair as alt
import numpy as np
import pandas as pd

from altair.utils.schemapi import debug_mode

from core.viz import heatmap, palette
from core.lessons.inside_model import Inspection, embedding_matrix
from core.lessons.sample_names import LABEL_TITLES, NameSteps
from core.models import GPT
from core.runs import KIND_VAL, KINDS, RunBook, chart_runs, loss_frame
from core.sampling import SampledName, label_shares
from core.tokenizers import BOUNDARY_TOKEN, CharTokenizer

def _fast_altair(builder: Callable) -> Callable:
    """Build a chart without Altair's validation at construction time (it validates once more when
    the chart is rendered, so nothing is lost); it halves the build time of a chart."""

    @functools.wraps(builder)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with debug_mode(False):
            return _padded(builder(*args, **kwargs))

    return wrapper


def _padded(chart: alt.TopLevelMixin) -> alt.TopLevelMixin:
    """Keep the plot at its set size and add the legend and axes around it. Without this,
    Streamlit applies "fit", which shrinks a heatmap's cells to make room for its legend."""
    return chart.properties(autosize=alt.AutoSizeParams(type="pad", contains="padding"))



def _loss_layers(runs: tuple[str, ...], vocab_size: int, lecture: bool, title: str,
                 width: int, height: int) -> alt.LayerChart:
    """The loss chart without its data (rows come from the parent): the same for every tick."""
    runs = list(runs) or ["(no run yet)"]
    colours = palette(lecture)
    color = alt.Color("run:N", sort=runs, title="run",
                      scale=alt.Scale(domain=runs, range=[colours[i % len(colours)] for i in range(len(runs))]),
                      legend=alt.Legend(orient="bottom", columns=2, labelLimit=320))
    kind_legend = alt.Legend(orient="bottom", title=None, symbolStrokeColor="#444", symbolType="stroke")
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
                                               fontSize=15 if lecture else 11).encode(
        y="uniform:Q", x=alt.value(4), text="text:N")
    return _padded(alt.layer(lines, points, rule, rule_text).properties(title=title, width=width,
                                                                         height=height))


@_fast_altair
def loss_chart(frame: pd.DataFrame, *, vocab_size: int = 27, lecture: bool = False,
               title: str = "Loss (nats per character)", width: int = 640,
               height: int = 340) -> alt.LayerChart:
    """Training loss per step (faint), smoothed (solid), validation (dashed, dots); one colour per
    run; a grey rule at ln(V), the loss of a uniform guess."""
    runs = tuple(dict.fromkeys(frame["run"])) if len(frame) else ()
    chart = _loss_layers(runs, vocab_size, lecture, title, width, height)
    chart.data = frame
    return chart


@functools.lru_cache(maxsize=64)
def _loss_spec_json(runs: tuple[str, ...], vocab_size: int, lecture: bool, width: int,
                    height: int) -> str:
    from core.viz import themed

    with debug_mode(False):
        chart = _loss_layers(runs, vocab_size, lecture, "Loss (nats per character)", width, height)
        spec = themed(chart, lecture).to_dict()
    # Altair gives layers without data an empty placeholder dataset; drop it so those layers read
    # the rows sent with each tick (the top-level data)
    spec.get("datasets", {}).pop("empty", None)
    for part in [spec] + spec.get("layer", []):
        if part.get("data") == {"name": "empty"}:
            del part["data"]
    return json.dumps(spec)


def loss_chart_spec(runs: tuple[str, ...], *, vocab_size: int = 27, lecture: bool = False,
                    width: int = 640, height: int = 340) -> dict:
    """The loss chart as a themed Vega-Lite spec without data, built once per set of runs.

    A tick only sends new rows: rebuilding and re-validating the Altair chart every half second
    would cost about a fifth of the training time."""
    return json.loads(_loss_spec_json(tuple(runs), vocab_size, lecture, width, height))


@dataclass
class ChartView:
    """The loss chart of the Train page: its rows and its (cached, data-free) spec."""

    frame: pd.DataFrame  # the chart's rows (run, step, loss, kind)
    spec: dict  # the loss chart's Vega-Lite spec (themed, without data)
    vocab_size: int  # for the uniform-guess rule


def chart_view(book: RunBook, *, overlay: bool = True, lecture: bool = False) -> ChartView:
    """The loss chart's rows and spec for the runs on the Train page's chart."""
    run = book.current
    frame = loss_frame(chart_runs(book, overlay))
    vocab_size = run.tokenizer.vocab_size if run is not None else 27
    runs = tuple(dict.fromkeys(frame["run"])) if len(frame) else ()
    return ChartView(frame, loss_chart_spec(runs, vocab_size=vocab_size, lecture=lecture), vocab_size)


@_fast_altair
def shares_chart(samples: list[SampledName], *, lecture: bool = False) -> alt.LayerChart:
    """Bars: share of names that are new / in the training split / in the validation split."""
    shares = label_shares(samples)
    df = pd.DataFrame({"where": [LABEL_TITLES[k] for k in shares],
                       "share": list(shares.values()),
                       "count": [sum(s.label == k for s in samples) for k in shares]})
    df["text"] = [f"{s:.0%} ({c})" for s, c in zip(df["share"], df["count"])]
    colours = palette(lecture)
    base = alt.Chart(df).encode(
        y=alt.Y("where:N", sort=list(df["where"]), title=None, axis=alt.Axis(labelOverlap=False)),
        x=alt.X("share:Q", title="share of the sampled names", scale=alt.Scale(domain=[0, 1]),
                axis=alt.Axis(format="%")))
    bars = base.mark_bar().encode(color=alt.Color("where:N", sort=list(df["where"]), legend=None,
                                                  scale=alt.Scale(range=colours[:3])))
    text = base.mark_text(align="left", dx=4, fontSize=16 if lecture else 12).encode(text="text:N")
    return alt.layer(bars, text).properties(width=280, height=130 if not lecture else 170)


@_fast_altair
def step_bars_chart(steps: NameSteps, step: int, *, lecture: bool = False) -> alt.LayerChart:
    """Probability of every next character at one step; the character that came is highlighted."""
    p = steps.probs[step]  # (V,)
    chosen = steps.vocab.index(steps.chosen[step])
    labels = ["end (.)" if c == BOUNDARY_TOKEN else c for c in steps.vocab]
    colours = palette(lecture)
    df = pd.DataFrame({"char": labels, "p": p, "came": [i == chosen for i in range(len(p))],
                       "text": [f"{v:.2f}" if v >= 0.005 else "" for v in p]})
    base = alt.Chart(df).encode(x=alt.X("char:N", sort=labels, title="next character",
                                        axis=alt.Axis(labelAngle=0)),
                                y=alt.Y("p:Q", title="probability", scale=alt.Scale(domain=[0, 1])))
    bars = base.mark_bar().encode(
        color=alt.condition("datum.came", alt.value(colours[1]), alt.value(colours[0])),
        tooltip=["char:N", alt.Tooltip("p:Q", format=".4f")])
    text = base.mark_text(dy=-7, fontSize=13 if lecture else 9).encode(text="text:N")
    title = (f"After “{steps.contexts[step]}”: the model gave "
             f"“{steps.chosen[step]}” p = {p[chosen]:.2f}")
    return alt.layer(bars, text).properties(title=title, width=34 * len(labels) if lecture else 24 * len(labels),
                                            height=240)


@_fast_altair
def steps_heatmap(steps: NameSteps, *, lecture: bool = False) -> alt.LayerChart:
    """Every step at once: rows = what was read, columns = next character, colour = probability."""
    cols = ["." if c == BOUNDARY_TOKEN else c for c in steps.vocab]
    rows = [f"{ctx} → {nxt}" for ctx, nxt in zip(steps.contexts, steps.chosen)]
    return heatmap(steps.probs, rows, cols, x_title="next character",
                   y_title="read so far → what came", fmt=".1f", lecture=lecture,
                   cell=26 if not lecture else 32, show_values=False, domain=(0.0, 1.0))


def attention_grid_frame(inspection: Inspection) -> pd.DataFrame:
    """Long-form rows (layer, head, query, key, weight, masked) of every attention map."""
    from core.viz import unique_labels

    n_layer, n_head, T, _ = inspection.attn.shape
    labels = np.asarray(unique_labels(inspection.tokens), dtype=object)
    layer, head, q, k = np.meshgrid(np.arange(n_layer), np.arange(n_head), np.arange(T), np.arange(T),
                                    indexing="ij")
    weights = inspection.attn.reshape(-1)  # (n_layer * n_head * T * T,)
    return pd.DataFrame({
        "layer": [f"layer {i + 1}" for i in layer.ravel()],
        "head": [f"head {i + 1}" for i in head.ravel()],
        "query": labels[q.ravel()], "key": labels[k.ravel()],
        "weight": weights,
        # a causal model gives exactly 0 to the future; grey says "masked", not "ignored"
        "masked": (k.ravel() > q.ravel()) & inspection.causal,
    })


@_fast_altair
def attention_grid_chart(inspection: Inspection, *, lecture: bool = False,
                         cell: int | None = None) -> alt.FacetChart:
    """Small multiples: one row per layer, one map per head (queries down, keys across)."""
    from core.viz import unique_labels

    T = len(inspection.tokens)
    cell = cell or max(12, min(28 if not lecture else 32, int(220 / max(T, 1))))
    order = unique_labels(inspection.tokens)
    df = attention_grid_frame(inspection)
    scheme = "viridis" if lecture else "blues"
    heat = alt.Chart(df).mark_rect(stroke="white", strokeWidth=0.5).encode(
        x=alt.X("key:N", sort=order, title="key (attended to)", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("query:N", sort=order, title="query"),
        color=alt.condition("datum.masked", alt.value("#BBBBBB"),
                            alt.Color("weight:Q", title="weight",
                                      scale=alt.Scale(scheme=scheme, domain=[0, 1]))),
        tooltip=["layer:N", "head:N", "query:N", "key:N", alt.Tooltip("weight:Q", format=".3f")],
    ).properties(width=cell * T, height=cell * T)
    n_layer, n_head = inspection.attn.shape[:2]
    return heat.facet(
        row=alt.Row("layer:N", sort=[f"layer {i + 1}" for i in range(n_layer)], title=None,
                    header=alt.Header(labelFontSize=16 if lecture else 12, labelFontWeight="bold")),
        column=alt.Column("head:N", sort=[f"head {i + 1}" for i in range(n_head)], title=None,
                          header=alt.Header(labelFontSize=16 if lecture else 12, labelFontWeight="bold")),
        spacing=10,
    )


@_fast_altair
def attention_head_chart(inspection: Inspection, layer: int, head: int, *,
                         lecture: bool = False) -> alt.LayerChart:
    """One head, large, with the weight written in every cell."""
    return heatmap(inspection.attn[layer, head], inspection.tokens, inspection.tokens,
                   title=f"Layer {layer + 1}, head {head + 1}: attention weights",
                   x_title="key (the character attended to)", y_title="query (the position reading)",
                   fmt=".2f", lecture=lecture, domain=(0.0, 1.0))


@_fast_altair
def next_char_chart(inspection: Inspection, *, lecture: bool = False) -> alt.LayerChart:
    """Rows = positions (what was read so far), columns = characters, colour = p(next)."""
    text = "".join(inspection.tokens)
    rows = [f"{text[: t + 1]}" for t in range(len(inspection.tokens))]
    cols = list(inspection.vocab)
    return heatmap(inspection.probs, rows, cols, x_title="next character",
                   y_title="read so far", lecture=lecture, show_values=False,
                   cell=26 if not lecture else 30, domain=(0.0, 1.0))


@_fast_altair
def embedding_heatmap(model: GPT, tokenizer: CharTokenizer, *, lecture: bool = False) -> alt.LayerChart:
    """The token embedding matrix: one row per character, one column per dimension."""
    weights = embedding_matrix(model)  # (V, d_embed)
    limit = float(np.abs(weights).max()) or 1.0
    cell = max(6, min(20, int(900 / weights.shape[1])))
    chart = heatmap(weights, tokenizer.vocab, [str(i) for i in range(weights.shape[1])],
                    x_title="embedding dimension", y_title="character", lecture=lecture,
                    scheme="redblue", cell=cell, show_values=False, domain=(-limit, limit))
    return chart.properties(height=16 * weights.shape[0] if not lecture else 20 * weights.shape[0])


@_fast_altair
def pca_chart(df: pd.DataFrame, ratios: np.ndarray, *, lecture: bool = False) -> alt.LayerChart:
    """Labelled scatter of the 2-D PCA, coloured vowel / consonant / boundary."""
    colours = palette(lecture)
    groups = ["vowel", "consonant", "start/end ."]
    x_title = f"PC1 ({ratios[0]:.0%} of the variance)"
    y_title = f"PC2 ({ratios[1]:.0%} of the variance)"
    base = alt.Chart(df).encode(x=alt.X("PC1:Q", title=x_title), y=alt.Y("PC2:Q", title=y_title))
    points = base.mark_circle(size=200 if lecture else 110, opacity=0.9).encode(
        color=alt.Color("group:N", sort=groups, title=None,
                        scale=alt.Scale(domain=groups, range=[colours[1], colours[0], colours[2]]),
                        legend=alt.Legend(orient="bottom")),
        tooltip=["char:N", "group:N", alt.Tooltip("PC1:Q", format=".3f"), alt.Tooltip("PC2:Q", format=".3f")])
    text = base.mark_text(dx=9, dy=-4, align="left", fontSize=18 if lecture else 13,
                          fontWeight="bold").encode(text="char:N")
    return alt.layer(points, text).properties(width=480, height=400)
