"""Show a chart with its caption, its text alternative, and one-click PNG (2x), SVG and CSV
(its numbers as a table) downloads.

Only Streamlit display code lives here; the theme, the captioned figure and the file name come
from core.viz. The figure files are made only when a download is clicked (Streamlit calls the
data callable then), so a page with many charts stays fast.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pandas as pd
import streamlit as st
from streamlit import dataframe_util

from core import viz
from ui.state import lecture_mode

ARROW_CACHE_BYTES = 4 * 2**20  # the process's converted chart tables, at most this much in all
ARROW_CACHE_MAX_ROWS = 5_000  # larger tables are converted each time (a class rarely shares one)
FIGURE_CACHE_ENTRIES = 64  # figures kept ready to draw (the spec and its Arrow bytes, up to ~100 kB each)


def _key(text: str) -> str:
    """A stable widget key from a chart's name."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "figure"


def show_chart(chart, *, name: str, caption: str, title: str = "", key: str | None = None,
               downloads: bool = True) -> None:
    """Render `chart` (themed for the current mode), its caption and the figure downloads.

    `title` is the human title of the downloaded figure and its file name (default: the chart's
    own title, else `name`)."""
    lecture = lecture_mode()
    _show(chart, viz.fit_to_column(viz.vega_spec(chart, lecture)), lambda: chart, title=title or viz.chart_title(chart) or name,
          caption=caption, key=key or _key(name), downloads=downloads, lecture=lecture)


def _show(chart, spec: dict | None, build: Callable, *, title: str, caption: str, key: str,
          downloads: bool, lecture: bool) -> None:
    """What show_chart and show_figure draw: the chart, its caption, its Download menu."""
    draw_chart(chart, spec, lecture=lecture, description=viz.description(title, caption))
    st.caption(caption)
    if downloads:
        download_buttons(build, title=title, caption=caption, key=key, lecture=lecture)


@dataclass(frozen=True)
class Figure:
    """A chart ready to draw: what show_figure keeps for the charts a class shares."""

    spec: dict | None  # Vega-Lite, its tables as Arrow bytes; None: `chart` is drawn through Altair
    title: str  # the chart's own title ("" when it has none)
    facts: Any  # what the caller asked to know of the chart (`inspect(chart)`), e.g. whether numbers fit
    chart: Any = None  # kept only when there is no spec


class _Kept:
    """What the chart caches of this module share: values by key, the least recently used going
    first once their total size (`size_of` each value; 1 counts entries) passes `max_size`. A
    value is made outside the lock, so other sessions draw meanwhile."""

    def __init__(self, max_size: int, size_of: Callable[[Any], int] = lambda value: 1):
        self.max_size, self.size_of = max_size, size_of
        self._items: OrderedDict[tuple, Any] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def lookup(self, key: tuple, make: Callable[[], Any]) -> Any:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
                self.hits += 1
                return found
            self.misses += 1
        value = make()
        with self._lock:
            if key not in self._items:
                self._items[key] = value
                self._size += self.size_of(value)
            while self._size > self.max_size and self._items:
                self._size -= self.size_of(self._items.popitem(last=False)[1])
        return value

    def cache_clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._size = self.hits = self.misses = 0

    def cache_info(self) -> tuple[int, int, int, int]:
        """(hits, misses, max size, entries), as functools' cache_info."""
        return self.hits, self.misses, self.max_size, len(self._items)


class _KeptFigures(_Kept):
    """The figures of show_figure, kept per process by their inputs (see `freeze`) and the mode,
    at most FIGURE_CACHE_ENTRIES.

    Not st.cache_resource: that digests its arguments on every call, and the inputs hold every
    number the chart draws; py-spy put that digest at 7.5% of a walkthrough step's page run.
    The frozen inputs are a tuple of plain values and bytes, which Python hashes and compares
    in C. Being callable with `cache_clear` and `cache_info` makes it one of the caches
    server.housekeeping empties after a class, as it does functools' caches."""

    def __call__(self, inputs: tuple, lecture: bool, build: Callable,
                 inspect: Callable | None) -> Figure:
        return self.lookup((inputs, lecture), lambda: _make_figure(lecture, build, inspect))


def make_figure(build: Callable, lecture: bool) -> Figure:
    """A Figure made now from `build()`, for a page that keeps it in a cache of its own (then drawn
    with show_figure(..., figure=...)): figures that only some sessions draw stay out of the
    class's shared store, where they would push out the figures everyone draws."""
    return _make_figure(lecture, build, None)


def _make_figure(lecture: bool, build: Callable, inspect: Callable | None) -> Figure:
    chart = build()
    spec = viz.fit_to_column(viz.vega_spec(chart, lecture))
    facts = inspect(chart) if inspect is not None else None
    if spec is None:
        return Figure(None, viz.chart_title(chart), facts, chart)
    return Figure({**spec, **arrow_datasets(spec)}, viz.chart_title(chart), facts)


_figure = _KeptFigures(FIGURE_CACHE_ENTRIES)


def freeze(value) -> Any:
    """A hashable, exact stand-in for a chart's input (arrays by their bytes, lists as tuples)."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "biufcmM":
            return ("array", value.shape, value.dtype.str, value.tobytes())
        return ("array", value.shape, tuple(map(str, value.ravel().tolist())))
    if isinstance(value, dict):
        return ("dict", tuple((str(k), freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def kept_figure(build: Callable, inputs: tuple, inspect: Callable | None = None) -> Figure:
    """show_figure's kept figure for `inputs` (made now if it is not kept yet), to read its
    `facts` before drawing it: e.g. whether a heatmap's numbers fit, which changes its caption."""
    return _figure(freeze(inputs), lecture_mode(), build, inspect)


def show_figure(build: Callable, inputs: tuple, *, name: str, caption: str, title: str = "",
                key: str | None = None, downloads: bool = True, figure: Figure | None = None) -> None:
    """show_chart for a chart that many sessions draw alike (a walkthrough step, a poll's bars):
    `build()` makes it from `inputs` (which must name everything it depends on; see freeze), and
    the finished spec is kept per process, so 60 students following the lecturer to the same
    step serialise it once. The chart is built again only for a download. `figure`: the
    kept_figure already looked up for these inputs."""
    lecture = lecture_mode()
    figure = figure or _figure(freeze(inputs), lecture, build, None)
    _show(figure.chart, figure.spec, build, title=title or figure.title or name, caption=caption,
          key=key or _key(name), downloads=downloads, lecture=lecture)


def draw_chart(chart, spec: dict | None, *, lecture: bool, description: str) -> None:
    """Draw a chart from its spec (`viz.vega_spec`, fitted: `viz.fit_to_column`), or through
    Altair when that is None (tables inside layers: slower, same picture). `description` is its
    text alternative: Vega puts it in the chart's aria-label, which screen readers read (WCAG
    1.1.1). A fitted spec is drawn at its own width where the column has room and laid out again
    in a narrower one; any other chart at its own size, scaled down in a narrower column."""
    if spec is None:
        st.altair_chart(viz.themed(chart, lecture).properties(description=description),
                        width="content")
    else:  # a fresh top level: a spec kept by a cache is never changed here
        st.vega_lite_chart(spec={**spec, "description": description, **arrow_datasets(spec)},
                           width=viz.drawn_width(spec))


class _ArrowTables(_Kept):
    """Chart tables already turned into the Arrow bytes Streamlit sends, by content.

    st.vega_lite_chart converts every DataFrame in a spec's "datasets" to Arrow on every rerun
    unless it is given the bytes. In a class, 60 students draw the same small tables (the
    walkthrough at the lecturer's step, a poll's bars): py-spy put that conversion at 6% of the
    server's time. A dataset's name is viz.vega_spec's digest of its content, so (name, column
    types) names the bytes exactly; the least recently drawn go first past ARROW_CACHE_BYTES."""

    def __init__(self, max_bytes: int):
        super().__init__(max_bytes, size_of=len)

    def get(self, name: str, data: pd.DataFrame) -> bytes:
        if len(data) > ARROW_CACHE_MAX_ROWS:
            return dataframe_util.convert_anything_to_arrow_bytes(data)
        key = (name, tuple(map(str, data.columns)), tuple(map(str, data.dtypes)))
        return self.lookup(key, lambda: dataframe_util.convert_anything_to_arrow_bytes(data))


ARROW_TABLES = _ArrowTables(ARROW_CACHE_BYTES)


def arrow_datasets(spec: dict) -> dict:
    """{"datasets": ...} with each DataFrame replaced by its Arrow bytes (from ARROW_TABLES);
    {} when the spec has no DataFrame to convert."""
    datasets = spec.get("datasets")
    if not datasets or not any(isinstance(v, pd.DataFrame) for v in datasets.values()):
        return {}
    return {"datasets": {name: ARROW_TABLES.get(name, data) if isinstance(data, pd.DataFrame) else data
                         for name, data in datasets.items()}}


def download_buttons(build: Callable, *, title: str, caption: str, key: str,
                     lecture: bool) -> None:
    """A "Download" menu with PNG (2x), SVG and the chart's numbers (CSV) for the chart `build()`
    returns, titled and captioned. Files are named after the human `title`.

    The menu is a popover that tracks its state: its buttons are made only while it is open (the
    chart is built then, the files when a button is clicked). Three download buttons under every
    chart each registered a callable with Streamlit's media file manager on every rerun, under one
    lock that every session's every run also takes to sweep them: in a class of 60, py-spy found
    the server's script threads waiting on that lock 17% of their time."""
    menu = st.popover("Download", icon=":material/download:", key=f"dl.{key}", on_change="rerun",
                      help="This figure as PNG or SVG (with its caption, for slides), or its numbers as CSV")
    if not menu.open:
        return
    chart = build()  # now: a later rerun may change what `build` reads; the files are this figure
    with menu:
        for fmt, label, hint in (("png", "PNG", "2x PNG with the caption, for slides"),
                                 ("svg", "SVG", "Vector SVG with the caption, for slides")):
            st.download_button(
                label, key=f"{fmt}.{key}", on_click="ignore", icon=":material/download:", help=hint,
                data=lambda fmt=fmt: viz.figure_bytes(chart, title=title, caption=caption,
                                                      lecture=lecture, fmt=fmt),
                file_name=viz.file_name(title, fmt), mime=viz.export.FORMATS[fmt], width="stretch")
        # the chart's numbers as a table: what a screen reader (or a spreadsheet) can go through
        st.download_button("Table (CSV)", key=f"csv.{key}", on_click="ignore",
                           icon=":material/table:", help="The numbers of this chart as a table (CSV)",
                           data=lambda: viz.table_csv(chart), file_name=viz.file_name(title, "csv"),
                           mime=viz.export.TABLE_MIME, width="stretch")
