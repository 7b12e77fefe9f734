"""A bigger model on the Inside-the-model page at 1024 px: a chart Streamlit draws on a canvas (more
than 2,000 marks' rows: here the 4 layers x 4 heads of a 12-character input, 2,304 cells, whose
picture is wider than the column) keeps its shape when narrowed to its column.

Before: Vega writes a canvas's height in its style, so a canvas narrowed to its column kept its
full height: the maps came out stretched, a grid of 8 layers x 16 heads four times as tall as wide."""

from __future__ import annotations

import pytest

from tests.browser.conftest import TINY, assert_no_error, laptop_page, screenshot, train_then_open, wait_idle

pytestmark = pytest.mark.browser

# 4 layers x 4 heads reading 12 characters; a few steps: the layout is what is tested
WIDE = {**TINY, "context_size": "12", "n_layer": "4", "n_head": "4", "d_embed": "32", "d_ff": "64",
        "max_steps": "5", "val_interval": "5"}

# every chart drawn on a canvas: its drawn box against its own pixels' proportions
CANVASES = """() => [...document.querySelectorAll("[data-testid='stMain'] [data-testid='stVegaLiteChart'] > canvas")]
  .map((c) => { const r = c.getBoundingClientRect();
                const column = c.closest("[data-testid='stElementContainer']").getBoundingClientRect();
                return {label: c.parentElement.getAttribute("aria-label") || "", drawn: r.width / r.height,
                        own: c.width / c.height, width: r.width, ownWidth: c.width / devicePixelRatio,
                        right: r.right, columnRight: column.right}; })"""


@pytest.fixture
def laptop(browser):
    yield from laptop_page(browser, 900)


def test_a_wide_model_inside_keeps_its_charts_in_shape_at_1024(laptop, server_url):
    page = laptop
    train_then_open(page, server_url, WIDE, "Inside the model")
    name = page.get_by_label("Name", exact=True).and_(page.locator("input"))
    name.fill("alexandrina")  # with the "." it starts from: 12 positions
    name.press("Enter")
    wait_idle(page)
    page.wait_for_timeout(1000)  # every chart drawn
    assert_no_error(page)
    canvases = page.evaluate(CANVASES)
    assert canvases, "no chart was drawn on a canvas: this test no longer tests that case"
    squeezed = [c for c in canvases if c["width"] < c["ownWidth"] - 1]
    assert squeezed, canvases  # the grid of maps is wider than the column
    for c in canvases:
        assert abs(c["drawn"] / c["own"] - 1) < 0.02, c  # the same proportions as drawn by Vega
        assert c["right"] <= c["columnRight"] + 1, c
    assert "every layer and head" in page.locator("[data-testid='stMain']").inner_text()
    screenshot(page, "inside_wide_model_1024")
