"""Real-browser harness: a real `streamlit run` server on a free loopback port, headless Chromium.

The server and the Chromium settings come from `benchmarks.harness` (the benchmarks start the app
the same way). Screenshots go to `artifacts/screenshots/` (git-ignored) so a person can look at them.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import urlencode

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
from benchmarks.harness.browser import (  # noqa: F401 - re-exported for the browser tests
    DRAWN,
    current_step,
    progress_text,
    wait_drawn,
    wait_for_step,
)
from ui.nav import LESSONS

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "artifacts" / "screenshots"

TRAIN_URL = next(lesson.url for lesson in LESSONS if lesson.file == "pages/7_train_gpt.py")
VAL_INTERVAL = 20
# a small names GPT that trains for a long while (3000 steps): for tests that watch a run live
QUERY = {"context_size": "8", "n_layer": "2", "n_head": "2", "d_embed": "32", "d_ff": "64",
         "batch_size": "32", "max_steps": "3000", "val_interval": str(VAL_INTERVAL), "warmup_steps": "20"}
# the tiniest names GPT, 60 steps that end by themselves: for tests that need a trained model
TINY = {"context_size": "8", "n_layer": "1", "n_head": "2", "d_embed": "16", "d_ff": "32",
        "batch_size": "32", "max_steps": "60", "val_interval": "20", "warmup_steps": "0"}
MODES = {False: "plain", True: "lecture"}  # lecture mode off/on, as a failure message names it


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


def open_train_page(page, server_url: str, query: dict) -> None:
    """The Train page opened by its URL with the run's settings in `query`."""
    open_page_url(page, server_url, f"{TRAIN_URL}?{urlencode(query)}", "Train the names GPT")


def train_tiny_then_sample(page, server_url: str, query: dict | None = None) -> None:
    """Train the tiny model to its end on the Train page, then open Sample names from the sidebar
    (the same session: the model is there)."""
    open_page_url(page, server_url, f"{TRAIN_URL}?{urlencode({**(query or {}), **TINY})}", "Train the names GPT")
    page.get_by_role("button", name="Start", exact=True).click()
    wait_for_step(page, 60, timeout_s=180)  # the 60 steps end by themselves
    page.wait_for_timeout(1500)
    page.locator("[data-testid='stSidebarNav']").get_by_text("Sample names").click()
    wait_idle(page)


def train_then_open(page, server_url: str, query: dict, then: str) -> None:
    """Train the run `query` describes (its max_steps, ending by themselves) on the Train page,
    then open the page titled `then` from the sidebar: the same session, so the model is there."""
    open_page_url(page, server_url, f"{TRAIN_URL}?{urlencode(query)}", "Train the names GPT")
    page.get_by_role("button", name="Start", exact=True).click()
    steps = query["max_steps"]
    page.locator("[data-testid='stProgress']").filter(has_text=f"step {steps} of {steps}").wait_for(timeout=60_000)
    wait_idle(page)
    page.locator("[data-testid='stSidebarNav']").get_by_text(then, exact=True).click()
    wait_idle(page)


def switch_lecture_mode(page, on: bool) -> None:
    """Lecture mode on or off with the sidebar's switch (a rerun of the same page, no reload)."""
    switch = page.locator("[data-testid='stSidebar']").get_by_text("Lecture mode", exact=True)
    switch.click()
    wait_idle(page)
    assert ("lecture=1" in page.url) == on, page.url
