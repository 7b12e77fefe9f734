"""Charts for everyone (WCAG 1.1.1, 1.4.1, 1.4.3, 1.4.11): each chart's text alternative and its
numbers as a table, palettes that stand out from the page and stay apart under colour-vision
deficiencies, text that reads on the cells it is written on."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from core import viz


def test_description_is_title_then_caption():
    assert viz.description("Attention weights.", "Row i: how query i spreads its attention.") == \
        "Attention weights. Row i: how query i spreads its attention."
    assert viz.description("", "Only a caption") == "Only a caption"
    assert viz.description("", "") == "Chart"


def test_table_of_a_heatmap_has_every_cell_and_says_which_are_masked():
    masked = np.triu(np.ones((3, 3), dtype=bool), k=1)
    chart = viz.heatmap(np.full((3, 3), 0.25), list("abc"), list("abc"), masked=masked,
                        highlight_cells=[(0, 0)])
    table = pd.read_csv(io.BytesIO(viz.table_csv(chart)), encoding="utf-8-sig")
    assert len(table) == 9 and {"row", "col", "value", "label"} <= set(table.columns)
    assert table["label"].str.endswith("(masked)").sum() == 3


def test_table_of_a_layered_chart_gathers_its_layers():
    lines = pd.DataFrame({"step": [0, 1, 0, 1], "loss": [3.0, 2.5, 3.1, 2.0], "run": list("aabb")})
    chart = viz.line_chart(lines, x="step", y="loss", series="run", title="Loss",
                           x_title="step", y_title="loss", points=True)
    table = viz.chart_table(chart)
    assert len(table) >= 4 and {"step", "loss"} <= set(table.columns)


def _linear(hex_colour: str) -> np.ndarray:
    rgb = np.array([int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)])
    return np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)


def _deutan_protan(hex_colour: str) -> list[np.ndarray]:
    """The colour (linear RGB) as seen with protanopia and deuteranopia (Viénot, Brettel & Mollon
    1999), and as seen with normal vision."""
    rgb = _linear(hex_colour)
    protan = np.array([[0.11238, 0.88762, 0], [0.11238, 0.88762, 0], [0.00401, -0.00401, 1]])
    deutan = np.array([[0.29275, 0.70725, 0], [0.29275, 0.70725, 0], [-0.02234, 0.02234, 1]])
    return [protan @ rgb, deutan @ rgb, rgb]


def _lab(linear_rgb: np.ndarray) -> np.ndarray:
    """CIELAB (D65) of a linear sRGB colour: distances in it follow what the eye sees."""
    to_xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
    xyz = to_xyz @ np.clip(linear_rgb, 0, 1) / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def _closest_pair(colours: list[str], view: int) -> float:
    """The smallest colour difference (CIE76 ΔE) between two of `colours` in one view."""
    seen = [_lab(_deutan_protan(c)[view]) for c in colours]
    return min(float(np.linalg.norm(a - b)) for i, a in enumerate(seen) for b in seen[i + 1:])


@pytest.mark.parametrize("lecture", [False, True], ids=["student", "lecture"])
def test_palettes_stay_apart_for_red_green_colour_blindness(lecture):
    assert (viz.palette(lecture) == viz.OKABE_ITO) is lecture  # Okabe–Ito on the projector
    colours = viz.palette(lecture)
    assert len(colours) >= 6  # a run each (core.runs.MAX_RUNS) before a colour comes round again
    for view in range(3):  # protanopia, deuteranopia, normal vision
        # the series most charts here draw (two to four) clearly apart; all six still apart
        assert _closest_pair(colours[:4], view) > 15, (view, colours[:4])
        assert _closest_pair(colours, view) > 10, (view, colours)


@pytest.mark.parametrize("lecture", [False, True], ids=["student", "lecture"])
def test_every_series_colour_stands_out_from_the_page(lecture):
    """WCAG 1.4.11: a line, point or bar needs 3:1 against the white page. Okabe–Ito's orange
    (2.3:1), sky blue and yellow and Tableau's light orange (2.6:1) and grey (2.3:1) did not, and a
    projector washes colours out further."""
    weak = {c: round(viz.contrast_ratio(c), 2) for c in viz.palette(lecture) if viz.contrast_ratio(c) < 3}
    assert weak == {}


def test_contrast_ratio_and_text_colour_follow_wcag():
    assert viz.contrast_ratio("#000000") == pytest.approx(21.0)
    assert viz.contrast_ratio("#767676") == pytest.approx(4.54, abs=0.01)  # the lightest grey for text
    assert viz.contrast_ratio("#FFFFFF", "#FFFFFF") == pytest.approx(1.0)
    assert viz.text_on("#0072B2") == "white" and viz.text_on("#E69F00") == "black"


@pytest.mark.parametrize("lecture", [False, True], ids=["student", "lecture"])
def test_ids_read_on_every_cell_of_the_sliding_windows(lecture):
    """Tokens page: white ids on the orange target cells were 2.6:1 (2.3:1 in lecture mode);
    small text needs 4.5:1."""
    from core.lessons import tokens_data
    from core.lessons import text as texts
    from core.viz import lessons as lesson_charts
    view = tokens_data.build_loader_view(texts.builtin_text("paragraph"), tokens_data.TokensDataSettings())
    spec = lesson_charts.window_chart(view, lecture=lecture).to_dict()
    rect, text = spec["layer"]
    fills = dict(zip(rect["encoding"]["color"]["scale"]["domain"], rect["encoding"]["color"]["scale"]["range"]))
    inks = dict(zip(text["encoding"]["color"]["scale"]["domain"], text["encoding"]["color"]["scale"]["range"]))
    assert set(fills) == set(inks) >= {"input", "target"}
    named = {"white": "#FFFFFF", "black": "#000000"}
    ratios = {kind: round(viz.contrast_ratio(fills[kind], named[inks[kind]]), 2) for kind in fills}
    assert min(ratios.values()) >= 4.5, ratios
    assert spec["resolve"]["scale"]["color"] == "independent"  # the ids' colours are not the cells'


def test_the_vowels_take_the_second_colour_in_the_embedding_pca():
    """Inside the model: the vowels' separation is the lesson. They were the third colour, a
    light grey (2.3:1) in student mode, beside blue consonants."""
    from core.lessons.inside_model import CHAR_GROUPS, char_group
    from core.viz import names_model
    df = pd.DataFrame({"char": list(".abe"), "PC1": [0.0, 1.0, -1.0, 0.5], "PC2": [0.0, 0.5, -0.5, 1.0]})
    df["group"] = [char_group(c) for c in df["char"]]
    for lecture in (False, True):
        spec = names_model.pca_chart(df, np.array([0.3, 0.2]), lecture=lecture).to_dict()
        scale = spec["layer"][0]["encoding"]["color"]["scale"]
        colours = dict(zip(scale["domain"], scale["range"]))
        assert set(colours) == set(CHAR_GROUPS) == set(df["group"])
        assert colours["consonant"] == viz.palette(lecture)[0] and colours["vowel"] == viz.palette(lecture)[1]


def test_a_polls_right_answer_is_green_and_apart_from_the_others():
    """Class mode: the revealed right answer took the palette's second colour, orange or
    vermillion, which reads as "wrong"."""
    from core.viz import classroom
    for lecture in (False, True):
        spec = classroom.poll_chart(["yes", "no"], [3, 1], right=[True, False], lecture=lecture).to_dict()
        colour = spec["layer"][0]["encoding"]["color"]
        other, right = colour["value"], colour["condition"]["value"]
        assert right == viz.RIGHT_ANSWER and other == viz.palette(lecture)[0]
        assert viz.contrast_ratio(right) >= 3
        assert all(_closest_pair([other, right], view) > 15 for view in range(3))
