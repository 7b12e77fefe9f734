"""The text widths the project lays charts and tables out with (core/viz/text_width.py), against
what Chromium draws: every text of every chart on four lesson pages, plain and in lecture mode,
measured in the page (SVG `getComputedTextLength`) and compared with `core.viz.fit.text_px` at
the text's own size and weight. The estimate must never be narrower than the drawn text (a title
broken for a width it then overflows) and at most a few per cent wider."""

from __future__ import annotations

import pytest

from core.viz import fit
from core.viz.text_width import REGULAR_EM, SEMIBOLD_EM
from tests.browser.conftest import assert_no_error, open_app, wait_drawn

pytestmark = pytest.mark.browser

PAGES = ["simple_attention", "causal_attention", "multi_head", "small_lm"]

# each chart text (a title's lines one by one): its text, font size and weight, family, and the
# width Chromium lays it out at
DRAWN_TEXTS = """() => [...document.querySelectorAll("[data-testid='stMain'] .vega-embed svg text")]
  .flatMap((t) => (t.querySelector("tspan") ? [...t.querySelectorAll("tspan")] : [t]))
  .filter((t) => t.textContent.trim())
  .map((t) => { const style = getComputedStyle(t);
    return {text: t.textContent, size: parseFloat(style.fontSize), weight: parseInt(style.fontWeight),
            family: style.fontFamily, px: t.getComputedTextLength()}; })"""


@pytest.fixture(scope="module", params=[False, True], ids=["plain", "lecture"])
def drawn(request, browser, warm_url):
    """Every chart text on PAGES in one mode."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    texts = []
    for path in PAGES:
        open_app(page, f"{warm_url}/{path}" + ("?lecture=1" if request.param else ""))
        wait_drawn(page)
        assert_no_error(page)
        texts += [{**t, "page": path} for t in page.evaluate(DRAWN_TEXTS)]
    context.close()
    return texts


def test_charts_are_drawn_in_source_sans_at_the_two_weights_the_tables_hold(drawn):
    assert len(drawn) > 200
    assert {t["family"].split(",")[0].strip('"') for t in drawn} == {"Source Sans"}
    assert {t["weight"] for t in drawn} == {400, 600}


def test_every_character_a_chart_shows_is_in_the_tables(drawn):
    """The 1-em guess is for what people type (an emoji), not for the lessons' own text."""
    shown = {ch for t in drawn for ch in t["text"]}
    assert shown - set(REGULAR_EM) == set()
    assert {ch for t in drawn if t["weight"] == 600 for ch in t["text"]} - set(SEMIBOLD_EM) == set()


def test_the_estimate_is_never_narrower_than_the_drawn_text_and_close_to_it(drawn):
    too_narrow, too_wide = [], []
    for t in drawn:
        estimate = fit.text_px(t["text"], t["size"], semibold=t["weight"] >= 600)
        if estimate < t["px"] - 0.5:
            too_narrow.append((t["page"], t["text"], round(estimate, 1), round(t["px"], 1)))
        if estimate > t["px"] * 1.04 + 1.5:
            too_wide.append((t["page"], t["text"], round(estimate, 1), round(t["px"], 1)))
    assert too_narrow == [], too_narrow[:10]
    assert too_wide == [], too_wide[:10]
