"""Helpers shared by the AppTests of the names-GPT pages (Train, Sample, Inside): a tiny model's
settings, the session's runbook, a run trained in the test process, the loss curve's rows."""

from __future__ import annotations

import pandas as pd

from core import runs, train_settings
from tests.app.conftest import assert_no_exception, open_page
from tests.helpers import chart_rows, chart_titles, texts  # noqa: F401 - re-exported for the page tests

PAGE = "pages/7_train_gpt.py"
# A tiny model keeps AppTest training fast; each whole-page run trains one short slice.
TINY = {"context_size": "8", "n_layer": "1", "n_head": "2", "d_embed": "16", "d_ff": "32",
        "batch_size": "16", "max_steps": "2000", "val_interval": "5", "warmup_steps": "0"}


def loss_rows(at) -> pd.DataFrame:
    rows = chart_rows(at)
    return rows[rows.columns.intersection(["run", "step", "loss", "kind"])].dropna() \
        if "kind" in rows else pd.DataFrame(columns=["run", "step", "loss", "kind"])


def book_of(at) -> runs.RunBook:
    return at.session_state["gpt.runbook"]


def current(at) -> runs.Run:
    return book_of(at).current


def tiny_page(**extra):
    at = open_page(PAGE, query={**TINY, **extra})
    assert_no_exception(at)
    return at


def start_and_finish(at, reruns: int) -> runs.Run:
    """Press Start and rerun the page (each rerun trains one slice) until the run is done, at most
    `reruns` times; returns the run, whatever its status then."""
    at.button(key="train.start").click().run()
    for _ in range(reruns):
        if current(at).status == "done":
            break
        at.run()
    return current(at)


def tiny_trained_book(steps: int = 20, owner: str = "apptest", book: runs.RunBook | None = None,
                      **changes) -> runs.RunBook:
    """A RunBook holding one finished tiny run, trained in the test process; with `book`, that
    run is added to it (and made current), as a second run trained on the Train page would be."""
    book = book if book is not None else runs.RunBook(owner=owner)
    settings = train_settings.TrainSettings(**{**{k: int(v) for k, v in TINY.items()}, "max_steps": steps,
                                     "val_interval": 10, **changes})
    run = book.create(settings)
    runs.start(run)
    while run.active:
        run.advance(5.0)
    return book
