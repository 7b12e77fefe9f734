"""Figures for slides: a chart with its title and caption, as PNG (2x) or SVG bytes via vl-convert.

No browser and no server: vl-convert renders the Vega-Lite spec directly. Used by the pages'
download buttons (ui/charts.py) and by scripts/export_figures.py.
"""

from __future__ import annotations

import re
import textwrap

import altair as alt
import pandas as pd

from core.viz.theme import CHART_LOCK, LAYOUT_COLUMNS, themed

FORMATS = {"png": "image/png", "svg": "image/svg+xml"}
TABLE_MIME = "text/csv"

# Altair refuses to write a chart of more than 5,000 rows into its JSON, a guard for notebooks: the
# PNG and SVG of a model's 27 x 192+ embedding matrix or of a 4 x 8 grid of maps failed with
# MaxRowsError. The app's tables are bounded by its settings (core.settings' limits). Once per
# process, for every thread: a scoped switch would be undone by one thread under another's export.
alt.data_transformers.disable_max_rows()


def with_caption(chart: alt.TopLevelMixin, title: str, caption: str) -> alt.TopLevelMixin:
    """Put the caption (what it shows, settings, seed) under the title of an exported figure."""
    lines = textwrap.wrap(caption, 95) if caption else []
    return chart.properties(title=alt.TitleParams(text=title or " ", subtitle=lines, anchor="start"))


def to_png(chart: alt.TopLevelMixin, scale: float = 2.0) -> bytes:
    """PNG bytes at `scale`x through vl-convert (no browser, no server)."""
    import vl_convert as vlc  # imported lazily: only exports need it
    return vlc.vegalite_to_png(chart.to_json(), scale=scale)


def to_svg(chart: alt.TopLevelMixin) -> str:
    """SVG text through vl-convert."""
    import vl_convert as vlc
    return vlc.vegalite_to_svg(chart.to_json())


def file_name(title: str, ext: str) -> str:
    """A safe file name that keeps the human title: "Attention weights (query 2).png".

    Letters of any script, digits, spaces and . , ( ) - _ stay; anything else (slashes, colons,
    quotes) becomes a space, so the name works on every operating system."""
    stem = re.sub(r"[^\w .,()\-]+", " ", str(title), flags=re.UNICODE)
    stem = re.sub(r"\s+", " ", stem).strip(" .")[:80].strip() or "figure"
    return f"{stem}.{ext}"


def figure_bytes(chart: alt.TopLevelMixin, *, title: str, caption: str = "",
                 lecture: bool = False, fmt: str = "png", scale: float = 2.0) -> bytes:
    """The chart themed for the mode, titled and captioned, as PNG (at `scale`) or SVG bytes."""
    if fmt not in FORMATS:
        raise ValueError(f"figure format must be one of {sorted(FORMATS)}, got {fmt!r}")
    with CHART_LOCK:  # the figure is a copy; the chart may be shared and being shown meanwhile
        figure = themed(with_caption(chart, title, caption), lecture)
    return to_png(figure, scale=scale) if fmt == "png" else to_svg(figure).encode("utf-8")


def chart_title(chart: alt.TopLevelMixin) -> str:
    """The title text a chart carries ("" when none): the default human title of its figure."""
    title = getattr(chart, "title", alt.Undefined)
    if isinstance(title, alt.TitleParams):
        title = title.text
    if isinstance(title, (list, tuple)):
        title = " ".join(str(t) for t in title)
    return title.strip() if isinstance(title, str) else ""


def description(title: str, caption: str) -> str:
    """The text alternative of a chart (Vega-Lite `description`, read out by screen readers):
    its title, then the caption that says what it shows."""
    title, caption = (title or "").strip().rstrip("."), (caption or "").strip()
    return f"{title}. {caption}" if title and caption else title or caption or "Chart"


def chart_table(chart: alt.TopLevelMixin) -> pd.DataFrame:
    """The numbers a chart draws, as one table: its own data, or the tables of its layers and
    parts one after another (empty when it carries none)."""
    data = getattr(chart, "data", alt.Undefined)
    if isinstance(data, pd.DataFrame):
        return data
    frames = []
    for key in ("layer", "hconcat", "vconcat", "concat"):
        for part in getattr(chart, key, alt.Undefined) or []:
            if isinstance(part, alt.SchemaBase):
                frames.append(chart_table(part))
    spec = getattr(chart, "spec", alt.Undefined)
    if isinstance(spec, alt.SchemaBase):
        frames.append(chart_table(spec))
    frames = [f for f in frames if len(f.columns)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def table_csv(chart: alt.TopLevelMixin) -> bytes:
    """The chart's numbers as CSV (UTF-8 with a byte-order mark, so spreadsheets read −∞ right),
    without the columns it lists as layout only (LAYOUT_COLUMNS)."""
    with CHART_LOCK:  # a chart shared by sessions may have its data swapped by vega_spec meanwhile
        table = chart_table(chart).copy()
    usermeta = getattr(chart, "usermeta", alt.Undefined)
    layout = usermeta.get(LAYOUT_COLUMNS, []) if isinstance(usermeta, dict) else []
    return table.drop(columns=[c for c in layout if c in table.columns]).to_csv(index=False).encode("utf-8-sig")
