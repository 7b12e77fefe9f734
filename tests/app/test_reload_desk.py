"""A reloaded tab gets back the runs its previous session trained (ui.desk, server.desks).

AppTest cannot send a cookie, so each test puts the browser's desk token in the new session's
state, as ui.desk.token() does when the cookie arrives; the real cookie is checked in Chromium
(tests/browser/test_reload_browser.py)."""

from __future__ import annotations

import pytest

from core import runs
from server.desks import Desks
from benchmarks.harness import open_app_test
from tests.app.conftest import ROOT, SETTINGS_OPEN, assert_no_exception
from tests.app.gpt_helpers import PAGE, TINY, tiny_trained_book
from ui import desk
from ui.training import RUNBOOK_KEY

TOKEN = "A" * 22


@pytest.fixture
def board(monkeypatch):
    board = Desks()
    monkeypatch.setattr(desk, "desks", lambda: board)
    monkeypatch.setattr(desk, "session_is_connected", lambda session_id: False)
    return board


def reloaded(page=None, **state):
    """A new session of the browser whose desk is TOKEN, on `page` (default: home)."""
    return open_app_test(page, state={**SETTINGS_OPEN, desk.TOKEN_KEY: TOKEN, **state})


def to_train_page(at):
    at.switch_page(str(ROOT / PAGE)).run()
    assert_no_exception(at)
    return at


def successes(at) -> list[str]:
    return [s.value for s in at.success]


def running_book() -> runs.RunBook:
    """A run stopped mid-training by the reload: status still "running"."""
    book = runs.RunBook(owner="old-session")
    settings = runs.TrainSettings(**{**{k: int(v) for k, v in TINY.items()}, "max_steps": 500})
    run = book.create(settings)
    runs.start(run)
    run.advance(0.3)
    assert run.status == "running" and 0 < run.step < 500
    return book


def test_a_reloaded_tab_gets_its_trained_runs_back_with_a_notice(board):
    book = tiny_trained_book(steps=20, owner="old-session")
    board.file(TOKEN, "old-session-id", {RUNBOOK_KEY: book})
    at = reloaded()
    assert_no_exception(at)
    assert at.session_state[RUNBOOK_KEY] is book
    assert book.owner != "old-session"  # queued under the new session's name
    notice = " ".join(successes(at))
    assert "Welcome back" in notice and book.current.label in notice and "was training" not in notice
    to_train_page(at)
    assert book.current.step == 20 and book.current.status == "done"
    assert any("finished" in p.text for p in at.get("progress")), [p.text for p in at.get("progress")]


def test_a_run_that_was_training_comes_back_paused_and_named(board):
    book = running_book()
    step = book.current.step
    board.file(TOKEN, "old-session-id", {RUNBOOK_KEY: book})
    at = reloaded()
    assert_no_exception(at)
    assert book.current.status == "paused" and book.current.step == step  # nothing trained on its own
    notice = " ".join(successes(at))
    assert f"{book.current.label} was training: it is paused at step {step:,}" in notice, notice
    to_train_page(at)
    assert book.current.step == step
    at.button(key="train.resume").click().run()
    assert_no_exception(at)
    assert book.current.status == "running"


def test_the_notice_shows_once(board):
    board.file(TOKEN, "old-session-id", {RUNBOOK_KEY: tiny_trained_book(steps=5)})
    at = reloaded()
    assert any("Welcome back" in s for s in successes(at))
    at.run()
    assert not any("Welcome back" in s for s in successes(at))


def test_a_tab_still_connected_keeps_its_runs(board, monkeypatch):
    book = tiny_trained_book(steps=5)
    board.file(TOKEN, "open-tab", {RUNBOOK_KEY: book})
    monkeypatch.setattr(desk, "session_is_connected", lambda session_id: session_id == "open-tab")
    at = to_train_page(reloaded())
    assert at.session_state[RUNBOOK_KEY] is not book and not at.session_state[RUNBOOK_KEY].runs
    assert not any("Welcome back" in s for s in successes(at))


def test_when_the_server_cannot_say_whether_a_tab_is_open_nothing_is_taken(board, monkeypatch):
    board.file(TOKEN, "maybe-open", {RUNBOOK_KEY: tiny_trained_book(steps=5)})
    monkeypatch.setattr(desk, "session_is_connected", lambda session_id: None)
    at = reloaded()
    assert RUNBOOK_KEY not in at.session_state
    assert board.count() == 1


def test_another_browser_gets_nothing(board):
    board.file("B" * 22, "old-session-id", {RUNBOOK_KEY: tiny_trained_book(steps=5)})
    at = to_train_page(reloaded())
    assert not at.session_state[RUNBOOK_KEY].runs


def test_a_session_with_runs_of_its_own_keeps_them(board):
    mine = tiny_trained_book(steps=5, owner="mine")
    board.file(TOKEN, "old-session-id", {RUNBOOK_KEY: tiny_trained_book(steps=5)})
    at = to_train_page(reloaded(**{RUNBOOK_KEY: mine}))
    assert at.session_state[RUNBOOK_KEY] is mine
    assert not any("Welcome back" in s for s in successes(at))


def test_a_session_files_its_runs_on_its_desk_from_its_first_run_on(board):
    at = to_train_page(reloaded())
    book = at.session_state[RUNBOOK_KEY]
    at.button(key="train.start").click().run()  # the run trains in the page's ticks from here
    filed = board.take_left_behind(TOKEN, "a-new-tab", lambda session_id: False)
    assert filed is not None and filed.things[RUNBOOK_KEY] is book


def test_an_empty_book_is_not_handed_over(board):
    board.file(TOKEN, "looked-only", {RUNBOOK_KEY: runs.RunBook(owner="x")})
    at = reloaded()
    assert RUNBOOK_KEY not in at.session_state
    assert not any("Welcome back" in s for s in successes(at))


def test_a_cookie_this_server_did_not_make_is_not_used():
    """ui.desk.token takes a cookie only in the shape of the tokens it makes: anything else (too
    long, odd characters, a script) gets a new desk, and is never written into the page."""
    import secrets

    for bad in ("short", "A" * 23, "A" * 21 + "!", "'; alert(1); '", "A" * 21 + "'"):
        assert not desk.TOKEN_RE.fullmatch(bad)
    for _ in range(50):
        assert desk.TOKEN_RE.fullmatch(secrets.token_urlsafe(16))


def test_every_page_run_asks_the_browser_to_keep_the_desk_token(board):
    at = reloaded()
    scripts = [h.proto.body for h in at.get("html") if desk.COOKIE in h.proto.body]
    assert len(scripts) == 1 and f"{desk.COOKIE}={TOKEN};" in scripts[0]
    at.run()  # the same element again on every whole-page run: nothing on the page moves
    assert len([h for h in at.get("html") if desk.COOKIE in h.proto.body]) == 1


def test_a_trained_small_lm_race_comes_back_too_and_waits(board):
    """The Small language model page keeps its race (three models trained side by side) under the key
    ui.desk files; after a reload it is there again, at its step, not training."""
    from core.lessons import small_lm, text as texts

    at = reloaded()
    at.switch_page(str(ROOT / "pages/6_small_lm.py")).run()
    assert desk.SMALL_LM_RACE_KEY in at.session_state  # the page's own key: what the desk files
    race = small_lm.SmallLMRace(texts.builtin_text("pangram"), small_lm.SmallLMSettings().race_config())
    race.advance(None, n_steps=20)
    board.file(TOKEN, "old-session-id", {desk.SMALL_LM_RACE_KEY: race})
    back = reloaded()
    assert back.session_state[desk.SMALL_LM_RACE_KEY] is race
    notice = " ".join(successes(back))
    assert "the Small language model race at step 20" in notice and "Start on its page" in notice, notice
    back.switch_page(str(ROOT / "pages/6_small_lm.py")).run()
    assert_no_exception(back)
    assert race.step == 20


def test_a_slice_the_old_session_is_training_ends_before_the_notice_says_the_step(board):
    """The departed session's last tick may be mid-slice when the reload pauses the run: the notice
    waits for that slice, so the step it says is the step the run stays at (a browser run read
    "paused at step 95" over a run at step 96)."""
    import threading

    book = running_book()
    run = book.current
    board.file(TOKEN, "old-session-id", {RUNBOOK_KEY: book})
    slicing, release = threading.Event(), threading.Event()

    def old_tick() -> None:  # the old session's slice: holds the run's lock, then makes 3 steps
        with run.lock:
            slicing.set()
            release.wait(5)
            run.trainer.train(n_steps=3)

    worker = threading.Thread(target=old_tick)
    worker.start()
    slicing.wait(5)
    threading.Timer(0.5, release.set).start()  # the slice ends half a second into the reload
    at = reloaded()
    worker.join(10)
    assert_no_exception(at)
    notice = " ".join(successes(at))
    assert f"paused at step {run.step:,}" in notice, (notice, run.step)
    assert run.status == "paused"
