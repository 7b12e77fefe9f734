"""AppTest of the Pitfalls page: every bug's number on screen, the controls, bad input, URL round trip."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pyarrow as pa
import pytest

from core import pitfalls as pf
from core.pitfalls import no_scaling, prep_global
from core.data import load_names
from core.settings import to_params
from tests.app.conftest import assert_no_exception, open_page
from tests.helpers import codes, metrics, shown

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: a second thread only waits (tests/conftest.py)

PAGE = "pages/10_pitfalls.py"


def open_pitfall(key: str, **query: str):
    at = open_page(PAGE, query={"pitfall": key, **query})
    assert_no_exception(at)
    return at


def chart_tables(at) -> list[pd.DataFrame]:
    """The data of every chart on the page (Arrow datasets behind the Vega-Lite specs)."""
    tables = []
    for el in at.get("arrow_vega_lite_chart") + at.get("vega_lite_chart"):
        for ds in el.proto.datasets:
            tables.append(pa.ipc.open_stream(ds.data.data).read_pandas())
    return tables


def number_box(at, label: str):
    return next(w for w in at.text_input if w.label == label)


# ------------------------------------------------------------------ overview and navigation
def test_default_overview_lists_every_pitfall_with_numbers():
    at = open_page(PAGE)
    assert_no_exception(at)
    assert at.selectbox[0].value == "overview"
    opens = [b for b in at.button if b.label == "Open"]
    assert len(opens) == len(pf.PITFALLS) == 14
    text = " ".join(m.value for m in at.markdown)
    names = load_names()
    lecture_zero = sum(len(n) + 1 <= 12 for n in names)
    assert f"{lecture_zero:,} of {len(names):,} names give no example (ours: 0)" in text
    assert "26 of 26 ids change after a restart" in text
    # the two common mistakes are not passed off as the originals' bugs
    assert "12 of the pitfalls below are those bugs; the other 2 are common mistakes" in text
    assert text.count("Not a bug of the originals but a common mistake") == 2


def test_open_and_next_buttons_switch_pitfall():
    at = open_page(PAGE)
    next(b for b in at.button if b.key == "pitfalls.open.mask_zero").click().run()
    assert_no_exception(at)
    assert at.session_state["pitfalls"].pitfall == "mask_zero"
    assert at.selectbox[0].value == "mask_zero"
    next(b for b in at.button if b.label == "Next").click().run()
    assert at.session_state["pitfalls"].pitfall == "mask_after_softmax"
    next(b for b in at.button if b.label == "Back").click().run()
    next(b for b in at.button if b.label == "Back").click().run()
    assert at.session_state["pitfalls"].pitfall == "softmax_dim"
    assert_no_exception(at)


@pytest.mark.parametrize("key", pf.PITFALL_CHOICES)
def test_every_pitfall_opens_from_its_link(key):
    at = open_pitfall(key)
    assert at.selectbox[0].value == key
    if key != "overview":
        assert at.header[0].value == pf.PITFALLS[key].title
        assert any("Why:" in i.value for i in at.info)
        assert len(at.code) >= 2  # the buggy and the fixed source


# ------------------------------------------------------------------ each bug's number
def test_softmax_dim_rows_do_not_sum_to_one():
    at = open_pitfall("softmax_dim")
    # "to", not "…": a value cut at a narrow width also ends in "…"
    low, high = (float(x) for x in metrics(at)["Row sums, buggy"].split(" to "))
    assert low < 0.5 and high > 1.5
    assert metrics(at)["Context of “Your” (2,)"] == "[-0.4519, 0.2216]"
    sums = next(t for t in chart_tables(at) if "kind" in t.columns)  # the row-sum bars, one kind per version
    buggy = sums[sums["kind"] == "buggy dim=1"]["value"]
    fixed = sums[sums["kind"] == "fixed dim=-1"]["value"]
    assert (buggy - 1).abs().max() > 0.5 and (fixed - 1).abs().max() < 1e-6
    number_box(at, "Seed").input("7").run()
    assert metrics(at)["Context of “Your” (2,)"] != "[-0.4519, 0.2216]"


def test_mask_zero_hides_a_genuine_zero_score():
    at = open_pitfall("mask_zero")
    assert metrics(at)["Visible positions the buggy mask hides"] == "2"
    cells = at.dataframe[1].value
    assert list(cells["score"]) == [0.0, 0.0]
    assert list(cells["buggy weight"]) == [0.0, 0.0]
    assert (cells["fixed weight"] > 0.05).all()


def test_mask_after_softmax_rows_fall_short_without_renormalising():
    at = open_pitfall("mask_after_softmax", seed="789")
    low, high = (float(x) for x in metrics(at)["Row sums, mask after softmax"].split(" to "))
    assert low < 0.9 and high == pytest.approx(1.0)
    assert float(metrics(at)["Largest |renormalised − masked before|"]) < 1e-6
    sums = next(t for t in chart_tables(at) if "kind" in t.columns)  # the row-sum bars, one kind per version
    assert (sums[sums["kind"] == "mask after softmax"]["value"] < 0.999).sum() == 5


def test_no_scaling_max_weight_goes_to_one():
    at = open_pitfall("no_scaling")
    assert float(metrics(at)["Max weight at d_k = 512"]) > 0.9
    assert float(metrics(at)["Entropy at d_k = 512 (nats)"]) < 0.2
    assert float(metrics(at)["Softmax gradient at d_k = 512"]) < 0.1
    table = next(t for t in chart_tables(at) if "d_k" in t.columns)
    assert sorted(set(table["d_k"])) == list(no_scaling.SCALING_DKS)


def test_short_names_zero_examples_lecture_vs_ours():
    names = load_names()
    at = open_pitfall("short_names")
    values = metrics(at)
    assert values[f"Names with no example, lecture (of {len(names):,})"] == \
        f"{sum(len(n) + 1 <= 12 for n in names):,}"
    assert values[f"Names with no example, ours (of {len(names):,})"] == "0"
    at.slider[0].set_value(4).run()
    assert_no_exception(at)
    assert metrics(at)[f"Names with no example, lecture (of {len(names):,})"] == \
        f"{sum(len(n) + 1 <= 4 for n in names):,}"
    assert at.session_state["pitfalls"].context_size == 4


def test_sgd_vs_adamw_trains_on_demand_and_sgd_is_behind():
    at = open_pitfall("sgd")
    number_box(at, "Steps per optimizer").input("20").run()
    number_box(at, "Seed").input("4242").run()  # a setting no other test has trained
    assert any("Press **Train both**" in i.value for i in at.info)
    next(b for b in at.button if b.key == "pitfalls.race_start").click().run()
    assert_no_exception(at)
    def finished(app) -> bool:
        return any("whole validation split" in m.value for m in app.markdown)

    for _ in range(60):  # AppTest runs the fragment once per run: advance the race by rerunning
        if finished(at):
            break
        at.run()
        assert_no_exception(at)
    assert finished(at)
    values = metrics(at)
    sgd, adamw = float(values["SGD lr 0.01 (lecture)"]), float(values["AdamW lr 0.003"])
    assert sgd > adamw
    assert float(values["SGD − AdamW"]) == pytest.approx(sgd - adamw, abs=2e-3)
    curves = next(t for t in chart_tables(at) if "run" in t.columns)  # the loss curves, one run per optimizer
    assert curves["step"].max() == 20 and curves["run"].nunique() == 2
    # the finished race is kept: reopening the page shows it without training again
    again = open_pitfall("sgd", optim_steps="20", seed="4242")
    assert finished(again) and metrics(again) == values
    assert not any(b.key == "pitfalls.race_start" for b in again.button)


def test_vocab_order_changes_ids_only_for_the_set_vocabulary():
    at = open_pitfall("vocab_order")
    assert metrics(at)["Characters whose id changed: buggy"] == "26 of 26"
    assert metrics(at)["Characters whose id changed: fixed"] == "0 of 26"
    assert metrics(at)["Samples unchanged after the restart: fixed"] == "8 of 8"
    samples = at.dataframe[0].value  # one row per (vocabulary, sample)
    buggy, fixed = (samples[samples["vocabulary"] == v] for v in ("buggy", "fixed"))
    assert len(buggy) == len(fixed) == 8
    assert (buggy["decoded in run A"] != buggy["decoded in run B"]).all() and not buggy["same"].any()
    assert (fixed["decoded in run A"] == fixed["decoded in run B"]).all() and fixed["same"].all()
    number_box(at, "Hash seed of the run that loads").input("1").run()
    assert metrics(at)["Characters whose id changed: buggy"] == "0 of 26"
    assert any("same hash seed" in i.value for i in at.info)


def test_fit_indent_counts_optimizer_steps_and_rejects_bad_counts():
    at = open_pitfall("fit_indent", fit_iters="50", eval_iters="10")
    assert metrics(at)["Optimizer steps: buggy"] == "5"
    assert metrics(at)["Optimizer steps: fixed"] == "50"
    number_box(at, "eval_iters").input("25").run()
    assert metrics(at)["Optimizer steps: buggy"] == "2"
    number_box(at, "eval_iters").input("80").run()  # more than train_iters
    assert_no_exception(at)
    assert any("eval_iters (80) must be between 1 and train_iters (50)" in e.value for e in at.error)
    assert metrics(at)["Optimizer steps: buggy"] == "20"  # the defaults are shown instead


def test_prep_global_crashes_or_uses_the_wrong_text_and_bad_corpus_keeps_the_last():
    at = open_pitfall("prep_global")
    assert "KeyError: 't'" in codes(at)
    corpus = "our class notes. " + prep_global.text[:50]
    at.text_area[0].input(corpus).run()
    assert_no_exception(at)
    values = metrics(at)
    assert values["Characters the buggy prep split"] == str(len(prep_global.text))
    assert values["Characters the fixed prep split"] == str(len(corpus))
    assert any("ran without an error" in w.value for w in at.warning)
    at.text_area[0].input("tiny").run()
    assert_no_exception(at)
    assert any("at least 10 characters" in e.value for e in at.error)
    assert metrics(at)["Characters the fixed prep split"] == str(len(corpus))  # last valid corpus


def test_no_position_last_output_is_order_blind():
    at = open_pitfall("no_position")
    values = metrics(at)
    assert float(values["Largest change of the last logits: no positions"]) < 1e-4
    assert float(values["… with a position embedding"]) > 0.01


def test_encode_shape_and_crash_messages():
    at = open_pitfall("encode_shape")
    assert metrics(at)["Batch of inputs: lecture"] == "(32, 12, 1)"
    assert metrics(at)["Batch of inputs: ours"] == "(32, 12)"
    assert "too many values to unpack (expected 2)" in codes(at)
    at.slider[0].set_value(30).run()
    assert_no_exception(at)
    assert any("No name is longer than this context" in w.value for w in at.warning)


def test_config_and_module_typos_show_the_caught_errors():
    at = open_pitfall("config_end_id")
    text = codes(at)
    assert "AttributeError: 'BuggyLectureGPT' object has no attribute 'config'" in text
    assert "Traceback" not in text
    at = open_pitfall("module_typos")
    text = codes(at)
    assert 'missing the required "forward" function' in text
    assert "module 'torch.nn' has no attribute 'Liner'" in text
    assert "mat1 and mat2 shapes cannot be multiplied" in text
    assert "ran: output shape (2, 6, 4)" in text


def test_spelling():
    at = open_pitfall("spelling")
    assert "module 'core.models' has no attribute 'CasualSelfAttention'" in codes(at)
    assert "<class 'CausalSelfAttention'>" in codes(at)


def test_widgets_take_their_label_and_bounds_from_the_settings_spec():
    rules = {f.name: f.metadata for f in dataclasses.fields(pf.PitfallsSettings)}
    at = open_pitfall("fit_indent")
    for field in ("fit_iters", "eval_iters", "seed"):
        widget = number_box(at, rules[field]["label"])
        low, high = rules[field]["min"], rules[field]["max"]
        assert f"a whole number from {low:,} to {high:,}" in widget.help, field
    slider = open_pitfall("short_names").slider[0]
    assert slider.label == rules["context_size"]["label"]
    assert (slider.min, slider.max) == (rules["context_size"]["min"], rules["context_size"]["max"])


# ------------------------------------------------------------------ URL, bad links, lessons
def test_url_round_trip_reproduces_the_numbers():
    at = open_pitfall("short_names")
    at.slider[0].set_value(9).run()
    first = metrics(at)
    params = to_params(at.session_state["pitfalls"])
    assert params == {"pitfall": "short_names", "context_size": "9"}
    again = open_page(PAGE, query=params)
    assert_no_exception(again)
    assert metrics(again) == first


def test_bad_link_values_fall_back_with_a_notice():
    at = open_page(PAGE, query={"pitfall": "no_such_bug", "context_size": "999"})
    assert_no_exception(at)
    assert at.selectbox[0].value == "overview"
    notice = shown(" ".join(w.value for w in at.warning))
    assert "pitfall" in notice and "context_size" in notice


def test_a_link_with_eval_iters_over_fit_iters_keeps_its_other_fields_with_a_notice():
    at = open_pitfall("fit_indent", fit_iters="50", eval_iters="80", seed="7")
    assert at.selectbox[0].value == "fit_indent"  # the link still opens its pitfall
    boxes = (number_box(at, "train_iters").value, number_box(at, "eval_iters").value, number_box(at, "Seed").value)
    assert boxes == ("50", "10", "7")
    notice = shown(" ".join(w.value for w in at.warning))
    assert "eval_iters (80) must not exceed fit_iters (50)" in notice
    assert "eval_iters went back from 80 to its default (10); every other setting was kept" in notice
    assert not at.error and metrics(at)["Optimizer steps: buggy"] == "5"  # the link's 50 iterations


def test_a_blocked_fit_never_reaches_the_link():
    at = open_pitfall("fit_indent", fit_iters="50", eval_iters="25")
    number_box(at, "eval_iters").input("80").run()  # more than train_iters: blocked, with a message
    assert_no_exception(at)
    assert at.error
    assert (at.query_params.get("fit_iters"), at.query_params.get("eval_iters")) == ("50", "25")


def test_a_lesson_lock_disables_the_pitfall_menu():
    at = open_pitfall("vocab_order")
    # what a loaded lesson with locked=["pitfall"] leaves in the session (ui.state.replace_settings)
    at.session_state["pitfalls.__locked"] = {"pitfall"}
    at.run()
    assert_no_exception(at)
    assert at.selectbox[0].disabled
    next(b for b in at.button if b.label == "Next").click().run()
    assert at.session_state["pitfalls"].pitfall == "vocab_order"  # a locked field cannot move
