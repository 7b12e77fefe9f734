"""Browser tests of the Pitfalls page: the overview, opening a pitfall, the SGD/AdamW race, lecture mode."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from core import pitfalls as pf
from tests.browser.conftest import (
    MODES,
    assert_no_error,
    open_app,
    screenshot,
    switch_lecture_mode,
    wait_drawn,
    wait_idle,
)

pytestmark = pytest.mark.browser


def visible(locator, timeout: float = 90_000) -> bool:
    """Wait for the element (a loaded machine may start the rerun late), then report it."""
    locator.first.wait_for(state="visible", timeout=timeout)
    return locator.first.is_visible()


def open_pitfalls(page, warm_url: str, query: str = "") -> None:
    # a server whose root has been visited (warm_url): its first visit registers the st.navigation
    # pages; the window's size set first, so the page is drawn once, at that size
    page.set_viewport_size({"width": 1280, "height": 2400})
    open_app(page, f"{warm_url}/pitfalls{query}")


def test_overview_then_open_a_pitfall(page, warm_url):
    open_pitfalls(page, warm_url)
    assert visible(page.get_by_role("heading", name="All pitfalls at a glance"))
    open_buttons = page.locator("[data-testid='stBaseButton-secondary']", has_text="Open")
    assert visible(open_buttons)
    expect(open_buttons).to_have_count(14, timeout=30_000)  # the cards are drawn one after another
    assert_no_error(page)
    screenshot(page, "pitfalls_overview")
    open_buttons.nth(1).click()  # card 2: masking by == 0
    wait_idle(page)
    assert visible(page.get_by_role("heading", name="Masking by"))
    assert visible(page.get_by_text("Visible positions the buggy mask hides"))
    assert "pitfall=mask_zero" in page.url
    assert_no_error(page)
    screenshot(page, "pitfalls_mask_zero")


def test_sgd_against_adamw_race_runs_in_the_browser(page, warm_url):
    # 10 steps, the fewest the page allows: a validation point, the curves and both final losses
    open_pitfalls(page, warm_url, "?pitfall=sgd&optim_steps=10&seed=777")
    page.get_by_role("button", name="Train both for 10 steps").click()
    page.get_by_text("on the whole validation split").wait_for(timeout=180_000)
    wait_idle(page)
    assert_no_error(page)
    assert page.locator("[data-testid='stVegaLiteChart']").count() >= 1
    # both runs finished, each with its validation loss
    for label in ("SGD lr 0.01 (lecture)", "AdamW lr 0.003"):
        metric = page.locator("[data-testid='stMetric']").filter(has_text=label)
        assert metric.count() == 1, label
        assert re.fullmatch(r"\d+\.\d{3}", metric.locator("[data-testid='stMetricValue']").inner_text().strip()), label
    screenshot(page, "pitfalls_sgd_vs_adamw")


def test_lecture_mode_heatmaps(page, warm_url):
    open_pitfalls(page, warm_url, "?pitfall=softmax_dim&lecture=1")
    assert visible(page.get_by_role("heading", name="Softmax over the wrong dimension"))
    assert visible(page.get_by_text("[-0.4519, 0.2216]"))
    assert visible(page.locator("[data-testid='stVegaLiteChart']"))
    wait_idle(page)
    assert_no_error(page)
    screenshot(page, "pitfalls_softmax_dim_lecture")


# the four pitfalls whose tables were wider than their box at 1024 px (columns behind a scroll bar)
WIDE_TABLES = ("no_scaling", "sgd", "vocab_order", "prep_global")
GRID_OVERFLOW = """grid => { const s = grid.querySelector('.dvn-scroller');
    return !s ? "not drawn" : s.scrollWidth > s.clientWidth + 3 ? `${s.scrollWidth} > ${s.clientWidth}` : null; }"""


CUT_METRICS = """() => [...document.querySelectorAll(
    "[data-testid='stMain'] :is([data-testid='stMetricLabel'], [data-testid='stMetricDelta'])")]
  .filter((m) => [m, ...m.querySelectorAll("*")].some((el) => el.scrollWidth > el.clientWidth + 1))
  .map((m) => m.textContent)"""


# a grid drawn, and its width and its columns' width the same for `quiet` ms (it sizes its columns
# once it is in view)
GRID_STILL = """([grid, quiet]) => { const s = grid.querySelector('.dvn-scroller');
    if (!s) { grid.__still = null; return false; }
    const key = `${s.scrollWidth}/${s.clientWidth}/${Math.round(grid.getBoundingClientRect().width)}`;
    const now = performance.now(), last = grid.__still;
    if (!last || last.key !== key) { grid.__still = {key, since: now}; return false; }
    return now - last.since >= quiet; }"""


def modes_of(index: int, plain_every: int) -> list[bool]:
    """Lecture mode for every item; plain mode too for every `plain_every`-th (0, k, 2k, ...)."""
    return [False, True] if index % plain_every == 0 else [True]


def check_tables(page, key: str, lecture: bool) -> None:
    where = f"{key} ({MODES[lecture]})"
    assert visible(page.get_by_role("heading", name=pf.MODULES[key].PITFALL.title.replace("`", ""))), where
    grids = page.locator("[data-testid='stMain'] [data-testid='stDataFrame']")
    assert visible(grids), where
    wait_drawn(page)
    expanders = page.locator("[data-testid='stMain'] [data-testid='stExpander'] details",
                             has_text="every character's id")
    for i in range(expanders.count()):  # vocab_order's second and third tables are folded
        if not expanders.nth(i).evaluate("d => d.open"):  # (still open after a lecture-mode switch)
            expanders.nth(i).locator("summary").click()
    if expanders.count():
        grids.nth(2).wait_for(state="visible")
    for i in range(grids.count()):  # a grid sizes its columns once it is in view
        grids.nth(i).scroll_into_view_if_needed()
        page.wait_for_function(GRID_STILL, arg=[grids.nth(i).element_handle(), 300], polling=50, timeout=10_000)
        assert grids.nth(i).evaluate(GRID_OVERFLOW) is None, f"{where}, table {i}: scrolls sideways"
    # nor is a metric's label or delta cut with "…" ("scaled: 1.728; uniform: ln …")
    assert page.evaluate(CUT_METRICS) == [], where
    assert_no_error(page)


def test_pitfall_tables_show_every_column_at_1024(browser, warm_url):
    """At 1024 x 768 with the sidebar open (the lecture-mode grid font is bigger), every table of
    these pitfalls shows all its columns: none scrolls sideways. All four in lecture mode, every
    other one in plain mode too: checked plain, then again after the lecture-mode switch (a rerun)."""
    context = browser.new_context(viewport={"width": 1024, "height": 768})
    page = context.new_page()
    try:
        for index, key in enumerate(WIDE_TABLES):
            modes = modes_of(index, 2)
            open_app(page, f"{warm_url}/pitfalls?pitfall={key}" + ("" if modes[0] is False else "&lecture=1"))
            for lecture in modes:
                if lecture and len(modes) == 2:
                    switch_lecture_mode(page, True)
                check_tables(page, key, lecture)
    finally:
        context.close()


# a metric whose value, label or delta is cut with "…": a metric's value is one line, and in a third
# of a 1024 px page "0.187 … 2.407" showed as "0.187 … …" and "[-0.4519, 0.2216]" as "[-0.4519, …"
CUT_METRIC_TEXT = """() => [...document.querySelectorAll("[data-testid='stMain'] :is([data-testid='stMetricValue'], "
    + "[data-testid='stMetricLabel'], [data-testid='stMetricDelta'])")]
  .filter((m) => [m, ...m.querySelectorAll("*")].some((el) => el.scrollWidth > el.clientWidth + 1))
  .map((m) => m.textContent)"""

# words of the code shown (the sources and the names above them) broken across two lines: two code
# columns of ~250 px at 1024 px showed "sel|f.mask" and "core.pitfalls.softmax_dim.buggy_causal_at|tention"
BROKEN_WORDS = """() => [...document.querySelectorAll("[data-testid='stMain'] :is([data-testid='stCode'] code, "
    + "[data-testid='stCaptionContainer'] code)")].filter((root) => root.getBoundingClientRect().width > 0)
  .flatMap((root) => {
    const broken = [], walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const word of node.textContent.matchAll(/[A-Za-z_][A-Za-z0-9_]*/g)) {
        const range = document.createRange();
        range.setStart(node, word.index);
        range.setEnd(node, word.index + word[0].length);
        const tops = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
        if (tops.size > 1) broken.push(word[0]);
      }
    }
    return broken;
  })"""

# the buggy and the fixed source: where each column starts (its title) and its first code block
CODE_COLUMNS = """() => ["As in the original", "Fixed"].map((title) => {
  const heading = [...document.querySelectorAll("[data-testid='stMain'] [data-testid='stMarkdownContainer'] strong")]
    .find((s) => s.textContent.trim().endsWith(title));
  const column = heading.closest("[data-testid='stVerticalBlock']").getBoundingClientRect();
  const code = heading.closest("[data-testid='stVerticalBlock']").querySelector("[data-testid='stCode']");
  return {left: Math.round(column.left), top: Math.round(column.top), width: Math.round(column.width),
          code: Math.round(code.getBoundingClientRect().width)};
})"""


def wait_pitfall(page, key: str) -> None:
    """The pitfall `key` is drawn: its heading, its code, and its fonts and the code's line wrapping."""
    assert visible(page.get_by_role("heading", name=pf.MODULES[key].PITFALL.title.replace("`", "")))
    assert visible(page.locator("[data-testid='stMain'] [data-testid='stCode']"))
    wait_idle(page)
    wait_drawn(page)  # fonts and the code's line wrapping


def open_pitfall(page, url: str, key: str, lecture: bool) -> None:
    open_app(page, f"{url}/pitfalls?pitfall={key}" + ("&lecture=1" if lecture else ""))
    wait_pitfall(page, key)


def next_pitfall(page, key: str) -> None:
    """The page's own Next button (a rerun, no reload), to the pitfall `key`."""
    page.locator("[data-testid='stMain']").get_by_role("button", name="Next", exact=True).click()
    wait_idle(page)
    wait_pitfall(page, key)
    assert f"pitfall={key}" in page.url, page.url


def check_reads_whole(page, key: str, lecture: bool) -> None:
    where = f"{key} ({MODES[lecture]})"
    assert page.evaluate(CUT_METRIC_TEXT) == [], where
    assert page.evaluate(BROKEN_WORDS) == [], where
    buggy, fixed = page.evaluate(CODE_COLUMNS)
    assert min(buggy["code"], fixed["code"]) >= 400, where
    assert fixed["top"] > buggy["top"], where  # under it: the two do not fit side by side
    assert_no_error(page)


# lecture mode's bigger text in the same width is the harder case: every pitfall is checked there,
# and every third one in plain mode (the two modes shared every failure the audit found). One walk
# in course order with the page's Next button; a pitfall checked in both modes is checked in the
# mode the page is in, then again after the lecture-mode switch (a rerun, no reload)
def test_every_pitfall_reads_whole_at_1024(browser, warm_url):
    """At 1024 x 768 with the sidebar open, on every pitfall: no metric cut with "…", and the buggy
    and the fixed code one under the other, each wide enough that no word of it (nor of the
    function names above them) is broken across two lines."""
    context = browser.new_context(viewport={"width": 1024, "height": 768})
    page = context.new_page()
    try:
        lecture = False
        for index, pitfall in enumerate(pf.PITFALL_LIST):
            modes = modes_of(index, 3)
            if index == 0:
                lecture = modes[0]
                open_pitfall(page, warm_url, pitfall.key, lecture)
            else:
                next_pitfall(page, pitfall.key)
            for mode in sorted(modes, key=lambda m: m != lecture):  # the mode it is in first
                if mode != lecture:
                    switch_lecture_mode(page, mode)
                    lecture = mode
                    wait_pitfall(page, pitfall.key)
                if pitfall.key == "softmax_dim":  # the first screen, freshly opened, as the room sees it
                    page.mouse.move(0, 0)
                    page.evaluate("document.activeElement && document.activeElement.blur()")
                    screenshot(page, "pitfalls_softmax_dim_1024" + ("_lecture" if lecture else ""), full_page=False)
                check_reads_whole(page, pitfall.key, lecture)
    finally:
        context.close()


@pytest.mark.parametrize("lecture", [False, True], ids=["plain", "lecture"])
def test_a_wide_page_keeps_the_code_side_by_side(browser, warm_url, lecture):
    context = browser.new_context(viewport={"width": 1600, "height": 900})
    page = context.new_page()
    try:
        for key in ("softmax_dim", "mask_after_softmax"):
            open_pitfall(page, warm_url, key, lecture)
            buggy, fixed = page.evaluate(CODE_COLUMNS)
            assert buggy["top"] == fixed["top"] and fixed["left"] >= buggy["left"] + buggy["width"], key
            assert page.evaluate(BROKEN_WORDS) == [], key
            assert page.evaluate(CUT_METRIC_TEXT) == [], key
            # the row of metrics is one row here
            tops = {round(box["y"]) for box in (m.bounding_box() for m in
                                                page.locator("[data-testid='stMain'] [data-testid='stMetric']").all())}
            assert len(tops) == 1, (key, tops)
    finally:
        context.close()
