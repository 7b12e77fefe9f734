"""Browser tests of the Tokens & data and Small language model pages (real server, Chromium)."""

from __future__ import annotations

import re
import time

import pytest

from tests.browser.conftest import assert_no_error, open_app, screenshot, wait_idle

pytestmark = pytest.mark.browser


def open_lesson(page, server_url: str, path: str, heading: str) -> None:
    """Open a lesson by its link and wait until its heading and charts are drawn.

    The app's root is opened first: on a freshly started server the very first deep link shows
    Streamlit's "Page not found" dialog (pages from st.navigation are registered by the first
    script run), which would cover the page."""
    open_app(page, server_url)
    open_app(page, f"{server_url}/{path}")
    page.get_by_role("heading", name=heading).wait_for(timeout=60_000)
    page.locator("[data-testid='stVegaLiteChart']").first.wait_for(timeout=60_000)
    wait_idle(page)
    assert page.locator("[role='dialog']").count() == 0


def whole_page_screenshot(page, name: str, max_height: int = 7000) -> None:
    """Streamlit scrolls inside its own container, so a full-page shot is only the viewport:
    grow the viewport to the content's height first, shoot, then restore it."""
    height = page.evaluate(
        "() => { const m = document.querySelector(\"[data-testid='stMain']\");"
        " return m ? m.scrollHeight : document.body.scrollHeight; }")
    page.set_viewport_size({"width": 1280, "height": min(max(int(height), 900), max_height)})
    page.wait_for_timeout(800)  # let the charts re-layout
    screenshot(page, name, full_page=False)
    page.set_viewport_size({"width": 1280, "height": 900})


def _metric(page, label: str) -> str:
    """The value of the metric labelled exactly `label`. A substring match would also take
    "Windows dropped" (0) for "Windows", and read it whenever it came first in the page."""
    exact = page.locator("[data-testid='stMetricLabel']", has_text=re.compile(rf"^\s*{re.escape(label)}\s*$"))
    box = page.locator("[data-testid='stMetric']").filter(has=exact)
    box.first.wait_for(timeout=30_000)
    assert box.count() == 1, f"{box.count()} metrics labelled {label!r}"
    return box.locator("[data-testid='stMetricValue']").inner_text().strip()


def test_tokens_data_page_stride_shows_overlap(page, server_url):
    open_lesson(page, server_url, "tokens_data", "Tokens & data loaders")
    assert page.get_by_role("heading", name="Tokens & data loaders").is_visible()
    assert_no_error(page)
    assert _metric(page, "Windows") == "40"
    assert page.locator(".al-chip").count() > 100  # token chips drawn
    page.locator("[data-testid='stVegaLiteChart']").nth(3).wait_for(timeout=60_000)  # all four charts
    whole_page_screenshot(page, "tokens_data")

    stride = page.get_by_label("stride", exact=True)
    stride.fill("2")
    stride.press("Enter")
    wait_idle(page)
    assert _metric(page, "Windows") == "100"
    assert "stride=2" in page.url
    assert_no_error(page)
    whole_page_screenshot(page, "tokens_data_stride2")

    stride.fill("0")
    stride.press("Enter")
    wait_idle(page)
    assert page.get_by_text(re.compile("stride: “0” is less than the minimum, 1. Kept 2;")).first.is_visible()
    assert stride.input_value() == "2" and "stride=2" in page.url
    assert _metric(page, "Windows") == "100"  # the last valid windows stay
    assert_no_error(page)


# each box of token chips: its height, the chips' heights, the chips its bottom edge cuts
CHIP_BOXES = """() => [...document.querySelectorAll("[role=region]")].filter((r) => r.querySelector(".al-chip"))
  .map((r) => { const box = r.getBoundingClientRect();
    const chips = [...r.querySelectorAll(".al-chip")].map((c) => c.getBoundingClientRect());
    return {label: r.getAttribute("aria-label"), height: box.height, chip: chips[0].height,
            scrolls: r.scrollHeight > r.clientHeight,
            cut: chips.filter((c) => c.top < box.bottom - 0.5 && c.bottom > box.bottom + 0.5).length}; })"""


@pytest.mark.parametrize("lecture", [False, True], ids=["plain", "lecture"])
def test_token_boxes_end_between_two_rows_of_chips(page, server_url, lecture):
    """Browser review: in lecture mode the GPT-2 and Characters boxes cut their last row of chips
    in half (ids hidden). A box that scrolls now ends between two rows, in both modes."""
    open_lesson(page, server_url, "tokens_data" + ("?lecture=1" if lecture else ""), "Tokens & data loaders")
    boxes = page.evaluate(CHIP_BOXES)
    assert len(boxes) == 2 and all(box["scrolls"] for box in boxes), boxes  # the built-in paragraph
    for box in boxes:
        assert box["cut"] == 0, box
        rows = box["height"] / (box["chip"] + 4)  # a chip and its 2 px margins above and below
        assert abs(rows - round(rows)) < 0.05 and round(rows) >= 6, box


def test_tokens_data_page_lecture_mode(page, server_url):
    open_lesson(page, server_url, "tokens_data?lecture=1", "Tokens & data loaders")
    assert_no_error(page)
    page.locator("[data-testid='stVegaLiteChart']").nth(3).wait_for(timeout=60_000)  # all four charts
    whole_page_screenshot(page, "tokens_data_lecture")


def _step(page) -> int:
    text = page.locator("[data-testid='stProgress']").first.inner_text()
    return int(re.search(r"Step ([\d,]+) of", text).group(1).replace(",", ""))


def test_small_lm_page_trains_live(page, server_url):
    open_lesson(page, server_url, "small_lm?max_steps=400&steps_per_tick=100", "Small language model")
    assert page.get_by_role("heading", name="Small language model").is_visible()
    assert_no_error(page)
    assert _step(page) == 0
    whole_page_screenshot(page, "small_lm")

    page.get_by_role("button", name="Start", exact=True).click()
    deadline = time.monotonic() + 150
    last = 0
    while time.monotonic() < deadline:  # the fragment ticks on its own, without any click
        page.wait_for_timeout(2000)
        last = _step(page)
        if last >= 400:
            break
    assert last > 0
    if last < 400:
        page.get_by_role("button", name="Pause", exact=True).click()
    wait_idle(page)
    assert_no_error(page)
    paused_at = _step(page)
    page.wait_for_timeout(1500)
    assert _step(page) == paused_at  # paused (or finished): no more steps
    whole_page_screenshot(page, "small_lm_trained")


def test_your_own_text_is_still_there_after_a_visit_to_another_page(page, server_url):
    """Streamlit drops a widget's value when its page is left; the student's text must come back
    with the page (and the lesson must go on using it), not the built-in text."""
    open_lesson(page, server_url, "tokens_data", "Tokens & data loaders")
    page.get_by_text("Your own text", exact=True).click()
    wait_idle(page)
    box = page.get_by_role("textbox", name="Paste your text")
    mine = "the quick brown fox jumps over the lazy dog. " * 3
    box.fill(mine)
    box.press("Control+Enter")  # a text area applies its value on Ctrl+Enter (or on blur)
    wait_idle(page)
    characters = _metric(page, "Characters")
    assert int(characters.replace(",", "")) < 200  # the lesson reads the student's text, not the built-in
    page.get_by_role("link", name="Home").first.click()
    wait_idle(page)
    page.get_by_role("link", name="Tokens & data loaders").first.click()
    page.get_by_role("heading", name="Tokens & data loaders").wait_for(timeout=60_000)
    wait_idle(page)
    assert page.get_by_role("textbox", name="Paste your text").input_value() == mine
    assert _metric(page, "Characters") == characters
    assert_no_error(page)


def test_a_paste_over_the_limit_is_refused_with_a_message_and_the_last_text_kept(page, server_url):
    """A text area with Streamlit's max_chars drops a longer paste whole, without a word: the
    student saw nothing happen. The own-text box has no max_chars, so the page says why."""
    open_lesson(page, server_url, "tokens_data", "Tokens & data loaders")
    page.get_by_text("Your own text", exact=True).click()
    wait_idle(page)
    box = page.get_by_role("textbox", name="Paste your text")
    box.fill("a short text of mine, to keep.")
    box.press("Control+Enter")
    wait_idle(page)
    assert _metric(page, "Characters") == "30"
    box.focus()
    box.press("Control+A")
    # a real paste inserts its text as one edit, as insertText does (fill() would too, slower)
    page.evaluate("() => document.execCommand('insertText', false, 'word '.repeat(30000))")
    box.press("Control+Enter")
    wait_idle(page)
    assert box.input_value().startswith("word word")  # the paste was taken into the box
    alert = page.locator("[data-testid='stAlert']", has_text="too long (150,000 characters)")
    alert.wait_for(timeout=30_000)
    assert "The last valid text (30 characters) stays in use." in alert.inner_text()
    assert _metric(page, "Characters") == "30"
    assert_no_error(page)
