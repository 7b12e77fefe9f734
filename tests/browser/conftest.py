"""Real-browser harness: a real `streamlit run` server on a free loopback port, headless Chromium.

The server and the Chromium settings come from `benchmarks.harness` (the benchmarks start the app
the same way). Screenshots go to `artifacts/screenshots/` (git-ignored) so a person can look at them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from benchmarks.harness import (  # noqa: F401 - re-exported for the browser tests
    CHROMIUM,
    CHROMIUM_ARGS,
    IDLE,
    StreamlitServer,
    open_app,
    open_page_url,
    wait_idle,
)
from benchmarks.harness.browser import DRAWN, wait_drawn  # noqa: F401 - re-exported for the browser tests

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "artifacts" / "screenshots"


def serve(env: dict[str, str] | None = None):
    """A real server for the life of a fixture (`yield from serve(...)`), with `env` set in its
    environment: a module's own server for a setting the shared one does not have."""
    server = StreamlitServer(env=env or {})
    server.start(timeout=60)
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def server_url():
    yield from serve()


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        pytest.fail("Chromium is missing: install it with `apt-get install -y chromium` "
                    "(or set ATTENTION_LAB_CHROMIUM to its path)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    yield page
    context.close()


def laptop_page(browser, height: int):
    """A page in a window 1024 px wide (a laptop, the sidebar open: 564 px of page) and `height`
    tall, for a module's tests to share: yield from it in a module-scoped fixture."""
    context = browser.new_context(viewport={"width": 1024, "height": height})
    yield context.new_page()
    context.close()


@pytest.fixture(scope="session")
def warm_url(server_url, browser):
    """Visit the home page once per server: the first visit to a non-default page of a fresh server
    shows Streamlit's spurious "Page not found" dialog (streamlit/streamlit#9992)."""
    context = browser.new_context()
    page = context.new_page()
    page.goto(server_url, wait_until="domcontentloaded")
    page.wait_for_selector("[data-testid='stApp']", timeout=60_000)
    wait_idle(page)
    context.close()
    return server_url


def screenshot(page, name: str, full_page: bool = True) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    assert path.stat().st_size > 5_000, "screenshot is suspiciously small"
    return path


def assert_no_error(page) -> None:
    """No exception box on the page."""
    assert page.locator("[data-testid='stException']").count() == 0
