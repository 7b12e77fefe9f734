"""Charts in a column narrower than they were built for (a 1024 px laptop with the sidebar open):
laid out again to fit, their text at full size, instead of scaled down as a picture
(core/viz/fit.py). Also that the natural width it estimates is right where there is room."""

from __future__ import annotations

import pytest

from tests.browser.conftest import assert_no_error, laptop_page, open_app, screenshot

pytestmark = pytest.mark.browser

# every chart on the page: its SVG's own width, the width it is drawn at, its column's width, the
# smallest number written in its marks as drawn (px), and its aria label
CHARTS = """() => [...document.querySelectorAll("[data-testid='stMain'] .vega-embed svg")].map((svg) => {
  const drawn = svg.getBoundingClientRect().width, own = Number(svg.getAttribute("width"));
  const column = svg.closest("[data-testid='stElementContainer']").getBoundingClientRect().width;
  const sizes = [...svg.querySelectorAll(".role-mark text")]
    .filter((t) => /^-?\\d+\\.\\d+$/.test(t.textContent))
    .map((t) => parseFloat(t.getAttribute("font-size")) * drawn / own);
  return {own, drawn, column, smallest: sizes.length ? Math.min(...sizes) : null,
          label: (svg.closest(".vega-embed").getAttribute("aria-label")
                  || svg.getAttribute("aria-label") || "").slice(0, 60)};
})"""

# the Pitfalls maps side by side: each its own chart since they were one figure scaled as a picture
PITFALL_PAGES = [("pitfalls?pitfall=softmax_dim", "Softmax over the wrong dimension"),
                 ("pitfalls?pitfall=mask_after_softmax", "Masking after the softmax")]
PAGES = [("simple_attention", "Simple attention"), ("multi_head", "Multi-head attention"),
         ("tokens_data", "Tokens & data loaders"), ("small_lm", "Small language model"), *PITFALL_PAGES]
# in lecture mode the Tokens and Small LM charts fit at 1024 anyway
LECTURE_PAGES = [*PAGES[:2], *PITFALL_PAGES]


@pytest.fixture(scope="module")
def laptop(browser):
    yield from laptop_page(browser, 2400)


@pytest.mark.parametrize("lecture", [False, True], ids=["plain", "lecture"])
def test_charts_fit_their_column_at_1024_with_text_at_full_size(laptop, warm_url, lecture):
    page = laptop
    smallest = 14 if lecture else 7  # core.viz.fit.value_font's floors
    fitted = 0
    for path, heading in LECTURE_PAGES if lecture else PAGES:
        open_app(page, f"{warm_url}/{path}" + (("&" if "?" in path else "?") + "lecture=1" if lecture else ""))
        page.get_by_role("heading", name=heading).first.wait_for(timeout=60_000)
        page.wait_for_function("""() => document.querySelector(
            "[data-testid='stMain'] .vega-embed svg .role-mark")""", timeout=30_000)
        page.wait_for_timeout(600)  # the charts' first layout
        assert_no_error(page)
        charts = page.evaluate(CHARTS)
        assert charts, path
        for chart in charts:
            where = f"{path}: {chart}"
            assert chart["drawn"] <= chart["column"] + 1, where  # nothing past its column
            assert chart["drawn"] >= chart["own"] - 1, f"scaled down as a picture: {where}"
            if chart["smallest"] is not None:
                assert chart["smallest"] >= smallest - 0.1, where
            fitted += 1
        if path in ("multi_head", PITFALL_PAGES[0][0]):
            screenshot(page, f"chart_fit_1024{'_lecture' if lecture else ''}_{path.split('?')[0]}")
    assert fitted >= (9 if lecture else 14)


def open_multi_head(page, url: str) -> None:
    """The Multi-head page at `url`, its two 6 x 6 maps drawn (72 cells)."""
    open_app(page, url)
    page.get_by_role("heading", name="Multi-head attention").first.wait_for(timeout=60_000)
    page.wait_for_function("""() => document.querySelectorAll(
        "[data-testid='stMain'] .vega-embed svg .mark-rect path").length >= 72""", timeout=30_000)


def test_with_room_a_chart_is_drawn_at_its_built_size(browser, warm_url):
    """At 1600 px both attention maps have room: their cells are as built (square), so the
    estimated natural width was right; the bar chart's token names stand upright."""
    context = browser.new_context(viewport={"width": 1600, "height": 1600})
    page = context.new_page()
    try:
        open_multi_head(page, f"{warm_url}/multi_head")
        page.wait_for_timeout(300)
        cells = page.evaluate("""() => [...document.querySelectorAll(
            "[data-testid='stMain'] .vega-embed svg")].map((svg) => {
              const r = svg.querySelector(".mark-rect path").getBoundingClientRect();
              return [r.width, r.height]; })""")
        assert len(cells) == 2, cells
        for width, height in cells:
            assert abs(width / height - 1) < 0.08, cells  # 8 %: about 20 px of the whole width
        open_app(page, f"{warm_url}/simple_attention")
        page.get_by_role("heading", name="Simple attention").first.wait_for(timeout=60_000)
        # the charts are drawn after the heading: wait for their axis labels, not a fixed time
        page.wait_for_function("""() => document.querySelectorAll(
            "[data-testid='stMain'] .vega-embed svg .role-axis-label text").length > 0""",
                               timeout=30_000)
        page.wait_for_timeout(300)
        angles = page.evaluate("""() => [...document.querySelectorAll(
            "[data-testid='stMain'] .vega-embed svg .role-axis-label text")]
            .map((t) => t.getAttribute("transform") || "")""")
        assert angles and not any("rotate(-40" in a for a in angles), angles
    finally:
        context.close()


def test_in_lecture_mode_at_1280_the_heads_are_side_by_side(browser, warm_url):
    """Multi-head step 1 compares the heads' maps: in lecture mode at 1280 px they were stacked,
    one per screen (browser review, 2026-12-03). Now side by side where both fit with every value
    at the lecture floor (at 1024 they still go one under the other: the test above)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    try:
        open_multi_head(page, f"{warm_url}/multi_head?lecture=1")
        page.wait_for_timeout(600)
        assert_no_error(page)
        charts = page.evaluate(CHARTS)
        boxes = page.evaluate("""() => [...document.querySelectorAll("[data-testid='stMain'] .vega-embed svg")]
            .map((svg) => { const r = svg.getBoundingClientRect(); return [r.left, r.top, r.right]; })""")
        assert len(charts) == 2 and len(boxes) == 2, charts
        (left1, top1, right1), (left2, top2, _) = boxes
        assert abs(top1 - top2) < 1 and left2 >= right1, boxes  # in one row
        for chart in charts:
            assert chart["drawn"] >= chart["own"] - 1 and chart["smallest"] >= 14 - 0.1, chart
        screenshot(page, "multi_head_heads_1280_lecture", full_page=False)
    finally:
        context.close()


# each table of the Small LM page's section 5: where it is, and its axis labels' boxes as drawn
TABLES = """() => [...document.querySelectorAll("[data-testid='stMain'] .vega-embed")]
  .filter((embed) => /^(Bigram table|Token embedding)/.test(embed.getAttribute("aria-label") || ""))
  .map((embed) => {
    const svg = embed.querySelector("svg"), box = svg.getBoundingClientRect();
    const labels = (axis) => [...svg.querySelectorAll(".role-axis")]  // Vega names its axes in aria-label
      .filter((g) => (g.getAttribute("aria-label") || "").startsWith(`${axis}-axis`))
      .flatMap((g) => [...g.querySelectorAll(".role-axis-label text")])
      .map((t) => { const r = t.getBoundingClientRect();
                    return {text: t.textContent, left: r.left, right: r.right, middle: t.getScreenCTM().f,
                            px: parseFloat(t.getAttribute("font-size")) * box.width / Number(svg.getAttribute("width"))}; });
    return {name: embed.getAttribute("aria-label").slice(0, 14), left: box.left, top: box.top,
            drawn: box.width, own: Number(svg.getAttribute("width")),
            rows: labels("Y"), columns: labels("X")};
  })"""


def _overlaps(labels) -> list[str]:
    """Neighbouring labels side by side whose boxes overlap (by more than half a px)."""
    ordered = sorted(labels, key=lambda label: label["left"])
    return [f"{a['text']}|{b['text']}" for a, b in zip(ordered, ordered[1:]) if a["right"] > b["left"] + 0.5]


def _crowded(labels) -> list[str]:
    """Neighbouring labels one above the other closer than a line of their font, by where Vega
    placed each (a text's box is taller than its letters, and a fallback font's "␣" box sits
    higher than the others)."""
    ordered = sorted(labels, key=lambda label: label["middle"])
    return [f"{a['text']}|{b['text']}" for a, b in zip(ordered, ordered[1:])
            if b["middle"] - a["middle"] < min(a["px"], b["px"]) - 0.5]


@pytest.mark.parametrize("width", [1024, 1600])
def test_small_lm_tables_name_every_character_legibly(browser, warm_url, width):
    """The bigram table (28 x 28) and the token embedding (28 rows): every character that names a
    row or a bigram column is drawn at full size and clear of its neighbours. They were 10 px rows
    for 11 px letters, and at 1024 the bigram table was shrunk into half the row as a picture (7.5
    px letters). Side by side where the page has room (1600), one under the other at 1024."""
    context = browser.new_context(viewport={"width": width, "height": 1200})
    page = context.new_page()
    try:
        open_app(page, f"{warm_url}/small_lm")
        page.get_by_role("heading", name="5 · What each model stores").wait_for(timeout=60_000)
        page.get_by_role("heading", name="5 · What each model stores").scroll_into_view_if_needed()
        page.wait_for_function(f"() => ({TABLES})().length == 2", timeout=30_000)
        page.wait_for_timeout(400)
        bigram, embedding = page.evaluate(TABLES)
        for table in (bigram, embedding):
            assert table["drawn"] >= table["own"] - 1, f"scaled down as a picture: {table['name']}"
            assert len(table["rows"]) == 28, table["name"]
            assert min(label["px"] for label in table["rows"]) >= 11 - 0.1, table["name"]
            assert _crowded(table["rows"]) == [], table["name"]
        assert len(bigram["columns"]) == 28
        assert _overlaps(bigram["columns"]) == []
        assert _overlaps(embedding["columns"]) == []  # thinned where they would
        if width == 1024:
            assert embedding["top"] > bigram["top"] + 300  # below it
        else:
            assert abs(embedding["top"] - bigram["top"]) < 2 and embedding["left"] > bigram["left"] + 400
        screenshot(page, f"small_lm_tables_{width}")
    finally:
        context.close()


@pytest.mark.parametrize("path", ["simple_attention", "simple_attention?step=context",
                                  "causal_attention?causal_step=dropout"])
def test_on_a_phone_a_chart_goes_under_its_formulas_rather_than_into_a_strip(browser, warm_url, path):
    """390 px: a chart and its formulas in one wrapping row. The chart's panel had no floor, so the
    formulas (KaTeX does not wrap) took the row and left the chart 49 px, its caption one letter
    per line. A chart's panel now wraps under the formulas before it gets that narrow."""
    context = browser.new_context(viewport={"width": 390, "height": 2400})
    page = context.new_page()
    try:
        open_app(page, f"{warm_url}/{path}")
        page.wait_for_selector("[data-testid='stMain'] .vega-embed svg", timeout=30_000)
        assert_no_error(page)
        widths = page.evaluate("""() => [...document.querySelectorAll("[data-testid='stMain'] .vega-embed")]
            .map((e) => Math.round(e.getBoundingClientRect().width))""")
        assert widths and min(widths) >= 180, widths
        screenshot(page, f"phone_390_{path.split('?')[-1].replace('=', '_')}")
    finally:
        context.close()
