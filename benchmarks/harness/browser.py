"""Headless Chromium as the benchmarks and the browser tests drive it (Playwright, sync API).

Chromium comes from Debian (`apt-get install -y chromium`); Playwright drives it through
`executable_path`, since `playwright install` cannot download browsers here.
"""

from __future__ import annotations

import os

CHROMIUM = os.environ.get("ATTENTION_LAB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync",
                 "--disable-quic"]
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"  # the script has finished


def wait_idle(page, timeout: float = 60_000) -> None:
    """Wait until the script has finished running after a load or an interaction."""
    page.wait_for_timeout(300)  # let the rerun start before waiting for it to end
    page.wait_for_selector(IDLE, timeout=timeout)


def open_app(page, url: str) -> None:
    """Load `url` and wait until the app has drawn it."""
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_selector("[data-testid='stApp']", timeout=60_000)
    # a new page reads "notRunning" before its first run starts: wait for that run's first element
    # (every page has one), so the wait below is for the run's end, not for a run not yet begun
    page.wait_for_selector("[data-testid='stMain'] [data-testid='stElementContainer']",
                           state="attached", timeout=60_000)
    wait_idle(page)


def open_page_url(page, server_url: str, path: str, heading: str) -> None:
    """Open a page by its own URL (`path` may carry a query). The root is visited first (it registers
    the st.navigation pages); a fresh server may still answer a page's URL with a spurious "Page not
    found" (streamlit/streamlit#9992), so the URL is loaded again until the page's heading is there."""
    open_app(page, server_url)
    for _ in range(4):
        open_app(page, f"{server_url}/{path}")
        if page.get_by_text("Page not found").count() == 0 and \
                page.get_by_role("heading", name=heading).count():
            return
        page.wait_for_timeout(1000)
    raise AssertionError(f"{path} did not open from its URL")
