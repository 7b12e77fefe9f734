"""Real-browser harness: a real `streamlit run` server on a free loopback port, headless Chromium.

Chromium comes from Debian (`apt-get install -y chromium`); Playwright drives it through
`executable_path`, since `playwright install` cannot download browsers here. Screenshots go to
`artifacts/screenshots/` (git-ignored) so a person can look at them.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "artifacts" / "screenshots"
CHROMIUM = os.environ.get("ATTENTION_LAB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync",
                 "--disable-quic"]
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(port: int, env: dict | None = None) -> subprocess.Popen:
    """`streamlit run` on loopback; returns once /_stcore/health answers (or raises)."""
    cmd = [sys.executable, "-m", "streamlit", "run", str(ROOT / "streamlit_app.py"),
           "--server.port", str(port), "--server.address", "127.0.0.1",
           "--server.headless", "true", "--browser.gatherUsageStats", "false"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
            raise RuntimeError(f"streamlit exited early:\n{out}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError("streamlit did not answer /_stcore/health within 60 s")


@pytest.fixture(scope="session")
def server_url():
    port = free_port()
    proc = start_server(port)
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


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


@pytest.fixture(scope="module")
def warm_url(server_url, browser):
    """Visit the home page once: the first visit to a non-default page of a fresh server shows
    Streamlit's spurious "Page not found" dialog (streamlit/streamlit#9992)."""
    context = browser.new_context()
    page = context.new_page()
    page.goto(server_url, wait_until="domcontentloaded")
    page.wait_for_selector("[data-testid='stApp']", timeout=60_000)
    wait_idle(page)
    context.close()
    return server_url


def wait_idle(page, timeout: float = 60_000) -> None:
    """Wait until the script has finished running after a load or an interaction."""
    page.wait_for_timeout(300)  # let the rerun start before waiting for it to end
    page.wait_for_selector(IDLE, timeout=timeout)


def open_app(page, url: str) -> None:
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_selector("[data-testid='stApp']", timeout=60_000)
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


def screenshot(page, name: str, full_page: bool = True) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    assert path.stat().st_size > 5_000, "screenshot is suspiciously small"
    return path


def assert_no_error(page) -> None:
    """No exception box on the page."""
    assert page.locator("[data-testid='stException']").count() == 0
