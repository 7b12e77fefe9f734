"""Readers of what an AppTest run shows, shared by every page test: texts of elements, metrics,
errors and warnings, code blocks, and the rows and titles behind the page's charts; and `wait_for`, which
polls a condition (a worker thread's progress) until it holds."""

from __future__ import annotations

import json
import re
import time

import pandas as pd
import pyarrow as pa

from core.viz.fit import TITLE_TEXT


def texts(elements) -> str:
    """The values of a list of elements (markdown, info, warning ...) joined by spaces."""
    return " ".join(str(e.value) for e in elements)


def shown(text: str) -> str:
    """Markdown text as a reader sees it: backslash escapes and HTML entities undone (a notice that
    quotes a link's values is escaped, ui.state._literal)."""
    text = re.sub(r"\\([\\`*_{}\[\]()#+\-.!|~$:])", r"\1", text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def markdown(at) -> str:
    return "\n".join(m.value for m in at.markdown)


def errors(at) -> str:
    return "\n".join(e.value for e in at.error)


def warnings(at) -> str:
    return "\n".join(w.value for w in at.warning)


def codes(at) -> str:
    return "\n".join(c.value for c in at.code)


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _chart_elements(at) -> list:
    return at.get("vega_lite_chart") + at.get("arrow_vega_lite_chart")


def chart_rows(at) -> pd.DataFrame:
    """Rows behind every Vega-Lite chart on the page (Arrow data and named datasets)."""
    frames = []
    for el in _chart_elements(at):
        proto = el.proto
        blobs = [proto.data.data] if proto.HasField("data") and proto.data.data else []
        blobs += [ds.data.data for ds in proto.datasets]
        for blob in blobs:
            frames.append(pa.ipc.open_stream(blob).read_pandas())
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def spec_title(spec: dict) -> str:
    """A chart spec's title as built: core.viz.fit writes a title that must wrap as lines or as a
    Vega expression that picks them, and keeps the text in usermeta."""
    kept = (spec.get("usermeta") or {}).get(TITLE_TEXT)
    if kept is not None:
        return kept
    title = spec.get("title")
    title = title.get("text") if isinstance(title, dict) else title
    return " ".join(title) if isinstance(title, list) else str(title)


def chart_titles(at) -> list[str]:
    """Every title in the specs of the page's charts (layers and facets included)."""
    found: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            title = node.get("title")
            if isinstance((node.get("usermeta") or {}).get(TITLE_TEXT), str):
                found.append(node["usermeta"][TITLE_TEXT])
            elif isinstance(title, str):
                found.append(title)
            elif isinstance(title, dict) and isinstance(title.get("text"), str):
                found.append(title["text"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for el in _chart_elements(at):
        walk(json.loads(el.proto.spec))
    return found


def wait_for(condition, timeout: float = 30.0) -> bool:
    """Poll `condition()` until it holds or `timeout` seconds pass (a worker thread's progress);
    returns its last value, so `assert wait_for(...)` fails with the condition unmet."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and not condition():
        time.sleep(0.01)
    return condition()
