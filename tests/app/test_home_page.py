"""AppTest of the entry point and the home page."""

import pytest

from tests.app.conftest import assert_no_exception, open_page
from ui import nav


def test_home_renders_title_and_guide():
    at = open_page()
    assert_no_exception(at)
    assert at.title[0].value == "Attention Lab"
    text = " ".join(m.value for m in at.markdown)
    assert "Lecture mode" in text and "Show the code" in text


@pytest.mark.parametrize("value, on", [("true", True), ("Yes", True), ("ON", True), ("\uff11", True),
                                       ("0", False), ("false", False), ("nope", False)])
def test_lecture_mode_reads_a_link_switch_as_every_other_switch(value, on):
    at = open_page(query={"lecture": value})
    assert_no_exception(at)
    assert at.session_state["lecture_mode"] is on
    assert at.query_params.get("lecture") == ("1" if on else None)  # a link then says lecture=1


def test_lecture_mode_from_link_is_kept():
    at = open_page(query={"lecture": "1"})
    assert_no_exception(at)
    assert at.session_state["lecture_mode"] is True
    assert at.toggle(key="lecture_mode").value is True
    css = [m.value for m in at.markdown if "<style>" in m.value]
    assert css and "font-size" in css[0]
    # the sidebar switch itself (every AppTest run goes through the entry: tests/conftest.py)
    at.toggle(key="lecture_mode").set_value(False).run()
    assert_no_exception(at)
    assert not [m for m in at.markdown if "<style>" in m.value]
    assert "lecture" not in at.query_params


def test_run_times_are_logged_when_asked(tmp_path, monkeypatch):
    """benchmarks/classroom_load.py reads the server's own run times from this log (it finds the
    walkthrough runs of a real server there; AppTest is used here for the first run only)."""
    log = tmp_path / "runs.tsv"
    monkeypatch.setenv("ATTENTION_LAB_TIMING_LOG", str(log))
    at = open_page()
    assert_no_exception(at)
    rows = [line.split("\t") for line in log.read_text().splitlines()]
    assert rows and rows[0][0] == "home" and 0 < float(rows[0][1]) < 60


def test_an_unwritable_timing_log_does_not_break_the_page(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_TIMING_LOG", str(tmp_path / "no-such-dir" / "runs.tsv"))
    at = open_page()
    assert_no_exception(at)
    assert at.title[0].value == "Attention Lab"


@pytest.mark.parametrize("page", [lesson.file for lesson in nav.available_lessons()])
def test_every_page_test_runs_through_the_entry_point_as_the_server_does(page):
    """AppTest would otherwise run a page file on its own after switch_page (Streamlit's old
    multipage mode, because of the pages/ folder): no navigation, no sidebar, no lecture mode.
    benchmarks.harness.apptest keeps every run going through streamlit_app.py, as on a server."""
    at = open_page(page)
    assert_no_exception(at)
    for _ in range(2):  # the first run and a rerun
        assert "Lecture mode" in [t.label for t in at.sidebar.toggle]
        at.run()


@pytest.mark.parametrize("query", [None, {"lecture": "1"}])
def test_every_lesson_links_its_title_and_says_what_it_teaches_in_text_that_wraps(query):
    """A page link's label never wraps, so a blurb in it was cut mid-word at 1024 px: the link
    holds the title, and the whole blurb is a caption beside it."""
    at = open_page(query=query)
    assert_no_exception(at)
    lessons = nav.available_lessons()
    links = at.get("page_link")
    assert [link.proto.label for link in links[-len(lessons):]] == [f"**{l.title}**" for l in lessons]
    assert [link.proto.page for link in links[-len(lessons):]] == [l.url for l in lessons]
    captions = [c.value for c in at.caption]
    assert all(lesson.blurb in captions for lesson in lessons)
