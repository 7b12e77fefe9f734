"""Browser test of the home page and the lecture-mode switch."""

import pytest

from tests.browser.conftest import assert_no_error, open_app, screenshot, wait_idle

pytestmark = pytest.mark.browser


def test_home_page_renders_and_lecture_mode_switches(page, server_url):
    open_app(page, server_url)
    assert page.get_by_role("heading", name="Attention Lab").is_visible()
    assert_no_error(page)
    screenshot(page, "home")
    page.locator("[data-testid='stSidebar'] [data-testid='stCheckbox']").get_by_text("Lecture mode").click()
    wait_idle(page)
    assert "lecture=1" in page.url
    screenshot(page, "home_lecture_mode")
