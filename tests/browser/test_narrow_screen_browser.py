"""A 1024 px screen (a small laptop, an old projector), with and without lecture mode, in a real
browser: labels wrap between words or fit, never inside one ("max_len|gth"); badges are never cut
with "…"; formulas fit their column; the Tokens page's tables show input beside target."""

from __future__ import annotations

import re

import pytest

from tests.browser.conftest import assert_no_error, open_app, wait_drawn, wait_idle

pytestmark = pytest.mark.browser

WIDTH = 1024

# widget, metric and checkbox labels, inline code in a column and badges: the texts of each whose
# line breaks fall inside a word (between two characters that are neither space, "-" nor "/"),
# labels that run past their column, and badges cut with "…"
BROKEN_TEXT = """() => {
  const out = [];
  const main = "[data-testid='stMain'] ";
  const labels = [main + "[data-testid='stWidgetLabel'] p", main + "[data-testid='stMetricLabel'] p",
                  main + "[data-testid='stCheckbox'] label p"].join(", ");
  const all = [...document.querySelectorAll(
      labels + ", " + main + "[data-testid='stColumn'] [data-testid='stMarkdownContainer'] code, "
      + main + ".stMarkdownBadge")];
  for (const el of all) {
    if (!el.checkVisibility({visibilityProperty: true})) continue;
    const text = el.textContent.trim().slice(0, 50);
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    let prev = null, prevTop = null;
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (let i = 0; i < node.length; i++) {
        const ch = node.data[i];
        if (/\\s/.test(ch)) { prev = ch; continue; }
        const range = document.createRange(); range.setStart(node, i); range.setEnd(node, i + 1);
        const rect = range.getClientRects()[0];
        if (!rect) continue;
        if (prevTop !== null && rect.top > prevTop + 2 && prev !== null && !/[\\s\\-/]/.test(prev))
          out.push(`broken inside a word: ${text}`);
        prevTop = rect.top; prev = ch;
      }
    }
    if (el.matches(labels)) {
      const column = (el.closest("[data-testid='stColumn']") || el.closest("[data-testid='stMain']"))
        .getBoundingClientRect();
      const range = document.createRange(); range.selectNodeContents(el);
      const right = Math.max(...[...range.getClientRects()].map((r) => r.right));
      if (right > column.right + 1) out.push(`past its column: ${text}`);
    }
    if (el.matches(".stMarkdownBadge") && el.scrollWidth > el.clientWidth + 1) out.push(`cut: ${text}`);
  }
  return [...new Set(out)];
}"""

# formulas, display or inline, wider than the text box they sit in (cut at the column's edge, or
# a scroll bar)
WIDE_FORMULAS = """() => [...document.querySelectorAll("[data-testid='stMain'] .katex-html")]
  .filter((el) => el.checkVisibility({visibilityProperty: true}))
  .flatMap((el) => {
    const box = el.closest("[data-testid='stMarkdownContainer']").getBoundingClientRect();
    const display = el.closest(".katex-display");
    const right = Math.max(...[...el.getClientRects()].map((r) => r.right));
    return right > box.right + 3 || (display && display.scrollWidth > display.clientWidth + 3)
      ? [`${el.textContent.slice(0, 40)}: ${Math.round(right)} > ${Math.round(box.right)}`] : [];
  })"""

# the column headers a data grid has drawn (its accessible table holds the columns in view)
GRID_HEADERS = """(n) => [...document.querySelectorAll("[data-testid='stDataFrame']")[n]
  .querySelectorAll("th, [role='columnheader']")].map((h) => h.textContent.trim())"""


# the tops of the text and number boxes in the row of columns that holds the label `label`
BOX_TOPS = """(label) => [...[...document.querySelectorAll("[data-testid='stMain'] [data-testid='stWidgetLabel']")]
  .find((l) => l.textContent.trim() === label).closest("[data-testid='stHorizontalBlock']")
  .querySelectorAll(":is([data-testid='stTextInput'], [data-testid='stNumberInput']) input")]
  .map((box) => Math.round(box.getBoundingClientRect().top))"""


# chart texts (titles, axis and legend labels, numbers) that reach past their chart's SVG, where
# they are cut; a turned axis title is left out (its box is a line high across the turned text)
CHART_TEXT_CUT = """() => [...document.querySelectorAll("[data-testid='stMain'] .vega-embed svg")]
  .flatMap((svg) => {
    const box = svg.getBoundingClientRect();
    return [...svg.querySelectorAll("text")]
      .filter((t) => t.textContent.trim() && t.getAttribute("opacity") !== "0"
                     && !/rotate/.test(t.getAttribute("transform") || ""))
      .filter((t) => { const r = t.getBoundingClientRect();
                       return r.left < box.left - 2 || r.right > box.right + 2
                         || r.top < box.top - 4 || r.bottom > box.bottom + 4; })
      .map((t) => t.textContent.slice(0, 40));
  })"""


@pytest.fixture(scope="module")
def narrow_page(browser):
    context = browser.new_context(viewport={"width": WIDTH, "height": 768})
    page = context.new_page()
    yield page
    context.close()


PAGES = [("tokens_data", "Tokens & data loaders"), ("simple_attention", "Simple attention"),
         ("causal_attention", "Causal attention and dropout"), ("pitfalls", "Pitfalls")]


@pytest.mark.parametrize("lecture", [True, False], ids=["lecture", "plain"])
def test_nothing_is_broken_or_cut_at_1024(narrow_page, warm_url, lecture):
    page = narrow_page
    for path, heading in PAGES:
        query = "&".join((["causal_step=mask"] if path == "causal_attention" else [])
                         + (["lecture=1"] if lecture else []))
        open_app(page, f"{warm_url}/{path}?{query}" if query else f"{warm_url}/{path}")
        page.get_by_role("heading", name=heading).first.wait_for(timeout=60_000)
        page.wait_for_timeout(800)  # fonts, KaTeX and the grids' first paint
        assert_no_error(page)
        assert page.evaluate(BROKEN_TEXT) == [], path
        assert page.evaluate(WIDE_FORMULAS) == [], path
        if path == "tokens_data":
            tables_show_input_beside_target(page)
            # section 4: "Batch shown" and "Output dim" side by side, their boxes in line (the label
            # "Output dim (embedding width)" took three lines in lecture mode)
            tops = page.evaluate(BOX_TOPS, "Batch shown")
            assert len(tops) == 2 and tops[0] == tops[1], tops


def tables_show_input_beside_target(page) -> None:
    """The Tokens page's windows: the tokens as text, input and target both in view (the ids may
    scroll); the name's windows, one row per position: every column in view."""
    page.locator("[data-testid='stDataFrame']").nth(3).wait_for(timeout=60_000)  # windows, x, y, name
    for n in (0, 3):  # a grid fills its accessible table once it has been painted in view
        page.locator("[data-testid='stDataFrame']").nth(n).scroll_into_view_if_needed()
        page.wait_for_function(f"() => ({GRID_HEADERS})({n}).length > 0", timeout=15_000)
    shown = page.evaluate(GRID_HEADERS, 0)
    assert "input" in shown and "target" in shown, shown
    assert page.evaluate(GRID_HEADERS, 3) == ["window", "t", "input", "input id", "target", "target id"]


# grids whose columns run past their box (the rest behind a horizontal scroll bar)
SCROLLING_GRIDS = """() => [...document.querySelectorAll("[data-testid='stMain'] [data-testid='stDataFrame'] .dvn-scroller")]
  .filter((s) => s.scrollWidth > s.clientWidth + 3).map((s) => `${s.scrollWidth} > ${s.clientWidth}`)"""


@pytest.mark.parametrize("lecture", [True, False], ids=["lecture", "plain"])
def test_the_mask_zero_pitfall_shows_every_column_at_1024(narrow_page, warm_url, lecture):
    # its two tables side by side each hid a column (d3; "fixed weight") at 1024 px
    page = narrow_page
    open_app(page, f"{warm_url}/pitfalls?pitfall=mask_zero" + ("&lecture=1" if lecture else ""))
    page.get_by_role("heading", name="Pitfalls").first.wait_for(timeout=60_000)
    grids = page.locator("[data-testid='stDataFrame']")
    grids.nth(1).wait_for(timeout=60_000)
    for n in range(2):
        grids.nth(n).scroll_into_view_if_needed()
    page.wait_for_timeout(800)  # the grids size their canvas after the first paint
    assert page.evaluate(SCROLLING_GRIDS) == []


def test_on_a_phone_no_formula_of_any_walkthrough_step_runs_past_its_column(browser, warm_url):
    """390 px: every step of pages 1–4. KaTeX does not wrap: the dropout definition (416 px), the
    causal weights' and softmax's words written as LaTeX text, and the concat-then-project chain
    ran past a 358 px column (cut, or behind a scroll bar)."""
    from core.lessons import walkthrough as wt

    context = browser.new_context(viewport={"width": 390, "height": 1600})
    page = context.new_page()
    pages = [("simple_attention", "step", wt.SIMPLE_STEPS), ("self_attention", "sa_step", wt.SELF_STEPS),
             ("causal_attention", "causal_step", wt.CAUSAL_STEPS), ("multi_head", "mh_step", wt.MULTI_STEPS)]
    try:
        wide = []
        for path, field, steps in pages:
            # the first step by its link, the others with the step bar's Next, as a student steps
            # on a phone (a rerun of the page, not a whole new load of it for each step)
            open_app(page, f"{warm_url}/{path}?{field}={steps[0]}")
            for number, step in enumerate(steps, start=1):
                if number > 1:
                    page.locator(".st-key-walkthrough_stepper").get_by_role(
                        "button", name=re.compile("Next")).click()
                page.get_by_role("heading", name=re.compile(f"^Step {number} of {len(steps)} ")).wait_for(
                    timeout=60_000)
                wait_idle(page)
                wait_drawn(page)  # fonts, KaTeX and the charts drawn, and still
                assert_no_error(page)
                wide += [f"{path} {step}: {w}" for w in page.evaluate(WIDE_FORMULAS)]
                wide += [f"{path} {step}, chart text cut: {w}" for w in page.evaluate(CHART_TEXT_CUT)]
        assert wide == []
    finally:
        context.close()


def test_on_a_phone_legends_wrap_and_no_chart_text_is_cut(browser, warm_url):
    """390 px. Vega writes a legend's entries in one row, and several legends on one side beside
    each other, whatever the width: "never an input" (Tokens), "validation (solid)" and "One head,
    no position (the slides)" (Small LM, lecture mode), "−∞ before softmax" (a pitfall) ran past
    the chart's edge. Slanted labels chosen after the layout were cut at the bottom ("class 0")."""
    context = browser.new_context(viewport={"width": 390, "height": 1600})
    page = context.new_page()
    try:
        cut = []
        for path in ("tokens_data", "pitfalls?pitfall=mask_after_softmax", "small_lm?lecture=1"):
            open_app(page, f"{warm_url}/{path}")
            wait_idle(page)
            page.wait_for_timeout(800)  # the charts are drawn after the script ends
            assert_no_error(page)
            cut += [f"{path}: {text}" for text in page.evaluate(CHART_TEXT_CUT)]
        assert cut == []
        # the Small LM's long model name is written on two lines, words whole
        labels = page.evaluate("""() => [...document.querySelectorAll(
            "[data-testid='stMain'] .vega-embed svg .role-legend-label text")].map((t) =>
            [...t.querySelectorAll("tspan")].map((s) => s.textContent.trim()))""")
        assert ["One head,", "no position (the slides)"] in labels, labels
    finally:
        context.close()


def test_a_chart_title_that_takes_a_second_line_after_a_resize_stays_whole(browser, warm_url):
    """From 1900 to 1024 px the context vector's title goes onto two lines. Its lines were chosen
    from the plot's width, which Vega sets while it lays the chart out: the height kept one line
    and the first line was cut above the chart (also, at times, on a first load at 1024 px). They
    are chosen from the chart's container now (core.viz.fit._room)."""
    context = browser.new_context(viewport={"width": 1900, "height": 1000})
    page = context.new_page()
    try:
        open_app(page, f"{warm_url}/simple_attention?step=context")
        wait_idle(page)
        page.wait_for_timeout(800)
        page.set_viewport_size({"width": 1024, "height": 1000})
        page.wait_for_timeout(1500)  # Streamlit resizes the chart, Vega lays it out again
        titles = page.evaluate("""() => [...document.querySelectorAll(
            "[data-testid='stMain'] .vega-embed svg")].map((svg) => {
              const t = svg.querySelector(".role-title text");
              return {lines: t ? t.querySelectorAll("tspan").length : 0,
                      top: t ? t.getBoundingClientRect().top - svg.getBoundingClientRect().top : 0};
            })""")
        assert any(t["lines"] >= 2 for t in titles), titles  # the case this is about did happen
        assert all(t["top"] >= -4 for t in titles), titles
        assert page.evaluate(CHART_TEXT_CUT) == []
    finally:
        context.close()
