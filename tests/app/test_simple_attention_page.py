"""AppTest of page 1, simple attention: the book's numbers, every control, every bad input of the
embeddings table (through the CSV box, since AppTest does not apply data_editor edits), the shared
settings, predict-then-reveal, locked controls and a URL round trip.

Helpers shared with pages 2-4 live in `tests/app/walkthrough_helpers.py`.
"""

from __future__ import annotations

import pytest

from core import settings as core_settings
from core.lessons import embeddings as emb
from core.lessons import walkthrough as wt
from tests.app.conftest import ROOT, assert_no_exception
from tests.app.walkthrough_helpers import (
    BOOK_CONTEXT, BOOK_SCORES, BOOK_WEIGHTS, PAGE, PREFIX, apply_csv, assert_book_table, badges, chart,
    charts, errors, key, markdown, numbers, open_expander, open_walk, set_step, settings_of, warnings)



# ----------------------------------------------------------------------------- defaults
def test_defaults_show_the_books_numbers_at_every_step():
    at = open_walk()
    assert at.title[0].value == "Simple attention"
    assert numbers(at, "ω =") == BOOK_SCORES
    scores = chart(at, "ω: scores of query “journey”")
    assert list(scores["label"]) == list(wt.BOOK_TOKENS)
    assert list(scores["text"]) == [f"{v:.4f}" for v in BOOK_SCORES]
    assert any("Agrees with PyTorch F.scaled_dot_product_attention" in b for b in badges(at))
    assert any("loop = matrix product" in b and ":green-badge" in b for b in badges(at))
    assert "(6,)" in " ".join(charts(at))  # the shape beside the tensor

    set_step(at, "step", "weights")
    assert numbers(at, "α (softmax) =") == BOOK_WEIGHTS
    weights = chart(at, "α: weights of query")
    assert set(weights["kind"]) == {"softmax", "plain ω / Σω"}
    assert "Σα = 1.0000 (softmax), 1.0000 (plain)" in markdown(at)

    set_step(at, "step", "context")
    assert numbers(at, "z =") == BOOK_CONTEXT
    contributions = chart(at, "α_j · x^(j), and their sum z")
    assert list(contributions[contributions["row"] == "z = Σ"]["label"]) == ["0.4419", "0.6515", "0.5683"]
    assert any(r"\alpha_{2j}" in l.value for l in at.latex)

    set_step(at, "step", "matrix")
    weights_matrix = chart(at, "A = softmax(Ω) by row")
    journey = weights_matrix[weights_matrix["row"] == "journey"]["value"].round(4).tolist()
    assert journey == BOOK_WEIGHTS
    assert any("row “journey” of A and Z = the one-query" in b and ":green-badge" in b for b in badges(at))
    assert {"Ω = X Xᵀ  (6, 6)", "A = softmax(Ω) by row  (6, 6)", "Z = A X  (6, 3)"} <= set(charts(at))


def test_the_written_out_sums_break_after_two_products():
    # on one line, "0.55 · 0.43 + 0.87 · 0.15 + 0.66 · 0.89" ran past the text column at 1024 px
    at = open_walk()
    assert any(r"0.55 \cdot 0.43 + 0.87 \cdot 0.15 \\ &\quad + 0.66 \cdot 0.89 \\ &= 0.9544" in l.value
               for l in at.latex)
    set_step(at, "step", "context")
    (z,) = [l.value for l in at.latex if r"z^{(2)}_1" in l.value]
    assert z.count(r"&\quad + ") == 1 and r"\dots\ (\text{3 more})" in z


def test_sum_over_lines_only_breaks_the_written_out_sum():
    from ui import formatting as fmt
    from ui import walkthrough

    ten = walkthrough.sum_over_lines(fmt.dot_product_latex([1.0] * 10, [2.0] * 10, 20.0, 1, 1))
    assert ten.count(r"&\quad + ") == 2  # four products and "… (6 more)": three lines of two
    assert ten.startswith(r"\begin{aligned} \omega_{11} &= x^{(1)} \cdot x^{(1)} \\ &= 1.00 \cdot 2.00 + ")
    assert ten.endswith(r"\\ &= 20.0000 \end{aligned}")
    two = fmt.dot_product_latex([1.0, 2.0], [3.0, 4.0], 11.0, 1, 2)
    assert walkthrough.sum_over_lines(two) == two  # two products: one line, as before


def test_code_of_every_step_is_the_real_core_source():
    at = open_walk()
    codes = " ".join(c.value for c in at.code)
    assert "def attn_scores_loop" in codes and "def attn_scores_matmul" in codes
    set_step(at, "step", "weights")
    assert "def attn_weights_softmax" in " ".join(c.value for c in at.code)


# ----------------------------------------------------------------------------- controls
def test_query_changes_every_number():
    at = open_walk()
    at.selectbox(key=key(at, "query")).set_value(0).run()
    assert_no_exception(at)
    assert settings_of(at).query == 0
    assert chart(at, "ω: scores of query “Your”") is not None
    assert numbers(at, "ω =")[0] == pytest.approx(0.43**2 + 0.15**2 + 0.89**2, abs=1e-4)
    set_step(at, "step", "weights")
    assert numbers(at, "α (softmax) =") != BOOK_WEIGHTS


def test_stepper_buttons_move_one_step_and_stop_at_the_ends():
    at = open_walk()
    assert at.button(key=f"{PREFIX}.step.prev").disabled
    for expected in ("weights", "context", "matrix"):
        at.button(key=f"{PREFIX}.step.next").click().run()
        assert_no_exception(at)
        assert settings_of(at).step == expected
        assert at.segmented_control(key=key(at, "step")).value == expected
    assert at.button(key=f"{PREFIX}.step.next").disabled
    at.button(key=f"{PREFIX}.step.prev").click().run()
    assert settings_of(at).step == "context" and "Step 3 of 4" in at.subheader[0].value


def test_csv_edit_updates_the_result_and_the_table_shape():
    at = open_walk()
    apply_csv(at, "token,a,b\ncat,1,0\ndog,0,1\nbird,1,1\n")
    s = settings_of(at)
    assert s.tokens == ["cat", "dog", "bird"] and s.embeddings == [[1, 0], [0, 1], [1, 1]]
    assert s.query == 1  # still a valid index
    assert numbers(at, "ω =") == [0.0, 1.0, 1.0]
    assert "CSV applied: 3 tokens × 2 dimensions." in "\n".join(x.value for x in at.success)
    assert "**3 tokens × 2 dimensions**, shape `(3, 2)`" in markdown(at)
    apply_csv(at, "token,a\ncat,1\n")  # one of each: "1 token × 1 dimension", not "1 tokens"
    assert "CSV applied: 1 token × 1 dimension." in "\n".join(x.value for x in at.success)
    assert "**1 token × 1 dimension**, shape `(1, 1)`" in markdown(at)


def test_csv_from_a_decimal_comma_spreadsheet_with_tokens_named_nan_and_inf():
    at = open_walk()
    apply_csv(at, "token;d1;d2\nnan;1;0\ninf;0,5;0,25\n")
    s = settings_of(at)
    assert s.tokens == ["nan", "inf"] and s.embeddings == [[1.0, 0.0], [0.5, 0.25]]
    assert "CSV applied: 2 tokens × 2 dimensions." in "\n".join(x.value for x in at.success)
    assert not at.error
    # the size boxes of "Random embeddings" say the new table's size, not the book's 6 × 3
    assert [at.text_input(key=f"{PREFIX}.random_{k}").value for k in ("tokens", "dims")] == ["2", "2"]
    again = open_walk(query=core_settings.to_params(s))  # the link keeps the names as names
    assert settings_of(again).tokens == ["nan", "inf"] and not again.error


def test_a_refused_csv_reads_as_one_plain_sentence_and_keeps_the_table():
    at = open_walk()
    before = list(settings_of(at).tokens), [list(r) for r in settings_of(at).embeddings]
    apply_csv(at, "a,1e400\nb,1")
    message = "\n".join(e.value for e in at.error)
    assert ("The CSV was not applied: Line 1 (“a”), column d1: ∞ cannot be used; attention needs "
            "finite numbers. The last valid embeddings are kept.") in message
    assert ".." not in message
    assert (list(settings_of(at).tokens), [list(r) for r in settings_of(at).embeddings]) == before


def test_random_add_remove_dimension_and_reset():
    at = open_walk()
    open_expander(at, f"{PREFIX}.embeddings_open.0")  # the editor is collapsed (presenter layout)
    at.text_input(key=f"{PREFIX}.random_tokens").input("8")
    at.text_input(key=f"{PREFIX}.random_dims").input("5")
    at.text_input(key=key(at, "embed_seed")).input("7")
    at.button(key=f"{PREFIX}.random").click().run()
    assert_no_exception(at)
    s = settings_of(at)
    assert s.embeddings == emb.random_embeddings(8, 5, 7) and len(s.tokens) == 8
    assert s.tokens[:6] == list(wt.BOOK_TOKENS) and s.tokens[6] == "tok7"
    first = numbers(at, "ω =")
    at.button(key=f"{PREFIX}.add_dim").click().run()
    assert len(settings_of(at).embeddings[0]) == 6
    # the size boxes of "Random embeddings" follow the table (8 tokens, now 6 dimensions)
    assert [at.text_input(key=f"{PREFIX}.random_{k}").value for k in ("tokens", "dims")] == ["8", "6"]
    assert numbers(at, "ω =") == first  # a new dimension of zeros changes no score
    at.button(key=f"{PREFIX}.remove_dim").click().run()
    at.button(key=f"{PREFIX}.remove_dim").click().run()
    assert len(settings_of(at).embeddings[0]) == 4
    at.button(key=f"{PREFIX}.reset_book").click().run()
    assert_book_table(at)
    assert numbers(at, "ω =") == BOOK_SCORES


def test_remove_dimension_is_disabled_at_one_dimension():
    at = open_walk()
    apply_csv(at, "a,1\nb,2")
    assert at.button(key=f"{PREFIX}.remove_dim").disabled
    assert numbers(at, "ω =") == [2.0, 4.0]


def test_predict_then_reveal_hides_until_a_guess():
    at = open_walk()
    at.toggle(key=key(at, "predict")).set_value(True).run()
    assert_no_exception(at)
    assert settings_of(at).predict
    assert not any(t.startswith("ω: scores") for t in charts(at))  # hidden
    assert "Predict first:" in markdown(at)
    radio = [r for r in at.radio if r.key.startswith(f"{PREFIX}.guess_input.simple_top")][0]
    radio.set_value(0).run()  # "Your": wrong, the answer is "journey"
    commit = [b for b in at.button if b.key.startswith(f"{PREFIX}.commit.")][0]
    commit.click().run()
    assert_no_exception(at)
    assert "not quite" in warnings(at) and "“journey”" in warnings(at)
    assert chart(at, "ω: scores of query") is not None  # revealed
    set_step(at, "step", "weights")  # the same question: still answered
    assert numbers(at, "α (softmax) =") == BOOK_WEIGHTS
    again = [b for b in at.button if b.key.startswith(f"{PREFIX}.again.")][0]
    again.click().run()
    radio = [r for r in at.radio if r.key.startswith(f"{PREFIX}.guess_input.")][0]
    radio.set_value(1).run()
    [b for b in at.button if b.key.startswith(f"{PREFIX}.commit.")][0].click().run()
    assert "right!" in "\n".join(s.value for s in at.success)


# ----------------------------------------------------------------------------- bad inputs
BAD_CSV = {
    "text in a cell": ("a,1,x\nb,2,3", "“x” is not a number"),
    "empty cell": ("a,1,\nb,2,3", "the cell is empty"),
    "NaN": ("a,1,nan\nb,2,3", "NaN"),
    "+inf": ("a,1,inf\nb,2,3", "∞ cannot be used"),
    "-inf": ("a,1,-inf\nb,2,3", "−∞ cannot be used"),
    "beyond 1e100": ("a,1,1e200\nb,2,3", "too large"),
    "ragged rows": ("a,1,2\nb,3\nc,4,5,6", "line 2 has 2"),
    "zero dimensions": ("a\nb", "at least one dimension"),
    "65 tokens": ("\n".join(f"t{i},1" for i in range(65)), "too many"),
    "no token name": (",1,2\nb,3,4", "has no token name"),
    "empty box": ("", "empty"),
}


@pytest.mark.parametrize("case", list(BAD_CSV))
def test_bad_csv_gets_a_message_and_keeps_the_last_valid_table(case):
    text, fragment = BAD_CSV[case]
    at = open_walk()
    apply_csv(at, text)
    assert fragment in errors(at), errors(at)
    assert "last valid embeddings are kept" in errors(at)
    assert_book_table(at)
    assert numbers(at, "ω =") == BOOK_SCORES  # the math goes on with the last valid table
    assert at.text_area(key=f"{PREFIX}.csv_text").value == text  # what was typed stays visible


def test_huge_values_give_a_warning_and_finite_one_hot_weights():
    at = open_walk()
    apply_csv(at, "a,1e30,0\nb,2e30,0\nc,0,1e30")
    assert "Very large values" in warnings(at)
    # the table is shared by the four pages: the warning names where plain normalisation is shown
    assert "Simple attention's step 2 sets plain normalisation beside it" in warnings(at)
    at.selectbox(key=key(at, "query")).set_value(0).run()
    set_step(at, "step", "weights")
    weights = numbers(at, "α (softmax) =")
    assert weights == [0.0, 1.0, 0.0]
    frame = chart(at, "α: weights of query")
    assert "NaN" not in " ".join(frame["text"]) and frame["value"].notna().all()
    assert any("Agrees with PyTorch" in b for b in badges(at))


def test_zero_sum_scores_explain_plain_normalisation_without_nan():
    at = open_walk()
    apply_csv(at, "a,1,0\nb,-1,0")
    at.selectbox(key=key(at, "query")).set_value(0).run()
    set_step(at, "step", "weights")
    assert "divides by zero" in "\n".join(i.value for i in at.info)
    frame = chart(at, "α: weights of query")
    assert set(frame["kind"]) == {"softmax"} and "NaN" not in " ".join(frame["text"])


WALK_PAGES = ["pages/1_simple_attention.py", "pages/2_self_attention.py",
              "pages/3_causal_attention.py", "pages/4_multi_head.py"]


@pytest.mark.parametrize("walk_page", WALK_PAGES)
def test_a_link_query_beyond_the_tokens_is_moved_with_a_notice(walk_page):
    at = open_walk(walk_page, {"query": "10"})
    assert settings_of(at).query == 5
    assert ("Query token x^(11) does not exist: there are 6 tokens, so the last one, "
            "“step” · x^(6), is used.") in warnings(at)
    at.run()  # said once, when the query moved; not on every rerun
    assert "does not exist" not in warnings(at) and settings_of(at).query == 5


def test_a_link_query_beyond_its_own_tokens_is_moved_with_a_notice():
    at = open_walk(query={"tokens": '["a","b"]', "embeddings": "[[0,0,0],[0,0,0]]", "query": "5"})
    assert settings_of(at).query == 1
    assert "Query token x^(6) does not exist: there are 2 tokens, so the last one, “b” · x^(2)" \
        in warnings(at)


def test_a_shorter_table_moves_the_query_with_a_notice():
    at = open_walk()  # query 1, "journey"
    apply_csv(at, "solo,3")
    assert settings_of(at).query == 0
    assert "Query token x^(2) does not exist: there is only 1 token, so the only one, “solo” · x^(1)" \
        in warnings(at)


def test_one_token_and_one_dimension():
    at = open_walk()
    apply_csv(at, "solo,3")
    assert settings_of(at).query == 0  # clamped: the old query 1 no longer exists
    assert numbers(at, "ω =") == [9.0]
    set_step(at, "step", "weights")
    assert numbers(at, "α (softmax) =") == [1.0]


def test_sixty_four_tokens_hide_cell_values_and_say_so():
    at = open_walk()
    apply_csv(at, "\n".join(f"t{i},{(i % 7) / 10},{(i % 5) / 10}" for i in range(64)))
    assert len(settings_of(at).tokens) == 64
    assert "hover a bar" in " ".join(c.value for c in at.caption)
    set_step(at, "step", "matrix")
    assert "values are hidden at this size" in " ".join(c.value for c in at.caption)
    assert chart(at, "A = softmax(Ω) by row  (64, 64)")["value"].notna().all()


def test_duplicate_names_warn_and_charts_stay_unique():
    at = open_walk()
    apply_csv(at, "one,1,0\none,0,1\ntwo,1,1")
    assert "Repeated token names" in warnings(at)
    labels = list(chart(at, "ω: scores of query")["label"])
    assert labels == ["one #0", "one #1", "two"]


# ----------------------------------------------------------------------------- state
def test_settings_survive_a_page_switch_and_are_shared():
    at = open_walk()
    apply_csv(at, "x,1,2\ny,3,4\nz,5,6")
    at.selectbox(key=key(at, "query")).set_value(2).run()
    at.switch_page(str(ROOT / "pages/4_multi_head.py")).run()
    assert_no_exception(at)
    assert list(chart(at, "head 1")["row"].unique()) == ["x", "y", "z"]
    at.switch_page(str(ROOT / PAGE)).run()
    assert_no_exception(at)
    assert settings_of(at).query == 2 and settings_of(at).tokens == ["x", "y", "z"]
    assert at.selectbox(key=key(at, "query")).value == 2
    assert chart(at, "ω: scores of query “z”") is not None


def test_url_round_trip_reproduces_the_page():
    at = open_walk()
    apply_csv(at, "p,0.1,0.9\nq,0.5,0.5\nr,0.9,0.1\ns,0.3,0.3")
    at.selectbox(key=key(at, "query")).set_value(3).run()
    set_step(at, "step", "context")
    at.toggle(key=key(at, "predict")).set_value(False).run()
    params = core_settings.to_params(settings_of(at))
    assert set(params) == {"tokens", "embeddings", "query", "step"}
    z = numbers(at, "z =")
    fresh = open_walk(query=params)
    assert settings_of(fresh) == settings_of(at)
    assert numbers(fresh, "z =") == z
    assert "Step 3 of 4" in fresh.subheader[0].value


def test_a_bad_link_falls_back_with_a_notice():
    at = open_walk(query={"embeddings": "[[1,2],[3]]", "tokens": '["a","b"]', "query": "1"})
    assert "could not be used" in warnings(at)
    assert_book_table(at)
    assert numbers(at, "ω =") == BOOK_SCORES


def test_locked_controls_are_disabled_and_hold_their_value():
    at = open_walk()
    at.session_state[f"{PREFIX}.__locked"] = {"query", "step", "embeddings"}
    at.run()
    assert_no_exception(at)
    open_expander(at, f"{PREFIX}.embeddings_open.0")  # the editor is collapsed (presenter layout)
    assert at.selectbox(key=key(at, "query")).disabled
    assert at.segmented_control(key=key(at, "step")).disabled
    assert at.button(key=f"{PREFIX}.step.next").disabled
    assert at.button(key=f"{PREFIX}.random").disabled and at.button(key=f"{PREFIX}.apply_csv").disabled
    assert "🔒 Locked: embeddings, query, step" in " ".join(c.value for c in at.caption)
    at.session_state[key(at, "query")] = 4  # even a forced widget value does not get through
    at.run()
    assert settings_of(at).query == 1 and numbers(at, "ω =") == BOOK_SCORES


def test_reset_walkthrough_restores_defaults_but_keeps_locked_values():
    at = open_walk()
    apply_csv(at, "a,1,2\nb,3,4")
    set_step(at, "step", "context")
    at.session_state[f"{PREFIX}.__locked"] = {"step"}
    at.run()
    at.button(key=f"{PREFIX}.reset_all").click().run()
    assert_no_exception(at)
    assert_book_table(at)
    assert settings_of(at).step == "context"  # locked by the lesson: kept
    assert numbers(at, "z =") == BOOK_CONTEXT
