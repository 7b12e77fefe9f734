"""Lecture mode on every page, in a real browser at 1280×720 (a projector): every piece of text that
is drawn as text (not inside a chart, a formula or the data grid's canvas) is at least 16 px, the
text typed in boxes too, and no page name in the sidebar is cut off. Charts hold their own floors
(axes ≥ 16 px, values ≥ 14 px), checked for every builder in tests/core/test_viz.py."""

from __future__ import annotations

import re

import pytest

from tests.browser.conftest import SHOTS, assert_no_error, wait_idle
from ui.nav import LESSONS

pytestmark = pytest.mark.browser

MIN_PX = 16  # the smallest text we hold to on a projector

# text elements under 16 px, with their text; skips charts (own floors), KaTeX (scaled by its own
# rule) and the data grid (a canvas, zoomed as a whole)
SMALL_TEXT = """(minPx) => {
  const small = [];
  const all = document.querySelectorAll("[data-testid='stMain'] *, [data-testid='stSidebar'] *");
  for (const el of all) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    if (!el.checkVisibility({visibilityProperty: true})) continue;  // e.g. inside a closed expander
    if (el.closest(".katex, [data-testid='stVegaLiteChart'], [data-testid='stDataFrame'], "
                   + "[data-testid='stTooltipIcon']")) continue;
    const typed = el.matches("input, textarea") && el.type !== "checkbox" && el.type !== "radio";
    const ownText = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!typed && !ownText) continue;
    const px = parseFloat(getComputedStyle(el).fontSize);
    if (px < minPx) small.push(`${el.tagName} ${px}px: ${(el.value || el.textContent).trim().slice(0, 40)}`);
  }
  return small;
}"""

# sidebar page names whose text runs past their link or the sidebar
CUT_NAMES = """() => {
  const sidebar = document.querySelector("[data-testid='stSidebar']").getBoundingClientRect();
  return [...document.querySelectorAll("[data-testid='stSidebarNavLink']")].flatMap((link) => {
    const box = link.getBoundingClientRect();
    const text = link.querySelector("[data-testid='stMarkdownContainer'] p") || link;
    const range = document.createRange(); range.selectNodeContents(text);
    const right = Math.max(...[...range.getClientRects()].map((r) => r.right));
    return right > Math.min(box.right, sidebar.right) + 0.5 ? [`${text.textContent}: ${right} > ${box.right}`] : [];
  });
}"""

# labels, buttons and metrics that Streamlit draws on one line cut with "…" (its .stMarkdownEllipsis
# box) and whose text is wider than that box
CUT_TEXT = """() => [...document.querySelectorAll(
    "[data-testid='stMain'] .stMarkdownEllipsis, [data-testid='stSidebar'] .stMarkdownEllipsis")]
  .filter((el) => el.checkVisibility({visibilityProperty: true}) && el.scrollWidth > el.clientWidth + 1)
  .map((el) => `${el.textContent.trim()}: ${el.scrollWidth} px in ${el.clientWidth}`)"""

SETTINGS_TABS = ("Model", "Training", "Device and fine print", "More", "Model structure")


def _open(page, server_url: str, path: str) -> None:
    """Load `path` (with its query) on the server and wait until the page has run."""
    page.goto(f"{server_url}/{path}", wait_until="domcontentloaded")
    page.wait_for_selector("[data-testid='stApp']", timeout=60_000)
    wait_idle(page)


@pytest.fixture(scope="module")
def lecture_page(browser, server_url):
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    _open(page, server_url, "?lecture=1")  # first visit: home
    yield page
    context.close()


@pytest.mark.parametrize("url", ["", *[lesson.url for lesson in LESSONS]], ids=lambda u: u or "home")
def test_lecture_text_is_readable_and_sidebar_names_whole(lecture_page, server_url, url):
    page = lecture_page
    _open(page, server_url, f"{url}?lecture=1")
    page.wait_for_timeout(800)  # let fonts and lazy elements settle
    assert_no_error(page)
    assert page.locator("[data-testid='stSidebarNavLink']").count() >= 10, "lecture mode lost the sidebar"
    assert page.evaluate(SMALL_TEXT, MIN_PX) == []
    assert page.evaluate(CUT_NAMES) == []
    assert page.evaluate(CUT_TEXT) == []
    if url in ("", "causal_attention"):
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"lecture_{url or 'home'}_1280.png"))


def test_lecture_train_settings_are_whole_in_every_tab(lecture_page, server_url):
    # the More tab's toggles were cut ("Biases in the Linear layers and Layer…") at 1280 px
    page = lecture_page
    _open(page, server_url, "train_gpt?lecture=1")
    page.get_by_text("All settings: model, training, device").click()
    for tab in SETTINGS_TABS:
        page.get_by_role("tab", name=tab, exact=True).click()
        wait_idle(page)
        page.wait_for_timeout(300)
        assert page.evaluate(SMALL_TEXT, MIN_PX) == [], tab
        assert page.evaluate(CUT_TEXT) == [], tab
        if tab == "More":
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / "lecture_train_settings_more_1280.png"))


def test_train_the_quick_demo_now_keeps_lecture_mode(browser, server_url):
    """A page with no model yet offers "Train the quick demo now", which opens the Train page with
    the demo training: that page came up in student mode (st.switch_page lost the sidebar switch
    and the lecture=1 of the address)."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    try:
        _open(page, server_url, "sample_names?lecture=1")
        page.get_by_role("button", name="Train the quick demo now").click()
        page.get_by_role("heading", name="Train the names GPT").wait_for(timeout=60_000)
        page.get_by_role("button", name="Stop").click()  # the demo need not finish
        wait_idle(page)
        assert "lecture=1" in page.url
        assert page.locator("[data-testid='stSidebar'] [data-testid='stCheckbox'] input").first.is_checked()
        assert page.evaluate(SMALL_TEXT, MIN_PX) == []
        page.locator("[data-testid='stSidebarNav']").get_by_text("Sample names", exact=True).click()
        wait_idle(page)
        assert "lecture=1" in page.url  # and it stays on for the next page
    finally:
        context.close()


# a tiny run, so the pages that show a trained model have one (ends by itself in seconds)
TINY = ("context_size=8&n_layer=1&n_head=2&d_embed=16&d_ff=32&batch_size=32&max_steps=60"
        "&val_interval=20&warmup_steps=0")


def test_lecture_pages_of_a_trained_model_are_whole(lecture_page, server_url):
    # the Sample page's metric labels were cut ("In the validation …") once a model was trained
    page = lecture_page
    _open(page, server_url, f"train_gpt?{TINY}&lecture=1")
    page.get_by_role("button", name="Start", exact=True).click()
    bar = page.locator("[data-testid='stProgress']")
    bar.filter(has_text=re.compile(r"step 60 of 60")).wait_for(timeout=180_000)
    wait_idle(page)
    for after in ("Sample names", "Inside the model"):  # the sidebar keeps the session and its model
        page.locator("[data-testid='stSidebarNav']").get_by_text(after, exact=True).click()
        wait_idle(page)
        page.wait_for_timeout(800)
        assert_no_error(page)
        assert page.locator("[data-testid='stMetric']").count() >= 1, f"{after}: no trained model's figures"
        assert page.evaluate(SMALL_TEXT, MIN_PX) == [], after
        assert page.evaluate(CUT_TEXT) == [], after


# tables whose drawn grid runs past the column they sit in
WIDE_TABLES = """() => [...document.querySelectorAll("[data-testid='stDataFrame']")].flatMap((table) => {
  const column = table.closest("[data-testid='stElementContainer']").parentElement.getBoundingClientRect();
  const grid = (table.querySelector("canvas") || table).getBoundingClientRect();
  return grid.right > column.right + 1 ? [`${Math.round(grid.right)} > ${Math.round(column.right)}`] : [];
})"""


# the px of every table's text as seen: the grid's own font (the size in --gdg-base-font-style, which
# the grid sets on its wrapper and draws its canvas with) times the zoom of its element box
TABLE_TEXT_PX = """() => [...document.querySelectorAll("[data-testid='stDataFrame']")].map((table) => {
  const font = getComputedStyle(table.querySelector("canvas")).getPropertyValue("--gdg-base-font-style");
  const zoom = getComputedStyle(table.closest("[data-testid='stElementContainer']")).zoom;
  return parseFloat(font.trim().split(" ").pop()) * parseFloat(zoom);
})"""


def _tables_drawn(page) -> None:
    page.locator("[data-testid='stDataFrame']").nth(2).wait_for(timeout=60_000)  # windows, x and y
    assert page.locator("[data-testid='stDataFrame'] canvas").count() >= 3
    page.wait_for_timeout(800)  # the grid sizes its canvas after the first paint


def test_lecture_tables_stay_inside_their_columns(lecture_page, server_url):
    # a zoomed table stretched to a column ran 30% past it
    page = lecture_page
    _open(page, server_url, "tokens_data?lecture=1")
    _tables_drawn(page)
    assert page.evaluate(WIDE_TABLES) == []
    assert min(page.evaluate(TABLE_TEXT_PX)) >= MIN_PX  # drawn in lecture mode: 17.5 px of its own


@pytest.mark.parametrize("width", [1280, 1024])
def test_lecture_switch_enlarges_tables_already_drawn(browser, server_url, width):
    # A grid takes its font from the root font when it is drawn: the tables on screen when the
    # sidebar's switch turns lecture mode on stay at 14 px, and ui.layout zooms them. In Streamlit
    # 1.67 the zoom's selector matched nothing (a full-screen frame sits between the element box and
    # the grid) and they stayed at 14 px.
    context = browser.new_context(viewport={"width": width, "height": 720})
    page = context.new_page()
    try:
        _open(page, server_url, "")  # first visit: home
        _open(page, server_url, "tokens_data")
        _tables_drawn(page)
        page.locator("[data-testid='stSidebar']").get_by_text("Lecture mode", exact=True).click()
        wait_idle(page)
        page.wait_for_timeout(800)
        assert "lecture=1" in page.url
        sizes = page.evaluate(TABLE_TEXT_PX)
        assert len(sizes) >= 3 and min(sizes) >= MIN_PX, sizes
        assert page.evaluate(WIDE_TABLES) == []  # zoomed, and still inside its column
        page.locator("[data-testid='stDataFrame']").nth(1).scroll_into_view_if_needed()  # x and y
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"lecture_switched_tokens_data_{width}.png"))
    finally:
        context.close()


# each row of a figure and its formulas (ui.layout.wrapping_columns): whether its panels share a
# top (one row), its formulas' smallest font size, the body text's size beside them, formulas cut
FORMULA_ROWS = """() => [...document.querySelectorAll("[class*='st-key-wrap_']")].map((row) => {
  const panels = [...row.querySelectorAll(":scope > [data-testid='stLayoutWrapper']")]
    .map((p) => p.getBoundingClientRect()).filter((r) => r.height > 0);
  const px = (sel) => [...row.querySelectorAll(sel)].map((e) => parseFloat(getComputedStyle(e).fontSize));
  const katex = px(".katex"), words = px("[data-testid='stMarkdownContainer'] p");
  return {tops: new Set(panels.map((r) => Math.round(r.top))).size, panels: panels.length,
          katex: katex.length ? Math.min(...katex) : null, words: words.length ? Math.max(...words) : null,
          cut: [...row.querySelectorAll(".katex-display")].filter((d) => d.scrollWidth > d.clientWidth + 1).length};
}).filter((r) => r.panels > 1 && r.katex)"""


def _settled_rows(page, ok, tries: int = 20) -> list[dict]:
    """FORMULA_ROWS once every row is `ok`, or as they are after `tries` half seconds (the charts
    beside the formulas are fitted to their panels, and KaTeX's fonts load, after the page runs)."""
    for _ in range(tries):
        page.wait_for_timeout(500)
        rows = page.evaluate(FORMULA_ROWS)
        if rows and all(ok(row) for row in rows):
            break
    return rows


@pytest.mark.parametrize("width", [1024, 1280])
def test_lecture_formulas_beside_a_figure_are_as_large_as_its_words(browser, server_url, width):
    """Browser review (2026-12-03): beside a figure, lecture mode drew formulas at 20 px under 23 px
    of words, smaller than the text they explain. From 1200 px they are at least as large as the
    words, and at 1024 and 1280 px every figure keeps its formulas beside it, none cut off."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    try:
        _open(page, server_url, "simple_attention?lecture=1")
        seen = 0
        for step in range(4):  # the four steps: scores, weights, context, all tokens
            if step:
                page.locator(".st-key-walkthrough_stepper").get_by_role("button", name=re.compile("^Next")).click()
                wait_idle(page)
            rows = _settled_rows(page, lambda row: row["tops"] == 1 and row["cut"] == 0)
            for row in rows:
                assert row["tops"] == 1 and row["cut"] == 0, row
                if width >= 1200:
                    assert row["words"] is None or row["katex"] >= row["words"], row
                seen += 1
        assert seen >= 4
        assert_no_error(page)
    finally:
        context.close()
