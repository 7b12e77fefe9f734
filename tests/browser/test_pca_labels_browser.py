"""The character-embedding PCA on the Inside-the-model page, in lecture mode on a 1024 px laptop
(its plot laid out 246 px wide, half as wide as built): no two of its 27 labels run into each other
and none leaves the plot, as Chromium draws them. Written 10 px right of their points, five pairs
overlapped here ("c|g", "h|m", "j|m", "k|t", "t|z") and "e" and "o" ran past the plot's edge;
core.viz.bars.scatter now places each label. tests/core/test_scatter_labels.py checks the same
through vl-convert."""

from __future__ import annotations

import pytest

from tests.browser.conftest import TINY, assert_no_error, laptop_page, screenshot, train_then_open

pytestmark = pytest.mark.browser

# a few steps are enough: the PCA is of whatever the embeddings are
FEW_STEPS = {**TINY, "max_steps": "10", "val_interval": "10"}

# a chart's labels (its last text mark; the others are the axes') as Chromium lays them out, and
# its plot's box (the first background Vega draws is the plot's frame)
CHART_LABELS = """(embed) => {
  const svg = embed.querySelector("svg");
  const marks = [...svg.querySelectorAll("g.mark-text.role-mark")];
  const labels = [...marks[marks.length - 1].querySelectorAll("text")].map((text) => {
    const r = text.getBoundingClientRect();
    return {text: text.textContent, left: r.left, right: r.right, top: r.top, bottom: r.bottom,
            size: parseFloat(text.getAttribute("font-size"))};
  });
  const plot = svg.querySelector("path.background").getBoundingClientRect();
  return {labels, plot: {left: plot.left, right: plot.right, top: plot.top, bottom: plot.bottom}};
}"""


def overlapping(labels: list[dict]) -> list[str]:
    """Pairs of labels whose boxes overlap (by more than rounding)."""
    return [f"{a['text']}|{b['text']}" for i, a in enumerate(labels) for b in labels[i + 1:]
            if min(a["right"], b["right"]) - max(a["left"], b["left"]) > 0.5
            and min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]) > 0.5]


@pytest.fixture
def laptop(browser):
    yield from laptop_page(browser, 768)


def test_pca_labels_do_not_overlap_at_1024_in_lecture_mode(laptop, server_url):
    page = laptop
    train_then_open(page, server_url, {**FEW_STEPS, "lecture": "1"}, "Inside the model")
    assert_no_error(page)
    chart = page.locator("[data-testid='stMain'] .vega-embed[aria-label*='2-D PCA']")
    chart.scroll_into_view_if_needed()
    page.mouse.move(0, 0)  # no tooltip over the labels
    page.wait_for_timeout(500)  # the fitted chart's layout at its column's width
    found = chart.evaluate(CHART_LABELS)
    labels, plot = found["labels"], found["plot"]
    screenshot(page, "inside_pca_labels_1024_lecture", full_page=False)
    assert len(labels) == 27 and all(label["size"] >= 16 for label in labels), labels
    assert overlapping(labels) == []
    outside = [label["text"] for label in labels
               if label["left"] < plot["left"] - 0.5 or label["right"] > plot["right"] + 0.5
               or label["top"] < plot["top"] - 0.5 or label["bottom"] > plot["bottom"] + 0.5]
    assert outside == []
