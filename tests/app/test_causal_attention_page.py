"""AppTest of page 3, causal attention and dropout: the mask and −∞, the book's CausalAttention rows,
masking order, dropout p / seed / train-eval mode, predict-then-reveal, locks and a URL round trip."""

from __future__ import annotations

import json

from core import settings as core_settings
from tests.app.conftest import assert_no_exception
from tests.app.walkthrough_helpers import (
    PREFIX, apply_csv, asks, badges, chart, charts, commit_guess, key, markdown, numbers, open_walk,
    set_step, settings_of, warnings)
from ui import walkthrough

PAGE = "pages/3_causal_attention.py"


def page(query=None):
    return open_walk(PAGE, query)


def info(at) -> str:
    return "\n".join(i.value for i in at.info)


def test_defaults_show_the_mask_and_the_references():
    at = page()
    assert at.title[0].value == "Causal attention and dropout"
    mask = chart(at, "mask (1 = hidden)  (6, 6)")
    hidden = mask[mask["value"] == 1]
    assert len(hidden) == 15 and (hidden["col_i"] > hidden["row_i"]).all()
    assert any("Agrees with PyTorch" in b and ":green-badge" in b for b in badges(at))
    assert any("CausalAttention (eval) = these steps" in b and ":green-badge" in b for b in badges(at))
    assert "def causal_mask" in " ".join(c.value for c in at.code)


def test_the_mask_formulas_are_two_so_they_wrap_on_a_narrow_page():
    # one display formula could not wrap: "M = triu(1, diagonal=1)" ran past a 1024 px page
    # ("M = triu(1,"). Two inline formulas of one centred paragraph: the second goes under the first
    at = page()
    (mask,) = [m for m in at.markdown if "triu" in m.value]
    assert not [l for l in at.latex if "triu" in l.value]
    assert mask.value.startswith(r"${\displaystyle M_{ij} = \begin{cases}")
    assert r"\end{cases}}$" + " \u2003 " + r"${\displaystyle M = \mathrm{triu}(\mathbf{1}, \text{diagonal}=1)}$" \
        in mask.value
    at.toggle(key=key(at, "causal")).set_value(False).run()
    (off,) = [m.value for m in at.markdown if "triu" in m.value]
    assert r"i, j}$" + " \u2003 " + r"${\displaystyle \text{(the causal mask, }" in off


def test_masked_scores_show_minus_infinity_and_weights_renormalise():
    at = page()
    set_step(at, "causal_step", "masked")
    masked = chart(at, "masked_fill(mask, −∞)")
    assert (masked[masked["col_i"] > masked["row_i"]]["label"] == "−∞").all()
    assert numbers(at, "row journey =")[2:] == [float("-inf")] * 4
    set_step(at, "causal_step", "weights")
    weights = numbers(at, "α_2j =")
    assert weights[2:] == [0.0] * 4 and abs(sum(weights) - 1) < 1e-3
    assert numbers(at, "row sums =") == [1.0] * 6


def test_mask_toggle_off_hides_nothing():
    at = page()
    at.toggle(key=key(at, "causal")).set_value(False).run()
    assert_no_exception(at)
    assert "The mask is off" in info(at)
    assert not any("CausalAttention (eval)" in b for b in badges(at))  # the class always masks
    set_step(at, "causal_step", "weights")
    assert all(w > 0 for w in numbers(at, "α_2j ="))
    assert any("Agrees with PyTorch" in b and ":green-badge" in b for b in badges(at))


def test_book_setup_reproduces_causal_attention():
    at = page()
    at.button(key=f"{PREFIX}.setup.causal").click().run()
    assert_no_exception(at)
    set_step(at, "causal_step", "context")
    book = [b for b in badges(at) if "the book" in b]
    assert book and ":green-badge" in book[0] and "-0.4519 0.2216" in book[0]
    assert numbers(at, "z^(2) =") == [-0.5874, 0.0058]


def test_book_setup_reproduces_the_printed_masked_and_dropped_weights():
    """3.5.1 and 3.5.2 print the masked weights of SelfAttention_v2 (seed 789) and those weights
    after torch.manual_seed(123) and nn.Dropout(0.5): one button sets it all up, two green badges
    say the page reproduces both, and the dropout step shows the printed numbers."""
    at = page()
    assert not [b for b in badges(at) if "3.5.1" in b or "2.0000 0.0000" in b]
    at.button(key=f"{PREFIX}.setup.masked").click().run()
    assert_no_exception(at)
    chosen = settings_of(at)
    assert (chosen.variant, chosen.weight_seed, chosen.dropout_p, chosen.dropout_seed, chosen.train_mode) == \
        ("v2", 789, 0.5, 123, True)
    book = [b for b in badges(at) if "the book (" in b and "): " in b]  # in Checks, with the numbers
    assert len(book) == 2 and all(":green-badge" in b for b in book), book
    assert any("(3.5.1, masked weights): 1.0000" in b and "0.5517 0.4483" in b for b in book)
    assert any("(3.5.2, after dropout): 2.0000 0.0000" in b for b in book)
    # and on the page, where a student checking against the book looks first
    on_page = [b for b in badges(at) if b.endswith(" the book (3.5.1, masked weights)]")
               or b.endswith(" the book (3.5.2, after dropout)]")]
    assert len(on_page) == 2 and all(":green-badge" in b for b in on_page), badges(at)
    at.slider(key=key(at, "dropout_p")).set_value(0.3).run()  # another p: only 3.5.1 is printed
    book = [b for b in badges(at) if "the book (" in b and "): " in b]
    assert len(book) == 1 and "0.5517 0.4483" in book[0] and ":green-badge" in book[0]


def test_dropout_p_seed_and_train_mode():
    at = page()
    set_step(at, "causal_step", "dropout")
    assert "Eval mode" in info(at)
    at.slider(key=key(at, "dropout_p")).set_value(0.5).run()
    assert "Eval mode" in info(at)  # p alone does nothing in eval mode
    at.toggle(key=key(at, "train_mode")).set_value(True).run()
    assert_no_exception(at)
    assert settings_of(at).dropout_p == 0.5 and settings_of(at).train_mode
    # the book's class in training mode, after torch.manual_seed(dropout seed), drops the same weights
    assert any("CausalAttention (training) = these steps" in b and ":green-badge" in b
               for b in badges(at))
    codes = " ".join(c.value for c in at.code)
    assert "def attention_intermediates" in codes and "def book_dropout_keep" in codes
    text = markdown(at)
    assert "of 21** visible weights" in text and "1/(1 − p) = **2.0000**" in text
    dropped = chart(at, "weights after dropout")
    first = sorted(dropped[dropped["label"] == "✕"][["row_i", "col_i"]].itertuples(index=False))
    assert first and all(c <= r for r, c in first)  # dropped cells are visible ones
    assert numbers(at, "row sums =") != [1.0] * 6
    set_step(at, "causal_step", "weights")
    weights = chart(at, "A = softmax(masked scores)")["value"].to_numpy()
    set_step(at, "causal_step", "dropout")
    kept = (dropped["label"] != "✕").to_numpy() & (dropped["col_i"] <= dropped["row_i"]).to_numpy()
    assert abs(dropped["value"].to_numpy()[kept] - 2 * weights[kept]).max() < 1e-12  # × 1/(1 − p)
    at.text_input(key=key(at, "dropout_seed")).input("1").run()
    again = chart(at, "weights after dropout")
    assert sorted(again[again["label"] == "✕"][["row_i", "col_i"]].itertuples(index=False)) != first
    at.toggle(key=key(at, "train_mode")).set_value(False).run()
    assert numbers(at, "row sums =") == [1.0] * 6


def test_masking_order_step_and_its_prediction():
    at = page()
    set_step(at, "causal_step", "order")
    assert any("before softmax = after softmax + renormalise" in b and ":green-badge" in b
               for b in badges(at))
    captions = " ".join(c.value for c in at.caption)
    assert "Row sums: 1.000  1.000" in captions
    no_renorm = chart(at, "softmax, then mask")
    sums = no_renorm.groupby("row_i")["value"].sum().tolist()
    assert all(s < 0.999 for s in sums[:-1]) and abs(sums[-1] - 1) < 1e-9
    at.toggle(key=key(at, "predict")).set_value(True).run()
    assert not any(t.startswith("softmax, then mask") for t in charts(at))
    radio = [r for r in at.radio if r.key.startswith(f"{PREFIX}.guess_input.rows_sum")][0]
    radio.set_value("yes").run()
    [b for b in at.button if b.key.startswith(f"{PREFIX}.commit.rows_sum")][0].click().run()
    assert_no_exception(at)
    assert "not quite" in warnings(at) and "Only the last row" in warnings(at)
    assert chart(at, "softmax, then mask") is not None


def test_one_token_and_huge_values():
    at = page()
    apply_csv(at, "solo,1e30,2")
    set_step(at, "causal_step", "weights")
    assert numbers(at, "α_1j =") == [1.0]
    apply_csv(at, "a,1e30,0\nb,-1e30,0\nc,1e30,1e30")
    set_step(at, "causal_step", "weights")
    rows = numbers(at, "row sums =")
    assert rows == [1.0, 1.0, 1.0]


def test_url_round_trip_and_lock():
    at = page()
    at.toggle(key=key(at, "train_mode")).set_value(True).run()
    at.slider(key=key(at, "dropout_p")).set_value(0.3).run()
    at.text_input(key=key(at, "dropout_seed")).input("11").run()
    set_step(at, "causal_step", "dropout")
    sums = numbers(at, "row sums =")
    params = core_settings.to_params(settings_of(at))
    assert {"train_mode", "dropout_p", "dropout_seed", "causal_step"} <= set(params)
    fresh = page(params)
    assert numbers(fresh, "row sums =") == sums
    fresh.session_state[f"{PREFIX}.__locked"] = {"causal", "dropout_p"}
    fresh.run()
    assert fresh.toggle(key=key(fresh, "causal")).disabled
    assert fresh.slider(key=key(fresh, "dropout_p")).disabled
    assert not fresh.toggle(key=key(fresh, "train_mode")).disabled


W_Q, W_V = [[1, 0], [0, 1], [0, 0]], [[1, 0], [0, 1], [1, 1]]
W_K_A, W_K_B = [[1, 0], [0, 1], [0, 0]], [[-1, 0], [0, -1], [0, 0]]  # B: the opposite scores


def predicting(step: str, W_k, **extra):
    return page({"predict": "true", "causal_step": step, "custom_weights": json.dumps([W_Q, W_k, W_V]),
                 **extra})


def test_a_new_w_k_asks_the_weights_question_again():
    # the answer comes from Q Kᵀ: a guess made for W_k A must not be graded against W_k B's map
    at = predicting("weights", W_K_A, causal="false", query="5")
    commit_guess(at, "causal_top", 1)
    assert not asks(at, "causal_top") and chart(at, "A = softmax") is not None
    settings_of(at).custom_weights = [W_Q, W_K_B, W_V]
    at.run()
    assert_no_exception(at)
    assert asks(at, "causal_top") and "Predict first:" in markdown(at)
    assert not any(t.startswith("A = softmax") for t in charts(at))  # hidden until the new guess
    settings_of(at).custom_weights = [W_Q, W_K_A, W_V]  # back: that guess was for these weights
    at.run()
    assert not asks(at, "causal_top")


def test_a_new_w_k_asks_the_masking_order_question_again():
    at = predicting("order", W_K_A)
    commit_guess(at, "rows_sum", "no")
    assert not asks(at, "rows_sum")
    settings_of(at).custom_weights = [W_Q, W_K_B, W_V]
    at.run()
    assert asks(at, "rows_sum")


def test_a_new_w_v_keeps_the_guess():
    # W_v does not change the scores: asking again would only annoy
    at = predicting("weights", W_K_A, causal="false", query="5")
    commit_guess(at, "causal_top", 1)
    settings_of(at).custom_weights = [W_Q, W_K_A, [[2, 0], [0, 2], [2, 2]]]
    at.run()
    assert not asks(at, "causal_top")


def test_a_link_dropout_p_between_slider_steps_is_used_as_shown():
    at = page({"dropout_p": "0.123", "train_mode": "true", "causal_step": "dropout"})
    slider = at.slider(key=key(at, "dropout_p"))
    assert settings_of(at).dropout_p == 0.123 == slider.value
    assert slider.proto.format == "%0.3f"  # the browser writes 0.123, not "%0.2f"'s 0.12
    assert "p = 0.123:" in markdown(at) and "1/(1 − p) = **1.1403**" in markdown(at)  # not 1/0.88
    at.toggle(key=key(at, "causal")).set_value(False).run()  # an unrelated change keeps it
    assert settings_of(at).dropout_p == 0.123


def test_a_slider_step_is_used_without_float_noise():
    at = page({"train_mode": "true", "causal_step": "dropout"})
    at.slider(key=key(at, "dropout_p")).set_value(0.15000000000000002).run()  # 3 × 0.05 in JS
    assert settings_of(at).dropout_p == 0.15
    assert at.slider(key=key(at, "dropout_p")).proto.format == "%0.2f"


def test_slider_helpers():
    assert walkthrough.on_step(0.30000000000000004, 0.05) == 0.3
    assert walkthrough.on_step(0.123, 0.05) == 0.123 and walkthrough.on_step(0.0, 0.05) == 0.0
    assert [walkthrough.slider_format(v) for v in (0.0, 0.5, 0.15, 0.123, 1e-5)] == [
        "%0.2f", "%0.2f", "%0.2f", "%0.3f", "%0.5f"]
