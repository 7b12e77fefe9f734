"""AppTest of page 4, multi-head attention: head counts that divide d_out, one map per head, the
concatenation and output projection, wrapper = split-head class = fused-qkv class, same-initial-weights, the book's
wrapper row, predict-then-reveal, locks and a URL round trip."""

from __future__ import annotations

import pytest

from core import settings as core_settings
from core.lessons.walkthrough import WalkthroughSettings
from tests.app.conftest import assert_no_exception
from tests.app.walkthrough_helpers import (
    PREFIX, apply_csv, asks, badges, chart, charts, commit_guess, key, markdown, numbers, open_walk,
    set_step, settings_of, warnings)

PAGE = "pages/4_multi_head.py"


def page(query=None):
    return open_walk(PAGE, query)


def info(at) -> str:
    return "\n".join(i.value for i in at.info)


def head_titles(at) -> list[str]:
    return sorted(t for t in charts(at) if t.startswith("head "))


def test_defaults_one_map_per_head_and_the_checks():
    at = page()
    assert at.title[0].value == "Multi-head attention"
    assert head_titles(at) == ["head 1  (6, 6)", "head 2  (6, 6)"]
    assert at.selectbox(key=key(at, "num_heads")).options == ["1", "2", "4"]
    assert any("Agrees with PyTorch" in b and ":green-badge" in b for b in badges(at))
    assert any("wrapper = split-head class" in b and ":green-badge" in b for b in badges(at))
    set_step(at, "mh_step", "concat")
    assert {"heads side by side  (6, 4)", "after out_proj  (6, 4)"} == set(charts(at))
    set_step(at, "mh_step", "classes")
    assert numbers(at, "wrapper + out_proj, first row =") == numbers(at, "split-head, first row =")
    assert numbers(at, "fused qkv, first row =") == numbers(at, "split-head, first row =")
    assert any("split-head class = fused qkv class" in b and ":green-badge" in b for b in badges(at))
    assert any("PyTorchMultiHeadAttention (one fused qkv)" in b and ":green-badge" in b for b in badges(at))
    codes = " ".join(c.value for c in at.code)
    assert "class MultiHeadAttentionWrapper" in codes and "class MultiHeadAttention(" in codes
    assert "class PyTorchMultiHeadAttention(" in codes and "def multihead_to_fused(" in codes


def test_only_divisors_are_offered_and_a_bad_count_is_explained():
    at = page()
    at.text_input(key=key(at, "heads_d_out")).input("6").run()
    assert at.selectbox(key=key(at, "num_heads")).options == ["1", "2", "3", "6"]
    at.selectbox(key=key(at, "num_heads")).set_value(3).run()
    assert_no_exception(at)
    assert head_titles(at) == ["head 1  (6, 6)", "head 2  (6, 6)", "head 3  (6, 6)"]
    set_step(at, "mh_step", "concat")
    assert "heads side by side  (6, 6)" in charts(at)
    assert "3 \\times (6 \\times 2)" in " ".join(l.value for l in at.latex)
    at.text_input(key=key(at, "heads_d_out")).input("4").run()  # 3 does not divide 4
    assert_no_exception(at)
    assert "3 heads do not divide d_out = 4" in info(at) and settings_of(at).num_heads == 2
    at.text_input(key=key(at, "heads_d_out")).input("1").run()
    assert "can only be split into one head" in info(at)


def test_heads_from_a_link_that_do_not_divide_are_clamped():
    at = page({"heads_d_out": "6", "num_heads": "4"})
    assert settings_of(at).num_heads == 3 and "4 heads do not divide d_out = 6" in info(at)


def test_book_wrapper_and_seed():
    at = page()
    at.button(key=f"{PREFIX}.setup.multi").click().run()
    assert_no_exception(at)
    book = [b for b in badges(at) if "the book" in b]
    assert book and ":green-badge" in book[0] and "-0.4519 0.2216 0.4772 0.1063" in book[0]
    set_step(at, "mh_step", "concat")
    concat = chart(at, "heads side by side")
    assert concat[concat["row_i"] == 0]["value"].round(4).tolist() == [-0.4519, 0.2216, 0.4772, 0.1063]
    # the book prints its wrapper's concatenation (its wrapper has no out_proj; ours adds Method A's)
    set_step(at, "mh_step", "classes")
    book_row = numbers(at, "heads concatenated (what the book's wrapper returns), first row =")
    assert book_row == pytest.approx([-0.4519, 0.2216, 0.4772, 0.1063], abs=5e-5)
    assert numbers(at, "wrapper + out_proj, first row =") != pytest.approx(book_row, abs=1e-3)
    set_step(at, "mh_step", "heads")
    before = chart(at, "head 1")["value"].tolist()
    at.text_input(key=key(at, "heads_seed")).input("7").run()
    assert chart(at, "head 1")["value"].tolist() != before
    assert not [b for b in badges(at) if "the book" in b]


def test_same_initial_weights_give_identical_maps():
    at = page({"heads_d_out": "2", "heads_seed": "123", "qk_scale": "1"})  # the former defaults
    set_step(at, "mh_step", "why")
    assert "head 2: 0.0387" in markdown(at)
    at.toggle(key=key(at, "same_init")).set_value(True).run()
    assert_no_exception(at)
    assert "head 2: 0.0000" in markdown(at)
    set_step(at, "mh_step", "heads")
    assert chart(at, "head 1")["value"].tolist() == chart(at, "head 2")["value"].tolist()


def test_mask_bias_and_dropout_settings_reach_the_maps():
    at = page()
    at.toggle(key=key(at, "causal")).set_value(False).run()
    assert (chart(at, "head 1")["value"] > 0).all()
    assert any("wrapper = split-head class" in b and ":green-badge" in b for b in badges(at))
    at.checkbox(key=key(at, "qkv_bias")).check().run()
    assert_no_exception(at)
    assert settings_of(at).qkv_bias
    assert any("Agrees with PyTorch" in b and ":green-badge" in b for b in badges(at))


def test_training_mode_dropout_matches_the_books_class():
    eval_at = page()
    set_step(eval_at, "mh_step", "concat")
    at = page(core_settings.to_params(WalkthroughSettings(train_mode=True, dropout_p=0.5, dropout_seed=3)))
    set_step(at, "mh_step", "concat")
    assert any("MultiHeadAttention.forward (training) = these steps" in b and ":green-badge" in b
               for b in badges(at))
    assert not any("(training)" in b for b in badges(eval_at))
    train_out, eval_out = (chart(a, "after out_proj")["value"].to_numpy() for a in (at, eval_at))
    assert abs(train_out - eval_out).max() > 1e-3  # the dropped weights change the output
    assert "def with_book_dropout" in " ".join(c.value for c in at.code)


def test_predict_whether_heads_differ():
    at = page()
    set_step(at, "mh_step", "why")
    at.toggle(key=key(at, "predict")).set_value(True).run()
    assert not any(t.startswith("initial W_q of every head") for t in charts(at))
    radio = [r for r in at.radio if r.key.startswith(f"{PREFIX}.guess_input.heads_same")][0]
    radio.set_value("yes").run()
    [b for b in at.button if b.key.startswith(f"{PREFIX}.commit.heads_same")][0].click().run()
    assert_no_exception(at)
    assert "not quite" in warnings(at) and "different initial weights" in warnings(at)
    w = chart(at, "initial W_q of every head, side by side  (3, 4)")
    assert list(w["col"].unique()) == ["h1·1", "h1·2", "h2·1", "h2·2"]


@pytest.mark.parametrize("control, field", [("toggle", "causal"), ("checkbox", "qkv_bias")])
def test_the_heads_question_is_asked_again_when_the_maps_change(control, field):
    # the mask changes the maps, and the bias draws change the heads' weights
    at = page({"predict": "true", "mh_step": "why"})
    commit_guess(at, "heads_same", "no")
    assert not asks(at, "heads_same")
    before = getattr(settings_of(at), field)
    getattr(at, control)(key=key(at, field)).set_value(not before).run()
    assert_no_exception(at)
    assert getattr(settings_of(at), field) != before and asks(at, "heads_same")


def test_many_tokens_and_heads():
    at = page()
    apply_csv(at, "\n".join(f"t{i}," + ",".join(str((i * j) % 7 / 7) for j in range(8))
                            for i in range(32)))
    at.text_input(key=key(at, "heads_d_out")).input("16").run()
    at.selectbox(key=key(at, "num_heads")).set_value(16).run()
    assert_no_exception(at)
    assert len(head_titles(at)) == 8 and "Showing the first 8 of 16 heads." in \
        " ".join(c.value for c in at.caption)
    assert "values are hidden at this size" in " ".join(c.value for c in at.caption)
    set_step(at, "mh_step", "concat")
    assert "heads side by side  (32, 16)" in charts(at)


def test_url_round_trip_and_lock():
    at = page()
    at.text_input(key=key(at, "heads_d_out")).input("6").run()
    at.selectbox(key=key(at, "num_heads")).set_value(3).run()
    at.text_input(key=key(at, "heads_seed")).input("99").run()
    set_step(at, "mh_step", "classes")
    first = numbers(at, "wrapper + out_proj, first row =")
    params = core_settings.to_params(settings_of(at))
    assert params == {"heads_d_out": "6", "num_heads": "3", "heads_seed": "99", "mh_step": "classes"}
    fresh = page(params)
    assert numbers(fresh, "wrapper + out_proj, first row =") == first
    set_step(fresh, "mh_step", "heads")
    assert len(head_titles(fresh)) == 3
    fresh.session_state[f"{PREFIX}.__locked"] = {"num_heads"}
    fresh.run()
    assert fresh.selectbox(key=key(fresh, "num_heads")).disabled
