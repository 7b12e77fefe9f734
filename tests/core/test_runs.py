"""core/runs.py, core/train_settings.py, core/lessons/{sample_names,inside_model}.py and their charts:
settings <-> configs, runs trained in slices, labels, loss curves, checkpoints, the Sample and
Inside-the-model computations."""

import io
import math

import numpy as np
import pandas as pd
import pytest
import torch

from core import budget, runs, settings as core_settings, train_settings
from core.lessons import inside_model, sample_names
from core.viz import names_model as names_charts, training as training_charts
from core.checkpoints import CheckpointError
from core.training import PRESETS, TrainingError
from core.tokenizers import CharTokenizer

pytestmark = pytest.mark.usefixtures("one_thread")


TINY = dict(context_size=8, n_layer=1, n_head=2, d_embed=16, d_ff=32, batch_size=16,
            max_steps=30, val_interval=10, warmup_steps=0)


def tiny(**changes) -> train_settings.TrainSettings:
    return train_settings.TrainSettings(**{**TINY, **changes})


def trained(steps: int = 30, **changes) -> runs.Run:
    book = runs.RunBook(owner="test")
    run = book.create(tiny(max_steps=steps, **changes))
    runs.start(run)
    while run.active:
        run.advance(5.0)
    return run


# ------------------------------------------------------------------------------ settings


def test_lecture_preset_has_the_documents_values():
    s = train_settings.preset_settings("lecture")
    assert (s.context_size, s.n_layer, s.n_head, s.d_embed, s.d_ff) == (12, 3, 4, 64, 256)
    assert (s.dropout, s.batch_size, s.max_steps, s.lr, s.val_interval, s.seed) == (0.1, 32, 1000, 0.01, 100, 101)
    assert s.optimizer == "sgd" and s.causal


@pytest.mark.parametrize("name", list(PRESETS))
def test_presets_round_trip_to_the_engine_config(name):
    config = train_settings.to_train_config(train_settings.preset_settings(name))
    assert config == PRESETS[name]()


def test_page_opens_on_the_quick_demo_and_recognises_presets():
    assert train_settings.matching_preset(train_settings.TrainSettings()) == "quick_demo"
    assert train_settings.matching_preset(train_settings.preset_settings("best")) == "best"
    assert train_settings.matching_preset(train_settings.TrainSettings(lr=0.02)) is None


def test_heads_must_divide_d_embed_and_bad_links_fall_back():
    assert train_settings.settings_problems(train_settings.TrainSettings(d_embed=64, n_head=5))
    with pytest.raises(ValueError, match="divisible"):
        train_settings.to_train_config(train_settings.TrainSettings(d_embed=64, n_head=5))
    obj, errors = core_settings.from_params(train_settings.TrainSettings, {"d_embed": "64", "n_head": "5"})
    assert obj == train_settings.TrainSettings() and errors
    obj, errors = core_settings.from_params(train_settings.TrainSettings, {"lr": "banana", "optimizer": "sgd"})
    assert obj.optimizer == "sgd" and obj.lr == train_settings.TrainSettings().lr and errors


def test_settings_survive_the_url():
    s = tiny(causal=False, optimizer="sgd", lr=0.05, device="cuda")
    back, errors = core_settings.from_params(train_settings.TrainSettings, core_settings.to_params(s))
    assert back == s and not errors


def test_oversized_runs_are_refused_with_the_reason():
    limits = budget.Limits(hosted=True, torch_threads=1, max_concurrent=1, max_steps=100, max_params=2_000)
    with pytest.raises(ValueError, match="too large.*parameters"):
        runs.new_run(1, tiny(), limits=limits)
    with pytest.raises(ValueError, match="steps"):
        runs.new_run(1, train_settings.TrainSettings(**{**TINY, "d_embed": 4, "n_head": 1, "d_ff": 4,
                                              "max_steps": 500}), limits=limits)


def test_device_options_offer_only_what_exists_and_explain_the_rest():
    offered, absent = runs.device_options()
    assert offered[:2] == ["auto", "cpu"]
    assert set(offered[1:]) | set(absent) == {"cpu", "cuda", "mps"}
    for name in absent:
        assert runs.device_notice(name) and "CPU" in runs.device_notice(name)
    assert runs.device_notice("cpu") is None


def test_model_structure_counts_every_parameter():
    config = train_settings.to_train_config(train_settings.preset_settings("lecture"))
    n_params, text, parts = runs.model_structure(config)
    assert n_params == config.model.num_params() == parts["parameters"].sum()
    assert "DecoderLayer" in text and "layer 3: attention" in set(parts["part"])
    assert math.isclose(parts["share"].sum(), 1.0)


# ------------------------------------------------------------------------------ runs


def test_a_run_advances_in_slices_and_refreshes_samples_at_validation():
    from core.live_training import LiveTraining

    book = runs.RunBook(owner="t")
    run = book.create(tiny())
    assert isinstance(run, LiveTraining)  # the one live-training protocol
    assert run.status == "idle" and run.step == 0 and not run.done
    assert run.advance(1.0).steps == 0  # idle: nothing happens
    runs.start(run)
    outcome = run.advance(5.0)
    assert outcome.steps == 30 and outcome.finished and run.status == "done" and run.done
    assert [s for s, _ in outcome.val_points] == [10, 20, 30]
    assert run.samples_step == 30 and len(run.samples) == runs.N_LIVE_SAMPLES
    assert run.steps_per_s > 0 and run.tokens_per_s > run.steps_per_s


def test_pause_stop_resume_and_extend():
    run = runs.RunBook(owner="t").create(tiny(max_steps=200))
    runs.start(run)
    first = run.trainer.train(n_steps=5)
    assert first.steps == 5
    runs.pause(run)
    assert run.advance(1.0).steps == 0 and run.step == 5
    runs.start(run)
    assert run.status == "running"
    runs.stop(run)
    assert run.status == "stopped" and run.advance(1.0).steps == 0
    finished = trained(10)
    with pytest.raises(ValueError, match="already did"):
        runs.start(finished)
    runs.extend(finished, 5)
    assert finished.status == "paused" and finished.max_steps == 15
    runs.start(finished)
    finished.advance(5.0)
    assert finished.step == 15 and finished.status == "done"


def test_slicing_does_not_change_the_run():
    """Trained in tiny slices with pauses in between, a run gives exactly the losses of one
    uninterrupted run: a rerun or a page switch cannot change what the students see."""
    a = runs.RunBook(owner="a").create(tiny(dropout=0.1))
    b = runs.RunBook(owner="b").create(tiny(dropout=0.1))
    runs.start(a)
    a.advance(10.0)
    runs.start(b)
    slices = 0
    while b.active:
        b.advance(None, n_steps=1)  # one step per slice
        slices += 1
        if b.active:
            runs.pause(b)
            runs.start(b)
    assert slices == 30 and a.status == b.status == "done"
    assert a.history["train_loss"] == b.history["train_loss"]
    assert a.history["val_loss"] == b.history["val_loss"]


def test_a_busy_slot_does_nothing_and_says_so():
    slots = budget.TrainingSlots(1)
    run = runs.RunBook(owner="waiting").create(tiny())
    runs.start(run)
    with slots.slot("someone-else") as got:
        assert got
        outcome = run.advance(1.0, slot=slots.slot("waiting", timeout=0.01))
    assert outcome.busy and outcome.steps == 0 and run.step == 0
    assert slots.position("waiting") == 0  # first in line now
    assert run.advance(1.0, slot=slots.slot("waiting")).steps > 0


def test_a_diverging_run_stops_with_a_message(monkeypatch):
    run = runs.RunBook(owner="t").create(tiny())
    runs.start(run)

    def diverge(**kwargs):
        raise TrainingError("training stopped at step 1: the loss became nan (diverged). "
                            "Try a smaller learning rate (now 10).")

    monkeypatch.setattr(run.trainer, "train", diverge)
    outcome = run.advance(1.0)
    assert outcome.finished and run.status == "error" and not run.active
    assert "diverged" in run.message and "learning rate" in run.message


def train_to_the_end(run: runs.Run) -> runs.Run:
    runs.start(run)
    while run.active:
        run.advance(5.0)
    return run


def test_a_diverged_run_trains_on_from_its_last_good_step_with_a_smaller_learning_rate():
    run = runs.RunBook(owner="t").create(tiny(lr=0.004, schedule="constant"))
    original, calls = run.model.forward, {"n": 0}

    def forward(*args, **kwargs):  # the training forward pass of step 7 returns a NaN loss
        logits, loss = original(*args, **kwargs)
        calls["n"] += run.model.training
        return logits, (loss * float("nan") if run.model.training and calls["n"] == 7 else loss)

    run.model.forward = forward
    train_to_the_end(run)
    assert run.status == "error" and run.step == 6 and "step 7" in run.message
    with pytest.raises(ValueError, match="lr must be at least"):
        runs.extend(run, 10, lr=0.0)
    assert run.status == "error" and run.trainer.config.lr == 0.004  # a refused lr changes nothing
    runs.extend(run, 10, lr=0.002)
    assert run.status == "paused" and run.message == "" and not run.done
    assert run.settings.lr == 0.002 and run.max_steps == 16
    train_to_the_end(run)
    assert run.status == "done" and run.step == 16
    assert run.history["lr"][-1] == 0.002 and all(math.isfinite(v) for v in run.history["train_loss"])


def test_a_run_that_kept_its_best_weights_says_so_and_its_checkpoint_too(monkeypatch):
    run = runs.RunBook(owner="t").create(tiny(restore_best=True))
    scripted = {10: 2.0, 20: 2.5, 30: 2.6}  # the lowest validation loss at step 10
    monkeypatch.setattr(run.trainer, "evaluate", lambda split="val", max_batches=None: scripted[run.step])
    train_to_the_end(run)
    assert run.step == 30 and run.trainer.weights_step == 10
    note = runs.weights_note(run)
    assert "from step 10" in note and "2.000" in note and "step 30" in note and "2.600" in note
    uploaded = runs.run_from_checkpoint(runs.run_to_checkpoint(run))
    assert uploaded.trainer.weights_step == 10 and runs.weights_note(uploaded) == note
    for mine, theirs in zip(uploaded.model.parameters(), run.model.parameters()):
        assert torch.equal(mine, theirs)
    assert runs.weights_note(trained(2)) is None
    labels = runs.run_labels([tiny(restore_best=True), tiny()])
    assert labels == ["#1 best weights kept", "#2 last weights"]


def test_runbook_keeps_a_bounded_history_and_one_active_run():
    book = runs.RunBook(owner="t")
    first = book.create(tiny())
    runs.start(first)
    second = book.create(tiny(lr=0.003))
    assert first.status == "paused" and book.current is second  # one run trains at a time
    for i in range(runs.MAX_RUNS + 2):
        book.create(tiny(seed=i))
    assert len(book.runs) == runs.MAX_RUNS and book.current.run_id == book.next_id - 1
    book.remove(book.current_id)
    assert book.current is book.runs[-1]
    book.clear_others()
    assert len(book.runs) == 1


def test_beyond_the_limit_an_untrained_run_goes_first_and_a_trained_one_is_named():
    """A student's trained model is not let go while an untrained run can go instead; when one must
    go, `dropped` names it (the Train page says so)."""
    book = runs.RunBook(owner="t")
    keeper = trained(3)
    book.add(keeper)
    for i in range(runs.MAX_RUNS + 3):  # untrained runs: Start pressed, nothing trained yet
        book.create(tiny(seed=i))
        assert book.dropped == []
    assert keeper in book.runs and len(book.runs) == runs.MAX_RUNS
    for run in book.runs:  # now every run kept has trained a step
        if run.step == 0:
            run.trainer.train(n_steps=1)
    label = keeper.label
    assert book.next_to_go() is keeper  # the page warns before the click
    book.create(tiny(seed=99))
    assert keeper not in book.runs and book.dropped == [label]  # the oldest trained one, by name
    assert book.next_to_go() is None  # the new run never trained: it would go next, and costs no model


def test_a_forgotten_run_comes_back_with_one_undo_until_the_next_new_run():
    book = runs.RunBook(owner="t")
    first, second = trained(3), trained(4)
    book.add(first)
    book.add(second)
    third = book.create(tiny(seed=5))
    runs.start(third)
    book.remove(third.run_id)  # forgotten while training
    assert third not in book.runs and third.status == "paused" and book.current is second
    assert book.undo_forget() == [third]
    assert book.runs == [first, second, third] and book.current is third
    book.clear_others()
    assert book.runs == [third] and book.forgotten == [first, second]
    assert book.undo_forget() == [first, second] and book.runs == [first, second, third]
    assert book.undo_forget() == []  # one undo
    book.remove(first.run_id)
    book.create(tiny(seed=6))  # a new run: the forgotten one is let go for good
    assert book.forgotten == [] and book.undo_forget() == [] and first not in book.runs


def test_next_to_go_is_none_while_there_is_room_or_an_untrained_run():
    book = runs.RunBook(owner="t")
    book.add(trained(3))
    assert book.next_to_go() is None  # room left
    for i in range(runs.MAX_RUNS - 1):
        book.create(tiny(seed=i))  # untrained
    assert len(book.runs) == runs.MAX_RUNS and book.next_to_go() is None


# ------------------------------------------------------------------------------ labels


def test_labels_name_only_what_differs():
    labels = runs.run_labels([tiny(lr=0.01), tiny(lr=0.003)])
    assert labels == ["#1 lr 0.01", "#2 lr 0.003"]
    labels = runs.run_labels([tiny(), tiny(optimizer="sgd"), tiny(causal=False)])
    assert labels == ["#1 mask on, Muon + AdamW", "#2 mask on, SGD", "#3 mask off, Muon + AdamW"]
    assert runs.run_labels([tiny(dropout=0.0), tiny(dropout=0.2)])[1] == "#2 dropout 0.2"
    assert runs.run_labels([train_settings.TrainSettings()]) == ["#1 quick demo"]
    assert runs.run_labels([train_settings.TrainSettings(causal=False)]) == ["#1 custom settings, mask off"]
    assert runs.run_labels([tiny(), tiny()]) == ["#1", "#2"]
    assert runs.run_labels([tiny(), tiny()], origins=["", "a.pt"]) == ["#1", "#2 uploaded"]


# ------------------------------------------------------------------------------ charts


def test_loss_frame_kinds_thinning_and_smoothing():
    run = trained(30)
    frame = runs.run_frame(run, max_points=8)
    raw = frame[frame.kind == runs.KIND_RAW]
    assert len(raw) <= 9 and raw["step"].iloc[-1] == 30  # thinned, newest step kept
    assert list(frame[frame.kind == runs.KIND_VAL]["step"]) == [10, 20, 30]
    smooth = runs.smooth(np.array([3.0, 1.0, 1.0]))
    assert smooth[0] == 3.0 and 1.0 < smooth[-1] < 3.0  # bias-corrected: starts at the first value
    assert runs.run_frame(run, max_points=8) is frame  # cached until the run moves


def test_the_smoothed_line_follows_a_steep_fall_and_ends_at_the_metric():
    """Browser review: in the first live steps the smoothed line ran above every point of the
    loss's steep fall (a forward EMA lags ~9 steps). runs.trend, the chart's line, follows the
    fall, smooths as much where the loss is flat, and ends at the Train loss metric's value."""
    rng = np.random.default_rng(0)
    t = np.arange(300)
    signal = 2.2 + 1.1 * np.exp(-t / 10) - 0.0003 * t  # 3.3 falling to ~2.3 by step 30, as trained
    values = signal + rng.normal(0, 0.05, len(t))
    lagging, line = runs.smooth(values), runs.trend(values)
    for steep in (slice(3, 15), slice(15, 40)):  # measured: 0.203 and 0.128 (EMA), 0.020 and 0.017
        assert np.abs(line[steep] - signal[steep]).mean() < 0.25 * np.abs(lagging[steep] - signal[steep]).mean()
    flat = slice(60, 270)
    assert np.std(line[flat] - signal[flat]) <= np.std(lagging[flat] - signal[flat])  # as smooth
    assert line[0] == values[0]  # starts at the first loss
    assert line[-1] == pytest.approx(runs.last_smoothed(list(values)), rel=1e-12)
    for n in (1, 2, 3, 39, 40, 41, 45):  # short histories, around the early steps' end
        assert np.isfinite(runs.trend(values[:n])).all() and len(runs.trend(values[:n])) == n
    frame = runs.run_frame(trained(30), max_points=100)
    drawn = frame[frame.kind == runs.KIND_SMOOTH]["loss"].to_numpy()
    raw = frame[frame.kind == runs.KIND_RAW]["loss"].to_numpy()
    assert np.allclose(drawn, runs.trend(raw))  # the chart draws this line


@pytest.mark.parametrize("n", [1, 2, 50, 371, 372, 373, 5_000, 60_000])
def test_the_metrics_smoothed_loss_from_the_newest_steps_equals_the_whole_history_smoothed(n):
    """runs.last_smoothed reads only the last few hundred steps (the Train page's metric, every
    tick); it must give what smoothing all of them gives, a jump in the loss included."""
    values = np.random.default_rng(n).normal(2.0, 0.3, n)
    values[: n // 2] += 5.0  # an old high plateau, which the newest steps have forgotten
    whole = runs.smooth(values)[-1]
    assert runs.last_smoothed(list(values)) == pytest.approx(whole, rel=1e-12, abs=0)
    assert runs.last_smoothed([]) is None
    # a tail too short would show: at n = 50, dropping the oldest 10 steps (5 higher, weights from
    # 0.9**40 on) moves the value by more than 0.01
    if n == 50:
        assert abs(runs.smooth(values[-40:])[-1] - whole) > 0.01


def test_loss_chart_overlays_runs_and_its_spec_is_data_free():
    book = runs.RunBook(owner="t")
    for lr in (0.01, 0.003):
        run = book.create(tiny(lr=lr, max_steps=10, val_interval=5))
        runs.start(run)
        run.advance(5.0)
    frame = runs.loss_frame(runs.chart_runs(book, overlay=True))
    assert set(frame["run"]) == {"#1 lr 0.01", "#2 lr 0.003"}
    assert set(frame["kind"]) == set(runs.KINDS)
    assert set(runs.loss_frame(runs.chart_runs(book, overlay=False))["run"]) == {"#2 lr 0.003"}
    spec = training_charts.loss_chart_spec(("#1 lr 0.01", "#2 lr 0.003"))
    # the rows come with each tick; only the uniform-guess rule has data of its own
    assert "data" not in spec and [("data" in layer) for layer in spec["layer"]] == [False, False, True, True]
    assert [sorted(rows[0]) for rows in spec["datasets"].values()] == [["text", "uniform"]]
    assert spec["layer"][0]["encoding"]["color"]["scale"]["domain"] == ["#1 lr 0.01", "#2 lr 0.003"]
    chart = training_charts.loss_chart(frame).to_dict()
    assert chart["datasets"] and "uniform guess: ln 27 = 3.30" in str(chart)
    # the page asks for the spec of the runs on its chart: built once, the same object each tick
    assert training_charts.loss_chart_spec(tuple(dict.fromkeys(frame["run"]))) == spec


# ------------------------------------------------------------------------------ checkpoints


def test_checkpoint_round_trip_gives_identical_samples():
    run = trained(20)
    data = runs.run_to_checkpoint(run)
    back = runs.run_from_checkpoint(data, "mine.pt")
    assert back.step == 20 and back.origin == "mine.pt" and back.status == "done"
    assert back.history["train_loss"] == run.history["train_loss"]
    settings = sample_names.SampleSettings(n=12, temperature=0.8, top_k=10, seed=7)
    assert sample_names.sample_for_page(back, settings) == sample_names.sample_for_page(run, settings)
    runs.extend(back, 5)
    runs.start(back)
    back.advance(5.0)
    assert back.step == 25  # an uploaded model trains on


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks a machine without CUDA")
def test_a_checkpoint_trained_on_cuda_says_it_trains_on_here_on_the_cpu():
    run = trained(5, device="cuda")  # asked for CUDA, trained on the CPU: its config still says cuda
    back = runs.run_from_checkpoint(runs.run_to_checkpoint(run), "gpu.pt")
    assert back.trainer.device.type == "cpu"
    assert back.trainer.device_message == ("This checkpoint was trained on CUDA, which this machine does "
                                           "not offer: it trains further on the CPU.")
    assert not runs.run_from_checkpoint(runs.run_to_checkpoint(trained(5)), "cpu.pt").trainer.device_message


@pytest.mark.parametrize("data, message", [
    (b"not a checkpoint at all", "not a PyTorch checkpoint"),
    (b"PK\x03\x04" + b"\x00" * 100, "corrupt"),
])
def test_bad_uploads_are_refused_clearly(data, message):
    with pytest.raises(CheckpointError, match=message):
        runs.run_from_checkpoint(data)


@pytest.mark.parametrize("change", [
    {"steps": [float("inf")]}, {"tokens": [float("inf")]}, {"steps": [-5]}, {"elapsed": [float("nan")]},
])
def test_a_checkpoint_with_an_impossible_history_loads_its_model_without_the_history(change):
    run = trained(1)
    from core.checkpoints import save_checkpoint
    history = {**run.history, **change}
    back = runs.run_from_checkpoint(save_checkpoint(run.model, run.trainer.config, run.tokenizer, history))
    assert back.history["steps"] == [] and back.step == 0 and 0.0 <= back.progress <= 1.0
    assert back.samples  # the weights are the run's: it still writes names


def test_a_checkpoint_whose_weights_overflow_the_softmax_is_refused_clearly():
    run = trained(1)
    from core.checkpoints import save_checkpoint
    with torch.no_grad():
        for p in run.model.parameters():
            p.fill_(1e30)  # finite, so the finite-weights check lets it through
    data = save_checkpoint(run.model, run.trainer.config, run.tokenizer, run.history)
    with pytest.raises(CheckpointError, match="so large"):
        runs.run_from_checkpoint(data)


def test_foreign_oversized_and_other_alphabet_uploads_are_refused():
    buffer = io.BytesIO()
    torch.save({"weights": torch.zeros(3)}, buffer)
    with pytest.raises(CheckpointError, match="not an Attention Lab checkpoint"):
        runs.run_from_checkpoint(buffer.getvalue())
    with pytest.raises(CheckpointError, match="MB allowed"):
        runs.run_from_checkpoint(b"PK\x03\x04" + bytes(runs.UPLOAD_MAX_BYTES))
    run = trained(2)
    from core.checkpoints import save_checkpoint
    other = CharTokenizer(["."] + list("ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
    data = save_checkpoint(run.model, run.trainer.config, other, run.history)
    with pytest.raises(CheckpointError, match="another alphabet"):
        runs.run_from_checkpoint(data)


# ------------------------------------------------------------------------------ sample page


def test_sample_page_names_are_labelled_against_the_split():
    run = trained(30)
    train_set, val_set = runs.split_sets(run)
    assert train_set and val_set and not (train_set & val_set)
    samples = sample_names.sample_for_page(run, sample_names.SampleSettings(n=30, prefix="Ma", seed=3))
    assert all(s.name.startswith("ma") for s in samples)
    for s in samples:
        expected = "train" if s.name in train_set else "val" if s.name in val_set else "new"
        assert s.label == expected
    table = sample_names.samples_table(samples)
    assert list(table.columns) == ["name", "length", "where"]
    shares = names_charts.shares_chart(samples).to_dict()
    assert "in the validation split" in str(shares)
    with pytest.raises(ValueError, match="never saw"):
        sample_names.sample_for_page(run, sample_names.SampleSettings(prefix="x9"))
    with pytest.raises(ValueError, match='"."'):
        sample_names.sample_for_page(run, sample_names.SampleSettings(prefix="a.b"))


def test_name_steps_show_what_the_model_weighed():
    run = trained(10)
    steps = sample_names.name_steps(run, "emma")
    assert steps.contexts == [".", ".e", ".em", ".emm", ".emma"]
    assert steps.chosen == ["e", "m", "m", "a", "."]
    assert steps.probs.shape == (5, 27)
    assert np.allclose(steps.probs.sum(1), 1.0, atol=1e-5)
    table = sample_names.steps_table(steps)
    assert table["p(next)"].iloc[0] == pytest.approx(steps.probs[0, steps.vocab.index("e")])
    bars = names_charts.step_bars_chart(steps, 2).to_dict()
    assert "After “.em”" in str(bars)
    assert steps.given == 0 and set(table["from"]) == {"sampled"}


def test_name_steps_say_which_letters_the_prefix_gave():
    """Browser review: with prefix "qx" the bars said “the model gave 'q' p = 0.00”, as if the
    model had picked a letter it gave almost no chance; the prefix gave it."""
    run = trained(10)
    steps = sample_names.name_steps(run, "qxena", prefix="qx")
    assert steps.given == 2 and [steps.was_given(t) for t in range(6)] == [True, True] + [False] * 4
    table = sample_names.steps_table(steps)
    assert list(table["from"]) == ["prefix", "prefix", "sampled", "sampled", "sampled", "sampled"]
    first = str(names_charts.step_bars_chart(steps, 0).to_dict())
    assert "the prefix gave “q”" in first and "the model gave" not in first
    assert "the model gave “e”" in str(names_charts.step_bars_chart(steps, 2).to_dict())
    rows = list(dict.fromkeys(names_charts.steps_heatmap(steps).data["row"]))
    assert rows[:3] == [". → q (prefix)", ".q → x (prefix)", ".qx → e"]
    # a name that does not start with the prefix (typed elsewhere) has nothing given
    assert sample_names.name_steps(run, "emma", prefix="qx").given == 0


# ------------------------------------------------------------------------------ inside page


def test_inspection_shapes_causality_and_truncation():
    run = trained(5, n_layer=2)
    ins = inside_model.inspect_name(run.model, run.tokenizer, " Emma ")
    assert ins.tokens == [".", "e", "m", "m", "a"] and not ins.truncated
    assert ins.attn.shape == (2, 2, 5, 5) and ins.probs.shape == (5, 27)
    assert np.allclose(ins.attn.sum(-1), 1.0, atol=1e-5)
    assert np.all(np.triu(ins.attn, k=1) == 0)  # nothing from the future
    long = inside_model.inspect_name(run.model, run.tokenizer, "alexandrina")
    assert long.truncated and len(long.tokens) == 8
    chart = names_charts.attention_grid_chart(ins)
    frame = chart.data  # one row per (layer, head, query, key); masked cells are not "finite"
    assert len(frame) == 2 * 2 * 5 * 5 and (~frame["finite"]).sum() == 2 * 2 * 10
    assert set(frame["facet_row"]) == {"layer 1", "layer 2"} and set(frame["facet"]) == {"head 1", "head 2"}
    grid = chart.to_dict()
    assert "facet" in grid
    for bad, message in [("", "type a name"), ("a.b", '"."'), ("zoë", "never saw")]:
        with pytest.raises(ValueError, match=message):
            inside_model.inspect_name(run.model, run.tokenizer, bad)


def test_enlarged_head_only_for_a_layer_and_head_the_model_has():
    run = trained(5, n_layer=2)
    ins = inside_model.inspect_name(run.model, run.tokenizer, "emma")  # 2 layers x 2 heads
    assert "Layer 2, head 2" in str(names_charts.attention_head_chart(ins, 1, 1).to_dict())
    for layer, head in [(2, 0), (0, 2), (-1, 0)]:  # -1 would wrap round to layer 2
        with pytest.raises(ValueError, match="not in this model"):
            names_charts.attention_head_chart(ins, layer, head)


def test_mask_off_model_reads_the_future():
    run = trained(5, causal=False)
    ins = inside_model.inspect_name(run.model, run.tokenizer, "emma")
    assert not ins.causal and np.triu(ins.attn, k=1).sum() > 0.1
    assert names_charts.attention_grid_chart(ins).data["finite"].all()


def test_embedding_heatmap_and_pca():
    run = trained(5)
    df, ratios = inside_model.embedding_pca(run.model, run.tokenizer)
    assert list(df["char"]) == run.tokenizer.vocab and len(ratios) == 2
    assert set(df["group"]) == {"vowel", "consonant", "start/end ."}
    assert (df["group"] == "vowel").sum() == 5
    assert "PC1 (" in str(names_charts.pca_chart(df, ratios).to_dict())
    assert names_charts.embedding_heatmap(run.model, run.tokenizer).to_dict()["height"] == 16 * 27


@pytest.mark.slow
def test_training_separates_vowels_and_breaking_the_mask_collapses_the_loss():
    """The two lessons of these pages, measured: trained embeddings group vowels apart from
    consonants; without the mask the training loss collapses while the samples are garbage."""
    settings = dict(context_size=8, n_layer=2, n_head=2, d_embed=32, d_ff=64, batch_size=32,
                    max_steps=300, val_interval=100, warmup_steps=20)
    fresh = runs.new_run(1, train_settings.TrainSettings(**settings))
    before = inside_model.vowel_separation(inside_model.embedding_pca(fresh.model, fresh.tokenizer)[0])
    good = trained(**{k: v for k, v in settings.items() if k != "max_steps"}, steps=300)
    after_frame = inside_model.embedding_pca(good.model, good.tokenizer)[0]
    after = inside_model.vowel_separation(after_frame)
    assert after > before + 0.5
    assert after > inside_model.chance_separation(after_frame)[1]  # beyond 95% of random deals
    broken = trained(**{k: v for k, v in settings.items() if k != "max_steps"}, steps=300, causal=False)
    good_loss = runs.smooth(good.history["train_loss"])[-1]
    broken_loss = runs.smooth(broken.history["train_loss"])[-1]
    assert good_loss > 2.0 and broken_loss < 0.6
    train_set, val_set = runs.split_sets(broken)
    real = sum(s.name in train_set or s.name in val_set for s in broken.samples)
    assert real <= 2  # almost nothing it writes is a real name


def test_a_figure_caption_names_each_runs_settings_in_the_labels_words():
    run = runs.RunBook(owner="t").create(tiny(optimizer="sgd", lr=0.01, causal=False))
    assert runs.run_summary(run) == ("1 layer, 2 heads, d_embed 16, d_ff 32, context 8, dropout 0, "
                                     "SGD, lr 0.01, batch 16, mask off, seed 101, step 0")


def test_loss_frame_uses_the_rows_it_is_given():
    """The Train page passes the rows it copied under the run's lock: the run may move on meanwhile."""
    run = runs.RunBook(owner="test").create(tiny(max_steps=25))
    runs.start(run)
    run.advance(None, n_steps=20)
    rows = runs.run_frame(run)
    run.advance(None, n_steps=5)  # moved on after the copy
    frame = runs.loss_frame([run], frames=[rows])
    assert frame["step"].max() == 20 and set(frame["run"]) == {run.label or f"#{run.run_id}"}
    assert runs.loss_frame([run])["step"].max() == 25


def test_a_halted_run_is_paused_with_its_message_and_resuming_clears_it():
    """What the Train page does when its worker's training broke (the GPU out of memory)."""
    run = runs.RunBook(owner="test").create(tiny(max_steps=25))
    runs.start(run)
    run.advance(None, n_steps=5)
    runs.halt(run, "Training stopped: RuntimeError: CUDA out of memory")
    assert run.status == "paused" and "out of memory" in run.message and run.step == 5
    runs.start(run)
    assert run.status == "running" and run.message == ""
    assert run.advance(None, n_steps=3).steps == 3


def test_the_same_checkpoint_file_is_one_run_until_it_trains_further():
    """RunBook.same_upload: a file uploaded again (same bytes) is the run it made, while that run has
    not trained since; once it has, the file is a fresh start again."""
    data = runs.run_to_checkpoint(trained(1))
    book = runs.RunBook(owner="t")
    first = runs.run_from_checkpoint(data, "a.pt")
    book.add(first)
    assert first.upload_digest == runs.checkpoint_digest(data) and first.upload_step == first.step
    assert book.same_upload(runs.checkpoint_digest(data)) is first
    assert book.same_upload(runs.checkpoint_digest(data + b"x")) is None  # other bytes, other file
    runs.extend(first, 1)
    runs.start(first)
    first.advance(None, n_steps=1)
    assert book.same_upload(runs.checkpoint_digest(data)) is None  # trained since: load it afresh


def test_bring_forward_makes_a_run_current_and_pauses_the_one_before():
    book = runs.RunBook(owner="t")
    a = runs.run_from_checkpoint(runs.run_to_checkpoint(trained(1)), "a.pt")
    book.add(a)
    b = book.create(tiny())
    runs.start(b)
    book.bring_forward(a.run_id)
    assert book.current is a and b.status == "paused"
    book.bring_forward(999)  # no such run: nothing changes
    assert book.current is a


def _inspection(n_layer: int, n_head: int, T: int) -> inside_model.Inspection:
    """An Inspection of made-up causal weights (rows sum to 1), for layout tests."""
    attn = np.tril(np.random.default_rng(0).random((n_layer, n_head, T, T))) + 1e-3
    attn = np.tril(attn) / np.tril(attn).sum(-1, keepdims=True)  # (n_layer, n_head, T, T)
    tokens = ["."] + [chr(ord("a") + i % 26) for i in range(T - 1)]
    return inside_model.Inspection(tokens, attn, np.full((T, 27), 1 / 27), list(".abcdefghijklmnopqrstuvwxyz"),
                                   truncated=False)


@pytest.mark.parametrize("shape, lecture", [((2, 2, 5), False), ((4, 4, 11), True), ((3, 6, 13), False),
                                            ((2, 3, 33), False)])
def test_the_overview_width_estimate_follows_the_drawn_grid(shape, lecture):
    """overview_plan decides from an estimate of the grid's width: it is within 10% of the width
    Vega draws (the whole grid, and one layer's heads wrapped)."""
    import re
    from core import viz
    ins = _inspection(*shape)
    for layer, columns, maps in [(None, None, shape[1]), (0, 2, 2)]:
        chart = names_charts.attention_grid_chart(ins, lecture=lecture, layer=layer, columns=columns)
        drawn = float(re.search(r'<svg[^>]* width="([\d.]+)"', viz.to_svg(viz.themed(chart, lecture))).group(1))
        estimate = names_charts._grid_width(maps, shape[2], lecture, layer_names=layer is None)
        assert abs(estimate - drawn) <= 0.1 * drawn, (layer, estimate, drawn)


def test_a_model_with_many_heads_shows_one_layer_of_readable_maps():
    """Inside the model: 8 layers x 16 heads were 128 maps in one picture, scaled to 15% at 1024 px
    (specks, labels unreadable)."""
    assert names_charts.overview_plan(2, 2, 5) is None  # the quick demo: every layer and head
    assert names_charts.overview_plan(4, 4, 11, lecture=True) is None  # "Best" on a projector
    for n_layer, n_head, T, lecture in [(8, 16, 5, False), (8, 16, 12, False), (4, 8, 12, True), (4, 4, 33, False)]:
        per_row = names_charts.overview_plan(n_layer, n_head, T, lecture=lecture)
        assert per_row is not None and 1 <= per_row <= n_head
        # drawn at 70% or more, and one more head to a row would not be
        scale = names_charts.OVERVIEW_COLUMN_PX / names_charts._grid_width(per_row, T, lecture, False)
        assert scale >= names_charts.MIN_LAYER_SCALE or per_row == 1
        # as few rows as maps drawn at 70% allow: a picture with one row fewer would be smaller
        rows = -(-n_head // per_row)
        if rows > 1:
            fewer = -(-n_head // (rows - 1))  # heads to a row with one row fewer
            wider = names_charts.OVERVIEW_COLUMN_PX / names_charts._grid_width(fewer, T, lecture, False)
            assert wider < names_charts.MIN_LAYER_SCALE
        # and the rows are filled evenly: the last is short by less than one map per row above it
        assert n_head - per_row * (rows - 1) > per_row - rows
    # 12 heads that fit at most 5 to a row: 4 + 4 + 4, not 5 + 5 + 2
    widest = max(n for n in range(1, 13) if names_charts.OVERVIEW_COLUMN_PX / names_charts._grid_width(
        n, 5, False, False) >= names_charts.MIN_LAYER_SCALE)
    assert widest == 5 and names_charts.overview_plan(4, 12, 5) == 4
    ins = _inspection(3, 6, 7)
    frame = names_charts.attention_grid_chart(ins, layer=2, columns=4).data
    assert len(frame) == 6 * 7 * 7 and set(frame["facet_row"]) == {""}  # no row of layers
    assert list(dict.fromkeys(frame["facet"])) == [f"layer 3, head {j}" for j in range(1, 7)]
    assert np.allclose(frame["value"].to_numpy().reshape(6, 7, 7), ins.attn[2])
    assert names_charts.attention_grid_chart(ins, layer=2, columns=4).to_dict()["columns"] == 4


def test_the_chance_separation_is_the_separation_of_random_deals_and_is_not_zero():
    """The Inside page's bar for the vowel/consonant separation: the labels dealt at random over the
    same points. It equals vowel_separation of each deal, is about 0.5 for Gaussian points (5
    against 21: not 0), and a clearly separated picture clears its 95th percentile."""
    rng = np.random.default_rng(3)
    chars = list("abcdefghijklmnopqrstuvwxyz")
    groups = ["vowel" if c in "aeiou" else "consonant" for c in chars]
    frame = pd.DataFrame({"char": chars, "PC1": rng.normal(size=26), "PC2": rng.normal(size=26),
                          "group": groups})
    points = frame[["PC1", "PC2"]].to_numpy()
    deals = np.stack([rng.permutation(np.array(groups) == "vowel") for _ in range(5)])
    assert inside_model._separation(points, deals) == pytest.approx(
        [inside_model.vowel_separation(frame.assign(group=np.where(d, "vowel", "consonant"))) for d in deals])
    mean, top = inside_model.chance_separation(frame)
    assert 0.35 < mean < 0.7 and mean < top < 1.3
    apart = frame.assign(PC1=frame["PC1"] + np.where(frame["group"] == "vowel", 3.0, 0.0))
    assert inside_model.vowel_separation(apart) > inside_model.chance_separation(apart)[1]
    only_vowels = frame.assign(group="vowel")
    assert inside_model.chance_separation(only_vowels) == (0.0, 0.0)
