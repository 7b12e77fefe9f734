"""The Class page's sections: start or reopen a class (lecturer key), the projector card (join code,
QR code and link, large), the members, deleting the class; joining with a code and a nickname.

Nicknames are always drawn with st.text or in a dataframe cell, never as Markdown or HTML.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import pandas as pd
import streamlit as st

from core.classroom.qr import qr_png
from core.classroom.security import (NICKNAME_MAX_CHARS, ClassroomError, check_lecturer_key, code_problem,
                                     normalize_code, reopen_code_problem)
from ui import class_challenge, classroom, desk
from ui.classroom import LecturerSeat, MemberSeat
from ui.formatting import sentence_inside
from ui.layout import friendly_errors

HOW_TO_TURN_ON = (
    "Class mode is off on this server. To turn it on, give the server a lecturer key: set the "
    "environment variable `ATTENTION_LAB_LECTURER_KEY` (Docker: `-e ATTENTION_LAB_LECTURER_KEY=...`), "
    "or on Streamlit Community Cloud add `ATTENTION_LAB_LECTURER_KEY = \"...\"` to the app's secrets. "
    "Then restart the app and start a class here with that key. See docs/CLASS.md.")

# The join code is read from the back row: as large as its column allows, in a monospace face (a
# style-only st.html block is applied to the page without taking room). Its size follows the column
# (container units: the keyed container is the container), so the whole code fits beside the QR code
# from a 1024 px laptop with the sidebar open to a 1920 px projector. The selectors outrank lecture
# mode's metric rules (ui.layout.LECTURE_CSS: 2.6rem, 2rem in a column, both !important), which
# would make the projected code smaller in lecture mode than without it; other metrics keep those.
CODE_KEY = "class_join_code"  # the keyed container: .st-key-class_join_code
CODE_LETTER_SPACING_EM = 0.12
CODE_CHAR_EM = 0.6  # a monospace face's advance, in em
CODE_FILLS = 85  # percent of the column the code's text may take (the rest: slack for wider faces)
CODE_CSS = """<style>
.st-key-class_join_code { container-type: inline-size; }
[data-testid="stMain"] .st-key-class_join_code [data-testid="stMetricValue"],
[data-testid="stMain"] .st-key-class_join_code [data-testid="stMetricValue"] [data-testid="stMarkdownContainer"] p {
  font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono", monospace !important;
  font-size: clamp(2rem, @FONT@cqi, 7rem) !important; font-weight: 700; letter-spacing: @SPACING@em;
  line-height: 1.15 !important;
}
</style>"""
DELETED_KEY = "class.deleted_notice"  # session key: the code of the class the lecturer just deleted


@contextmanager
def _refused(doing: str) -> Iterator[None]:
    """A refused class action in plain words ("Could not join the class: ..."); anything else is
    left to ui.layout.friendly_errors (logged, never a traceback)."""
    with friendly_errors(doing):
        try:
            yield
        except ValueError as exc:  # ClassroomError: a message written for the person who clicked
            st.error(f"Could not {doing}: {sentence_inside(str(exc))}", icon=":material/block:")


def join_section(store) -> None:
    """A student's view: the join form, or their seat in the class."""
    seat = classroom.member_seat()
    if seat is not None and store.member(seat.code, seat.token) is not None:
        st.success(f"You are in class **{seat.code}**.", icon=":material/groups:")
        st.caption("Your nickname")
        st.text(seat.nickname)  # plain text, never Markdown or HTML
        st.caption("In the sidebar, “Follow the lecturer” takes you where the lecturer is; switch it off "
                   "to explore freely.")
        if st.button("Leave this class", key="class.leave",
                     help="Your nickname, your poll answers and your challenge entries leave the class with you."):
            _leave(store, seat)
        class_challenge.board(store, seat.code)
        return
    _deleted_notice()
    if seat is not None:  # the class ended or was deleted
        classroom.leave(MemberSeat)
        st.warning("Your class has ended.")
    linked = st.query_params.get(classroom.JOIN_PARAM)
    problem = code_problem(linked) if linked is not None else None
    # a join link that was cut or mistyped, while the box holds no usable code (once a code that can
    # be one is typed and sent, the link's problem is no longer the student's)
    if problem and code_problem(st.session_state.get("class.join_code")) is not None:
        st.warning(f"The join link's code could not be used. {problem}", icon=":material/link_off:")
    with st.form("class.join_form"):
        # no max_chars on these boxes: Streamlit's limit drops a longer paste whole without a word;
        # here Join says what is wrong (core.classroom's checks: "that nickname has 38 characters;
        # use at most 32.") and the boxes keep what was typed, to be shortened
        code = st.text_input("Join code", value=normalize_code(linked), key="class.join_code")
        # the limit in the label (a help icon would be a second element named "Nickname")
        nickname = st.text_input(f"Nickname, up to {NICKNAME_MAX_CHARS} characters (shown to the class; "
                                 "nothing else about you is stored)", key="class.nickname")
        joined = st.form_submit_button("Join", type="primary")
    if joined:
        with _refused("join the class"):
            member, token = store.join(code, nickname, desk=desk.token())  # a reload takes it back
            classroom.take_seat(MemberSeat(normalize_code(code), token, member.nickname))
            _forget_join_link()
            st.rerun()


def _leave(store, seat: MemberSeat) -> None:
    """"Leave this class": the seat goes from the database (nickname, answers, entries: the
    lecturer's counts no longer hold it), then from this session."""
    with _refused("leave the class"):
        try:
            store.leave(seat.code, seat.token)
        except ClassroomError:  # no seat left to take away (the class ended meanwhile): nothing kept
            pass
        classroom.leave(MemberSeat)
        _forget_join_link()
        st.rerun()


def _forget_join_link() -> None:
    """The join link has done its work: out of the address bar, so that neither its code nor a
    warning about it comes back on the join form after leaving."""
    if classroom.JOIN_PARAM in st.query_params:
        del st.query_params[classroom.JOIN_PARAM]


def _deleted_notice() -> None:
    """Once, after the lecturer deleted their class: say so (the page is back at its start)."""
    code = st.session_state.pop(DELETED_KEY, None)
    if code:
        st.success(f"Class {code} deleted: its members, poll answers and challenge entries are gone, and "
                   "its join code no longer works. Start a new class in the Lecturer tab.",
                   icon=":material/delete:")


def lecturer_section(store, key: str) -> None:
    """The lecturer's view: the start form, or the running class."""
    seat = classroom.lecturer_seat()
    if seat is not None and store.is_lecturer(seat.code, seat.token):
        class_view(store, seat)
        return
    _deleted_notice()
    if seat is not None:
        classroom.leave(LecturerSeat)
        if store.find_class(seat.code) is not None:  # still running: its key and code were used elsewhere
            st.warning(f"Class {seat.code} was reopened in another browser window, which now runs it. To take "
                       "it back here, enter the lecturer key and its join code below.", icon=":material/swap_horiz:")
        else:
            st.warning("Your class has ended.")
    _offer_led_class(store, reloaded=seat is None)
    with st.form("class.start_form"):
        given = st.text_input("Lecturer key", type="password", key="class.key")
        reopen = st.text_input("Join code of a class you started (empty: start a new class)",
                               key="class.reopen_code")  # no max_chars: reopen_code_problem says why
        started = st.form_submit_button("Start or reopen", type="primary")
    if started:
        if not check_lecturer_key(given, key):
            st.error("That is not the lecturer key.")
            return
        problem = reopen_code_problem(reopen)
        if problem:  # what was typed cannot be a code: say what is wrong with it, not "empty"
            st.error(f"Could not reopen the class: {problem}", icon=":material/block:")
            return
        wanted = normalize_code(reopen)  # "" here: the box was empty (or only spaces and dashes)
        with _refused("reopen the class" if wanted else "start the class"):
            store.purge_expired()
            if wanted:
                code = wanted
                token = store.replace_lecturer_token(code)
            else:
                info, token = store.create_class()
                code = info.code
            classroom.take_seat(LecturerSeat(code, token))
            st.rerun()


def _offer_led_class(store, reloaded: bool) -> None:
    """The class this browser ran before it lost its seat (a reload: ui.desk kept the code, not the
    token), filled into the start form while the class still runs, so the lecturer only types the
    key; a class that has ended is forgotten."""
    led = st.session_state.get(classroom.LED_CLASS)
    if not led:
        return
    if store.find_class(led) is None:
        st.session_state.pop(classroom.LED_CLASS, None)
        return
    st.session_state.setdefault("class.reopen_code", led)  # before the box is made; a typed code wins
    if reloaded:
        st.info(f"This browser was running class {led} before the page was reloaded; its students, polls and "
                "entries are all still there. Type the lecturer key below to take it back (its join code is "
                "filled in). The key is asked again on purpose: on a lectern PC shared with students, the next "
                "person to open the app must not hold your class.", icon=":material/history:")


def projector_card(code: str, link: str) -> None:
    """The join code and link, large, with the QR code of the link; the code and link always as text too."""
    qr_col, text_col = st.columns([2, 3], gap="medium", vertical_alignment="center")
    with qr_col:
        # its own size (370 px), never wider than its column: at 1024 px a fixed 300 px ran over the code
        st.image(qr_png(link), width="content", caption="Scan to join",
                 alt=f"QR code of the join link {link} (join code {code})")
    with text_col:
        st.html(code_css(code))
        with st.container(key=CODE_KEY):
            st.metric("Join code", code)
        st.caption("Join link (or open the Class page and type the code)")
        st.code(link, language=None, wrap_lines=True)


def code_css(code: str) -> str:
    """CODE_CSS for this code: the font as large as lets its characters fill CODE_FILLS % of the column."""
    width_em = max(len(code), 1) * (CODE_CHAR_EM + CODE_LETTER_SPACING_EM)
    return (CODE_CSS.replace("@FONT@", f"{CODE_FILLS / width_em:.1f}")
            .replace("@SPACING@", f"{CODE_LETTER_SPACING_EM}"))


def class_view(store, seat: LecturerSeat) -> None:
    info = store.find_class(seat.code)
    projector_card(seat.code, classroom.join_link(seat.code))
    _members(store, seat.code)
    st.caption("Open any lesson: your page and step are published, and students who follow land there. "
               "Class polls appear on the “Predict, then reveal” questions of each page.")
    class_challenge.board(store, seat.code, seat=seat)
    class_challenge.lecturer_controls(store, seat)
    with st.expander("Delete this class", icon=":material/delete:"):
        if info is not None:
            days = (info.expires_at - info.created_at) / 86400
            st.caption(f"This class and everything in it are deleted {days:.0f} days after it started, or now:")
        confirm = st.checkbox("Yes, delete this class and all its answers", key="class.confirm_delete")
        if st.button("Delete this class", key="class.delete", disabled=not confirm):
            with _refused("delete the class"):
                store.delete_class(seat.code, seat.token)
                classroom.leave(LecturerSeat)
                st.session_state[DELETED_KEY] = seat.code
                st.rerun()


@st.fragment(run_every=2)
def _members(store, code: str) -> None:
    """The members, live (students join while the code is on the screen)."""
    try:
        members = store.members(code)
    except ValueError as exc:
        st.warning(str(exc))
        return
    st.metric("Students joined", len(members))
    if members:
        with st.expander("Who joined", icon=":material/groups:"):
            st.dataframe(pd.DataFrame({"nickname": [m.nickname for m in members]}), hide_index=True)
