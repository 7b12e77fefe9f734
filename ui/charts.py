"""Show a chart with its caption and one-click PNG (2x) and SVG downloads.

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
               downloads: bool = True) -> None:
    """Render `chart` (themed for the current mode), its caption and the figure downloads.

    `title` is the human title of the downloaded figure and its file name (default: the chart's
    own title, else `name`)."""
    lecture = lecture_mode()
    spec = viz.vega_spec(chart, lecture)
    if spec is None:  # tables inside layers: Altair serialises them (slower, same picture)
        st.altair_chart(viz.themed(chart, lecture), width="content")
    else:
        st.vega_lite_chart(spec=spec, width="content")
    st.caption(caption)
    if downloads:
        download_buttons(lambda: chart, title=title or viz.chart_title(chart) or name, caption=caption,
                         key=key or _key(name), lecture=lecture)


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
