"""In Chromium against a real server: a run trained live comes back after the page is reloaded
(ui.desk: the browser's desk cookie, server.desks), paused where it was; Resume carries on. A
second tab of the same browser, opened while the first is still open, does not take its runs."""

from __future__ import annotations

import re
import time

import pytest

from tests.browser.conftest import (assert_no_error, current_step, open_train_page, progress_text, screenshot,
                                    wait_for_step, wait_idle)
from ui.desk import COOKIE

pytestmark = pytest.mark.browser

QUERY = {"context_size": "8", "n_layer": "1", "n_head": "2", "d_embed": "16", "d_ff": "32",
         "batch_size": "16", "max_steps": "20000", "val_interval": "50", "warmup_steps": "0"}


def alerts(page) -> str:
    return " ".join(page.locator("[data-testid='stAlert']").all_inner_texts())


def wait_for_status(page, word: str, timeout_s: float = 30) -> str:
    deadline = time.monotonic() + timeout_s
    while word not in progress_text(page) and time.monotonic() < deadline:
        page.wait_for_timeout(300)
    return progress_text(page)


def test_a_reload_mid_run_brings_the_run_back_paused_and_resume_goes_on(browser, warm_url):
    context = browser.new_context(viewport={"width": 1280, "height": 1400})
    try:
        page = context.new_page()
        open_train_page(page, warm_url, QUERY)
        assert COOKIE in [c["name"] for c in context.cookies()]  # set by the first page run
        page.get_by_role("button", name="Start", exact=True).click()
        wait_for_step(page, 30, timeout_s=120)

        other = context.new_page()  # the same browser's second tab, while the first is open
        open_train_page(other, warm_url, QUERY)
        assert "Welcome back" not in alerts(other)
        assert other.locator("[data-testid='stProgress']").count() == 0  # no run of its own
        other.close()

        page.reload()
        wait_idle(page)
        page.wait_for_timeout(1000)
        assert_no_error(page)
        notice = alerts(page)
        assert "Welcome back" in notice and "was training: it is paused at step" in notice, notice
        paused_at = int(re.search(r"paused at step ([\d,]+)", notice).group(1).replace(",", ""))
        assert paused_at >= 30
        assert "paused" in wait_for_status(page, "paused")
        page.wait_for_timeout(1500)  # paused means paused: no tick trains it
        assert current_step(page) == paused_at
        screenshot(page, "train_after_reload")

        page.get_by_role("button", name="Resume").click()
        wait_for_step(page, paused_at + 20, timeout_s=120)
        assert "training" in progress_text(page)
    finally:
        context.close()
