"""How wide a chart is with its axes, legend and title: what lets a chart shrink to a narrow column.

Every chart is laid out with the "pad" autosize (`theme.padded`): its plot keeps the size it was
built with and the axes and legend go around it. In a column narrower than that (two charts side
by side on a 1024 px laptop with the sidebar open), the browser could only scale the whole
picture down, so its numbers shrank with it: a 6 x 6 attention map's values read at 8.7 px, a
token embedding's at 5.3 px. A chart whose width is known can instead be drawn with Vega's "fit"
autosize at that width: where the column is as wide, it looks the same; where it is narrower,
Vega lays it out again, with narrower bars and cells and its text at full size.

Vega measures text only in the browser, so the width is estimated here from the spec: the plot's
width, the left axis's labels and title, a legend on the right, the labels hanging past the plot
and the title. `tests/browser/test_chart_fit_browser.py` checks the estimate against the width
Chromium lays the charts out at. Only single and layered views are estimated: a faceted or
concatenated chart (None here) is still scaled as a picture.
"""

from __future__ import annotations

import itertools
import json
import math
import re

import numpy as np
import pandas as pd

from core.viz.text_width import text_em

# What an axis and a legend add to their text: Streamlit's chart theme (no ticks, 16 px between
# the labels and the plot and between the title and the labels, 8 px inside a legend, no padding
# around the chart) over Vega's defaults (a legend 18 px from the plot)
AXIS_LABEL_GAP_PX = 16
AXIS_TITLE_GAP_PX = 16
TITLE_LINE_EM = 1.3  # a rotated axis title takes a line of text
LEGEND_OFFSET_PX = 18 + 2 * 8
GRADIENT_PX = 16 + 4  # gradientThickness + labelOffset
SYMBOL_PX = 16 + 4  # a symbol + labelOffset
PADDING_PX = 0
# room left free on a fitted chart's right: Chromium draws a character its font lacks ("␣") from
# another font, a little wider than Vega measured it ("15:␣numbers" ran 2 px past the edge)
FIT_SPARE_PX = 4
LEGEND_COLUMN_GAP_PX = 8  # between the entries of a legend in a row (columnPadding)
LABEL_LIMIT_PX = 220  # theme_config's axis labelLimit
LEGEND_LABEL_LIMIT_PX = 160
# how narrow a fitted chart's plot must be able to get (a fraction of its own width) without
# the labels of a discrete x axis running into each other (see can_fit): two 346 px heatmaps side
# by side in a 1024 px window with the sidebar open get 274 px each
SHRINK_TO = 0.6
SLANTED_LINE_EM = 1.25  # slanted names' lines, one beside the next, must be this far apart (em)
# between two upright one-letter names on a discrete x axis, past their advance widths (which
# already hold the glyphs' side bearings, so their ink is further apart than this)
LETTER_GAP_PX = 2
FIT_WIDTH = "attentionLabFitWidth"  # usermeta key: the width a fitted spec is drawn at
# usermeta key: a title's text as built, kept where readable_title writes it as lines or as a Vega
# expression that picks the lines (what reads a spec's title, e.g. a test, finds it there)
TITLE_TEXT = "attentionLabTitle"


def text_px(text: str, size: float, semibold: bool = False) -> float:
    """The width of one line of `text` at `size` px (measured advance widths, on the wide side by
    less than a hundredth of an em a character: core.viz.text_width); `semibold` for a chart's title."""
    return text_em(text, semibold) * size


def _label_size(spec: dict, axis: dict) -> float:
    """An x or y axis's label font size in px: its own, else the chart's axis config's."""
    return axis.get("labelFontSize", spec.get("config", {}).get("axis", {}).get("labelFontSize", 10))


def _layers(spec: dict) -> list[dict]:
    return spec.get("layer") or [spec]


def _frame(spec: dict, layer: dict) -> pd.DataFrame | None:
    data = layer.get("data") or spec.get("data") or {}
    found = spec.get("datasets", {}).get(data.get("name"))
    return found if isinstance(found, pd.DataFrame) else None


def _channel(spec: dict, name: str) -> tuple[dict, pd.DataFrame | None] | None:
    """The first layer's encoding of channel `name` that reads a field, with that layer's table."""
    for layer in _layers(spec):
        enc = layer.get("encoding", {}).get(name)
        if isinstance(enc, dict) and ("field" in enc or "field" in enc.get("condition", {})):
            return enc, _frame(spec, layer)
    return None


def _categories(enc: dict, frame: pd.DataFrame | None) -> list[str]:
    """The labels of a discrete channel, in order: its axis values, its sort list or its data."""
    axis = enc.get("axis") or {}
    if isinstance(axis.get("values"), list):
        return [str(v) for v in axis["values"]]
    if isinstance(enc.get("sort"), list):
        return [str(v) for v in enc["sort"]]
    domain = (enc.get("scale") or {}).get("domain")
    if isinstance(domain, list):  # a spec sent without its rows (the live loss chart) names them here
        return [str(v) for v in domain]
    if frame is not None and enc.get("field") in frame:
        return [str(v) for v in dict.fromkeys(frame[enc["field"]])]
    return []


def _tick_labels(enc: dict, frame: pd.DataFrame | None, length_px: float) -> list[str]:
    """The tick labels Vega writes on a quantitative axis of `length_px` (about one per 40 px)."""
    scale = enc.get("scale") or {}
    domain = scale.get("domain")
    if isinstance(domain, list) and len(domain) == 2 and all(isinstance(v, (int, float)) for v in domain):
        lo, hi = map(float, domain)
    elif frame is not None and enc.get("field") in frame and len(frame):
        values = pd.to_numeric(frame[enc["field"]], errors="coerce").to_numpy(dtype=float)
        values = values[np.isfinite(values)]
        lo, hi = (float(values.min()), float(values.max())) if len(values) else (0.0, 1.0)
        if scale.get("zero", True):
            lo, hi = min(lo, 0.0), max(hi, 0.0)
    else:
        lo, hi = 0.0, 1.0
    span = (hi - lo) or abs(hi) or 1.0
    raw_step = span / max(2, length_px / 40)
    step = 10 ** math.floor(math.log10(raw_step))
    step *= next(m for m in (1, 2, 5, 10) if step * m >= raw_step)
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    ticks = (math.floor(lo / step) * step, math.ceil(hi / step) * step)
    return [f"{v:,.{decimals}f}" for v in ticks]


def _axis_labels(enc: dict, frame, length_px: float) -> list[str]:
    if enc.get("type") == "quantitative":
        return _tick_labels(enc, frame, length_px)
    return _categories(enc, frame)


# Titles. Streamlit limits a title to its column's width less 40 px and Vega cuts what is longer
# with "…": in a third of a 1024 px page "softmax, mask, renormalise" read "softmax, mask, re…",
# the very words that told three maps apart. A title is instead broken between words onto as few
# lines as fit the width the chart is drawn at (`readable_title`), and given a limit of its own.
TITLE_SPARE = 1.12  # a line is given that much more room than text_px says (kerning, rounding, a font fallback)
TITLE_MAX_LINES = 4
PUNCT_BREAK_BONUS = 0.15  # a break after a comma or colon may make the widest line this much wider
_TITLE_WORD = re.compile(r"\([^()]*\)\s*|\S+\s*")  # a shape "(6, 6)" stays whole


def _title_text(title) -> str | list:
    """A spec's title text: a string, a list of lines, or "" (also for a title given as an expression)."""
    if isinstance(title, dict):
        title = title.get("text", "")
    return title if isinstance(title, (str, list)) else ""


def _title_size(spec: dict) -> float:
    title = spec.get("title")
    own = title.get("fontSize") if isinstance(title, dict) else None
    size = own if isinstance(own, (int, float)) else spec.get("config", {}).get("title", {}).get("fontSize", 13)
    return float(size)


def title_wraps(text: str, size: float, max_lines: int = TITLE_MAX_LINES,
                semibold: bool = True) -> list[tuple[float, list[str]]]:
    """The ways to write `text` on 1, 2, ... `max_lines` lines, words kept whole: for each number of
    lines, the split whose widest line is the narrowest, as (that line's width in px at `size`,
    the lines). Only splits narrower than the one before are listed. A chart's title is semibold;
    an axis title (`semibold=False`) is not."""
    words = [m.group(0) for m in _TITLE_WORD.finditer(str(text))]
    if not words:
        return [(0.0, [""])]

    def width(i: int, j: int) -> float:
        return text_px("".join(words[i:j]).rstrip(), size, semibold)

    found: list[tuple[float, list[str]]] = []
    for lines in range(1, min(max_lines, len(words)) + 1):
        best = narrowest = None
        for cuts in itertools.combinations(range(1, len(words)), lines - 1):
            bounds = (0, *cuts, len(words))
            widest = max(width(a, b) for a, b in zip(bounds, bounds[1:]))
            # a line that ends at a comma or colon reads better, if not much wider
            score = widest * (1 - PUNCT_BREAK_BONUS * sum(words[c - 1].rstrip()[-1:] in ",:;" for c in cuts))
            split = ["".join(words[a:b]).strip() for a, b in zip(bounds, bounds[1:])]
            if best is None or score < best[0] - 1e-9:
                best = (score, widest, split)
            if narrowest is None or widest < narrowest[1] - 1e-9:
                narrowest = (score, widest, split)
        if found and best[1] >= found[-1][0] - 0.5:
            best = narrowest  # more lines are worth it only where they are narrower
        if not found or best[1] < found[-1][0] - 0.5:
            found.append(best[1:])
    return found


def _title_px(spec: dict) -> float:
    """The width the title needs at the least: its widest line where it is already lines, else
    the widest line of its narrowest wrap (title_wraps)."""
    text = _title_text(spec.get("title"))
    size = _title_size(spec)
    if isinstance(text, list):
        return max((text_px(line, size, semibold=True) for line in text), default=0.0)
    return title_wraps(text, size)[-1][0] if text else 0.0


def readable_title(spec: dict, room: float | str | None) -> dict:
    """`spec` with its title broken onto lines that fit `room` (px), and a limit of its own so that
    Streamlit's does not cut it. `room` may be a Vega expression of the width the title has (a
    fitted chart: it is laid out at the column's width), or None: the title is left on one line
    (a chart whose width is not known). The spec itself when it has no title to change."""
    title = spec.get("title")
    text = _title_text(title)
    if not text or (isinstance(title, dict) and "limit" in title):
        return spec
    params = dict(title) if isinstance(title, dict) else {}
    params["limit"] = 0  # no limit: Vega draws the whole line (0 is not replaced, as None would be)
    if isinstance(text, str) and room is not None:
        wraps = title_wraps(text, _title_size(spec))
        if isinstance(room, str):
            def literal(lines: list[str]) -> str:
                return json.dumps(lines[0] if len(lines) == 1 else lines, ensure_ascii=False)
            expr = literal(wraps[-1][1])
            for need, lines in reversed(wraps[:-1]):
                expr = f"({room}) >= {need * TITLE_SPARE:.0f} ? {literal(lines)} : {expr}"
            params["text"] = {"expr": expr} if len(wraps) > 1 else text
        else:
            lines = next((lines for need, lines in wraps if need * TITLE_SPARE <= room), wraps[-1][1])
            params["text"] = lines[0] if len(lines) == 1 else lines
    else:
        params["text"] = text
    usermeta = {**spec.get("usermeta", {}), TITLE_TEXT: text if isinstance(text, str) else " ".join(text)}
    return {**spec, "title": params, "usermeta": usermeta}


def _left_axis_px(spec: dict, config: dict) -> float:
    found = _channel(spec, "y")
    if found is None:
        return 0.0
    enc, frame = found
    axis = enc.get("axis", {})
    if axis is None:
        return 0.0
    axis_config = config.get("axis", {})
    px = 0.0
    if axis.get("labels", True) is not False:
        size = _label_size(spec, axis)
        labels = _axis_labels(enc, frame, float(spec.get("height") or 200))
        widest = max((text_px(s, size) for s in labels), default=0.0)
        px += min(widest, axis.get("labelLimit", axis_config.get("labelLimit", LABEL_LIMIT_PX)))
    px += AXIS_LABEL_GAP_PX
    title = enc.get("title", enc.get("field", ""))
    if title:
        size = axis.get("titleFontSize", axis_config.get("titleFontSize", 11))
        px += AXIS_TITLE_GAP_PX + TITLE_LINE_EM * size
    return px


LEGEND_CHANNELS = ("color", "fill", "stroke", "opacity", "size", "shape", "strokeDash")


def _legends(spec: dict, config: dict, sides: tuple[str, ...]):
    """(channel, encoding, frame, legend, label font size, label limit) of each legend on one of
    `sides`."""
    legend_config = config.get("legend", {})
    for name in LEGEND_CHANNELS:
        found = _channel(spec, name)
        if found is None:
            continue
        enc, frame = found
        enc = enc.get("condition", enc) if "field" not in enc else enc
        legend = enc.get("legend", {})
        if legend is None or legend.get("orient", legend_config.get("orient", "right")) not in sides:
            continue
        limit = legend.get("labelLimit", legend_config.get("labelLimit", LEGEND_LABEL_LIMIT_PX))
        if not isinstance(limit, (int, float)):  # an expression of the drawn width: at most the config's
            limit = legend_config.get("labelLimit", LEGEND_LABEL_LIMIT_PX)
        yield (name, enc, frame, legend, legend.get("labelFontSize", legend_config.get("labelFontSize", 10)), limit)


def _legend_px(spec: dict, config: dict) -> float:
    """The width of the legends on the right (stacked: the widest); 0 for legends above or below."""
    legend_config = config.get("legend", {})
    widest = 0.0
    for _, enc, frame, legend, size, limit in _legends(spec, config, ("right", "left")):
        labels = _axis_labels(enc, frame, 200)
        label_px = min(max((text_px(s, size) for s in labels), default=0.0), limit)
        mark_px = GRADIENT_PX if enc.get("type") == "quantitative" else SYMBOL_PX
        title_px = text_px(enc.get("title") or "", legend_config.get("titleFontSize", 11))
        widest = max(widest, mark_px + label_px, title_px)
    return LEGEND_OFFSET_PX + widest if widest else 0.0


def _top_legends_px(spec: dict, config: dict) -> float:
    """The width of the legends above or below the plot, side by side (or the widest, on a side
    where the config's legend layout stacks them): each entry a symbol and its label in a row, or in
    `columns` columns (one where `columns` is an expression of the drawn width: it can get that
    narrow)."""
    layout = config.get("legend", {}).get("layout")
    layout = layout if isinstance(layout, dict) else {}
    widest = 0.0
    for side in ("top", "bottom"):
        widths = []
        for _, enc, frame, legend, size, limit in _legends(spec, config, (side,)):
            entries = sorted((SYMBOL_PX + min(text_px(s, size), limit) for s in _categories(enc, frame)),
                             reverse=True)
            if not entries or enc.get("type") == "quantitative":
                continue
            columns = legend.get("columns", 0)
            columns = 1 if isinstance(columns, dict) else \
                columns if isinstance(columns, int) and columns > 0 else len(entries)
            widths.append(sum(entries[:columns]) + LEGEND_COLUMN_GAP_PX * (min(columns, len(entries)) - 1))
        stacked = isinstance(layout.get(side), dict) and layout[side].get("direction") == "vertical"
        if widths:
            widest = max(widest, max(widths) if stacked else sum(widths) + LEGEND_OFFSET_PX * (len(widths) - 1))
    return widest


def _x_overhang_px(spec: dict, left_px: float) -> tuple[float, float]:
    """How far the x axis's labels reach past the plot's left edge (beyond the y axis) and its
    right edge."""
    found = _channel(spec, "x")
    if found is None:
        return 0.0, 0.0
    enc, frame = found
    axis = enc.get("axis") or {}
    if axis.get("labels", True) is False:
        return 0.0, 0.0
    width = float(spec.get("width") or 200)
    size = _label_size(spec, axis)
    labels = _axis_labels(enc, frame, width)
    if not labels:
        return 0.0, 0.0
    first, last = text_px(labels[0], size), text_px(labels[-1], size)
    if enc.get("type") == "quantitative":
        return 0.0, last / 2
    band = width / len(labels)
    angle = abs(float(axis.get("labelAngle", 0)))
    if angle:
        slant = math.cos(math.radians(angle))
        if axis.get("orient") == "top":  # they start at their tick and run up to the right
            return 0.0, max(0.0, last * slant - band / 2)
        # below the plot they end at their tick and run down to the left
        return max(0.0, first * slant - band / 2 - left_px), 0.0
    return max(0.0, first / 2 - band / 2 - left_px), max(0.0, last / 2 - band / 2)


def _body_px(spec: dict) -> float:
    """The chart's width without its title: the plot, the axes around it, a legend on its right."""
    config = spec.get("config", {})
    left = _left_axis_px(spec, config)
    over_left, over_right = _x_overhang_px(spec, left)
    # an x title wider than the plot reaches past it on both sides (it is centred)
    over_right = max(over_right, (_x_title_px(spec) - float(spec["width"])) / 2)
    right = max(over_right, _legend_px(spec, config))
    return left + over_left + float(spec["width"]) + right


def natural_width(spec: dict) -> int | None:
    """The whole chart's width in px as the "pad" autosize lays it out (an estimate), or None for
    a chart this cannot estimate (facets, concatenations, a width that is not a number). A long
    title does not widen it: it is written on more lines (readable_title), unless even its
    narrowest wrap is wider than the chart."""
    width = spec.get("width")
    if not isinstance(width, (int, float)) or isinstance(width, bool):
        return None
    if any(key in spec for key in ("facet", "hconcat", "vconcat", "concat", "repeat", "spec")):
        return None
    for layer in _layers(spec):
        if any(ch in layer.get("encoding", {}) for ch in ("facet", "row", "column")) or "layer" in layer:
            return None
    config = spec.get("config", {})
    return int(math.ceil(max(_body_px(spec), _title_px(spec), _top_legends_px(spec, config))
                         + 2 * PADDING_PX))


def can_fit(spec: dict) -> bool:
    """Whether the chart stays readable laid out at SHRINK_TO of its width: on a discrete x axis
    each category keeps a line of text for its label (slanted where upright ones no longer fit,
    see _slant_when_narrow), unless the axis lets Vega thin its labels out (dimension indices). A
    28-letter alphabet of 10 px cells is better scaled as a picture than given labels that run into
    each other."""
    found = _channel(spec, "x")
    if found is None or found[0].get("type") == "quantitative":
        return True
    enc, frame = found
    axis = enc.get("axis") or {}
    if axis.get("labelOverlap") not in (None, False):  # the chart lets Vega thin its labels out
        return True
    size = _label_size(spec, axis)
    names = _categories(enc, frame)
    per_name = 1.2 * size
    if all(len(name) <= 1 for name in names):
        # letters stand upright: two neighbours need half of each one's width, and a gap
        halves = [(text_px(a, size) + text_px(b, size)) / 2 for a, b in zip(names, names[1:])]
        per_name = min(per_name, max(halves, default=0.0) + LETTER_GAP_PX)
    return len(names) * per_name <= SHRINK_TO * float(spec.get("width") or 0)


def _slant_when_narrow(spec: dict, band: str = "bandwidth('x')") -> dict:
    """`spec` with its x-axis labels turned in bands too narrow for them (an expression Vega
    evaluates at each layout), all of them kept (Vega would drop every other slanted label as
    overlapping): upright names slant where they no longer fit across their band, and slanted
    ones stand upright (-90°) where the band is too narrow for slanted lines not to touch
    ("8:␣sentence" ran into "9:," over the Tokens page's windows). `band` is the band's width as
    a Vega expression (see _band)."""
    found = _channel(spec, "x")
    if found is None or found[0].get("type") == "quantitative":
        return spec
    enc, frame = found
    axis = enc.get("axis") or {}
    built = axis.get("labelAngle", 0)
    if axis.get("labels", True) is False or not isinstance(built, (int, float)):
        return spec
    size = _label_size(spec, axis)
    names = _categories(enc, frame)
    if built == 0:
        if all(len(name) <= 1 for name in names):  # letters: upright, they fit the narrowest band
            return spec
        needed = max((text_px(s, size) for s in names), default=0.0) + 6
        steep = SLANTED_LINE_EM * size / math.sin(math.radians(40))
        angle = {"expr": f"({band} < {steep:.0f} ? -90 : {band} < {needed:.0f} ? -40 : 0)"}
    else:
        if axis.get("labelOverlap") not in (None, False) or abs(built) >= 90:
            return spec
        steep = SLANTED_LINE_EM * size / math.sin(math.radians(abs(built)))
        angle = {"expr": f"({band} < {steep:.0f} ? -90 : {built:g})"}

    def slanted(layer: dict) -> dict:
        x = layer.get("encoding", {}).get("x")
        if not isinstance(x, dict) or ("axis" in x and x["axis"] is None):
            return layer
        return {**layer, "encoding": {**layer["encoding"],
                                      "x": {**x, "axis": {**(x.get("axis") or {}), "labelAngle": angle,
                                                          "labelOverlap": False}}}}

    if "layer" in spec:
        return {**spec, "layer": [slanted(layer) for layer in spec["layer"]]}
    return slanted(spec)


def _x_title_size(spec: dict, axis: dict) -> float:
    return float(axis.get("titleFontSize", spec.get("config", {}).get("axis", {}).get("titleFontSize", 11)))


def _x_title_px(spec: dict) -> float:
    """The width of the x axis's title (its widest line)."""
    found = _channel(spec, "x")
    if found is None:
        return 0.0
    enc = found[0]
    title = enc.get("title", enc.get("field", ""))
    lines = title if isinstance(title, list) else [title] if isinstance(title, str) else []
    size = _x_title_size(spec, enc.get("axis") or {})
    return max((text_px(line, size) for line in lines), default=0.0)


def _x_title_on_lines(spec: dict) -> dict:
    """`spec` with an x-axis title wider than its plot can get (SHRINK_TO of its width) broken onto
    lines: centred over a plot narrower than itself, it ran past the chart's edge ("output
    dimensio" over three W matrices side by side in lecture mode)."""
    found = _channel(spec, "x")
    if found is None or not isinstance(found[0].get("title"), str):
        return spec
    enc = found[0]
    title = enc["title"]
    size = _x_title_size(spec, enc.get("axis") or {})
    room = SHRINK_TO * float(spec["width"])
    if text_px(title, size) <= room:
        return spec
    wraps = title_wraps(title, size, max_lines=3, semibold=False)
    lines = next((lines for need, lines in wraps if need <= room), wraps[-1][1])

    def wrapped(layer: dict) -> dict:
        x = layer.get("encoding", {}).get("x")
        if not isinstance(x, dict) or x.get("title") != title:
            return layer
        return {**layer, "encoding": {**layer["encoding"], "x": {**x, "title": lines}}}

    if "layer" in spec:
        return {**spec, "layer": [wrapped(layer) for layer in spec["layer"]]}
    return wrapped(spec)


def _legend_row_px(entries: list[float], columns: int) -> float:
    """A legend's width with `columns` entries in a row: each column as wide as its widest entry."""
    columns = min(columns, len(entries))
    widest = [max(entries[i::columns]) for i in range(columns)]
    return sum(widest) + LEGEND_COLUMN_GAP_PX * (columns - 1)


# a legend label this wide fits beside its symbol in the narrowest chart panel (12rem, less the axis)
LABEL_FITS_PX = 120


def _labels_on_lines(legend: dict, labels: list[str], size: float, limit: float, room: str) -> dict:
    """A legend's labelExpr that writes each label wider than `room` (a Vega expression of the px
    a label has beside its symbol) on as few lines as fit it, words kept whole ("One head, no
    position (the slides)" on a phone); {} where no label could need it or the legend has its own."""
    if "labelExpr" in legend:
        return {}
    cases = []
    for label in labels:
        wraps = title_wraps(label, size, max_lines=3, semibold=False)
        if len(wraps) < 2 or wraps[0][0] <= LABEL_FITS_PX:
            continue
        expr = json.dumps(wraps[-1][1], ensure_ascii=False)
        for need, lines in reversed(wraps[:-1]):
            text = json.dumps(lines[0] if len(lines) == 1 else lines, ensure_ascii=False)
            expr = f"{room} >= {min(need * TITLE_SPARE, limit):.0f} ? {text} : {expr}"
        cases.append(f"datum.label === {json.dumps(label, ensure_ascii=False)} ? ({expr})")
    return {"labelExpr": " : ".join(cases + ["datum.label"])} if cases else {}


def _legends_that_fit(spec: dict, room: str) -> dict:
    """`spec` with its legends above and below the plot laid out for the width it is drawn at:
    each keeps its columns where they fit `room` (a Vega expression of the chart's width, see
    _room) less the left axis, else takes fewer, down to one entry a line; several legends on one
    side stand one under the other where they do not fit side by side. Vega writes a legend's row
    on one line whatever its width: on a phone "never an input", "validation (solid)" and "−∞
    before softmax" ran past the chart's edge and were cut. Legends whose columns are already an
    expression (the Train chart's) and sides the config lays out are left as they are."""
    config = spec.get("config", {})
    legend_config = config.get("legend", {})
    layout = legend_config.get("layout") if isinstance(legend_config.get("layout"), dict) else {}
    free = f"({room} - {_left_axis_px(spec, config):.0f})"
    changes: dict[str, dict] = {}
    directions: dict[str, str] = {}
    for side in ("top", "bottom"):
        full_rows = []
        for name, enc, frame, legend, size, limit in _legends(spec, config, (side,)):
            labels = _categories(enc, frame)
            entries = [SYMBOL_PX + min(text_px(s, size), limit) for s in labels]
            if not entries or enc.get("type") == "quantitative" or "legend" not in enc:
                continue
            columns = legend.get("columns", 0)
            if not isinstance(columns, int) or isinstance(columns, bool):
                continue  # already an expression of the width
            columns = columns if columns > 0 else len(entries)
            title = legend.get("title", enc.get("title", enc.get("field")))
            title_px = text_px(title, legend_config.get("titleFontSize", 11)) if isinstance(title, str) else 0.0
            needs = {c: max(_legend_row_px(entries, c), title_px) for c in range(columns, 0, -1)}
            expr = "1"
            for c in range(2, columns + 1):  # the most columns that fit, else one
                expr = f"{free} >= {math.ceil(needs[c])} ? {c} : {expr}"
            changes[name] = {"columns": {"expr": expr}, **_labels_on_lines(
                legend, labels, size, limit, f"({free} - {SYMBOL_PX})")}
            full_rows.append(needs[columns])
        if len(full_rows) > 1 and side not in layout:
            together = sum(full_rows) + LEGEND_OFFSET_PX * (len(full_rows) - 1)
            directions[side] = f"{free} >= {math.ceil(together)} ? 'horizontal' : 'vertical'"
    if not changes:
        return spec

    def changed(layer: dict) -> dict:
        encoding = dict(layer.get("encoding", {}))
        for name, props in changes.items():
            enc = encoding.get(name)
            if isinstance(enc, dict) and isinstance(enc.get("legend"), dict):
                encoding[name] = {**enc, "legend": {**enc["legend"], **props}}
        return {**layer, "encoding": encoding} if "encoding" in layer else layer

    fitted = {**spec, "layer": [changed(layer) for layer in spec["layer"]]} if "layer" in spec else changed(spec)
    if directions:
        sides = {side: {"anchor": "start", "direction": {"signal": expr}} for side, expr in directions.items()}
        fitted["config"] = {**config, "legend": {**legend_config, "layout": {**layout, **sides}}}
    return fitted


def fit_to_column(spec: dict | None) -> dict | None:
    """`spec` drawn at its natural width (natural_width) when its column is as wide, and laid out
    again to fit a narrower one: a shallow copy with Vega's "fit-x" autosize (the height stays as
    built), its width also kept as usermeta[FIT_WIDTH] for st.vega_lite_chart(width=...), its title
    on as many lines as the width it is drawn at needs (readable_title). A chart that cannot be
    estimated or should keep its size (can_fit) keeps it, its title wrapped to that size; the spec
    itself when there is nothing to change; None stays None."""
    if spec is None:
        return None
    try:
        natural = natural_width(spec)
        if natural is None:
            return readable_title(spec, None)
        if not can_fit(spec):
            return readable_title(spec, _body_px(spec))
        extras = _body_px(spec) - float(spec["width"])  # the axes and legend beside the plot
        room = _room(spec, extras)
        slanted = _slant_when_narrow(_x_title_on_lines(spec), _band(spec, extras))
        spec_fitted = _legends_that_fit(readable_title(slanted, room), room)
    except (TypeError, ValueError, KeyError, AttributeError, OverflowError):
        # a spec shaped in a way this does not read (an expression where a number was expected, a
        # domain of NaN): the chart is drawn at its own size, as it always could be
        return spec
    padding = spec.get("padding") if isinstance(spec.get("padding"), dict) else {}
    return {**spec_fitted, "width": natural,
            "autosize": {"type": "fit-x", "contains": "padding"},
            "padding": {**padding, "right": padding.get("right", 0) + FIT_SPARE_PX},
            "usermeta": {**spec_fitted.get("usermeta", {}), FIT_WIDTH: natural}}


def _padding_x(spec: dict) -> float:
    """What a fitted chart's container holds beside the chart: its left and right padding."""
    padding = spec.get("padding") if isinstance(spec.get("padding"), dict) else {}
    return padding.get("left", 0) + padding.get("right", 0) + FIT_SPARE_PX


def _room(spec: dict, extras: float) -> str:
    """The width a fitted chart's title has, as a Vega expression: the chart's container less the
    padding where Vega has a container (a browser), else the plot's width and `extras` (vl-convert).
    The container's width is known before Vega lays the chart out and does not change with the
    layout; the plot's width is set by the layout itself, so a title chosen from it changed after
    the height had been fixed, and a title that went from one line to two had its first line cut
    above the chart (after a resize from 1900 to 1024 px, and at times on a first load)."""
    return (f"(isFinite(containerSize()[0]) ? containerSize()[0] - {_padding_x(spec):g} "
            f": width + {extras:.0f})")


BAND_SHARE = 0.9  # of a category's step, its band (Vega-Lite's bars: 0.1 inner padding; cells: 1)


def _band(spec: dict, extras: float) -> str:
    """A fitted chart's x band width as a Vega expression: in a browser, from the container's width
    (less the padding and `extras`, the axes and legend beside the plot), known before the layout
    as for the title (_room): from bandwidth('x'), which the layout itself sets, the labels turned
    after the height was fixed and the slanted ones were cut at the chart's bottom ("class 0" …
    on the Small LM page at 390 px in lecture mode). bandwidth('x') where there is no container."""
    found = _channel(spec, "x")
    count = max(len(_categories(*found)), 1) if found else 1
    return (f"(isFinite(containerSize()[0]) ? (containerSize()[0] - {_padding_x(spec) + extras:.0f}) / {count} "
            f"* {BAND_SHARE} : bandwidth('x'))")


def drawn_width(spec: dict | None) -> int | str:
    """What to pass as st.vega_lite_chart's width: the natural width of a fitted spec, else
    "content" (the chart at its own size, scaled down as a picture where the column is narrower)."""
    return (spec or {}).get("usermeta", {}).get(FIT_WIDTH, "content")


def value_font(font: float, chars: int, char_px: float, floor: float, scale: str = "x") -> dict:
    """A text mark's font size that shrinks with its band: the `font` px the chart was built with
    while a number of `chars` characters (`char_px` each at that size) fits the band of the x
    `scale` (Vega-Lite's name of its x scale; "xOffset" for grouped bars), smaller in narrower
    bands (a fitted chart in a narrow column), never below `floor`."""
    per_px = font / max(chars * char_px, 1.0)
    return {"expr": f"min({font}, max({floor}, (bandwidth('{scale}') - 6) * {per_px:.4f}))"}


# Numbers written over bars. In a narrower band a number first gets a smaller font (not below
# `readable`), then fewer decimals, then the floor size, and last it is turned upright (-90°,
# reading upwards from the bar's top): side by side, two numbers may never touch ("0.10820.1077"
# in lecture mode, where the floor is the built size).
VALUE_CHAR_EM = 0.52  # a digit's advance in em (Source Sans's is 0.5: a little room to spare)
VALUE_POINT_EM = 0.28  # a decimal point's (0.25)
VALUE_GAP_PX = 2  # what a number leaves free in its band
VALUE_DY_PX = 8  # above its bar


def _expr_chain(cases: list[tuple[str, str]], otherwise: str) -> str:
    expr = otherwise
    for test, value in reversed(cases):
        expr = f"{test} ? {value} : {expr}"
    return expr


def value_em(text: str) -> float:
    """A number's width in em (digits VALUE_CHAR_EM, a point or comma VALUE_POINT_EM), with a
    little room to spare."""
    return sum(VALUE_POINT_EM if ch in ".,:" else VALUE_CHAR_EM for ch in str(text))


def bar_values(font: float, floor: float, ems: list[float], bars: int, groups: int = 1,
               readable: float | None = None) -> tuple[dict, list[dict]]:
    """Numbers over bars that never run into each other, however narrow the chart is laid out:
    (the text mark's properties, the conditions of its text channel). `bars` labels on the x axis,
    `groups` bars side by side at each (grouped bars); two numbers are as far apart as their bars'
    middles: the plot's width over the labels (Vega-Lite pads a band scale half as much outside
    as between its bands), and within a group, the band over the bars in it. `ems`: the widest number (value_em) of each
    way of writing them, the full one first and then each with fewer decimals (the channel's
    fields "text", "text_1", ...). The built `font` while the full numbers fit; smaller, down to
    `readable`; the next shorter numbers; the shortest ones down to `floor`; then turned upright,
    reading upwards from the bar's top. Every bar's number the same way, so they compare."""
    readable = max(floor, min(font, readable if readable is not None else font))
    step = f"bandwidth('x') / {groups}" if groups > 1 else f"width / {max(bars, 1)}"
    band = f"({step} - {VALUE_GAP_PX})"
    ems = [max(em, VALUE_CHAR_EM) for em in ems]
    size_cases = [(f"{band} >= {em * readable:.2f}", f"min({font}, max({readable}, {band} / {em:.3f}))")
                  for em in ems[:-1]]
    size_cases.append((f"{band} >= {ems[-1] * floor:.2f}", f"min({font}, max({floor}, {band} / {ems[-1]:.3f}))"))
    turned = f"{band} < {ems[-1] * floor:.2f}"
    mark = {"fontSize": {"expr": _expr_chain(size_cases, f"min({font}, max({floor}, {band}))")},
            "angle": {"expr": f"{turned} ? -90 : 0"},
            "align": {"expr": f"{turned} ? 'left' : 'center'"},
            "dx": {"expr": f"{turned} ? {VALUE_GAP_PX} : 0"},
            "dy": {"expr": f"{turned} ? 0 : {-VALUE_DY_PX}"}}
    # the first test that holds picks the text: the shortest numbers in the narrowest bands
    conditions = [{"test": f"{band} < {ems[k - 1] * readable:.2f}",
                   "value": {"expr": f"datum.text_{k}"}} for k in range(len(ems) - 1, 0, -1)]
    return mark, conditions


def cell_values(font: float, floor: float, em: float, scale: str = "x") -> dict:
    """A text mark's properties for whole numbers (ids) in the cells of a band `scale`: at the
    built `font` while the widest (`em`, value_em) fits its cell, smaller down to `floor`; then a
    number too long for its cell at that size is turned upright about its middle (the cells must
    be as tall as it is long), while shorter ones stay across."""
    band = f"(bandwidth('{scale}') - {VALUE_GAP_PX})"
    em = max(em, VALUE_CHAR_EM)
    size = (f"({band} >= {em * floor:.2f} ? min({font}, max({floor}, {band} / {em:.3f})) "
            f": min({font}, max({floor}, {band})))")
    turned = f"{band} < length(datum.text) * {VALUE_CHAR_EM} * {size}"
    return {"fontSize": {"expr": size}, "angle": {"expr": f"{turned} ? -90 : 0"}}
