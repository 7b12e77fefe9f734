"""The words follow the state: on every step of the walkthrough pages, each caption, chart title,
formula and sentence agrees with the current toggles (causal mask, dropout p, training mode,
number of heads, d_out, same initial weights, W_q/W_k scale). Each test switches one setting and
reads every step: no claim that is false for the setting, and the claim that is true for it."""

from __future__ import annotations

import pytest

from core import settings as core_settings
from core.lessons import walkthrough as wt
from core.lessons.walkthrough import WalkthroughSettings
from tests.app.conftest import assert_no_exception
from tests.app.walkthrough_helpers import open_walk
from tests.helpers import chart_rows, chart_titles

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: a second thread only waits (tests/conftest.py)

CAUSAL, MULTI, SELF = "pages/3_causal_attention.py", "pages/4_multi_head.py", "pages/2_self_attention.py"

# claims that hold only while the causal mask is on
MASK_CLAIMS = ("above the diagonal", "Masked softmax", "masked_fill", "Hidden scores", "−∞", r"-\infty",
               "after masking", "only look at tokens", "hidden by the mask", "mask on")

# claims that hold only while dropout acts (training mode and p > 0)
DROPOUT_CLAIMS = ("✕ = dropped", "were dropped", "weights after dropout", "multiplied by",
                  "Rows no longer sum", r"Z = \text{dropout}(A)", "Dropout either dropped",
                  "before dropout", "(training, seed")


def step_texts(at) -> str:
    """Every sentence, caption, formula, notice and chart title the run shows, except the page's
    introduction (a general description of the lesson, the same whatever the settings)."""
    parts = [el.value for kind in ("markdown", "caption", "latex", "info", "warning", "success", "error")
             for el in getattr(at, kind) if not str(el.value).startswith("Lesson ")]
    return "\n".join(map(str, parts + chart_titles(at)))


def each_step(page: str, field: str, steps, **settings):
    """(step, texts, the app) for every step of `page`, opened with `settings` in its link."""
    for step in steps:
        params = core_settings.to_params(WalkthroughSettings(**{field: step, **settings}))
        at = open_walk(page, params)
        assert_no_exception(at)
        yield step, step_texts(at), at


def assert_says(text: str, wanted: tuple[str, ...], where: str) -> None:
    for phrase in wanted:
        assert phrase in text, f"{where}: “{phrase}” missing"


def assert_never_says(text: str, claims: tuple[str, ...], where: str) -> None:
    for phrase in claims:
        assert phrase not in text, f"{where}: says “{phrase}”, false for these settings"


# ----------------------------------------------------------------------------- page 3, the mask
def test_mask_off_no_step_claims_a_mask():
    for step, text, at in each_step(CAUSAL, "causal_step", wt.CAUSAL_STEPS, causal=False):
        if step == "order":  # this step compares mask positions, always with the mask (it says so)
            assert "always with the causal mask here" in text
            continue
        assert_never_says(text, MASK_CLAIMS, f"mask off, step {step}")
        rows = chart_rows(at)
        if "label" in rows:
            assert not rows["label"].astype(str).str.contains("−∞").any(), step
    _, text, _ = next(each_step(CAUSAL, "causal_step", ["mask"], causal=False))
    assert "The mask is off" in text and r"M_{ij} = 0 \text{ for every } i, j" in text
    assert r"\text{ (a later token: hide)}" not in text


EXPECTED_WITH_MASK = {
    "scores": ("before the mask is applied",),
    "mask": ("above the diagonal: token i may only look at tokens 1 … i", "(a later token: hide)"),
    "masked": ("masked_fill(mask, −∞)", "Hidden scores are −∞", r"-\infty"),
    "weights": ("Masked softmax: zeros above the diagonal", "A = softmax(masked scores)"),
    "dropout": ("0 = hidden by the mask",),
    "context": ("can only attend to itself, so its context vector is its own value vector",),
}


@pytest.mark.parametrize("step", sorted(EXPECTED_WITH_MASK))
def test_mask_on_each_step_says_so(step):
    _, text, _ = next(each_step(CAUSAL, "causal_step", [step], causal=True))
    assert_says(text, EXPECTED_WITH_MASK[step], f"mask on, step {step}")
    assert "The mask is off" not in text


# ----------------------------------------------------------------------------- page 3, dropout
@pytest.mark.parametrize("settings, reason", [
    ({"train_mode": False, "dropout_p": 0.5}, "Eval mode"),
    ({"train_mode": True, "dropout_p": 0.0}, "p = 0: nothing is dropped"),
])
def test_dropout_inactive_no_step_claims_dropped_weights(settings, reason):
    for step, text, at in each_step(CAUSAL, "causal_step", wt.CAUSAL_STEPS, **settings):
        assert_never_says(text, DROPOUT_CLAIMS, f"{settings}, step {step}")
        if step == "dropout":
            assert reason in text and "unchanged by dropout" in text
            assert "✕" not in set(chart_rows(at)["label"].astype(str))
        if step == "context":
            assert r"Z = A\, V" in text


def test_dropout_active_is_named_where_it_acts():
    settings = {"train_mode": True, "dropout_p": 0.5, "dropout_seed": 3}
    texts = {step: (text, at) for step, text, at in
             each_step(CAUSAL, "causal_step", ["weights", "dropout", "context"], **settings)}
    assert "every row sums to 1 (before dropout, the next steps drop some)" in texts["weights"][0]
    text, at = texts["dropout"]
    assert_says(text, ("weights after dropout", "✕ = dropped by dropout", "visible weights were dropped",
                       "1/(1 − p) = **2.0000**"), "dropout step")
    assert "✕" in set(chart_rows(at)["label"].astype(str))
    text, _ = texts["context"]
    assert_says(text, (r"Z = \text{dropout}(A)", "Dropout either dropped that weight",
                       "1/(1 − p) = 2.0000"), "context step")
    assert "so its context vector is its own value vector" not in text


def test_mask_off_with_dropout():
    settings = {"causal": False, "train_mode": True, "dropout_p": 0.5}
    for step, text, _ in each_step(CAUSAL, "causal_step", ["dropout", "context"], **settings):
        assert_never_says(text, ("hidden by the mask", "can only attend to itself"), step)
    assert "mixes all the value vectors" in text


def test_d_out_is_the_one_in_use():
    for step, text, _ in each_step(CAUSAL, "causal_step", ["scores", "context"], d_out=3):
        assert "d_out 3" in text and "d_out 2" not in text, step
    _, text, _ = next(each_step(SELF, "sa_step", ["qkv"], d_out=3))
    assert r"(6 \times 3)" in text and "d_out 3" in text


# ----------------------------------------------------------------------------- page 2, hand-edited weights
def test_hand_edited_weights_are_not_called_seeded():
    W = [[0.5, -0.5]] * 3
    _, text, _ = next(each_step(SELF, "sa_step", ["weights"], custom_weights=[W, W, W]))
    assert "edited by hand" in text and "torch.rand(d_in, d_out)" not in text
    _, text, _ = next(each_step(SELF, "sa_step", ["weights"]))
    assert "torch.rand(d_in, d_out)" in text and "edited by hand" not in text


# ----------------------------------------------------------------------------- page 4, heads
def test_one_head_is_one_head():
    for step, text, _ in each_step(MULTI, "mh_step", wt.MULTI_STEPS, num_heads=1):
        assert "1 heads" not in text and "heads × head_dim" not in text, step
        # "classes" compares three implementations; "why" needs 2 heads and says so
        assert "1 head of head_dim 4 = d_out 4" in text or step in ("classes", "why"), step
    assert "Choose at least 2 heads" in text


def test_four_heads_and_d_out():
    for step, text, _ in each_step(MULTI, "mh_step", ["heads", "concat"], num_heads=4, heads_d_out=8):
        assert "4 heads × head_dim 2 = d_out 8" in text, step
    assert r"4 \times (6 \times 2)" in text


def test_multi_head_mask_and_dropout():
    for step, text, _ in each_step(MULTI, "mh_step", ["heads", "concat"], causal=False):
        assert "mask off" in text and "mask on" not in text, step
    for step, text, _ in each_step(MULTI, "mh_step", ["heads", "concat"], train_mode=False,
                                   dropout_p=0.5):
        assert_never_says(text, DROPOUT_CLAIMS, f"eval mode, step {step}")
    _, text, _ = next(each_step(MULTI, "mh_step", ["heads"], train_mode=True, dropout_p=0.5))
    assert "(before dropout;" in text and "dropout p=0.5 (training, seed 0)" in text


def test_why_heads_differ_follows_same_init_and_scale():
    _, text, _ = next(each_step(MULTI, "mh_step", ["why"], same_init=True))
    assert "**Same initial weights** is on" in text and "drawn at random, so each head" not in text
    assert "head 2: 0.0000" in text
    _, text, _ = next(each_step(MULTI, "mh_step", ["why"]))
    assert "drawn at random, so each head" in text and "multiplied by 4" in text
    assert "W_q, W_k × 4" in text
    _, text, _ = next(each_step(MULTI, "mh_step", ["why"], qk_scale=1))
    assert "the book's initial weights (scale 1)" in text and "W_q, W_k ×" not in text
