"""Home: what Attention Lab teaches, how to use it, and links to every lesson that exists."""

import streamlit as st

from ui import nav
from ui.state import ensure_entry_point, lecture_mode

ensure_entry_point()

st.title("Attention Lab")
st.markdown(
    "An interactive companion to *coding attention* and *small GPTs*. Every number on these "
    "pages is computed live by the same Python code you can open under **Show the code**, "
    "so you can check each step against the book, change the inputs, and see what changes.")

left, right = st.columns(2)
with left:
    st.subheader("What you will learn")
    st.markdown(
        "- how a query scores keys, and why softmax turns scores into weights\n"
        "- queries, keys and values from trainable weights; scaling by √d_k\n"
        "- the causal mask, dropout, and multiple heads\n"
        "- how text becomes token ids, windows and embeddings\n"
        "- training a character-level GPT on 32,000 names, live, and looking inside it")
with right:
    st.subheader("How to use it")
    st.markdown(
        "- pick a lesson on the left; lessons build on each other in order\n"
        "- edit the inputs (tables, sliders); every chart and number updates\n"
        "- the address bar always holds your settings: copy it to share exactly what you see\n"
        "- **Lecture mode** (sidebar) makes text and charts readable on a projector\n"
        "- every chart downloads as PNG or SVG for slides")

st.subheader("Lessons")
lessons = nav.available_lessons()
if not lessons:
    st.info("The lessons are being written; they appear here as they land.")
# A page link's label never wraps (at 1024 px the blurbs were cut mid-word): the link holds the
# title, in a column as wide as the longest title, so every blurb starts at the same place and
# wraps in the width left (wrap=False keeps it beside the title; a row that wraps put every blurb
# on a line of its own). Lecture mode's root font is 20 px, not 16: its titles are 1.25x as wide.
title_px = round((9 * max((len(lesson.title) for lesson in lessons), default=0) + 40)
                 * (1.25 if lecture_mode() else 1))
for lesson in lessons:
    with st.container(horizontal=True, vertical_alignment="center", gap="small", wrap=False):
        with st.container(width=title_px):
            st.page_link(lesson.file, label=f"**{lesson.title}**", icon=lesson.icon)
        st.caption(lesson.blurb, width="stretch")
