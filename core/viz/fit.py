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

import math

import numpy as np
import pandas as pd

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
LABEL_LIMIT_PX = 220  # theme_config's axis labelLimit
LEGEND_LABEL_LIMIT_PX = 160
# how narrow a fitted chart's plot must be able to get (a fraction of its own width) without
# the labels of a discrete x axis running into each other (see can_fit): two 346 px heatmaps side
# by side in a 1024 px window with the sidebar open get 274 px each
SHRINK_TO = 0.6
FIT_WIDTH = "attentionLabFitWidth"  # usermeta key: the width a fitted spec is drawn at

# Advance widths in em of Streamlit's chart font (Source Sans), by kind of character
_NARROW = set("ijlI.,:;'|!()[]{} ␣ft-")
_WIDE = set("mwMW%@")


def text_px(text: str, size: float) -> float:
    """The width of one line of `text` at `size` px (an estimate good to about a tenth)."""
    em = 0.0
    for ch in str(text):
        if ch in _NARROW:
            em += 0.3
        elif ch in _WIDE:
            em += 0.8
        elif ch.isupper():
            em += 0.6
        else:
            em += 0.52
    return em * size


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


def _title_text(title) -> str:
    if isinstance(title, dict):
        title = title.get("text", "")
    if isinstance(title, list):
        title = max(title, key=len, default="")
    return title or ""


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


def _legend_px(spec: dict, config: dict) -> float:
    """The width of the legends on the right (stacked: the widest); 0 for legends above or below."""
    legend_config = config.get("legend", {})
    widest = 0.0
    for name in LEGEND_CHANNELS:
        found = _channel(spec, name)
        if found is None:
            continue
        enc, frame = found
        enc = enc.get("condition", enc) if "field" not in enc else enc
        legend = enc.get("legend", {})
        if legend is None:
            continue
        if legend.get("orient", legend_config.get("orient", "right")) not in ("right", "left"):
            continue
        size = legend.get("labelFontSize", legend_config.get("labelFontSize", 10))
        labels = _axis_labels(enc, frame, 200)
        label_px = min(max((text_px(s, size) for s in labels), default=0.0),
                       legend.get("labelLimit", LEGEND_LABEL_LIMIT_PX))
        mark_px = GRADIENT_PX if enc.get("type") == "quantitative" else SYMBOL_PX
        title_px = text_px(enc.get("title") or "", legend_config.get("titleFontSize", 11))
        widest = max(widest, mark_px + label_px, title_px)
    return LEGEND_OFFSET_PX + widest if widest else 0.0


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


def natural_width(spec: dict) -> int | None:
    """The whole chart's width in px as the "pad" autosize lays it out (an estimate), or None for
    a chart this cannot estimate (facets, concatenations, a width that is not a number)."""
    width = spec.get("width")
    if not isinstance(width, (int, float)) or isinstance(width, bool):
        return None
    if any(key in spec for key in ("facet", "hconcat", "vconcat", "concat", "repeat", "spec")):
        return None
    for layer in _layers(spec):
        if any(ch in layer.get("encoding", {}) for ch in ("facet", "row", "column")) or "layer" in layer:
            return None
    config = spec.get("config", {})
    left = _left_axis_px(spec, config)
    over_left, over_right = _x_overhang_px(spec, left)
    right = max(over_right, _legend_px(spec, config))
    body = left + over_left + width + right
    heading = config.get("title", {}).get("fontSize", 13)
    title = text_px(_title_text(spec.get("title")), heading)
    return int(math.ceil(max(body, title) + 2 * PADDING_PX))


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
    return len(_categories(enc, frame)) * 1.2 * size <= SHRINK_TO * float(spec.get("width") or 0)


def _slant_when_narrow(spec: dict) -> dict:
    """`spec` with its upright x-axis labels slanted in bands too narrow for them (an expression
    Vega evaluates at each layout), so token names under narrower bars do not run together, and
    all of them kept (Vega would drop every other slanted label as overlapping)."""
    found = _channel(spec, "x")
    if found is None or found[0].get("type") == "quantitative":
        return spec
    enc, frame = found
    axis = enc.get("axis") or {}
    if axis.get("labelAngle", 0) != 0 or axis.get("labels", True) is False:
        return spec
    size = _label_size(spec, axis)
    needed = max((text_px(s, size) for s in _categories(enc, frame)), default=0.0) + 6
    angle = {"expr": f"(bandwidth('x') < {needed:.0f} ? -40 : 0)"}

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


def fit_to_column(spec: dict | None) -> dict | None:
    """`spec` drawn at its natural width (natural_width) when its column is as wide, and laid out
    again to fit a narrower one: a shallow copy with Vega's "fit-x" autosize (the height stays as
    built), its width also kept as usermeta[FIT_WIDTH] for st.vega_lite_chart(width=...). The
    spec itself when it cannot be estimated or should keep its size (can_fit); None stays None."""
    if spec is None:
        return None
    try:
        natural = natural_width(spec)
        if natural is None or not can_fit(spec):
            return spec
        spec_fitted = _slant_when_narrow(spec)
    except (TypeError, ValueError, KeyError, AttributeError, OverflowError):
        # a spec shaped in a way this does not read (an expression where a number was expected, a
        # domain of NaN): the chart is drawn at its own size, as it always could be
        return spec
    return {**spec_fitted, "width": natural,
            "autosize": {"type": "fit-x", "contains": "padding"},
            "usermeta": {**spec.get("usermeta", {}), FIT_WIDTH: natural}}


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
