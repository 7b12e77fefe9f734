"""Show a chart with its caption, its text alternative, and one-click PNG (2x), SVG and CSV
(its numbers as a table) downloads.

Only Streamlit display code lives here; the theme, the captioned figure and the file name come
from core.viz. The figure files are made only when a download is clicked (Streamlit calls the
data callable then), so a page with many charts stays fast.
"""

from __future__ import annotations

import re
from typing import Callable

import streamlit as st

from core import viz
from ui.state import lecture_mode


def _key(text: str) -> str:
    """A stable widget key from a chart's name."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "figure"


def show_chart(chart, *, name: str, caption: str, title: str = "", key: str | None = None,
               downloads: bool = True, spec: dict | None = None) -> None:
    """Render `chart` (themed for the current mode), its caption and the figure downloads.

    `title` is the human title of the downloaded figure and its file name (default: the chart's
    own title, else `name`). `spec`: the chart's `viz.vega_spec` for the current mode, when a
    cache already holds it (it is only read here)."""
    lecture = lecture_mode()
    title = title or viz.chart_title(chart) or name
    draw_chart(chart, spec if spec is not None else viz.vega_spec(chart, lecture), lecture=lecture,
               description=viz.description(title, caption))
    st.caption(caption)
    if downloads:
        download_buttons(lambda: chart, title=title, caption=caption, key=key or _key(name),
                         lecture=lecture)


def draw_chart(chart, spec: dict | None, *, lecture: bool, description: str) -> None:
    """Draw a chart from its spec (`viz.vega_spec`), or through Altair when that is None (tables
    inside layers: slower, same picture). `description` is its text alternative: Vega puts it in
    the chart's aria-label, which screen readers read (WCAG 1.1.1)."""
    if spec is None:
        st.altair_chart(viz.themed(chart, lecture).properties(description=description),
                        width="content")
    else:  # a fresh top level: a spec kept by a cache is never changed here
        st.vega_lite_chart(spec={**spec, "description": description}, width="content")


def download_buttons(build: Callable, *, title: str, caption: str, key: str,
                     lecture: bool) -> None:
    """PNG (2x) and SVG buttons for the chart `build()` returns, titled and captioned; the figure
    is built only when a button is clicked. Files are named after the human `title`."""
    # a horizontal row sized to its buttons: fixed column ratios truncate the labels in the
    # narrow page columns where several charts stand side by side
    row = st.container(horizontal=True, gap="small")
    with row:
        for fmt, label, hint in (("png", "PNG", "2x PNG with the caption, for slides"),
                                 ("svg", "SVG", "Vector SVG with the caption, for slides")):
            st.download_button(
                label, key=f"{fmt}.{key}", on_click="ignore", icon=":material/download:", help=hint,
                data=lambda fmt=fmt: viz.figure_bytes(build(), title=title, caption=caption,
                                                      lecture=lecture, fmt=fmt),
                file_name=viz.file_name(title, fmt), mime=viz.export.FORMATS[fmt])
        # the chart's numbers as a table: what a screen reader (or a spreadsheet) can go through
        st.download_button("Table (CSV)", key=f"csv.{key}", on_click="ignore",
                           icon=":material/table:", help="The numbers of this chart as a table (CSV)",
                           data=lambda: viz.table_csv(build()), file_name=viz.file_name(title, "csv"),
                           mime=viz.export.TABLE_MIME)
