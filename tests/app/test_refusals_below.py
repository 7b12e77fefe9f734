"""ui.state.refusals_below: a number box in a row of controls says its refusal under the whole row,
at full width, not in its own narrow column (where it wrapped to many lines and, in a
bottom-aligned row, pushed every neighbour down)."""

from __future__ import annotations

import pytest
from streamlit.proto.Block_pb2 import Block as BlockProto
from streamlit.testing.v1 import AppTest

from tests.app.conftest import assert_no_exception, open_page
from tests.app.gpt_helpers import tiny_trained_book
from tests.app.test_no_silent_coercion import BOXES, box_key, open_view
from tests.helpers import errors

pytestmark = pytest.mark.usefixtures("one_thread")  # some views train a tiny model in the test process


def _row(wrap: bool = True, stop: bool = False, nested: bool = False, raises: bool = False) -> None:
    """Two boxes (0 to 10) in a bottom-aligned row, optionally inside refusals_below; a third box
    after it, alone; "after" written at the end."""
    import contextlib

    import streamlit as st

    from ui import state

    rules = {"min": 0, "max": 10}

    def box(label: str, value: int) -> None:
        state.checked_number(label, key=label, kind=int, rules=rules, value=value)

    try:
        with state.refusals_below() if wrap else contextlib.nullcontext():
            left, right = st.columns(2, vertical_alignment="bottom")
            with left:
                box("A", 1)
            with right:
                if nested:
                    with state.refusals_below():
                        inner_left, inner_right = st.columns(2)
                        with inner_left:
                            box("B", 2)
                else:
                    box("B", 2)
            if stop:
                st.stop()
            if raises:
                raise ValueError("the page failed")
    except ValueError:
        st.write("caught")
    box("C", 3)
    st.write("after")


def _path_to(node, target) -> list | None:
    """The blocks from `node` down to `target` (None when it is not below `node`)."""
    if node is target:
        return []
    for child in getattr(node, "children", {}).values():
        below = _path_to(child, target)
        if below is not None:
            return [node, *below]
    return None


def _in_a_row(block) -> bool:
    """A column of st.columns, or a horizontal st.container."""
    if block.type == "column":
        return True
    proto = getattr(block, "proto", None)
    return (isinstance(proto, BlockProto) and proto.WhichOneof("type") == "flex_container"
            and proto.flex_container.direction == BlockProto.FlexContainer.HORIZONTAL)


def _rows_above(at, element) -> list:
    """The columns and horizontal containers `element` is in, outermost first (the block that
    holds st.columns' columns is itself horizontal: it is left out, its columns count)."""
    path = _path_to(at._tree, element)
    assert path is not None
    return [b for b in path if _in_a_row(b) and not any(c.type == "column" for c in b.children.values())]


def _main_order(at) -> list[str]:
    """What the main block holds, in order: "row" for a row of columns, else the element's text."""
    out = []
    for child in at.main.children.values():
        if any(b.type == "column" for b in getattr(child, "children", {}).values()):
            out.append("row")
        elif child.type in ("error", "markdown"):
            out.append(str(child.value))
        else:
            out.append(child.type)
    return out


def test_a_refusal_in_a_row_is_drawn_under_the_row_at_full_width():
    at = AppTest.from_function(_row).run()
    assert not at.error
    at.text_input(key="B").input("abc").run()
    assert_no_exception(at)
    (error,) = at.error
    assert error.value.startswith("B: “abc” is not a number. Kept 2")
    assert error.proto.icon == ":material/block:"
    assert _rows_above(at, error) == []  # in the page, not in a column
    order = _main_order(at)
    assert order.index("row") + 1 == order.index(error.value)  # right under the row
    assert at.text_input(key="B").value == "2"  # the box keeps its last valid value


def test_refusals_under_a_row_come_in_the_order_of_the_boxes_and_go_when_fixed():
    at = AppTest.from_function(_row).run()
    at.text_input(key="B").input("-5").run()
    at.text_input(key="A").input("999999999").run()
    assert [e.value.split(":")[0] for e in at.error] == ["A", "B"]
    assert all(_rows_above(at, e) == [] for e in at.error)
    at.text_input(key="A").input("4").run()
    at.text_input(key="B").input("5").run()
    assert not at.error
    assert_no_exception(at)


def test_a_value_taken_in_another_box_ends_the_refusals_before_it():
    # review: five refusals piled up on the Tokens page while the student went on with other
    # boxes, each box already showing the value in force; a refusal is about the last attempt
    at = AppTest.from_function(_row).run()
    at.text_input(key="A").input("abc").run()
    at.text_input(key="B").input("99").run()
    assert [e.value.split(":")[0] for e in at.error] == ["A", "B"]  # refused one after the other
    at.text_input(key="C").input("7").run()  # a value taken in a third box
    assert not at.error
    assert [at.text_input(key=k).value for k in "ABC"] == ["1", "2", "7"]
    assert_no_exception(at)


def test_without_refusals_below_the_refusal_stays_under_its_box():
    at = AppTest.from_function(_row, kwargs={"wrap": False}).run()
    at.text_input(key="B").input("abc").run()
    (error,) = at.error
    assert [b.type for b in _rows_above(at, error)] == ["column"]
    # a box outside any row: its refusal right under it, as before
    at.text_input(key="C").input("abc").run()
    assert errors(at).count("is not a number") == 2
    order = _main_order(at)
    refusal_c = next(e.value for e in at.error if e.value.startswith("C:"))
    assert order.index(refusal_c) == order.index("after") - 1


def test_nested_the_inner_row_keeps_its_own_refusals():
    at = AppTest.from_function(_row, kwargs={"nested": True}).run()
    at.text_input(key="B").input("abc").run()
    at.text_input(key="A").input("abc").run()
    assert_no_exception(at)
    by_box = {e.value[0]: e for e in at.error}
    assert set(by_box) == {"A", "B"}
    # B's under its inner row, inside the outer row's right column; A's under the outer row
    assert [b.type for b in _rows_above(at, by_box["B"])] == ["column"]
    assert _rows_above(at, by_box["A"]) == []


@pytest.mark.parametrize("how", ["stop", "raises"])
def test_a_block_that_raises_draws_nothing_and_later_boxes_draw_their_own(how):
    at = AppTest.from_function(_row, kwargs={how: True}).run()
    at.text_input(key="A").input("abc").run()
    assert not at.error  # st.stop() or an exception in the row: nothing said for it
    if how == "raises":  # the row's collection is over: C's refusal is drawn under C
        assert "caught" in [m.value for m in at.markdown]
        at.text_input(key="C").input("abc").run()
        assert errors(at).startswith("C: “abc” is not a number")


# ------------------------------------------------------------------------------------- the pages
def test_sample_page_names_refusal_is_drawn_under_the_row_of_five():
    at = open_page("pages/8_sample_names.py")
    at.session_state["gpt.runbook"] = tiny_trained_book()
    at.run()
    names_key = f"sample.{at.session_state['sample.__gen']}.n"
    at.text_input(key=names_key).input("abc").run()
    assert_no_exception(at)
    refusal = next(e for e in at.error if "is not a number" in e.value)
    assert refusal.value.startswith("Names: “abc” is not a number. Kept 20")
    assert _rows_above(at, refusal) == []  # not in the Names column
    order = _main_order(at)
    assert order[order.index(refusal.value) - 1] == "row"  # right under the row of five
    assert at.text_input(key=names_key).value == "20"


@pytest.mark.parametrize("box", BOXES, ids=str)
def test_a_refusal_is_never_drawn_inside_the_row_of_its_box(box):
    """Every number box of the app (test_no_silent_coercion's list): when the box sits in a row
    (a column of st.columns, a horizontal container), its refusal is drawn outside that row."""
    at = open_view(box.page, box.query, box.setup)
    key = box_key(at, box)
    label = at.text_input(key=key).label
    at.text_input(key=key).input("abc").run()
    assert_no_exception(at)
    refusal = next(e for e in at.error if e.value.startswith(f"{label}: “abc” is not a number"))
    rows = _rows_above(at, at.text_input(key=key))
    if not rows:
        return  # a box alone: its refusal is under it
    row = rows[-1]
    path = _path_to(at._tree, row)
    if row.type == "column":  # the row is st.columns' block of columns, not one column
        row = path[-1]
    assert all(block is not row for block in _path_to(at._tree, refusal)), errors(at)
