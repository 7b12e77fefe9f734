"""Browser tests of the Pitfalls page: the overview, opening a pitfall, the SGD/AdamW race, lecture mode."""

from __future__ import annotations

import pytest

from core import pitfalls as pf
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


# the four pitfalls whose tables were wider than their box at 1024 px (columns behind a scroll bar)
WIDE_TABLES = ("no_scaling", "sgd", "vocab_order", "prep_global")
GRID_OVERFLOW = """grid => { const s = grid.querySelector('.dvn-scroller');
    return !s ? "not drawn" : s.scrollWidth > s.clientWidth + 3 ? `${s.scrollWidth} > ${s.clientWidth}` : null; }"""


CUT_METRICS = """() => [...document.querySelectorAll(
    "[data-testid='stMain'] :is([data-testid='stMetricLabel'], [data-testid='stMetricDelta'])")]
  .filter((m) => [m, ...m.querySelectorAll("*")].some((el) => el.scrollWidth > el.clientWidth + 1))
  .map((m) => m.textContent)"""


@pytest.mark.parametrize("lecture", [False, True], ids=["plain", "lecture"])
def test_pitfall_tables_show_every_column_at_1024(browser, warm_url, lecture):
    """At 1024 x 768 with the sidebar open (the lecture-mode grid font is bigger), every table of
    these pitfalls shows all its columns: none scrolls sideways."""
    context = browser.new_context(viewport={"width": 1024, "height": 768})
    page = context.new_page()
    try:
        for key in WIDE_TABLES:
            open_app(page, f"{warm_url}/pitfalls?pitfall={key}" + ("&lecture=1" if lecture else ""))
            assert visible(page.get_by_role("heading", name=pf.MODULES[key].PITFALL.title.replace("`", "")))
            grids = page.locator("[data-testid='stMain'] [data-testid='stDataFrame']")
            assert visible(grids)
            expanders = page.locator("[data-testid='stMain'] [data-testid='stExpander'] summary",
                                     has_text="every character's id")
            if expanders.count():  # vocab_order's second and third tables are folded
                expanders.first.click()
                grids.nth(2).wait_for(state="visible")
            for i in range(grids.count()):  # a grid sizes its columns once it is in view
                grids.nth(i).scroll_into_view_if_needed()
                page.wait_for_timeout(800)
                assert grids.nth(i).evaluate(GRID_OVERFLOW) is None, f"{key}, table {i}: scrolls sideways"
            # nor is a metric's label or delta cut with "…" ("scaled: 1.728; uniform: ln …")
            assert page.evaluate(CUT_METRICS) == [], key
            assert_no_error(page)
    finally:
        context.close()
