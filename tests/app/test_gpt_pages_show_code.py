"""Honest "show the code" on the names-GPT pages (Train, Sample, Inside the model): every function a
page passes to its code view really ran while the page computed what it shows (a profiler hook
records every Python function called during the page's runs)."""

from __future__ import annotations

import inspect
import sys
import threading
from contextlib import contextmanager

import pytest

from core import runs, train_settings
from tests.app.conftest import assert_no_exception, open_page

TINY = dict(context_size=8, n_layer=1, n_head=2, d_embed=16, d_ff=32, batch_size=16, max_steps=10,
            val_interval=5, warmup_steps=0)


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def shown(monkeypatch):
    """The functions the page passes to ui.code.show_code."""
    import ui.code

    passed: list = []
    original = ui.code.show_code

    def recording(fns, *args, **kwargs):
        passed.extend([fns] if callable(fns) else list(fns))
        return original(fns, *args, **kwargs)

    monkeypatch.setattr(ui.code, "show_code", recording)
    return passed


@contextmanager
def calls():
    """The code objects of every Python function called meanwhile, in any thread."""
    seen: set = set()

    def hook(frame, event, arg):
        if event == "call":
            seen.add(frame.f_code)

    threading.setprofile(hook)
    sys.setprofile(hook)
    try:
        yield seen
    finally:
        sys.setprofile(None)
        threading.setprofile(None)


def assert_all_ran(passed: list, seen: set) -> None:
    """Every function shown ran; a class shown (the model) ran its __init__ and its forward."""
    assert passed, "the page shows no code"
    for fn in passed:
        ran = [getattr(fn, name) for name in ("__init__", "forward")] if inspect.isclass(fn) else [fn]
        for part in ran:
            code = inspect.unwrap(part).__code__
            assert code in seen, f"the code view shows {part.__qualname__}, which did not run"


def trained_book():
    book = runs.RunBook(owner="show-code")
    run = book.create(train_settings.TrainSettings(**TINY))
    runs.start(run)
    while run.active:
        run.advance(5.0)
    return book


@pytest.mark.parametrize("optimizer", ["muon", "adamw"])
def test_the_train_page_shows_the_code_that_trained_the_curve(shown, optimizer):
    from core.training.muon import orthogonalise

    query = {k: str(v) for k, v in TINY.items()} | {"optimizer": optimizer}
    at = open_page("pages/7_train_gpt.py", query=query)
    shown.clear()
    with calls() as seen:
        at.button(key="train.start").click().run()
        for _ in range(3):
            at.run()
    assert_no_exception(at)
    assert at.session_state["gpt.runbook"].current.trainer.history["val_loss"]  # a validation point ran
    assert (orthogonalise in shown) == (optimizer == "muon")  # Muon's code only for a Muon run
    assert_all_ran(shown, seen)


@pytest.mark.parametrize("page", ["pages/8_sample_names.py", "pages/9_inside_model.py"])
def test_the_model_pages_show_the_code_that_computed_them(shown, page):
    at = open_page(page)
    at.session_state["gpt.runbook"] = trained_book()
    shown.clear()
    with calls() as seen:
        at.run()
    assert_no_exception(at)
    assert_all_ran(shown, seen)
