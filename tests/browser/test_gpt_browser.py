"""Browser test of the names-GPT pages: train live until the curve has two validation points,
screenshot, stop; then the Sample and Inside-the-model pages of the same session, screenshot each;
back on the Train page the run is where it was."""

from __future__ import annotations

import re
import time

import pytest

from tests.browser.conftest import (
    QUERY,
    VAL_INTERVAL,
    assert_no_error,
    current_step,
    open_train_page,
    progress_text,
    screenshot,
    wait_for_step,
    wait_idle,
)

pytestmark = pytest.mark.browser

def shoot(page, name: str) -> None:
    """A tall viewport (Streamlit scrolls inside its own container), no hover tooltip."""
    page.mouse.move(0, 0)
    page.wait_for_timeout(400)
    path = screenshot(page, name)
    assert path.exists()


# the words of an element whose lines break inside them (a letter on one line, the next on the next)
BROKEN_INSIDE_A_WORD = """(el) => {
  const out = [], walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  let prev = null, prevTop = null;
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (let i = 0; i < node.length; i++) {
      const range = document.createRange(); range.setStart(node, i); range.setEnd(node, i + 1);
      const rect = range.getClientRects()[0];
      if (!rect || /\\s/.test(node.data[i])) { prev = " "; continue; }
      if (prevTop !== null && rect.top > prevTop + 2 && prev !== null && !/[\\s\\-/]/.test(prev))
        out.push(node.data.slice(Math.max(0, i - 4), i + 4));
      prevTop = rect.top; prev = node.data[i];
    }
  }
  return out;
}"""


# the top of each control in a row of columns: a text box's field, a slider's track (its group)
ROW_TOPS = """(row) => [...row.querySelectorAll(":scope > [data-testid='stColumn']")].map((col) =>
  col.querySelector("[data-testid='stTextInputRootElement'], [role='group']").getBoundingClientRect().top)"""


def test_train_live_then_sample_and_look_inside(page, server_url):
    page.set_viewport_size({"width": 1280, "height": 2600})
    open_train_page(page, server_url, QUERY)
    assert page.get_by_role("heading", name="Train the names GPT").is_visible()
    assert_no_error(page)
    page.get_by_role("button", name="Start", exact=True).click()

    # the fragment ticks on its own: no clicks, the step count rises
    wait_for_step(page, 1, timeout_s=120)
    reached = wait_for_step(page, 2 * VAL_INTERVAL + 5)
    page.wait_for_timeout(1500)  # one more tick: the curve is redrawn with both validation points
    metrics = page.locator("[data-testid='stMetric']").all_inner_texts()
    val_metric = next(m for m in metrics if "Val loss" in m)
    assert re.search(r"\d\.\d{3}", val_metric), val_metric
    assert page.locator("[data-testid='stVegaLiteChart']").count() >= 1
    assert "Names sampled at step" in page.locator("[data-testid='stMarkdown']").all_inner_texts().__str__()
    assert_no_error(page)
    shoot(page, "train_gpt_live")

    page.get_by_role("button", name="Stop").click()
    # the click's rerun waits for the running tick to end: wait for its result, not for idleness
    deadline = time.monotonic() + 60
    while "stopped" not in progress_text(page) and time.monotonic() < deadline:
        page.wait_for_timeout(300)
    assert "stopped" in progress_text(page)
    wait_idle(page)
    stopped_at = current_step(page)
    assert stopped_at >= reached
    page.wait_for_timeout(1500)
    assert current_step(page) == stopped_at  # nothing trains after Stop

    page.locator("[data-testid='stSidebarNav']").get_by_text("Sample names").click()
    wait_idle(page)
    assert page.get_by_role("heading", name="Sample names").is_visible()
    assert page.locator("[data-testid='stDataFrame']").count() >= 1
    assert page.locator("[data-testid='stMetric']").filter(has_text="New").count() == 1
    assert_no_error(page)
    shoot(page, "sample_names")

    page.locator("[data-testid='stSidebarNav']").get_by_text("Inside the model").click()
    wait_idle(page)
    assert page.get_by_role("heading", name="Inside the model").is_visible()
    assert page.locator("[data-testid='stVegaLiteChart']").count() >= 4
    assert_no_error(page)
    shoot(page, "inside_model")
    # at 1024 px the metric beside the PCA chart has a quarter of the page: its label wraps between
    # words; Streamlit cuts it to one line with "…" ("Vowel / consona…"), and a projector has no hover
    page.set_viewport_size({"width": 1024, "height": 2600})
    page.wait_for_timeout(500)
    cut = page.evaluate("""() => [...document.querySelectorAll("[data-testid='stMain'] [data-testid='stMetricLabel']")]
      .filter((label) => [label, ...label.querySelectorAll("*")].some((el) => el.scrollWidth > el.clientWidth + 1))
      .map((label) => label.textContent)""")
    assert cut == [], cut
    # and every chart is laid out at its column's width (core/viz/fit.py), the 27 x 64 embedding
    # matrix too (its dimension indices thinned out), not shrunk as a picture
    shrunk = page.evaluate("""() => [...document.querySelectorAll("[data-testid='stMain'] .vega-embed svg")]
      .filter((svg) => svg.getBoundingClientRect().width < Number(svg.getAttribute("width")) - 1)
      .map((svg) => svg.getAttribute("width"))""")
    assert shrunk == [], shrunk
    # a refusal of the Sample page's "Names" box (a row of five at 1024 px) is said under the row,
    # at the row's width (ui.state.refusals_below): in the box's 113 px column it was ~232 px tall
    # and pushed the other four boxes down. Its words are never broken at a letter ("Name|s: “ab|c”")
    page.locator("[data-testid='stSidebarNav']").get_by_text("Sample names").click()
    wait_idle(page)
    box = page.get_by_role("textbox", name="Names", exact=True)
    row = page.locator("[data-testid='stMain'] [data-testid='stHorizontalBlock']").filter(has=box).last
    tops_before = row.evaluate(ROW_TOPS)
    box.fill("abc")
    box.press("Enter")
    wait_idle(page)
    alerts = page.locator("[data-testid='stMain'] [data-testid='stAlert']").filter(has_text="is not a number")
    assert alerts.count() == 1
    refusal = alerts.first
    assert "Names: “abc” is not a number" in refusal.inner_text()
    assert row.locator("[data-testid='stAlert']").count() == 0  # not in the row
    row_box, refusal_box = row.bounding_box(), refusal.bounding_box()
    assert refusal_box["y"] >= row_box["y"] + row_box["height"] - 1  # under the row
    assert abs(refusal_box["x"] - row_box["x"]) <= 2 and refusal_box["width"] >= row_box["width"] - 4
    tops = row.evaluate(ROW_TOPS)
    assert len(tops) == 5 and max(tops) - min(tops) <= 2, tops  # the five boxes in line
    assert all(abs(a - b) <= 2 for a, b in zip(tops, tops_before)), (tops_before, tops)  # none moved
    assert refusal.evaluate(BROKEN_INSIDE_A_WORD) == [], refusal.inner_text()
    page.set_viewport_size({"width": 1280, "height": 2600})

    page.locator("[data-testid='stSidebarNav']").get_by_text("Train the names GPT").click()
    wait_idle(page)
    assert current_step(page) == stopped_at and "stopped" in progress_text(page)  # the run was kept
