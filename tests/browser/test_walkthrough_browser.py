"""Browser tests of the four attention walkthrough pages: a real `streamlit run`, headless Chromium,
one interaction per page (page 1: a real st.data_editor cell edit), a screenshot of each, and page 1
in lecture mode. Screenshots go to artifacts/screenshots/ (a person looks at them)."""

from __future__ import annotations

import re

import pytest

from tests.browser.conftest import assert_no_error, screenshot, wait_idle
from ui.nav import LESSONS

pytestmark = pytest.mark.browser

TALL = {"width": 1280, "height": 2200}  # Streamlit scrolls inside its main block: a tall window
TOKEN_PX, DIM_PX, ROW_PX = 120, 72, 35  # ui.walkthrough column widths; Streamlit's row height
URL = {lesson.file: lesson.url for lesson in LESSONS}  # the pages' url paths, as the app names them
SIMPLE, SELF = URL["pages/1_simple_attention.py"], URL["pages/2_self_attention.py"]
CAUSAL, MULTI = URL["pages/3_causal_attention.py"], URL["pages/4_multi_head.py"]


def open_walk(page, url: str, viewport: dict = TALL) -> None:
    """Open a page in a window of `viewport` and wait until its script ran and its charts and grids
    are drawn."""
    page.set_viewport_size(viewport)
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_selector("[data-testid='stApp']", timeout=60_000)
    wait_idle(page)
    settle(page)
    assert page.get_by_text("Page not found").count() == 0


def settle(page) -> None:
    """Streamlit loads chart and grid code lazily: wait until no skeleton is left."""
    page.wait_for_function(
        "document.querySelectorAll(\"[data-testid='stSkeleton']\").length === 0", timeout=30_000)
    page.wait_for_timeout(600)


def code_text(page, label: str) -> str:
    """The numbers printed after `label`, e.g. 'ω =' -> '0.9544  1.4950 ...'."""
    line = page.locator("[data-testid='stMarkdownContainer'] p").filter(has_text=label).first
    return line.locator("code").inner_text()


def edit_cell(page, x: float, y: float, text: str) -> None:
    """Double-click a grid cell, replace its content with `text`, press Enter."""
    editor = page.locator("#portal textarea, #portal input")
    for _ in range(4):  # the grid may still be settling: retry until its cell editor opens
        page.mouse.dblclick(x, y)
        try:
            editor.first.wait_for(state="visible", timeout=3_000)
            break
        except Exception:  # noqa: BLE001 - playwright's timeout; try the double-click again
            page.keyboard.press("Escape")
    assert editor.first.is_visible(), "the cell editor of st.data_editor did not open"
    editor.first.focus()
    page.wait_for_timeout(200)  # keystrokes typed before the editor has focus are lost
    page.keyboard.press("Control+A")  # inside the cell editor: select its text
    page.keyboard.type(text, delay=30) if text else page.keyboard.press("Delete")
    page.wait_for_timeout(200)
    page.keyboard.press("Enter")


def wait_for_scores(page, index: int, expected: str) -> list[str]:
    """The edit reaches the server a moment after Enter: wait for the recomputed ω line."""
    for _ in range(40):
        wait_idle(page)
        scores = code_text(page, "ω =").split()
        if scores[index] == expected:
            break
        page.wait_for_timeout(250)
    settle(page)
    return code_text(page, "ω =").split()


def open_editor(page) -> None:
    """Open the embeddings editor: collapsed on every page (the presenter layout)."""
    if page.locator("[data-testid='stDataFrame']").count() == 0:
        page.get_by_text("Embeddings X · shared by the four pages").click()
        wait_idle(page)
        settle(page)


def grid_cell(page, d_in: int = 3):
    """cell(column, row) -> the screen point of a cell of the embeddings grid (column 0 = token)."""
    open_editor(page)
    grid = page.locator("[data-testid='stDataFrame']").first.bounding_box()
    marker = grid["width"] - 2 - TOKEN_PX - d_in * DIM_PX  # the row-marker column on the left

    def cell(column: int, row: int) -> tuple[float, float]:
        x = grid["x"] + 1 + marker + (TOKEN_PX / 2 if column == 0 else
                                      TOKEN_PX + DIM_PX * (column - 1) + DIM_PX / 2)
        return x, grid["y"] + 1 + ROW_PX + ROW_PX * row + ROW_PX / 2
    return cell


def test_simple_attention_real_cell_edit(page, warm_url):
    open_walk(page, f"{warm_url}/{SIMPLE}")
    assert code_text(page, "ω =").split() == ["0.9544", "1.4950", "1.4754", "0.8434", "0.7070", "1.0865"]
    cell = grid_cell(page)

    # a valid edit: journey's d1 0.55 -> 0.95; its score with itself is 0.95² + 0.87² + 0.66²
    edit_cell(page, *cell(1, 1), "0.95")
    expected = f"{0.95**2 + 0.87**2 + 0.66**2:.4f}"
    scores = wait_for_scores(page, 1, expected)
    assert scores[1] == expected and scores[0] != "0.9544"
    assert_no_error(page)
    screenshot(page, "walkthrough_simple_attention_edited")

    # an invalid edit: clear the name "starts"; the table shows it, the math keeps the last valid
    edit_cell(page, *cell(0, 2), "")
    page.get_by_text("has no token name").first.wait_for(timeout=20_000)
    assert page.get_by_text("The pages keep using the last valid embeddings").count() >= 1
    assert code_text(page, "ω =").split() == scores
    screenshot(page, "walkthrough_simple_attention_invalid_edit")


def test_typed_1e30_is_1e30_and_what_cannot_be_used_is_refused(page, warm_url):
    """A number cell of st.data_editor dropped the 'e' of 1e30 and sent 130, silently: the
    cells are text now, so 1e30 arrives as typed (and is used, with a warning), and a value the
    app cannot take is refused with a message naming the cell, the last valid table kept."""
    open_walk(page, f"{warm_url}/{SIMPLE}")
    cell = grid_cell(page)
    # journey's d1 = 1e30: its score with itself is 1e60, not 130² + ...
    edit_cell(page, *cell(1, 1), "1e30")
    scores = wait_for_scores(page, 1, "1.00e+60")
    assert scores[1] == "1.00e+60"
    page.get_by_text("Very large values (up to 1e+30)").first.wait_for(timeout=20_000)
    assert page.locator("[data-testid='stDataFrame']").first.get_by_text("130").count() == 0
    # beyond the limit: refused, named, and the math keeps the last valid table (with 1e30)
    edit_cell(page, *cell(1, 2), "1e200")
    page.get_by_text(re.compile("Row 3 .*starts.*, column d1: 1e\\+200 is too large")).first.wait_for(
        timeout=20_000)
    assert page.get_by_text("The pages keep using the last valid embeddings").count() >= 1
    assert code_text(page, "ω =").split() == scores
    screenshot(page, "walkthrough_cell_1e200_refused")
    # NaN is not a number (not "an empty cell")
    edit_cell(page, *cell(1, 2), "NaN")
    page.get_by_text(re.compile("column d1: “NaN” is not a number")).first.wait_for(timeout=20_000)
    assert page.get_by_text(re.compile("Row 3 .*the cell is empty")).count() == 0
    assert code_text(page, "ω =").split() == scores
    assert_no_error(page)


def test_self_attention_next_step(page, warm_url):
    open_walk(page, f"{warm_url}/{SELF}")
    page.get_by_role("button", name=re.compile("Checks")).click()  # the badges' popover
    assert page.get_by_text("Matches the book: 0.2996 0.8053").first.is_visible()
    page.keyboard.press("Escape")
    page.get_by_role("button", name=re.compile("Next")).click()
    wait_idle(page)
    settle(page)
    assert page.get_by_role("heading", name=re.compile("Step 2 of 6")).is_visible()
    assert code_text(page, "q^(2) =").split() == ["0.4306", "1.4551"]
    assert_no_error(page)
    screenshot(page, "walkthrough_self_attention")


def test_causal_attention_mask_off(page, warm_url):
    open_walk(page, f"{warm_url}/{CAUSAL}")
    assert page.get_by_role("heading", name=re.compile("Step 2 of 7")).is_visible()
    page.get_by_role("button", name=re.compile("Settings")).click()  # the page's controls
    page.locator("[data-testid='stCheckbox']").filter(has_text="Causal mask").first.click()
    wait_idle(page)
    settle(page)
    # the notice, and the figure's caption, which says what the figure shows now
    assert page.get_by_text("The mask is off: nothing is hidden, every query sees every token.",
                            exact=True).count() == 1
    assert page.get_by_text(re.compile("^The mask is off: every entry is 0")).count() == 1
    assert page.get_by_text(re.compile("^1 above the diagonal")).count() == 0  # the mask-on caption
    assert "causal=0" in page.url  # the shareable link follows
    assert_no_error(page)
    screenshot(page, "walkthrough_causal_attention")


def test_multi_head_one_head(page, warm_url):
    open_walk(page, f"{warm_url}/{MULTI}?heads_d_out=4")
    assert page.get_by_text(re.compile(r"^Attention weights of head 2")).count() == 1
    page.get_by_role("button", name=re.compile("Settings")).click()  # the page's controls
    page.locator("[data-testid='stSelectbox']").filter(has_text="Heads").click()
    page.get_by_role("option", name="4").click()
    wait_idle(page)
    settle(page)
    assert page.get_by_text(re.compile(r"^Attention weights of head 4")).count() == 1
    assert "num_heads=4" in page.url
    assert_no_error(page)
    screenshot(page, "walkthrough_multi_head")


def test_simple_attention_lecture_mode(page, warm_url):
    open_walk(page, f"{warm_url}/{SIMPLE}?lecture=1&step=weights")
    assert page.get_by_role("heading", name=re.compile("Step 2 of 4")).is_visible()
    assert code_text(page, "α (softmax) =").split() == [
        "0.1385", "0.2379", "0.2333", "0.1240", "0.1082", "0.1581"]
    assert_no_error(page)
    screenshot(page, "walkthrough_simple_attention_lecture")


def test_a_number_box_refuses_1e30_and_a_fraction_until_a_valid_value(page, warm_url):
    """A Streamlit number input read "1e30" as 1 (parseInt) and applied it: the app's number box
    (a text box checked on the server) refuses it and a fraction with a message under the box,
    which stays until a valid value is typed; the seed in use stays."""
    open_walk(page, f"{warm_url}/{SIMPLE}")
    open_editor(page)
    box = page.locator("[data-testid='stTextInput']").filter(has_text="Seed").first
    field = box.locator("input")
    assert field.input_value() == "0"
    field.fill("1e30")
    field.press("Enter")
    message = page.get_by_text(re.compile("Seed: “1e30” is more than the maximum, 2,147,483,647. Kept 0;"))
    message.first.wait_for(timeout=20_000)
    wait_idle(page)
    assert field.input_value() == "0" and "embed_seed" not in page.url  # still the default seed, 0
    field.fill("2.5")
    field.press("Enter")
    page.get_by_text(re.compile("Seed: “2.5” is not a whole number. Kept 0;")).first.wait_for(timeout=20_000)
    wait_idle(page)
    assert field.input_value() == "0" and "embed_seed" not in page.url
    screenshot(page, "walkthrough_seed_fraction_refused")
    page.get_by_role("button", name=re.compile("Random embeddings")).click()  # another rerun
    wait_idle(page)
    assert page.get_by_text(re.compile("Seed: “2.5” is not a whole number")).count() == 1  # it stays
    field.fill("7")
    field.press("Enter")
    wait_idle(page)
    assert page.get_by_text(re.compile("Seed: “")).count() == 0  # a valid value clears it
    field.fill("")  # an emptied box is refused too
    field.press("Enter")
    page.get_by_text(re.compile("Seed: the box is empty. Kept 7;")).first.wait_for(timeout=20_000)
    wait_idle(page)
    assert field.input_value() == "7" and "embed_seed=7" in page.url
    assert_no_error(page)


def test_a_figure_downloads_as_png_from_its_download_menu(page, warm_url):
    """The Download menu under a chart: opening it makes the buttons; PNG gives a real PNG file."""
    open_walk(page, f"{warm_url}/{SIMPLE}")
    # the popover's own button (a chart's toolbar has a hidden "Download" of Vega's too)
    menu = page.locator("[data-testid='stPopover'] button").filter(has_text="Download").first
    menu.scroll_into_view_if_needed()
    menu.click()
    wait_idle(page)
    png = page.locator("[data-testid='stPopoverBody'] [data-testid='stDownloadButton'] button").filter(
        has_text="PNG").first
    png.wait_for(state="visible", timeout=30_000)
    screenshot(page, "download_menu_open", full_page=False)
    with page.expect_download(timeout=60_000) as download_info:
        png.click()
    download = download_info.value
    data = open(download.path(), "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5_000, (download.suggested_filename, len(data))
    assert download.suggested_filename.endswith(".png")
    assert_no_error(page)


# every data grid of the page: its drawn content's width against the width it shows
GRIDS = """() => [...document.querySelectorAll("[data-testid='stDataFrame']")].map((table) => {
  const scroller = table.querySelector(".dvn-scroller");
  return {content: scroller.scrollWidth, shown: scroller.clientWidth,
          top: table.getBoundingClientRect().top};
})"""


@pytest.mark.parametrize("lecture", [False, True], ids=["plain", "lecture"])
def test_an_open_editor_shows_every_column_at_1024(page, warm_url, lecture):
    """Pages 2 and 3 keep the embeddings and the weights editors collapsed side by side. Opened at
    1024 px (the sidebar open), the embeddings grid had half the row: 240 px for 368 px of columns,
    d2 and d3 behind a scroll bar. An open editor now takes the whole row, the other under it."""
    open_walk(page, f"{warm_url}/{CAUSAL}" + ("?lecture=1" if lecture else ""), {"width": 1024, "height": 1400})
    open_editor(page)
    page.wait_for_timeout(400)
    (grid,) = page.evaluate(GRIDS)
    assert grid["content"] <= grid["shown"] + 1, grid  # every column in view
    weights = page.get_by_text("Edit W_q, W_k, W_v by hand")
    assert weights.bounding_box()["y"] > grid["top"] + 200  # under the open editor
    weights.click()
    wait_idle(page)
    settle(page)
    page.get_by_role("button", name="Copy the seeded weights into editable tables").click()
    wait_idle(page)
    settle(page)
    grids = page.evaluate(GRIDS)
    assert len(grids) == 4, grids  # the embeddings and W_q, W_k, W_v
    for grid in grids:
        assert grid["content"] <= grid["shown"] + 1, grids
    assert_no_error(page)
    screenshot(page, f"causal_editors_open_1024{'_lecture' if lecture else ''}")


# ----------------------------------------------------------------------------- layout at 1024 px
# A laptop of 1024 px with the sidebar open leaves the page 564 px (lecture mode: 644 px at a root
# font of 20 px). These steps cut formulas at their column's edge, squeezed two 6 x 6 maps into a
# third of the row each, and lost a border of the wrapped step bar (visual audit, before the rows
# of ui.walkthrough.columns wrapped).
LAPTOP = {"width": 1024, "height": 2000}


# every formula of the page: its drawn width against the width its box shows, and its right edge
# against the right edge of the panel (column) it sits in
FORMULAS = """() => [...document.querySelectorAll("[data-testid='stMain'] .katex-display")].map((k) => {
  const html = k.querySelector(".katex-html").getBoundingClientRect();
  const panel = k.closest("[data-testid='stVerticalBlock']").getBoundingClientRect();
  return {text: k.innerText.replace(/\\s+/g, " ").slice(0, 60), content: k.scrollWidth, shown: k.clientWidth,
          right: html.right, panel: panel.right};
})"""

FORMULA_STEPS = [(SIMPLE, "step=weights"), (SIMPLE, "step=matrix"), (SELF, "sa_step=scaled"),
                 (CAUSAL, "causal_step=weights"), (CAUSAL, "causal_step=dropout")]


@pytest.mark.parametrize("lecture", [False, True], ids=["plain", "lecture"])
def test_no_formula_is_cut_at_1024(page, warm_url, lecture):
    """KaTeX does not wrap: a formula wider than its column was cut at its edge ("exp(ω_2" of
    the softmax, "√d_k =" without its value, "(in training mo"). Each is now as wide as it needs:
    a panel of formulas is at least as wide as its widest one, and goes under the figure where
    both do not fit."""
    for path, query in FORMULA_STEPS:
        open_walk(page, f"{warm_url}/{path}?{query}" + ("&lecture=1" if lecture else ""), LAPTOP)
        formulas = page.evaluate(FORMULAS)
        assert formulas, (path, query)
        for formula in formulas:
            assert formula["content"] <= formula["shown"] + 1, (path, query, formula)
            assert formula["right"] <= formula["panel"] + 1, (path, query, formula)
        assert page.evaluate("document.documentElement.scrollWidth") <= LAPTOP["width"]
        assert_no_error(page)
    screenshot(page, f"causal_dropout_1024{'_lecture' if lecture else ''}")


# the numbers written in the cells of every heatmap: text, font size, box
CELL_NUMBERS = r"""() => [...document.querySelectorAll("[data-testid='stMain'] [data-testid='stVegaLiteChart']")]
  .map((chart) => [...chart.querySelectorAll("g.mark-text text")]
    .filter((t) => /^[−-]?\d+(\.\d+)?$/.test(t.textContent.trim()))
    .map((t) => { const b = t.getBoundingClientRect();
      return {text: t.textContent, size: parseFloat(getComputedStyle(t).fontSize),
              left: b.left, right: b.right, top: b.top, bottom: b.bottom}; }))
  .filter((numbers) => numbers.length >= 12)"""


def overlapping(numbers: list[dict]) -> list[tuple[str, str]]:
    """The pairs of numbers whose boxes overlap (by more than a pixel)."""
    return [(a["text"], b["text"]) for i, a in enumerate(numbers) for b in numbers[i + 1:]
            if a["left"] < b["right"] - 1 and b["left"] < a["right"] - 1
            and a["top"] < b["bottom"] - 1 and b["top"] < a["bottom"] - 1]


@pytest.mark.parametrize("path, query, maps", [
    (SIMPLE, "step=matrix", 3), (CAUSAL, "causal_step=order", 3),
    (MULTI, "mh_step=heads", 2), (MULTI, "mh_step=concat", 2)],
    ids=["simple-all-tokens", "causal-mask-order", "multi-head-maps", "multi-head-concat"])
def test_heatmaps_keep_their_numbers_readable_at_1024(page, warm_url, path, query, maps):
    """In a row of st.columns at 1024 px the two 6 x 6 maps of "all tokens" had 145 px each: their
    numbers at 7 px piled onto each other (the mask-order maps: 7-8 px, the heads' 9.4-10.2 px).
    A map now goes on its own line where its cells would get too narrow for their numbers."""
    open_walk(page, f"{warm_url}/{path}?{query}", LAPTOP)
    charts = page.evaluate(CELL_NUMBERS)
    assert len(charts) == maps, charts
    for numbers in charts:
        smallest = min(n["size"] for n in numbers)
        assert smallest >= 10.5, (query, smallest, numbers[0])  # built at 11 px
        assert not overlapping(numbers), (query, overlapping(numbers)[:3])
    assert_no_error(page)
    screenshot(page, f"heatmaps_1024_{query.split('=')[1]}")


# the buttons of the step bar's named steps: their box and their left and right border colours
STEP_BUTTONS = """() => [...document.querySelectorAll(
    ".st-key-walkthrough_stepper [data-testid='stButtonGroup'] button")].map((b) => {
  const r = b.getBoundingClientRect(), style = getComputedStyle(b);
  const bar = b.closest(".st-key-walkthrough_stepper").getBoundingClientRect();
  return {text: b.innerText.trim(), left: r.left, right: r.right, top: r.top, inside:
          r.left >= bar.left - 0.5 && r.right <= bar.right + 0.5,
          leftColour: style.borderLeftColor, rightColour: style.borderRightColor,
          leftWidth: parseFloat(style.borderLeftWidth), rightWidth: parseFloat(style.borderRightWidth)};
})"""


def alpha(colour: str) -> float:
    """The opacity of a computed CSS colour: rgb(), rgba() or color(srgb r g b / a)."""
    if colour == "transparent":
        return 0.0
    found = re.search(r"rgba\([^,]+,[^,]+,[^,]+,\s*([\d.]+)\)", colour) or \
        re.search(r"/\s*([\d.]+)\s*\)", colour)
    return float(found.group(1)) if found else 1.0


@pytest.mark.parametrize("path, query, wrapped_after", [
    (CAUSAL, "causal_step=dropout", "5 · mask order"), (SELF, "sa_step=context", "5 · softmax"),
    (MULTI, "mh_step=why", "3 · three classes")], ids=["causal", "self-attention", "multi-head"])
def test_a_wrapped_step_bar_keeps_every_border_at_1024(page, warm_url, path, query, wrapped_after):
    """At 1024 px the named steps wrap onto two rows. Streamlit hides the border a button shares
    with a selected neighbour, which then draws it: with that neighbour first on the next row,
    the last button of the first row had no right edge ("5 · mask order" with "6 · dropout")."""
    open_walk(page, f"{warm_url}/{path}?{query}", {"width": 1024, "height": 900})
    page.mouse.move(1, 1)  # no button hovered
    page.wait_for_timeout(300)
    buttons = page.evaluate(STEP_BUTTONS)
    rows = sorted({round(b["top"]) for b in buttons})
    assert len(rows) == 2, buttons  # the case of the audit: the steps wrap
    for i, button in enumerate(buttons):
        assert button["inside"], button
        ends_row = i == len(buttons) - 1 or round(buttons[i + 1]["top"]) != round(button["top"])
        starts_row = i == 0 or round(buttons[i - 1]["top"]) != round(button["top"])
        if ends_row:
            assert button["rightWidth"] >= 1 and alpha(button["rightColour"]) > 0, button
        if starts_row:
            assert button["leftWidth"] >= 1 and alpha(button["leftColour"]) > 0, button
    assert any(b["text"] == wrapped_after and round(b["top"]) == rows[0] for b in buttons)
    screenshot(page, f"step_bar_1024_{query.split('=')[1]}", full_page=False)


# the three W tables, the row that holds them and every "Not applied" message: their boxes
WEIGHT_BOXES = """() => {
  const box = (e) => { const r = e.getBoundingClientRect();
                       return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width}; };
  const tables = [...document.querySelectorAll("[data-testid='stMain'] [data-testid='stDataFrame']")];
  return {tables: tables.map(box), row: box(tables[0].closest("[data-testid='stHorizontalBlock']")),
          refusals: [...document.querySelectorAll("[data-testid='stAlert']")]
            .filter((a) => a.innerText.includes("Not applied")).map(box)};
}"""


def test_a_refused_weight_is_said_under_the_row_and_the_last_valid_weights_stay_at_1024(page, warm_url):
    """Pages 2 and 3 edit W_q, W_k, W_v in a wrapping row of tables. A W_k cell that cannot be used
    is refused under the whole row (not under its table, a third of it), the scores keep the last
    valid weights, no traceback; a valid value then clears the message and is used."""
    open_walk(page, f"{warm_url}/{SELF}?sa_step=scores", {"width": 1024, "height": 768})
    seeded = code_text(page, "ω_2j =")
    assert seeded.split() == ["1.2705", "1.8524", "1.8111", "1.0795", "0.5577", "1.5440"]
    page.get_by_text("Edit W_q, W_k, W_v by hand").click()
    wait_idle(page)
    page.get_by_role("button", name="Copy the seeded weights into editable tables").click()
    wait_idle(page)
    settle(page)
    w_k = page.locator("[data-testid='stMain'] [data-testid='stDataFrame']").nth(1)

    def cell() -> tuple[float, float]:  # W_k's "in 1, out 1", where it is on screen now
        w_k.scroll_into_view_if_needed()
        grid = w_k.bounding_box()  # (3, 2): its index, then "out 1" from about 25 to 62% of its width
        return grid["x"] + 0.45 * grid["width"], grid["y"] + 1 + ROW_PX * 1.5
    # the cells are text: a number cell sent "1e300" as 1300 and used it, and "abc" as an empty cell
    edit_cell(page, *cell(), "1e300")
    refusal = page.get_by_text(re.compile("^Not applied: W_k row in 1, column out 1: "))
    refusal.first.wait_for(timeout=20_000)
    assert "1e+300 is too large" in refusal.first.inner_text()
    wait_idle(page)
    boxes = page.evaluate(WEIGHT_BOXES)
    assert len(boxes["tables"]) == 3 and len(boxes["refusals"]) == 1, boxes
    (message,) = boxes["refusals"]
    assert message["top"] >= max(t["bottom"] for t in boxes["tables"]), boxes  # under all three
    assert message["left"] <= boxes["row"]["left"] + 1 and message["width"] >= boxes["row"]["width"] - 1, boxes
    assert message["width"] >= 500, boxes  # the expander's width, not a table's 200 px
    assert code_text(page, "ω_2j =") == seeded  # the last valid weights: the seeded ones
    assert_no_error(page)
    refusal.first.scroll_into_view_if_needed()
    screenshot(page, "weights_refused_under_row_1024", full_page=False)
    edit_cell(page, *cell(), "abc")
    page.get_by_text("W_k row in 1, column out 1: “abc” is not a number").first.wait_for(timeout=20_000)
    assert code_text(page, "ω_2j =") == seeded
    # a valid value: the message goes, the scores use it
    edit_cell(page, *cell(), "0.5")
    page.locator("[data-testid='stMarkdownContainer'] p").filter(has_text="ω_2j = 1.3378").first.wait_for(
        timeout=20_000)
    wait_idle(page)
    assert code_text(page, "ω_2j =").split() == ["1.3378", "1.9385", "1.9003", "1.1139", "0.6782", "1.5518"]
    assert refusal.count() == 0
    assert w_k.locator("#glide-cell-1-0").text_content() == "0.5"  # the grid's accessible copy
    assert_no_error(page)
