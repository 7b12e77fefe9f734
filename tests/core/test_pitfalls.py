"""Tests of the core.pitfalls package and its charts (core.viz.pitfalls): every buggy function really
shows its bug, every fix really fixes it."""

from __future__ import annotations

import contextlib
import math
from dataclasses import replace

import pytest
import torch

from core import attention, pitfalls as pf
from core.pitfalls import (config_end_id, encode_shape, fit_indent, mask_after_softmax, mask_zero,
                           module_typos, no_position, no_scaling, prep_global, sgd, short_names, slides,
                           softmax_dim, spelling, vocab_order)
from core.data import build_names_data, load_names, name_windows
from core.training import Trainer
from core.live_training import LiveTraining
from core.runs import KIND_RAW, KIND_SMOOTH, KIND_VAL
from core.models import GPT, GPTConfig, SingleHeadLM
from core.settings import from_params, to_params
from core.tokenizers import CharTokenizer
from core.viz import pitfalls as viz_pitfalls

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: a second thread only waits (tests/conftest.py)


@pytest.fixture(scope="module")
def names():
    return load_names()


@pytest.fixture(scope="module")
def tokenizer(names):
    return CharTokenizer.from_text("".join(names))


# ------------------------------------------------------------------ settings, helpers
def test_settings_round_trip_and_cross_field_rule():
    settings = pf.PitfallsSettings(pitfall="short_names", context_size=8, adamw_lr=0.01)
    params = to_params(settings)
    assert params == {"pitfall": "short_names", "context_size": "8", "adamw_lr": "0.01"}
    back, errors = from_params(pf.PitfallsSettings, params)
    assert back == settings and not errors
    bad, errors = from_params(pf.PitfallsSettings, {"pitfall": "nonsense", "adamw_lr": "0.5"})
    assert bad.pitfall == "overview" and bad.adamw_lr == 0.003 and len(errors) == 2
    # a clash sets back the field that gives way (eval_iters), never the rest of the link
    kept, errors = from_params(pf.PitfallsSettings, {"pitfall": "fit_indent", "fit_iters": "20",
                                                     "eval_iters": "50", "seed": "7"})
    assert kept == pf.PitfallsSettings(pitfall="fit_indent", fit_iters=20, seed=7)
    assert errors == ["eval_iters (50) must not exceed fit_iters (20)",
                      "so eval_iters went back from 50 to its default (10); every other setting was kept"]


def test_every_pitfall_has_a_catalogue_entry():
    assert set(pf.PITFALL_CHOICES) == {"overview"} | set(pf.PITFALLS)
    assert len(pf.PITFALLS) == 14
    for pitfall in pf.PITFALL_LIST:
        assert pitfall.title and pitfall.where and pitfall.effect and pitfall.why


def test_only_the_bugs_of_the_course_notes_are_credited_to_the_originals():
    """The known-bugs table of the course notes has twelve rows; masking after the softmax and
    leaving out √d_k are not among them (every original scales and masks before the softmax)."""
    mistakes = [p.key for p in pf.PITFALL_LIST if not p.in_originals]
    assert mistakes == ["mask_after_softmax", "no_scaling"]
    for pitfall in pf.PITFALL_LIST:
        assert pitfall.where.startswith("Not a bug of the originals") == (not pitfall.in_originals)


def test_one_module_per_pitfall_with_its_entry_and_demo():
    assert list(pf.MODULES) == [p.key for p in pf.PITFALL_LIST]
    for key, module in pf.MODULES.items():
        assert module.__name__ == f"core.pitfalls.{key}"
        assert module.PITFALL is pf.PITFALLS[key]
        assert module.__doc__ and callable(getattr(module, "demo", None)), key


def test_run_caught_returns_value_or_one_line_error():
    assert pf.run_caught(lambda: 3).value == 3
    caught = pf.run_caught(lambda: {}["x"])
    assert not caught.ok and caught.error == "KeyError: 'x'"


def test_seeded_builds_leave_the_global_rng_alone():
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    first = pf.build_seeded(123, lambda: attention.CausalAttention(3, 2, 6, 0.0))
    after = torch.rand(3)
    assert torch.equal(after, expected)
    second = pf.build_seeded(123, lambda: attention.CausalAttention(3, 2, 6, 0.0))
    assert torch.equal(first.W_query.weight, second.W_query.weight)


# ------------------------------------------------------------------ 1. softmax over dim=1
def test_softmax_over_dim1_breaks_row_sums_and_the_fix_matches_the_book():
    result = softmax_dim.demo(123)
    buggy, fixed = result["buggy_weights"], result["fixed_weights"]
    assert torch.allclose(buggy.sum(dim=0), torch.ones(6), atol=1e-6)  # columns sum to 1 ...
    assert (buggy.sum(dim=1) - 1).abs().max() > 0.5  # ... rows do not
    assert torch.allclose(fixed.sum(dim=1), torch.ones(6), atol=1e-6)
    # the fixed module reproduces document 002's printed first row
    assert result["fixed_context_row0"] == pytest.approx([-0.4519, 0.2216], abs=1e-4)
    assert result["buggy_context_row0"] != pytest.approx(result["fixed_context_row0"], abs=1e-3)
    # the fixed forward shown on the page is what core.attention.CausalAttention computes
    assert result["fixed_vs_module"] < 1e-6
    module = pf.build_seeded(123, lambda: attention.CausalAttention(3, 2, 6, 0.0)).eval()
    reference = attention.intermediates_from_module(module, attention.book_embeddings()).attn_weights[0]
    assert torch.allclose(fixed, reference.float(), atol=1e-6)


def test_buggy_causal_attention_weights_differ_from_the_module():
    module = pf.build_seeded(1, lambda: attention.CausalAttention(3, 2, 6, 0.0)).eval()
    batch = torch.stack([attention.book_embeddings()] * 2)  # (2, 6, 3)
    weights, _ = softmax_dim.buggy_causal_attention(module, batch)
    fixed = attention.intermediates_from_module(module, batch[0]).attn_weights[0]
    # normalising over the queries gives a different matrix, not a transposed copy
    assert not torch.allclose(weights[0], fixed, atol=1e-3)


# ------------------------------------------------------------------ 2. masking by == 0
def test_mask_by_zero_hides_genuine_zero_scores():
    result = mask_zero.demo()
    scores = result["attn_scores"]
    assert scores[3, 0] == 0 and scores[3, 2] == 0  # "on" with "the" and "sat": exact zeros
    assert result["n_genuine_zero"] == 2 and result["n_wrongly_hidden"] == 2
    buggy, fixed = result["buggy_weights"], result["fixed_weights"]
    assert buggy[3, 0] == 0 and buggy[3, 2] == 0
    assert fixed[3, 0] > 0.05 and fixed[3, 2] > 0.05
    # rows without a genuine zero are identical; every row of both sums to 1
    for row in (0, 1, 2, 4):
        assert torch.allclose(buggy[row], fixed[row])
    assert torch.allclose(buggy.sum(-1), torch.ones(5)) and torch.allclose(fixed.sum(-1), torch.ones(5))
    assert list(result["zero_cells"]["key"]) == ["the", "sat"]


def test_fixed_mask_by_position_matches_causal_attention():
    module = pf.build_seeded(2, lambda: attention.CausalAttention(3, 4, 6, 0.0))
    x = attention.book_embeddings()
    with torch.no_grad():
        scores = module.W_query(x) @ module.W_key(x).T / 2.0  # (6, 6), sqrt(4) = 2
    expected = attention.intermediates_from_module(module, x).attn_weights[0]
    assert torch.allclose(mask_zero.fixed_mask_by_position(scores), expected, atol=1e-6)


# ------------------------------------------------------------------ 3. masking after softmax
def test_mask_after_softmax_rows_fall_short_and_renormalising_fixes_it():
    result = mask_after_softmax.demo(789)
    sums = result["sums"].set_index(["version", "query"])["row_sum"]
    buggy = [sums[("mask after softmax", t)] for t in attention.BOOK_TOKENS]
    assert all(s < 1 - 1e-3 for s in buggy[:-1]) and buggy[-1] == pytest.approx(1.0)
    assert torch.allclose(result["renormalised_weights"], result["fixed_weights"], atol=1e-6)
    assert result["max_diff_renorm_vs_fixed"] < 1e-6


# ------------------------------------------------------------------ 4. no scaling
def test_unscaled_softmax_saturates_as_d_k_grows():
    table = no_scaling.demo(seed=123)
    raw = table[table["version"] == "no scaling (buggy)"].set_index("d_k")
    scaled = table[table["version"] == "÷ √d_k (fixed)"].set_index("d_k")
    assert raw.loc[512, "max weight"] > 0.9
    assert raw.loc[512, "entropy (nats)"] < 0.2
    assert raw.loc[512, "softmax gradient"] < 0.1
    assert raw.loc[2, "max weight"] < raw.loc[64, "max weight"] < raw.loc[512, "max weight"]
    assert raw.loc[512, "score std"] == pytest.approx(math.sqrt(512), rel=0.15)
    assert scaled["max weight"].max() < 0.5 and scaled["entropy (nats)"].min() > 1.5
    assert scaled["score std"].between(0.85, 1.15).all()
    assert table.equals(no_scaling.demo(seed=123))  # seeded
    assert not table.equals(no_scaling.demo(seed=124))


def test_softmax_jacobian_norm_and_autograd_agree_the_gradient_vanishes():
    one_hot = torch.tensor([[1.0, 0.0, 0.0, 0.0]])
    uniform = torch.full((1, 4), 0.25)
    assert no_scaling.softmax_jacobian_norm(one_hot).item() == pytest.approx(0.0)
    # diag(p) - p p^T for p = 1/4: diagonal 3/16, off-diagonal -1/16
    assert no_scaling.softmax_jacobian_norm(uniform).item() == pytest.approx(math.sqrt(4 * (3 / 16) ** 2 + 12 / 256))
    gen = torch.Generator().manual_seed(0)
    q, k = torch.randn(8, 512, generator=gen), torch.randn(8, 512, generator=gen)
    raw = no_scaling.softmax_grad_norm(q @ k.T)
    scaled = no_scaling.softmax_grad_norm(q @ k.T / math.sqrt(512))
    assert raw < scaled / 3
    assert torch.allclose(no_scaling.buggy_unscaled_weights(q, k), torch.softmax(q @ k.T, -1))
    assert torch.allclose(no_scaling.fixed_scaled_weights(q, k), torch.softmax(q @ k.T / math.sqrt(512), -1))


# ------------------------------------------------------------------ 5 and 11. windows, shapes
def test_lecture_windows_drop_short_names_and_add_a_dimension(tokenizer):
    inputs, targets = short_names.buggy_lecture_windows(["ab", "abcd"], tokenizer, 3)
    # "ab." has 3 tokens: range(0) -> nothing; "abcd." has 5: two windows
    assert len(inputs) == 2
    assert torch.tensor(inputs).shape == (2, 3, 1) and torch.tensor(targets).shape == (2, 3, 1)
    ours, _ = name_windows(["ab", "abcd"], tokenizer, 3)
    assert ours.shape == (1 + 3, 3)  # "ab" padded into one window, "abcd" slides 3 times


def test_short_names_counts_on_all_names(names, tokenizer):
    result = short_names.demo(names, tokenizer, 12)
    assert result["n_names"] == len(names) == 32_033
    # independent count: a name gives a lecture window only if len(name) + 1 > 12
    assert result["lecture_zero"] == sum(len(n) + 1 <= 12 for n in names)
    assert result["lecture_zero"] > 30_000
    assert result["our_zero"] == 0
    full_inputs, _ = short_names.buggy_lecture_windows(names, tokenizer, 12)
    assert result["lecture_windows"] == len(full_inputs)
    assert result["our_windows"] == len(name_windows(names, tokenizer, 12)[0])
    small = short_names.demo(names, tokenizer, 4)
    assert small["lecture_zero"] == sum(len(n) + 1 <= 4 for n in names) < result["lecture_zero"]


def test_encode_per_char_gives_three_dimensional_batches(names, tokenizer):
    result = encode_shape.demo(names, tokenizer, context_size=8)
    assert result["buggy_shape"] == (32, 8, 1) and result["fixed_shape"] == (32, 8)
    assert result["buggy_unpack"].error == "ValueError: too many values to unpack (expected 2)"
    assert result["fixed_unpack"].value == (32, 8)
    assert "(32, 8, 1)" in result["buggy_model"].error
    assert result["fixed_logits_shape"] == (32, 8, tokenizer.vocab_size)
    assert all(isinstance(x, list) and len(x) == 1 for x in result["buggy_first"])
    assert result["fixed_first"][0] == 0  # ours starts with "."
    assert encode_shape.demo(names, tokenizer, context_size=30)["buggy_shape"] is None


# ------------------------------------------------------------------ 6. SGD vs AdamW
def test_race_configs_differ_only_in_the_optimizer():
    sgd_run, adamw = sgd.optimizer_race_configs(200, 7, 0.003).values()
    assert (sgd_run.optimizer, sgd_run.lr, sgd_run.max_steps, sgd_run.seed) == ("sgd", 0.01, 200, 7)
    assert (adamw.optimizer, adamw.lr, adamw.weight_decay) == ("adamw", 0.003, 0.01)
    assert replace(adamw, optimizer="sgd", lr=0.01, weight_decay=0.0) == sgd_run
    assert sgd_run.model == GPTConfig()  # the lecture's architecture


def test_sgd_is_behind_adamw_after_the_same_steps():
    data = build_names_data(context_size=12)
    trainers = sgd.race_trainers(30, 101, 0.003, data)
    assert all(isinstance(t, Trainer) for t in trainers.values())
    for trainer in trainers.values():
        trainer.train()
    result = sgd.race_result(trainers)
    sgd_val, adamw_val = result["final_val"].values()
    assert sgd_val > adamw_val + 0.2
    assert result["steps"] == {label: 30 for label in trainers}
    frame = sgd.race_frame(result["histories"])
    assert set(frame["kind"]) == {KIND_RAW, KIND_SMOOTH, KIND_VAL} and set(frame["run"]) == set(trainers)
    assert frame[frame["kind"] == KIND_VAL]["step"].max() == 30
    for label, trainer in trainers.items():  # every step's loss, as the trainer recorded it
        raw = frame[(frame["run"] == label) & (frame["kind"] == KIND_RAW)]
        assert raw["loss"].tolist() == trainer.history["train_loss"] and raw["step"].tolist() == list(range(1, 31))
    model = sgd.model_from_result(result)
    assert isinstance(model, GPT)
    adamw_label = next(label for label in trainers if label.startswith("AdamW"))
    assert torch.equal(model.lm_head.weight, trainers[adamw_label].model.lm_head.weight)


def test_the_race_trains_through_the_live_training_protocol():
    race = sgd.demo(12, 101, 0.003, build_names_data(context_size=12))
    assert isinstance(race, LiveTraining) and race.key == (12, 101, 0.003) and not race.done
    outcome = race.advance(0.05)
    assert outcome.steps >= 2 and not outcome.busy  # at least one step of each optimizer
    assert race.advance(10.0, contextlib.nullcontext(False)).busy  # no slot: nothing trained
    while not race.done:
        outcome = race.advance(1.0)
    assert outcome.finished and outcome.error is None
    assert {label: len(h["steps"]) for label, h in race.history.items()} == {label: 12 for label in race.trainers}
    sgd_steps, adamw_steps = (t.history["steps"] for t in race.trainers.values())
    assert sgd_steps == adamw_steps == list(range(1, 13))
    assert not race.lock.locked()


def test_race_frame_of_empty_histories_is_empty():
    empty = {"steps": [], "train_loss": [], "val_steps": [], "val_loss": []}
    assert sgd.race_frame({"a": empty}).empty


def test_finished_races_keep_the_newest_and_find_a_seed():
    store = sgd.FinishedRaces(capacity=2)
    store.put((20, 1, 0.003), {"n": 1})
    store.put((20, 2, 0.003), {"n": 2})
    store.put((30, 1, 0.01), {"n": 3})
    assert store.get((20, 1, 0.003)) is None  # the oldest was dropped
    assert store.get((30, 1, 0.01)) == {"n": 3}
    assert store.latest_with_seed(1) == (30, 1, 0.01) and store.latest_with_seed(7) is None


# ------------------------------------------------------------------ 7. vocabulary order
def test_set_order_vocab_scrambles_a_saved_model_and_sorted_does_not(names):
    a, b = vocab_order.buggy_vocab(names, 1), vocab_order.buggy_vocab(names, 2)
    assert a[0] == b[0] == "." and sorted(a) == sorted(b) and a != b
    assert vocab_order.buggy_vocab(names, 1) == a  # the same "hash seed" gives the same order
    fixed = CharTokenizer.from_text("".join(names)).vocab
    assert vocab_order.fixed_vocab(names, 1) == vocab_order.fixed_vocab(names, 2) == fixed
    result = vocab_order.demo(names, 1, 2, seed=0)
    assert result["buggy_changed"] > 20 and result["fixed_changed"] == 0
    assert result["fixed_same_samples"] == len(result["samples"])
    assert result["buggy_same_samples"] < len(result["samples"])


def test_bigram_probs_are_rows_of_distributions(names):
    probs = vocab_order.fit_bigram_probs(names[:100], vocab_order.fixed_vocab(names, 0))
    assert probs.shape == (27, 27) and torch.allclose(probs.sum(1), torch.ones(27))
    samples = vocab_order.sample_bigram_ids(probs, 5, seed=3)
    assert samples == vocab_order.sample_bigram_ids(probs, 5, seed=3)
    assert all(0 not in ids for ids in samples)


# ------------------------------------------------------------------ 8. fit indentation
def test_fit_inside_the_if_takes_one_step_per_eval():
    result = fit_indent.demo(fit_iters=60, eval_iters=10, seed=1)
    assert result["buggy_steps"] == 6 and result["fixed_steps"] == 60
    assert result["buggy_val"] > result["fixed_val"]
    assert fit_indent.demo(25, 10, 1)["buggy_steps"] == 3  # iterations 0, 10, 20
    with pytest.raises(ValueError, match="eval_iters"):
        fit_indent.check_fit_args(10, 20)
    with pytest.raises(ValueError):
        fit_indent.demo(10, 0)


# ------------------------------------------------------------------ 9. prep and its global
def test_buggy_prep_reads_the_global_text():
    crashed = pf.run_caught(prep_global.buggy_prep, "hello world, hello class")
    assert crashed.error == "KeyError: 't'"
    corpus = "hello class! " + prep_global.text[:60]  # every character of the global text is in it
    buggy, fixed = prep_global.buggy_prep(corpus), prep_global.fixed_prep(corpus)
    assert buggy["train_text"] + buggy["val_text"] == prep_global.text != corpus
    assert fixed["train_text"] + fixed["val_text"] == corpus
    assert len(fixed["train_data"]) == int(len(corpus) * 0.9)
    demo = prep_global.demo(corpus)
    assert demo["buggy"].ok and demo["table"]["characters split"].tolist() == [str(len(prep_global.text)), str(len(corpus))]


@pytest.mark.parametrize("bad", ["", "short", "x" * (prep_global.MAX_CORPUS_CHARS + 1), None])
def test_validate_corpus_rejects_bad_input(bad):
    with pytest.raises(ValueError):
        prep_global.validate_corpus(bad)


# ------------------------------------------------------------------ 10. position embedding
def test_without_positions_the_last_output_ignores_order():
    tokenizer = CharTokenizer.from_text(slides.SLIDES_TEXT)
    model = SingleHeadLM(tokenizer.vocab_size, n_embd=32, block_size=8, head_size=16, use_position=False, seed=3)
    ids = torch.tensor([tokenizer.encode(no_position.ORDER_TEXT), tokenizer.encode(no_position._permute_prefix(no_position.ORDER_TEXT, 3))])
    with torch.no_grad():
        logits = no_position.buggy_forward_no_position(model, ids)
        assert torch.allclose(logits, model(ids)[0])
    assert (logits[0, -1] - logits[1, -1]).abs().max() < 1e-5


def test_no_position_demo_shows_the_difference():
    result = no_position.demo(seed=123, train_iters=30)
    assert sorted(result["permuted"][:-1]) == sorted(no_position.ORDER_TEXT[:-1]) and result["permuted"] != no_position.ORDER_TEXT
    buggy, fixed = result["max_logit_diff"].values()
    assert buggy < 1e-4 < 0.01 < fixed
    assert len(result["predictions"]) == 4


# ------------------------------------------------------------------ 12-14. crashes and names
def test_lecture_generate_crashes_and_core_generate_samples(tokenizer):
    result = config_end_id.demo(tokenizer, seed=5)
    assert result["first_error"] == "AttributeError: 'BuggyLectureGPT' object has no attribute 'config'"
    assert result["assert_error"] == result["first_error"]
    assert result["second_error"] == "ValueError: too many values to unpack (expected 2)"
    assert result["end_id"] == [0] and result["end_test"] is False
    assert len(result["fixed_names"]) == 4 and all("." not in n for n in result["fixed_names"])


def test_multi_head_typos_cannot_run():
    outcomes = module_typos.demo(123)["outcome"].tolist()
    assert outcomes[0].startswith("NotImplementedError") and '"forward"' in outcomes[0]
    assert outcomes[1] == "AttributeError: module 'torch.nn' has no attribute 'Liner'"
    assert outcomes[2].startswith("RuntimeError: mat1 and mat2 shapes cannot be multiplied")
    assert outcomes[3] == "ran: output shape (2, 6, 4)"


def test_spelling():
    result = spelling.demo()
    assert result["attention_classes"] == ["CausalSelfAttention"]
    assert result["buggy_error"] == "AttributeError: module 'core.models' has no attribute 'CasualSelfAttention'"
    assert result["fixed_class"] == "CausalSelfAttention"


# ------------------------------------------------------------------ charts
def test_chart_builders_carry_the_numbers():
    sums = softmax_dim.demo(123)["sums"]
    chart = viz_pitfalls.row_sums_chart(sums).to_dict()
    assert len(chart["layer"]) == 3
    bars = next(iter(chart["datasets"].values()))
    for version, group in sums.groupby("version"):
        assert [row["value"] for row in bars if row["kind"] == version] == pytest.approx(list(group["row_sum"]))
    result = softmax_dim.demo(123)
    weights = viz_pitfalls.heatmap_row([(result["buggy_weights"], "buggy"), (result["fixed_weights"], "fixed")],
                                       result["tokens"]).to_dict()
    cells = next(iter(weights["datasets"].values()))
    assert len(cells) == 2 * 36 and weights["spec"]["layer"][0]["encoding"]["color"]["condition"]["scale"]["domain"] == [0, 1]
    buggy_cells = [c["value"] for c in cells if c["facet"].startswith("buggy")]
    assert buggy_cells == pytest.approx(result["buggy_weights"].flatten().tolist())
    figure = viz_pitfalls.scaling_figure(no_scaling.demo(seed=1)).to_dict()
    assert len(figure["concat"]) == 3 and figure["columns"] == 2
    names = load_names()
    table = short_names.demo(names, CharTokenizer.from_text("".join(names)), 12)["table"]
    lengths = viz_pitfalls.names_length_chart(table).to_dict()
    data = next(iter(lengths["datasets"].values()))
    dropped = sum(row["names"] for row in data if row["lecture windowing"].startswith("gives no"))
    assert dropped == sum(len(n) + 1 <= 12 for n in names)
