"""core/viz/fit.py: a chart's natural width, and the copy that shrinks to a narrow column.

The estimate is checked against Chromium's layout in tests/browser/test_chart_fit_browser.py;
here: what is fitted and what is not, that a fitted copy leaves the kept spec alone, and, through
Vega itself (vl-convert), that numbers and labels shrink with their bands and stay in them.
"""

import re

import numpy as np
import pandas as pd
import pytest

from core import viz
from core.viz import fit


def spec_of(chart, lecture=False) -> dict:
    return viz.vega_spec(chart, lecture)


def attention_map(n=6, lecture=False):
    tokens = ["Your", "journey", "starts", "with", "one", "step"][:n]
    weights = np.tril(np.random.default_rng(0).random((n, n)))
    return viz.heatmap(weights / weights.sum(1, keepdims=True), tokens, tokens, title="head 1",
                       x_title="key j", y_title="query i", lecture=lecture)


def rendered(spec: dict, width: int) -> str:
    """The SVG Vega draws of a fitted spec at `width` px (its tables as rows)."""
    vlc = pytest.importorskip("vl_convert")
    rows = {name: data.to_dict("records") if isinstance(data, pd.DataFrame) else data
            for name, data in spec.get("datasets", {}).items()}
    return vlc.vegalite_to_svg({**spec, "datasets": rows, "width": width})


def value_texts(svg: str) -> list[tuple[float, str]]:
    """(font size, text) of each number written in a mark (not the axes)."""
    return [(float(size), text) for size, text in
            re.findall(r'font-size="([\d.]+)px"[^>]*>(-?\d+\.\d+)</text>', svg)]


def test_natural_width_adds_the_axes_to_the_plot_and_is_none_for_grids():
    spec = spec_of(attention_map())
    natural = fit.natural_width(spec)
    # the plot is 6 cells of 44 px; the left axis holds "journey" and the title "query i"
    assert spec["width"] + 40 < natural < spec["width"] + 120
    grid = viz.heatmap(np.random.default_rng(0).random((2, 3, 3)), list("abc"), list("abc"),
                       facets=["h1", "h2"])
    assert fit.natural_width(spec_of(grid)) is None
    assert fit.fit_to_column(spec_of(grid)) == spec_of(grid)


def test_a_longer_label_or_a_legend_makes_the_chart_wider():
    short = fit.natural_width(spec_of(viz.heatmap(np.eye(3), list("abc"), list("abc"))))
    long = fit.natural_width(spec_of(viz.heatmap(np.eye(3), ["a", "b", "a much longer row name"],
                                                 list("abc"))))
    legend = fit.natural_width(spec_of(viz.heatmap(np.eye(3), list("abc"), list("abc"),
                                                   show_values=False)))
    assert long > short + 60 and legend > short + 30


def test_fit_to_column_draws_a_copy_at_its_natural_width_and_leaves_the_spec_alone():
    spec = spec_of(attention_map())
    before = {key: value for key, value in spec.items() if key != "datasets"}
    fitted = fit.fit_to_column(spec)
    assert fitted["width"] == fit.natural_width(spec) == fit.drawn_width(fitted)
    assert fitted["autosize"] == {"type": "fit-x", "contains": "padding"}  # the height stays as built
    assert {key: value for key, value in spec.items() if key != "datasets"} == before
    assert fit.drawn_width(spec) == "content" and fit.drawn_width(None) == "content"
    assert fit.fit_to_column(None) is None


def test_an_alphabet_of_narrow_cells_keeps_its_size():
    letters = list("abcdefghijklmnopqrstuvwxyz.,")
    table = viz.heatmap(np.random.default_rng(1).random((28, 28)), letters, letters, cell=10)
    spec = spec_of(table)
    assert not fit.can_fit(spec) and fit.fit_to_column(spec) is spec
    assert fit.can_fit(spec_of(attention_map()))
    # in 22 px cells there is room to narrow them: upright letters need half of each neighbour
    # and a gap (13 px at 60 %), not a whole line of text each
    roomy = spec_of(viz.heatmap(np.random.default_rng(1).random((28, 28)), letters, letters, cell=22))
    assert fit.can_fit(roomy)


@pytest.mark.parametrize("lecture", [False, True])
def test_numbers_shrink_with_their_cells_and_stay_inside_them(lecture):
    fitted = fit.fit_to_column(spec_of(attention_map(lecture=lecture), lecture))
    natural = fit.drawn_width(fitted)
    wide, narrow = value_texts(rendered(fitted, natural)), value_texts(rendered(fitted, int(natural * 0.7)))
    assert len(wide) == len(narrow) == 36
    built = max(size for size, _ in wide)
    assert all(size == built for size, _ in wide)  # at its own width: as built
    smallest = viz.LECTURE_MIN_VALUE_PX if lecture else 7
    assert all(smallest <= size < built for size, _ in narrow) or lecture and built == smallest
    cell = float(re.search(r'role="graphics-symbol" aria-roledescription="rect mark" d="M[\d.,]+h([\d.]+)v',
                           rendered(fitted, int(natural * 0.7)))[1])
    assert cell < 40  # the cells did get narrower than built (44 px)
    # every number fits its cell, unless it is already at the smallest size allowed
    assert all(fit.text_px(text, size) <= cell - 2 or size == smallest for size, text in narrow)


def test_upright_labels_slant_only_when_their_bars_get_too_narrow():
    words = ["Your", "journey", "starts", "with", "one", "step"]
    spec = fit.fit_to_column(spec_of(viz.bar_chart([0.95, 1.50, 1.48, 0.84, 0.71, 1.09], words)))
    natural = fit.drawn_width(spec)
    assert "rotate(-40" not in rendered(spec, natural)
    narrow = rendered(spec, int(natural * 0.6))
    assert narrow.count("rotate(-40") >= len(words)  # every name kept, slanted
    assert all(word in narrow for word in words)


def test_a_spec_it_cannot_read_is_drawn_at_its_own_size():
    spec = spec_of(viz.bar_chart([0.5, 1.5], ["a", "b"]))
    odd = {**spec, "layer": [{**layer, "encoding": {**layer["encoding"], "x": {
        **layer["encoding"]["x"], "axis": {"labelAngle": {"expr": "-45"}}}}} for layer in spec["layer"]]}
    assert fit.fit_to_column(odd) is odd
    nan = {**spec, "layer": [{**layer, "encoding": {**layer["encoding"], "y": {
        **layer["encoding"]["y"], "scale": {"domain": [float("nan"), 1.0]}}}} for layer in spec["layer"]]}
    assert fit.fit_to_column(nan) is nan


def test_a_wide_matrix_whose_indices_may_thin_out_is_fitted():
    weights = np.random.default_rng(2).normal(size=(27, 64))
    dims = [str(i) for i in range(64)]
    build = lambda thin: viz.heatmap(weights, list(".abcdefghijklmnopqrstuvwxyz"), dims, diverging=True,  # noqa: E731
                                     show_values=False, cell_w=14, cell_h=16, thin_labels=thin)
    every = spec_of(build(False))
    assert fit.fit_to_column(every) is every  # every index written: kept at its size
    fitted = fit.fit_to_column(spec_of(build(True)))
    assert fit.drawn_width(fitted) == fit.natural_width(spec_of(build(True)))
    narrow = rendered(fitted, 560)
    # the slanted indices Vega still shows (it hides an overlapping label with opacity 0)
    shown = re.findall(r'<text[^>]*rotate\(320\)[^>]*opacity="1">(\d{1,2})</text>', narrow)
    hidden = re.findall(r'<text[^>]*rotate\(320\)[^>]*opacity="0">(\d{1,2})</text>', narrow)
    assert len(shown) + len(hidden) == 64 and 4 <= len(shown) <= 32, (len(shown), len(hidden))


def test_legends_stacked_below_the_plot_need_the_widest_not_the_sum():
    """The Train chart's two legends below the plot: side by side their widths add up; stacked
    (Vega's legend layout, direction vertical) the chart needs only the widest, and a legend whose
    columns are an expression of the drawn width can get as narrow as one column."""
    from core.viz import training

    runs = ("#1 quick demo", "#2 lr 0.003, 2 layers")
    spec = training.loss_chart_spec(runs, lecture=True)
    config = spec["config"]
    stacked = fit._top_legends_px(spec, config)
    side_by_side = fit._top_legends_px(spec, {**config, "legend": {
        key: value for key, value in config["legend"].items() if key != "layout"}})
    size = config["legend"]["labelFontSize"]
    widest_run = fit.SYMBOL_PX + max(fit.text_px(run, size) for run in runs)
    widest_kind = fit.SYMBOL_PX + max(fit.text_px(kind, size) for kind in training.KINDS)
    assert stacked == pytest.approx(max(widest_run, widest_kind))
    # side by side, the kinds' legend (its channels counted apart here) comes beside the runs'
    assert side_by_side >= widest_run + widest_kind + fit.LEGEND_OFFSET_PX
    # the drawn width picks the columns: every kind in one row where it fits, else one column
    kinds = training._legend_columns(training.KINDS, size, 0).to_dict()["expr"]
    threshold = int(re.search(r"width >= (\d+)", kinds).group(1))
    assert threshold >= sum(fit.SYMBOL_PX + fit.text_px(kind, size) for kind in training.KINDS)
    assert kinds.endswith("? 0 : 1")


def _legend_chart(labels, columns=0):
    import altair as alt
    frame = pd.DataFrame({"x": list(range(len(labels))), "y": 1.0, "c": labels,
                          "s": ["a", "b"] * (len(labels) // 2) + ["a"] * (len(labels) % 2)})
    return alt.Chart(frame, width=420, height=120, title="a title of some length for the lines").mark_point().encode(
        x="x:O", y="y:Q", color=alt.Color("c:N", legend=alt.Legend(orient="top", columns=columns)),
        shape=alt.Shape("s:N", legend=alt.Legend(orient="top")))


def test_a_fitted_chart_chooses_title_lines_slants_and_legend_columns_from_its_container():
    # Vega sets the plot's width while it lays the chart out: a title or slant chosen from it came
    # after the height was fixed (a title's first line cut above the chart after a resize). The
    # choices read the container's width where there is one, the plot's width in vl-convert.
    long = "One head, no position (the slides)"
    spec = spec_of(_legend_chart(["input", "target", "never an input", long, "input of 1 window"], columns=3))
    fitted = fit.fit_to_column(spec)
    assert "containerSize()[0]" in fitted["title"]["text"]["expr"]
    assert "width +" in fitted["title"]["text"]["expr"]  # vl-convert has no container
    color = fitted["encoding"]["color"]["legend"]
    # three columns where they fit, then two, then one
    assert re.fullmatch(r"\(.*containerSize.*\) >= \d+ \? 3 : \(.*\) >= \d+ \? 2 : 1", color["columns"]["expr"])
    # only the long name has lines to go onto; the others are written as they are
    assert f'datum.label === "{long}"' in color["labelExpr"] and '["One head,", "no position (the slides)"]' \
        in color["labelExpr"] and color["labelExpr"].endswith(": datum.label")
    assert "never an input" not in color["labelExpr"]
    # two legends above the plot: side by side where they fit, else one under the other
    direction = fitted["config"]["legend"]["layout"]["top"]["direction"]["signal"]
    assert direction.endswith("? 'horizontal' : 'vertical'")
    assert "layout" not in spec.get("config", {}).get("legend", {})  # the kept spec is left alone
    # slanted labels: the band from the container, bandwidth('x') without one
    x_axis = fitted["encoding"]["x"].get("axis") or {}
    angle = x_axis.get("labelAngle")
    if isinstance(angle, dict):
        assert "containerSize()[0]" in angle["expr"] and "bandwidth('x')" in angle["expr"]


def test_legends_whose_columns_are_already_an_expression_are_left_alone():
    spec = spec_of(_legend_chart(["a", "b"]))
    spec["encoding"]["color"]["legend"]["columns"] = {"expr": "width > 100 ? 2 : 1"}
    fitted = fit.fit_to_column(spec)
    assert fitted["encoding"]["color"]["legend"]["columns"] == {"expr": "width > 100 ? 2 : 1"}
