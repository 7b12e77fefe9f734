"""Class mode: a lecturer starts a class (join code, QR code and link for the projector, the live
challenge board); students join with the code and a nickname. Thin: the rules live in
core.classroom, the page's sections in ui.class_page."""

import streamlit as st

from ui import class_page, classroom

st.title("Class")
key = classroom.lecturer_key()
if key is None:
    st.info(class_page.HOW_TO_TURN_ON, icon=":material/school:")
    st.stop()
store = classroom.class_store()

if classroom.lecturer_seat() is not None:  # the lecturer's projected view: the class, nothing else
    class_page.lecturer_section(store, key)
elif classroom.member_seat() is not None:
    class_page.join_section(store)
else:
    join_tab, lecturer_tab = st.tabs(["Join a class", "Lecturer"])
    with join_tab:
        class_page.join_section(store)
    with lecturer_tab:
        class_page.lecturer_section(store, key)
