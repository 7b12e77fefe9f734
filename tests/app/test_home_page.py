"""AppTest of the entry point and the home page."""

from tests.app.conftest import assert_no_exception, open_page


def test_home_renders_title_and_guide():
    at = open_page()
    assert_no_exception(at)
    assert at.title[0].value == "Attention Lab"
    text = " ".join(m.value for m in at.markdown)
    assert "Lecture mode" in text and "Show the code" in text


def test_lecture_mode_from_link_is_kept():
    at = open_page(query={"lecture": "1"})
    assert_no_exception(at)
    assert at.session_state["lecture_mode"] is True
    assert at.toggle(key="lecture_mode").value is True
    css = [m.value for m in at.markdown if "<style>" in m.value]
    assert css and "font-size" in css[0]
    # AppTest drops entry-point widgets from its tree after the first run when st.navigation is
    # used, so the switch is flipped through session state, exactly what the toggle writes.
    at.session_state["lecture_mode"] = False
    at.run()
    assert_no_exception(at)
    assert not [m for m in at.markdown if "<style>" in m.value]
