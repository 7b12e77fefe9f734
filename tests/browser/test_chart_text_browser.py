"""Chart text on a 1024 px laptop with the sidebar open, plain and in lecture mode, as Chromium
draws it: no title or legend label cut with "…" (Streamlit limits a title to its column less
40 px, Vega a legend label to 160 px) or past the chart's edge, and no two numbers written in the
marks (over bars, in cells) overlapping. The audit found "softmax, mask, re…" over the causal
page's three maps, "0.10820.1077" over the simple-attention bars in lecture mode, "train (dash"
cut at the Small LM loss chart's edge and "1124117509" in the Tokens page's windows.
tests/core/test_chart_text.py checks the same specs through vl-convert at these widths."""

from __future__ import annotations

import re

import pytest

from core.lessons import walkthrough as wt
from core.runs import KINDS
from tests.browser.conftest import (
    MODES,
    TINY,
    assert_no_error,
    laptop_page,
    open_app,
    open_train_page,
    screenshot,
    switch_lecture_mode,
    train_tiny_then_sample,
    wait_drawn,
    wait_for_step,
    wait_idle,
)

pytestmark = pytest.mark.browser

# every chart on the page: its title and legend texts, the ones cut with "…" or past the SVG's
# edges, and the pairs of mark texts (numbers) whose boxes overlap
TEXTS = """() => [...document.querySelectorAll("[data-testid='stMain'] .vega-embed svg")].map((svg) => {
  const box = svg.getBoundingClientRect();
  const shown = (t) => t.textContent.trim() && t.getAttribute("opacity") !== "0";
  const lines = (t) => t.querySelector("tspan") ? [...t.querySelectorAll("tspan")].map((s) => s.textContent)
                                                : [t.textContent];  // a title on several lines
  const words = [...svg.querySelectorAll(".role-title text, .role-legend-label text, .role-axis-title text")]
    .filter(shown);
  const marks = [...svg.querySelectorAll(".role-mark text")]
    .filter((t) => shown(t) && !t.closest(".role-axis, .role-legend, .role-title"))
    .map((t) => ({text: t.textContent, r: t.getBoundingClientRect()}));
  const overlapping = [];
  for (let a = 0; a < marks.length; a++) for (let b = a + 1; b < marks.length; b++) {
    const A = marks[a].r, B = marks[b].r;
    const w = Math.min(A.right, B.right) - Math.max(A.left, B.left);
    const h = Math.min(A.bottom, B.bottom) - Math.max(A.top, B.top);
    if (w > 0.5 && h > 0.5) overlapping.push(`${marks[a].text}|${marks[b].text}`);
  }
  return {label: (svg.closest(".vega-embed").getAttribute("aria-label") || "").slice(0, 60),
          texts: words.map((t) => lines(t).join(" ")),
          cut: words.flatMap(lines).filter((line) => line.trim().endsWith("…")),
          outside: words.filter((t) => { const r = t.getBoundingClientRect();  // a y title is turned
                                         return !/rotate/.test(t.getAttribute("transform") || "")
                                           && (r.left < box.left - 1 || r.right > box.right + 1); })
                        .map((t) => t.textContent),
          numbers: marks.length, overlapping};
})"""

# (page and query, a title or legend text that must be written whole somewhere on it)
PAGES = [
    ("causal_attention?causal_step=order", "softmax, mask,"),
    ("causal_attention?causal_step=dropout", "weights, unchanged by"),
    ("simple_attention?step=scores", "scores of query"),
    ("simple_attention?step=weights", "weights of query"),
    ("simple_attention?step=context", "context vector"),
    ("self_attention?sa_step=weights", "W_q"),
    ("multi_head?mh_step=why", "initial W_q of every"),
    ("pitfalls?pitfall=fit_indent", "optimizer steps"),
    ("pitfalls?pitfall=short_names", "gives no example"),
    ("pitfalls?pitfall=no_position", "How much the last output"),
    ("tokens_data", "token position : token"),
    ("small_lm", "train (dashed)"),
]


@pytest.fixture(scope="module")
def laptop(browser):
    yield from laptop_page(browser, 1600)


def check_charts(page, where: str) -> list[dict]:
    page.wait_for_function("""() => document.querySelector(
        "[data-testid='stMain'] .vega-embed svg .role-mark")""", timeout=30_000)
    wait_drawn(page)  # the charts' layout, and a fitted chart's second one
    assert_no_error(page)
    charts = page.evaluate(TEXTS)
    assert charts, where
    for chart in charts:
        at = f"{where}: {chart['label']}"
        assert chart["cut"] == [], f"cut with …: {at}: {chart['cut']}"
        assert chart["outside"] == [], f"past the chart's edge: {at}: {chart['outside']}"
        assert chart["overlapping"] == [], f"numbers overlapping: {at}: {chart['overlapping'][:6]}"
    return charts


# every page in lecture mode (bigger text in the same width), every other one in plain mode (the
# causal maps' titles, cut only in plain mode, among them)
PLAIN = {path for path, _ in PAGES[::2]}


STEPS = {"simple_attention": list(wt.SIMPLE_STEPS), "causal_attention": list(wt.CAUSAL_STEPS)}


def next_step_of(previous: str | None, path: str) -> bool:
    """Whether `path` is the step right after `previous` on the same walkthrough page: reached with
    the step bar's Next button (a rerun) rather than a reload."""
    if previous is None:
        return False
    (page_a, _, query_a), (page_b, _, query_b) = previous.partition("?"), path.partition("?")
    steps = STEPS.get(page_b, [])
    step_a, step_b = query_a.partition("=")[2], query_b.partition("=")[2]
    return page_a == page_b and step_a in steps and step_b in steps and \
        steps.index(step_b) == steps.index(step_a) + 1


def test_chart_titles_legends_and_numbers_are_whole_and_apart_at_1024(laptop, warm_url):
    """Every page of PAGES in lecture mode, every other one in plain mode too: a page checked in
    both modes is checked, then its lecture-mode switch flipped (a rerun, no reload) and checked
    again; the next step of the same page is reached with the step bar's Next button."""
    page = laptop
    numbers = {False: 0, True: 0}
    previous, lecture = None, False
    for path, expected in PAGES:
        modes = [False, True] if path in PLAIN else [True]
        if lecture in modes and next_step_of(previous, path):
            page.locator(".st-key-walkthrough_stepper").get_by_role("button", name=re.compile("Next")).click()
            wait_idle(page)
            assert path.split("?")[1] in page.url, f"{page.url}: not {path}"
        else:
            lecture = modes[0]
            url = f"{warm_url}/{path}" + (("&" if "?" in path else "?") + "lecture=1" if lecture else "")
            open_app(page, url)
        previous = path
        for mode in sorted(modes, key=lambda m: m != lecture):  # the mode it is in first
            if mode != lecture:
                switch_lecture_mode(page, mode)
                lecture = mode
            where = f"{path} ({MODES[lecture]})"
            charts = check_charts(page, where)
            written = " ".join(" ".join(chart["texts"]) for chart in charts)
            assert expected in " ".join(written.split()), f"{where}: {expected!r} not in {written[:300]!r}"
            numbers[lecture] += sum(chart["numbers"] for chart in charts)
            if path in ("simple_attention?step=weights", "causal_attention?causal_step=order"):
                screenshot(page, f"chart_text_1024{'_lecture' if lecture else ''}_{path.split('?')[0]}")
    for mode, seen in numbers.items():
        assert seen > 100, f"{MODES[mode]}: {seen} numbers"  # the checks did see numbers in the marks


def test_next_character_bars_name_every_letter_and_keep_numbers_apart(browser, server_url):
    """Sample names: 27 bars with a probability over each. In lecture mode at 1024 they read
    "0.060.060.06" and only every other letter was named (the highlighted "a" had none). Plain,
    then lecture mode switched on in the sidebar (one trained model for both)."""
    context = browser.new_context(viewport={"width": 1024, "height": 1600})
    page = context.new_page()
    try:
        train_tiny_then_sample(page, server_url)
        for lecture in (False, True):
            if lecture:
                page.locator("[data-testid='stSidebar']").get_by_text("Lecture mode", exact=True).click()
                wait_idle(page)
                assert "lecture=1" in page.url
            check_next_character_bars(page, lecture)
    finally:
        context.close()


def check_next_character_bars(page, lecture: bool) -> None:
    charts = check_charts(page, "sample_names" + (" (lecture)" if lecture else ""))
    bars = next(chart for chart in charts if chart["label"].startswith("Next-character probabilities at one"))
    assert bars["numbers"] == 27
    letters = page.evaluate("""() => [...document.querySelectorAll("[data-testid='stMain'] .vega-embed")]
        .filter((e) => (e.getAttribute("aria-label") || "").startsWith("Next-character probabilities at one"))
        .flatMap((e) => [...e.querySelectorAll(".role-axis-label text")])
        .filter((t) => t.getAttribute("opacity") !== "0").map((t) => t.textContent)""")
    assert set("abcdefghijklmnopqrstuvwxyz.") <= set(letters), letters
    drawn = page.evaluate("""() => [...document.querySelectorAll("[data-testid='stMain'] .vega-embed svg")]
        .map((svg) => [svg.getBoundingClientRect().width, Number(svg.getAttribute("width"))])""")
    assert all(width >= own - 1 for width, own in drawn), f"scaled down as a picture: {drawn}"
    screenshot(page, f"chart_text_1024{'_lecture' if lecture else ''}_sample_names")


def test_on_a_phone_in_lecture_mode_the_loss_chart_writes_both_legends_whole(browser, server_url):
    """The Train page 390 px wide in lecture mode, after a short run: the loss chart's two legends
    (the runs; per step, smoothed, validation) stood side by side and the second was cut at
    "— train, pe" at the chart's edge. They are now one under the other, each in one column where a
    row does not fit the drawn width."""
    context = browser.new_context(viewport={"width": 390, "height": 2400})
    page = context.new_page()
    try:
        open_train_page(page, server_url, {**TINY, "lecture": "1"})
        page.get_by_role("button", name="Start", exact=True).click()
        wait_for_step(page, 60, timeout_s=180)
        charts = check_charts(page, "train_gpt at 390 px (lecture)")
        loss = next(chart for chart in charts if chart["label"].startswith("Names GPT: loss"))
        written = " ".join(loss["texts"])
        assert all(kind in written for kind in KINDS), written
        screenshot(page, "chart_text_390_lecture_train_gpt")
    finally:
        context.close()
