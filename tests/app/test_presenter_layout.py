"""The presenter layout of the four walkthrough pages (issue 12), checked in the element tree:
the step bar (Previous / Next with the ← / → keys, the Settings and Checks popovers), the page's
controls inside the Settings popover, the collapsed editors (below the lesson in lecture mode),
a failed check repeated on the page, and the lecture-mode heatmap cells."""

from __future__ import annotations

import dataclasses

import pytest

from core.lessons import walkthrough as wt
from tests.app.conftest import assert_no_exception
from tests.app.walkthrough_helpers import PREFIX, key, open_walk
from ui import walkthrough

PAGES = [("pages/1_simple_attention.py", "step"), ("pages/2_self_attention.py", "sa_step"),
         ("pages/3_causal_attention.py", "causal_step"), ("pages/4_multi_head.py", "mh_step")]
# a control of each page that must now live in the Settings popover
CONTROL = {"pages/1_simple_attention.py": ("selectbox", "query"),
           "pages/2_self_attention.py": ("segmented_control", "variant"),
           "pages/3_causal_attention.py": ("toggle", "causal"),
           "pages/4_multi_head.py": ("selectbox", "num_heads")}


def elements(node, path=()):
    """Every element of the tree in page order, with the types of the blocks around it."""
    children = getattr(node, "children", None)
    if isinstance(children, dict):
        yield path, node  # the block itself (a collapsed expander has no children)
        for i in sorted(children):
            yield from elements(children[i], path + (getattr(node, "type", None),))
    else:
        yield path, node


def main_elements(at):
    return list(elements(at.main))


@pytest.mark.parametrize("file,field", PAGES)
def test_step_bar_has_keys_and_popovers(file, field):
    at = open_walk(file)
    prev, nxt = at.button(key=f"{PREFIX}.{field}.prev"), at.button(key=f"{PREFIX}.{field}.next")
    assert (prev.proto.shortcut, nxt.proto.shortcut) == ("left", "right")
    labels = [block.proto.popover.label for block in at.get("popover")]
    # the step bar's two, then each figure's Download menu (ui.charts.download_buttons)
    assert labels[:2] == ["Settings", "Checks"] and set(labels[2:]) <= {"Download"}, labels
    # the page's control sits in the Settings popover, not in the page
    kind, name = CONTROL[file]
    wanted = key(at, name)
    found = [path for path, el in main_elements(at) if getattr(el, "key", None) == wanted]
    assert found and "popover" in found[0], found
    assert getattr(at, kind)(key=wanted) is not None
    # the checks are in the Checks popover, all green at the defaults, none repeated on the page
    badges = [(path, el.value) for path, el in main_elements(at)
              if getattr(el, "type", None) == "markdown" and "-badge[" in el.value]
    assert badges
    assert not [v for path, v in badges if v.startswith(":red-badge")]


def _expander_first(at) -> bool:
    """Does the embeddings expander come before the step heading in the page?"""
    order = []
    for path, el in main_elements(at):
        if getattr(el, "type", None) == "subheader" and el.value.startswith("Step "):
            order.append("step")
        elif getattr(el, "type", None) == "expander" and el.label.startswith("Embeddings X"):
            order.append("editor")
    return order.index("editor") < order.index("step")


@pytest.mark.parametrize("file,field", PAGES)
def test_lecture_mode_puts_the_editors_below_the_lesson(file, field):
    normal = open_walk(file)
    assert _expander_first(normal)  # a collapsed row above the lesson
    assert any(c.value.startswith("Lesson") for c in normal.caption)  # the intro, as a caption
    lecture = open_walk(file, query={"lecture": "1"})
    assert not _expander_first(lecture)  # the first screen is the lesson's
    title = lecture.title[0]
    assert title.proto.help.startswith("Lesson")  # the intro, one hover away
    assert not any(c.value.startswith("Lesson") for c in lecture.caption)
    # the editor still opens, and works, down there
    lecture.session_state[f"{PREFIX}.embeddings_open.0"] = True
    lecture.run()
    assert_no_exception(lecture)
    assert any(t.key == f"{PREFIX}.csv_text" for t in lecture.text_area)


def test_a_failed_check_is_repeated_on_the_page(monkeypatch):
    """Hidden in the Checks popover, a red badge would go unseen: it is shown on the page too."""
    monkeypatch.setattr(wt, "book_rows_match", lambda ours, rows: False)
    at = open_walk("pages/2_self_attention.py")
    red = [path for path, el in main_elements(at) if getattr(el, "type", None) == "markdown"
           and el.value.startswith(":red-badge") and "Does not match the book" in el.value]
    assert len(red) == 2  # one in the popover, one on the page
    assert sum("popover" in path for path in red) == 1


def test_lecture_heatmap_cells_use_the_width_but_fit_the_screen():
    cell = walkthrough.lecture_cell(6, 6)  # the book's six tokens
    assert cell > 54  # larger than before (54 px: a 6 x 6 map used a third of the width)
    assert 6 * cell <= walkthrough.LECTURE_FILL_H  # the whole map fits under the step bar at 720 px
    assert walkthrough.lecture_cell(3, 2) == walkthrough.LECTURE_CELL_MAX  # tiny matrices stop growing
    assert walkthrough.lecture_cell(64, 3) == walkthrough.LECTURE_CELL_MIN  # long ones keep readable cells


def _keyed(at) -> set[str]:
    """The keys of every keyed element the page made."""
    return {el.key for _, el in main_elements(at) if getattr(el, "key", None)}


def _charts_of(at) -> list[str]:
    return [el.proto.spec for el in at.get("vega_lite_chart") + at.get("arrow_vega_lite_chart")]


@pytest.mark.parametrize("file,field", PAGES)
def test_a_closed_settings_popover_makes_no_controls_and_the_page_is_the_same(file, field):
    """Closed (as every student following the lecturer has it), the Settings popover's controls
    are not made, and the page computes and draws exactly what it does with them open."""
    shut = open_walk(file, settings_open=False)
    opened = open_walk(file)
    _, name = CONTROL[file]
    assert key(opened, name) in _keyed(opened)
    assert key(shut, name) not in _keyed(shut)
    assert not [b for b in shut.button if b.key and ".setup." in b.key]  # the book's setup buttons too
    assert dataclasses.asdict(shut.session_state[PREFIX]) == dataclasses.asdict(opened.session_state[PREFIX])
    assert _charts_of(shut) == _charts_of(opened)
    # the step bar itself is still there
    assert shut.button(key=f"{PREFIX}.{field}.next") is not None


def test_closing_the_settings_keeps_the_values_and_opening_shows_the_values_in_use():
    file = "pages/3_causal_attention.py"
    at = open_walk(file)
    at.toggle(key=key(at, "causal")).set_value(False)
    at.selectbox(key=key(at, "query")).set_value(3)
    at.run()
    assert_no_exception(at)
    at.session_state[walkthrough.SETTINGS_MENU_KEY] = False  # the presenter closes the popover
    at.run()
    settings = at.session_state[PREFIX]
    assert (settings.causal, settings.query) == (False, 3)
    assert key(at, "causal") not in _keyed(at)
    # changed while closed (the lecturer's next step, a lesson, a follow move all go through settings)
    settings.query = 1
    at.run()
    at.session_state[walkthrough.SETTINGS_MENU_KEY] = True
    at.run()
    assert_no_exception(at)
    assert at.selectbox(key=key(at, "query")).value == 1  # seeded from the settings, not the old 3
    assert at.toggle(key=key(at, "causal")).value is False


def test_multi_head_sizes_are_in_the_settings_popover_and_not_made_when_it_is_closed():
    file = "pages/4_multi_head.py"
    shut = open_walk(file, settings_open=False)
    assert not {key(shut, "heads_d_out"), key(shut, "num_heads")} & _keyed(shut)
    opened = open_walk(file)
    found = [path for path, el in main_elements(opened) if getattr(el, "key", None) == key(opened, "heads_d_out")]
    assert found and "popover" in found[0]
