"""No silent coercion on the walkthrough pages: a value the app cannot take is refused with a
message naming it, and the last valid value is kept; a value it can take is taken as typed.

The embeddings editor's cells are text cells: a number cell of st.data_editor drops the characters
it does not parse, so "1e30" arrived as 130 without a word. AppTest does not apply data_editor
edits, so the cells are checked through the column config, the validation function on the
editor's own table, and the CSV box (the same validation); tests/browser types into a real cell.
"""

from __future__ import annotations

import json

import pytest

from core.lessons import embeddings as emb
from core.lessons import walkthrough as wt
from tests.app.walkthrough_helpers import (
    BOOK_SCORES, PREFIX, apply_csv, assert_book_table, errors, key, numbers, open_expander, open_walk,
    settings_of, warnings)
from tests.helpers import texts


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


# ----------------------------------------------------------------------------- whole-number boxes
# An int st.number_input reads typed text with parseInt in the browser ("1e30" -> 1, "12.7" -> 12);
# these boxes are float boxes, so the browser refuses 1e30 as out of range, and a fraction or an
# emptied box comes back refused, with a message, the last valid value in place.
WHOLE_BOXES = [("pages/2_self_attention.py", "d_out", 2), ("pages/2_self_attention.py", "weight_seed", 123),
               ("pages/3_causal_attention.py", "dropout_seed", 0),
               ("pages/4_multi_head.py", "heads_d_out", 4), ("pages/4_multi_head.py", "heads_seed", 590)]


@pytest.mark.parametrize("page, field, default", WHOLE_BOXES)
def test_a_fraction_or_an_empty_box_is_refused_with_a_message(page, field, default):
    at = open_walk(page)
    box = at.number_input(key=key(at, field))
    assert (box.min, box.step) == (float(box.min), 1.0)  # a float box: no parseInt in the browser
    box.set_value(12.5).run()
    assert getattr(settings_of(at), field) == default
    assert at.number_input(key=key(at, field)).value == default
    assert "12.5 is not a whole number, so it was not applied; it stays" in texts(at.toast)
    at.number_input(key=key(at, field)).set_value(None).run()
    assert getattr(settings_of(at), field) == default
    assert "the box was emptied" in texts(at.toast)
    at.number_input(key=key(at, field)).set_value(3).run()
    assert getattr(settings_of(at), field) == 3 and not at.toast


def test_random_embedding_sizes_refuse_fractions():
    at = open_editor()
    at.number_input(key=f"{PREFIX}.random_tokens").set_value(3.5).run()
    assert "Tokens: 3.5 is not a whole number" in texts(at.toast)
    assert at.number_input(key=f"{PREFIX}.random_tokens").value == 6
    at.number_input(key=f"{PREFIX}.random_tokens").set_value(3).run()
    at.button(key=f"{PREFIX}.random").click().run()
    assert len(settings_of(at).embeddings) == 3
