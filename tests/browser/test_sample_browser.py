"""Browser test of the Sample page after a refused prefix (issue 12): the refusal's icon is drawn
(a Material symbol, not an emoji a plain Chromium has no font for), the last valid names stay with
a caption naming what drew them, and the page is screenshotted for a look."""

from __future__ import annotations

import pytest

from tests.browser.conftest import assert_no_error, screenshot, train_tiny_then_sample, wait_idle

pytestmark = pytest.mark.browser

def test_sample_page_after_a_refused_prefix(page, server_url):
    page.set_viewport_size({"width": 1400, "height": 1600})
    train_tiny_then_sample(page, server_url)
    prefix = page.get_by_label("Prefix", exact=True).and_(page.get_by_test_id("stTextInputField"))
    prefix.fill("j")
    prefix.press("Enter")
    wait_idle(page)
    prefix.fill("m4")
    prefix.press("Enter")
    wait_idle(page)
    assert_no_error(page)
    alert = page.locator("[data-testid='stAlertContainer']").filter(has_text="never saw")
    assert alert.count() == 1
    icon = alert.locator("[data-testid='stAlertDynamicIcon']")
    assert icon.count() == 1 and icon.inner_text().strip() == "block", alert.first.inner_html()[:1500]
    captions = " ".join(page.locator("[data-testid='stCaptionContainer']").all_inner_texts())
    assert "last names that could be sampled" in captions and "prefix “j”" in captions
    page.mouse.move(0, 0)
    page.wait_for_timeout(400)
    assert screenshot(page, "sample_names_refused_prefix").exists()
    table = page.locator("[data-testid='stDataFrame']").first
    box = table.bounding_box()
    assert box is not None and box["width"] > 300  # the table stretches over its column
    # on a phone (after the laptop: the charts are laid out again at the new width), no chart text
    # runs past its chart: "95% (19)" right of its bar and the step chart's x title did
    from tests.browser.test_narrow_screen_browser import CHART_TEXT_CUT
    page.set_viewport_size({"width": 390, "height": 1600})
    page.wait_for_timeout(2000)
    assert page.evaluate(CHART_TEXT_CUT) == []
