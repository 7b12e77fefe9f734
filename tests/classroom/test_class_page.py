"""AppTest of the Class page: class mode off without a key, a lecturer starts a class, a student joins."""

from __future__ import annotations

import pytest

from benchmarks.harness import open_app_test
from core.classroom import store as class_db

PAGE = "pages/11_class.py"
KEY = "correct horse battery staple"


@pytest.fixture
def class_env(tmp_path, monkeypatch):
    """Class mode on, with the database in a fresh folder; the store the page will use."""
    monkeypatch.setenv("ATTENTION_LAB_LECTURER_KEY", KEY)
    monkeypatch.setenv(class_db.DATA_DIR_ENV, str(tmp_path / "classroom"))
    monkeypatch.delenv(class_db.DB_URL_ENV, raising=False)
    yield class_db.open_store()
    class_db.dispose_engine(class_db.default_url())


def no_exception(at) -> None:
    assert not at.exception, [e.value for e in at.exception]


def button(at, label: str):
    return next(b for b in at.button if b.label == label)


def test_without_a_key_the_page_says_how_to_turn_class_mode_on(monkeypatch):
    monkeypatch.delenv("ATTENTION_LAB_LECTURER_KEY", raising=False)
    at = open_app_test(PAGE)
    no_exception(at)
    assert "ATTENTION_LAB_LECTURER_KEY" in " ".join(i.value for i in at.info)
    assert not at.text_input  # nothing to start or join


def test_a_wrong_key_is_refused_and_the_right_one_starts_a_class(class_env):
    at = open_app_test(PAGE)
    at.text_input(key="class.key").input("guess")
    button(at, "Start or reopen").click()
    at.run()
    no_exception(at)
    assert "not the lecturer key" in " ".join(e.value for e in at.error)

    at.text_input(key="class.key").input(KEY)
    button(at, "Start or reopen").click()
    at.run()
    no_exception(at)
    code = next(m.value for m in at.metric if m.label == "Join code")
    assert class_env.find_class(code) is not None
    assert f"?class={code}" in at.code[0].value
    assert next(m.value for m in at.metric if m.label == "Students joined") == "0"


def test_a_student_joins_from_the_link_and_the_nickname_stays_text(class_env):
    info, _ = class_env.create_class()
    at = open_app_test(PAGE, query={"class": info.code.lower()})
    assert at.text_input(key="class.join_code").value == info.code  # filled in from the link
    at.text_input(key="class.nickname").input("**bold** <script>x</script>\u202e")
    button(at, "Join").click()
    at.run()
    no_exception(at)
    assert [t.value for t in at.text] == ["**bold** <script>x</script>"]  # st.text: never Markdown or HTML
    assert [m.nickname for m in class_env.members(info.code)] == ["**bold** <script>x</script>"]
    assert "<script>" not in " ".join(m.value for m in at.markdown)


def test_a_refused_nickname_or_code_gets_a_message(class_env):
    info, _ = class_env.create_class()
    at = open_app_test(PAGE, query={"class": info.code})
    at.text_input(key="class.nickname").input("\u202e  \u200f")
    button(at, "Join").click()
    at.run()
    no_exception(at)
    assert "cannot be empty" in " ".join(e.value for e in at.error)

    at.text_input(key="class.join_code").input("ZZZZZZ")
    at.text_input(key="class.nickname").input("Ada")
    button(at, "Join").click()
    at.run()
    no_exception(at)
    assert "no class with the code" in " ".join(e.value for e in at.error)
    assert class_env.members(info.code) == []


def errors_of(at) -> str:
    return " ".join(e.value for e in at.error)


@pytest.mark.parametrize("typed, reason", [
    ("K0QMPX", "it has 0, and codes leave out 0, O, 1, I and L"),
    ("abc!", "codes have 6 letters and digits"),
])
def test_a_mistyped_code_is_refused_with_why_in_the_words_of_the_action(class_env, typed, reason):
    at = open_app_test(PAGE)
    at.text_input(key="class.join_code").input(typed)
    at.text_input(key="class.nickname").input("Ada")
    button(at, "Join").click()
    at.run()
    no_exception(at)
    assert errors_of(at).startswith("Could not join the class: That is not a join code")
    assert reason in errors_of(at)
    assert "compute" not in errors_of(at)


@pytest.mark.parametrize("link", ["bad!", "\U0001f600", "Q" * 5000])
def test_a_join_link_with_an_unusable_code_says_so(class_env, link):
    at = open_app_test(PAGE, query={"class": link})
    no_exception(at)
    assert at.text_input(key="class.join_code").value == ""
    warned = " ".join(w.value for w in at.warning)
    assert "The join link's code could not be used. That is not a join code" in warned


def test_a_good_join_link_gives_no_warning(class_env):
    info, _ = class_env.create_class()
    at = open_app_test(PAGE, query={"class": info.code})
    assert not [w for w in at.warning if "join link" in w.value]


def test_a_class_reopened_in_another_window_is_not_called_ended(class_env):
    at = open_app_test(PAGE)
    at.text_input(key="class.key").input(KEY)
    button(at, "Start or reopen").click()
    at.run()
    code = next(m.value for m in at.metric if m.label == "Join code")
    class_env.replace_lecturer_token(code)  # the lecturer's key and code used in another window
    at.run()
    no_exception(at)
    warned = " ".join(w.value for w in at.warning)
    assert f"Class {code} was reopened in another browser window" in warned
    assert "has ended" not in warned
    class_env.purge_expired()
    other = open_app_test(PAGE)  # and a class that really ended still says so
    other.text_input(key="class.key").input(KEY)
    button(other, "Start or reopen").click()
    other.run()
    ended = next(m.value for m in other.metric if m.label == "Join code")
    lecturer = other.session_state["class.lecturer"]
    class_env.delete_class(ended, lecturer.token)
    other.run()
    assert "Your class has ended." in " ".join(w.value for w in other.warning)
