"""The protocol-level student simulator's pure parts: widget values as the frontend stores them,
and the small changes a simulated student makes (no server needed)."""

import random

from streamlit.proto.Element_pb2 import Element
from streamlit.proto.WidgetStates_pb2 import WidgetState

from benchmarks.classroom_sim.behaviours import change_for, nudge_csv
from benchmarks.classroom_sim.protocol import Node, initial_state


def node(kind: str, **fields) -> Node:
    element = Element()
    widget = getattr(element, kind)
    for name, value in fields.items():
        if isinstance(value, list):
            getattr(widget, name).extend(value)
        else:
            setattr(widget, name, value)
    return Node(kind, "run", "page", "", widget=widget)


def test_initial_state_uses_the_value_the_server_set_over_the_default():
    n = node("number_input", id="a", default=3.0, value=7.0, set_value=True)
    assert initial_state("number_input", n.widget).double_value == 7.0
    n = node("number_input", id="a", default=3.0)
    assert initial_state("number_input", n.widget).double_value == 3.0
    box = node("selectbox", id="b", options=["x", "y"], default=1)
    assert initial_state("selectbox", box.widget).string_value == "y"
    assert initial_state("button", node("button", id="c").widget) is None


def test_changes_stay_inside_the_widget_bounds():
    rng = random.Random(0)
    n = node("number_input", id="a", default=1.0, min=1.0, max=8.0, has_min=True, has_max=True, step=1.0)
    for _ in range(20):
        change = change_for(n, WidgetState(id="a", double_value=1.0), rng)
        assert change.double_value == 2.0
    toggle = node("checkbox", id="t", default=True)
    assert change_for(toggle, WidgetState(id="t", bool_value=True), rng).bool_value is False
    box = node("selectbox", id="b", options=["x", "y"], default=0)
    assert change_for(box, WidgetState(id="b", string_value="x"), rng).string_value == "y"


def test_csv_nudge_changes_one_number_and_keeps_the_shape():
    text = "Your,0.43,0.15,0.89\njourney,0.55,0.87,0.66"
    new = nudge_csv(text, random.Random(1))
    old_rows = [r.split(",") for r in text.splitlines()]
    new_rows = [r.split(",") for r in new.splitlines()]
    assert [len(r) for r in new_rows] == [len(r) for r in old_rows]
    changed = [(a, b) for ra, rb in zip(old_rows, new_rows) for a, b in zip(ra, rb) if a != b]
    assert len(changed) == 1 and abs(float(changed[0][0]) - float(changed[0][1])) <= 0.1001


def test_fairness_compares_trainers_only_while_all_of_them_train():
    from benchmarks.classroom_sim.report import shared_window_rates

    # "a" trains alone for 30 s at 10 steps/s, then both at 200 steps/min: equal while shared
    steps = {"a": [(0, 0), (30, 300), (60, 400), (90, 500)], "b": [(30, 0), (60, 100), (90, 200)]}
    assert shared_window_rates(steps) == {"a": 200.0, "b": 200.0}
    steps["b"] = [(30, 0), (60, 20), (90, 40)]  # b gets a fifth of a's steps
    rates = shared_window_rates(steps)
    assert rates["b"] / rates["a"] == 0.2
    assert shared_window_rates({"a": steps["a"]}) == {}  # one trainer: nothing to compare
