"""The presenter layout of the four walkthrough pages, in a real browser: every step of every page
at 1280×720 in lecture mode (a projector), and every step of pages 1 and 3 at 1920×1080, stepping
with the Next button (and with the → key on page 3). At each step the step bar, the step's heading
and the top of its figure must be on the first screen, without scrolling; in lecture mode at least
250 px of that figure (its top at most LECTURE_FIGURE_TOP); at 1920×1080 the whole figure.
Screenshots of that first screen go to artifacts/screenshots/presenter/ (git-ignored, like the other
browser screenshots), named p<page>_<lesson>_step<k>_<step>_<width>[_lecture].png, for a person to
look at."""

from __future__ import annotations

import re

import pytest

from core.lessons import walkthrough as wt
from tests.browser.conftest import SHOTS, assert_no_error, wait_idle
from tests.browser.conftest import wait_drawn
from ui.nav import LESSONS

pytestmark = pytest.mark.browser

URL = {lesson.file: lesson.url for lesson in LESSONS}
# (page number, lesson slug, url path, settings field of its stepper, its steps)
WALKS = [
    (1, "simple", URL["pages/1_simple_attention.py"], "step", wt.SIMPLE_STEPS),
    (2, "self", URL["pages/2_self_attention.py"], "sa_step", wt.SELF_STEPS),
    (3, "causal", URL["pages/3_causal_attention.py"], "causal_step", wt.CAUSAL_STEPS),
    (4, "multi", URL["pages/4_multi_head.py"], "mh_step", wt.MULTI_STEPS),
]
SCREENS = [(1280, 720, True), (1920, 1080, False)]  # a projector in lecture mode; a full-HD screen
# at 1920 x 1080 (not lecture mode, the easier case: the whole figure must fit) the pages with the
# tallest first screens: page 1's 6 x 6 matrix step, page 3's seven steps of 6 x 6 maps (CI time)
FULL_HD_WALKS = [walk for walk in WALKS if walk[0] in (1, 3)]
KEY_PAGE = 3  # this page is stepped with the → key (and once ←) instead of the Next button
NO_FIGURE = {(4, "classes")}  # "three implementations, one result": numbers and code, no chart
BAR = ".st-key-walkthrough_stepper"
SELECTOR = f"{BAR} [data-testid='stButtonGroup']"
OUT = SHOTS / "presenter"
# lecture mode, 1280 x 720: the figure's top at most here, so that 250 px of it show (a 6 x 6 map's
# title and rotated key names take ~130 of them: its first rows of numbers are in the room's view)
LECTURE_FIGURE_TOP = 470

# positions (px from the top of the window) of the step bar, the step heading and the first chart
# below that heading, read in the page itself
POSITIONS = """(heading) => {
  const top = (el) => el ? el.getBoundingClientRect().top : null;
  const h = [...document.querySelectorAll("[data-testid='stMain'] h3")]
              .find((e) => e.textContent.startsWith(heading));
  const charts = [...document.querySelectorAll("[data-testid='stMain'] [data-testid='stVegaLiteChart']")];
  const figure = h ? charts.find((c) => top(c) >= top(h)) : null;
  return {bar: top(document.querySelector(arguments_bar)), selector: top(document.querySelector(arguments_sel)),
          heading: top(h), figure: top(figure),
          figureWidth: figure ? figure.getBoundingClientRect().width : null,
          figureBottom: figure ? figure.getBoundingClientRect().bottom : null,
          mainWidth: document.querySelector("[data-testid='stMainBlockContainer'] [data-testid='stVerticalBlock']").getBoundingClientRect().width};
}""".replace("arguments_bar", repr(BAR)).replace("arguments_sel", repr(SELECTOR))


# a tooltip (of the button just clicked) or its box, still over the page
TOOLTIP = "[role='tooltip'], [data-testid='stTooltipContent']"


def settle(page) -> None:
    """Streamlit loads chart code lazily: wait until no skeleton is left, the charts are drawn and
    nothing moves any more (a scroll to the step bar included)."""
    wait_drawn(page)


def no_tooltip(page) -> None:
    """Wait until no tooltip is left over the page (the mouse moved away, the focus taken off)."""
    page.wait_for_function(f"!document.querySelector({TOOLTIP!r})", timeout=10_000)


def heading_of(steps, step: str) -> str:
    return f"Step {list(steps).index(step) + 1} of {len(steps)}"


def wait_for_step(page, steps, step: str) -> None:
    page.get_by_role("heading", name=re.compile(f"^{heading_of(steps, step)} ")).wait_for(timeout=30_000)
    wait_idle(page)
    settle(page)


def check_first_screen(page, number: int, steps, step: str, height: int, lecture: bool = False) -> dict:
    """The step bar, the selector, the heading and the top of the figure are inside the window;
    in lecture mode at least 250 px of the figure too."""
    pos = page.evaluate(POSITIONS, heading_of(steps, step))
    where = f"page {number}, step {step}: {pos}"
    for part in ("bar", "selector", "heading"):
        assert pos[part] is not None and -2 <= pos[part] < height, where  # -2: sub-pixel scrolling
    if (number, step) in NO_FIGURE:
        assert pos["figure"] is None, where
    else:
        assert pos["figure"] is not None and 0 <= pos["figure"] < height, where
        assert pos["heading"] < pos["figure"], where
        if lecture:
            assert pos["figure"] <= LECTURE_FIGURE_TOP, where
    return pos


def height_of(page) -> int:
    return page.viewport_size["height"]


def shoot(page, number: int, slug: str, steps, step: str, width: int, lecture: bool) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    # no tooltip of the button just clicked (hover or focus), no heading link, over the picture
    page.mouse.move(5, height_of(page) - 5)
    page.evaluate("document.activeElement && document.activeElement.blur()")
    no_tooltip(page)
    k = list(steps).index(step) + 1
    path = OUT / f"p{number}_{slug}_step{k}_{step}_{width}{'_lecture' if lecture else ''}.png"
    page.screenshot(path=str(path), full_page=False)  # the first screen, as the room sees it
    assert path.stat().st_size > 5_000, "screenshot is suspiciously small"


@pytest.mark.parametrize("width,height,lecture", SCREENS, ids=["1280x720-lecture", "1920x1080"])
def test_every_step_is_on_the_first_screen(browser, warm_url, width, height, lecture):
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    tops = []  # the measured positions, written next to the screenshots for a person to read
    try:
        for number, slug, path, field, steps in WALKS if lecture else FULL_HD_WALKS:
            query = f"?{field}={steps[0]}" + ("&lecture=1" if lecture else "")
            page.goto(f"{warm_url}/{path}{query}", wait_until="domcontentloaded")
            page.wait_for_selector("[data-testid='stApp']", timeout=60_000)
            wait_for_step(page, steps, steps[0])
            assert page.get_by_text("Page not found").count() == 0
            by_key = number == KEY_PAGE
            for i, step in enumerate(steps):
                pos = check_first_screen(page, number, steps, step, height, lecture)
                tops.append(f"p{number} {step}: figure top {pos['figure']}, heading {pos['heading']}")
                if not lecture and pos["figure"] is not None:
                    # full HD: the whole first figure fits on the first screen, not only its top
                    assert pos["figureBottom"] <= height, pos
                if lecture and number == KEY_PAGE and step not in ("order", "context"):
                    # a lecture 6 x 6 map uses the width: it was a third of the page column
                    assert pos["figureWidth"] > 0.45 * pos["mainWidth"], pos
                assert_no_error(page)
                shoot(page, number, slug, steps, step, width, lecture)
                if i == len(steps) - 1:
                    next_button = page.get_by_role("button", name=re.compile("Next"))
                    assert next_button.is_disabled()  # the last step: Next stops there
                    break
                if by_key:
                    page.keyboard.press("ArrowRight")  # the focus is on the page, not a field
                else:
                    page.locator(BAR).get_by_role("button", name=re.compile("Next")).click()
                wait_for_step(page, steps, steps[i + 1])
    finally:
        context.close()
        OUT.mkdir(parents=True, exist_ok=True)
        (OUT / f"figure_tops_{width}{'_lecture' if lecture else ''}.txt").write_text("\n".join(tops) + "\n")


def test_keys_step_back_and_bring_the_step_into_view(browser, warm_url):
    """← goes back one step; pressed far down a long step, → shows the next step's bar."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    try:
        number, slug, path, field, steps = WALKS[1]  # page 2: its ÷ √d_k step is long
        page.goto(f"{warm_url}/{path}?{field}=scaled&lecture=1", wait_until="domcontentloaded")
        wait_for_step(page, steps, "scaled")
        page.keyboard.press("ArrowLeft")
        wait_for_step(page, steps, "scores")
        assert f"{field}=scores" in page.url
        page.keyboard.press("ArrowRight")
        wait_for_step(page, steps, "scaled")
        # scroll to the scaling panel at the bottom: the bar leaves the screen
        page.get_by_role("heading", name="Why divide by √d_k?").scroll_into_view_if_needed()
        page.wait_for_function(f"document.querySelector({BAR!r}).getBoundingClientRect().top < 0",
                               timeout=10_000)
        assert page.locator(BAR).bounding_box()["y"] < 0
        page.keyboard.press("ArrowRight")
        wait_for_step(page, steps, "softmax")  # drawn, and still: the scroll to the bar is over
        check_first_screen(page, number, steps, "softmax", 720, lecture=True)
        # typing in a field does not step: there the arrows move the cursor
        page.locator(BAR).get_by_role("button", name=re.compile("Settings")).click()
        field_input = page.locator("[data-testid='stTextInput'] input[aria-label='d_out']")
        field_input.wait_for(timeout=10_000)
        page.mouse.move(5, 715)
        no_tooltip(page)
        OUT.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(OUT / "p2_self_settings_open_1280_lecture.png"))  # every control in reach
        # opened for the first time after several reruns, the controls show the values in use
        # (they showed their defaults: query "Your", empty d_out and seed, and sent them back)
        query_box = page.locator("[data-testid='stSelectbox']").filter(has_text="Query token").first
        assert "journey" in (query_box.text_content() or "") + " ".join(
            query_box.locator("input").evaluate_all("els => els.map(e => e.value)"))
        assert field_input.input_value() == "2"
        assert page.locator("[data-testid='stTextInput'] input[aria-label='Seed']").input_value() == "123"
        field_input.click()
        assert page.evaluate("document.activeElement.getAttribute('aria-label')") == "d_out"
        page.keyboard.press("ArrowRight")
        page.wait_for_timeout(1_000)  # a step would have started by now: a wait for nothing to happen
        wait_idle(page)
        assert f"{field}=softmax" in page.url
        assert "query=" not in page.url and "d_out=" not in page.url and "seed=" not in page.url
        assert page.get_by_role("heading", name=re.compile("^Step 5 of 6 ")).count() == 1
        assert_no_error(page)
    finally:
        context.close()
