"""Text in the charts that must not be lost or run together (core/viz/fit.py and the builders).

A title or legend label that Streamlit or Vega cut with "…" loses the words that tell charts apart
("softmax, mask, re…"); numbers over bars or in cells that touch ("0.10820.1077") cannot be read.
Here, through Vega itself (vl-convert) at the widths a 1024 px page gives a chart: titles broken
onto lines that fit, and numbers that keep apart (smaller, fewer decimals, or turned upright).
tests/browser/test_chart_text_browser.py checks the same on the real pages, in Chromium's fonts.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from core import viz
from core.lessons import small_lm
from core.lessons import text as texts
from core.lessons import tokens_data
from core.lessons.sample_names import NameSteps
from core.viz import bars, fit, names_model, pitfalls
from core.viz import lessons as lesson_charts

vlc = pytest.importorskip("vl_convert")

BOOK = ["Your", "journey", "starts", "with", "one", "step"]
WEIGHTS = np.array([0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581])  # the book's α_2
PLAIN = np.array([0.1455, 0.2278, 0.2249, 0.1285, 0.1077, 0.1656])  # ω_2 / Σ ω_2


def fitted(chart, lecture: bool) -> dict:
    return fit.fit_to_column(viz.vega_spec(chart, lecture))


def svg_at(spec: dict, width: int) -> str:
    rows = {name: data.to_dict("records") if isinstance(data, pd.DataFrame) else data
            for name, data in spec.get("datasets", {}).items()}
    return vlc.vegalite_to_svg({**spec, "datasets": rows, "width": width})


def svg_width(svg: str) -> float:
    return float(re.search(r'<svg[^>]*width="([\d.]+)"', svg)[1])


def title_lines(svg: str) -> list[str]:
    """The chart title's lines as Vega wrote them."""
    group = re.search(r'role-title-text".*?<text[^>]*>(.*?)</text>', svg, flags=re.S)[1]
    return re.findall(r"<tspan[^>]*>([^<]*)</tspan>", group) or [group]


def mark_texts(svg: str) -> list[dict]:
    """Each text of a text mark (numbers on bars, ids in cells): its text, font size, where it is
    and whether it is turned upright."""
    found = []
    for group in re.findall(r'<g class="mark-text role-mark[^"]*"[^>]*>(.*?)</g>', svg, flags=re.S):
        for attrs, text in re.findall(r"<text([^>]*)>([^<]*)</text>", group):
            size = float(re.search(r'font-size="([\d.]+)px"', attrs)[1])
            transform = re.search(r'transform="([^"]*)"', attrs)[1]
            x, y = map(float, re.match(r"translate\(([-\d.e]+),([-\d.e]+)\)", transform).groups())
            anchor = re.search(r'text-anchor="(\w+)"', attrs)
            found.append({"text": text, "size": size, "x": x, "y": y, "turned": "rotate(-90)" in transform,
                          "anchor": anchor[1] if anchor else "start"})
    return found


def boxes(marks: list[dict]) -> list[tuple[float, float, float, float, str]]:
    """(left, right, top, bottom, text) of each mark text, its length estimated as the builders do
    (core.viz.fit.value_em: Source Sans's digits with room to spare)."""
    out = []
    for m in marks:
        length = fit.value_em(m["text"]) * m["size"]
        if m["turned"]:  # reads upwards; its height across
            left, right = m["x"] - m["size"] / 2, m["x"] + m["size"] / 2
            top, bottom = (m["y"] - length, m["y"]) if m["anchor"] == "start" else \
                (m["y"] - length / 2, m["y"] + length / 2)
        else:
            left = m["x"] - length / 2 if m["anchor"] == "middle" else m["x"]
            right = left + length
            top, bottom = m["y"] - m["size"] / 2, m["y"] + m["size"] / 2
        out.append((left, right, top, bottom, m["text"]))
    return out


def touching(marks: list[dict]) -> list[str]:
    """Pairs of mark texts whose boxes overlap."""
    found = []
    for i, a in enumerate(boxes(marks)):
        for b in boxes(marks)[i + 1:]:
            if min(a[1], b[1]) - max(a[0], b[0]) > 0 and min(a[3], b[3]) - max(a[2], b[2]) > 0:
                found.append(f"{a[4]}|{b[4]}")
    return found


# ------------------------------------------------------------------------------------ titles
def test_title_wraps_keep_every_word_and_a_shape_whole():
    wraps = fit.title_wraps("softmax, mask, no renormalising  (6, 6)", 14)
    assert [len(lines) for _, lines in wraps] == sorted(len(lines) for _, lines in wraps)
    assert [need for need, _ in wraps] == sorted((need for need, _ in wraps), reverse=True)
    for need, lines in wraps:
        assert " ".join(lines).split() == "softmax, mask, no renormalising (6, 6)".split()
        assert "(6, 6)" in " ".join(lines)  # the shape is never split
        assert max(fit.text_px(line, 14, semibold=True) for line in lines) == pytest.approx(need)
    assert wraps[1][1] == ["softmax, mask,", "no renormalising  (6, 6)"]  # a break after a comma


@pytest.mark.parametrize("lecture", [False, True])
@pytest.mark.parametrize("title", ["softmax, mask, no renormalising  (6, 6)",
                                   "weights, unchanged by dropout  (6, 6)"])
def test_a_long_title_is_written_whole_on_lines_that_fit_the_width_drawn(lecture, title):
    """A third of a 1024 px page (160 px in plain mode), half of it (274) and the chart's own
    width: every word of the title is written, no line wider than the chart, and the title
    carries a limit of its own (Streamlit's, the column less 40 px, cut it with "…")."""
    spec = fitted(viz.heatmap(np.eye(6), BOOK, BOOK, title=title, x_title="key j", y_title="query i",
                              lecture=lecture, x_on_top=True), lecture)
    assert spec["title"]["limit"] == 0  # no limit: Streamlit sets one only where there is none
    heading = spec["config"]["title"]["fontSize"]
    for width in (fit.drawn_width(spec), 274, 160):
        svg = svg_at(spec, width)
        lines = title_lines(svg)
        assert " ".join(lines).split() == title.split(), lines
        assert not any(line.endswith("…") for line in lines)
        drawn = svg_width(svg)
        assert all(fit.text_px(line, heading, semibold=True) <= drawn for line in lines), (width, lines)
    assert len(title_lines(svg_at(spec, fit.drawn_width(spec)))) <= 2


def test_a_long_title_does_not_widen_the_chart_it_is_written_over():
    short = viz.bar_chart(WEIGHTS, BOOK, title="α")
    long = viz.bar_chart(WEIGHTS, BOOK, title="z: context vector of “journey” weighted by every α_2j  (3,)")
    assert fit.natural_width(viz.vega_spec(long)) == fit.natural_width(viz.vega_spec(short))


def test_a_title_that_cannot_be_fitted_still_gets_a_limit_of_its_own():
    grid = viz.heatmap(np.random.default_rng(0).random((2, 3, 3)), list("abc"), list("abc"),
                       facets=["h1", "h2"], title="every head's attention weights, side by side")
    spec = fit.fit_to_column(viz.vega_spec(grid))
    assert spec["title"] == {"text": "every head's attention weights, side by side", "limit": 0}


def test_a_wide_x_title_is_written_on_lines_over_a_narrow_matrix():
    """W_q (3, 2) in lecture mode, three side by side: "output dimension" ran past the chart."""
    chart = viz.heatmap(np.random.default_rng(0).random((3, 2)), ["d1", "d2", "d3"], ["o1", "o2"],
                        title="W_q  (3, 2)", x_title="output dimension", y_title="input dimension",
                        fmt=".4f", lecture=True, x_on_top=True, cell=90)
    spec = fitted(chart, True)
    x_title = spec["layer"][0]["encoding"]["x"]["title"]
    assert x_title == ["output", "dimension"]
    size = spec["config"]["axis"]["titleFontSize"]
    assert all(fit.text_px(line, size) <= fit.SHRINK_TO * chart.width for line in x_title)


# ----------------------------------------------------------------------------------- legends
def test_legend_labels_are_not_cut_at_vegas_160_px():
    for lecture in (False, True):
        limit = viz.theme_config(lecture)["legend"]["labelLimit"]
        size = viz.font_sizes(lecture)["label"]
        for label in (pitfalls.NAMES_DROPPED, "fixed: 200 optimizer steps", "One head, no position (the slides)"):
            assert fit.text_px(label, size) * 1.15 <= limit, label


def test_the_fit_curves_legend_is_above_the_plot():
    curve = pd.DataFrame({"iteration": [0, 1, 0, 1], "loss": [3.0, 2.5, 3.0, 2.0],
                          "version": ["buggy: 20 optimizer steps"] * 2 + ["fixed: 200 optimizer steps"] * 2})
    spec = viz.vega_spec(pitfalls.fit_curve_chart(curve, lecture=True), True)
    assert spec["encoding"]["color"]["legend"]["orient"] == "top"


def test_the_race_charts_two_legends_fit_beside_each_other_in_a_column():
    history = pd.DataFrame([{"step": 0, "model": m, "split": s, "loss": 3.4}
                            for m in small_lm.MODEL_LABELS.values() for s in ("train", "val")])
    spec = viz.vega_spec(lesson_charts.race_loss_chart(history, floor=0.64, lecture=True, min_steps=50), True)
    lines = spec["layer"][0]["encoding"]
    assert lines["strokeDash"]["legend"]["columns"] == 1 and lines["color"]["legend"]["columns"] == 1
    config = spec["config"]
    assert fit._top_legends_px(spec, config) <= 644 - 40  # the lecture column at 1024 px
    assert fit.natural_width(spec) >= fit._top_legends_px(spec, config)


# ---------------------------------------------------------------------------- bar numbers
@pytest.mark.parametrize("lecture", [False, True])
def test_numbers_over_side_by_side_bars_never_touch(lecture):
    """Simple attention step 2: softmax beside plain normalisation, six pairs, 4 decimals. In
    lecture mode (14 px, the floor) they read "0.10820.1077" at 644 px."""
    chart = viz.grouped_bars({"softmax": WEIGHTS, "plain ω / Σω": PLAIN}, BOOK, fmt=".4f",
                             lecture=lecture, width=672 if lecture else 360, height=300 if lecture else 240,
                             title="α: weights of query “journey”  (6,)")
    spec = fitted(chart, lecture)
    floor = viz.LECTURE_MIN_VALUE_PX if lecture else 7
    seen = set()
    for width in (1000, fit.drawn_width(spec), 644, 564, 400, 274):
        marks = mark_texts(svg_at(spec, width))
        assert len(marks) == 12
        assert touching(marks) == [], (width, touching(marks))
        assert all(m["size"] >= floor - 0.01 for m in marks), width
        values = [float(m["text"]) for m in marks]
        assert all(abs(v - w) < 0.006 for v, w in zip(values, np.ravel([WEIGHTS, PLAIN])))
        seen |= {(len(m["text"]), m["turned"]) for m in marks}
    assert (6, False) in seen  # all four decimals where there is room
    if lecture:  # at its own size (the lecture column at 1440 px) as the book prints them
        assert {len(m["text"]) for m in mark_texts(svg_at(spec, fit.drawn_width(spec)))} == {6}


def test_single_bars_in_a_narrow_column_turn_their_numbers_upright():
    """Simple attention step 1 in lecture mode: "1.4950" and "1.4754" touched in 312 px."""
    scores = np.array([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865])
    spec = fitted(viz.bar_chart(scores, BOOK, fmt=".4f", lecture=True, width=336, height=300), True)
    for width in (fit.drawn_width(spec), 312, 250):
        marks = mark_texts(svg_at(spec, width))
        assert len(marks) == 6 and touching(marks) == [], (width, marks)
        assert all(m["size"] >= viz.LECTURE_MIN_VALUE_PX for m in marks)


def test_numbers_lose_at_most_two_decimals_and_keep_two():
    assert bars.shorter_formats(".4f") == [".3f", ".2f"] and bars.shorter_formats(".3f") == [".2f"]
    assert bars.shorter_formats(".2f") == [] and bars.shorter_formats(".2e") == [".1e"]
    assert bars.shorter_formats(",d") == []


def name_steps() -> NameSteps:
    vocab = list(".abcdefghijklmnopqrstuvwxyz")
    probs = np.random.default_rng(0).dirichlet(np.ones(27) * 3, size=1)
    return NameSteps(["."], ["a"], probs, vocab)


@pytest.mark.parametrize("lecture", [False, True])
def test_the_next_character_bars_name_every_letter_and_keep_their_numbers_apart(lecture):
    """Sample names, lecture mode at 1024: "0.060.060.06", and only every other letter named
    (the highlighted "a" had none)."""
    chart = names_model.step_bars_chart(name_steps(), 0, lecture=lecture)
    spec = fitted(chart, lecture)
    assert fit.drawn_width(spec) != "content"  # laid out again in a narrow column, not shrunk
    axis = spec["layer"][0]["encoding"]["x"]["axis"]
    assert axis["labelAngle"] == 0 and axis["labelOverlap"] is False
    svg = svg_at(spec, 644 if lecture else 564)
    assert len(re.findall(r'role-axis-label.*?</g>', svg, flags=re.S)) >= 1
    labels = re.findall(r"<text[^>]*>([a-z.])</text>", re.search(r'role-axis-label.*?</g>', svg, flags=re.S)[0])
    assert labels == list(".abcdefghijklmnopqrstuvwxyz")
    marks = mark_texts(svg)
    assert len(marks) == 27 and touching(marks) == []
    assert min(m["size"] for m in marks) >= (viz.LECTURE_MIN_VALUE_PX if lecture else 8)


def test_the_steps_heatmap_is_laid_out_again_not_shrunk_in_lecture_mode():
    vocab = list(".abcdefghijklmnopqrstuvwxyz")
    steps = NameSteps([".", ".e", ".em"], ["e", "m", "m"],
                      np.random.default_rng(0).dirichlet(np.ones(27), size=3), vocab)
    spec = viz.vega_spec(names_model.steps_heatmap(steps, lecture=True), True)
    assert fit.can_fit(spec) and fit.drawn_width(fit.fit_to_column(spec)) == fit.natural_width(spec)


# ------------------------------------------------------------------------- sliding windows
@pytest.mark.parametrize("lecture, shown", [(False, 20), (True, 16)])
def test_window_ids_fit_their_cells_and_windows_are_drawn_whole(lecture, shown):
    """Tokens page: five-digit ids ran together in 21 px cells ("1124117509"); in lecture mode
    window 3 was one input cell and no target."""
    view = tokens_data.build_loader_view(texts.builtin_text("paragraph"), tokens_data.TokensDataSettings())
    chart = lesson_charts.window_chart(view, max_tokens=shown, max_windows=6, lecture=lecture)
    frame = chart.data
    for row, cells in frame[frame["order"] > 0].groupby("row"):
        assert len(cells) == view.settings.max_length, row  # every window drawn is whole
    spec = fitted(chart, lecture)
    row_px = chart.height / frame["row"].nunique()
    font_floor = viz.LECTURE_MIN_VALUE_PX if lecture else 8
    # the page's column at 1024 and 1440 px (lecture mode: 644 at 1024)
    for width in (fit.drawn_width(spec), 644, 564) if lecture else (fit.drawn_width(spec), 564, 400):
        svg = svg_at(spec, width)
        marks = mark_texts(svg)
        band = float(re.search(r'aria-roledescription="rect mark"[^>]*d="M[-\d.]+,[-\d.]+h([\d.]+)', svg)[1])
        assert len(marks) == len(frame)
        assert all(m["size"] >= font_floor - 0.01 for m in marks)
        for m in marks:
            length = fit.value_em(m["text"]) * m["size"]
            if m["turned"]:
                assert length <= row_px and m["size"] <= band, (width, m)
            else:
                assert length <= band, (width, m, band)
        if lecture:
            assert all(m["size"] >= viz.LECTURE_MIN_VALUE_PX for m in marks)


def test_slanted_names_stand_upright_where_slanted_lines_would_touch():
    view = tokens_data.build_loader_view(texts.builtin_text("paragraph"), tokens_data.TokensDataSettings())
    spec = fitted(lesson_charts.window_chart(view, max_tokens=20, max_windows=6), False)
    angle = spec["layer"][0]["encoding"]["x"]["axis"]["labelAngle"]
    size = spec["config"]["axis"]["labelFontSize"]
    steep = float(re.search(r"< ([\d.]+) \? -90", angle["expr"])[1])
    # slanted at 55°, two names' lines are band × sin 55° apart: at least a line and a quarter
    assert steep * math.sin(math.radians(55)) >= 1.25 * size - 0.5
    assert axis_label_angles(svg_at(spec, fit.drawn_width(spec))) == {"-55"}
    assert axis_label_angles(svg_at(spec, 330)) == {"-90"}


def axis_label_angles(svg: str) -> set[str]:
    labels = re.search(r'<g class="mark-text role-axis-label".*?</g>', svg, flags=re.S)[0]
    return set(re.findall(r"rotate\(([-\d.]+)\)", labels))
