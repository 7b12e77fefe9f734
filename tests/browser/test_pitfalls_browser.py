"""Browser tests of the Pitfalls page: the overview, opening a pitfall, the SGD/AdamW race, lecture mode."""

from __future__ import annotations

import pytest

from tests.browser.conftest import assert_no_error, open_app, screenshot, wait_idle

pytestmark = pytest.mark.browser


def visible(locator, timeout: float = 90_000) -> bool:
    """Wait for the element (a loaded machine may start the rerun late), then report it."""
    locator.first.wait_for(state="visible", timeout=timeout)
    return locator.first.is_visible()


def open_pitfalls(page, server_url: str, query: str = "") -> None:
    # the root first: it runs the entry point, which registers the st.navigation pages
    open_app(page, server_url)
    open_app(page, f"{server_url}/pitfalls{query}")
    page.set_viewport_size({"width": 1280, "height": 2400})
    wait_idle(page)


def test_overview_then_open_a_pitfall(page, server_url):
    open_pitfalls(page, server_url)
    assert visible(page.get_by_role("heading", name="All pitfalls at a glance"))
    open_buttons = page.locator("[data-testid='stBaseButton-secondary']", has_text="Open")
    assert visible(open_buttons) and open_buttons.count() == 14
    assert_no_error(page)
    screenshot(page, "pitfalls_overview")
    open_buttons.nth(1).click()  # card 2: masking by == 0
    wait_idle(page)
    assert visible(page.get_by_role("heading", name="Masking by"))
    assert visible(page.get_by_text("Visible positions the buggy mask hides"))
    assert "pitfall=mask_zero" in page.url
    assert_no_error(page)
    screenshot(page, "pitfalls_mask_zero")


def test_sgd_against_adamw_race_runs_in_the_browser(page, server_url):
    open_pitfalls(page, server_url, "?pitfall=sgd&optim_steps=20&seed=777")
    page.get_by_role("button", name="Train both for 20 steps").click()
    page.get_by_text("on the whole validation split").wait_for(timeout=180_000)
    wait_idle(page)
    assert_no_error(page)
    assert page.locator("[data-testid='stVegaLiteChart']").count() >= 1
    screenshot(page, "pitfalls_sgd_vs_adamw")


def test_lecture_mode_heatmaps(page, server_url):
    open_pitfalls(page, server_url, "?pitfall=softmax_dim&lecture=1")
    assert visible(page.get_by_role("heading", name="Softmax over the wrong dimension"))
    assert visible(page.get_by_text("[-0.4519, 0.2216]"))
    assert visible(page.locator("[data-testid='stVegaLiteChart']"))
    wait_idle(page)
    assert_no_error(page)
    screenshot(page, "pitfalls_softmax_dim_lecture")
