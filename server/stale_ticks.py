"""A fix for a race inside Streamlit that sends a student back to the page they just left, blank.

Every fragment rerun request from the browser names the page the browser was on when it sent it.
When the server switches the page (st.switch_page: a class member following the lecturer), a
`run_every` timer of the old page can fire before the browser has heard of the switch. Its
request, naming the old page, reaches the server while the new page runs, waits its turn (a
fragment rerun never interrupts a whole-page run), and runs right after it. Streamlit then takes
the old page's name as the page to be on: it tells the browser the page changed back, which
empties the main area, and the fragment itself is gone, so nothing is drawn. The next ticks run
in that state; following the lecturer saw "You are with the lecturer" and a page with nothing in
it. Found by tracing the server's script events in tests/browser/test_class_browser.py, which
failed this way about once in six runs on one busy core (the student's main area stayed empty).

A fragment belongs to the page it was drawn on, so a fragment rerun that names another page
than the one the session is on now is stale: `install()` (called by streamlit_app.py, once per
process) drops it, both when it arrives (AppSession.request_rerun, beside Streamlit's own check
that the fragment still exists: else, folded into a whole-page rerun that is still waiting, it
would lend that rerun its old page) and when its turn comes (ScriptRunner._run_script: it may
have arrived just before the switch). The browser's next tick names the new page and runs as usual.
Only private parts of Streamlit are involved, so `install()` checks that they are there and does
nothing otherwise. ATTENTION_LAB_STALE_TICK_FIX=0 leaves Streamlit as it is.
"""

from __future__ import annotations

import functools
import logging
from typing import Any, Callable

from server.once import once_per_process

log = logging.getLogger(__name__)


@once_per_process("ATTENTION_LAB_STALE_TICK_FIX")
def install() -> bool:
    """Patch Streamlit's AppSession and ScriptRunner once per process; True when the fix is in place."""
    from streamlit.runtime.app_session import AppSession
    from streamlit.runtime.scriptrunner.script_runner import ScriptRunner

    request, run = getattr(AppSession, "request_rerun", None), getattr(ScriptRunner, "_run_script", None)
    if request is None or run is None:
        return False
    AppSession.request_rerun = dropping_on_arrival(request)
    ScriptRunner._run_script = dropping_on_turn(run)
    return True


def is_stale(fragment_ids: Any, page: str | None, current_page: str | None) -> bool:
    """A fragment rerun (`fragment_ids` not empty) that names another page than the current one.
    An empty name on either side (the first run of a session, an old browser) is never stale."""
    return bool(fragment_ids) and bool(page) and bool(current_page) and page != current_page


def current_page(owner: Any) -> str | None:
    """The page the session is on: its pages manager's current page (set as each run starts)."""
    pages = getattr(owner, "_pages_manager", None)
    return getattr(pages, "current_page_script_hash", None)


def dropping_on_arrival(request_rerun: Callable[..., None]) -> Callable[..., None]:
    """`AppSession.request_rerun` that drops a fragment rerun naming a page the session has left."""

    @functools.wraps(request_rerun)
    def request(self, client_state=None) -> None:
        if client_state is not None and is_stale(getattr(client_state, "fragment_id", None),
                                                 getattr(client_state, "page_script_hash", None),
                                                 current_page(self)):
            log.info("dropped a fragment rerun for a page this session has left")
            return None
        return request_rerun(self, client_state)

    request.drops_stale_ticks = True  # tests and diagnostics can tell it is installed
    return request


def dropping_on_turn(run_script: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
    """`ScriptRunner._run_script` that skips a queued fragment rerun naming a page the session left
    while it waited (a whole-page rerun, or a fragment rerun of the current page, runs as before)."""

    @functools.wraps(run_script)
    def run(self, rerun_data) -> None:
        if is_stale(getattr(rerun_data, "fragment_id_queue", None),
                    getattr(rerun_data, "page_script_hash", None), current_page(self)):
            log.info("skipped a queued fragment rerun for a page this session has left")
            return None
        return run_script(self, rerun_data)

    run.drops_stale_ticks = True
    return run
