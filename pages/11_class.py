"""Class mode: a lecturer starts a class (join code and link for the projector); students join with
the code and a nickname. Thin: the rules live in core.classroom, the session's seat in ui.classroom."""

import pandas as pd
import streamlit as st

from core.classroom.security import check_lecturer_key, normalize_code
from ui import classroom
from ui.classroom import LecturerSeat, MemberSeat
from ui.layout import friendly_errors

HOW_TO_TURN_ON = (
    "Class mode is off on this server. To turn it on, give the server a lecturer key: set the "
    "environment variable `ATTENTION_LAB_LECTURER_KEY` (Docker: `-e ATTENTION_LAB_LECTURER_KEY=...`), "
    "or on Streamlit Community Cloud add `ATTENTION_LAB_LECTURER_KEY = \"...\"` to the app's secrets. "
    "Then restart the app and start a class here with that key.")

st.title("Class")
key = classroom.lecturer_key()
if key is None:
    st.info(HOW_TO_TURN_ON, icon=":material/school:")
    st.stop()
store = classroom.class_store()


def join_section() -> None:
    seat = classroom.member_seat()
    if seat is not None and store.member(seat.code, seat.token) is not None:
        st.success(f"You are in class **{seat.code}**.", icon=":material/groups:")
        st.caption("Your nickname")
        st.text(seat.nickname)  # plain text, never Markdown or HTML
        if st.button("Leave this class", key="class.leave"):
            classroom.leave(MemberSeat)
            st.rerun()
        return
    if seat is not None:  # the class ended or was deleted
        classroom.leave(MemberSeat)
        st.warning("Your class has ended.")
    with st.form("class.join_form"):
        code = st.text_input("Join code", value=normalize_code(st.query_params.get(classroom.JOIN_PARAM, "")),
                             max_chars=16, key="class.join_code")
        nickname = st.text_input("Nickname (shown to the class; nothing else about you is stored)",
                                 max_chars=200, key="class.nickname")
        joined = st.form_submit_button("Join")
    if joined:
        with friendly_errors("joining the class"):
            member, token = store.join(code, nickname)
            classroom.take_seat(MemberSeat(normalize_code(code), token, member.nickname))
            st.rerun()


def lecturer_section() -> None:
    seat = classroom.lecturer_seat()
    if seat is not None and store.is_lecturer(seat.code, seat.token):
        class_view(seat)
        return
    if seat is not None:
        classroom.leave(LecturerSeat)
        st.warning("Your class has ended.")
    with st.form("class.start_form"):
        given = st.text_input("Lecturer key", type="password", key="class.key")
        reopen = st.text_input("Join code of a class you started (empty: start a new class)", max_chars=16,
                               key="class.reopen_code")
        started = st.form_submit_button("Start or reopen")
    if started:
        if not check_lecturer_key(given, key):
            st.error("That is not the lecturer key.")
            return
        with friendly_errors("starting the class"):
            store.purge_expired()
            if reopen.strip():
                code = normalize_code(reopen)
                token = store.replace_lecturer_token(code)
            else:
                info, token = store.create_class()
                code = info.code
            classroom.take_seat(LecturerSeat(code, token))
            st.rerun()


def class_view(seat: LecturerSeat) -> None:
    info = store.find_class(seat.code)
    st.metric("Join code", seat.code)
    st.caption("Join link")
    st.code(classroom.join_link(seat.code), language=None)
    members = store.members(seat.code)
    st.metric("Students joined", len(members))
    if members:
        st.dataframe(pd.DataFrame({"nickname": [m.nickname for m in members]}), hide_index=True)
    if info is not None:
        st.caption(f"This class and everything in it are deleted {(info.expires_at - info.created_at) / 86400:.0f} "
                   "days after it started, or now:")
    confirm = st.checkbox("Yes, delete this class and all its answers", key="class.confirm_delete")
    if st.button("Delete this class", key="class.delete", disabled=not confirm):
        with friendly_errors("deleting the class"):
            store.delete_class(seat.code, seat.token)
            classroom.leave(LecturerSeat)
            st.rerun()
    st.button("Refresh", key="class.refresh")


join_tab, lecturer_tab = st.tabs(["Join a class", "Lecturer"])
with join_tab:
    join_section()
with lecturer_tab:
    lecturer_section()
