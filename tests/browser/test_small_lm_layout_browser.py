"""Browser test of the Small language model page at 1024×768, in lecture mode and without: nothing
the lesson is about is cut off. A visual audit found the training buttons cut to "S…", "P…", "R…",
"Slide's exa…", the by-hand and float32 cross-entropies cut to "1.125402…", metric labels cut
("Train characters (fir…") and the cross-entropy table's "← target" column past the page's edge.
Screenshots: artifacts/screenshots/small_lm_1024[_lecture].png (whole page) and
small_lm_1024[_lecture]_running.png (the training section mid-run)."""

from __future__ import annotations

import pytest

from tests.browser.conftest import assert_no_error, open_page_url, screenshot, wait_idle

pytestmark = pytest.mark.browser

TITLE = "Small language model"

# every element inside `root` whose text runs past its own box (an ellipsis, or clipped)
CUT_JS = """
(root) => [root, ...root.querySelectorAll('*')]
  .filter(el => el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1).length
"""


def _cut(locator) -> list[str]:
    """The texts of the elements of `locator` that are cut."""
    return [el.inner_text().replace("\n", " ") for el in locator.all() if el.evaluate(CUT_JS)]


def _buttons(page):
    names = ["Start", "Pause", "Reset", "Slide's example"]
    return [page.get_by_role("button", name=name, exact=True) for name in names]


@pytest.mark.parametrize("lecture", [True, False], ids=["lecture", "plain"])
def test_nothing_is_cut_at_1024(browser, server_url, lecture):
    context = browser.new_context(viewport={"width": 1024, "height": 768})
    page = context.new_page()
    name = "small_lm_1024" + ("_lecture" if lecture else "")
    try:
        open_page_url(page, server_url, "small_lm" + ("?lecture=1" if lecture else ""), TITLE)
        page.locator("[data-testid='stVegaLiteChart']").first.wait_for(timeout=60_000)
        wait_idle(page)
        page.wait_for_timeout(1500)
        assert_no_error(page)

        for button in _buttons(page):
            assert not _cut(button), f"button cut: {button.inner_text()!r}"
        metrics = page.locator("[data-testid='stMain'] [data-testid='stMetric']")
        assert metrics.count() >= 10
        assert not _cut(metrics), "metrics cut"
        values = [v.inner_text() for v in page.locator("[data-testid='stMetricValue']").all()]
        assert "1.1254029631" in values  # the by-hand loss, every digit
        table = page.locator("[data-testid='stDataFrame']").first
        fits = table.evaluate("(d) => { const s = d.querySelector('.dvn-scroller');"
                              " return !s || s.scrollWidth <= s.clientWidth + 1; }")
        assert fits, "the cross-entropy table scrolls: its target column is past the edge"

        height = page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight")
        page.set_viewport_size({"width": 1024, "height": min(int(height) + 50, 9000)})
        page.wait_for_timeout(1000)
        screenshot(page, name, full_page=False)
        page.set_viewport_size({"width": 1024, "height": 768})
        page.wait_for_timeout(500)

        page.get_by_role("button", name="Start", exact=True).click()  # mid-run: Start off, Pause on
        page.wait_for_timeout(2500)
        page.get_by_role("heading", name="3 · Train side by side").scroll_into_view_if_needed()
        screenshot(page, name + "_running", full_page=False)
        for button in _buttons(page)[:3]:
            assert not _cut(button), f"button cut mid-run: {button.inner_text()!r}"
        pause = page.get_by_role("button", name="Pause", exact=True)
        if pause.is_enabled():
            pause.click()
        wait_idle(page)
        assert_no_error(page)
    finally:
        context.close()
