"""Class polls: a "predict, then reveal" question asked of the whole class.

`class_poll(...)` takes the same question as `ui.walkthrough.predict_then_reveal` and returns None
outside a class (the page asks the student alone, as without class mode). In a class:
* a student answers once (stored by core.classroom.store; answering again replaces); their figure
  stays hidden until they answer or the lecturer reveals; after the reveal they see whether they
  were right and the class's split. The reveal arrives by itself: the student's follow tick
  (ui.class_follow, once a second on every page of a class member) reruns the page when a question
  the page is waiting on was revealed (one tick per student, not one per student and poll);
* the lecturer sees how many answered and a live bar chart of the choices (`core.viz.classroom`),
  refreshed every POLL_REFRESH_S, and a "Reveal to everyone" button; their figure stays hidden
  until they reveal, so the projector gives nothing away.
Answers are stored as the choice's label (what the chart shows).
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Sequence

import streamlit as st

from core.classroom.security import ClassroomError, escape_markdown
from core.viz.classroom import poll_chart
from ui import classroom
from ui.charts import draw_chart, kept_figure
from ui.state import lecture_mode

log = logging.getLogger(__name__)

POLL_REFRESH_S = 1.0  # the lecturer's chart: at most this late
AWAITING_KEY = "class.awaiting_reveal"  # the questions this student's page waits to see revealed
SHOWN_KEY = "class.shown_reveal"  # the revealed questions this student's page shows the answer of


def active_seat():
    """("lecturer", seat) or ("member", seat) for a session in a class, else None (a student alone:
    only a session-state lookup, so pages without a class pay nothing)."""
    lecturer, member = classroom.lecturer_seat(), classroom.member_seat()
    if (lecturer is None and member is None) or classroom.lecturer_key() is None:
        return None
    return ("lecturer", lecturer) if lecturer is not None else ("member", member)


def class_poll(qid: str, prompt: str, options: Sequence, format_func: Callable[[Any], str],
               is_right: Callable[[Any], bool], answer: str) -> bool | None:
    """The class version of predict-then-reveal; True when the figure may be shown, None outside a class."""
    found = active_seat()
    if found is None:
        return None
    role, seat = found
    store = classroom.class_store()
    labels = [format_func(option) for option in options]
    right = [bool(is_right(option)) for option in options]
    try:
        if role == "lecturer":
            return _lecturer_view(store, seat, qid, prompt, labels, right, answer)
        return _student_view(store, seat, qid, prompt, labels, right, answer)
    except ClassroomError as exc:
        if _still_seated(store, role, seat):
            st.warning(str(exc), icon=":material/groups:")
            return True
        classroom.leave(type(seat))  # the class ended or was deleted: back to working alone
        st.warning(left_words(exc), icon=":material/groups:")
        return None


def left_words(exc: Exception) -> str:
    """What a student is told when their class is gone (here and by ui.class_follow's tick)."""
    return f"You are no longer in a class: {exc}"


def _still_seated(store, role: str, seat) -> bool:
    if role == "lecturer":
        return store.is_lecturer(seat.code, seat.token)
    return store.member(seat.code, seat.token) is not None


# ------------------------------------------------------------------------------------- student
def _student_view(store, seat, qid: str, prompt: str, labels: list[str], right: list[bool],
                  answer: str) -> bool:
    mine = store.my_answer(seat.code, seat.token, qid)
    poll = store.poll(seat.code, qid)
    with st.container(border=True, key=f"class_poll_{qid.replace('.', '_')}"):
        if poll.revealed:
            _result(mine, labels, right, answer)
            _split(poll.counts, labels, right, title="The class's answers")
            watch_hide(qid)
            return True
        if mine is None:
            st.markdown(f"**Class poll:** {prompt}")
            # a form: picking a choice stays in the browser, only sending runs the page. In a class
            # of 60 every poll otherwise cost two page runs per student within seconds. The answer
            # is stored by the button's callback, before the page runs, so that one run shows it.
            with st.form(key=f"class.form.{qid}", border=False, enter_to_submit=False):
                st.radio("Your answer", labels, index=None, key=f"class.poll.{qid}", horizontal=len(labels) <= 8)
                st.form_submit_button("Send my answer", key=f"class.send.{qid}", type="primary",
                                      on_click=_send, args=(store, seat.code, seat.token, qid))
            notice = st.session_state.pop(_notice_key(qid), None)
            if notice is not None:
                (st.warning if notice[0] == "warning" else st.error)(notice[1], icon=notice[2])
            st.caption("The figure stays hidden until you answer or the lecturer reveals the answer.")
            await_reveal(qid)
            return False
        st.markdown("**Class poll:** your answer")
        st.text(mine)  # labels come from the page, but an answer is always shown as text
        st.caption("The lecturer will reveal the class's answers; then you see whether you were right.")
        await_reveal(qid)
        return True


def _notice_key(qid: str) -> str:
    return f"class.poll_notice.{qid}"


def _send(store, code: str, token: str, qid: str) -> None:
    """"Send my answer": store the picked choice before the page runs (so the run that follows
    shows the answer and the figure), or leave a message for the poll to show."""
    choice = st.session_state.get(f"class.poll.{qid}")
    if choice is None:
        st.session_state[_notice_key(qid)] = ("warning", "Pick an answer first, then send it.", ":material/touch_app:")
        return
    try:
        store.answer(code, token, qid, choice)
    except ClassroomError as exc:  # e.g. too many answers in a minute: say so, stay in the poll
        st.session_state[_notice_key(qid)] = ("error", str(exc), ":material/block:")
    except Exception:  # noqa: BLE001 - a callback runs outside the page's error handling: never a traceback
        log.exception("storing a class poll answer failed")
        st.session_state[_notice_key(qid)] = (
            "error", "Your answer could not be stored just now (the class's database did not answer). "
                     "Send it again in a moment.", ":material/block:")


def _result(mine: str | None, labels: list[str], right: list[bool], answer: str) -> None:
    right_labels = [label for label, ok in zip(labels, right) if ok]
    if mine is None:
        st.info(f"The lecturer revealed the answer. {answer}", icon=":material/visibility:")
    elif mine in right_labels:
        st.success(f"You answered **{escape_markdown(mine)}**: right! {answer}", icon=":material/celebration:")
    else:
        st.warning(f"You answered **{escape_markdown(mine)}**: not quite. {answer}", icon=":material/lightbulb:")


def await_reveal(qid: str) -> None:
    """Have the follow tick rerun this page once the lecturer reveals `qid` (the figure and the
    split appear). The entry point empties the list before each page run."""
    st.session_state.setdefault(AWAITING_KEY, set()).add(qid)


def watch_hide(qid: str) -> None:
    """Have the follow tick rerun this page if the lecturer hides the answer of `qid` again ("Hide
    the answer again": the students' pages kept showing it until they happened to run again)."""
    st.session_state.setdefault(SHOWN_KEY, set()).add(qid)


# ------------------------------------------------------------------------------------ lecturer
def _lecturer_view(store, seat, qid: str, prompt: str, labels: list[str], right: list[bool],
                   answer: str) -> bool:
    revealed = store.poll(seat.code, qid).revealed
    with st.container(border=True, key=f"class_poll_{qid.replace('.', '_')}"):
        st.markdown(f"**Class poll:** {prompt}")
        _live_counts(seat.code, seat.token, qid, tuple(labels), tuple(right), answer, revealed)
    return revealed


@st.fragment(run_every=POLL_REFRESH_S)
def _live_counts(code: str, token: str, qid: str, labels: tuple, right: tuple, answer: str,
                 was_revealed: bool) -> None:
    """How many answered and the chart of their choices; the reveal button."""
    store = classroom.class_store()
    try:
        poll = store.poll(code, qid)
        n_members = len(store.members(code))
    except ClassroomError as exc:
        st.warning(str(exc))
        return
    if poll.revealed != was_revealed:  # revealed or hidden from another tab: redraw the page
        st.rerun(scope="app")
    st.markdown(f"**{poll.total} of {n_members}** students answered.")
    if poll.revealed:
        # folded once revealed, so the figure itself comes up on the projector's first screen
        n_right = sum(n for choice, n in poll.counts.items() if choice in
                      {label for label, ok in zip(labels, right) if ok})
        with st.expander(f"The class's answers: {n_right} of {poll.total} right", icon=":material/bar_chart:"):
            _split(poll.counts, list(labels), list(right), title="The class's answers")
            st.success(answer, icon=":material/visibility:")
        if st.button("Hide the answer again", key=f"class.hide.{qid}"):
            store.hide_reveal(code, token, qid)
            st.rerun(scope="app")
        return
    _split(poll.counts, list(labels), None, title="The class's answers")
    if st.button("Reveal to everyone", key=f"class.reveal.{qid}", type="primary",
                 icon=":material/visibility:"):
        store.reveal(code, token, qid)
        st.rerun(scope="app")


# -------------------------------------------------------------------------------------- shared
def _split(counts: dict[str, int], labels: list[str], right: list[bool] | None, title: str) -> None:
    """The bar chart of the class's choices (every choice, also those nobody picked)."""
    values = [int(counts.get(label, 0)) for label in labels]
    lecture = lecture_mode()
    # narrow enough to fit the poll's panel (half a projector's width) without being scaled down
    width = 200 if lecture else 280

    def build():
        return poll_chart(labels, values, right=right, title=title, lecture=lecture, width=width)

    # after a reveal the whole class draws the same split: kept once per process (ui.charts)
    figure = kept_figure(build, ("poll", labels, values, right, title, width))
    draw_chart(figure.chart, figure.spec, lecture=lecture,
               description=f"{title}: " + ", ".join(f"{label} {n}" for label, n in zip(labels, values)))
    if right is not None:
        n_right = sum(v for v, ok in zip(values, right) if ok)
        st.caption(f"{n_right} of {sum(values)} answers were right.")


def ask(question) -> bool:
    """A class-only poll (a core.classroom.questions.Question): True when the figure may be shown;
    always True outside a class, where the page is as without class mode."""
    shown = class_poll(question.qid, question.prompt, list(question.options), str,
                       lambda option: option in question.right, question.answer)
    return True if shown is None else shown
