"""The class challenge's server-side judge: hostile files refused with a message, a real run scored.

Hostile inputs tried: a file over the size limit, a renamed text file, a raw pickle, a torch.save
file carrying a `__reduce__` payload, NaN weights, infinite weights, more parameters than allowed,
a non-causal model, a training time over the limit, a run continued from an uploaded file, a run
still training, a checkpoint whose saved history claims a better loss than the weights give, and
a foreign format tag carrying Markdown and 5 kB of text (quoted back short and escaped).
"""

from __future__ import annotations

import dataclasses
import io
import os
import pickle
from urllib.parse import parse_qsl

import pytest
import torch

from core import runs, train_settings
from core.classroom import challenge
from core.classroom.challenge import ChallengeLimits, SubmissionError, evaluate_run, evaluate_submission
from core.classroom.store import ClassroomStore
from core.settings import from_params

pytestmark = pytest.mark.usefixtures("one_thread")

TINY = dict(context_size=8, n_layer=1, n_head=2, d_embed=16, d_ff=32, batch_size=16,
            max_steps=40, val_interval=20, warmup_steps=0)
ROOMY = ChallengeLimits(max_params=100_000, max_seconds=3600)


@pytest.fixture(scope="module")
def finished_run() -> runs.Run:
    torch.set_num_threads(1)
    run = runs.RunBook(owner="challenge-test").create(train_settings.TrainSettings(**TINY))
    runs.start(run)
    while run.active:
        run.advance(5.0)
    assert run.status == "done"
    return run


@pytest.fixture(scope="module")
def checkpoint_bytes(finished_run) -> bytes:
    return runs.run_to_checkpoint(finished_run)


def tampered(data: bytes, change) -> bytes:
    """The checkpoint with `change(payload)` applied, saved again as a torch.save file."""
    payload = torch.load(io.BytesIO(data), weights_only=True)
    change(payload)
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    return buffer.getvalue()


# ------------------------------------------------------------------------------ accepted


def test_a_finished_run_is_scored_by_the_server(finished_run):
    result = evaluate_run(finished_run, ROOMY)
    expected = finished_run.trainer.evaluate("val")  # the engine's own full pass over the held-out split
    assert result.val_loss == pytest.approx(expected, rel=1e-5)
    assert 1.0 < result.val_loss < 4.0
    assert result.n_params == finished_run.n_params
    assert result.steps == 40
    assert result.seconds == pytest.approx(finished_run.history["elapsed"][-1])
    assert len(result.samples) == 5 and all(isinstance(name, str) for name in result.samples)
    assert result.settings["n_layer"] == "1" and result.settings["d_embed"] == "16"
    link_params = dict(parse_qsl(challenge.settings_query(result.settings)))
    settings, problems = from_params(train_settings.TrainSettings, link_params)
    assert not problems and settings == finished_run.settings  # the board's link reproduces the run
    assert evaluate_run(finished_run, ROOMY).samples == result.samples  # fixed seed: the same names


def test_the_loss_saved_in_the_file_is_never_believed(checkpoint_bytes):
    def claim_a_perfect_loss(payload):
        payload["history"]["val_loss"] = [0.01] * len(payload["history"]["val_loss"])
        payload["history"]["train_loss"] = [0.01] * len(payload["history"]["train_loss"])

    honest = evaluate_submission(checkpoint_bytes, ROOMY, trained_seconds=5)
    boasting = evaluate_submission(tampered(checkpoint_bytes, claim_a_perfect_loss), ROOMY, trained_seconds=5)
    assert boasting.val_loss == pytest.approx(honest.val_loss)
    assert boasting.val_loss > 1.0


def test_a_scored_run_goes_on_the_board(finished_run, tmp_path):
    store = ClassroomStore(f"sqlite:///{tmp_path / 'c.sqlite3'}")
    info, lecturer = store.create_class()
    _, ada = store.join(info.code, "Ada")
    opened = store.open_challenge(info.code, lecturer, "Lowest loss", ROOMY.max_params, ROOMY.max_seconds)
    store.submit(info.code, ada, opened.id, evaluate_run(finished_run, ROOMY))
    (entry,) = store.leaderboard(info.code, opened.id)
    assert entry.nickname == "Ada" and entry.val_loss == pytest.approx(finished_run.trainer.evaluate("val"))
    assert len(entry.samples) == 5


# ------------------------------------------------------------------------------ refused


def test_an_oversized_file_is_refused_before_it_is_read():
    limits = ChallengeLimits(max_params=1000, max_seconds=60)
    huge = b"PK\x03\x04" + bytes(limits.max_bytes)
    with pytest.raises(SubmissionError, match="MB"):
        evaluate_submission(huge, limits, trained_seconds=1)


@pytest.mark.parametrize("content", [b"name,loss\nada,0.1\n", b"", "🚀 not a model".encode()])
def test_a_renamed_file_is_refused(content):
    with pytest.raises(SubmissionError, match="not a PyTorch checkpoint"):
        evaluate_submission(content, ROOMY, trained_seconds=1)


class Payload:
    """Runs a shell command when unpickled (if anything ever unpickled it unsafely)."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def test_a_pickle_payload_is_refused_and_never_runs(tmp_path, checkpoint_bytes):
    marker = tmp_path / "payload-ran"
    hidden_in_checkpoint = tampered(checkpoint_bytes, lambda p: p.__setitem__("history", {"x": Payload(str(marker))}))
    with pytest.raises(SubmissionError, match="Python objects or code"):
        evaluate_submission(hidden_in_checkpoint, ROOMY, trained_seconds=1)
    with pytest.raises(SubmissionError, match="not a PyTorch checkpoint"):
        evaluate_submission(pickle.dumps(Payload(str(marker))), ROOMY, trained_seconds=1)
    assert not marker.exists()


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_weights_are_refused(checkpoint_bytes, bad):
    def poison(payload):
        payload["state_dict"]["lm_head.weight"][0, 0] = bad

    with pytest.raises(SubmissionError, match="NaN or infinite"):
        evaluate_submission(tampered(checkpoint_bytes, poison), ROOMY, trained_seconds=1)


def test_too_many_parameters_are_refused(checkpoint_bytes, finished_run):
    limits = ChallengeLimits(max_params=finished_run.n_params - 1, max_seconds=3600)
    with pytest.raises(SubmissionError, match=f"{finished_run.n_params:,} parameters"):
        evaluate_submission(checkpoint_bytes, limits, trained_seconds=1)
    assert evaluate_submission(checkpoint_bytes, dataclasses.replace(limits, max_params=finished_run.n_params),
                               trained_seconds=1).n_params == finished_run.n_params


def test_a_non_causal_model_is_refused(checkpoint_bytes):
    def unmask(payload):
        payload["model_config"]["causal"] = False
        payload["train_config"]["pack_length"] = None  # packing needs the mask

    with pytest.raises(SubmissionError, match="not causal"):
        evaluate_submission(tampered(checkpoint_bytes, unmask), ROOMY, trained_seconds=1)


def test_training_time_over_the_limit_is_refused(checkpoint_bytes):
    limits = ChallengeLimits(max_params=100_000, max_seconds=30)
    with pytest.raises(SubmissionError, match="at most 30 s"):
        evaluate_submission(checkpoint_bytes, limits, trained_seconds=31)
    with pytest.raises(SubmissionError, match="unknown"):
        evaluate_submission(checkpoint_bytes, limits, trained_seconds=float("nan"))
    halves = ChallengeLimits(max_params=100_000, max_seconds=1.5)  # a limit is never shown rounded
    with pytest.raises(SubmissionError, match=r"trained for 1\.6 s; this challenge allows at most 1\.5 s"):
        evaluate_submission(checkpoint_bytes, halves, trained_seconds=1.6)


def test_only_finished_runs_trained_here_enter(checkpoint_bytes, finished_run):
    uploaded = runs.run_from_checkpoint(checkpoint_bytes, "mine.pt")
    with pytest.raises(SubmissionError, match="uploaded file"):
        evaluate_run(uploaded, ROOMY)
    untrained = runs.RunBook(owner="u").create(train_settings.TrainSettings(**TINY))
    with pytest.raises(SubmissionError, match="not trained"):
        evaluate_run(untrained, ROOMY)
    runs.start(untrained)
    untrained.advance(None, n_steps=1)
    with pytest.raises(SubmissionError, match="still training"):
        evaluate_run(untrained, ROOMY)


def test_the_size_limit_follows_the_parameter_limit():
    assert ChallengeLimits(1000, 60).max_bytes < ChallengeLimits(100_000, 60).max_bytes
    assert ChallengeLimits(10**9, 60).max_bytes == challenge.MAX_BYTES


def test_text_quoted_from_a_hostile_file_is_short_and_shows_no_markup(checkpoint_bytes):
    def foreign_tag(payload):
        payload["format"] = "**[click me](http://example.com)**" + "x" * 5000

    with pytest.raises(SubmissionError, match="not an Attention Lab checkpoint") as refused:
        evaluate_submission(tampered(checkpoint_bytes, foreign_tag), ROOMY, trained_seconds=1)
    message = str(refused.value)
    assert len(message) < 400
    assert "**" not in message and "](" not in message


# ------------------------------------------------------------------------------ default limits


def test_the_default_limits_admit_the_train_pages_default_preset_and_lecture_7():
    """The audit: with the old defaults (50,000 parameters, 60 s) no preset shown on a laptop could
    enter; the Train page opens on the quick demo (104,347 parameters)."""
    from ui.class_challenge import DEFAULT_MAX_PARAMS, DEFAULT_MAX_SECONDS

    page_default = train_settings.to_train_config(train_settings.TrainSettings()).model.num_params()
    assert page_default <= DEFAULT_MAX_PARAMS
    assert challenge.preset_params("lecture") <= DEFAULT_MAX_PARAMS
    assert challenge.preset_params("better") > DEFAULT_MAX_PARAMS  # still a limit worth the name
    # the judged training seconds of the quick demo are below its browser wall time: at least 3 times that
    quick_demo_seconds = train_settings.PRESET_SECONDS[("quick_demo", "cpu")][0]
    assert DEFAULT_MAX_SECONDS >= 3 * quick_demo_seconds
    assert (DEFAULT_MAX_PARAMS, DEFAULT_MAX_SECONDS) == dataclasses.astuple(challenge.default_limits())


def test_which_presets_fit_is_counted_from_their_definitions():
    names = ["lecture", "quick_demo", "better", "best"]
    fits, too_big = challenge.presets_within(challenge.preset_params("lecture"), names)
    assert fits == ["lecture", "quick_demo"] and too_big == ["better", "best"]
    assert challenge.presets_within(challenge.preset_params("quick_demo") - 1, names) == ([], names)
    assert challenge.presets_within(10**9, names) == (names, [])


# ------------------------------------------------------------------------------ one entry per run


def test_a_run_already_entered_is_recognised_and_one_trained_further_is_not(tmp_path):
    run = runs.RunBook(owner="twice").create(train_settings.TrainSettings(**{**TINY, "max_steps": 10}))
    runs.start(run)
    run.advance(None, n_steps=5)
    runs.pause(run)
    store = ClassroomStore(f"sqlite:///{tmp_path / 'c.sqlite3'}")
    info, lecturer = store.create_class()
    _, ada_token = store.join(info.code, "Ada")
    _, alan_token = store.join(info.code, "Alan")
    opened = store.open_challenge(info.code, lecturer, "Lowest loss", ROOMY.max_params, ROOMY.max_seconds)
    def entered(token):
        return store.entry_of(info.code, token, opened.id, *challenge.run_figures(run))

    assert entered(ada_token) is None
    entry = store.submit(info.code, ada_token, opened.id, evaluate_run(run, ROOMY))
    assert entered(ada_token) == entry
    assert entered(alan_token) is None  # someone else's entry
    assert entered("not a member's token") is None  # (submit says why)
    store.hide_submission(info.code, lecturer, entry.id)
    assert entered(ada_token).id == entry.id  # hidden, still entered
    runs.start(run)
    run.advance(None, n_steps=2)  # trained further: a new entry may go in
    runs.pause(run)
    assert entered(ada_token) is None
