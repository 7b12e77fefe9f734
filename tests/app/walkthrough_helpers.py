"""Helpers shared by the AppTests of the four walkthrough pages (1-4): open a page, read its
settings, charts, number lines and badges, drive its steps and the embeddings CSV box."""

from __future__ import annotations

import json

import pyarrow as pa

from core.lessons import walkthrough as wt
from tests.app.conftest import assert_no_exception, open_page
from tests.helpers import errors, markdown, spec_title, warnings  # noqa: F401 - the page tests import them from here

PAGE = "pages/1_simple_attention.py"
PREFIX = "walkthrough"

BOOK_WEIGHTS = [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581]

BOOK_CONTEXT = [0.4419, 0.6515, 0.5683]

BOOK_SCORES = [0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865]


def open_walk(page: str = PAGE, query: dict | None = None, settings_open: bool = True):
    at = open_page(page, query=query, settings_open=settings_open)
    assert_no_exception(at)
    return at


def settings_of(at) -> wt.WalkthroughSettings:
    return at.session_state[PREFIX]


def key(at, field: str) -> str:
    """The widget key `ui.state.bound` gives a settings field."""
    return f"{PREFIX}.{at.session_state[PREFIX + '.__gen']}.{field}"


def charts(at) -> dict:
    """Every chart on the page: its title -> the DataFrame it draws (from the Arrow dataset)."""
    out = {}
    for el in at.get("vega_lite_chart") + at.get("arrow_vega_lite_chart"):
        spec = json.loads(el.proto.spec)
        title = spec_title(spec)
        frames = [pa.ipc.open_stream(ds.data.data).read_all().to_pandas() for ds in el.proto.datasets]
        out[str(title)] = frames[0] if frames else None
    return out


def chart(at, start: str):
    """The data of the one chart whose title starts with `start`."""
    found = [df for title, df in charts(at).items() if title.startswith(start)]
    assert len(found) == 1, (start, list(charts(at)))
    return found[0]


def numbers(at, label: str) -> list[float]:
    """The numbers of a `numbers_line` such as 'α (softmax) = `0.1385  0.2379 ...`'."""
    for m in at.markdown:
        if m.value.startswith(label + " `"):
            text = m.value[len(label) + 2:].rstrip("`")
            return [float(v.replace("−∞", "-inf")) for v in text.split()]
    raise AssertionError(f"no line {label!r} in {[m.value for m in at.markdown]}")


def open_expander(at, state_key: str) -> None:
    """Open a state-tracking expander (what a click on its header does)."""
    at.session_state[state_key] = True
    at.run()
    assert_no_exception(at)


def apply_csv(at, text: str):
    if not any(t.key == f"{PREFIX}.csv_text" for t in at.text_area):
        open_expander(at, f"{PREFIX}.embeddings_open.0")  # collapsed on pages 2-4
    at.text_area(key=f"{PREFIX}.csv_text").input(text)
    at.button(key=f"{PREFIX}.apply_csv").click()
    at.run()
    assert_no_exception(at)
    return at


def set_step(at, field: str, step: str):
    at.segmented_control(key=key(at, field)).set_value(step).run()
    assert_no_exception(at)
    return at


def badges(at) -> list[str]:
    return [m.value for m in at.markdown if "-badge[" in m.value]


def assert_book_table(at) -> None:
    s = settings_of(at)
    assert s.tokens == list(wt.BOOK_TOKENS) and s.embeddings == wt.BOOK_EMBEDDINGS


def commit_guess(at, kind: str, value):
    """Predict, then reveal: choose `value` in the question `kind` ("causal_top" ...) and commit."""
    [r for r in at.radio if r.key.startswith(f"{PREFIX}.guess_input.{kind}")][0].set_value(value).run()
    [b for b in at.button if b.key.startswith(f"{PREFIX}.commit.{kind}")][0].click().run()
    assert_no_exception(at)
    return at


def asks(at, kind: str) -> bool:
    """True while the page asks the question `kind` (its guess is not committed)."""
    return any(r.key.startswith(f"{PREFIX}.guess_input.{kind}") for r in at.radio)
