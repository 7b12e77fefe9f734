"""Look and build path shared by every chart: palettes, font sizes, the "pad" autosize, fast builds.

Lecture mode is a theme applied here (bigger text, the colour-blind-safe Okabe-Ito palette), so no
page has to know about fonts. `fast_build` is the one way the project skips Altair's validation
while a chart is being put together (the whole spec is still validated when it is serialised).
"""

from __future__ import annotations

import functools
import hashlib
import math
import threading
from typing import Any, Callable, Sequence

import altair as alt
import numpy as np
import pandas as pd
from altair.utils.schemapi import debug_mode

# Every colour that draws a series (a line, a point, a bar) stands out from the white page by at
# least 3:1 (WCAG 1.4.11, non-text contrast; a projector washes colours out further), and the sets
# stay apart under deuteranopia and protanopia (tests/core/test_chart_alternatives.py). Lecture
# mode: the Okabe-Ito colours that reach 3:1 (its orange, sky blue and yellow do not: 2.3, 2.3 and
# 1.3), then a red-pink for a sixth run. Student mode: Tableau's colour-blind-safe blue and dark
# orange (its light orange, grey and blue do not reach 3:1), a deep green, not its slate, third (the
# third series is often the best model, and grey reads as "off"), then pink, slate and violet.
OKABE_ITO = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#000000", "#DD3366"]
DEFAULT_PALETTE = ["#1170AA", "#C85200", "#00806A", "#CC79A7", "#57606C", "#9955DD"]
# a poll's right answer, in both modes: Okabe-Ito's bluish green (3.4:1 on white) beside the blue of
# the other answers; the vermillion or orange it had read as "wrong"
RIGHT_ANSWER = "#009E73"
HIGHLIGHT = "#D55E00"  # outline of highlighted cells (Okabe-Ito vermillion: visible on blues and viridis)
MASKED_GREY = "#BBBBBB"  # cells that carry no number (masked −∞, dropped, undefined)
NEG_INF_LABEL = "−∞"
# lecture mode's floor, held by every builder here (a 1280x720 projector seen from the back row)
LECTURE_MIN_AXIS_PX = 16
LECTURE_MIN_VALUE_PX = 14
LEGEND_LABEL_LIMIT = 360  # px: the longest legend label written whole (Vega's default is 160)


def palette(lecture: bool = False) -> list[str]:
    """The categorical palette for the current mode."""
    return OKABE_ITO if lecture else DEFAULT_PALETTE


def contrast_ratio(colour_a: str, colour_b: str = "#FFFFFF") -> float:
    """WCAG's contrast ratio of two "#RRGGBB" colours (1 to 21): text needs 4.5, marks 3."""
    lighter, darker = sorted((_luminance(colour_a), _luminance(colour_b)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def _luminance(colour: str) -> float:
    """WCAG's relative luminance of "#RRGGBB" (0 black to 1 white)."""
    rgb = np.array([int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)])
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    return float(linear @ [0.2126, 0.7152, 0.0722])


def text_on(fill: str) -> str:
    """Black or white, whichever reads better on `fill` (a cell's colour)."""
    return "black" if contrast_ratio(fill, "#000000") >= contrast_ratio(fill, "#FFFFFF") else "white"


def font_sizes(lecture: bool = False) -> dict[str, int]:
    """Font sizes in px: axis `label`, axis/legend `title`, `text` written in marks, `heading`."""
    return {"label": 16, "title": 18, "text": 16, "heading": 22} if lecture else \
           {"label": 11, "title": 12, "text": 11, "heading": 14}


_font_sizes = font_sizes  # the old private name (core/charts.py), kept for modules not yet moved


def sequential_scheme(lecture: bool = False) -> str:
    """Colour scheme for values with one direction (weights, probabilities)."""
    return "viridis" if lecture else "blues"


def diverging_scheme(lecture: bool = False) -> str:
    """Colour scheme for signed values around 0 (embeddings, scores); both ends dark."""
    return "blueorange" if lecture else "redblue"


PAD = alt.AutoSizeParams(type="pad")


def padded(chart: alt.TopLevelMixin) -> alt.TopLevelMixin:
    """Keep the plot at its set size and add room for the axes and legend around it.

    Streamlit's default "fit" squeezes the whole chart (axes and legend included) into the width,
    shrinking heatmap cells until their labels vanish. `themed` applies this to every chart shown
    or exported, so no other module sets an autosize."""
    return chart.properties(autosize=PAD)


def theme_config(lecture: bool = False) -> dict:
    """The Vega-Lite `config` of the mode: font sizes (and darker axis text in lecture mode)."""
    size = font_sizes(lecture)
    axis = {"labelFontSize": size["label"], "titleFontSize": size["title"], "labelLimit": 220}
    if lecture:  # light-grey axis text fades on a projector
        axis.update(labelColor="#222222", titleColor="#111111")
    # Vega cuts a legend's label at 160 px: "gives no example (dr…", "buggy: 20 optimizer s…" in
    # lecture mode, the words that say what a colour is
    legend = {"labelFontSize": size["label"], "titleFontSize": size["title"], "labelLimit": LEGEND_LABEL_LIMIT}
    # Streamlit's chart theme sets labelFlush on every axis: on a band axis (a heatmap's tokens, a
    # bar per token) it moved the first and last names off their cells, toward the middle (the
    # Small LM tables' "." sat 5 px under its row, against the next name). Centred on their band
    return {"axis": axis, "axisDiscrete": {"labelFlush": False}, "legend": legend, "header": dict(legend),
            "title": {"fontSize": size["heading"], "subtitleFontSize": size["label"], "anchor": "start"}}


def _merged_config(existing: dict, lecture: bool) -> dict:
    config = dict(existing)
    for key, values in theme_config(lecture).items():
        config[key] = {**config.get(key, {}), **values}
    return config


def themed(chart: alt.TopLevelMixin, lecture: bool = False) -> alt.TopLevelMixin:
    """Font sizes for the current mode, and the "pad" autosize (see `padded`), as a copy.

    One copy, not one per configure_* call: each copy of a layered chart re-runs Altair's
    LayerChart.__init__, which deep-copies every layer."""
    existing = getattr(chart, "config", alt.Undefined)
    if existing is alt.Undefined:
        existing = {}
    elif isinstance(existing, alt.SchemaBase):
        existing = existing.to_dict(validate=False)
    with debug_mode(False):
        return chart.properties(autosize=PAD, config=_merged_config(existing, lecture))


def vega_spec(chart: alt.TopLevelMixin, lecture: bool = False) -> dict | None:
    """The chart themed for the mode as a Vega-Lite dict, its table under "datasets" as a DataFrame.

    The fast way to show a chart (st.vega_lite_chart turns the DataFrame into Arrow, as
    st.altair_chart does): one serialisation without the JSON-schema validation (10-40 ms a
    chart; the builders' output is validated by the tests) and the theme applied to the dict, so
    no Altair copy is made. None when the chart keeps tables below its top level (layers with their
    own DataFrames); show those through Altair (st.altair_chart on `themed(chart)`)."""
    data = getattr(chart, "data", alt.Undefined)
    if not isinstance(data, pd.DataFrame) or _nested_frames(chart):
        return None
    name = "data-" + frame_digest(data)
    with CHART_LOCK:
        # serialise with a reference in place of the table; Altair's to_dict copies the chart
        # first, so the original is only pointed at the name for the length of this call
        chart.data = alt.NamedData(name=name)
        try:
            spec = chart.to_dict(validate=False)
        finally:
            chart.data = data
    spec["datasets"] = {**spec.get("datasets", {}), name: data}
    _drop_default_theme(spec)
    spec["config"] = _merged_config(spec.get("config", {}), lecture)
    spec["autosize"] = PAD.to_dict(validate=False)
    return spec


# Held while vega_spec points a chart's data at a name, and while an export copies a chart: a
# chart built once and shared by sessions (a cached figure) is never read half-swapped.
CHART_LOCK = threading.Lock()


def frame_digest(data: pd.DataFrame) -> str:
    """A short name for a table's content: equal tables, equal names (the browser then reuses it).

    Column by column: a numeric column's bytes as they are, any other column as its values' text.
    pandas' own hash_pandas_object took 0.5 ms for a 128-row heatmap table and most of that for
    Arrow-backed text columns (pandas 3's default), on every chart of every rerun."""
    digest = hashlib.sha1(repr((list(map(str, data.columns)), len(data))).encode())
    for _, column in data.items():
        values = column.to_numpy()
        if values.dtype.kind in "biufcmM":  # numbers, booleans, dates: their bytes
            digest.update(values.dtype.str.encode())
            digest.update(np.ascontiguousarray(values).tobytes())
        else:  # text and mixed objects: their printed values, each ended by an unused separator
            digest.update("\x1f".join(map(str, values)).encode("utf-8", "surrogatepass") + b"\x1e")
    return digest.hexdigest()[:16]


def _nested_frames(chart) -> bool:
    """Whether a layer, facet spec or concatenated part carries its own DataFrame."""
    parts = []
    for key in ("layer", "hconcat", "vconcat", "concat"):
        value = getattr(chart, key, alt.Undefined)
        if isinstance(value, list):
            parts += value
    spec = getattr(chart, "spec", alt.Undefined)
    if isinstance(spec, alt.SchemaBase):
        parts.append(spec)
    return any(isinstance(p, alt.SchemaBase) and (isinstance(getattr(p, "data", None), pd.DataFrame)
                                                   or _nested_frames(p)) for p in parts)


def _drop_default_theme(spec: dict) -> None:
    """Remove what Altair's default theme adds (Streamlit shows charts with no Altair theme)."""
    defaults = alt.theme.get()().get("config", {}) if alt.theme.active == "default" else {}
    config = spec.get("config", {})
    for key, values in defaults.items():
        if isinstance(values, dict) and isinstance(config.get(key), dict):
            for k, v in values.items():
                if config[key].get(k) == v:
                    del config[key][k]
            if not config[key]:
                del config[key]
    if "config" in spec and not spec["config"]:
        del spec["config"]


def layered(layers: Sequence[alt.Chart], **top: Any) -> alt.LayerChart:
    """`alt.LayerChart(layer=layers, **top)`, the same spec, without Altair's defensive copies.

    LayerChart's constructor deep-copies every layer twice, to lift selection parameters that
    two layers share up to the top level (Vega-Lite allows a parameter once). py-spy put those
    copies at half of building a heatmap while a class used the Tokens page. These builders'
    layers carry no parameters, no data of their own unless it differs (a rule's one row) and no
    size (`top` holds width and height), so there is nothing to lift and the layers are set as
    they are. A layer with parameters or a size goes through Altair's constructor."""
    layers = list(layers)
    if any(getattr(layer, prop, alt.Undefined) is not alt.Undefined
           for layer in layers for prop in ("params", "width", "height", "view")):
        return alt.LayerChart(layer=layers, **top)
    chart = alt.LayerChart(**top)
    chart.layer = layers
    return chart


# usermeta key: the columns a chart's data holds only to lay it out (a scatter's label offsets):
# its CSV (core.viz.export.table_csv) leaves them out
LAYOUT_COLUMNS = "attentionLabLayoutColumns"


def fast_build(builder: Callable) -> Callable:
    """Build a chart without Altair validating every channel object as it is created.

    Altair (debug mode, its default) checks each schema object against the Vega-Lite JSON schema
    at construction, several ms per axis or scale; pages rebuild charts on every rerun. The spec
    as a whole is still validated when Streamlit or vl-convert serialise it (and by the tests),
    so nothing goes unchecked. No Altair class is subclassed or patched."""

    @functools.wraps(builder)
    def build(*args: Any, **kwargs: Any) -> Any:
        with debug_mode(False):
            return builder(*args, **kwargs)

    return build


def unique_labels(labels: Sequence[Any]) -> list[str]:
    """Axis labels must be unique: repeated token names get their position appended."""
    labels = [str(x) if str(x) != "" else "∅" for x in labels]
    counts: dict[str, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    return [f"{label} #{i}" if counts[label] > 1 else label for i, label in enumerate(labels)]


def format_value(value: float, fmt: str) -> str:
    """A number as written in a chart: NaN, −∞ and +∞ spelled out."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return NEG_INF_LABEL if value < 0 else "+∞"
    return format(value, fmt)


_fmt = format_value  # the old private name (core/charts.py), kept for modules not yet moved
