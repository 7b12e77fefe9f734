"""Class mode: a lecturer starts a class (join code, QR code and link for the projector, the live
challenge board); students join with the code and a nickname. Thin: the rules live in
core.classroom, the page's sections in ui.class_page."""

import streamlit as st

from ui import class_page, classroom
from ui.page_end import end_page
from ui.state import ensure_entry_point

# a join link (/class?class=CODE) may be a fresh server's first page: run it inside the entry point,
# or the student gets no sidebar, so no "Follow the lecturer" (found by the kill -9 soak)
ensure_entry_point()

st.title("Class")
key = classroom.lecturer_key()
if key is None:
    st.info(class_page.HOW_TO_TURN_ON, icon=":material/school:")
    end_page()
store = classroom.class_store()

if classroom.lecturer_seat() is not None:  # the lecturer's projected view: the class, nothing else
    class_page.lecturer_section(store, key)
elif classroom.member_seat() is not None:
    class_page.join_section(store)
else:
    # a browser that ran a class (its lecturer reloaded) opens on the Lecturer tab, where the
    # class's code is filled in; a join link opens on Join
    led = st.session_state.get(classroom.LED_CLASS) and classroom.JOIN_PARAM not in st.query_params
    join_tab, lecturer_tab = st.tabs(["Join a class", "Lecturer"], default="Lecturer" if led else None)
    with join_tab:
        class_page.join_section(store)
    with lecturer_tab:
        class_page.lecturer_section(store, key)
