"""Class mode in a browser session: this server's class store, its lecturer key, and this session's
seat in a class (as the lecturer, or as a member). Every rule lives in core.classroom.

Settings: the lecturer key from ATTENTION_LAB_LECTURER_KEY (environment or a root-level secret);
the database from `[connections.classroom] url` in the secrets, else ATTENTION_LAB_DB_URL, else a
SQLite file in ATTENTION_LAB_DATA_DIR (default ./.classroom).
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from core.classroom.security import configured_lecturer_key, normalize_code
from ui.state import CLASS_PARAMS

LECTURER_SEAT = "class.lecturer"  # session key: LecturerSeat of the class this session started
MEMBER_SEAT = "class.member"  # session key: MemberSeat of the class this session joined
# ?class=CODE in a join link; ?seat=TOKEN: a member's own address carries their seat (never published)
JOIN_PARAM, SEAT_PARAM = CLASS_PARAMS


@dataclass(frozen=True)
class LecturerSeat:
    code: str
    token: str  # the lecturer token (never shown)


@dataclass(frozen=True)
class MemberSeat:
    code: str
    token: str  # the member token (never shown)
    nickname: str


def lecturer_key() -> str | None:
    """The server's lecturer key; None = class mode is off."""
    return configured_lecturer_key(st.secrets)


def database_url() -> str | None:
    """`[connections.classroom] url` from the secrets (Streamlit's convention for connections)."""
    try:
        return str(st.secrets["connections"]["classroom"]["url"]) or None
    except Exception:  # no secrets file, or no such section: the default store
        return None


@st.cache_resource(show_spinner=False)
def _store(url: str):
    # One store per server process and URL: its rate limiters must see every session.
    from core.classroom import store as class_db

    return class_db.open_store(url)


def class_store():
    """The class store (core.classroom.store.ClassroomStore). Imported here, not at the top: a
    server whose lecturer never starts a class does not load SQLAlchemy (~10 MiB per process)."""
    from core.classroom import store as class_db

    return _store(class_db.normalize_url(database_url() or class_db.default_url()))


def lecturer_seat() -> LecturerSeat | None:
    return st.session_state.get(LECTURER_SEAT)


def member_seat() -> MemberSeat | None:
    return st.session_state.get(MEMBER_SEAT)


def take_seat(seat: LecturerSeat | MemberSeat) -> None:
    st.session_state[LECTURER_SEAT if isinstance(seat, LecturerSeat) else MEMBER_SEAT] = seat


def leave(kind: type) -> None:
    st.session_state.pop(LECTURER_SEAT if kind is LecturerSeat else MEMBER_SEAT, None)
    if kind is MemberSeat:
        for name in (JOIN_PARAM, SEAT_PARAM):
            if name in st.query_params:
                del st.query_params[name]


def keep_seat_in_url() -> None:
    """A member's seat lives in their own page's address (?class=CODE&seat=TOKEN), so a reload, a
    browser restart or the same address in a new tab takes the seat back instead of losing the
    student's answers and submissions. Run on every run by streamlit_app.py: the pages drop the
    parameters when they switch. The lecturer's token never goes in an address (it is projected);
    a lecturer takes the class back with the key and the code."""
    seat = member_seat()
    if seat is None:
        _restore_seat()
        return
    for name, value in ((JOIN_PARAM, seat.code), (SEAT_PARAM, seat.token)):
        if st.query_params.get(name) != value:
            st.query_params[name] = value


def _restore_seat() -> None:
    """Take the seat named by the address, if it is a seat of a live class on this server."""
    token, code = st.query_params.get(SEAT_PARAM), normalize_code(st.query_params.get(JOIN_PARAM, ""))
    if not token or lecturer_key() is None:
        return
    try:
        member = class_store().member(code, token) if code else None
    except Exception:  # noqa: BLE001 - the database cannot be reached: the student carries on alone
        member = None
    if member is None:  # the class ended, or the address was made up: keep the join code only
        del st.query_params[SEAT_PARAM]
        return
    take_seat(MemberSeat(code, token, member.nickname))


def join_link(code: str) -> str:
    """The link students open to join: this page's URL with ?class=CODE."""
    base = st.context.url or ""
    return f"{base}?{JOIN_PARAM}={code}"
