"""Charts of a trained names GPT (the Sample and Inside-the-model pages), on the viz primitives.

Sample page: where the sampled names stand (`shares_chart`), the next-character probabilities at
one step of a name (`step_bars_chart`) and at every step (`steps_heatmap`).
Inside page: every layer's and head's attention map as one grid of small multiples
(`attention_grid_chart`, the 4-D form of `heatmap`), one head enlarged, the next-character
probabilities at each position, the token embedding matrix and its 2-D PCA.
The numbers come from core.lessons.sample_names and core.lessons.inside_model.
"""

from __future__ import annotations

import math

import altair as alt
import numpy as np
import pandas as pd

from core.lessons.inside_model import CHAR_GROUPS, Inspection, embedding_matrix
from core.lessons.sample_names import LABEL_TITLES, NameSteps
from core.models import GPT
from core.sampling import SampledName, label_shares
from core.tokenizers import BOUNDARY_TOKEN, CharTokenizer
from core.viz.bars import grouped_bars, hbar_chart, scatter
from core.viz.heatmap import heatmap
from core.viz.theme import diverging_scheme

# Which colour each end of a diverging scheme is, (low, high), as Vega draws it ("redblue" runs
# from red to blue): the embedding caption names its colours from the scheme the chart is drawn with.
SCHEME_ENDS = {"redblue": ("red", "blue"), "blueorange": ("blue", "orange")}
# the enlarged attention map writes this in a masked (future) cell, which is grey as in the grid
MASKED_CELL = "–"

# --------------------------------------------------------------------------------- Sample page


def shares_chart(samples: list[SampledName], *, lecture: bool = False) -> alt.LayerChart:
    """Bars: share of names that are new / in the training split / in the validation split, and
    of empty draws (the model wrote "." at once) where there are any."""
    shares = {k: v for k, v in label_shares(samples).items() if k != "empty" or v > 0}
    counts = [sum(s.label == k for s in samples) for k in shares]
    return hbar_chart(list(shares.values()), [LABEL_TITLES[k] for k in shares],
                      texts=[f"{s:.0%} ({c})" for s, c in zip(shares.values(), counts)],
                      x_title="share of the sampled names", lecture=lecture, domain=(0.0, 1.0),
                      x_format="%")


def step_bars_chart(steps: NameSteps, step: int, *, lecture: bool = False) -> alt.LayerChart:
    """Probability of every next character at one step; the character that came is highlighted."""
    p = steps.probs[step]  # (V,)
    chosen = steps.vocab.index(steps.chosen[step])
    # one character a bar, "." the end of the name (as in steps_heatmap): "end (.)" made the
    # names slant in a narrow column, and Vega then wrote every other one only
    labels = ["." if c == BOUNDARY_TOKEN else c for c in steps.vocab]
    if steps.was_given(step):  # the prefix chose it: the model's p is what it would have given
        title = (f"After “{steps.contexts[step]}”: the prefix gave “{steps.chosen[step]}” "
                 f"(the model: p = {p[chosen]:.2f})")
    else:
        title = (f"After “{steps.contexts[step]}”: the model gave "
                 f"“{steps.chosen[step]}” p = {p[chosen]:.2f}")
    return grouped_bars({"p(next)": p}, labels, title=title, x_title="next character (“.” = end)",
                        y_title="probability", fmt=".2f", lecture=lecture, highlight=chosen,
                        domain=(0.0, 1.0), max_labels=len(labels),
                        width=(34 if lecture else 24) * len(labels), height=240)


def steps_heatmap(steps: NameSteps, *, lecture: bool = False) -> alt.TopLevelMixin:
    """Every step at once: rows = what was read, columns = next character, colour = probability."""
    cols = ["." if c == BOUNDARY_TOKEN else c for c in steps.vocab]
    # a character the prefix gave is marked "(prefix)": the model did not choose it
    rows = [f"{ctx} → {nxt}" + (" (prefix)" if steps.was_given(t) else "")
            for t, (ctx, nxt) in enumerate(zip(steps.contexts, steps.chosen))]
    return heatmap(steps.probs, rows, cols, x_title="next character",
                   y_title="read so far → what came", fmt=".1f", lecture=lecture,
                   cell=26 if not lecture else 32, show_values=False, domain=(0.0, 1.0))


# --------------------------------------------------------------------------------- Inside page


# The overview of every map is drawn as one picture, scaled down where it is wider than the page's
# column: past half size its labels are specks. A model too wide for that (8 layers x 16 heads)
# shows one layer's heads instead, wrapped so that they are drawn at 70% or more.
OVERVIEW_COLUMN_PX = 640  # the page's column: 564 px at 1024 px with the sidebar, 700 without
MIN_GRID_SCALE = 0.5  # every layer and head in one picture, drawn at least this large
MIN_LAYER_SCALE = 0.7  # one layer's heads, drawn at least this large


def _grid_cell(T: int, lecture: bool) -> int:
    """The overview's cell size in px for T positions: the maps stay about 220 px across, with
    cells of 14 px at least (the heatmap's own floor)."""
    return max(14, min(28 if not lecture else 32, int(220 / max(T, 1))))


def _grid_width(n_maps: int, T: int, lecture: bool, layer_names: bool = True) -> int:
    """The overview's width in px with `n_maps` maps in a row: the query labels (and the layer
    names of a grid of every layer) on the left, the maps and the space between them, the colour
    legend on the right. Within 10% of what Vega draws (tests/core/test_runs.py)."""
    left = 50 if layer_names else 30
    return left + n_maps * (T * _grid_cell(T, lecture) + 14) + 60


def overview_plan(n_layer: int, n_head: int, T: int, *, lecture: bool = False,
                  column_px: int = OVERVIEW_COLUMN_PX) -> int | None:
    """How the overview draws a model of n_layer x n_head maps of (T, T): None for every layer
    and head in one picture (a row per layer), else the number of heads per row of a picture of
    one layer's heads (the layer the student picks)."""
    if column_px / _grid_width(n_head, T, lecture) >= MIN_GRID_SCALE:
        return None
    fits = [n for n in range(1, n_head + 1)
            if column_px / _grid_width(n, T, lecture, layer_names=False) >= MIN_LAYER_SCALE]
    widest = max(fits, default=1)
    # as few rows as the widest row allows, filled evenly: 12 heads at most 5 to a row are drawn
    # 4 + 4 + 4, not 5 + 5 + 2 (a short last row leaves key axes floating under the row above)
    rows = math.ceil(n_head / widest)
    return math.ceil(n_head / rows)


def attention_grid_chart(inspection: Inspection, *, lecture: bool = False, cell: int | None = None,
                         layer: int | None = None, columns: int | None = None) -> alt.FacetChart:
    """Small multiples: one row per layer, one map per head (queries down, keys across). A causal
    model gives exactly 0 to the future: those cells are grey (masked, not "ignored").
    `layer`: only that layer's heads, `columns` to a row (overview_plan)."""
    n_layer, n_head, T, _ = inspection.attn.shape  # (n_layer, n_head, T, T)
    cell = cell or _grid_cell(T, lecture)
    future = np.triu(np.ones((T, T), dtype=bool), k=1) if inspection.causal else None  # (T, T)
    heads = [f"head {j + 1}" for j in range(n_head)]
    if layer is None:
        weights, facets = inspection.attn, ([f"layer {i + 1}" for i in range(n_layer)], heads)
    else:
        weights, facets = inspection.attn[layer], [f"layer {layer + 1}, {head}" for head in heads]  # (n_head, T, T)
    return heatmap(weights, inspection.tokens, inspection.tokens,
                   x_title="key (attended to)", y_title="query", fmt=".3f", lecture=lecture,
                   cell=cell, show_values=False, legend=True, domain=(0.0, 1.0), masked=future,
                   facets=facets, facet_columns=columns)


def attention_head_chart(inspection: Inspection, layer: int, head: int, *,
                         lecture: bool = False) -> alt.TopLevelMixin:
    """One head, large, with the weight written in every cell. A layer or head the model does
    not have is a ValueError (numpy would wrap a negative index round to another head)."""
    n_layer, n_head = inspection.attn.shape[:2]
    if not (0 <= layer < n_layer and 0 <= head < n_head):
        raise ValueError(f"layer {layer + 1}, head {head + 1} is not in this model "
                         f"({n_layer} layers × {n_head} heads).")
    weights = inspection.attn[layer, head]  # (T, T)
    # the future of a causal model is masked: grey with a dash, as in the grid (not a pale "0.00")
    future = np.triu(np.ones(weights.shape, dtype=bool), k=1) if inspection.causal else None
    return heatmap(weights, inspection.tokens, inspection.tokens,
                   title=f"Layer {layer + 1}, head {head + 1}: attention weights",
                   x_title="key (the character attended to)", y_title="query (the position reading)",
                   fmt=".2f", lecture=lecture, domain=(0.0, 1.0),
                   special=None if future is None else np.where(future, MASKED_CELL, ""))


def next_char_chart(inspection: Inspection, *, lecture: bool = False) -> alt.TopLevelMixin:
    """Rows = positions (what was read so far), columns = characters, colour = p(next)."""
    text = "".join(inspection.tokens)
    rows = [f"{text[: t + 1]}" for t in range(len(inspection.tokens))]
    return heatmap(inspection.probs, rows, list(inspection.vocab), x_title="next character",
                   y_title="read so far", lecture=lecture, show_values=False,
                   cell=26 if not lecture else 30, domain=(0.0, 1.0))


def embedding_heatmap(model: GPT, tokenizer: CharTokenizer, *, lecture: bool = False) -> alt.TopLevelMixin:
    """The token embedding matrix: one row per character, one column per dimension."""
    weights = embedding_matrix(model)  # (V, d_embed)
    return heatmap(weights, tokenizer.vocab, [str(i) for i in range(weights.shape[1])],
                   x_title="embedding dimension", y_title="character", lecture=lecture,
                   diverging=True, scheme=diverging_scheme(lecture), show_values=False,
                   cell_w=max(6, min(20, int(900 / weights.shape[1]))),
                   cell_h=20 if lecture else 16, thin_labels=True)


def embedding_colours(lecture: bool = False) -> str:
    """The embedding heatmap's colours in words ("blue positive, red negative"), from its scheme."""
    low, high = SCHEME_ENDS[diverging_scheme(lecture)]
    return f"{high} positive, {low} negative"


def pca_chart(df: pd.DataFrame, ratios: np.ndarray, *, lecture: bool = False) -> alt.LayerChart:
    """Labelled scatter of the 2-D PCA, coloured vowel / consonant / boundary."""
    return scatter(df, x="PC1", y="PC2", label="char", group="group", group_order=CHAR_GROUPS, lecture=lecture,
                   x_title=f"PC1 ({ratios[0]:.0%} of the variance)",
                   y_title=f"PC2 ({ratios[1]:.0%} of the variance)")
