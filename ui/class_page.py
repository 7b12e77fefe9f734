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
from core.classroom.security import check_lecturer_key, code_problem, normalize_code
from ui import class_challenge, classroom
from ui.classroom import LecturerSeat, MemberSeat
from ui.layout import friendly_errors

HOW_TO_TURN_ON = (
    "Class mode is off on this server. To turn it on, give the server a lecturer key: set the "
    "environment variable `ATTENTION_LAB_LECTURER_KEY` (Docker: `-e ATTENTION_LAB_LECTURER_KEY=...`), "
    "or on Streamlit Community Cloud add `ATTENTION_LAB_LECTURER_KEY = \"...\"` to the app's secrets. "
    "Then restart the app and start a class here with that key. See docs/CLASS.md.")

# The join code is read from the back row: very large, in a monospace face (a style-only st.html
# block is applied to the page without taking room).
CODE_CSS = """<style>
.st-key-class_join_code [data-testid="stMetricValue"] {
  font-family: ui-monospace, monospace; font-size: 5.5rem; font-weight: 700; letter-spacing: 0.4rem;
  line-height: 1.1;
}
</style>"""


@contextmanager
def _refused(doing: str) -> Iterator[None]:
    """A refused class action in plain words ("Could not join the class: ..."); anything else is
    left to ui.layout.friendly_errors (logged, never a traceback)."""
    with friendly_errors(doing):
        try:
            yield
        except ValueError as exc:  # ClassroomError: a message written for the person who clicked
            st.error(f"Could not {doing}: {exc}", icon=":material/block:")


def join_section(store) -> None:
    """A student's view: the join form, or their seat in the class."""
    seat = classroom.member_seat()
    if seat is not None and store.member(seat.code, seat.token) is not None:
        st.success(f"You are in class **{seat.code}**.", icon=":material/groups:")
        st.caption("Your nickname")
        st.text(seat.nickname)  # plain text, never Markdown or HTML
        st.caption("In the sidebar, “Follow the lecturer” takes you where the lecturer is; switch it off "
                   "to explore freely.")
        if st.button("Leave this class", key="class.leave"):
            classroom.leave(MemberSeat)
            st.rerun()
        class_challenge.board(store, seat.code)
        return
    if seat is not None:  # the class ended or was deleted
        classroom.leave(MemberSeat)
        st.warning("Your class has ended.")
    linked = st.query_params.get(classroom.JOIN_PARAM)
    problem = code_problem(linked) if linked is not None else None
    if problem:  # a join link that was cut or mistyped
        st.warning(f"The join link's code could not be used. {problem}", icon=":material/link_off:")
    with st.form("class.join_form"):
        code = st.text_input("Join code", value=normalize_code(linked), max_chars=16, key="class.join_code")
        nickname = st.text_input("Nickname (shown to the class; nothing else about you is stored)",
                                 max_chars=200, key="class.nickname")
        joined = st.form_submit_button("Join", type="primary")
    if joined:
        with _refused("join the class"):
            member, token = store.join(code, nickname)
            classroom.take_seat(MemberSeat(normalize_code(code), token, member.nickname))
            st.rerun()


def lecturer_section(store, key: str) -> None:
    """The lecturer's view: the start form, or the running class."""
    seat = classroom.lecturer_seat()
    if seat is not None and store.is_lecturer(seat.code, seat.token):
        class_view(store, seat)
        return
    if seat is not None:
        classroom.leave(LecturerSeat)
        if store.find_class(seat.code) is not None:  # still running: its key and code were used elsewhere
            st.warning(f"Class {seat.code} was reopened in another browser window, which now runs it. To take "
                       "it back here, enter the lecturer key and its join code below.", icon=":material/swap_horiz:")
        else:
            st.warning("Your class has ended.")
    with st.form("class.start_form"):
        given = st.text_input("Lecturer key", type="password", key="class.key")
        reopen = st.text_input("Join code of a class you started (empty: start a new class)", max_chars=16,
                               key="class.reopen_code")
        started = st.form_submit_button("Start or reopen", type="primary")
    if started:
        if not check_lecturer_key(given, key):
            st.error("That is not the lecturer key.")
            return
        with _refused("start the class"):
            store.purge_expired()
            if reopen.strip():
                code = normalize_code(reopen)
                token = store.replace_lecturer_token(code)
            else:
                info, token = store.create_class()
                code = info.code
            classroom.take_seat(LecturerSeat(code, token))
            st.rerun()


def projector_card(code: str, link: str) -> None:
    """The join code and link, large, with the QR code of the link; the code and link always as text too."""
    qr_col, text_col = st.columns([2, 3], gap="medium", vertical_alignment="center")
    with qr_col:
        st.image(qr_png(link), width=300, caption="Scan to join",
                 alt=f"QR code of the join link {link} (join code {code})")
    with text_col:
        st.html(CODE_CSS)
        with st.container(key="class_join_code"):
            st.metric("Join code", code)
        st.caption("Join link (or open the Class page and type the code)")
        st.code(link, language=None, wrap_lines=True)


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
