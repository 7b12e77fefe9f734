"""Headless Chromium as the benchmarks and the browser tests drive it (Playwright, sync API).

Chromium comes from Debian (`apt-get install -y chromium`); Playwright drives it through
`executable_path`, since `playwright install` cannot download browsers here.
"""

from __future__ import annotations

import os
import re
import time

CHROMIUM = os.environ.get("ATTENTION_LAB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync",
                 "--disable-quic"]
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"  # the script has finished


def wait_idle(page, timeout: float = 60_000) -> None:
    """Wait until the script has finished running after a load or an interaction."""
    page.wait_for_timeout(300)  # let the rerun start before waiting for it to end
    page.wait_for_selector(IDLE, timeout=timeout)


# The page has finished drawing: the script idle, no lazy-loading skeleton left, the fonts loaded,
# every chart that is shown (not folded away: display:none) drawn as an SVG with its marks, and
# nothing of that (nor the code blocks, tables, metrics, headings and KaTeX formula blocks, their
# boxes and scroll widths) moved for `quiet` ms: a fitted chart is drawn twice, a grid sizes its
# columns once in view, code wraps once its font is there, a KaTeX block laid out before its font
# is wider (and scrolls sideways). Waited for, not guessed: a fixed pause once ended before a chart
# was drawn on a loaded CI machine. Called with the stillness `quiet` (ms) as its argument.
DRAWN = """(quiet) => {
  const main = document.querySelector("[data-testid='stMain']");
  const ready = main && document.querySelector(%r) && document.fonts.status === "loaded"
    && !document.querySelector("[data-testid='stSkeleton']");
  const charts = ready ? [...main.querySelectorAll("[data-testid='stVegaLiteChart']")]
    .filter((c) => c.getClientRects().length) : [];
  // a chart is drawn as SVG, or on a canvas where it has more than 2,000 marks' rows (Streamlit's rule)
  if (!ready || charts.some((c) => !c.querySelector(".vega-embed svg .mark-group, .vega-embed > canvas"))) {
    window.__drawn = null; return false; }
  const box = (e) => { const r = e.getBoundingClientRect();
                       return [r.left, r.top, r.width, r.height].map(Math.round).join(","); };
  const parts = [...main.querySelectorAll("[data-testid='stVegaLiteChart'], .vega-embed svg, "
      + "[data-testid='stCode'], [data-testid='stDataFrame'], .dvn-scroller, [data-testid='stMetric'], "
      + ".katex-display, h1, h2, h3")]
    .map((e) => box(e) + (e.scrollWidth ? "/" + e.scrollWidth : ""));
  const key = [box(main), document.documentElement.scrollHeight, ...parts].join(";");
  const now = performance.now(), last = window.__drawn;
  if (!last || last.key !== key) { window.__drawn = {key, since: now}; return false; }
  return now - last.since >= quiet;
}""" % IDLE


def wait_drawn(page, quiet: int = 300, timeout: float = 30_000) -> None:
    """Wait until the page is drawn and still (DRAWN: script idle, no skeleton, fonts loaded, every
    shown chart drawn, nothing moved for `quiet` ms), after a load or a rerun. It does not wait for
    a rerun to start: after an interaction, `wait_idle` first."""
    page.evaluate("window.__drawn = null")
    page.wait_for_function(DRAWN, arg=quiet, polling=50, timeout=timeout)


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


def progress_text(page) -> str:
    """The text of the page's first progress bar (a training run's "step N of M · ..."), "" if none."""
    bar = page.locator("[data-testid='stProgress']")
    return bar.first.inner_text() if bar.count() else ""


def current_step(page) -> int:
    """The step the progress bar shows (0 before a run has one)."""
    match = re.search(r"step ([\d,]+) of", progress_text(page))
    return int(match.group(1).replace(",", "")) if match else 0


def wait_for_step(page, step: int, timeout_s: float = 240) -> int:
    """Wait until the progress bar shows `step` or later (the page redraws on its own while a run
    trains); the step it shows then."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        now = current_step(page)
        if now >= step:
            return now
        page.wait_for_timeout(500)
    raise AssertionError(f"training did not reach step {step} in {timeout_s} s "
                         f"(progress: {progress_text(page)!r})")
