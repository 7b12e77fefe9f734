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
    assert errors_of(at).startswith("Could not join the class: that is not a join code")
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


def join_on_page(at, code: str, nickname: str) -> None:
    at.text_input(key="class.join_code").input(code)
    at.text_input(key="class.nickname").input(nickname)
    button(at, "Join").click()
    at.run()
    no_exception(at)


def test_a_nickname_or_code_over_its_length_is_refused_with_a_message_and_kept_in_its_box(class_env):
    """Streamlit's max_chars (32 and 16) dropped a longer paste whole, and Join then said the box was
    empty; now the boxes take it and Join says what is wrong, with the text still there to shorten."""
    from core.classroom.security import NICKNAME_MAX_CHARS

    info, _ = class_env.create_class()
    at = open_app_test(PAGE, query={"class": info.code})
    assert not at.text_input(key="class.nickname").proto.max_chars
    assert not at.text_input(key="class.join_code").proto.max_chars
    long_name = "Ada " * 10  # 40 characters; 39 once the end space is dropped
    join_on_page(at, info.code, long_name)
    assert f"Could not join the class: that nickname has 39 characters; use at most {NICKNAME_MAX_CHARS}." in errors_of(at)
    assert at.text_input(key="class.nickname").value == long_name  # to be shortened, not typed again
    assert class_env.members(info.code) == []

    join_on_page(at, info.code + "-" + info.code + info.code, "Ada")  # pasted three times: 18 letters
    assert "codes have 6 characters, this has 18." in errors_of(at)
    assert class_env.members(info.code) == []


def test_leaving_takes_the_seat_and_its_answers_out_of_the_class(class_env):
    """Before: "Leave this class" only forgot the seat in the browser. The lecturer still counted the
    student (and their poll answers), and rejoining under the same nickname was refused."""
    info, lecturer = class_env.create_class()
    _, bo = class_env.join(info.code, "Bo")
    at = open_app_test(PAGE, query={"class": info.code})
    join_on_page(at, info.code, "Ann")
    ann = at.session_state["class.member"]
    class_env.answer(info.code, ann.token, "p1.q", "a")
    class_env.answer(info.code, bo, "p1.q", "b")
    challenge = class_env.open_challenge(info.code, lecturer, "c", 10_000, 60)

    button(at, "Leave this class").click()
    at.run()
    no_exception(at)
    assert "class.member" not in at.session_state
    assert [m.nickname for m in class_env.members(info.code)] == ["Bo"]  # "Students joined": 1
    assert class_env.poll(info.code, "p1.q").counts == {"b": 1}  # "1 of 1 answered"
    assert class_env.leaderboard(info.code, challenge.id) == []

    join_on_page(at, info.code, "Ann")  # the nickname is free again
    assert "already has that nickname" not in errors_of(at)
    assert f"You are in class **{info.code}**." in " ".join(s.value for s in at.success)
    assert [m.nickname for m in class_env.members(info.code)] == ["Bo", "Ann"]


def test_leaving_a_seat_the_database_no_longer_has_still_leaves(class_env, monkeypatch):
    """The class ended (or another window left) between the page's check and the click: the store
    refuses, and the student is out of the class all the same, without an error."""
    from core.classroom.security import NotAllowed

    info, _ = class_env.create_class()
    at = open_app_test(PAGE)
    join_on_page(at, info.code, "Ann")

    def gone(self, code, token):
        raise NotAllowed("You are not in this class; join it with its code and a nickname.")

    monkeypatch.setattr(type(class_env), "leave", gone)
    button(at, "Leave this class").click()
    at.run()
    no_exception(at)
    assert "class.member" not in at.session_state
    assert not errors_of(at)


def test_a_bad_join_link_s_warning_goes_once_a_usable_code_is_typed_and_after_leaving(class_env):
    """Before: the warning about ?class=abc0 stayed above the form after a valid code was typed, and
    came back after "Leave this class" (the link stayed in the address bar)."""
    info, _ = class_env.create_class()
    class_env.join(info.code, "Bo")
    at = open_app_test(PAGE, query={"class": "abc0"})
    assert "The join link's code could not be used" in " ".join(w.value for w in at.warning)
    join_on_page(at, info.code, "bo")  # a usable code typed; the nickname is taken
    assert "already has that nickname" in errors_of(at)
    assert not [w for w in at.warning if "join link" in w.value]
    join_on_page(at, info.code, "Ann")
    assert "class" not in at.query_params  # the link did its work
    button(at, "Leave this class").click()
    at.run()
    no_exception(at)
    assert not [w for w in at.warning if "join link" in w.value]
    assert at.text_input(key="class.join_code").value in ("", info.code)


def start(at, reopen: str = "") -> None:
    at.text_input(key="class.key").input(KEY)
    at.text_input(key="class.reopen_code").input(reopen)
    button(at, "Start or reopen").click()
    at.run()
    no_exception(at)


@pytest.mark.parametrize("typed, why", [
    ("hello0", "it has 0 and L and O, and codes leave out 0, O, 1, I and L"),
    ("ab#cd", "codes have 6 letters and digits"),
    ("**x**", "codes have 6 letters and digits"),
])
def test_reopening_with_a_mistyped_code_says_what_is_wrong_with_it(class_env, typed, why):
    """Before: "Could not start the class: The join code is empty: type the code the lecturer shows"."""
    at = open_app_test(PAGE)
    start(at, typed)
    shown = errors_of(at)
    assert shown.startswith("Could not reopen the class: “"), shown
    assert " is not a join code: " in shown and why in shown
    assert "is empty" not in shown and "the lecturer shows" not in shown  # said to the lecturer
    assert "class.lecturer" not in at.session_state
    if typed == "hello0":
        assert shown.startswith("Could not reopen the class: “hello0” is not a join code: ")
    assert "**x**" not in shown  # what was typed is shown as text, not as Markdown


def test_reopening_takes_the_class_back_and_an_unknown_code_is_named(class_env):
    info, old = class_env.create_class()
    at = open_app_test(PAGE)
    start(at, "ZZZ-ZZZ")
    assert "Could not reopen the class: there is no class with the code ZZZZZZ" in errors_of(at)
    start(at, f" {info.code[:3].lower()}-{info.code[3:].lower()} ")  # as a person types it
    assert next(m.value for m in at.metric if m.label == "Join code") == info.code
    assert not class_env.is_lecturer(info.code, old)
    blank = open_app_test(PAGE)
    start(blank, " - ")  # nothing that could be a code: a new class, as with an empty box
    assert next(m.value for m in blank.metric if m.label == "Join code") != info.code


def test_deleting_the_class_is_confirmed_to_the_lecturer_once(class_env):
    at = open_app_test(PAGE)
    start(at)
    code = next(m.value for m in at.metric if m.label == "Join code")
    at.checkbox(key="class.confirm_delete").check().run()
    button(at, "Delete this class").click()
    at.run()
    no_exception(at)
    assert class_env.find_class(code) is None
    said = " ".join(s.value for s in at.success)
    assert f"Class {code} deleted: " in said, said
    at.run()
    assert f"Class {code} deleted" not in " ".join(s.value for s in at.success)  # said once
