"""core/viz: the heatmap, lines, bars, export, the lecture theme, and that no other module imports altair."""

import ast
import re
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd
import pytest

from core import viz

ROOT = Path(__file__).resolve().parents[2]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

def layers(spec: dict) -> list[dict]:
    """The layers of a (possibly faceted) layer chart's spec."""
    return spec.get("spec", spec)["layer"]


# ------------------------------------------------------------------------------ heatmap
def test_matrix_frame_labels_neg_inf_and_repeated_names():
    m = np.array([[0.5, -np.inf], [0.25, 0.75]])
    df = viz.matrix_frame(m, ["Your", "Your"], ["a", "b"], ".2f")
    assert list(df["row"].unique()) == ["Your #0", "Your #1"]
    assert df.loc[1, "label"] == viz.NEG_INF_LABEL == "−∞" and not df.loc[1, "finite"]
    assert np.isnan(df.loc[1, "value"])
    assert df.loc[3, "label"] == "0.75"


def test_heatmap_rejects_mismatched_labels_and_bad_shapes():
    with pytest.raises(ValueError, match="does not match"):
        viz.heatmap(np.zeros((2, 3)), ["a", "b"], ["x", "y"])
    with pytest.raises(ValueError, match="2-D matrix"):
        viz.heatmap(np.zeros(3), ["a"], ["x", "y", "z"])
    with pytest.raises(ValueError, match="facet labels"):
        viz.heatmap(np.zeros((2, 2, 2)), ["a", "b"], ["x", "y"], facets=["only one"])


def test_heatmap_writes_values_in_cells_and_greys_neg_inf():
    chart = viz.heatmap([[1.0, -np.inf], [0.5, 0.25]], ["a", "b"], ["x", "y"], title="t")
    spec = chart.to_dict(validate=True)
    assert list(chart.data["label"]) == ["1.00", "−∞", "0.50", "0.25"]
    assert list(chart.data["finite"]) == [True, False, True, True]
    kinds = [layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"]
             for layer in layers(spec)]
    assert kinds == ["rect", "text"]
    rect = layers(spec)[0]["encoding"]["color"]
    assert rect["condition"]["test"] == "datum.finite" and rect["value"] == viz.MASKED_GREY
    assert layers(spec)[1]["encoding"]["text"]["field"] == "label"


def test_heatmap_hides_values_when_too_many_cells_and_shows_a_legend():
    big = np.random.default_rng(0).random((32, 32))
    names = [f"t{i}" for i in range(32)]
    spec = viz.heatmap(big, names, names).to_dict(validate=True)
    assert len(layers(spec)) == 1  # no text layer
    assert layers(spec)[0]["encoding"]["color"]["condition"].get("legend", {}) is not None
    # a small matrix shows its numbers but no legend (the numbers say what the colours mean)
    small = viz.heatmap(np.eye(3), list("abc"), list("abc")).to_dict(validate=True)
    assert len(layers(small)) == 2
    assert small["layer"][0]["encoding"]["color"]["condition"]["legend"] is None
    # asked not to show them
    assert len(layers(viz.heatmap(np.eye(3), list("abc"), list("abc"),
                                  show_values=False).to_dict())) == 1


def test_heatmap_cells_widen_to_fit_their_numbers_and_fixed_cells_stay():
    wide = viz.heatmap([[-123.456, 1.0]], ["r"], ["a", "b"], fmt=".3f")
    assert wide.to_dict()["width"] >= 2 * len("-123.456") * 7
    fixed = viz.heatmap(np.eye(4), list("abcd"), list("abcd"), cell_w=20, cell_h=12, show_values=False)
    spec = fixed.to_dict()
    assert (spec["width"], spec["height"]) == (80, 48)


def test_heatmap_special_and_masked_cells():
    special = np.array([["", "✕"], ["", ""]], dtype=object)
    chart = viz.heatmap([[0.5, 0.5], [0.2, 0.8]], ["a", "b"], ["x", "y"], special=special)
    assert list(chart.data["label"]) == ["0.50", "✕", "0.20", "0.80"]
    assert list(chart.data["finite"]) == [True, False, True, True]
    masked = np.triu(np.ones((2, 2), dtype=bool), k=1)
    chart = viz.heatmap([[1.0, 0.0], [0.4, 0.6]], ["a", "b"], ["a", "b"], masked=masked)
    assert list(chart.data["finite"]) == [True, False, True, True]
    # value kept for hover, and the tooltip says the grey cell is masked (not colour alone)
    assert list(chart.data["label"]) == ["1.00", "0.00 (masked)", "0.40", "0.60"]


def test_heatmap_highlights_rows_columns_and_cells():
    m = np.arange(9.0).reshape(3, 3)
    chart = viz.heatmap(m, list("abc"), list("xyz"), highlight_row=1, highlight_col=2,
                        highlight_cells=[(0, 0)])
    spec = chart.to_dict(validate=True)
    assert len(layers(spec)) == 3  # cells, outlines, numbers
    outline = layers(spec)[1]
    assert outline["mark"]["stroke"] == viz.HIGHLIGHT
    assert outline["encoding"]["strokeOpacity"]["condition"]["test"] == "datum.outlined"
    got = {(r, c) for r, c, o in zip(chart.data["row_i"], chart.data["col_i"], chart.data["outlined"]) if o}
    assert got == {(1, 0), (1, 1), (1, 2), (0, 2), (2, 2), (0, 0)}
    assert "outlined" not in viz.heatmap(m, list("abc"), list("xyz")).data  # no highlight, no layer


def test_heatmap_facets_make_one_panel_per_facet_value():
    heads = np.random.default_rng(1).random((3, 4, 4))
    chart = viz.heatmap(heads, list("abcd"), list("abcd"), facets=["head 1", "head 2", "head 3"],
                        facet_columns=2, title="heads")
    spec = chart.to_dict(validate=True)
    assert spec["facet"]["field"] == "facet" and spec["columns"] == 2
    assert list(dict.fromkeys(chart.data["facet"])) == ["head 1", "head 2", "head 3"]
    assert len(chart.data) == 3 * 16
    grid = np.random.default_rng(2).random((2, 3, 4, 4))  # layers x heads
    chart = viz.heatmap(grid, list("abcd"), list("abcd"),
                        facets=(["layer 1", "layer 2"], ["head 1", "head 2", "head 3"]))
    spec = chart.to_dict(validate=True)
    assert spec["facet"]["row"]["field"] == "facet_row" and spec["facet"]["column"]["field"] == "facet"
    panels = chart.data.groupby(["facet_row", "facet"]).size()
    assert len(panels) == 6 and set(panels) == {16}
    # the panel of layer 2, head 3 holds that matrix
    panel = chart.data[(chart.data["facet_row"] == "layer 2") & (chart.data["facet"] == "head 3")]
    assert np.allclose(panel["value"].to_numpy(), grid[1, 2].ravel())


def test_heatmap_diverging_is_symmetric_around_zero():
    chart = viz.heatmap([[-2.0, 1.0]], ["r"], ["a", "b"], diverging=True)
    scale = layers(chart.to_dict())[0]["encoding"]["color"]["condition"]["scale"]
    assert scale["domain"] == [-2.0, 2.0] and scale["scheme"] == viz.diverging_scheme(False)
    seq = viz.heatmap([[0.0, 1.0]], ["r"], ["a", "b"], lecture=True)
    assert layers(seq.to_dict())[0]["encoding"]["color"]["condition"]["scale"]["scheme"] == "viridis"


# ------------------------------------------------------------------------------ theme
def value_font_sizes(font) -> tuple[float, float]:
    """(built size, floor) of a text mark's font: a number, or core.viz.fit.value_font's expression."""
    if isinstance(font, (int, float)):
        return font, font
    match = re.fullmatch(r"min\(([\d.]+), max\(([\d.]+), .*\)\)", font["expr"])
    assert match, font
    return float(match[1]), float(match[2])


def test_lecture_theme_font_sizes_and_palette():
    chart = viz.heatmap(np.eye(2), ["a", "b"], ["a", "b"], lecture=True)
    spec = viz.themed(chart, lecture=True).to_dict(validate=True)
    config = spec["config"]
    assert config["axis"]["labelFontSize"] >= viz.LECTURE_MIN_AXIS_PX
    assert config["axis"]["titleFontSize"] >= viz.LECTURE_MIN_AXIS_PX
    assert config["legend"]["labelFontSize"] >= viz.LECTURE_MIN_AXIS_PX
    assert config["title"]["fontSize"] > config["axis"]["titleFontSize"]
    # numbers in the cells: the size they are built at and the smallest a narrow column gets
    built, floor = value_font_sizes(layers(spec)[1]["mark"]["fontSize"])
    assert built >= floor >= viz.LECTURE_MIN_VALUE_PX
    assert spec["autosize"] == {"type": "pad"}
    normal = viz.themed(chart, lecture=False).to_dict()["config"]["axis"]["labelFontSize"]
    assert normal < config["axis"]["labelFontSize"]
    assert viz.palette(True) == viz.OKABE_ITO and viz.palette(False) != viz.OKABE_ITO
    assert "axis" not in chart.to_dict().get("config", {})  # theming returns a copy


def test_fast_build_builds_the_same_valid_spec():
    from altair.utils.schemapi import debug_mode

    args = (np.eye(3), list("abc"), list("abc"))
    fast = viz.heatmap(*args, highlight_row=0).to_dict(validate=True)
    with debug_mode(True):
        slow = viz.heatmap.__wrapped__(*args, highlight_row=0).to_dict(validate=True)
    assert fast == slow


# ------------------------------------------------------------------------------ lines and bars
def test_line_chart_long_form_with_dash_and_rule():
    df = pd.DataFrame({"step": [0, 1, 0, 1], "loss": [3.0, 2.0, 3.1, 2.5],
                       "run": ["a", "a", "b", "b"], "split": ["train", "train", "val", "val"]})
    chart = viz.line_chart(df, x="step", y="loss", series="run", dash="split",
                           rule=(3.3, "uniform guess"), lecture=True)
    spec = chart.to_dict(validate=True)
    line = spec["layer"][0]
    assert line["encoding"]["color"]["field"] == "run"
    assert line["encoding"]["strokeDash"]["field"] == "split"
    assert line["encoding"]["color"]["scale"]["range"] == viz.OKABE_ITO
    assert spec["layer"][1]["mark"]["type"] == "rule"
    plain = viz.line_chart(df, x="step", y="loss", series="run").to_dict(validate=True)
    assert plain["mark"]["type"] == "line" and "strokeDash" not in plain["encoding"]


def test_bar_chart_values_highlight_and_label_check():
    chart = viz.bar_chart([0.1, 0.9], ["a", "a"], highlight=1, fmt=".2f")
    spec = chart.to_dict(validate=True)
    assert list(chart.data["label"]) == ["a #0", "a #1"]
    assert list(chart.data["text"]) == ["0.10", "0.90"]
    assert list(chart.data["highlight"]) == [False, True]
    assert len(spec["layer"]) == 2  # bars and their numbers
    with pytest.raises(ValueError, match="labels"):
        viz.bar_chart([1.0, 2.0], ["a"])
    grouped = viz.grouped_bars({"softmax": [0.2, 0.8], "plain": [0.5, 0.5]}, ["x", "y"])
    assert grouped.to_dict(validate=True)["layer"][0]["encoding"]["xOffset"]["field"] == "kind"
    many = viz.bar_chart(np.arange(40.0), [str(i) for i in range(40)])
    assert len(many.to_dict(validate=True)["layer"]) == 1  # too many bars to write numbers


def test_hbar_and_scatter():
    spec = viz.hbar_chart([0.5, 0.25], ["new", "train"], texts=["50%", "25%"],
                          domain=(0, 1), x_format="%").to_dict(validate=True)
    assert spec["layer"][1]["encoding"]["text"]["field"] == "text"
    df = pd.DataFrame({"PC1": [0.0, 1.0], "PC2": [1.0, 0.0], "char": ["a", "b"], "kind": ["v", "c"]})
    spec = viz.scatter(df, x="PC1", y="PC2", label="char", group="kind").to_dict(validate=True)
    assert spec["layer"][0]["encoding"]["color"]["field"] == "kind"


# ------------------------------------------------------------------------------ export
def test_png_export_is_2x_and_svg_has_caption():
    chart = viz.bar_chart([0.1, 0.9], ["a", "b"], title="weights")
    fig = viz.with_caption(chart, "Attention weights", "query journey, seed 123")
    png = viz.to_png(fig, scale=2.0)
    assert png[:8] == PNG_MAGIC
    width = int.from_bytes(png[16:20], "big")
    one_x = viz.to_png(fig, scale=1.0)
    assert width == 2 * int.from_bytes(one_x[16:20], "big")
    svg = viz.to_svg(fig)
    assert "<svg" in svg and "seed 123" in svg


def test_figure_bytes_titles_captions_and_names_files_humanly():
    chart = viz.heatmap(np.eye(2), ["a", "b"], ["a", "b"], title="raw")
    png = viz.figure_bytes(chart, title="Attention weights", caption="seed 7", fmt="png")
    assert png[:8] == PNG_MAGIC
    svg = viz.figure_bytes(chart, title="Attention weights", caption="seed 7", lecture=True,
                           fmt="svg").decode("utf-8")
    assert "Attention weights" in svg and "seed 7" in svg
    with pytest.raises(ValueError, match="format"):
        viz.figure_bytes(chart, title="t", fmt="gif")
    assert viz.file_name("Attention weights (query 2)", "png") == "Attention weights (query 2).png"
    assert viz.file_name('A/B: "α" weights', "svg") == "A B α weights.svg"
    assert viz.file_name("///", "png") == "figure.png"
    assert viz.chart_title(chart) == "raw" and viz.chart_title(viz.bar_chart([1.0], ["a"])) == ""


def test_names_of_columns_narrower_than_a_line_stand_upright_and_thin_out():
    from core.viz.lessons import compact_heatmap

    def x_axis(chart):
        (layer, *_) = chart.to_dict(validate=True)["layer"]
        return layer["encoding"]["x"]["axis"]
    dims = [f"d{j}" for j in range(32)]  # 300 px / 32 columns: 9 px each
    axis = x_axis(compact_heatmap(np.zeros((28, 32)), list("abcdefghijklmnopqrstuvwxyz.,"), dims))
    assert axis["labelAngle"] == -90 and axis["values"] == dims[::2]
    # single characters fit a narrow column: every one keeps its name
    chars = list("abcdefghijklmnopqrstuvwxyz.,")
    axis = x_axis(compact_heatmap(np.zeros((28, 28)), chars, chars))
    assert axis["values"] == chars and axis["labelAngle"] != -90


def test_a_table_of_characters_gives_each_name_a_line_while_it_stays_on_a_screen():
    # the Small LM page's 28 x 28 bigram table had 10 px rows for 11 px letters (one ran into the
    # next); 50 characters (a pasted text) would make a table taller than a screen: cells as before
    from core.viz.lessons import LABELLED_TABLE_PX, compact_heatmap

    def size(chart):
        layer = chart.to_dict(validate=True)["layer"][0]
        return chart.to_dict()["width"], chart.to_dict()["height"], layer["encoding"]["x"]["axis"]["labelAngle"]

    for lecture, line in ((False, 11 + 3), (True, 16 + 3)):
        chars = list("abcdefghijklmnopqrstuvwxyz.,")
        assert size(compact_heatmap(np.zeros((28, 28)), chars, chars, lecture=lecture)) == (28 * line, 28 * line, 0)
        dims = [f"d{j}" for j in range(32)]  # names of two or more characters: as narrow as before
        assert size(compact_heatmap(np.zeros((28, 32)), chars, dims, thin_labels=True,
                                    lecture=lecture))[:2] == (32 * 9, 28 * line)
    many = [chr(0x4E00 + i) for i in range(50)]
    assert 50 * 14 > LABELLED_TABLE_PX
    assert size(compact_heatmap(np.zeros((50, 50)), many, many))[:2] == (6 * 50, 6 * 50)


def test_an_export_copies_a_shared_chart_only_when_no_one_is_showing_it():
    # a chart cached for every session is shown (vega_spec swaps its data for a name meanwhile)
    # and exported from two threads: the export takes its copy under the same lock
    import threading

    from core.viz.theme import CHART_LOCK
    chart = viz.heatmap(np.eye(2), ["a", "b"], ["a", "b"], title="shared")
    table = chart.data
    done = threading.Event()
    with CHART_LOCK:
        chart.data = alt.NamedData(name="data-being-shown")  # what vega_spec does, under the lock
        worker = threading.Thread(target=lambda: (viz.figure_bytes(chart, title="t", fmt="svg"),
                                                  done.set()))
        worker.start()
        assert not done.wait(0.5)  # the export waits for the chart to be itself again
        chart.data = table
    worker.join(60)
    assert done.is_set()


# ------------------------------------------------------------------------------ one chart layer
def _python_files() -> list[str]:
    files = [ROOT / "streamlit_app.py"]
    for folder in ("core", "ui", "pages", "scripts", "benchmarks"):
        files += sorted((ROOT / folder).rglob("*.py"))
    return [str(f.relative_to(ROOT)) for f in files
            if f.exists() and not str(f.relative_to(ROOT)).startswith("core/viz/")]


def imports_altair(path: Path) -> bool:
    """Whether the module imports altair anywhere (top level or inside a function)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "altair" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "altair" \
                and node.level == 0:
            return True
    return False


def test_the_import_check_sees_imports(tmp_path):
    for code, found in (("import altair as alt\n", True), ("def f():\n    from altair.utils import x\n", True),
                        ("import altairish\n", False), ("from core import viz\n", False)):
        (tmp_path / "m.py").write_text(code)
        assert imports_altair(tmp_path / "m.py") == found, code


def test_the_check_covers_the_project():
    files = _python_files()
    assert "streamlit_app.py" in files and "ui/charts.py" in files and len(files) > 40
    assert not any(f.startswith("core/viz/") for f in files)


@pytest.mark.parametrize("path", _python_files())
def test_only_core_viz_imports_altair(path):
    assert not imports_altair(ROOT / path), f"{path} imports altair: move its chart code to core/viz"


# ------------------------------------------------------------------------------ the fast path
def _without_data(spec: dict) -> dict:
    spec = {k: v for k, v in spec.items() if k not in ("data", "datasets", "$schema")}
    config = {k: v for k, v in spec.get("config", {}).items() if k != "view"}
    return {**spec, "config": config}


@pytest.mark.parametrize("build", [
    lambda: viz.heatmap(np.eye(3), list("abc"), list("abc"), highlight_row=1, title="t"),
    lambda: viz.heatmap(np.random.default_rng(0).random((2, 3, 3)), list("abc"), list("abc"),
                        facets=["h1", "h2"]),
    lambda: viz.bar_chart([0.2, 0.8], ["a", "b"], highlight=0),
    lambda: viz.line_chart(pd.DataFrame({"s": [0, 1], "l": [2.0, 1.0], "r": ["a", "a"]}),
                           x="s", y="l", series="r", rule=(3.0, "uniform")),
])
@pytest.mark.parametrize("lecture", [False, True])
def test_vega_spec_is_the_validated_themed_spec_with_the_table_as_a_frame(build, lecture):
    chart = build()
    spec = viz.vega_spec(chart, lecture)
    (name, frame), = [(k, v) for k, v in spec["datasets"].items() if isinstance(v, pd.DataFrame)]
    assert frame is chart.data and spec["data"] == {"name": name}
    assert _without_data(spec) == _without_data(viz.themed(chart, lecture).to_dict(validate=True))
    assert spec["autosize"] == {"type": "pad"}
    assert isinstance(chart.data, pd.DataFrame)  # the chart itself is left as it was
    # the same table gets the same name (the frontend keeps it), another table another name
    assert set(viz.vega_spec(build(), lecture)["datasets"]) == set(spec["datasets"])


def test_frame_digest_names_equal_tables_alike_and_any_change_apart():
    from core.viz.theme import frame_digest
    table = pd.DataFrame({"row": ["a", "b", "c"], "value": [0.5, -1.0, 2.0], "n": [1, 2, 3]})
    name = frame_digest(table)
    assert frame_digest(table.copy()) == name and len(name) == 16
    changed = [table.assign(value=[0.5, -1.0, 2.5]), table.assign(row=["a", "b", "d"]),
               table.assign(n=[1, 2, 4]), table.rename(columns={"n": "m"}), table.iloc[:2],
               table.assign(n=[1.0, 2.0, 3.0]),  # same numbers, another type
               table.assign(row=["a", "bc", ""])]  # the text joined the same way, split apart
    assert len({name, *map(frame_digest, changed)}) == len(changed) + 1


def test_vega_spec_leaves_charts_with_tables_in_their_layers_to_altair():
    import altair as alt

    a = alt.Chart(pd.DataFrame({"x": [1]})).mark_point().encode(x="x:Q")
    b = alt.Chart(pd.DataFrame({"x": [2]})).mark_rule().encode(x="x:Q")
    assert viz.vega_spec(alt.layer(a, b)) is None
    assert viz.vega_spec(a) is not None


def test_heatmap_fill_width_uses_the_width_available_within_limits():
    small = viz.heatmap(np.eye(6), list("abcdef"), list("abcdef"), lecture=True)
    filled = viz.heatmap(np.eye(6), list("abcdef"), list("abcdef"), lecture=True, fill_width=600)
    assert small.to_dict()["width"] < 400 <= filled.to_dict()["width"] <= 600
    assert filled.to_dict()["height"] == filled.to_dict()["width"]  # square cells
    tiny = viz.heatmap(np.eye(2), list("ab"), list("ab"), fill_width=1200)
    assert tiny.to_dict()["width"] <= 2 * 110
    assert len(layers(filled.to_dict())) == 2  # still writes the numbers


def _font_sizes_in(spec, path="") -> list[tuple[str, float]]:
    """Every font size set anywhere in a spec (marks, axes, headers, config), with where."""
    found = []
    if isinstance(spec, dict):
        for key, value in spec.items():
            if key.lower().endswith("fontsize") and isinstance(value, (int, float)):
                found.append((f"{path}.{key}", value))
            else:
                found += _font_sizes_in(value, f"{path}.{key}")
    elif isinstance(spec, list):
        for i, value in enumerate(spec):
            found += _font_sizes_in(value, f"{path}[{i}]")
    return found


@pytest.mark.parametrize("build", [
    lambda: viz.heatmap(np.random.default_rng(0).random((6, 6)), list("abcdef"), list("abcdef"),
                        lecture=True, highlight_row=2),
    lambda: viz.heatmap(np.random.default_rng(0).random((2, 2, 5, 5)), list("abcde"), list("abcde"),
                        lecture=True, facets=(["layer 1", "layer 2"], ["head 1", "head 2"])),
    lambda: viz.heatmap(np.eye(30), [str(i) for i in range(30)], [str(i) for i in range(30)],
                        lecture=True, cell=20),
    lambda: viz.grouped_bars({"a": [0.1, 0.2], "b": [0.3, 0.4]}, ["x", "y"], lecture=True),
    lambda: viz.bar_chart([0.1, 0.9], ["x", "y"], lecture=True),
    lambda: viz.hbar_chart([0.5], ["new"], lecture=True),
    lambda: viz.line_chart(pd.DataFrame({"s": [0, 1], "l": [2.0, 1.0], "r": ["a", "a"]}),
                           x="s", y="l", series="r", rule=(3.0, "uniform"), lecture=True),
    lambda: viz.scatter(pd.DataFrame({"x": [0.0], "y": [1.0], "c": ["a"]}), x="x", y="y",
                        label="c", lecture=True),
])
def test_lecture_mode_holds_its_px_floor_in_every_builder(build):
    spec = viz.vega_spec(build(), lecture=True)
    sizes = _font_sizes_in({k: v for k, v in spec.items() if k != "datasets"})
    assert sizes, "no font sizes found"
    small = [(where, px) for where, px in sizes if px < viz.LECTURE_MIN_VALUE_PX]
    assert not small, small
    axis = spec["config"]["axis"]
    assert min(axis["labelFontSize"], axis["titleFontSize"]) >= viz.LECTURE_MIN_AXIS_PX


def test_heatmap_slants_column_names_wider_than_a_cell():
    def angle(cols, lecture):
        spec = viz.heatmap(np.eye(len(cols)), cols, cols, lecture=lecture).to_dict()
        return layers(spec)[0]["encoding"]["x"]["axis"]["labelAngle"]

    book = ["Your", "journey", "starts", "with", "one", "step"]
    assert angle(book, lecture=True) != 0  # "journey" at 16 px is wider than a 54 px cell
    assert angle(list("abcdef"), lecture=True) == 0


def imports_module(path: Path, name: str) -> bool:
    """Whether the module imports `name` anywhere (top level or inside a function)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == name for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == name and node.level == 0:
            return True
    return False


@pytest.mark.parametrize("path", sorted(str(p.relative_to(ROOT)) for p in (ROOT / "core").rglob("*.py")))
def test_core_never_imports_streamlit(path):
    assert not imports_module(ROOT / path, "streamlit"), f"{path} imports streamlit: core must stay UI-free"


# ------------------------------------------------------------------------------ layered
def _altair_layer(layers, **top):
    return alt.LayerChart(layer=list(layers), **top)


def _builders():
    import torch

    import importlib

    from core.viz import bars, classroom, lines, pitfalls, training
    heatmap = importlib.import_module("core.viz.heatmap")  # `core.viz.heatmap` is also the function
    frame = pd.DataFrame({"step": [0, 10, 20] * 2, "loss": [3.0, 2.5, 2.2, 3.1, 2.7, 2.4],
                          "model": ["a"] * 3 + ["b"] * 3})
    sums = pd.DataFrame({"query": ["x", "y"] * 2, "row_sum": [1.0, 1.0, 0.5, 1.5],
                         "version": ["right"] * 2 + ["buggy"] * 2})
    weights = torch.softmax(torch.randn(3, 3, generator=torch.Generator().manual_seed(0)), -1)
    return {
        "heatmap": (heatmap, lambda: viz.heatmap(np.arange(6.0).reshape(2, 3), ["a", "b"], ["x", "y", "z"],
                                                 title="t", highlight_cells=[(0, 1)])),
        "heatmap facets": (heatmap, lambda: viz.heatmap(np.arange(12.0).reshape(2, 2, 3), ["a", "b"],
                                                        ["x", "y", "z"], facets=["h0", "h1"])),
        "bars": (bars, lambda: viz.bar_chart([0.2, 0.8], ["p", "q"], title="t")),
        "grouped bars": (bars, lambda: viz.grouped_bars({"s": [1, 2], "t": [3, 4]}, ["p", "q"])),
        "hbars": (bars, lambda: viz.hbar_chart([0.2, 0.8], ["p", "q"])),
        "scatter": (bars, lambda: viz.scatter(pd.DataFrame({"x": [0.0, 1.0], "y": [1.0, 0.0],
                                                            "w": ["a", "b"]}), x="x", y="y", label="w")),
        "lines with a rule": (lines, lambda: viz.line_chart(frame, x="step", y="loss", series="model",
                                                            rule=(1.0, "floor"))),
        "poll": (classroom, lambda: classroom.poll_chart(["yes", "no"], [3, 1], right=[True, False])),
        "row sums": (pitfalls, lambda: pitfalls.row_sums_chart(sums)),
        "pitfalls heatmaps": (heatmap, lambda: pitfalls.heatmap_row([(weights, "w")], ["a", "b", "c"])),
        "training loss": (training, lambda: training.loss_layers(("run 1",), 27, False)),
    }


@pytest.mark.parametrize("name", list(_builders()))
def test_layered_charts_are_the_specs_altair_s_constructor_makes(name, monkeypatch):
    # viz.layered skips LayerChart's copies; what reaches the browser must not change
    module, build = _builders()[name]
    fast = build().to_dict()
    monkeypatch.setattr(module, "layered", _altair_layer)
    assert fast == build().to_dict()


def test_layered_hands_layers_with_params_to_altair():
    points = alt.Chart().mark_point().add_params(alt.selection_point(name="pick")).encode(x="x:Q")
    chart = viz.layered([points, alt.Chart().mark_rule().encode(y="y:Q")], width=100, height=80)
    assert chart.to_dict()["params"][0]["name"] == "pick"  # lifted to the top, as Altair does


def test_a_bar_text_goes_inside_the_bar_where_the_plot_has_no_room_right_of_it():
    # "95% (19)" right of a 95% bar ran past the chart's edge in a narrow column and was cut
    import re

    import pandas as pd
    vlc = pytest.importorskip("vl_convert")
    chart = viz.hbar_chart([0.95, 0.05, 0.7], ["valid", "empty", "other"],
                           texts=["95% (19)", "5% (1)", "70% (14)"], domain=(0, 1), x_format="%")
    spec = viz.vega_spec(chart, False)
    rows = {n: d.to_dict("records") if isinstance(d, pd.DataFrame) else d
            for n, d in spec.get("datasets", {}).items()}

    def placed(width):
        svg = vlc.vegalite_to_svg({**spec, "datasets": rows, "width": width})
        found = re.findall(r'text-anchor="(\w+)" transform="translate\(([\d.]+),[\d.]+\)"[^>]*'
                           r'fill="(\w+)">([^<]*%[^<]*)<', svg)
        return {text: (anchor, float(x), fill) for anchor, x, fill, text in found}

    wide, narrow = placed(400), placed(120)
    assert wide["95% (19)"][0] == "end" and wide["95% (19)"][2] == "white"  # inside, on the dark blue
    assert wide["70% (14)"][0] == "start" and wide["70% (14)"][2] == "black"  # room right of it
    assert narrow["70% (14)"][0] == "end"  # in 120 px it has none
    assert narrow["5% (1)"][0] == "start"
    # a bar too short to hold its text keeps it on its right (inside, it ran over the labels)
    assert placed(60)["70% (14)"][0] == "start"
    assert all(x <= width for width, placed_ in ((400, wide), (120, narrow))
               for anchor, x, fill in placed_.values() if anchor == "end")
