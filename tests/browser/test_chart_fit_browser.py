"""Charts in a column narrower than they were built for (a 1024 px laptop with the sidebar open):
laid out again to fit, their text at full size, instead of scaled down as a picture
(core/viz/fit.py). Also that the natural width it estimates is right where there is room."""

from __future__ import annotations

import pytest

from tests.browser.conftest import assert_no_error, open_app, screenshot

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

PAGES = [("simple_attention", "Simple attention"), ("multi_head", "Multi-head attention"),
         ("tokens_data", "Tokens & data loaders"), ("small_lm", "Small language model")]
LECTURE_PAGES = PAGES[:2]  # in lecture mode the Tokens and Small LM charts fit at 1024 anyway
ALPHABET = "Bigram table"  # the Small LM page's 28 x 28 table keeps its size (see fit.can_fit)


@pytest.fixture(scope="module")
def laptop(browser):
    context = browser.new_context(viewport={"width": 1024, "height": 2400})
    page = context.new_page()
    yield page
    context.close()


@pytest.mark.parametrize("lecture", [False, True], ids=["plain", "lecture"])
def test_charts_fit_their_column_at_1024_with_text_at_full_size(laptop, warm_url, lecture):
    page = laptop
    smallest = 14 if lecture else 7  # core.viz.fit.value_font's floors
    fitted = 0
    for path, heading in LECTURE_PAGES if lecture else PAGES:
        open_app(page, f"{warm_url}/{path}" + ("?lecture=1" if lecture else ""))
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
            if chart["label"].startswith(ALPHABET):
                continue
            assert chart["drawn"] >= chart["own"] - 1, f"scaled down as a picture: {where}"
            if chart["smallest"] is not None:
                assert chart["smallest"] >= smallest - 0.1, where
            fitted += 1
        if path == "multi_head":
            screenshot(page, f"chart_fit_1024{'_lecture' if lecture else ''}_{path}")
    assert fitted >= (3 if lecture else 8)


def test_with_room_a_chart_is_drawn_at_its_built_size(browser, warm_url):
    """At 1600 px both attention maps have room: their cells are as built (square), so the
    estimated natural width was right; the bar chart's token names stand upright."""
    context = browser.new_context(viewport={"width": 1600, "height": 1600})
    page = context.new_page()
    try:
        open_app(page, f"{warm_url}/multi_head")
        page.get_by_role("heading", name="Multi-head attention").first.wait_for(timeout=60_000)
        page.wait_for_function("""() => document.querySelectorAll(
            "[data-testid='stMain'] .vega-embed svg .mark-rect path").length >= 72""", timeout=30_000)
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
        page.wait_for_timeout(600)
        angles = page.evaluate("""() => [...document.querySelectorAll(
            "[data-testid='stMain'] .vega-embed svg .role-axis-label text")]
            .map((t) => t.getAttribute("transform") || "")""")
        assert angles and not any("rotate(-40" in a for a in angles), angles
    finally:
        context.close()
