"""The one heatmap builder: a matrix (or a stack of them) with labelled axes and numbers in cells.

Every heatmap writes its value in each cell when the cells are wide enough, because a projected
colour alone cannot be checked against the book. −∞ and other "special" cells are grey and say
what they are; rows, columns or single cells can be outlined; a 3-D or 4-D stack becomes small
multiples (one panel per head, per layer, ...).
"""

from __future__ import annotations

import math
from typing import Sequence

import altair as alt
import numpy as np
import pandas as pd

from core.viz.fit import value_font
from core.viz.theme import (HIGHLIGHT, LECTURE_MIN_VALUE_PX, MASKED_GREY, diverging_scheme, layered,
                            fast_build, font_sizes, format_value, sequential_scheme, unique_labels)

MAX_CELL = 110  # px: the largest cell `fill_width` makes (a 2x2 matrix should not fill a wall)
MAX_VALUE_CELLS = 24  # beyond this many columns the numbers are hidden (colours and tooltips stay)
CHAR_PX = {False: 7, True: 10}  # rough width of one digit at the cell font size (normal, lecture)


def matrix_frame(matrix, row_labels: Sequence[str], col_labels: Sequence[str],
                 fmt: str = ".2f") -> pd.DataFrame:
    """Long-form table (row, col, row_i, col_i, value, label, finite) of a 2-D array."""
    values = np.asarray(matrix, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(f"a heatmap needs a 2-D matrix, got shape {values.shape}")
    rows, cols = unique_labels(row_labels), unique_labels(col_labels)
    if values.shape != (len(rows), len(cols)):
        raise ValueError(f"matrix shape {values.shape} does not match the labels "
                         f"({len(rows)} rows, {len(cols)} columns)")
    r_idx, c_idx = np.meshgrid(np.arange(len(rows)), np.arange(len(cols)), indexing="ij")
    flat = values.ravel()
    finite = np.isfinite(flat)
    return pd.DataFrame({
        "row": np.asarray(rows, dtype=object)[r_idx.ravel()],
        "col": np.asarray(cols, dtype=object)[c_idx.ravel()],
        "row_i": r_idx.ravel(), "col_i": c_idx.ravel(),
        # non-finite cells (masked -inf) carry no colour value; their text says what they are
        "value": np.where(finite, flat, np.nan),
        "label": [format_value(v, fmt) for v in flat],
        "finite": finite,
    })


def _panels(values: np.ndarray, facets) -> list[tuple[str, str, np.ndarray]]:
    """(grid row name, grid column name, matrix) for each panel of a 2-, 3- or 4-D stack."""
    if values.ndim == 2:
        return [("", "", values)]
    if values.ndim == 3:
        names = [str(f) for f in facets] if facets is not None else \
            [str(i) for i in range(values.shape[0])]
        if len(names) != values.shape[0]:
            raise ValueError(f"{values.shape[0]} panels but {len(names)} facet labels")
        return [("", names[i], values[i]) for i in range(values.shape[0])]
    if values.ndim == 4:
        if facets is None:
            facets = ([str(i) for i in range(values.shape[0])], [str(j) for j in range(values.shape[1])])
        grid_rows, grid_cols = [str(f) for f in facets[0]], [str(f) for f in facets[1]]
        if (len(grid_rows), len(grid_cols)) != values.shape[:2]:
            raise ValueError(f"a {values.shape[:2]} grid of panels but facet labels for "
                             f"{(len(grid_rows), len(grid_cols))}")
        return [(grid_rows[i], grid_cols[j], values[i, j])
                for i in range(values.shape[0]) for j in range(values.shape[1])]
    raise ValueError(f"a heatmap needs a 2-D matrix (or a 3-/4-D stack of them), got shape {values.shape}")


def _frame(values, row_labels, col_labels, fmt, special, masked, facets) -> pd.DataFrame:
    frames = []
    special_all = None if special is None else np.asarray(special, dtype=object).reshape(values.shape)
    masked_all = None if masked is None else np.asarray(masked, dtype=bool)
    if masked_all is not None:
        masked_all = np.broadcast_to(masked_all, values.shape)
    panel_index = np.arange(int(np.prod(values.shape[:-2], dtype=int)) or 1).reshape(values.shape[:-2] or (1,))
    for k, (grid_row, grid_col, matrix) in enumerate(_panels(values, facets)):
        df = matrix_frame(matrix, row_labels, col_labels, fmt)
        if values.ndim > 2:
            df["facet_row"], df["facet"] = grid_row, grid_col
        idx = np.unravel_index(k, panel_index.shape) if values.ndim > 2 else ()
        if special_all is not None:
            flat = special_all[idx].ravel() if idx else special_all.ravel()
            marked = np.array([bool(s) for s in flat])
            df["label"] = np.where(marked, flat, df["label"])
            df["finite"] = df["finite"] & ~marked
            df["value"] = np.where(marked, np.nan, df["value"])
        if masked_all is not None:
            flat = (masked_all[idx] if idx else masked_all).ravel()
            df["finite"] = df["finite"] & ~flat  # grey, but the number stays in the tooltip
            # ... which says in words that the cell is masked: grey alone is colour alone
            df["label"] = np.where(flat, df["label"] + " (masked)", df["label"])
        frames.append(df)
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


def _outlined(df: pd.DataFrame, highlight_row, highlight_col, highlight_cells) -> np.ndarray:
    out = np.zeros(len(df), dtype=bool)
    if highlight_row is not None:
        out |= df["row_i"].to_numpy() == int(highlight_row)
    if highlight_col is not None:
        out |= df["col_i"].to_numpy() == int(highlight_col)
    for r, c in highlight_cells or ():
        out |= (df["row_i"].to_numpy() == int(r)) & (df["col_i"].to_numpy() == int(c))
    return out


@fast_build
def heatmap(matrix, row_labels: Sequence[str], col_labels: Sequence[str], *, title: str = "",
            x_title: str = "", y_title: str = "", fmt: str = ".2f", lecture: bool = False,
            scheme: str | None = None, diverging: bool = False,
            domain: tuple[float, float] | None = None, cell: int | None = None,
            cell_w: int | None = None, cell_h: int | None = None, show_values: bool = True,
            max_width: int = 640, special=None, masked=None, highlight_row: int | None = None,
            highlight_col: int | None = None, highlight_cells: Sequence[tuple[int, int]] | None = None,
            facets=None, facet_columns: int | None = None, row_axis: bool = True,
            x_on_top: bool = False, legend: bool | None = None,
            fill_width: int | None = None, thin_labels: bool = False) -> alt.TopLevelMixin:
    """A labelled heatmap with the value written in each cell when it fits; −∞ cells are grey.

    `matrix`: 2-D (rows, cols); 3-D (panels, rows, cols) with `facets` = one name per panel
    (wrapped after `facet_columns`); 4-D (grid rows, grid cols, rows, cols) with `facets` =
    (grid row names, grid column names), e.g. layers x heads. Every panel shares the labels.
    `special`: strings of the matrix's shape; a non-empty one replaces the cell's text and greys it
    ("−∞", "✕", "0/0"). `masked`: booleans; True cells are grey but keep their value in the tooltip.
    `diverging`: signed values, symmetric domain around 0 unless `domain` is given.
    `cell`: side of a square cell in px (`cell_w`/`cell_h` fix each side); by default cells grow
    to fit their numbers, up to `max_width` for the panel. `fill_width` (px, e.g. the page width
    in lecture mode) grows square cells until the panel is that wide (at most MAX_CELL each).
    Numbers are hidden (a colour legend is shown instead) when `show_values` is False or they do
    not fit. `thin_labels`: column names Vega may thin out where they would overlap (every other
    dimension index of a wide matrix drawn narrower, core/viz/fit.py); by default all are written.
    """
    values = np.asarray(matrix, dtype=np.float64)
    df = _frame(values, row_labels, col_labels, fmt, special, masked, facets)
    n_rows, n_cols = values.shape[-2:]
    size = font_sizes(lecture)
    char_px = CHAR_PX[lecture]
    chars = max((len(s) for s in df["label"]), default=2)

    base_cell = cell or (54 if lecture else 44)
    base_cell = max(14, min(base_cell, int(max_width / max(n_cols, 1))))
    if fill_width and not cell:  # a small matrix on a projector: use the width there is
        max_width = max(max_width, fill_width)
        base_cell = max(base_cell, min(MAX_CELL, int(fill_width / max(n_cols, 1))))
    needed_w = chars * char_px + 8  # the widest number, with a margin
    fits = n_cols <= MAX_VALUE_CELLS and needed_w * n_cols <= max_width
    # a fixed cell width must hold the numbers; otherwise cells widen to fit them
    show = show_values and fits and (cell_w >= needed_w if cell_w else base_cell >= 30)
    width = cell_w or (max(base_cell, needed_w) if show else base_cell)
    height = cell_h or base_cell

    scheme = scheme or (diverging_scheme(lecture) if diverging else sequential_scheme(lecture))
    finite_vals = df.loc[df["finite"], "value"]
    if domain is None and diverging:
        limit = float(np.abs(finite_vals).max()) if len(finite_vals) else 1.0
        domain = (-(limit or 1.0), limit or 1.0)
    scale = alt.Scale(scheme=scheme, domain=list(domain)) if domain else alt.Scale(scheme=scheme)
    show_legend = (not show) if legend is None else legend

    rows = list(dict.fromkeys(df["row"]))
    cols = list(dict.fromkeys(df["col"]))
    # slant the column names when the longest is wider than a cell at the axis font (≈0.6 em a
    # character): level names would run into each other ("Youjourney")
    line_px = font_sizes(lecture)["label"]
    longest = max(map(len, cols), default=0)
    angle = -40 if longest * 0.6 * line_px > width - 4 else 0
    shown_cols = cols
    if width < line_px and longest > 1:
        # columns narrower than a line of text ("d0".."d31" in 9 px): even slanted, the names
        # ran into one another; upright, and only every k-th name, they can be read
        angle, shown_cols = -90, cols[::math.ceil(line_px / width)]
    # channels are built from field/type keywords and conditions from plain dicts: Altair parses
    # shorthands ("col:N") and alt.condition through its JSON schema even outside debug mode
    base = alt.Chart().encode(
        x=alt.X(field="col", type="nominal", sort=cols, title=x_title,
                axis=alt.Axis(labelAngle=angle, labelOverlap="parity" if thin_labels else False,
                              values=shown_cols,
                              orient="top" if x_on_top else "bottom")),
        # row_axis=False: a panel to the right of one that already names the rows
        y=alt.Y(field="row", type="nominal", sort=rows, title=y_title if row_axis else None,
                axis=alt.Axis(labelOverlap=False) if row_axis else alt.Axis(labels=False, ticks=False)),
        tooltip=[alt.Tooltip(field="row", type="nominal", title=y_title or "row"),
                 alt.Tooltip(field="col", type="nominal", title=x_title or "column"),
                 alt.Tooltip(field="label", type="nominal", title="value")])
    rect = base.mark_rect(stroke="white").encode(
        color=alt.ColorValue(MASKED_GREY, condition={
            "test": "datum.finite", "field": "value", "type": "quantitative",
            "scale": scale.to_dict(validate=False), "title": None,
            "legend": alt.Legend().to_dict(validate=False) if show_legend else None}))
    layers = [rect]
    outlined = _outlined(df, highlight_row, highlight_col, highlight_cells)
    if outlined.any():
        df["outlined"] = outlined
        # same data as the cells (one dataset to send); only the chosen cells get a visible stroke
        layers.append(base.mark_rect(fill=None, stroke=HIGHLIGHT, strokeWidth=3 if lecture else 2)
                      .encode(strokeOpacity=alt.StrokeOpacityValue(0, condition={
                          "test": "datum.outlined", "value": 1})))
    if show:
        font = size["text"] if width >= 44 else size["text"] - 3
        # one map alone may be laid out narrower than built (core/viz/fit.py): its numbers shrink
        # with their cells; the panels of a grid are always drawn at their size
        shrink = (chars, char_px * font / size["text"]) if values.ndim == 2 else None
        layers.append(_value_text(base, finite_vals, domain, scheme, diverging, lecture, font, shrink))
    # the data sits on the layer chart, not on each layer: Altair would otherwise hash every
    # layer's DataFrame to merge them, the slowest part of building a chart
    if values.ndim == 2:  # everything in the constructor: each later copy deep-copies the layers
        return layered(layers, data=df, title=title, width=width * n_cols,
                              height=height * n_rows)
    chart = layered(layers, data=df, width=width * n_cols, height=height * n_rows)
    return _faceted(chart, df, values.ndim, facet_columns, lecture, title)


def _value_text(base: alt.Chart, finite_vals: pd.Series, domain, scheme: str, diverging: bool,
                lecture: bool, font: int, shrink: tuple[int, float] | None = None) -> alt.Chart:
    """Numbers in the cells, white on dark cells and black on light ones. `shrink`: (characters
    of the widest number, px a character at `font`) to make the font smaller in narrower cells."""
    if lecture:
        font = max(font, LECTURE_MIN_VALUE_PX)
    size = value_font(font, *shrink, floor=LECTURE_MIN_VALUE_PX if lecture else 7) if shrink else font
    lo, hi = (domain if domain else ((float(finite_vals.min()), float(finite_vals.max()))
                                     if len(finite_vals) else (0.0, 1.0)))
    if diverging:  # both ends of a diverging scheme are dark
        cut = 0.6 * max(abs(lo), abs(hi))
        dark = f"datum.finite && abs(datum.value) > {cut!r}"
    else:
        mid = (lo + hi) / 2
        # the dark end is high for "blues"-like schemes, low for "viridis"
        dark = f"datum.finite && datum.value {'<' if scheme in ('viridis', 'magma', 'inferno', 'plasma', 'cividis') else '>'} {mid!r}"
    return base.mark_text(fontSize=size).encode(
        text=alt.Text(field="label", type="nominal"),
        color=alt.ColorValue("black", condition={"test": dark, "value": "white"}))


def _faceted(chart: alt.LayerChart, df: pd.DataFrame, ndim: int, columns: int | None,
             lecture: bool, title: str) -> alt.FacetChart:
    """Small multiples of `chart`, one per facet value (a layers x heads grid for 4-D)."""
    header = alt.Header(labelFontSize=16 if lecture else 12, labelFontWeight="bold", title=None)
    col_order = list(dict.fromkeys(df["facet"]))
    if ndim == 3:
        faceted = chart.facet(facet=alt.Facet(field="facet", type="nominal", sort=col_order,
                                              header=header, title=None),
                              columns=columns or len(col_order), spacing=12)
    else:
        row_order = list(dict.fromkeys(df["facet_row"]))
        faceted = chart.facet(row=alt.Row(field="facet_row", type="nominal", sort=row_order,
                                          header=header, title=None),
                              column=alt.Column(field="facet", type="nominal", sort=col_order,
                                                header=header, title=None),
                              spacing=10)
    return faceted.properties(title=title)
