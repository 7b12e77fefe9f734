"""Browser test of the Train page's first screen while a run trains: at 1280×720 in lecture mode
and at 1920×1080, the run's controls (Pause, Stop here) and the top of the live loss curve are in
the viewport without scrolling. Screenshots of that first screen:
artifacts/screenshots/train_midrun_1280_lecture.png and train_midrun_1920.png."""

from __future__ import annotations

import re
import time

import pytest

from tests.browser.conftest import assert_no_error, open_page_url, screenshot

pytestmark = pytest.mark.browser

TITLE = "Train the names GPT"
CHART = "[data-testid='stVegaLiteChart']"
MIN_CHART_SHOWN = 120  # px of the loss chart that must be on the first screen, not just its edge


def _step(page) -> int:
    bar = page.locator("[data-testid='stProgress']")
    match = re.search(r"step ([\d,]+) of", bar.first.inner_text() if bar.count() else "")
    return int(match.group(1).replace(",", "")) if match else 0


def _open_train_page(page, server_url: str, query: str) -> None:
    open_page_url(page, server_url, f"train_gpt?{query}", TITLE)


def _inside(page, box, height: int, what: str, *, shown: float = 1.0) -> None:
    assert box is not None, f"{what} is not on the page"
    assert box["y"] >= 0, f"{what} is above the viewport (y={box['y']:.0f})"
    assert box["y"] + shown <= height, f"{what} starts at y={box['y']:.0f}, below the first screen ({height})"


@pytest.mark.parametrize("width, height, lecture", [(1280, 720, True), (1920, 1080, False)],
                         ids=["1280_lecture", "1920"])
def test_mid_run_the_controls_and_the_curve_are_on_the_first_screen(browser, server_url, width, height,
                                                                     lecture):
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    try:
        # the quick demo with more steps, so it is still training when the screenshot is taken
        _open_train_page(page, server_url, "max_steps=5000" + ("&lecture=1" if lecture else ""))
        start = page.get_by_role("button", name="Start", exact=True)
        _inside(page, start.bounding_box(), height, "Start (before the first run)")
        start.click()
        deadline = time.monotonic() + 120
        while _step(page) < 30 and time.monotonic() < deadline:
            page.wait_for_timeout(500)
        assert _step(page) >= 30, "the run did not train"
        page.wait_for_selector(CHART)
        page.wait_for_timeout(1000)  # a tick or two more: the chart is drawn with this run's rows
        assert "training" in page.locator("[data-testid='stProgress']").first.inner_text()
        page.mouse.move(width - 5, height - 5)  # no tooltip over the controls
        page.wait_for_timeout(400)
        name = f"train_midrun_{width}" + ("_lecture" if lecture else "")
        screenshot(page, name, full_page=False)  # the first screen, as the audience sees it

        _inside(page, page.get_by_role("button", name="Pause").bounding_box(), height, "Pause")
        _inside(page, page.get_by_role("button", name="Stop here").bounding_box(), height, "Stop here")
        _inside(page, page.locator(CHART).first.bounding_box(), height, "the loss chart",
                shown=MIN_CHART_SHOWN)
        assert page.get_by_role("button", name="Resume", exact=False).count() == 0  # only what applies
        assert_no_error(page)

        page.get_by_role("button", name="Stop here").click()  # frees the machine for the next test
        deadline = time.monotonic() + 60
        while "stopped" not in page.locator("[data-testid='stProgress']").first.inner_text() \
                and time.monotonic() < deadline:
            page.wait_for_timeout(300)
        assert page.get_by_role("button", name=re.compile(r"^Train [\d,]+ more steps$")).count() == 1
        assert page.get_by_role("button", name="Pause").count() == 0
    finally:
        context.close()
