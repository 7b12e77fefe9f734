"""Following the lecturer onto pages that stop early (st.stop), and a hidden answer reaching the
students: both found in a real-browser audit of a class (the lecturer opened Sample names before
training a model: the page stops with "train a model first", and nothing was published)."""

from __future__ import annotations

import pytest

from tests.classroom.test_class_ui import finished_book, klass, open_as  # noqa: F401 - fixtures

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.parametrize("page, url", [("pages/8_sample_names.py", "sample_names"),
                                       ("pages/9_inside_model.py", "inside_model")])
def test_a_page_that_stops_early_still_tells_the_students_where_the_lecturer_is(klass, page, url):
    store, code, lecturer, _ = klass
    at = open_as(lecturer, page)
    assert any("Train" in str(e.value) for e in [*at.info, *at.warning, *at.markdown])  # it did stop early
    published = store.lecturer_state(code)
    assert published is not None and published.page == url, published


def test_a_poll_page_lists_the_answer_it_shows_so_a_hide_reaches_the_student(klass):
    """"Hide the answer again" reached a student only when their page happened to run again: the
    follow tick reran pages for a reveal only. A page showing a revealed answer now lists it
    (SHOWN_KEY), and the tick reruns it when the answer is hidden again."""
    from tests.classroom.test_class_ui import POLL_STEPS, answer_on_page, only_question, texts
    from ui.class_follow import polls_changed
    from ui.class_polls import AWAITING_KEY, SHOWN_KEY

    store, code, lecturer, (ada, _) = klass
    at = open_as(ada, *POLL_STEPS[3])
    answer_on_page(at)
    qid = only_question(store, code)
    assert at.session_state[AWAITING_KEY] == {qid}
    store.reveal(code, lecturer.token, qid)
    at.run()
    assert at.session_state[SHOWN_KEY] == {qid} and "You answered" in texts(at.success) + texts(at.warning)
    store.hide_reveal(code, lecturer.token, qid)
    pulse = store.pulse(code)
    assert polls_changed(pulse.revealed, set(), at.session_state[SHOWN_KEY]) == {qid}  # the tick reruns
    at.run()
    assert "**Class poll:** your answer" in texts(at.markdown)  # back to waiting for the reveal
    assert SHOWN_KEY not in at.session_state or not at.session_state[SHOWN_KEY]


def test_the_tick_reruns_a_page_only_for_its_own_polls():
    from ui.class_follow import polls_changed

    assert polls_changed(frozenset({"a"}), {"a"}, set()) == {"a"}  # revealed while waiting
    assert polls_changed(frozenset({"a"}), set(), {"a"}) == set()  # still shown: nothing to do
    assert polls_changed(frozenset(), set(), {"a"}) == {"a"}  # hidden again
    assert polls_changed(frozenset({"b"}), {"a"}, set()) == set()  # another page's poll


def test_the_lecturer_on_sample_names_with_its_poll_waiting_is_followed(klass, finished_book):
    """Sample names with a model ends early while its class poll waits for the reveal (the
    labels of the names would give the answer away): the lecturer's place is published all the same."""
    from tests.classroom.test_class_ui import RUNBOOK_KEY

    store, code, lecturer, _ = klass
    at = open_as(lecturer, "pages/8_sample_names.py", state={RUNBOOK_KEY: finished_book})
    assert any(b.label == "Reveal to everyone" for b in at.button)  # the poll is up, the page ended there
    assert store.lecturer_state(code).page == "sample_names"
