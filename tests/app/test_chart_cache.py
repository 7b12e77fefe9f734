"""ui/charts.py's shared chart caches: a kept figure draws exactly what the uncached path draws, and
the Arrow tables it sends are Streamlit's own conversion, bounded in memory."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from streamlit import dataframe_util
from streamlit.testing.v1 import AppTest


def _both_ways() -> None:
    import numpy as np

    from core import viz
    from ui.charts import show_chart, show_figure

    values = np.array([[0.1, 0.9], [0.4, 0.6]])

    def build():
        return viz.heatmap(values, ["a", "b"], ["x", "y"], title="weights", fmt=".2f")

    # the same caption each time: it is the chart's text alternative, part of the spec drawn
    show_chart(build(), name="plain", caption="two rows", downloads=False)
    show_figure(build, ("heatmap-test", values), name="kept", caption="two rows", downloads=False)
    show_figure(build, ("heatmap-test", values), name="kept", caption="two rows", downloads=False)


def _charts(at) -> list:
    return [e.proto for e in at.get("vega_lite_chart") + at.get("arrow_vega_lite_chart")]


def test_a_kept_figure_draws_the_same_spec_and_table_as_the_uncached_path():
    at = AppTest.from_function(_both_ways).run()
    assert not at.exception
    plain, kept, again = _charts(at)
    for proto in (kept, again):
        assert json.loads(proto.spec) == json.loads(plain.spec)
        assert [(d.name, d.data.data) for d in proto.datasets] == [(d.name, d.data.data) for d in plain.datasets]
    assert plain.datasets and plain.datasets[0].data.data  # a table was sent, not an empty one


def test_arrow_tables_are_streamlit_s_bytes_shared_by_content_and_bounded():
    from ui.charts import _ArrowTables

    tables = _ArrowTables(max_bytes=20_000)
    frame = pd.DataFrame({"x": ["a", "b", "c"], "value": [0.5, 1.5, 2.5]})
    first = tables.get("data-1", frame)
    assert first == dataframe_util.convert_anything_to_arrow_bytes(frame)
    assert tables.get("data-1", frame.copy()) is first  # equal content, one conversion
    # the same name with other column types is another table (names digest the text of values)
    as_text = frame.astype({"value": str})
    assert tables.get("data-1", as_text) == dataframe_util.convert_anything_to_arrow_bytes(as_text)
    for i in range(200):  # many distinct tables: the least recently drawn go first
        tables.get(f"data-{i + 2}", pd.DataFrame({"v": np.arange(50.0) + i}))
    assert 0 < tables._size <= 20_000
    assert sum(map(len, tables._items.values())) == tables._size


def test_arrow_datasets_replaces_only_data_frames():
    from ui.charts import arrow_datasets

    frame = pd.DataFrame({"v": [1.0, 2.0]})
    assert arrow_datasets({"mark": "bar"}) == {}
    assert arrow_datasets({"datasets": {"already": b"bytes"}}) == {}
    out = arrow_datasets({"datasets": {"t": frame, "g": {"type": "FeatureCollection"}}})
    assert out["datasets"]["t"] == dataframe_util.convert_anything_to_arrow_bytes(frame)
    assert out["datasets"]["g"] == {"type": "FeatureCollection"}


def test_freeze_tells_inputs_apart_exactly():
    from ui.charts import freeze

    a = np.array([[1.0, 2.0]])
    assert freeze(("m", a)) == freeze(("m", a.copy()))
    assert freeze(("m", a)) != freeze(("m", a.T))  # same bytes, other shape
    assert freeze(("m", a)) != freeze(("m", a.astype(np.float32)))
    assert freeze(("m", a)) != freeze(("m", a + 1e-12))
    special = np.array([["", "−∞"]], dtype=object)
    assert freeze(special) == freeze(special.copy()) != freeze(np.array([["", "✕"]], dtype=object))
    assert freeze({"title": "t", "domain": [0, 1]}) != freeze({"title": "t", "domain": [0, 2]})
    hash(freeze(("m", a, special, {"k": [1, 2]})))  # usable as a cache key


def _one_chart() -> None:
    import numpy as np

    from core import viz
    from ui.charts import show_figure

    values = np.array([[0.25, 0.75]])
    show_figure(lambda: viz.heatmap(values, ["q"], ["a", "b"], title="one row"), ("one-row", values),
                name="one row", caption="a row", key="one")


def test_the_download_menu_makes_its_buttons_only_while_open():
    at = AppTest.from_function(_one_chart).run()
    assert not at.exception
    assert not at.get("download_button")  # closed: no button, nothing registered for the rerun
    at.session_state["dl.one"] = True  # what opening the "Download" popover sets
    at.run()
    assert not at.exception
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels == ["PNG", "SVG", "Table (CSV)"]
    assert [b.proto.deferred_file_id != "" for b in at.get("download_button")] == [True] * 3


def test_kept_figures_are_found_by_content_bounded_and_emptied_after_a_class():
    from server import housekeeping
    from ui.charts import _KeptFigures, freeze

    built = []

    def build(values):
        def make():
            built.append(values)
            from core import viz
            return viz.heatmap(np.array([values]), ["q"], ["a", "b"], title="one row")
        return make

    kept = _KeptFigures(3)
    first = kept(freeze(("row", np.array([0.25, 0.75]))), False, build([0.25, 0.75]), None)
    # equal numbers in a new array, as every page run makes them: the same figure, not built again
    again = kept(freeze(("row", np.array([0.25, 0.75]))), False, build([0.25, 0.75]), None)
    assert again is first and built == [[0.25, 0.75]] and kept.cache_info()[:2] == (1, 1)
    assert kept(freeze(("row", np.array([0.25, 0.75]))), True, build([0.25, 0.75]), None) is not first  # lecture mode
    for i in range(5):
        kept(freeze(("row", np.array([i, 1.0 - i]))), False, build([i, 1.0 - i]), None)
    assert kept.cache_info()[3] == 3  # the least recently drawn went first
    assert kept(freeze(("row", np.array([0.25, 0.75]))), False, build([0.25, 0.75]), None) is not first

    import ui.charts
    assert ui.charts._figure in housekeeping.app_lru_caches()  # the app's own kept figures ...
    ui.charts._figure(freeze(("row", np.array([0.5, 0.5]))), False, build([0.5, 0.5]), None)
    housekeeping.clear_shared_caches()
    assert ui.charts._figure.cache_info()[3] == 0  # ... are emptied with the other caches
