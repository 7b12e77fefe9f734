"""AppTests of the class challenge's box on the Train page (ui.class_challenge.submit_panel): the
budget and which presets fit, said before training; a refusal by the rules said as such (not as a
failure to compute); the same run at the same step entered once. Sessions and the class are set up
as in tests/classroom/test_class_ui.py."""

from __future__ import annotations

import pytest

from core import train_settings
from core.classroom import challenge
from core.classroom.store import ClassroomStore
from ui.class_challenge import DEFAULT_MAX_PARAMS, DEFAULT_MAX_SECONDS
from ui.training import RUNBOOK_KEY
from tests.classroom.test_class_ui import button, finished_book, klass, no_exception, open_as, texts  # noqa: F401

pytestmark = pytest.mark.usefixtures("one_thread")

SUBMIT = "Submit this run to the class challenge"


def box_text(at) -> str:
    return texts(at.markdown) + " " + texts(at.caption)


def test_the_box_states_the_budget_and_which_presets_fit_before_training(klass):
    store, code, lecturer, (ada, _) = klass
    lect = open_as(lecturer, "pages/11_class.py")
    assert "Presets within 160,000 parameters: Lecture 7, Quick demo; too big: Better, Best" in texts(lect.caption)
    assert "their size only: their training time grows with how busy the server is" in texts(lect.caption)
    button(lect, "Open the challenge").click().run()  # the form's defaults
    no_exception(lect)
    current = store.current_challenge(code)
    assert (current.max_params, current.max_seconds) == (DEFAULT_MAX_PARAMS, DEFAULT_MAX_SECONDS)

    student = open_as(ada, "pages/7_train_gpt.py")  # no run yet: the page's default settings
    text = box_text(student)
    assert f"at most **{DEFAULT_MAX_PARAMS:,} parameters** and **{DEFAULT_MAX_SECONDS:g} s** of training" in text
    quick_demo = challenge.preset_params("quick_demo")
    assert f"Your settings: {quick_demo:,} parameters, within the limit." in text
    assert "Lecture 7, Quick demo; too big: Better, Best" in text
    assert button(student, SUBMIT).disabled  # nothing trained yet

    better = train_settings.preset_settings("better")
    student = open_as(ada, "pages/7_train_gpt.py", state={"train": better})
    assert (f"Your settings: {challenge.preset_params('better'):,} parameters, **over the limit** of "
            f"{DEFAULT_MAX_PARAMS:,}") in box_text(student)


def test_a_title_over_its_limit_is_refused_with_a_message_and_the_last_one_kept(klass):
    """Streamlit's max_chars dropped a longer paste without a word; the box now says so."""
    store, code, lecturer, _ = klass
    lect = open_as(lecturer, "pages/11_class.py")
    lect.text_input(key="class.challenge_title").input("Lowest loss by Friday").run()
    lect.text_input(key="class.challenge_title").input("x" * 250).run()
    no_exception(lect)
    assert ("Title: 250 characters is over the limit of 200; the box went back to “Lowest loss by Friday”."
            in texts(lect.error))
    assert lect.text_input(key="class.challenge_title").value == "Lowest loss by Friday"
    button(lect, "Open the challenge").click().run()
    assert store.current_challenge(code).title == "Lowest loss by Friday"
    assert not lect.error
    button(lect, "Close the challenge").click().run()
    assert lect.text_input(key="class.challenge_title").value == "Lowest loss by Friday"
    assert not lect.error  # the old refusal does not come back with the box


def test_a_refusal_by_the_rules_says_not_entered(klass, finished_book):
    store, code, lecturer, (ada, _) = klass
    run = finished_book.current
    store.open_challenge(code, lecturer.token, "Tiny models", run.n_params - 1, 600)
    student = open_as(ada, "pages/7_train_gpt.py", state={RUNBOOK_KEY: finished_book})
    assert f"This run: {run.n_params:,} parameters" in box_text(student)
    assert "**over the limit**" in box_text(student)  # said before submitting
    button(student, SUBMIT).click().run()
    no_exception(student)
    errors = texts(student.error)
    assert errors == (f"Not entered: the model has {run.n_params:,} parameters; this challenge allows at most "
                      f"{run.n_params - 1:,}."), errors
    assert "Could not compute" not in errors


def test_the_same_run_is_entered_once(klass, finished_book):
    store, code, lecturer, (ada, _) = klass
    opened = store.open_challenge(code, lecturer.token, "Lowest loss", 100_000, 600)
    student = open_as(ada, "pages/7_train_gpt.py", state={RUNBOOK_KEY: finished_book})
    assert "within the limits." in box_text(student)
    button(student, SUBMIT).click().run()
    no_exception(student)
    assert "Submitted: validation loss" in texts(student.success)
    button(student, SUBMIT).click().run()
    no_exception(student)
    assert not student.success and not student.error
    (entry,) = store.submissions(code, opened.id, include_hidden=True)
    assert "This run is already on the board (your entry at step 40: validation loss " \
           f"{entry.val_loss:.4f})" in texts(student.info)

    store.hide_submission(code, lecturer.token, entry.id)
    button(student, SUBMIT).click().run()
    assert "The lecturer has hidden it" in texts(student.info)
    assert len(store.submissions(code, opened.id, include_hidden=True)) == 1


def test_a_click_that_raced_the_first_is_told_it_is_entered(klass, finished_book, monkeypatch):
    """The page's own look-up misses an entry stored a moment ago (a double click racing the first,
    another tab): the store refuses the repeat and the page says so as information, not an error."""
    store, code, lecturer, (ada, _) = klass
    opened = store.open_challenge(code, lecturer.token, "Lowest loss", 100_000, 600)
    student = open_as(ada, "pages/7_train_gpt.py", state={RUNBOOK_KEY: finished_book})
    button(student, SUBMIT).click().run()
    assert "Submitted: validation loss" in texts(student.success)
    monkeypatch.setattr(ClassroomStore, "entry_of", lambda *args: None)  # as if it had not been stored yet
    button(student, SUBMIT).click().run()
    no_exception(student)
    assert not student.success and not student.error
    (entry,) = store.submissions(code, opened.id, include_hidden=True)
    assert f"This run is already on the board (your entry at step 40: validation loss {entry.val_loss:.4f})" \
           in texts(student.info)


def test_a_member_at_the_submission_limit_is_told_when_to_try_again_without_a_scoring(klass, finished_book,
                                                                                       monkeypatch):
    """Five entries in the last ten minutes (stored through another server, as with replicas): the
    page says when the member may submit again, and the server does not score the run first."""
    store, code, lecturer, (ada, _) = klass
    opened = store.open_challenge(code, lecturer.token, "Lowest loss", 100_000, 600)
    limit, window_s = ClassroomStore(store.url).submission_limit  # the page's store keeps the default
    for steps in range(1, limit + 1):
        store.submit(code, ada.token, opened.id, challenge.Evaluation(
            val_loss=2.5, n_params=1_000, steps=steps, seconds=1.0, settings={}, samples=["ada"]))
    scored = []
    monkeypatch.setattr(challenge, "evaluate_run", lambda *args: scored.append(args))
    student = open_as(ada, "pages/7_train_gpt.py", state={RUNBOOK_KEY: finished_book})
    button(student, SUBMIT).click().run()
    no_exception(student)
    errors = texts(student.error)
    assert errors.startswith("Not entered: too many submissions in a short time; try again in "), errors
    wait = int(errors.rsplit("try again in ", 1)[1].split(" s.")[0])
    assert window_s - 60 < wait <= window_s  # the first of the five was stored moments ago
    assert scored == []
    assert len(store.submissions(code, opened.id, include_hidden=True)) == limit
