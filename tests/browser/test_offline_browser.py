"""In Chromium: no page of the app asks any other host for anything. A lecture hall without internet
(or a laptop on a train) gets the whole app: fonts, icons (the tab's icon too), charts and
formulas all come from the server itself."""

from __future__ import annotations

from urllib.parse import urlparse

import pytest

from tests.browser.conftest import assert_no_error, open_app, wait_idle

pytestmark = pytest.mark.browser


def test_every_page_loads_everything_from_the_server_alone(browser, warm_url):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    outside: list[str] = []
    local = urlparse(warm_url).netloc
    page.on("request", lambda request: outside.append(request.url)
            if urlparse(request.url).scheme in ("http", "https", "ws", "wss")
            and urlparse(request.url).netloc != local else None)
    try:
        open_app(page, warm_url)
        links = page.locator("[data-testid='stSidebarNav'] a")
        n_pages = links.count()
        assert n_pages >= 10, n_pages
        for i in range(n_pages):  # through the sidebar, as a student goes: one session, every page
            links.nth(i).click()
            wait_idle(page)
            page.wait_for_timeout(700)  # charts and formulas draw after the script has run
            assert_no_error(page)
        icons = page.evaluate("[...document.querySelectorAll('link[rel*=icon]')].map(l => l.href)")
        assert icons and all(urlparse(href).netloc == local for href in icons), icons
        assert outside == [], sorted(set(outside))[:10]
    finally:
        context.close()
