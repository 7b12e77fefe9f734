"""Class mode in a browser session: this server's class store, its lecturer key, and this session's
seat in a class (as the lecturer, or as a member). Every rule lives in core.classroom.

Settings: the lecturer key from ATTENTION_LAB_LECTURER_KEY (environment or a root-level secret);
the database from `[connections.classroom] url` in the secrets, else ATTENTION_LAB_DB_URL, else a
SQLite file in ATTENTION_LAB_DATA_DIR (default ./.classroom).
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from core.classroom.security import configured_lecturer_key

LECTURER_SEAT = "class.lecturer"  # session key: LecturerSeat of the class this session started
MEMBER_SEAT = "class.member"  # session key: MemberSeat of the class this session joined
LED_CLASS = "class.led"  # session key: the join code of the class this browser last ran as lecturer (no
# token: ui.desk keeps it across a reload, so the start form can name the class; the key is asked again)
JOIN_PARAM = "class"  # ?class=CODE in a join link
STORE_KEY = "class.store"  # session key: this session's class store (the process's shared one)


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
    server whose lecturer never starts a class does not load SQLAlchemy (~10 MiB per process).
    Found once per session: reading the secrets and resolving the folder cost more than the
    database read itself, and a class member's follow tick asks once a second."""
    store = st.session_state.get(STORE_KEY)
    if store is None:
        from core.classroom import store as class_db

        store = _store(class_db.normalize_url(database_url() or class_db.default_url()))
        st.session_state[STORE_KEY] = store
    return store


def lecturer_seat() -> LecturerSeat | None:
    return st.session_state.get(LECTURER_SEAT)


def member_seat() -> MemberSeat | None:
    return st.session_state.get(MEMBER_SEAT)


def take_seat(seat: LecturerSeat | MemberSeat) -> None:
    st.session_state[LECTURER_SEAT if isinstance(seat, LecturerSeat) else MEMBER_SEAT] = seat
    if isinstance(seat, LecturerSeat):
        st.session_state[LED_CLASS] = seat.code


def leave(kind: type) -> None:
    st.session_state.pop(LECTURER_SEAT if kind is LecturerSeat else MEMBER_SEAT, None)


def join_link(code: str) -> str:
    """The link students open to join: this page's URL with ?class=CODE."""
    base = st.context.url or ""
    return f"{base}?{JOIN_PARAM}={code}"
