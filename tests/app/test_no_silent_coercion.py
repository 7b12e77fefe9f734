"""No silent coercion: a value the app cannot take is refused with a message naming it, and the
last valid value is kept; a value it can take is taken as typed. Every number box of every page
(the list BOXES, checked against what the pages draw), and the embeddings editor's cells.

The embeddings editor's cells are text cells: a number cell of st.data_editor drops the characters
it does not parse, so "1e30" arrived as 130 without a word. AppTest does not apply data_editor
edits, so the cells are checked through the column config, the validation function on the
editor's own table, and the CSV box (the same validation); tests/browser types into a real cell.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from core import budget, pitfalls as pf, settings as core_settings
from core.lessons import embeddings as emb
from core.lessons import walkthrough as wt
from tests.app.conftest import assert_no_exception, open_page
from tests.app.gpt_helpers import TINY, tiny_trained_book
from tests.app.walkthrough_helpers import (
    BOOK_SCORES, PREFIX, apply_csv, assert_book_table, errors, numbers, open_expander, open_walk,
    settings_of, warnings)
from ui import state
from ui.state import NUMBER_HELP

pytestmark = pytest.mark.usefixtures("one_thread")


def open_editor():
    at = open_walk()
    open_expander(at, f"{PREFIX}.embeddings_open.0")  # the editor is collapsed on every page
    return at


def test_the_editor_cells_are_text_so_nothing_is_dropped_before_validation():
    at = open_editor()
    editor = at.dataframe[0]
    columns = json.loads(editor.proto.columns)
    assert all(columns[d]["type_config"]["type"] == "text" for d in ("d1", "d2", "d3"))
    shown = editor.value
    assert shown.loc[1, ["d1", "d2", "d3"]].tolist() == ["0.55", "0.87", "0.66"]
    # what the editor holds reads back as the very numbers in use
    assert emb.validate_embedding_table(shown).embeddings == wt.BOOK_EMBEDDINGS


def test_the_weight_cells_are_text_and_read_back_as_the_weights_in_use():
    """The W_q, W_k, W_v tables too: a number cell turned a typed "1e300" into 1300 and used it,
    and "abc" arrived as an empty cell (tests/browser types into them)."""
    at = open_walk("pages/2_self_attention.py")
    open_expander(at, f"{PREFIX}.weights_open")
    at.button(key=f"{PREFIX}.copy_weights").click().run()
    assert_no_exception(at)
    tables = at.dataframe
    assert len(tables) == 3
    for k, table in enumerate(tables):
        columns = json.loads(table.proto.columns)
        assert all(columns[c]["type_config"]["type"] == "text" for c in ("out 1", "out 2")), columns
        shown = table.value
        assert all(isinstance(v, str) for v in shown.to_numpy().ravel())
        name = ("W_q", "W_k", "W_v")[k]
        # a seeded (float32) weight is shown in the shortest text of that float32, and a cell left as
        # shown keeps the very weight in use
        in_use = settings_of(at).custom_weights[k]
        assert shown.iat[0, 0] == str(np.float32(in_use[0][0])) and len(shown.iat[0, 0]) <= 12
        assert emb.validate_weight_table(shown, name, (3, 2), current=in_use) == in_use
        read = emb.validate_weight_table(shown, name, (3, 2))  # read alone: the same float32 weights
        assert np.array_equal(np.float32(read), np.float32(in_use))
        # and each column is wide enough for its longest entry (14 px text, 10 px padding a side;
        # a digit is half an em, a point a quarter)
        for c in ("out 1", "out 2"):
            need = max(0.5 * sum(ch.isdigit() for ch in v) + 0.25 * (len(v) - sum(ch.isdigit() for ch in v))
                       for v in shown[c])
            assert columns[c]["width"] >= need * 14 + 20, (c, columns[c], list(shown[c]))


@pytest.mark.parametrize("typed, value", [("1e50", 1e50), ("-2.5E-3", -0.0025), ("130", 130.0)])
def test_a_typed_weight_is_taken_as_typed(typed, value):
    frame = emb.weight_frame(torch.rand(3, 2, dtype=torch.float64))
    frame.loc["in 1", "out 1"] = typed
    assert emb.validate_weight_table(frame, "W_k", (3, 2))[0][0] == value


@pytest.mark.parametrize("typed, message", [("abc", "W_k row in 1, column out 1: “abc” is not a number"),
                                            ("1e300", "W_k row in 1, column out 1: 1e\\+300 is too large"),
                                            ("", "W_k row in 1, column out 1: the cell is empty")])
def test_a_typed_weight_the_app_cannot_take_is_named(typed, message):
    frame = emb.weight_frame(torch.rand(3, 2, dtype=torch.float64))
    frame.loc["in 1", "out 1"] = typed
    with pytest.raises(emb.EmbeddingError, match=message):
        emb.validate_weight_table(frame, "W_k", (3, 2))


@pytest.mark.parametrize("typed, value", [("1e30", 1e30), ("-2.5E-3", -0.0025), (" −0.5 ", -0.5),
                                          ("130", 130.0)])
def test_a_typed_number_is_taken_as_typed(typed, value):
    frame = emb.editor_frame(wt.BOOK_TOKENS, wt.BOOK_EMBEDDINGS)
    frame.loc[1, "d1"] = typed
    assert emb.validate_embedding_table(frame).embeddings[1][0] == value


@pytest.mark.parametrize("typed, message", [
    ("NaN", "Row 2 (“journey”), column d1: “NaN” is not a number"),
    ("1e200", "Row 2 (“journey”), column d1: 1e+200 is too large"),
    ("abc", "Row 2 (“journey”), column d1: “abc” is not a number"),
    ("1,5", "Row 2 (“journey”), column d1: “1,5” is not a number"),
    ("", "Row 2 (“journey”), column d1: the cell is empty"),
    (None, "Row 2 (“journey”), column d1: the cell is empty"),
])
def test_a_typed_value_the_app_cannot_take_is_named(typed, message):
    frame = emb.editor_frame(wt.BOOK_TOKENS, wt.BOOK_EMBEDDINGS)
    frame.loc[1, "d1"] = typed
    with pytest.raises(emb.EmbeddingError) as info:
        emb.validate_embedding_table(frame)
    assert message in str(info.value)
    if typed == "NaN":
        assert "empty" not in str(info.value)


def test_nan_in_the_csv_box_is_not_a_number_not_an_empty_cell():
    at = open_walk()
    apply_csv(at, "a,1,NaN\nb,2,3")
    assert "Line 1 (“a”), column d2: “NaN” is not a number" in errors(at)
    assert "empty" not in errors(at) and "last valid embeddings are kept" in errors(at)
    assert_book_table(at)
    assert numbers(at, "ω =") == BOOK_SCORES


def test_1e30_in_the_csv_box_is_1e30_with_a_visible_warning():
    at = open_walk()
    apply_csv(at, "a,1e30,0\nb,0,1")
    assert settings_of(at).embeddings == [[1e30, 0.0], [0.0, 1.0]]
    assert "Very large values (up to 1e+30)" in warnings(at)
    # the editor shows the value as it is used
    assert at.dataframe[0].value.loc[0, "d1"] == "1e+30"


def test_beyond_the_limit_is_refused_and_the_last_valid_table_kept():
    at = open_walk()
    apply_csv(at, "a,1e200,0\nb,0,1")
    assert "1e+200 is too large; use values between −1e100 and 1e100" in errors(at)
    assert_book_table(at)
    assert at.text_area(key=f"{PREFIX}.csv_text").value == "a,1e200,0\nb,0,1"


# ----------------------------------------------------------------------------- every number box
# Streamlit's number input turns typed text into something else in the browser ("1e30" -> 1,
# "12.7" -> 12, "abc" -> the minimum) where the server never sees it. Every number box of the app
# is ui.state.checked_number, a text box checked on the server: refused text gets a message under
# the box, which stays until a valid value is typed, and the last valid value stays in force.
@dataclasses.dataclass(frozen=True)
class Box:
    """One number box: where it is and what it holds."""
    page: str  # the page file
    field: str  # the settings field (or, with no `prefix`, the box's own key)
    prefix: str | None = None  # where the page keeps its settings object in session state
    query: tuple = ()  # the link the page is opened with, as (name, value) pairs
    setup: str = ""  # "editor": open the embeddings editor; "model": a trained model in the session
    bounds: tuple = ()  # (min, max) of a box that is not a settings field

    def __str__(self) -> str:
        return f"{Path(self.page).stem}:{self.field}"


WALKS = ("pages/1_simple_attention.py", "pages/2_self_attention.py", "pages/3_causal_attention.py",
         "pages/4_multi_head.py")
EDITOR = [Box(page, key, setup="editor", bounds=(1, limit))  # in the embeddings editor of each page
          for page in WALKS for key, limit in ((f"{PREFIX}.random_tokens", emb.MAX_TOKENS),
                                               (f"{PREFIX}.random_dims", emb.MAX_DIMS))]
EDITOR += [Box(page, "embed_seed", PREFIX, setup="editor") for page in WALKS]
TRAIN = "pages/7_train_gpt.py"
PITFALLS = "pages/10_pitfalls.py"
BOXES = EDITOR + [
    Box(WALKS[1], "d_out", PREFIX), Box(WALKS[1], "weight_seed", PREFIX),
    Box(WALKS[2], "dropout_seed", PREFIX), Box(WALKS[2], "d_out", PREFIX), Box(WALKS[2], "weight_seed", PREFIX),
    Box(WALKS[3], "heads_d_out", PREFIX), Box(WALKS[3], "heads_seed", PREFIX),
    *[Box("pages/5_tokens_data.py", field, "tokens")
      for field in ("max_length", "stride", "batch_size", "seed", "batch_index", "output_dim")],
    *[Box("pages/6_small_lm.py", field, "small_lm") for field in ("seed", "max_steps", "ce_target")],
    *[Box(TRAIN, field, "train", query=tuple(TINY.items()))
      for field in ("context_size", "n_layer", "n_head", "d_embed", "d_ff", "lr", "weight_decay",
                    "batch_size", "max_steps", "val_interval", "val_batches", "eval_batch_size", "seed",
                    "pack_length", "grad_clip", "warmup_steps", "min_lr_ratio")],
    # opened with the average on: from its default 0 (off) no value nearby fits its bounds (0 to 0.9999)
    Box(TRAIN, "ema_decay", "train", query=tuple({**TINY, "ema_decay": "0.25"}.items())),
    Box(TRAIN, "train.extra", query=tuple(TINY.items()), setup="model", bounds=(1, budget.LIMITS.max_steps)),
    *[Box("pages/8_sample_names.py", field, "sample", setup="model") for field in ("n", "seed")],
    Box(PITFALLS, "seed", "pitfalls", query=(("pitfall", "softmax_dim"),)),
    Box(PITFALLS, "optim_steps", "pitfalls", query=(("pitfall", "sgd"),)),
    *[Box(PITFALLS, field, "pitfalls", query=(("pitfall", "vocab_order"),))
      for field in ("hash_seed_a", "hash_seed_b")],
    *[Box(PITFALLS, field, "pitfalls", query=(("pitfall", "fit_indent"),))
      for field in ("fit_iters", "eval_iters")],
]
# every page, in the states that show its boxes (the Train page's "More steps" needs a finished run)
VIEWS = [(page, (), "editor") for page in WALKS] + [
    ("pages/5_tokens_data.py", (), ""), ("pages/6_small_lm.py", (), ""),
    (TRAIN, tuple(TINY.items()), ""), (TRAIN, tuple(TINY.items()), "model"),
    ("pages/8_sample_names.py", (), "model"), ("pages/9_inside_model.py", (), "model"),
    ("pages/home.py", (), "")] + [(PITFALLS, (("pitfall", name),), "") for name in pf.PITFALL_CHOICES]
TYPED = ["abc", "1e30", "12.7", "", "nan", "-0", "9" * 400]


def open_view(page: str, query: tuple, setup: str):
    at = open_page(page, query=dict(query))
    if setup == "editor":
        open_expander(at, f"{PREFIX}.embeddings_open.0")
    elif setup == "model":
        at.session_state["gpt.runbook"] = tiny_trained_book()
        at.run()
    assert_no_exception(at)
    return at


def box_key(at, box: Box) -> str:
    if box.prefix is None:
        return box.field
    return f"{box.prefix}.{at.session_state[box.prefix + '.__gen']}.{box.field}"


def kind_and_rules(at, box: Box) -> tuple[type, dict]:
    if box.prefix is None:
        return int, dict(zip(("min", "max"), box.bounds))
    settings = at.session_state[box.prefix]
    return (core_settings.field_type(type(settings), box.field),
            {f.name: dict(f.metadata) for f in dataclasses.fields(settings)}[box.field])


def value_in_force(at, box: Box):
    if box.prefix is None:
        return at.session_state[f"{box.field}.value"]
    return getattr(at.session_state[box.prefix], box.field)


def expected(text: str, kind: type, rules: dict) -> tuple[str, object]:
    """("taken", value) or ("refused", what the message must say)."""
    shown = text if len(text) <= 24 else text[:24] + "…"
    if text in ("abc", "nan"):
        return "refused", f"“{text}” is not a number"
    if text == "":
        return "refused", "the box is empty"
    if text == "12.7" and kind is int:
        return "refused", "“12.7” is not a whole number"
    number = 0 if text == "-0" else float(text)
    if number < rules["min"]:
        return "refused", f"“{shown}” is less than the minimum"
    if number > rules["max"]:
        return "refused", f"“{shown}” is more than the maximum"
    return "taken", kind(number)


def a_valid_value(default, rules: dict):
    """A value the box takes that differs from the default and from 0 and 12.7 (typed before)."""
    for value in (default * 2, default + 1, default - 1):
        if value not in (default, 0, 12.7) and rules["min"] <= value <= rules["max"]:
            return value
    raise AssertionError(f"no valid value near {default}")


# A view (page, link, setup) is opened once for the two tests below: the check that every number
# box it draws is listed reads a fresh session (it changes nothing), and the box test then goes on in
# that session (opening a page is most of the cost of checking a box). Run alone, a test opens its own.
_FRESH_VIEWS: dict[tuple, object] = {}


def fresh_view(page: str, query: tuple, setup: str):
    """A view as `open_view` opens it, for a test that only reads it: kept for `take_view`."""
    view = (page, query, setup)
    if view not in _FRESH_VIEWS:
        _FRESH_VIEWS[view] = open_view(page, query, setup)
    return _FRESH_VIEWS[view]


def take_view(page: str, query: tuple, setup: str):
    """A session of the view that no test has changed (the one `fresh_view` read, else a new one)."""
    kept = _FRESH_VIEWS.pop((page, query, setup), None)
    return kept if kept is not None else open_view(page, query, setup)


@pytest.mark.parametrize("page, query, setup", VIEWS, ids=lambda v: v if isinstance(v, str) else None)
def test_every_number_box_of_every_page_is_a_checked_box_in_the_list(page, query, setup):
    """A new number box must be added to BOXES (and so to the test below); no page has a
    Streamlit number input, which changes typed text in the browser."""
    at = fresh_view(page, query, setup)
    here = {box_key(at, box) for box in BOXES if (box.page, box.query, box.setup) == (page, query, setup)}
    if not here:  # no box test goes on in this view: nothing to keep it for
        _FRESH_VIEWS.pop((page, query, setup), None)
    assert not at.number_input, [w.key for w in at.number_input]
    found = {box.key for box in at.text_input if NUMBER_HELP in (box.help or "")}
    listed = {box_key(at, box) for box in BOXES if box.page == page}
    assert found <= listed, f"{page}: number boxes not in BOXES: {sorted(found - listed)}"
    assert here <= found, f"{page}: listed in BOXES but not drawn: {sorted(here - found)}"


def check_a_number_box(at, box: Box) -> None:
    """Type every text of TYPED into `box`: each is refused with a message naming it (the last valid
    value kept) or taken as typed; the message stays until a valid value is typed. Then the box's
    first value is typed back, so the next box of the view starts from the settings a fresh page has."""
    key = box_key(at, box)
    label = at.text_input(key=key).label
    kind, rules = kind_and_rules(at, box)
    default = kept = value_in_force(at, box)
    for text in TYPED:
        at.text_input(key=key).input(text).run()
        assert_no_exception(at)
        outcome, what = expected(text, kind, rules)
        if outcome == "taken":
            kept = what
            assert f"{label}: " not in errors(at), (str(box), text, errors(at))
        else:
            shown = state.format_number(kept, kind, rules.get("format"))
            assert f"{label}: {what}" in errors(at) and f"Kept {shown};" in errors(at), (str(box), text, errors(at))
        assert value_in_force(at, box) == kept and type(value_in_force(at, box)) is kind, (str(box), text)
        assert at.text_input(key=key).value == state.format_number(kept, kind, rules.get("format")), (str(box), text)
    at.run()  # the message stays until a valid value is typed
    assert f"{label}: " in errors(at), str(box)
    valid = a_valid_value(default, rules)
    at.text_input(key=key).input(str(valid)).run()
    assert_no_exception(at)
    assert value_in_force(at, box) == valid, str(box)
    assert f"{label}: " not in errors(at), str(box)
    at.text_input(key=box_key(at, box)).input(str(default)).run()  # back to the value a fresh page has
    assert_no_exception(at)
    assert value_in_force(at, box) == default and f"{label}: " not in errors(at), (str(box), errors(at))


# the boxes by the view that shows them: one session per view checks its boxes one after another
BOX_VIEWS: dict[tuple, list[Box]] = {}
for _box in BOXES:
    BOX_VIEWS.setdefault((_box.page, _box.query, _box.setup), []).append(_box)


def _view_id(view: tuple) -> str:
    page, query, setup = view
    return ":".join([Path(page).stem, *(f"{k}={v}" for k, v in query if k in ("pitfall", "ema_decay")),
                     *([setup] if setup else [])])


@pytest.mark.parametrize("view", list(BOX_VIEWS), ids=_view_id)
def test_a_number_box_refuses_what_it_cannot_take_and_keeps_the_last_valid_value(view):
    """Every box of BOXES, those of one view one after another in one session (a failure names the
    box: its page and field)."""
    at = take_view(*view)
    for box in BOX_VIEWS[view]:
        check_a_number_box(at, box)


def test_random_embeddings_take_the_sizes_in_the_boxes():
    at = open_editor()
    at.text_input(key=f"{PREFIX}.random_tokens").input("3.5").run()
    assert "Tokens: “3.5” is not a whole number. Kept 6;" in errors(at)
    assert at.text_input(key=f"{PREFIX}.random_tokens").value == "6"
    at.text_input(key=f"{PREFIX}.random_tokens").input("3").run()
    at.button(key=f"{PREFIX}.random").click().run()
    assert len(settings_of(at).embeddings) == 3 and "Tokens:" not in errors(at)
