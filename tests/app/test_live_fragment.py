"""ui/live.py: the one live-training fragment, driven with a toy run that implements the protocol."""

from __future__ import annotations

import contextlib

from streamlit.testing.v1 import AppTest

from core import budget


def _script() -> None:
    import time

    import streamlit as st

    from core.live_training import SteppedTraining
    from ui.live import live_fragment

    class Countdown(SteppedTraining):
        def __init__(self, steps: int):
            self.left, self.history = steps, []

        @property
        def done(self) -> bool:
            return self.left == 0

        def train_step(self) -> None:
            time.sleep(0.2)  # longer than a click's slice (FULL_RUN_SLICE_S): one step per run
            self.left -= 1
            self.history.append(self.left)

    run = st.session_state.setdefault("toy", Countdown(st.session_state.get("toy.steps", 3)))
    paused = st.session_state.get("toy.paused", False)

    def finished(outcome) -> None:
        st.session_state["toy.finished"] = st.session_state.get("toy.finished", 0) + 1

    live_fragment("toy", run, lambda: st.write(f"history {len(run.history)}"),
                  running=lambda: not paused and not run.done, on_finish=finished)
    st.write(f"page run, {run.left} left")


def _texts(at) -> str:
    return " ".join(str(e.value) for e in at.markdown) + " " + " ".join(str(e.value) for e in at.info)


def test_the_fragment_trains_while_running_and_reruns_the_page_when_done():
    at = AppTest.from_function(_script)
    at.session_state["toy.steps"] = 3
    at.run()
    run = at.session_state["toy"]
    assert run.left == 2 and "history 0" in _texts(at)  # drawn first, then one (short) slice
    at.run()
    assert run.left == 1 and "history 1" in _texts(at)
    at.run()  # the last step: on_finish runs once, then the whole page reruns
    assert run.done and at.session_state["toy.finished"] == 1
    assert "page run, 0 left" in _texts(at) and "history 3" in _texts(at)
    at.run()
    assert at.session_state["toy.finished"] == 1  # a finished run is only drawn
    assert not at.exception


def test_a_paused_run_is_drawn_but_not_trained():
    at = AppTest.from_function(_script)
    at.session_state["toy.paused"] = True
    at.run()
    at.run()
    assert at.session_state["toy"].left == 3 and "history 0" in _texts(at)


def test_a_busy_server_shows_the_queue_and_the_run_waits_its_turn():
    at = AppTest.from_function(_script)
    at.session_state["toy.steps"] = 10
    with contextlib.ExitStack() as others:
        for i in range(budget.SLOTS.capacity):  # other sessions hold every slot
            assert others.enter_context(budget.SLOTS.slot(f"other-session-{i}"))
        at.run()
        assert at.session_state["toy"].left == 10
        assert "Waiting for a free training slot" in _texts(at) and "ahead of you" in _texts(at)
    at.run()
    assert at.session_state["toy"].left == 9 and "Waiting" not in _texts(at)


def test_where_page_runs_take_turns_a_page_run_draws_and_never_asks_for_a_slot(monkeypatch):
    """Hosted, page runs take turns (core.budget.PageRuns): a click's page run holds one of the few
    turns, so it must not wait for a training slot; it only draws, and the fragment's ticks train."""
    import ui.live

    monkeypatch.setattr(ui.live, "FULL_RUN_SLICE_S", 0.0)  # what ui.live sets when PageRuns is on
    at = AppTest.from_function(_script)
    with contextlib.ExitStack() as others:
        for i in range(budget.SLOTS.capacity):  # every slot taken: a run that asked would queue
            assert others.enter_context(budget.SLOTS.slot(f"other-session-{i}"))
        at.run()
    assert at.session_state["toy"].left == 3 and "history 0" in _texts(at)
    assert "Waiting for a free training slot" not in _texts(at) and not at.exception
