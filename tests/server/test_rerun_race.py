"""server.rerun_race: a fragment rerun that finds the page's runner stopped waits for that runner's last
events (its SHUTDOWN) before a new runner starts, so the end of the page run is not dropped."""

import asyncio
import threading
from types import SimpleNamespace

import pytest

from server import rerun_race

SHUTTING_DOWN = "SHUTDOWN_REQUESTED"


class Runner:
    def __init__(self):
        self.requests = []

    def request_rerun(self, data) -> bool:
        self.requests.append(data)
        return True


class Session:
    """The parts of Streamlit's AppSession that the fix touches."""

    def __init__(self, loop):
        self._event_loop = loop
        self._state = "APP_IS_RUNNING"
        self._scriptrunner = None
        self.fragments = {"tick"}
        self.created = []

    def has_fragment(self, fragment_id) -> bool:
        return fragment_id in self.fragments

    def _call_soon_on_event_loop(self, callback) -> None:
        self._event_loop.call_soon_threadsafe(callback)

    def original_create(self, data) -> None:
        self.created.append(data)
        self._scriptrunner = Runner()


create = rerun_race.deferring(Session.original_create, SHUTTING_DOWN)
TICK = SimpleNamespace(fragment_id="tick")
PAGE = SimpleNamespace(fragment_id=None)


def run(scenario):
    """The scenario on an event loop of its own thread (in the full suite, the browser tests leave
    a running loop in the main thread, where asyncio.run refuses to start another)."""
    async def main():
        session = Session(asyncio.get_running_loop())
        await scenario(session)

    outcome = {}

    def in_thread():
        try:
            asyncio.run(main())
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread below
            outcome["error"] = exc

    thread = threading.Thread(target=in_thread)
    thread.start()
    thread.join(10.0)
    assert not thread.is_alive(), "the scenario did not finish"
    if "error" in outcome:
        raise outcome["error"]


def test_without_a_runner_or_for_a_page_run_the_runner_starts_at_once():
    async def scenario(session):
        create(session, TICK)
        assert session.created == [TICK]
        session._scriptrunner = Runner()  # a stopped runner is still there (e.g. a file change rerun)
        create(session, PAGE)
        assert session.created == [TICK, PAGE]

    run(scenario)


def test_a_tick_waits_until_the_stopped_runner_has_shut_down():
    async def scenario(session):
        old = session._scriptrunner = Runner()
        create(session, TICK)
        await asyncio.sleep(0.05)  # the old runner's events are still being handled
        assert session.created == [] and session._scriptrunner is old
        session._scriptrunner = None  # what AppSession does when it handles SHUTDOWN
        await asyncio.sleep(0.03)
        assert session.created == [TICK]

    run(scenario)


def test_a_click_run_that_started_meanwhile_takes_the_tick():
    async def scenario(session):
        session._scriptrunner = Runner()
        create(session, TICK)
        await asyncio.sleep(0.02)
        click_run = session._scriptrunner = Runner()
        await asyncio.sleep(0.03)
        assert session.created == [] and click_run.requests == [TICK]

    run(scenario)


def test_a_fragment_the_page_run_removed_is_not_run():
    async def scenario(session):
        session._scriptrunner = Runner()
        create(session, TICK)
        session.fragments.clear()
        session._scriptrunner = None
        await asyncio.sleep(0.03)
        assert session.created == []

    run(scenario)


def test_a_session_shutting_down_starts_nothing():
    async def scenario(session):
        session._scriptrunner = Runner()
        create(session, TICK)
        session._state = SHUTTING_DOWN
        session._scriptrunner = None
        await asyncio.sleep(0.03)
        assert session.created == []

    run(scenario)


def test_a_runner_that_never_shuts_down_is_replaced_after_the_limit(monkeypatch):
    monkeypatch.setattr(rerun_race, "WAIT_LIMIT_S", 0.05)

    async def scenario(session):
        session._scriptrunner = Runner()
        create(session, TICK)
        await asyncio.sleep(0.02)
        assert session.created == []
        await asyncio.sleep(0.1)
        assert session.created == [TICK]

    run(scenario)


def test_install_patches_streamlit_once():
    from streamlit.runtime.app_session import AppSession

    assert rerun_race.install() and rerun_race.install()
    patched = AppSession._create_scriptrunner
    assert patched.defers_fragment_reruns
    assert not getattr(patched.__wrapped__, "defers_fragment_reruns", False)  # wrapped once, not twice


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__])
