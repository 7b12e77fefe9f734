"""AppTest of the Train page: presets and controls, a live run that starts, advances, pauses,
resumes and stops, the chart's data, sampled names, break it, devices, checkpoints, the URL."""

from __future__ import annotations

import dataclasses
import io
import math

import pytest
import torch

from core import budget, runs, settings as core_settings, train_settings
from core.lessons import sample_names
from core.device import resolve_device
from tests.app.conftest import ROOT, assert_no_exception, open_page
from tests.app.gpt_helpers import TINY
from tests.app.gpt_helpers import (
    book_of, current, loss_rows, start_and_finish, texts, tiny_page, tiny_trained_book)
from tests.helpers import chart_rows, shown

PAGE = "pages/7_train_gpt.py"


pytestmark = pytest.mark.usefixtures("one_thread")


# ------------------------------------------------------------------------------ settings


def test_default_page_shows_the_quick_demo_and_its_structure():
    at = open_page(PAGE)
    assert_no_exception(at)
    assert "Preset: **quick demo**" in texts(at.markdown)
    params = train_settings.TrainSettings()
    n_params = train_settings.to_train_config(params).model.num_params()
    assert at.metric[0].label == "Parameters" and at.metric[0].value == f"{n_params:,}"
    assert any(e.label == "All settings: model, training, device" for e in at.expander)
    assert [t.label for t in at.tabs] == ["Model", "Training", "Device and fine print", "More",
                                          "Model structure"]
    assert "DecoderLayer" in texts(at.code)
    assert "No run yet" in texts(at.info)
    offered, absent = runs.device_options()
    device_box = next(s for s in at.selectbox if s.label == "Device")
    assert len(device_box.options) == len(offered) and device_box.options[0] == "auto (best available)"
    for name, reason in absent.items():
        assert reason in texts(at.caption)


def test_the_settings_line_says_next_run_when_the_run_shown_used_other_settings():
    # a reload brings the trained run back with the page's settings at their defaults: the line
    # read "Preset: quick demo · … 1,200 steps" over a run of other settings, a contradiction
    at = open_page(PAGE)
    at.session_state["gpt.runbook"] = tiny_trained_book()
    at.run()
    assert_no_exception(at)
    assert "Next run: **quick demo** · " in texts(at.markdown)
    assert "Preset: " not in texts(at.markdown)
    same = runs.RunBook(owner="apptest")
    same.create(train_settings.TrainSettings())  # a run of the form's own settings (not trained)
    at = open_page(PAGE)
    at.session_state["gpt.runbook"] = same
    at.run()
    assert "Preset: **quick demo** · " in texts(at.markdown) and "Next run" not in texts(at.markdown)


def test_presets_and_controls_change_the_model():
    at = open_page(PAGE)
    at.button(key="train.preset.lecture").click().run()
    assert_no_exception(at)
    assert at.session_state["train"] == train_settings.preset_settings("lecture")
    assert "Preset: **Lecture 7**" in texts(at.markdown)
    at.button(key="train.preset.best").click().run()
    best = train_settings.to_train_config(train_settings.preset_settings("best")).model.num_params()
    assert at.metric[0].value == f"{best:,}"
    layers = next(n for n in at.text_input if n.label == "Layers")
    layers.set_value("3").run()
    smaller = train_settings.to_train_config(train_settings.TrainSettings(**{**vars(train_settings.preset_settings("best")), "n_layer": 3}))
    assert at.metric[0].value == f"{smaller.model.num_params():,}"
    assert "Preset: **custom**" in texts(at.markdown)
    lr = next(n for n in at.text_input if n.label == "Learning rate")
    lr.set_value("0.02").run()
    assert at.session_state["train"].lr == 0.02
    next(s for s in at.selectbox if s.label == "Optimizer").set_value("sgd").run()
    assert at.session_state["train"].optimizer == "sgd"
    next(t for t in at.toggle if t.label == "Causal mask").set_value(False).run()
    assert at.session_state["train"].causal is False
    assert_no_exception(at)


def test_bad_settings_get_a_message_and_block_training():
    at = tiny_page()
    at.button(key="train.start").click().run()
    run_id = current(at).run_id
    heads = next(n for n in at.text_input if n.label == "Heads per layer")
    heads.set_value("3").run()  # 16 is not divisible by 3
    assert_no_exception(at)
    assert "divisible" in texts(at.error)
    assert at.button(key="train.start").disabled and at.button(key="train.break").disabled
    assert current(at).run_id == run_id  # the run is still there
    at = tiny_page(d_embed="512", d_ff="2048", n_layer="8", n_head="8")
    assert "too large for this server" in texts(at.error)
    assert at.button(key="train.start").disabled



def test_a_warm_up_longer_than_the_run_is_a_warning_not_a_block():
    at = tiny_page(warmup_steps="500", max_steps="200")
    assert_no_exception(at)
    assert "The warm-up (500 steps) is longer than the run (200 steps)" in texts(at.warning)
    assert not at.button(key="train.start").disabled  # it runs: the student may mean it
    at = tiny_page(warmup_steps="100", max_steps="200")
    assert "warm-up" not in texts(at.warning)



def test_a_trained_run_is_not_let_go_without_a_word():
    """Six trained runs kept: the page says before Start which one a new run lets go, with its
    checkpoint to download, and after Start that it went (the click's rerun had wiped that notice)."""
    book = None
    for _ in range(runs.MAX_RUNS):
        book = tiny_trained_book(steps=5, book=book)
    oldest = book.runs[0]
    at = open_page(PAGE, query=TINY)
    at.session_state["gpt.runbook"] = book
    at.run()
    assert_no_exception(at)
    assert f"a new run lets {oldest.label} go" in texts(at.caption)
    labels = [d.proto.label for d in at.get("download_button")]
    assert f"Download {oldest.label} (.pt)" in labels  # the run to go can be kept first
    at.button(key="train.start").click().run()
    assert_no_exception(at)
    assert oldest not in book_of(at).runs
    assert f"so {oldest.label} was let go" in texts(at.info)
    at.run()
    assert "was let go" not in texts(at.info)  # said once



def test_forget_and_clear_can_be_undone_with_the_model():
    book = tiny_trained_book(steps=5)
    book = tiny_trained_book(steps=6, book=book)
    first, second = book.runs
    at = open_page(PAGE, query=TINY)
    at.session_state["gpt.runbook"] = book
    at.run()
    at.button(key="train.reset").click().run()  # forget the current run (#2)
    assert_no_exception(at)
    assert book_of(at).runs == [first]
    undo = at.button(key="train.undo_forget")
    assert second.label in undo.label
    undo.click().run()
    assert_no_exception(at)
    assert book_of(at).runs == [first, second] and current(at) is second and second.step == 6
    assert not [b for b in at.button if b.key == "train.undo_forget"]


# ------------------------------------------------------------------------------ a live run


def test_training_starts_advances_pauses_resumes_and_stops():
    at = tiny_page()
    at.button(key="train.start").click().run()
    assert_no_exception(at)
    run = current(at)
    assert run.status == "running" and run.step > 0
    rows_before, step_before = len(loss_rows(at)), run.step
    for _ in range(3):
        at.run()
    assert_no_exception(at)
    assert run.step > step_before
    assert len(loss_rows(at)) > rows_before  # the chart's data grows
    assert "step" in at.get("progress")[0].proto.text and "steps/s" in at.get("progress")[0].proto.text
    assert "Names sampled at step" in texts(at.markdown)  # samples appear
    assert {"train, per step", "train, smoothed", "validation"} <= set(loss_rows(at)["kind"])

    at.button(key="train.pause").click().run()
    assert run.status == "paused"
    paused_at = run.step
    at.run()
    at.run()
    assert run.step == paused_at  # paused: nothing advances
    at.button(key="train.resume").click().run()
    at.run()
    assert run.status == "running" and run.step > paused_at
    at.button(key="train.stop").click().run()
    assert run.status == "stopped"
    stopped_at = run.step
    at.run()
    assert run.step == stopped_at
    keys = {b.key for b in at.button}
    assert "train.resume" not in keys and "train.pause" not in keys and "train.stop" not in keys
    # a stopped run can train on: that is the one way on, and it says so
    at.text_input(key="train.extra").set_value("3").run()
    assert at.button(key="train.extend").label == "Train 3 more steps"
    at.button(key="train.extend").click().run()
    assert run.status in ("running", "done") and run.step > stopped_at
    at.button(key="train.reset").click().run()
    assert book_of(at).current is None and "No run yet" in texts(at.info)
    assert_no_exception(at)


def test_ticks_that_train_nothing_redraw_the_same_rows_without_rebuilding_them():
    from ui.training import LOSS_ROWS_KEY

    at = tiny_page()
    at.button(key="train.start").click().run()
    at.button(key="train.pause").click().run()
    kept = at.session_state[LOSS_ROWS_KEY]
    rows = loss_rows(at)
    at.run()
    at.run()
    assert at.session_state[LOSS_ROWS_KEY][2] is kept[2]  # the same rows, not made again
    assert loss_rows(at).equals(rows) and len(rows)  # and still drawn, from the kept Arrow bytes
    at.button(key="train.resume").click().run()
    at.run()
    assert at.session_state[LOSS_ROWS_KEY][2] is not kept[2]  # the run moved on: new rows
    assert len(loss_rows(at)) > len(rows)
    assert_no_exception(at)


def test_the_uniform_guess_rule_is_sent_as_arrow_made_once():
    # the rule's one row: converted once per content, not by Streamlit on every tick
    from ui.training import _inline_arrow

    _inline_arrow.cache_clear()
    at = tiny_page()
    at.button(key="train.start").click().run()
    at.run()
    at.run()
    rows = chart_rows(at)
    uniform = rows["uniform"].dropna()
    assert len(uniform) >= 1 and uniform.iloc[0] == pytest.approx(math.log(current(at).tokenizer.vocab_size))
    info = _inline_arrow.cache_info()
    assert info.misses == 1 and info.hits >= 1  # drawn again from the same bytes
    assert_no_exception(at)


def test_a_run_finishes_and_a_page_switch_does_not_lose_it():
    at = tiny_page(max_steps="12")
    run = start_and_finish(at, reruns=40)
    assert run.status == "done" and run.step == 12
    keys = {b.key for b in at.button}
    assert "train.resume" not in keys and "train.extend" in keys  # finished: only "N more steps"
    at.switch_page(str(ROOT / "pages/home.py"))
    at.run()
    at.switch_page(str(ROOT / PAGE))
    at.run()
    assert current(at) is run and run.step == 12
    assert len(loss_rows(at)) > 0


def test_break_it_overlays_a_mask_off_run():
    at = tiny_page()
    at.button(key="train.start").click().run()
    at.run()
    at.button(key="train.break").click().run()
    at.run()
    assert_no_exception(at)
    book = book_of(at)
    assert len(book.runs) == 2 and book.current.settings.causal is False
    assert book.runs[0].status == "paused"  # one run at a time
    runs_on_chart = set(loss_rows(at)["run"])
    assert runs_on_chart == {"#1 mask on", "#2 mask off"}
    assert any("Break it" in e.label for e in at.expander)
    next(c for c in at.checkbox if "earlier runs" in c.label).uncheck().run()
    assert set(loss_rows(at)["run"]) == {"#2 mask off"}
    at.button(key="train.clear_runs").click().run()
    assert len(book_of(at).runs) == 1


@pytest.mark.parametrize("device", ["cuda", "mps"])
def test_asking_for_an_absent_device_falls_back_with_a_message(device):
    at = tiny_page(device=device)
    offered, absent = runs.device_options()
    if device in absent:
        assert f"{device.upper()} was requested but is not available" in texts(at.warning)
        used, notice = resolve_device(device)
        assert notice in texts(at.warning)  # names the device really used, e.g. "using the CPU"
        assert at.session_state["train"].device == "auto"
        at.button(key="train.start").click().run()
        assert current(at).trainer.device.type == used.type
    else:
        assert at.session_state["train"].device == device and not at.warning


# ------------------------------------------------------------------------------ checkpoints


def _upload(at, name: str, data: bytes):
    at.file_uploader(key="gpt.upload").set_value((name, data, "application/octet-stream")).run()


def test_checkpoint_download_then_upload_gives_identical_samples():
    at = open_page(PAGE)
    at.session_state["gpt.runbook"] = tiny_trained_book()
    at.run()
    original = current(at)
    download = next(b for b in at.get("download_button") if b.label == "Download checkpoint (.pt)")
    assert not download.proto.disabled
    data = runs.run_to_checkpoint(original)  # what the download button's callable returns
    _upload(at, "names.pt", data)
    assert_no_exception(at)
    assert "Loaded names.pt" in texts(at.success)
    # the page says what a checkpoint does not carry (AdamW's state) before anyone trains on
    assert ("optimizer's running averages" in texts(at.success)) == (original.trainer.config.optimizer in ("adamw", "muon"))
    uploaded = current(at)
    assert uploaded is not original and uploaded.origin == "names.pt" and uploaded.step == original.step
    settings = sample_names.SampleSettings(n=15, seed=11, temperature=0.9)
    assert sample_names.sample_for_page(uploaded, settings) == sample_names.sample_for_page(original, settings)
    assert [s.name for s in uploaded.samples] == [s.name for s in original.samples]


def test_the_same_checkpoint_uploaded_twice_is_one_run():
    """A second upload of the same file (the uploader cleared, the file chosen again) used to add a
    second, identical run: now the page says it is loaded already and makes it the current run."""
    at = open_page(PAGE)
    at.session_state["gpt.runbook"] = tiny_trained_book()
    at.run()
    data = runs.run_to_checkpoint(current(at))
    _upload(at, "names.pt", data)
    loaded = current(at)
    n_runs = len(book_of(at).runs)
    at.file_uploader(key="gpt.upload").set_value(None).run()
    at.session_state["gpt.runbook"].bring_forward(book_of(at).runs[0].run_id)  # another run current
    _upload(at, "names (1).pt", data)
    assert_no_exception(at)
    assert len(book_of(at).runs) == n_runs and current(at) is loaded
    assert f"is already loaded as run {loaded.label}" in texts(at.success), texts(at.success)


def test_a_checkpoint_without_a_history_says_its_steps_count_from_zero():
    from core.checkpoints import save_checkpoint

    run = tiny_trained_book().current
    data = save_checkpoint(run.model, run.trainer.config, run.tokenizer, {})
    at = open_page(PAGE)
    _upload(at, "bare.pt", data)
    assert_no_exception(at)
    assert current(at).origin == "bare.pt" and current(at).step == 0
    assert "holds no training history, so its steps count from 0" in texts(at.success)


def test_bad_uploads_get_a_clear_error_and_the_model_survives():
    """Each kind of bad file in turn, in one session (the uploader holds one file at a time; a
    failure names the kind): refused with a message, the trained model untouched."""
    at = open_page(PAGE)
    at.session_state["gpt.runbook"] = tiny_trained_book()
    at.run()
    before = current(at)
    weights = before.model.token_embedding.weight.detach().clone()
    expected = {"corrupt": "corrupt", "foreign": "not an Attention Lab checkpoint", "oversized": "MB allowed"}
    for kind in ("corrupt", "foreign", "oversized"):
        if kind == "corrupt":
            data = runs.run_to_checkpoint(before)[: 2_000]
        elif kind == "foreign":
            buffer = io.BytesIO()
            torch.save({"state_dict": {"w": torch.zeros(2)}}, buffer)
            data = buffer.getvalue()
        else:
            data = b"PK\x03\x04" + bytes(runs.UPLOAD_MAX_BYTES)
        _upload(at, f"{kind}.pt", data)
        assert_no_exception(at)
        message = texts(at.error)
        assert "Checkpoint not loaded" in message and "current model is unchanged" in message, (kind, message)
        assert expected[kind] in message, (kind, message)
        assert current(at) is before and len(book_of(at).runs) == 1, kind
        assert torch.equal(before.model.token_embedding.weight, weights), kind
        at.run()  # the message stays while the file does; nothing else changes
        assert "Checkpoint not loaded" in texts(at.error) and current(at) is before, kind
        assert expected[kind] in texts(at.error), kind


# ------------------------------------------------------------------------------ URL


def test_url_round_trip():
    at = tiny_page()
    next(n for n in at.text_input if n.label == "Learning rate").set_value("0.004").run()
    next(s for s in at.selectbox if s.label == "Optimizer").set_value("sgd").run()
    next(n for n in at.text_input if n.label == "Layers").set_value("3").run()  # the quick demo has 2
    params = core_settings.to_params(at.session_state["train"])
    assert params["lr"] == "0.004" and params["optimizer"] == "sgd" and params["n_layer"] == "3"
    again = open_page(PAGE, query=params)
    assert_no_exception(again)
    assert again.session_state["train"] == at.session_state["train"]
    assert again.metric[0].value == at.metric[0].value


def _heads_box(at):
    return next(n for n in at.text_input if n.label == "Heads per layer")


def test_a_link_holding_a_blocked_combination_keeps_its_other_fields_with_a_notice():
    # TINY holds d_embed=16, which 3 heads do not divide: such a link is in the wild already
    at = tiny_page(n_head="3", lr="0.004")
    default_heads = train_settings.TrainSettings().n_head
    settings = at.session_state["train"]
    assert (settings.d_embed, settings.lr, settings.n_layer, settings.context_size) == (16, 0.004, 1, 8)
    assert settings.n_head == default_heads and _heads_box(at).value == str(default_heads)
    notice = shown(texts(at.warning))
    assert "must be divisible by the number of heads (3)" in notice
    assert f"n_head went back from 3 to its default ({default_heads}); every other setting was kept" in notice
    assert not at.error and not at.button(key="train.start").disabled  # the kept settings can train
    assert at.query_params.get("d_embed") == "16" and "n_head" not in at.query_params


def test_a_blocked_combination_never_reaches_the_link():
    at = tiny_page(lr="0.004")
    _heads_box(at).set_value("3").run()  # 16 is not divisible by 3: blocked, with a message
    assert_no_exception(at)
    assert "divisible" in texts(at.error)
    # the last combination that works stays in the link (2 heads, the default, so no n_head param)
    assert "n_head" not in at.query_params and at.query_params.get("d_embed") == "16"
    again = open_page(PAGE, query=dict(at.query_params))  # a reload, or the link shared
    assert_no_exception(again)
    assert "could not be used" not in texts(again.warning)
    assert (again.session_state["train"].n_head, again.session_state["train"].lr) == (2, 0.004)


def test_when_every_training_slot_is_taken_the_page_waits_its_turn():
    import contextlib

    at = tiny_page()
    at.button(key="train.start").click().run()
    run = current(at)
    with contextlib.ExitStack() as others:
        for i in range(budget.SLOTS.capacity):  # other sessions hold every slot
            assert others.enter_context(budget.SLOTS.slot(f"other-session-{i}"))
        step = run.step
        at.run()
        assert_no_exception(at)
        assert run.step == step and run.status == "running"
        assert "runs ahead of you, retrying…" in texts(at.info) or \
            "run ahead of you, retrying…" in texts(at.info)
        for i in range(budget.SLOTS.capacity):
            budget.SLOTS.leave(f"other-session-{i}")  # their runs end
    for _ in range(3):  # the slots are free again: training carries on by itself within a few ticks
        at.run()  # (a run whose turn it is, e.g. another test's session, keeps the slot GRACE_S first)
        if run.step > step:
            break
    assert run.step > step and "ahead of you" not in texts(at.info)


def test_the_status_line_says_when_other_runs_share_the_server(monkeypatch):
    import re

    # slots of their own: other tests' sessions must not come and go from the count meanwhile
    monkeypatch.setattr(budget, "SLOTS", budget.TrainingSlots(budget.SLOTS.capacity, budget.SLOTS.share))

    def sharing() -> int:
        found = re.search(r"sharing the server with (\d+) other run", at.get("progress")[0].proto.text)
        return int(found.group(1)) if found else 0

    at = tiny_page()
    at.button(key="train.start").click().run()
    assert sharing() == 0
    with budget.SLOTS.slot("another-student", timeout=0.0):
        pass  # another session trained a slice just now
    at.run()
    assert_no_exception(at)
    assert sharing() == 1


def test_the_status_line_says_when_training_gives_way_to_a_busy_class(monkeypatch):
    clocks = {"wall": 0.0, "cpu": 0.0}
    load = budget.ServerLoad(ceiling=0.55, clock=lambda: clocks["wall"], process_clock=lambda: clocks["cpu"])
    monkeypatch.setattr(budget, "SLOTS", budget.TrainingSlots(budget.SLOTS.capacity, 0.25, load=load))
    at = tiny_page()
    at.button(key="train.start").click().run()
    assert "pages come first" not in at.get("progress")[0].proto.text
    clocks["wall"], clocks["cpu"] = 30.0, 15.0  # the rest of the server used half the core
    load.note_training(0.0)
    at.run()
    assert_no_exception(at)
    assert "the class's pages come first: training has 8% of the server" in at.get("progress")[0].proto.text


# ------------------------------------------------------------------------------ one source of settings


def test_every_config_field_is_a_control_with_its_declared_bounds():
    """Every GPTConfig / TrainConfig field (but the nested model config and what the data fixes)
    is a widget on the Train page whose label, bounds, step and options are exactly the field's
    metadata: a new hyper-parameter declared with spec(...) in its config needs nothing else."""
    import dataclasses

    from core.training import TrainConfig
    from core.models import GPTConfig

    at = open_page(PAGE)
    assert_no_exception(at)
    widgets = {w.key: w for kind in ("text_input", "slider", "selectbox", "toggle", "checkbox")
               for w in at.get(kind)}
    boxes = {}  # number fields typed into checked boxes: field -> (kind, rules)
    offered, _ = runs.device_options()
    shown = []
    for source in (GPTConfig, TrainConfig):
        for f in dataclasses.fields(source):
            rules = f.metadata
            if f.name == "model":  # the nested GPTConfig: its fields are checked themselves
                continue
            if "internal" in rules:
                assert rules["internal"].strip(), f"{f.name}: say why it is not a control"
                continue
            widget = widgets.get(f"{PREFIX_KEY}{f.name}")
            assert widget is not None, f"{source.__name__}.{f.name} has no control on the Train page"
            assert widget.label == rules["label"], f.name
            if "choices" in rules:
                wanted = offered if f.name == "device" else list(rules["choices"])  # devices: those present
                names = rules.get("choice_labels", {})
                assert widget.options == [names.get(c, c) for c in wanted], f.name
                assert set(wanted) <= set(rules["choices"])
            elif widget.type == "slider":
                assert rules.get("widget") == "slider", f.name
                assert (widget.min, widget.max) == (rules["min"], rules["max"]), f.name
                assert widget.step == rules["step"], f.name
            elif widget.type == "text_input":  # a number box checked against the declared bounds
                kind = core_settings.field_type(train_settings.TrainSettings, f.name)
                assert kind in (int, float) and "min" in rules and "max" in rules, f.name
                assert core_settings.number_range(kind, rules) in widget.help, f.name
                boxes[f.name] = (kind, rules)
            else:
                assert widget.type == "toggle" and isinstance(widget.value, bool), f.name
            shown.append(f.name)
    assert len(shown) == len(train_settings.TRAINING_FIELDS) >= 22
    assert set(shown) == set(train_settings.TRAINING_FIELDS)
    assert len(boxes) >= 15
    # the declared bounds hold: one past them is refused (the value stays), the bounds are taken
    before = dataclasses.replace(at.session_state["train"])
    for name, (kind, rules) in boxes.items():
        past = rules["max"] + (1 if kind is int else rules["max"])
        at.text_input(key=f"{PREFIX_KEY}{name}").set_value(str(past))
    at.run()
    assert_no_exception(at)
    assert at.session_state["train"] == before
    refused = texts(at.error)
    for name, (kind, rules) in boxes.items():
        assert f"{rules['label']}: “" in refused and "more than the maximum" in refused, name
    for bound in ("max", "min"):
        for name, (kind, rules) in boxes.items():
            at.text_input(key=f"{PREFIX_KEY}{name}").set_value(str(rules[bound]))
        at.run()
        assert_no_exception(at)
        for name, (kind, rules) in boxes.items():
            assert getattr(at.session_state["train"], name) == rules[bound], (name, bound)


PREFIX_KEY = "train.0."  # widget keys: prefix, generation (0 until a lesson or preset replaces all), field


def test_a_value_outside_the_declared_bounds_is_refused_in_links():
    from core.models import GPTConfig

    too_many = GPTConfig.__dataclass_fields__["n_layer"].metadata["max"] + 1
    at = tiny_page(n_layer=str(too_many), lr="1e9", optimizer="rmsprop")
    warning = shown(texts(at.warning))
    assert f"n_layer must be at most {too_many - 1}" in warning and "lr must be at most" in warning
    assert "optimizer must be one of adamw, muon, sgd" in warning
    defaults = train_settings.TrainSettings()
    assert (at.session_state["train"].n_layer, at.session_state["train"].lr,
            at.session_state["train"].optimizer) == (defaults.n_layer, defaults.lr, defaults.optimizer)


@pytest.mark.parametrize("cuda", [False, True])
def test_the_gpu_preset_is_offered_only_with_a_gpu_and_a_link_to_it_is_named(monkeypatch, cuda):
    import core.device as device_module

    monkeypatch.setattr(device_module, "_cuda_status", lambda: (cuda, "CUDA GPU: X" if cuda else "no CUDA GPU"))
    at = open_page(PAGE)
    assert_no_exception(at)
    assert any(b.key == "train.preset.gpu" for b in at.button) == cuda
    gpu = train_settings.preset_settings("gpu")
    query = {f: str(core_settings.to_params(gpu)[f]) for f in core_settings.to_params(gpu)}
    at = open_page(PAGE, query=query)
    assert_no_exception(at)
    assert "Preset: **GPU**" in texts(at.markdown)


# ------------------------------------------------------------------------------ no silent coercion


@pytest.mark.parametrize("text, why", [("abc", "“abc” is not a number"),
                                       ("1e30", "“1e30” is more than the maximum, 100,000"),
                                       ("12.7", "“12.7” is not a whole number"),
                                       ("-5", "“-5” is less than the minimum, 1"),
                                       ("", "the box is empty")])
def test_a_number_box_refuses_bad_text_and_keeps_the_last_valid_value(text, why):
    """Streamlit's number input turned "abc" and "1e30" into 1 in the browser (then Start trained
    one step); the Train page's boxes refuse them with a message and keep the value in force."""
    at = tiny_page()
    steps = next(t for t in at.text_input if t.label == "Steps")
    steps.set_value(text).run()
    assert_no_exception(at)
    assert at.session_state["train"].max_steps == 2000
    message = texts(at.error)
    assert f"Steps: {why}. Kept 2000; type a whole number from 1 to 100,000." in message
    assert next(t for t in at.text_input if t.label == "Steps").value == "2000"  # the box shows it
    at.button(key="train.start").click().run()
    assert current(at).max_steps == 2000
    next(t for t in at.text_input if t.label == "Steps").set_value(" 1,500 ").run()
    assert at.session_state["train"].max_steps == 1500 and "Steps:" not in texts(at.error)
    assert next(t for t in at.text_input if t.label == "Steps").value == "1500"


def test_after_a_diverged_loss_the_run_trains_on_with_a_smaller_learning_rate():
    at = tiny_page(lr="0.004", schedule="constant")
    at.button(key="train.start").click().run()
    run = current(at)
    original = run.model.forward

    def forward(*args, **kwargs):  # from here on every training step's loss is NaN
        logits, loss = original(*args, **kwargs)
        return logits, (loss * float("nan") if run.model.training else loss)

    run.model.forward = forward
    for _ in range(5):
        if run.status == "error":
            break
        at.run()
    assert run.status == "error" and "diverged" in texts(at.error)
    stopped_at = run.step
    lr_key = f"train.extra_lr.{run.run_id}"
    assert at.text_input(key=lr_key).value == "0.002"  # half the run's learning rate, to start with
    for bad in ("", "nan", "1e30", "fast"):  # refused with a message; the value in force is kept
        at.text_input(key=lr_key).set_value(bad).run()
        assert_no_exception(at)
        assert "Learning rate from here: " in texts(at.error), (bad, texts(at.error))
        assert at.text_input(key=lr_key).value == "0.002"
    at.text_input(key=lr_key).set_value("0.001").run()
    run.model.forward = original
    at.text_input(key="train.extra").set_value("4").run()
    at.button(key="train.extend").click().run()
    assert_no_exception(at)
    assert run.status in ("running", "done") and run.step > stopped_at and run.trainer.config.lr == 0.001
    assert "diverged" not in texts(at.error) and lr_key not in {t.key for t in at.text_input}


def test_the_more_steps_box_refuses_bad_text_too():
    at = tiny_page(max_steps="3")
    assert start_and_finish(at, reruns=20).status == "done"
    at.text_input(key="train.extra").set_value("1e30").run()
    assert "More steps: “1e30” is more than the maximum" in texts(at.error)
    assert at.button(key="train.extend").label == "Train 500 more steps"
    at.button(key="train.extend").click().run()
    assert current(at).max_steps == 503


# ------------------------------------------------------------------------------ presets on a GPU


@pytest.mark.parametrize("cuda", [False, True])
def test_a_preset_chosen_for_a_cuda_run_takes_its_gpu_version(monkeypatch, cuda):
    """core.training.preset_config scales the quick demo and the best preset for a GPU: the page's
    preset buttons use it for the run's device (CUDA here is monkeypatched in: no GPU is needed)."""
    import core.device as device_module
    from core.training import GPU_PRESETS, PRESETS

    monkeypatch.setattr(device_module, "_cuda_status", lambda: (cuda, "CUDA GPU: X" if cuda else "no CUDA GPU"))
    at = open_page(PAGE)
    for name in ("quick_demo", "best", "lecture"):
        at.button(key=f"train.preset.{name}").click().run()
        assert_no_exception(at)
        chosen = at.session_state["train"]
        wanted = (GPU_PRESETS if cuda and name in GPU_PRESETS else PRESETS)[name]()
        assert (chosen.batch_size, chosen.lr, chosen.max_steps) == (wanted.batch_size, wanted.lr, wanted.max_steps)
        assert chosen.device == "auto"  # the student's device choice is kept
        assert f"Preset: **{train_settings.PRESET_TITLES[name]}**" in texts(at.markdown)
    if cuda:  # the GPU version differs from the CPU one (or this test would prove nothing)
        assert GPU_PRESETS["quick_demo"]().batch_size != PRESETS["quick_demo"]().batch_size
    # asking for the CPU on that machine gives the CPU preset
    next(s for s in at.selectbox if s.label == "Device").set_value("cpu").run()
    at.button(key="train.preset.quick_demo").click().run()
    assert at.session_state["train"].batch_size == PRESETS["quick_demo"]().batch_size


def test_after_an_upload_the_controls_are_those_of_the_uploaded_run_at_once():
    """The upload box is below the controls: the page reruns once after a new checkpoint, so Resume
    is there on the very run that loaded it (not one click later)."""
    book = runs.RunBook(owner="apptest")
    stopped = book.create(train_settings.TrainSettings(
        **{**{k: int(v) for k, v in {"context_size": 8, "n_layer": 1, "n_head": 2, "d_embed": 16,
                                     "d_ff": 32, "batch_size": 16}.items()}, "max_steps": 2000}))
    runs.start(stopped)
    stopped.advance(None, n_steps=7)
    runs.stop(stopped)
    at = open_page(PAGE)
    at.session_state["gpt.runbook"] = book
    at.run()
    assert "train.resume" not in {b.key for b in at.button}  # a stopped run cannot resume
    _upload(at, "half.pt", runs.run_to_checkpoint(stopped))
    assert_no_exception(at)
    assert current(at).origin == "half.pt" and current(at).status == "paused"
    assert at.button(key="train.resume").label == "Resume" and "from step 7" in at.button(key="train.resume").help
    assert not at.button(key="train.resume").disabled
    download = next(b for b in at.get("download_button") if b.label == "Download checkpoint (.pt)")
    assert not download.proto.disabled


def test_preset_labels_come_from_measured_times():
    """No hoped-for times: each CPU preset's label is its measured wall time
    (core.train_settings.PRESET_SECONDS, from benchmarks/presets.py --browser)."""
    from ui.training import _fmt_duration

    at = open_page(PAGE)
    for name, title in (("lecture", "Lecture 7"), ("quick_demo", "Quick demo"), ("better", "Better"), ("best", "Best")):
        seconds, where = train_settings.PRESET_SECONDS[(name, "cpu")]
        assert seconds > 0 and where
        button = at.button(key=f"train.preset.{name}")
        assert button.label == f"{title} (~{_fmt_duration(seconds)})"
        assert f"Measured: {seconds:.0f} s from Start to the last step" in button.help
    assert _fmt_duration(38.4) == "40 s" and _fmt_duration(484.8) == "8 min" and _fmt_duration(200) == "3½ min"


def test_a_preset_larger_than_a_hosted_server_allows_is_greyed_out_with_the_reason(monkeypatch):
    """A hosted class caps runs (core.budget: 400,000 parameters and 3,000 steps by default). A
    preset over a cap is a disabled button whose help says which cap and by how much, instead of a
    button that loads settings Start then refuses; the presets that fit stay pressable. The titles
    carry no time measured on a 2-core machine: a class's server trains far slower."""
    hosted = dataclasses.replace(budget.LIMITS, hosted=True, max_params=400_000, max_steps=3000)
    monkeypatch.setattr(budget, "LIMITS", hosted)
    sizes = {name: train_settings.to_train_config(train_settings.preset_settings(name, device="cpu"))
             for name in ("lecture", "quick_demo", "better", "best")}
    too_large = {name for name, config in sizes.items()
                 if config.model.num_params() > 400_000 or config.max_steps > 3000}
    assert too_large == {"best"}  # what the caps are for: the quick demo and better fit a class
    at = open_page(PAGE)
    assert_no_exception(at)
    for name in sizes:
        button = at.button(key=f"train.preset.{name}")
        assert button.disabled == (name in too_large), name
    best = at.button(key="train.preset.best")
    n_params = sizes["best"].model.num_params()
    assert best.help.startswith("**Not on this server:**")
    assert f"the model has {n_params:,} parameters; this server allows 400,000" in best.help
    assert f"{sizes['best'].max_steps:,} steps asked; this server allows 3,000" in best.help
    assert "Use fewer layers" not in best.help  # a preset's settings are not the user's to change
    readme = " ".join((ROOT / "README.md").read_text().split())  # its hosting section quotes the sizes
    assert f"**Best** preset ({n_params:,} parameters, {sizes['best'].max_steps:,} steps)" in readme
    assert "Not on this server" not in at.button(key="train.preset.better").help
    # a class shares the server: no 2-core time on the titles; the help says why and where it is
    for name in sizes:
        button = at.button(key=f"train.preset.{name}")
        assert "~" not in button.label and "shared by a class" in button.help, name
    # without the caps (a lecturer's own machine) every preset can be pressed
    monkeypatch.setattr(budget, "LIMITS", dataclasses.replace(budget.LIMITS, max_params=5_000_000,
                                                              max_steps=20_000))
    at = open_page(PAGE)
    assert not any(at.button(key=f"train.preset.{name}").disabled for name in sizes)
    assert budget.LIMITS.hosted  # still hosted: the titles stay without a time
    assert all("~" not in at.button(key=f"train.preset.{name}").label for name in sizes)


def test_a_hosted_server_offers_the_class_demo_first_and_a_lecturers_machine_does_not(monkeypatch):
    """core.training.class_demo_config: sized for a class's shared server. There it is the first
    preset, and pressing it loads its settings (one layer of width 32, 400 steps); a lecturer's own
    machine, where the quick demo takes seconds, keeps its row as it was."""
    from core.training import PRESETS

    hosted = dataclasses.replace(budget.LIMITS, hosted=True, max_params=400_000, max_steps=3000)
    monkeypatch.setattr(budget, "LIMITS", hosted)
    at = open_page(PAGE)
    assert_no_exception(at)
    keys = [b.key for b in at.button if b.key and b.key.startswith("train.preset.")]
    assert keys[:2] == ["train.preset.class_demo", "train.preset.lecture"], keys
    button = at.button(key="train.preset.class_demo")
    assert button.label == "Class demo" and not button.disabled
    assert "shared by a class" in button.help
    button.click().run()
    assert_no_exception(at)
    loaded = at.session_state["train"]
    assert (loaded.n_layer, loaded.d_embed, loaded.max_steps) == (1, 32, 400)
    assert train_settings.to_train_config(loaded) == dataclasses.replace(PRESETS["class_demo"](), device="auto")
    assert "Preset: **class demo** · 1 layer × 2 heads, width 32" in texts(at.markdown)
    monkeypatch.setattr(budget, "LIMITS", dataclasses.replace(budget.LIMITS, hosted=False))
    at = open_page(PAGE)
    assert "train.preset.class_demo" not in [b.key for b in at.button]


def test_a_finished_run_says_how_long_it_trained_and_the_next_run_is_a_new_run():
    """After a run ends the progress line says how long it trained (it said "time left –"), and the
    button beside "Train N more steps" reads "New run" ("Start" read as "start this one again")."""
    at = open_page(PAGE)
    assert at.button(key="train.start").label == "Start"  # nothing trained yet
    at.session_state["gpt.runbook"] = tiny_trained_book()
    at.run()
    assert_no_exception(at)
    [bar] = at.get("progress")
    assert "finished" in bar.text and "trained for " in bar.text and "time left" not in bar.text, bar.text
    assert at.button(key="train.start").label == "New run"
