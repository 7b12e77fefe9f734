"""Show a chart with its caption and one-click PNG (2x) and SVG downloads.

The figure files are made only when a download is clicked (Streamlit calls the data callable
then), so a page with many charts stays fast.
"""

from __future__ import annotations

import re

import altair as alt
import streamlit as st

from core import charts
from ui.state import lecture_mode


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "figure"


def show_chart(chart: alt.TopLevelMixin, *, name: str, caption: str, title: str = "",
               key: str | None = None, downloads: bool = True) -> None:
    """Render `chart` (themed for the current mode), its caption and the figure downloads."""
    lecture = lecture_mode()
    # "pad" keeps the spec's plot size and adds room for axes and legend around it; the default
    # "fit" squeezes everything into the width, shrinking heatmap cells until labels vanish
    sized = chart.properties(autosize=alt.AutoSizeParams(type="pad"))
    st.altair_chart(charts.themed(sized, lecture), width="content")
    st.caption(caption)
    if not downloads:
        return
    def figure() -> alt.TopLevelMixin:  # built only when a download is clicked
        return charts.themed(charts.with_caption(chart, title or name, caption), lecture)

    slug = _slug(name)
    key = key or slug
    # a horizontal row sized to its buttons: fixed column ratios truncate the labels in the
    # narrow page columns where several charts stand side by side
    row = st.container(horizontal=True, gap="small")
    with row:
        st.download_button("PNG", data=lambda: charts.to_png(figure(), scale=2.0),
                           file_name=f"{slug}.png", mime="image/png", key=f"png.{key}",
                           on_click="ignore", icon=":material/download:",
                           help="2x PNG with the caption, for slides")
        st.download_button("SVG", data=lambda: charts.to_svg(figure()).encode("utf-8"),
                           file_name=f"{slug}.svg", mime="image/svg+xml", key=f"svg.{key}",
                           on_click="ignore", icon=":material/download:",
                           help="Vector SVG with the caption, for slides")
