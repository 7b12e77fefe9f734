"""Attention Lab: the entry point. Page config, navigation over pages/, the global sidebar."""

from __future__ import annotations

import os

# OpenMP threads that spin long while waiting steal the cores other sessions need: on a busy server
# matrix multiplies ran ~10x slower. Passive waiting, with a short spin first (GNU OpenMP counts it
# in loop turns; a few microseconds), keeps that cliff away and keeps most of the speed of spinning
# for the many tiny ops of a small model (measured: 1.6x the steps/s of waiting with no spin at all).
# Must be set before torch is first imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("GOMP_SPINCOUNT", "30000")

import time  # noqa: E402

import streamlit as st  # noqa: E402

RUN_START = time.perf_counter()  # this file runs again on every rerun: the start of this run
# benchmarks/classroom_load.py sets this to a file path to collect how long each run takes
TIMING_LOG = os.environ.get("ATTENTION_LAB_TIMING_LOG")

# Community Cloud takes settings as secrets; loading them makes root-level ones environment
# variables, which core.budget reads (ATTENTION_LAB_HOSTED, ...) when it is first imported below.
st.secrets.load_if_toml_exists()

from core import budget  # noqa: E402
from server import config_cache, housekeeping, rerun_race, stale_ticks  # noqa: E402
from ui import class_follow, desk, live, nav, page_end  # noqa: E402
from ui.layout import apply_lecture_style
from ui.state import switched_on
from ui.state import ENTRY_FLAG, start_page_run

# the tab's icon is a file of ours: a Material icon name is drawn from Google's font server, which a
# classroom without internet (or a slide exported offline) does not reach
ICON = os.path.join(os.path.dirname(os.path.abspath(__file__)), "assets", "icon.png")
st.set_page_config(page_title="Attention Lab", page_icon=ICON, layout="wide")
budget.configure_torch_threads()
housekeeping.start()  # once per process: free the memory of sessions that have left
rerun_race.install()  # once per process: a tick arriving as a page run ends no longer loses its end
config_cache.install()  # once per process: the theme is read once, not on every page run
stale_ticks.install()  # once per process: an old page's tick after a page switch no longer blanks the new page
# A run training in a worker thread (a GPU run, ui.live) pauses for every whole-page run: the page
# about to run may read its model; the Train page's own fragment lets it go on at its next tick.
live.stop_workers()

home = st.Page("pages/home.py", title="Home", icon=":material/home:", url_path="home", default=True)
sections: dict[str, list] = {"Start": [home]}
for lesson in nav.available_lessons():
    sections.setdefault(lesson.section, []).append(
        st.Page(lesson.file, title=lesson.title, icon=lesson.icon, url_path=lesson.url))
# Class mode (start a class, join one) is not a lesson: no entry in the catalogue or on the home page.
sections.setdefault("For teachers", []).append(
    st.Page("pages/11_class.py", title="Class", icon=":material/groups:", url_path="class"))

page = st.navigation(sections)

# Lecture mode is global: read once from the link, then kept by the sidebar toggle's key.
if "lecture_mode" not in st.session_state:  # ?lecture=1, or true/yes/on as every switch in a link
    st.session_state["lecture_mode"] = switched_on(st.query_params.get("lecture"))
st.sidebar.toggle("Lecture mode", key="lecture_mode",
                  help="Larger text, projector-friendly colour-blind-safe palette, less chrome.")
if st.session_state["lecture_mode"]:
    if st.query_params.get("lecture") != "1":
        st.query_params["lecture"] = "1"
elif "lecture" in st.query_params:
    del st.query_params["lecture"]
apply_lecture_style()

st.session_state[ENTRY_FLAG] = True
start_page_run(page.url_path)  # a link's notices wait for this run's page title (ui.state.page_title)
desk.keep_and_restore()  # a reloaded tab gets back the runs its previous session trained
page_url = page.url_path or "home"
# counted while it runs: a hosted server's training slices wait while many page runs are queued;
# a run that following the lecturer started waits behind the ones students clicked for
with budget.PAGE_RUNS.running(background=class_follow.follow_move_run()):
    try:
        class_follow.follow_panel(page_url)  # a student in a class: follow the lecturer (nothing otherwise)
        with page_end.running_page():  # a page that ends early (page_end.end_page) returns here
            page.run()
    finally:
        # a lecturer in a class: students follow this, also after a page that ended early (Sample
        # names before any model, a class poll). Not after st.stop(): every Streamlit call after it
        # raises, so the pages end with page_end.end_page() instead.
        class_follow.publish_lecturer_state(page_url)
        desk.send_cookie()  # the browser keeps its desk token, for a reload (ui.desk)
        if TIMING_LOG:  # one line per whole-page run (fragment ticks do not run this file)
            try:
                with open(TIMING_LOG, "a", encoding="utf-8") as log:
                    log.write(f"{page.url_path or 'home'}\t{time.perf_counter() - RUN_START:.4f}\n")
            except OSError:
                pass  # a measurement aid only: a bad path must never break the page
