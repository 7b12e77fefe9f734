"""AppTest of page 2, self-attention with trainable weights: the book's V1/V2 rows, every control
(variant, d_out, seed, bias, query, step, hand-edited weights, d_k of the scaling panel), bad input,
predict-then-reveal and a URL round trip."""

from __future__ import annotations

import json
import pytest

from core import settings as core_settings
from core.lessons import walkthrough as wt
from tests.app.conftest import assert_no_exception
from tests.app.walkthrough_helpers import (
    PREFIX, apply_csv, asks, badges, chart, charts, commit_guess, errors, key, markdown, numbers,
    open_expander, open_walk, set_step, settings_of, warnings)

PAGE = "pages/2_self_attention.py"


def page(query=None):
    return open_walk(PAGE, query)


def book_badge(at) -> str:
    found = [b for b in badges(at) if "the book" in b]
    return found[0] if found else ""


def test_defaults_match_the_book_and_every_reference():
    at = page()
    assert at.title[0].value == "Self-attention with trainable weights"
    assert ":green-badge" in book_badge(at) and "0.2996 0.8053" in book_badge(at)
    assert any("Agrees with PyTorch" in b and ":green-badge" in b for b in badges(at))
    assert any("SelfAttentionV1.forward = these steps" in b and ":green-badge" in b for b in badges(at))
    assert {"W_q  (3, 2)", "W_k  (3, 2)", "W_v  (3, 2)"} <= set(charts(at))
    assert "class SelfAttentionV1" in " ".join(c.value for c in at.code)
    set_step(at, "sa_step", "qkv")  # the steps come from attention_intermediates: it is shown
    codes = " ".join(c.value for c in at.code)
    assert "def attention_intermediates" in codes and "def forward" in codes


def test_every_step_shows_its_tensor_with_its_shape():
    at = page()
    expected = {"qkv": ["Q  (6, 2)", "K  (6, 2)", "V  (6, 2)"], "scores": ["Ω = Q Kᵀ  (6, 6)"],
                "scaled": ["Q Kᵀ / √d_k  (6, 6)"], "softmax": ["A = softmax(Q Kᵀ / √d_k)  (6, 6)"],
                "context": ["Z = A V  (6, 2)"]}
    for step, titles in expected.items():
        set_step(at, "sa_step", step)
        assert set(titles) <= set(charts(at)), (step, list(charts(at)))
    assert numbers(at, "z^(2) =") == [0.3061, 0.8210]
    set_step(at, "sa_step", "scaled")
    raw = chart(at, "Q Kᵀ / √d_k")
    set_step(at, "sa_step", "scores")
    scores = chart(at, "Ω = Q Kᵀ")
    assert (scores["value"] / raw["value"]).round(6).eq(round(2 ** 0.5, 6)).all()


def test_variant_seed_and_book_setup_buttons():
    at = page()
    at.segmented_control(key=key(at, "variant")).set_value("v2").run()
    assert_no_exception(at)
    assert settings_of(at).variant == "v2" and book_badge(at) == ""  # seed 123 is not the V2 example
    at.text_input(key=key(at, "weight_seed")).input("789").run()
    assert "-0.0739 0.0713" in book_badge(at) and ":green-badge" in book_badge(at)
    assert any("SelfAttentionV2.forward = these steps" in b for b in badges(at))
    at.text_input(key=key(at, "weight_seed")).input("5").run()
    w5 = chart(at, "W_q")["value"].tolist()
    at.button(key=f"{PREFIX}.setup.v1").click().run()
    s = settings_of(at)
    assert (s.variant, s.weight_seed, s.d_out) == ("v1", 123, 2)
    assert chart(at, "W_q")["value"].tolist() != w5 and ":green-badge" in book_badge(at)


def test_d_out_and_bias_change_the_shapes():
    at = page()
    assert at.checkbox(key=key(at, "qkv_bias")).disabled  # V1 has no bias
    at.text_input(key=key(at, "d_out")).input("4").run()
    assert "W_q  (3, 4)" in charts(at)
    at.segmented_control(key=key(at, "variant")).set_value("v2").run()
    at.checkbox(key=key(at, "qkv_bias")).check().run()
    assert_no_exception(at)
    assert len(numbers(at, "b_q `(4,)` =")) == 4
    set_step(at, "sa_step", "context")
    assert len(numbers(at, "z^(2) =")) == 4
    assert any("SelfAttentionV2.forward = these steps" in b and ":green-badge" in b for b in badges(at))


def test_query_highlights_its_row():
    at = page()
    set_step(at, "sa_step", "softmax")
    at.selectbox(key=key(at, "query")).set_value(4).run()
    assert len(numbers(at, "α_5j =")) == 6
    assert "row_i" in chart(at, "A = softmax")


def test_hand_edited_weights_are_used_and_validated():
    at = page()
    assert not any(b.key == f"{PREFIX}.copy_weights" for b in at.button)  # closed: not built
    open_expander(at, f"{PREFIX}.weights_open")
    at.button(key=f"{PREFIX}.copy_weights").click().run()
    assert_no_exception(at)
    s = settings_of(at)
    assert len(s.custom_weights) == 3 and len(s.custom_weights[0]) == 3
    assert "Back to the seeded weights" in [b.label for b in at.button]
    # what a valid data_editor edit writes (AppTest cannot type into the grid)
    s.custom_weights[0] = [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]
    at.run()
    assert chart(at, "W_q")["value"].tolist() == [1.0, 0.0, 0.0, 1.0, 0.0, 0.0]
    set_step(at, "sa_step", "qkv")
    assert numbers(at, "q^(2) =") == [0.55, 0.87]
    assert book_badge(at) == ""  # edited weights are not the book's
    at.text_input(key=key(at, "d_out")).input("3").run()  # the edited tables no longer fit
    assert "have shape (3, 2)" in warnings(at) and "(3, 3)" in warnings(at)
    at.button(key=f"{PREFIX}.seeded_weights").click().run()
    assert settings_of(at).custom_weights == []


def test_overflowing_weights_get_a_message_not_a_traceback():
    at = page()
    s = settings_of(at)
    s.embeddings = [[1e100] * 3] * 6
    s.custom_weights = [[[1e100, 1e100]] * 3, [[1e100, -1e100]] * 3, [[1.0, 1.0]] * 3]
    at.run()
    assert_no_exception(at)
    assert "too large" in errors(at)
    assert at.segmented_control(key=key(at, "sa_step")).value == "weights"  # controls still work


def test_scaling_panel_follows_d_k():
    at = page()
    assert "Why divide by √d_k?" not in [h.value for h in at.header]
    set_step(at, "sa_step", "scaled")
    assert "Why divide by √d_k?" in [h.value for h in at.header]
    assert numbers(at, "softmax(logits) =") == [0.18, 0.25, 0.07, 0.17, 0.24, 0.09]
    assert numbers(at, "softmax(logits × 100) =") == [0.0, 0.99, 0.0, 0.0, 0.01, 0.0]
    curve = chart(at, "Softmax slides to one-hot")
    assert sorted(curve["d_k"].unique()) == list(wt.SCALE_DKS)
    at.select_slider(key=key(at, "scale_dk")).set_value(512).run()
    assert_no_exception(at)
    row = chart(at, "One query's weights, d_k = 512")
    unscaled = row[row["kind"] == "softmax(q·k)"]["value"]
    scaled = row[row["kind"] == "softmax(q·k / √d_k)"]["value"]
    assert unscaled.max() > scaled.max()


def test_predict_at_the_softmax_step():
    at = page()
    at.toggle(key=key(at, "predict")).set_value(True).run()
    set_step(at, "sa_step", "softmax")
    assert not any(t.startswith("A = softmax") for t in charts(at))
    radio = [r for r in at.radio if r.key.startswith(f"{PREFIX}.guess_input.self_top")][0]
    radio.set_value(1).run()
    [b for b in at.button if b.key.startswith(f"{PREFIX}.commit.self_top")][0].click().run()
    assert_no_exception(at)
    assert chart(at, "A = softmax") is not None
    assert "right!" in "\n".join(s.value for s in at.success)  # "journey" gets 0.2264, the most


def test_a_bias_asks_the_softmax_question_again():
    # hand-edited W_q, W_k stay as they are when the bias is switched on: only b_q, b_k move the
    # scores, and a guess made without them must not be graded against the new map
    weights = [[[1, 0], [0, 1], [0, 0]], [[1, 0], [0, 1], [0, 0]], [[1, 0], [0, 1], [1, 1]]]
    at = page({"predict": "true", "sa_step": "softmax", "variant": "v2",
               "custom_weights": json.dumps(weights)})
    commit_guess(at, "self_top", 1)
    assert not asks(at, "self_top")
    at.checkbox(key=key(at, "qkv_bias")).check().run()
    assert settings_of(at).qkv_bias and settings_of(at).custom_weights == weights
    assert asks(at, "self_top") and not any(t.startswith("A = softmax") for t in charts(at))


def test_shared_embeddings_from_page_one_are_used_here():
    at = page()
    apply_csv(at, "u,1,0,0\nv,0,1,0")
    set_step(at, "sa_step", "qkv")
    assert list(chart(at, "Q  (2, 2)")["row"].unique()) == ["u", "v"]


def test_url_round_trip():
    at = page()
    at.segmented_control(key=key(at, "variant")).set_value("v2").run()
    at.text_input(key=key(at, "d_out")).input("3").run()
    at.text_input(key=key(at, "weight_seed")).input("42").run()
    at.checkbox(key=key(at, "qkv_bias")).check().run()
    set_step(at, "sa_step", "context")
    z = numbers(at, "z^(2) =")
    params = core_settings.to_params(settings_of(at))
    fresh = page(params)
    assert settings_of(fresh) == settings_of(at)
    assert numbers(fresh, "z^(2) =") == z
    assert "Step 6 of 6" in markdown(fresh) or "Step 6 of 6" in fresh.subheader[0].value


@pytest.mark.parametrize("locked_field", ["variant", "d_out", "weight_seed"])
def test_locked_projection_controls_are_disabled(locked_field):
    at = page()
    at.session_state[f"{PREFIX}.__locked"] = {locked_field}
    at.run()
    widget = {"variant": at.segmented_control, "d_out": at.text_input,
              "weight_seed": at.text_input}[locked_field](key=key(at, locked_field))
    assert widget.disabled


def test_a_book_match_shows_on_the_page_too_except_in_lecture_mode():
    """The book's printed first row is checked in the Checks popover; a student checking the app
    against the book looks for it on the page first, so a match is repeated there (short: its
    numbers are in its help). In lecture mode the projector's first screen stays the step's."""
    plain = page()
    in_checks = [b for b in badges(plain) if "Matches the book: " in b]
    assert in_checks and ":green-badge" in in_checks[0]
    assert any(b.endswith(" Matches the book]") and ":green-badge" in b for b in badges(plain)), badges(plain)
    lecture = page({"lecture": "1"})
    assert any("Matches the book: " in b for b in badges(lecture))
    assert not any(b.endswith(" Matches the book]") for b in badges(lecture))
