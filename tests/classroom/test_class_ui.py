"""AppTests of class mode in the pages: the projector card, class polls on pages 1–4 (hidden figure,
the lecturer's live count and chart, the reveal), following the lecturer, the challenge from the
Train page to the board, hiding an entry and deleting the class.

Each browser session is an AppTest with its seat (ui.classroom) put in its session state, as the
Class page puts it there after a join or a start (tests/classroom/test_class_page.py drives those)."""

from __future__ import annotations

import json
import re
import time

import pyarrow as pa
import pytest
import torch
from streamlit.testing.v1 import AppTest

from benchmarks.harness.apptest import ROOT, open_app_test
from core import runs, train_settings
from core.classroom import challenge
from core.classroom import store as class_db
from core.classroom.security import escape_markdown
from ui import class_follow, class_polls
from ui.classroom import LECTURER_SEAT, MEMBER_SEAT, LecturerSeat, MemberSeat
from ui.training import RUNBOOK_KEY
from tests.helpers import spec_title

pytestmark = pytest.mark.usefixtures("one_thread")

KEY = "a lecturer key for tests"
TINY = dict(context_size=8, n_layer=1, n_head=2, d_embed=16, d_ff=32, batch_size=16,
            max_steps=40, val_interval=20, warmup_steps=0)

# one poll per walkthrough page: the page, the query that opens the step asking it
POLL_STEPS = [("pages/1_simple_attention.py", {"step": "weights"}),
              ("pages/2_self_attention.py", {"sa_step": "softmax"}),
              ("pages/3_causal_attention.py", {"causal_step": "weights"}),
              ("pages/4_multi_head.py", {"mh_step": "why"})]


@pytest.fixture
def klass(tmp_path, monkeypatch):
    """Class mode on (a key, a fresh database folder); a class with two students.
    Yields (store, code, lecturer seat, [member seats])."""
    monkeypatch.setenv("ATTENTION_LAB_LECTURER_KEY", KEY)
    monkeypatch.setenv(class_db.DATA_DIR_ENV, str(tmp_path / "classroom"))
    monkeypatch.delenv(class_db.DB_URL_ENV, raising=False)
    store = class_db.open_store()
    info, token = store.create_class()
    students = []
    for nickname in ("Ada", "Alan"):
        member, member_token = store.join(info.code, nickname)
        students.append(MemberSeat(info.code, member_token, member.nickname))
    yield store, info.code, LecturerSeat(info.code, token), students
    class_db.dispose_engine(class_db.default_url())


def open_as(seat, page: str | None, query: dict | None = None, state: dict | None = None) -> AppTest:
    """The app in a session that holds `seat`, switched to `page` (None: the entry's first page);
    every run goes through the entry point, as on a real server (benchmarks.harness.open_app_test)."""
    held = {} if seat is None else {LECTURER_SEAT if isinstance(seat, LecturerSeat) else MEMBER_SEAT: seat}
    at = open_app_test(page, query=query, timeout=120, state={**held, **(state or {})})
    no_exception(at)
    return at


def no_exception(at) -> None:
    assert not at.exception, [e.value for e in at.exception]


def button(at, label: str):
    found = [b for b in at.button if b.label == label]
    assert found, (label, [b.label for b in at.button])
    return found[0]


def chart_titles(at) -> list[str]:
    titles = []
    for el in at.get("vega_lite_chart") + at.get("arrow_vega_lite_chart"):
        titles.append(spec_title(json.loads(el.proto.spec)))
    return titles


def poll_frame(at):
    """The data of the class poll chart on the page."""
    for el in at.get("vega_lite_chart") + at.get("arrow_vega_lite_chart"):
        spec = json.loads(el.proto.spec)
        if spec_title(spec) == "The class's answers":
            return pa.ipc.open_stream(el.proto.datasets[0].data.data).read_all().to_pandas()
    raise AssertionError(f"no poll chart among {chart_titles(at)}")


def texts(elements) -> str:
    return " ".join(str(e.value) for e in elements)


def answer_on_page(at, choice_index: int = 0) -> str:
    radio = next(r for r in at.radio if r.label == "Your answer")
    choice = radio.options[choice_index]
    radio.set_value(choice)  # in the poll's form: sent with the button, as the browser does
    button(at, "Send my answer").click().run()
    no_exception(at)
    return choice


def only_question(store, code: str) -> str:
    """The id of the one question answered in the class (the pages make it from their settings)."""
    with store.engine.connect() as conn:
        rows = conn.execute(class_db.sa.select(class_db.answers.c.question).distinct()).all()
    assert len(rows) == 1, rows
    return rows[0][0]


# ------------------------------------------------------------------------------ start and join
def test_the_projector_card_shows_qr_code_and_link_as_text(klass):
    store, code, lecturer, _ = klass
    at = open_as(lecturer, "pages/11_class.py")
    assert next(m.value for m in at.metric if m.label == "Join code") == code
    assert f"?class={code}" in at.code[0].value  # the link, as text beside the QR code
    assert len(at.get("image")) == 1  # the QR code
    assert next(m.value for m in at.metric if m.label == "Students joined") == "2"
    frame = at.dataframe[0].value
    assert list(frame["nickname"]) == ["Ada", "Alan"]
    assert not at.tabs  # the projected view is the class, without the join form


def test_the_lecturer_deletes_the_class(klass):
    store, code, lecturer, _ = klass
    at = open_as(lecturer, "pages/11_class.py")
    at.checkbox(key="class.confirm_delete").check().run()
    button(at, "Delete this class").click().run()
    no_exception(at)
    assert store.find_class(code) is None
    assert LECTURER_SEAT not in at.session_state
    assert f"Class {code} deleted: " in texts(at.success)  # not a silent return to the join form


# ------------------------------------------------------------------------------------- polls
@pytest.mark.parametrize("page,query", POLL_STEPS)
def test_a_student_answers_before_seeing_the_figure(klass, page, query, monkeypatch):
    store, code, _, (ada, _) = klass
    at = open_as(ada, page, query)
    assert "**Class poll:**" in texts(at.markdown)
    hidden = chart_titles(at)
    drawn = []  # each page run draws the poll once
    real = class_polls._student_view
    monkeypatch.setattr(class_polls, "_student_view", lambda *a: drawn.append(a[3]) or real(*a))
    choice = answer_on_page(at)
    assert len(drawn) == 1  # stored before the page runs: one run answers (60 sends in seconds)
    assert store.my_answer(code, ada.token, only_question(store, code)) == choice
    shown = chart_titles(at)
    assert len(shown) > len(hidden), (hidden, shown)  # the figure appears once answered
    assert choice in [t.value for t in at.text]  # the answer, as text


def test_picking_a_choice_runs_nothing_and_sending_none_asks_for_one(klass):
    store, code, _, (ada, _) = klass
    page, query = POLL_STEPS[0]
    at = open_as(ada, page, query)
    radio = next(r for r in at.radio if r.label == "Your answer")
    assert radio.proto.form_id  # in the poll's form: a pick is not a page run
    button(at, "Send my answer").click().run()  # nothing picked
    no_exception(at)
    assert "Pick an answer first" in texts(at.warning)
    with store.engine.connect() as conn:
        assert conn.execute(class_db.sa.select(class_db.answers)).all() == []
    assert "**Class poll:**" in texts(at.markdown)  # still asked, figure still hidden


def test_an_answer_the_database_cannot_store_gets_a_message_not_a_traceback(klass, monkeypatch):
    store, code, _, (ada, _) = klass
    page, query = POLL_STEPS[0]
    at = open_as(ada, page, query)

    def unreachable(*args, **kwargs):
        raise OSError("the database server went away")

    monkeypatch.setattr(type(store), "answer", unreachable)  # the callback runs outside the page's handlers
    answer_on_page(at)
    assert "could not be stored just now" in texts(at.error)
    assert "**Class poll:**" in texts(at.markdown)  # still asked: the student can send again


def test_the_lecturer_sees_the_count_reveals_and_students_see_the_split(klass):
    store, code, lecturer, (ada, alan) = klass
    page, query = POLL_STEPS[0]
    ada_at = open_as(ada, page, query)
    alan_at = open_as(alan, page, query)
    right_choice = "journey"  # the book's example: "journey" attends most to itself
    wrong_choice = next(o for o in next(r for r in alan_at.radio if r.label == "Your answer").options
                        if o != right_choice)
    answer_on_page(ada_at, ada_at.radio[0].options.index(right_choice))
    answer_on_page(alan_at, alan_at.radio[0].options.index(wrong_choice))

    lect = open_as(lecturer, page, query)
    assert "**2 of 2** students answered." in texts(lect.markdown)
    counts = dict(zip(poll_frame(lect)["answer"], poll_frame(lect)["count"]))
    assert counts[right_choice] == 1 and counts[wrong_choice] == 1
    assert not any("(right)" in a for a in counts)  # nothing given away before the reveal
    before = len(chart_titles(lect))
    button(lect, "Reveal to everyone").click().run()
    no_exception(lect)
    assert store.poll(code, only_question(store, code)).revealed
    assert len(chart_titles(lect)) > before  # the lecturer's figure appears with the reveal
    assert f"{right_choice} (right)" in list(poll_frame(lect)["answer"])

    ada_at.run()
    alan_at.run()
    assert "right!" in texts(ada_at.success)
    assert "not quite" in texts(alan_at.warning)
    for student in (ada_at, alan_at):
        assert "1 of 2 answers were right." in texts(student.caption)
        assert sorted(poll_frame(student)["count"]) == [0, 0, 0, 0, 1, 1]


def test_a_student_who_leaves_is_no_longer_counted_by_the_lecturer(klass):
    """Before: "Leave this class" kept the seat in the database, so the lecturer still read
    "Students joined: 2" and "2 of 2 students answered" after Alan had gone."""
    store, code, lecturer, (ada, alan) = klass
    page, query = POLL_STEPS[0]
    answer_on_page(open_as(ada, page, query))
    answer_on_page(open_as(alan, page, query))
    assert "**2 of 2** students answered." in texts(open_as(lecturer, page, query).markdown)

    alan_at = open_as(alan, "pages/11_class.py")
    button(alan_at, "Leave this class").click().run()
    no_exception(alan_at)
    assert MEMBER_SEAT not in alan_at.session_state

    lect = open_as(lecturer, page, query)
    assert "**1 of 1** students answered." in texts(lect.markdown)
    assert sum(poll_frame(lect)["count"]) == 1
    at_class = open_as(lecturer, "pages/11_class.py")
    assert next(m.value for m in at_class.metric if m.label == "Students joined") == "1"
    assert list(at_class.dataframe[0].value["nickname"]) == ["Ada"]


def test_in_a_class_the_predict_switch_reads_on_and_cannot_be_turned_off(klass):
    """In a class every question is a class poll whatever the sidebar switch says: it read "off"
    beside the class polls on the page. Alone again, it is the student's own switch (off)."""
    store, code, lecturer, (ada, _) = klass
    page, query = POLL_STEPS[0]
    for seat in (ada, lecturer):
        at = open_as(seat, page, query)
        [switch] = [t for t in at.sidebar.toggle if t.label == "Predict, then reveal"]
        assert switch.value is True and switch.proto.disabled
    alone = open_as(None, page, query)
    [switch] = [t for t in alone.sidebar.toggle if t.label == "Predict, then reveal"]
    assert switch.value is False and not switch.proto.disabled


def test_an_unanswered_poll_shows_the_figure_after_the_reveal(klass):
    store, code, lecturer, (ada, alan) = klass
    page, query = POLL_STEPS[3]
    ada_at = open_as(ada, page, query)
    answer_on_page(ada_at)
    alan_at = open_as(alan, page, query)
    hidden = chart_titles(alan_at)
    store.reveal(code, lecturer.token, only_question(store, code))
    alan_at.run()
    no_exception(alan_at)
    assert "The lecturer revealed the answer" in texts(alan_at.info)
    assert len(chart_titles(alan_at)) > len(hidden)


def test_too_many_answers_get_a_message_and_the_student_stays(klass, monkeypatch):
    monkeypatch.setattr(class_db, "ANSWERS_PER_MINUTE", 1)  # the page's store is made after this
    store, code, _, (ada, _) = klass
    first = open_as(ada, *POLL_STEPS[0])
    answer_on_page(first)
    second = open_as(ada, *POLL_STEPS[1])
    answer_on_page(second)
    assert "Too many answers" in texts(second.error)
    assert MEMBER_SEAT in second.session_state and "**Class poll:**" in texts(second.markdown)


def test_a_deleted_class_leaves_the_student_working_alone(klass):
    """Whichever notices first (the follow panel's tick or the page's class poll; which runs first
    depends on how the page was reached), the student is told, alone again, and the poll is gone."""
    store, code, lecturer, (ada, _) = klass
    page, query = POLL_STEPS[0]
    at = open_as(ada, page, query)
    store.delete_class(code, lecturer.token)
    at.run()
    no_exception(at)
    assert f"You are no longer in a class: There is no class with the code {code}" in texts(at.warning)
    assert MEMBER_SEAT not in at.session_state
    at.run()
    assert "Class poll" not in texts(at.markdown)


def test_the_follow_tick_finds_the_class_gone_and_says_so(klass):
    """The follow panel's tick (on every page of a class member) notices first: it takes the student
    out of the class and draws the page again, whose sidebar says why in the poll's words."""
    store, code, lecturer, (ada, _) = klass
    at = open_as(ada, None)
    assert f"Class {code}" in texts(at.sidebar.markdown)
    store.delete_class(code, lecturer.token)
    # the page's store is another object than this test's: its last read of the class's pulse is
    # shared for PULSE_MAX_AGE_S (as a move made on another replica would be), so outwait it
    time.sleep(class_db.PULSE_MAX_AGE_S + 0.1)
    at.run()  # the student's next run: the follow tick finds the class gone
    no_exception(at)
    assert f"You are no longer in a class: There is no class with the code {code}" in texts(at.sidebar.warning)
    assert MEMBER_SEAT not in at.session_state
    assert class_follow.LEFT_KEY not in at.session_state  # said once
    # at the top of the page too: a phone keeps its sidebar closed, where nobody would see it
    assert f"You are no longer in a class: There is no class with the code {code}" in texts(at.main.warning)
    assert f"Class {code}" not in texts(at.sidebar.markdown)
    at.run()
    assert "You are no longer in a class" not in texts(at.warning)  # said once, then working alone


def test_without_a_class_the_page_asks_nobody(klass):
    page, query = POLL_STEPS[0]
    at = open_as(None, page, query)
    assert "Class poll" not in texts(at.markdown)
    assert not [r for r in at.radio if r.label in ("Your answer", "Your guess")]  # predict is off by default


# ------------------------------------------------------------------------- follow the lecturer
def page_runs_recorded(monkeypatch) -> list[bool]:
    """The `background` flag of every page run streamlit_app.py starts (core.budget.PAGE_RUNS)."""
    from core import budget

    calls, real = [], budget.PAGE_RUNS.running
    monkeypatch.setattr(budget.PAGE_RUNS, "running",
                        lambda background=False: calls.append(background) or real(background=background))
    return calls


def test_a_student_lands_on_the_lecturers_page_and_step(klass, monkeypatch):
    store, code, lecturer, (ada, _) = klass
    store.publish_state(code, lecturer.token, "causal_attention", None, {"causal_step": "order"})
    runs = page_runs_recorded(monkeypatch)
    at = open_as(ada, None)  # any page: the follow fragment moves the student
    no_exception(at)
    assert [t.value for t in at.title][:1] == ["Causal attention and dropout"]
    assert at.session_state["walkthrough"].causal_step == "order"
    assert at.session_state[class_follow.SEEN_KEY] == 1
    # the student's own first run, then the move's, which nobody clicked for: it waits behind clicks
    assert runs == [False, True] and class_follow.MOVE_KEY not in at.session_state


@pytest.mark.parametrize("where_before, tries, moves", [
    (("home", []), 1, True),  # still exactly where they were: the move was lost, go again
    (("home", [("step", "context")]), 1, False),  # they moved on by themselves: left alone
    (("home", []), class_follow.FOLLOW_TRIES, False),  # tried often enough: no endless loop
])
def test_a_lost_move_is_retried_but_a_student_who_moved_on_is_left_alone(klass, where_before, tries, moves):
    store, code, lecturer, (ada, _) = klass
    store.publish_state(code, lecturer.token, "causal_attention", None, {"causal_step": "order"})
    # the state after a go_to to version 1 whose switch was replaced by a click carrying the old place
    at = open_as(ada, None, state={class_follow.SEEN_KEY: 1,
                                   class_follow.TRIED_KEY: class_follow.Tried(1, where_before, tries)})
    no_exception(at)
    landed = [t.value for t in at.title][:1] == ["Causal attention and dropout"]
    assert landed is moves
    if moves:
        assert at.session_state["walkthrough"].causal_step == "order"
        assert at.session_state[class_follow.TRIED_KEY].tries == tries + 1


def test_a_student_who_reached_the_lecturer_and_then_went_back_by_themselves_is_left_alone(klass):
    """The lecturer moves; the student lands there; then the student goes back to exactly where they
    were before the move (Quick demo again after the lecturer's Lecture 7, say). That is their own
    click, not a lost move: they stay, where the panel used to send them back (and their next click,
    Start, was swallowed by the move)."""
    store, code, lecturer, (ada, _) = klass
    at = open_as(ada, None)  # home, the lecturer not started
    store.publish_state(code, lecturer.token, "causal_attention", None, {"causal_step": "order"})
    time.sleep(class_db.PULSE_MAX_AGE_S + 0.1)  # the app's store read the pulse before; it reads it again
    at.run()  # the panel's tick sees the move and switches page
    no_exception(at)
    assert [t.value for t in at.title][:1] == ["Causal attention and dropout"]
    at.run()  # a tick at the lecturer's place
    at.query_params.clear()  # as the sidebar's Home link does in a browser (AppTest keeps them)
    at.switch_page("pages/home.py").run()  # back where the move took them from
    no_exception(at)
    at.run()  # the follow panel's next tick
    no_exception(at)
    assert [t.value for t in at.title][:1] == ["Attention Lab"]
    assert at.session_state[class_follow.TRIED_KEY].tries == 1


def test_a_student_already_with_the_lecturer_is_not_sent_again(klass, monkeypatch):
    store, code, lecturer, (ada, _) = klass
    runs = page_runs_recorded(monkeypatch)
    store.publish_state(code, lecturer.token, "home", None, {})
    # a go_to was tried from the very place the lecturer is: nothing was lost, no rerun follows
    at = open_as(ada, None, state={class_follow.SEEN_KEY: 1,
                                   class_follow.TRIED_KEY: class_follow.Tried(1, ("home", []), 1)})
    no_exception(at)
    assert at.session_state[class_follow.TRIED_KEY].tries == 1
    assert "You are with the lecturer: Home." in texts(at.sidebar.caption)
    assert runs == [False]  # no move, no background run


def test_a_student_exploring_freely_stays_and_can_catch_up(klass):
    store, code, lecturer, (ada, _) = klass
    store.publish_state(code, lecturer.token, "multi_head", None, {"mh_step": "concat"})
    at = open_as(ada, None, state={class_follow.FOLLOW_KEY: False})
    assert [t.value for t in at.title][:1] != ["Multi-head attention"]
    assert "The lecturer is on Multi-head attention, step “concat”." in texts(at.sidebar.caption)
    button(at, "Catch up").click().run()  # the real button (every AppTest run draws the panel)
    no_exception(at)
    assert at.session_state["walkthrough"].mh_step == "concat"
    assert [t.value for t in at.title][:1] == ["Multi-head attention"]


def test_the_lecturer_publishes_the_page_and_its_settings(klass):
    store, code, lecturer, _ = klass
    open_as(lecturer, None, {"step": "context"})
    published = store.lecturer_state(code)
    assert published.version == 1 and published.page == "home" and published.settings == {"step": "context"}


# ---------------------------------------------------------------------------------- challenge
@pytest.fixture(scope="module")
def finished_book() -> runs.RunBook:
    torch.set_num_threads(1)
    book = runs.RunBook(owner="class-ui-test")
    run = book.create(train_settings.TrainSettings(**TINY))
    runs.start(run)
    while run.active:
        run.advance(5.0)
    return book


def test_a_challenge_from_opening_to_the_board(klass, finished_book):
    store, code, lecturer, (ada, _) = klass
    lect = open_as(lecturer, "pages/11_class.py")
    lect.text_input(key="class.max_params").input("20000")
    button(lect, "Open the challenge").click().run()
    no_exception(lect)
    current = store.current_challenge(code)
    assert current.is_open and current.max_params == 20_000

    alone = open_as(None, "pages/7_train_gpt.py", state={RUNBOOK_KEY: finished_book})
    assert not [b for b in alone.button if b.label.startswith("Submit this run")]  # not in a class
    student = open_as(ada, "pages/7_train_gpt.py", state={RUNBOOK_KEY: finished_book})
    button(student, "Submit this run to the class challenge").click().run()
    no_exception(student)
    assert "Submitted: validation loss" in texts(student.success)
    board = store.leaderboard(code, current.id)
    assert [e.nickname for e in board] == ["Ada"] and len(board[0].samples) == 5

    # a nickname that is Markdown: the board's cells are Markdown (st.table), so it is escaped
    _, grace = store.join(code, "*Grace* [x](y)")
    store.submit(code, grace, current.id, challenge.Evaluation(
        val_loss=9.0, n_params=1000, steps=10, seconds=1.5, settings={"n_layer": 1}, samples=["a"] * 5))
    lect.run()
    (table,) = [t.value for t in lect.table if "validation loss" in t.value.columns]
    assert list(table["nickname"]) == ["Ada", escape_markdown("*Grace* [x](y)")]
    assert list(table["validation loss"]) == [e.val_loss for e in store.leaderboard(code, current.id)]
    link = re.fullmatch(r"\[open\]\((.+)\)", table["settings"][0])  # a Markdown link
    assert link and link.group(1).split("?")[0].endswith("/train_gpt"), table["settings"][0]
    assert len(table["five sampled names"][0].split(", ")) == 5
    store.hide_submission(code, lecturer.token, store.leaderboard(code, current.id)[1].id)
    lect.run()
    assert any(b.label == "Download CSV" for b in lect.get("download_button"))
    [box] = [b for b in lect.selectbox if b.label == "Entry"]
    picked = box.value
    assert box.format_func(picked) == f"{board[0].val_loss:.4f} · Ada"
    button(lect, "Hide this entry").click().run()
    no_exception(lect)
    assert store.leaderboard(code, current.id) == []
    # the box is made anew with its new labels (Streamlit 1.67 kept the old text), on Ada's entry
    [after] = [b for b in lect.selectbox if b.label == "Entry"]
    assert after.key != box.key and after.value == picked
    assert after.format_func(after.value).endswith("· Ada (hidden)") and button(lect, "Show again")
    button(lect, "Close the challenge").click().run()
    assert not store.current_challenge(code).is_open


# ------------------------------------------------------------- the names-GPT pages' polls
def test_the_train_page_asks_the_untrained_loss_in_a_class_only(klass):
    store, code, lecturer, (ada, _) = klass
    alone = open_as(None, "pages/7_train_gpt.py")
    assert "Class poll" not in texts(alone.markdown)
    assert not button(alone, "Start").disabled
    student = open_as(ada, "pages/7_train_gpt.py")
    assert "what loss does the untrained model start at?" in texts(student.markdown)
    assert button(student, "Start").disabled  # a new run (and its loss curve) waits for the answer
    radio = next(r for r in student.radio if r.label == "Your answer")
    answer_on_page(student, radio.options.index("about 3.3"))
    assert not button(student, "Start").disabled
    store.reveal(code, lecturer.token, "train.untrained_loss.v1")
    student.run()
    assert "right!" in texts(student.success)


def test_the_sample_page_asks_which_name_is_novel(klass, finished_book):
    from core.classroom.questions import novel_name

    store, code, lecturer, (ada, alan) = klass
    question = novel_name()
    student = open_as(ada, "pages/8_sample_names.py", state={RUNBOOK_KEY: finished_book})
    assert "which one is new?" in texts(student.markdown)
    assert not [m for m in student.metric if m.label == "New"]  # the labels wait for the answer
    invented = next(iter(question.right))
    answer_on_page(student, list(question.options).index(invented))
    assert [m for m in student.metric if m.label == "New"]
    lect = open_as(lecturer, "pages/8_sample_names.py", state={RUNBOOK_KEY: finished_book})
    assert "**1 of 2** students answered." in texts(lect.markdown)
    assert dict(zip(poll_frame(lect)["answer"], poll_frame(lect)["count"]))[invented] == 1


def test_sqlalchemy_is_loaded_only_when_a_class_needs_the_store():
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys\nimport ui.walkthrough, ui.training, ui.class_follow, ui.class_polls, ui.class_page, "
            "ui.class_challenge\nassert 'sqlalchemy' not in sys.modules\n"
            "from core.classroom import store\nassert 'sqlalchemy' in sys.modules\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_a_challenge_time_limit_is_shown_as_typed(klass):
    store, code, lecturer, _ = klass
    lect = open_as(lecturer, "pages/11_class.py")
    lect.text_input(key="class.max_seconds").input("1.5")
    button(lect, "Open the challenge").click().run()
    no_exception(lect)
    assert store.current_challenge(code).max_seconds == 1.5
    assert "**1.5 s** of training" in texts(lect.markdown)  # before: rounded to "2 s"


def test_a_student_who_reloads_is_back_in_the_class_on_the_same_seat(klass, monkeypatch):
    """ui.desk: a reload used to drop the student out of the class (joining again needed another
    nickname, and the class counted two seats). The seat comes back with the runs; a lecturer's
    seat does not (a lectern PC is shared: the lecturer types the key again)."""
    from server.desks import Desks
    from ui import desk

    store, code, lecturer, (ada, _) = klass
    board = Desks()
    monkeypatch.setattr(desk, "desks", lambda: board)
    monkeypatch.setattr(desk, "session_is_connected", lambda session_id: False)
    members_before = len(store.members(code))
    board.file("T" * 22, "old-session", {MEMBER_SEAT: ada, LECTURER_SEAT: lecturer})
    at = open_as(None, None, state={desk.TOKEN_KEY: "T" * 22})
    assert at.session_state[MEMBER_SEAT] == ada
    assert LECTURER_SEAT not in at.session_state
    notice = " ".join(s.value for s in at.success)
    assert f"your seat in class {code} (as “Ada”)" in notice, notice
    page, query = POLL_STEPS[0]
    at.switch_page(str(ROOT / page)).run()
    no_exception(at)
    assert "**Class poll:**" in texts(at.markdown)  # still in the class: its polls are asked
    assert len(store.members(code)) == members_before  # no second seat


def test_a_lecturer_without_their_seat_is_told_on_every_page_while_the_class_runs(klass):
    """A lecturer whose browser lost its seat (a reload, or a link typed in the address bar) kept
    teaching outside the class after a one-time notice: students stopped following, polls had no
    Reveal. The sidebar now says so on every page, with a link to take the class back, until the
    class ends."""
    from ui.classroom import LED_CLASS

    store, code, lecturer, _ = klass
    at = open_as(None, "pages/4_multi_head.py", state={LED_CLASS: code})
    assert f"You are not running class {code} now" in texts(at.sidebar.warning)
    assert any(link.label == "Take the class back" for link in at.sidebar.get("page_link"))
    seated = open_as(lecturer, "pages/4_multi_head.py", state={LED_CLASS: code})
    assert "You are not running class" not in texts(seated.sidebar.warning)
    store.delete_class(code, lecturer.token)
    at.run()
    no_exception(at)
    assert "You are not running class" not in texts(at.sidebar.warning)
    assert LED_CLASS not in at.session_state


def test_a_lecturer_who_reloads_types_only_the_key_to_take_the_class_back(klass, monkeypatch):
    """ui.desk keeps the join code of the class a browser ran (not its token): after a reload the
    notice names the class, the start form has its code filled in, and the key alone takes it back.
    A class that has ended is not offered."""
    from server.desks import Desks
    from ui import desk
    from ui.classroom import LED_CLASS

    store = klass[0]
    board = Desks()
    monkeypatch.setattr(desk, "desks", lambda: board)
    monkeypatch.setattr(desk, "session_is_connected", lambda session_id: False)
    first = open_as(None, "pages/11_class.py", state={desk.TOKEN_KEY: "L" * 22})
    first.text_input(key="class.key").input(KEY)
    button(first, "Start or reopen").click().run()
    no_exception(first)
    code = first.session_state[LECTURER_SEAT].code
    assert first.session_state[LED_CLASS] == code
    # what the desk holds: the code, never the lecturer's token (AppTest sessions share one id: the
    # filing is handed to an "old" session, as a reload's departed session would hold it)
    filed = board.take_left_behind("L" * 22, "nobody", lambda session_id: False)
    assert filed.things == {LED_CLASS: code}
    board.file("L" * 22, "old-session", filed.things)

    again = open_as(None, None, state={desk.TOKEN_KEY: "L" * 22})  # the reload: a new session
    assert LECTURER_SEAT not in again.session_state  # the seat itself is not kept
    notice = " ".join(s.value for s in again.success)
    assert f"You were running class {code}" in notice and "type the lecturer key" in notice, notice
    again.switch_page(str(ROOT / "pages/11_class.py")).run()
    no_exception(again)
    assert again.text_input(key="class.reopen_code").value == code
    assert f"This browser was running class {code} before the page was reloaded" in texts(again.info)
    assert again.tabs[1].label == "Lecturer" and again.tabs[1].proto.label == "Lecturer"
    assert again.get("tab_container")[0].proto.tab_container.default_tab_index == 1  # opens there
    again.text_input(key="class.key").input(KEY)
    button(again, "Start or reopen").click().run()
    no_exception(again)
    seat = again.session_state[LECTURER_SEAT]
    assert seat.code == code and store.is_lecturer(code, seat.token)  # the same class, a new token

    store.delete_class(code, seat.token)  # ended: a later reload offers nothing
    board.file("L" * 22, "old-session", {LED_CLASS: code})
    later = open_as(None, "pages/11_class.py", state={desk.TOKEN_KEY: "L" * 22})
    assert later.text_input(key="class.reopen_code").value == ""
    assert "This browser was running class" not in texts(later.info)
    assert LED_CLASS not in later.session_state
    assert "You were running class" not in " ".join(s.value for s in later.success)


def test_after_a_server_restart_the_browser_takes_its_seat_back_from_the_database(klass, monkeypatch):
    """A restart (or redeploy) loses every session and every desk in memory: a student's browser
    came back with its desk cookie and found itself out of the class, its nickname taken by its
    old self, and the lecturer counting a seat nobody held. The join now records the browser's
    desk (as a hash); a new session of that browser, on a server that knows nothing of it, takes
    the seat back with its answers, and is told so. A live tab of the same browser keeps its seat."""
    from server.desks import Desks
    from ui import desk

    store, code, lecturer, _ = klass
    board = Desks()  # the restarted server's: empty
    monkeypatch.setattr(desk, "desks", lambda: board)
    monkeypatch.setattr(desk, "session_is_connected", lambda session_id: False)
    browser = "G" * 22
    joining = open_as(None, "pages/11_class.py", query={"class": code},
                      state={desk.TOKEN_KEY: browser, desk.FROM_COOKIE_KEY: True})
    joining.text_input(key="class.nickname").input("Grace")
    button(joining, "Join").click().run()
    no_exception(joining)
    grace = joining.session_state[MEMBER_SEAT]
    store.answer(code, grace.token, "p3.mask", "row")
    members_before = len(store.members(code))
    board.clear()  # the restart
    at = open_as(None, None, state={desk.TOKEN_KEY: browser, desk.FROM_COOKIE_KEY: True})
    seat = at.session_state[MEMBER_SEAT]
    assert (seat.code, seat.nickname) == (code, "Grace") and seat.token != grace.token
    assert store.my_answer(code, seat.token, "p3.mask") == "row"
    assert f"your seat in class {code} (as “Grace”)" in " ".join(s.value for s in at.success)
    assert f"Class {code}" in texts(at.sidebar.markdown)
    assert len(store.members(code)) == members_before
    # a second tab of the same browser, while the first is open (its desk is known): nothing taken
    board.file(browser, "the-open-tab", {MEMBER_SEAT: seat})
    monkeypatch.setattr(desk, "session_is_connected", lambda session_id: True)
    other = open_as(None, None, state={desk.TOKEN_KEY: browser, desk.FROM_COOKIE_KEY: True})
    assert MEMBER_SEAT not in other.session_state
    assert store.my_answer(code, seat.token, "p3.mask") == "row"  # the open tab's token still works
    # a browser whose token did not come with its cookie (a first visit) takes nothing
    board.clear()
    fresh = open_as(None, None, state={desk.TOKEN_KEY: browser})
    assert MEMBER_SEAT not in fresh.session_state
