"""Bar charts (one series or several side by side, values written on the bars) and labelled scatter."""

from __future__ import annotations

import re
from typing import Sequence

import altair as alt
import numpy as np
import pandas as pd

from core.viz.fit import bar_values, text_px, value_em
from core.viz.theme import (LAYOUT_COLUMNS, LECTURE_MIN_VALUE_PX, contrast_ratio, fast_build, font_sizes,
                            format_value, layered, palette, unique_labels)

MIN_DECIMALS = {"f": 2, "%": 0, "e": 1}  # what a number on a bar keeps however narrow it is


def shorter_formats(fmt: str) -> list[str]:
    """The ways to write a number on a bar with fewer decimals, one and two fewer than `fmt`
    (".4f" -> [".3f", ".2f"]), keeping MIN_DECIMALS: the full value is in the tooltip."""
    match = re.fullmatch(r"([^.]*)\.(\d+)([fe%])", fmt)
    if not match:
        return []
    prefix, decimals, kind = match[1], int(match[2]), match[3]
    return [f"{prefix}.{k}{kind}" for k in range(decimals - 1, max(MIN_DECIMALS[kind], decimals - 2) - 1, -1)]


@fast_build
def bar_chart(values, labels: Sequence[str], *, title: str = "", x_title: str = "",
              y_title: str = "", fmt: str = ".4f", lecture: bool = False,
              highlight: int | None = None, domain: tuple[float, float] | None = None,
              width: int | None = None, height: int = 220) -> alt.LayerChart:
    """Vertical bars with their value written above each bar; bar `highlight` in the 2nd colour."""
    return grouped_bars({"": values}, labels, title=title, x_title=x_title, y_title=y_title,
                        fmt=fmt, lecture=lecture, highlight=highlight, domain=domain,
                        width=width, height=height)


@fast_build
def grouped_bars(series: dict[str, Sequence[float]], labels: Sequence[str], *, title: str = "",
                 x_title: str = "", y_title: str = "", fmt: str = ".4f", lecture: bool = False,
                 highlight: int | None = None, domain: tuple[float, float] | None = None,
                 max_labels: int = 16, width: int | None = None, height: int = 220) -> alt.LayerChart:
    """Bars per label, one colour per series side by side (e.g. softmax beside plain
    normalisation); values written on the bars while at most `max_labels` labels."""
    names = unique_labels(labels)
    written = len(names) <= max_labels
    # fewer decimals where the bars get too narrow for the numbers (see core.viz.fit.bar_values)
    shorter = shorter_formats(fmt) if written else []
    frames = []
    for kind, vals in series.items():
        vals = np.asarray(vals, dtype=np.float64).ravel()
        if len(vals) != len(names):
            raise ValueError(f"{len(vals)} values but {len(names)} labels")
        frame = pd.DataFrame({
            "label": names, "kind": kind, "value": np.where(np.isfinite(vals), vals, np.nan),
            "text": [format_value(v, fmt) for v in vals],
            "highlight": [i == highlight for i in range(len(vals))]})
        for k, short in enumerate(shorter, start=1):
            frame[f"text_{k}"] = [format_value(v, short) for v in vals]
        frames.append(frame)
    df = pd.concat(frames, ignore_index=True)
    colors = palette(lecture)
    grouped = len(series) > 1
    width = width or max(240, min(56 * len(names) * (len(series) if grouped else 1), 700))
    # names upright while they fit their bars as built; a chart laid out narrower slants them
    # (core.viz.fit._slant_when_narrow)
    label_px = max((text_px(name, font_sizes(lecture)["label"]) for name in names), default=0.0)
    upright = label_px + 6 <= width / max(len(names), 1)
    y_scale = alt.Scale(domain=list(domain)) if domain else alt.Scale()
    enc = dict(x=alt.X(field="label", type="nominal", sort=names, title=x_title,
                       axis=alt.Axis(labelAngle=0 if upright else -40, labelOverlap=False)),
               y=alt.Y(field="value", type="quantitative", title=y_title, scale=y_scale))
    if grouped:
        enc["xOffset"] = alt.XOffset(field="kind", type="nominal", sort=list(series))
    base = alt.Chart().encode(**enc)
    color = alt.Color(field="kind", type="nominal", sort=list(series), scale=alt.Scale(range=colors),
                      title=None, legend=alt.Legend(orient="top")) if grouped else \
        alt.ColorValue(colors[0], condition={"test": "datum.highlight", "value": colors[1]})
    tooltip = [alt.Tooltip(field="label", type="nominal")] + \
        ([alt.Tooltip(field="kind", type="nominal")] if grouped else []) + \
        [alt.Tooltip(field="text", type="nominal", title="value")]
    layers = [base.mark_bar().encode(color=color, tooltip=tooltip)]
    if written:
        font = font_sizes(lecture)["text"] - (2 if grouped else 1)
        font = max(font, LECTURE_MIN_VALUE_PX) if lecture else font
        # in a chart laid out narrower than built (core/viz/fit.py) the numbers shrink with the
        # bars, lose decimals, and at last stand upright: neighbours never run into each other
        ems = [max((value_em(t) for t in df[column]), default=1.0)
               for column in ["text"] + [f"text_{k}" for k in range(1, len(shorter) + 1)]]
        # lecture mode: the floor is the built size; plain: all the decimals down to 2 px smaller,
        # and the shortest numbers turn upright rather than go below that (7 px made 27 bars'
        # numbers unreadable)
        floor = LECTURE_MIN_VALUE_PX if lecture else font - 2
        mark, conditions = bar_values(font, floor, ems, bars=len(names), groups=len(series), readable=floor)
        text = {"field": "text", "type": "nominal"}
        if conditions:
            text["condition"] = conditions
        layers.append(base.mark_text(baseline="middle", **mark).encode(text=text))
    return layered(layers, data=df, title=title, width=width, height=height)


HBAR_TEXT_GAP_PX = 4  # between a bar's end and its text


def _ink_on(colour: str) -> str:
    """White or black, whichever reads on `colour` (WCAG's 4.5 for text)."""
    return "white" if contrast_ratio(colour, "#FFFFFF") >= 4.5 else "black"


@fast_build
def hbar_chart(values, labels: Sequence[str], *, texts: Sequence[str] | None = None,
               title: str = "", x_title: str = "", lecture: bool = False,
               domain: tuple[float, float] | None = None, x_format: str | None = None,
               width: int = 280, row_px: int | None = None) -> alt.LayerChart:
    """Horizontal bars, one colour per label, `texts` (default: the values) right of each bar, or
    inside its end where the plot has no room for it there and the bar has (a 95% bar in a narrow
    column: the text ran past the chart's edge and was cut); inside, white on a dark bar, black on
    a light one."""
    values = np.asarray(values, dtype=np.float64).ravel()
    names = unique_labels(labels)
    if len(names) != len(values):
        raise ValueError(f"{len(values)} values but {len(names)} labels")
    colours = palette(lecture)[:len(names)]
    font = 16 if lecture else 12
    shown = list(texts) if texts is not None else [f"{v:.3g}" for v in values]
    df = pd.DataFrame({"label": names, "value": values, "text": shown,
                       "text_px": [text_px(t, font) + HBAR_TEXT_GAP_PX for t in shown],
                       "inside_fill": [_ink_on(colour) for colour in colours]})
    base = alt.Chart().encode(
        y=alt.Y(field="label", type="nominal", sort=names, title=None, axis=alt.Axis(labelOverlap=False)),
        x=alt.X(field="value", type="quantitative", title=x_title,
                scale=alt.Scale(domain=list(domain)) if domain else alt.Scale(),
                axis=alt.Axis(format=x_format) if x_format else alt.Axis()))
    bars = base.mark_bar().encode(color=alt.Color(
        field="label", type="nominal", sort=names, legend=None,
        scale=alt.Scale(range=colours)))
    # per bar, as Vega draws it: no room right of the bar within the plot's width, and room inside
    # it (a bar too short for its text keeps it on its right, as before)
    no_room = ("scale('x', datum.value) + datum.text_px > width "
               "&& scale('x', datum.value) >= datum.text_px")
    text = base.mark_text(align=alt.ExprRef(f"{no_room} ? 'right' : 'left'"),
                          dx=alt.ExprRef(f"{no_room} ? -{HBAR_TEXT_GAP_PX} : {HBAR_TEXT_GAP_PX}"),
                          fill=alt.ExprRef(f"{no_room} ? datum.inside_fill : 'black'"),
                          fontSize=font).encode(text=alt.Text(field="text", type="nominal"))
    row_px = row_px or (42 if lecture else 32)
    return layered([bars, text], data=df, title=title, width=width,
                          height=row_px * len(names))


# Labels of a scatter. Written at a fixed offset right of their points, the labels of nearby
# points ran into each other ("y", "e" and "u" of the embedding PCA on top of one another). Each
# label is put instead at one of a few places around its point (_label_spots): one inside the
# plot, over no other label and no other point, as near its point as may be; a label pushed out
# past the first ring gets a thin line (a leader) to its point. A fitted chart (core/viz/fit.py)
# is laid out narrower than built in a narrow column: its x axis is squeezed, its y axis and its
# text are not (a 480 px plot got 246 px beside the metric at 1024 px). So the labels are placed
# for a few bands of plot widths (LABEL_WIDTHS) and Vega picks the placement of the width it
# draws at; the offsets are in px, so a label keeps its distance from its point.
# The bands run between these widths (over the built one): a little wider than built (a fitted
# plot's width is estimated) down to a quarter of it (narrower, labels may touch again).
LABEL_WIDTHS = (1.1, 0.75, 0.52, 0.36, 0.25)
LABEL_LINE_EM = 1.32  # a label's height: the box Chromium gives a line of Source Sans (21 px at 16 px)
LABEL_GAP_PX = 2  # kept free around a label
LABEL_RINGS = 4  # rings of places around a point; from the second on, a line leads to the label
LEADER_PIECES = 8  # a leader is checked as this many small boxes along it
MISREAD_RINGS = 1.5  # how many rings out a label goes rather than sit nearer another point
DOMAIN_PAD = 0.06  # the axes reach this share of the data's range past the outermost points
LEADER_GREY = "#888888"

# A box (a label, a point's circle, a piece of a leader) is a row (x at the band's narrowest plot,
# x at its widest, y, half width, half height), in px. Along x everything moves linearly with the
# plot's width, so two boxes apart at both ends of a band, on the same side, are apart all
# through it; across y nothing moves (a fitted chart keeps its height).


def _padded_domain(values: np.ndarray) -> list[float]:
    """The axis domain: the data's range and DOMAIN_PAD of it on each side (room for the labels of
    the outermost points), fixed here so that where a point is drawn is known in px."""
    finite = values[np.isfinite(values)]
    lo, hi = (float(finite.min()), float(finite.max())) if len(finite) else (0.0, 0.0)
    pad = DOMAIN_PAD * ((hi - lo) or max(abs(hi), 1.0))
    return [lo - pad, hi + pad]


def _spot_directions() -> tuple[np.ndarray, np.ndarray]:
    """The directions of a label's places from its point, best first, and each one's ring: right,
    left, above, below, the four diagonals; then the rings farther out, 16 directions each."""
    first = [(1, 0), (-1, 0), (0, -1), (0, 1), (1, -1), (-1, -1), (1, 1), (-1, 1)]
    between = [(np.cos(a), np.sin(a)) for a in np.radians(np.arange(22.5, 360, 45))]
    directions = [first] + [first + between] * (LABEL_RINGS - 1)
    units = np.array([d for ring in directions for d in ring], dtype=np.float64)
    rings = np.concatenate([np.full(len(ring), k) for k, ring in enumerate(directions)])
    return units / np.hypot(units[:, :1], units[:, 1:]), rings


SPOT_UNITS, SPOT_RINGS = _spot_directions()


def _label_spots(half_w: float, half_h: float, radius: float) -> np.ndarray:
    """Where a label's centre may go, as px offsets from its point (one row per SPOT_UNITS): as
    close as its box may come to the point's circle, and a line farther out for each ring."""
    reach = radius + LABEL_GAP_PX + SPOT_RINGS * 2 * half_h
    # the box's extent toward the point (its support along the direction) clears the circle
    out = reach + half_w * np.abs(SPOT_UNITS[:, 0]) + half_h * np.abs(SPOT_UNITS[:, 1])
    return SPOT_UNITS * out[:, None]


def _hits(boxes: np.ndarray, others: np.ndarray) -> np.ndarray:
    """How many of `others` (N, 5) each of `boxes` (S, 5) runs into at some width of the band."""
    if not len(others):
        return np.zeros(len(boxes), dtype=int)
    apart_y = np.abs(boxes[:, None, 2] - others[None, :, 2]) >= boxes[:, None, 4] + others[None, :, 4]
    narrow, wide = (boxes[:, None, end] - others[None, :, end] for end in (0, 1))
    reach_x = boxes[:, None, 3] + others[None, :, 3]
    apart_x = (np.minimum(narrow, wide) >= reach_x) | (np.maximum(narrow, wide) <= -reach_x)
    return (~(apart_y | apart_x)).sum(axis=1)


def _leader_span(offsets: np.ndarray, half: np.ndarray, radius: float) -> np.ndarray:
    """Where a leader along each label offset (S, 2) starts (the edge of the point's circle) and
    ends (the edge of the label's box, of half size `half`), as fractions of the offset (S, 2)."""
    length = np.maximum(np.hypot(offsets[:, 0], offsets[:, 1]), 1e-9)
    unit = np.abs(offsets) / length[:, None]
    # the label's box, seen from its centre back along the line, ends this far from the centre
    inside = np.min(half / np.maximum(unit, 1e-9), axis=1)
    return np.column_stack([(radius + 1) / length, 1 - inside / length])


def _leader_pieces(point: np.ndarray, offsets: np.ndarray, span: np.ndarray) -> np.ndarray:
    """Each leader (one per offset) as LEADER_PIECES boxes along it: (S, LEADER_PIECES, 5)."""
    steps = (np.arange(LEADER_PIECES) + 0.5) / LEADER_PIECES  # the pieces' middles
    at = span[:, :1] + (span[:, 1:] - span[:, :1]) * steps  # (S, P) fractions of the offset
    half = np.abs(offsets) * ((span[:, 1] - span[:, 0]) / (2 * LEADER_PIECES))[:, None]  # (S, 2)
    x = point[None, None, :2] + (at * offsets[:, :1])[..., None]
    y = point[2] + at * offsets[:, 1:]
    return np.concatenate([x, y[..., None], np.broadcast_to(half[:, None, :], at.shape + (2,))], axis=-1)


def _nearer_another(boxes: np.ndarray, circles: np.ndarray, own: int) -> np.ndarray:
    """Whether each label box lies nearer another point's circle than its own (at some width of
    the band): a reader would take it for that point's label."""
    dx = np.maximum(np.abs(boxes[:, None, :2] - circles[None, :, :2]) - boxes[:, None, 3:4], 0)
    dy = np.maximum(np.abs(boxes[:, None, 2] - circles[None, :, 2]) - boxes[:, None, 4], 0)
    near = np.hypot(dx, dy[..., None])  # (S, N, 2)
    return (np.delete(near, own, axis=1).min(axis=1, initial=np.inf) < near[:, own] - 0.5).any(axis=1)


def _crowded_first(px: np.ndarray, py: np.ndarray, line_px: float) -> np.ndarray:
    """The order the labels are placed in: the most crowded points first (the fewest free places
    are left around them; placed last, their labels were pushed far out while a lone neighbour's
    sat in their midst), crowding weighed by nearness in lines of text; ties as in the table."""
    near = np.hypot(px[:, None] - px[None, :], py[:, None] - py[None, :]) / line_px
    return np.argsort(-np.exp(-near).sum(axis=1), kind="stable")


def _spot_boxes(circle: np.ndarray, spots: np.ndarray, size: np.ndarray) -> np.ndarray:
    """The boxes (S, 5) of a label of half size `size` at each of its spots around `circle`."""
    return np.column_stack([circle[:2] + spots[:, :1], circle[2] + spots[:, 1],
                            np.broadcast_to(size, spots.shape)])


def _outside(boxes: np.ndarray, widths: tuple[float, float], height: float) -> np.ndarray:
    """Whether each box reaches past the plot at either end of the band."""
    return ((boxes[:, :2] - boxes[:, 3:4] < 0) | (boxes[:, :2] + boxes[:, 3:4] > widths)).any(axis=1) | \
        (boxes[:, 2] - boxes[:, 4] < 0) | (boxes[:, 2] + boxes[:, 4] > height)


def _place_labels(circles: np.ndarray, sizes: np.ndarray, radius: float, widths: tuple[float, float],
                  height: float) -> tuple[np.ndarray, np.ndarray]:
    """Greedy placement for one band of plot widths: each label, crowded points first, at the best
    of its spots: inside the plot, over no label, over no point (the fewest, where every spot is
    taken); of those, the nearest, a ring farther for each leader its box or its own leader
    crosses, MISREAD_RINGS farther where it has no leader and is nearer another point.
    `circles` (n, 5): the points' boxes; `sizes` (n, 2): the labels' half width and height.
    Returns the labels' offsets (n, 2) and rings (n,)."""
    n = len(circles)
    offsets, rings = np.zeros((n, 2)), np.zeros(n, dtype=int)
    labels, leaders = np.zeros((0, 5)), np.zeros((0, 5))  # placed so far (leaders as pieces)
    for i in _crowded_first(circles[:, 0], circles[:, 2], line_px=2 * sizes[:, 1].max(initial=1.0)):
        spots = _label_spots(*sizes[i], radius)
        boxes = _spot_boxes(circles[i], spots, sizes[i])
        others = np.delete(circles, i, axis=0)
        # what must not happen, worst first: past the plot's edge, over a label, over a point
        faults = np.column_stack([_outside(boxes, widths, height), _hits(boxes, labels), _hits(boxes, others)])
        least = faults[np.lexsort(faults.T[::-1])[0]]
        keep = np.flatnonzero((faults == least).all(axis=1))
        # only for the spots left: the leaders' pieces are the slow part
        pieces = _leader_pieces(circles[i], spots[keep], _leader_span(spots[keep], sizes[i], radius))
        crossed = _hits(boxes[keep], leaders) + (SPOT_RINGS[keep] > 0) * \
            _hits(pieces.reshape(-1, 5), np.concatenate([labels, others])).reshape(len(keep), -1).sum(axis=1)
        # a leader crossed costs a ring; a label without a leader next to another point, more
        misread = (SPOT_RINGS[keep] == 0) & _nearer_another(boxes[keep], circles, i)
        cost = SPOT_RINGS[keep] + crossed + MISREAD_RINGS * misread
        chosen = np.lexsort((keep, cost))[0]
        best = keep[chosen]
        offsets[i], rings[i] = spots[best], SPOT_RINGS[best]
        labels = np.concatenate([labels, boxes[best:best + 1]])
        if rings[i] > 0:
            leaders = np.concatenate([leaders, pieces[chosen]])
    return offsets, rings


def _label_columns(u: np.ndarray, v: np.ndarray, labels: list[str], font: float, radius: float,
                   width: int, height: int) -> dict[str, np.ndarray]:
    """The labels' px offsets from their points for each band k of LABEL_WIDTHS (columns label_dx_k,
    label_dy_k) and their leaders (lead_from_k, lead_to_k: where the leader starts and ends, as
    fractions of the offset; 0 and 0 for none), from the points' place in the axis domains (`u`
    left to right, `v` bottom to top, 0 to 1)."""
    sizes = np.array([(text_px(t, font) / 2, LABEL_LINE_EM * font / 2) for t in labels]).reshape(-1, 2)
    sizes += LABEL_GAP_PX / 2
    bounds = [width * s for s in LABEL_WIDTHS]
    columns = {}
    for k, (hi, lo) in enumerate(zip(bounds, bounds[1:])):
        circles = np.column_stack([u * lo, u * hi, height * (1 - v), np.full((len(u), 2), radius)])
        offsets, rings = _place_labels(circles, sizes, radius, (lo, hi), height)
        span = np.where((rings > 0)[:, None], _leader_span(offsets, sizes, radius), 0.0)
        columns.update({f"label_dx_{k}": offsets[:, 0], f"label_dy_{k}": offsets[:, 1],
                        f"lead_from_{k}": span[:, 0], f"lead_to_{k}": span[:, 1]})
    return columns


def _by_width(column: str, width: int) -> str:
    """A Vega expression: the column of the band of LABEL_WIDTHS the plot is drawn in (the last
    band's below it)."""
    last = len(LABEL_WIDTHS) - 2
    expr = f"datum.{column}_{last}"
    for k in range(last - 1, -1, -1):
        expr = f"width >= {width * LABEL_WIDTHS[k + 1]:.1f} ? datum.{column}_{k} : {expr}"
    return f"({expr})"


def _leader_layer(x: str, y: str, width: int) -> alt.Chart:
    """The lines from points to their labels (see _leader_span), in px from each point."""
    def at(end: str, axis: str, field: str) -> alt.ExprRef:
        offset, share = _by_width(f"label_d{axis}", width), _by_width(f"lead_{end}", width)
        return alt.expr(f"scale('{axis}', datum['{field}']) + {offset} * {share}")

    return alt.Chart().mark_rule(color=LEADER_GREY, strokeWidth=1).encode(
        x=alt.XValue(at("from", "x", x)), y=alt.YValue(at("from", "y", y)),
        x2=alt.X2Value(at("to", "x", x)), y2=alt.Y2Value(at("to", "y", y)))


@fast_build
def scatter(df: pd.DataFrame, *, x: str, y: str, label: str, group: str | None = None,
            group_order: Sequence[str] | None = None, title: str = "", lecture: bool = False,
            x_title: str | None = None, y_title: str | None = None, width: int = 480,
            height: int = 400) -> alt.LayerChart:
    """Labelled points (e.g. a 2-D PCA of embeddings), coloured by group (`group_order`: which
    group takes the palette's first colour, second, ...; default alphabetical); no label runs into
    another label or covers another point where there is room (see _place_labels)."""
    scale = alt.Scale(range=palette(lecture)) if group_order is None else \
        alt.Scale(domain=list(group_order), range=palette(lecture)[:len(group_order)])
    color = alt.Color(field=group, type="nominal", scale=scale, title=None) \
        if group else alt.ColorValue(palette(lecture)[0])
    size = 160 if lecture else 90  # Vega draws a circle of size s as sqrt(s) px across
    font = font_sizes(lecture)["text"]
    x_domain = _padded_domain(df[x].to_numpy(dtype=np.float64))
    y_domain = _padded_domain(df[y].to_numpy(dtype=np.float64))
    u = (df[x].to_numpy(dtype=np.float64) - x_domain[0]) / (x_domain[1] - x_domain[0])
    v = (df[y].to_numpy(dtype=np.float64) - y_domain[0]) / (y_domain[1] - y_domain[0])
    columns = _label_columns(np.nan_to_num(u, nan=0.5), np.nan_to_num(v, nan=0.5),
                             [str(t) for t in df[label]], font, np.sqrt(size) / 2, width, height)
    data = pd.concat([df, pd.DataFrame(columns, index=df.index)], axis=1)
    base = alt.Chart().encode(
        x=alt.X(field=x, type="quantitative", title=x_title or x,
                scale=alt.Scale(domain=x_domain, nice=False, zero=False)),
        y=alt.Y(field=y, type="quantitative", title=y_title or y,
                scale=alt.Scale(domain=y_domain, nice=False, zero=False)))
    points = base.mark_circle(size=size).encode(
        color=color, tooltip=[alt.Tooltip(field=label, type="nominal")])
    text = base.mark_text(align="center", baseline="middle", fontSize=font,
                          dx=alt.expr(_by_width("label_dx", width)),
                          dy=alt.expr(_by_width("label_dy", width))).encode(
        text=alt.Text(field=label, type="nominal"))
    # the points first, as in every scatter (a leader starts at the edge of its point's circle)
    chart = layered([points, _leader_layer(x, y, width), text], data=data, title=title,
                    width=width, height=height)
    return chart.properties(usermeta={LAYOUT_COLUMNS: list(columns)})  # not in its CSV
