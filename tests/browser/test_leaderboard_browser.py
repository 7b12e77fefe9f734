"""Browser test of the class challenge's leaderboard as the lecturer projects it: at 1024 x 768 with
the sidebar open (564 px of page), in both modes, and at 1280 x 720 in lecture mode. Every column is
in view (none behind a scroll bar), every entry's five sampled names are whole, the board is no wider
than its column; photographed (artifacts/screenshots/class_board_*.png).

The class, its challenge and six entries are made through the store (the lecturer's page opened
first, with the key): what is measured is the board, not the way there (test_class_browser.py walks
that)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pytest
from playwright.sync_api import expect

from core.classroom.store import ClassroomStore, default_url
from tests.browser import axe
from tests.browser.conftest import assert_no_error, open_app, screenshot, serve, wait_idle

pytestmark = pytest.mark.browser

KEY = "leaderboard-test lecturer key"

# six students: nicknames up to the store's 32 characters (one without a place to break it), names as
# long as the real dataset's
ENTRIES = [
    ("Ada", 1.9012, 158_720, ["maribella", "josiah", "kaylin", "adeline", "brantley"]),
    ("Grace Hopper (row 3)", 1.9437, 154_112, ["annalise", "ezekiel", "marisol", "jaxon", "evangeline"]),
    ("Ω-team", 1.9981, 88_064, ["tam", "bo", "ki", "ray", "lu"]),
    ("a-very-long-nickname-of-32-chars", 2.0114, 160_000, ["christopher", "maximiliano", "alexandria",
                                                             "constantine", "jacquelyn"]),
    ("Supercalifragilisticexpialidocio", 2.1403, 40_960, ["kenlee", "aryah", "dazlyn", "jaimarion", "treyvon"]),
    ("=cy", 2.4512, 10_240, ["a", "b", "c", "d", "e"]),
]


@dataclass
class Evaluation:
    """What the server's scoring returns (core.classroom.challenge.Evaluation: the fields the store reads)."""

    val_loss: float
    n_params: int
    samples: list
    steps: int = 400
    seconds: float = 60.0
    settings: dict = field(default_factory=lambda: {"preset": "quick_demo", "n_layer": 2, "n_embd": 64})


@pytest.fixture(scope="module")
def board_class(tmp_path_factory, browser):
    """A class-mode server, a lecturer's page with the class started, and a challenge with ENTRIES."""
    data = tmp_path_factory.mktemp("classroom")
    env = {"ATTENTION_LAB_LECTURER_KEY": KEY, "ATTENTION_LAB_DATA_DIR": str(data)}
    for url in serve(env):
        context = browser.new_context(viewport={"width": 1280, "height": 720})
        page = context.new_page()
        open_app(page, url)  # the root first: it registers the pages (streamlit/streamlit#9992)
        page.goto(f"{url}/class", wait_until="domcontentloaded")
        wait_idle(page)
        page.get_by_role("tab", name="Lecturer").click()
        page.get_by_label("Lecturer key").fill(KEY)
        page.get_by_role("button", name=re.compile("^Start or reopen")).click()
        wait_idle(page)
        code = page.locator(".st-key-class_join_code [data-testid='stMetricValue']").inner_text().strip()
        page.get_by_text("Open a challenge").click()
        wait_idle(page)
        page.get_by_role("button", name=re.compile("^Open the challenge")).click()
        expect(page.get_by_role("button", name="Close the challenge")).to_be_visible()
        store = ClassroomStore(default_url(data), submission_limit=(10**6, 1.0))
        current = store.current_challenge(code)
        for i, (nickname, loss, n_params, names) in enumerate(ENTRIES):
            _, token = store.join(code, nickname)
            store.submit(code, token, current.id, Evaluation(loss, min(n_params, current.max_params), names,
                                                            seconds=30.0 + i))
        expect(page.get_by_text(f"{len(ENTRIES)} entries on the board")).to_be_visible(timeout=15_000)
        yield page, store, code
        context.close()


# the board's width beyond its box (a horizontal scroll bar), and its column headers
BOARD = """(table) => { const box = table.getBoundingClientRect();
  const column = table.closest("[data-testid='stElementContainer']").parentElement.getBoundingClientRect();
  const scroller = [table, ...table.querySelectorAll("*")].find((el) => el.scrollWidth > el.clientWidth + 1
                                                                 && getComputedStyle(el).overflowX !== "visible");
  return {headers: [...table.querySelectorAll("thead th")].map((h) => h.textContent.trim()),
          right: box.right, column_right: column.right,
          scrolls: scroller ? `${scroller.scrollWidth} > ${scroller.clientWidth}` : null,
          cells: [...table.querySelectorAll("tbody tr")].map((tr) => [...tr.querySelectorAll("td, th")]
            .map((td) => ({text: td.innerText.trim(), cut: td.scrollWidth > td.clientWidth + 1})))}; }"""
COLUMNS = ["rank", "nickname", "validation loss", "five sampled names", "parameters", "settings"]


@pytest.mark.parametrize("size, lecture", [((1024, 768), False), ((1024, 768), True), ((1280, 720), True)],
                         ids=["1024", "1024_lecture", "1280_lecture"])
def test_the_board_shows_every_column_at_projector_sizes(board_class, size, lecture):
    page, _, _ = board_class
    page.set_viewport_size({"width": size[0], "height": size[1]})
    if ("lecture=1" in page.url) != lecture:
        page.locator("[data-testid='stSidebar']").get_by_text("Lecture mode", exact=True).click()
        page.mouse.move(0, 0)
        wait_idle(page)
    # (no reload: a reload is a new session, and the lecturer's seat is the session's)
    assert_no_error(page)
    page.get_by_role("heading", name=re.compile("^Leaderboard")).scroll_into_view_if_needed()
    table = page.locator("[data-testid='stMain'] [data-testid='stTable']")
    table.scroll_into_view_if_needed()
    page.wait_for_timeout(300)  # laid out at the new size
    found = table.evaluate(BOARD)
    assert found["headers"] == COLUMNS, found["headers"]
    assert found["scrolls"] is None, found["scrolls"]
    assert found["right"] <= found["column_right"] + 1, found
    rows = found["cells"]
    assert [row[1]["text"] for row in rows] == [nickname for nickname, *_ in ENTRIES]  # as typed, in order
    for row, (_, loss, _, names) in zip(rows, ENTRIES):
        assert row[2]["text"] == f"{loss:.4f}"
        assert row[3]["text"].split() == ", ".join(names).split()  # every name whole (wrapped at spaces)
        assert row[5]["text"] == "open"
        assert not any(cell["cut"] for cell in row), row
    page.mouse.move(0, 0)
    screenshot(page, f"class_board_{size[0]}" + ("_lecture" if lecture else ""), full_page=False)


def test_a_long_board_scrolls_under_its_header(board_class):
    """A class of 60 would make a page of rows: past BOARD_ROWS_IN_FULL entries the board scrolls
    inside BOARD_HEIGHT_PX, its header row still in view."""
    from ui.class_challenge import BOARD_HEIGHT_PX, BOARD_ROWS_IN_FULL

    page, store, code = board_class
    current = store.current_challenge(code)
    for i in range(BOARD_ROWS_IN_FULL + 8 - len(ENTRIES)):
        _, token = store.join(code, f"student {i:02d}")
        store.submit(code, token, current.id, Evaluation(2.5 + i / 100, 50_000, ["ann", "bo", "cy", "di", "ed"],
                                                        seconds=100.0 + i))
    total = BOARD_ROWS_IN_FULL + 8
    expect(page.get_by_text(f"{total} entries on the board")).to_be_visible(timeout=15_000)
    table = page.locator("[data-testid='stMain'] [data-testid='stTable']")
    table.scroll_into_view_if_needed()
    box = table.bounding_box()
    assert box["height"] <= BOARD_HEIGHT_PX + 2, box
    assert table.locator("tbody tr").count() == total
    scroller = table.evaluate_handle("(t) => [t, ...t.querySelectorAll('*')].find((el) => el.scrollHeight > "
                                     "el.clientHeight + 1 && getComputedStyle(el).overflowY !== 'visible')")
    assert scroller.evaluate("(el) => el !== undefined && el !== null")
    scroller.evaluate("(el) => { el.scrollTop = el.scrollHeight; }")
    page.wait_for_timeout(200)
    header, last = table.locator("thead th").first.bounding_box(), table.locator("tbody tr").last.bounding_box()
    assert box["y"] - 1 <= header["y"] <= box["y"] + 40, (header, box)  # the header stuck at the top
    assert last["y"] + last["height"] <= box["y"] + box["height"] + 2, (last, box)  # the last row in view
    scrolled = scroller.evaluate("(el) => el.scrollTop")
    assert scrolled > 0
    page.wait_for_timeout(5000)  # the board redraws every 2 s: the reader's place stays
    assert scroller.evaluate("(el) => el.isConnected && el.scrollTop") == scrolled
    page.mouse.move(0, 0)
    screenshot(page, "class_board_long_1280_lecture", full_page=False)
    found = axe.violations(page)  # a scrolling region a keyboard cannot reach would be one
    assert found == [], axe.report(found)
