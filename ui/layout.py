"""Page chrome shared by every lesson: lecture-mode styling, safe error display, lesson presets."""

from __future__ import annotations

import contextlib
import logging
from typing import Any, Iterator, Sequence

import streamlit as st

from core import settings as core_settings
from core.classroom.security import escape_markdown
from ui import state

log = logging.getLogger("attention_lab")

LECTURE_CSS = """
<style>
html, body, [data-testid="stAppViewContainer"] { font-size: 20px; }
[data-testid="stMarkdownContainer"] p, [data-testid="stMarkdownContainer"] li { font-size: 1.15rem; }
[data-testid="stCaptionContainer"] { font-size: 1rem; color: #111; }
h1 { font-size: 2.4rem !important; } h2 { font-size: 1.9rem !important; }
/* a title without its wide padding: the first screen of a projector is for the lesson */
h1 { padding-top: 0 !important; padding-bottom: 0.4rem !important; }
[data-testid="stHeader"], [data-testid="stToolbar"], footer { display: none; }
.katex { font-size: 1.35em !important; }
/* a formula beside a figure has half the width: a little smaller, so that it is not cut off */
[data-testid="stColumn"] .katex { font-size: 1.0em !important; }
.katex-display { overflow-x: auto; overflow-y: hidden; }
[data-testid="stSidebar"] { font-size: 16px; }
[data-testid="stSidebarNavLink"] span { font-size: 1rem; white-space: normal !important;
  overflow: visible !important; text-overflow: clip !important; line-height: 1.25; }
[data-testid="stSidebarNavLink"] { height: auto !important; min-height: 2rem; }
/* the label's own markdown box is nowrap + hidden, and wider than the link beside the icon: wrap it */
[data-testid="stSidebarNavLink"] > span:last-child { min-width: 0; flex: 1 1 auto; }
[data-testid="stSidebarNavLink"] [data-testid="stMarkdownContainer"],
[data-testid="stSidebarNavLink"] [data-testid="stMarkdownContainer"] p { white-space: normal !important;
  overflow: visible !important; text-overflow: clip !important; max-width: 100%; }
/* the first screen is precious on a projector: no empty band above the page title */
[data-testid="stMainBlockContainer"], .block-container { padding-top: 0.75rem !important; }
h3 { padding-top: 0.4rem !important; padding-bottom: 0.6rem !important; }
/* the page's rem padding grows with the 20 px font: give that width back to the figures */
[data-testid="stMainBlockContainer"], .block-container { padding-left: 2rem !important;
  padding-right: 2rem !important; max-width: none !important; }
/* tables are drawn on a canvas that ignores font-size. Streamlit 1.67's grid takes its font and
   rows from the root font when it is first drawn: 17.5 px under lecture mode's 20 px root, nothing to
   do. A grid already drawn when the sidebar's switch turns lecture mode on keeps its 14 px (the 400
   14px its wrapper's --gdg-base-font-style says): that one is zoomed by 20/16, so that it reads as it
   will once redrawn. (A zoom of every table, 1.3 on top of the 17.5 px, hid columns of a dozen tables
   at 1024 px.) The zoom is on the table's element box, narrowed by as much: the grid sizes its canvas
   in px from the box it sits in, so a table zoomed itself ran past its column. Since 1.67 a
   full-screen frame sits between the element box and the grid */
[data-testid="stElementContainer"]:has(> [data-testid="stFullScreenFrame"] > [data-testid="stDataFrame"]
    [style*="--gdg-base-font-style: 400 14px"]) { zoom: 1.25; width: calc(100% / 1.25) !important; }
/* inline code (a caption naming the function shown) and the text typed in boxes: 16 px at least */
[data-testid="stMain"] code { font-size: 0.9em !important; }
[data-testid="stMain"] [data-testid="stCode"] code, [data-testid="stMain"] [data-testid="stCode"] span {
  font-size: 16px !important; }
[data-testid="stMain"] input, [data-testid="stMain"] textarea,
[data-testid="stSidebar"] input { font-size: 18px !important; }
[data-testid="stMetricValue"] { font-size: 2.6rem !important; }
[data-testid="stMetricValue"] [data-testid="stMarkdownContainer"] p { font-size: 2.6rem !important; }
/* a metric in a row of columns: a value of a dozen digits (the float32 against float64 lesson) must
   fit a third of the page at 1280 px, where at 2.6rem it was cut to "1.1254029..." */
[data-testid="stColumn"] [data-testid="stMetricValue"],
[data-testid="stColumn"] [data-testid="stMetricValue"] [data-testid="stMarkdownContainer"] p {
  font-size: 2rem !important; }
/* labels (toggles, boxes) are one line cut with "..." when they do not fit, and a projector has no
   hover for the tooltip: with the bigger text they wrap instead (metrics' labels wrap in both modes,
   ACCESSIBLE_CSS). Not buttons: a button's one word would break inside itself ("Op|en"); their
   columns are made wide enough */
[data-testid="stMain"] [data-testid="stWidgetLabel"] .stMarkdownEllipsis,
[data-testid="stMain"] [data-testid="stWidgetLabel"] .stMarkdownEllipsis p {
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important; }
/* ... and they wrap between words only. Streamlit's markdown breaks a word that does not fit its
   line anywhere (word-break: break-word): at 1024 px a row of five boxes showed "max_len|gth",
   "Temperatur|e", and boxes at different heights under labels of one and two lines */
[data-testid="stMain"] [data-testid="stWidgetLabel"] p, [data-testid="stMain"] [data-testid="stMetricLabel"] p,
[data-testid="stMain"] [data-testid="stCheckbox"] label p {
  word-break: normal !important; overflow-wrap: break-word !important; hyphens: manual; }
/* a row of columns is the container its labels are sized by: 1.15rem needs a column of ~190 px
   for "Temperature", and a row of five at 1024 px has 113. Labels in a row of four and of five or
   more shrink with the row (1.15rem from about 800 and 1000 px of row: unchanged on a wide
   screen), never below 0.8rem. Only rows made by st.columns: a horizontal container sized by its
   content would be measured as empty */
[data-testid="stMain"] [data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"]) {
  container-type: inline-size; }
[data-testid="stMain"] [data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"]:nth-child(4))
  > [data-testid="stColumn"] :is([data-testid="stWidgetLabel"], [data-testid="stMetricLabel"],
                                 [data-testid="stCheckbox"] label) p {
  font-size: clamp(0.8rem, 2.9cqi, 1.15rem) !important; }
[data-testid="stMain"] [data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"]:nth-child(5))
  > [data-testid="stColumn"] :is([data-testid="stWidgetLabel"], [data-testid="stMetricLabel"],
                                 [data-testid="stCheckbox"] label) p {
  font-size: clamp(0.8rem, 2.3cqi, 1.15rem) !important; }
/* inline code in a column (a pitfall card's "(`CausalSelfAttention.forward`)"): an identifier has
   no place to break, and at 0.9em it was cut in two inside a card of 262 px. It shrinks with its
   row (unchanged from a row of ~850 px), to 16 px at the least; in a row narrower than 760 px
   (1024 px with the sidebar) with less padding and its letters a little closer as well */
[data-testid="stMain"] [data-testid="stColumn"] [data-testid="stMarkdownContainer"] code {
  font-size: clamp(16px, 2.45cqi, 0.9em) !important; }
@container (max-width: 760px) {
  [data-testid="stMain"] [data-testid="stColumn"] [data-testid="stMarkdownContainer"] code {
    padding: 0.1em 0.12em; letter-spacing: -0.04em; } }
</style>
"""


# Both modes (WCAG 2.1 AA, docs/ACCESSIBILITY.md). Sent with st.html: a style-only block goes to
# Streamlit's event container and takes no room on the page.
ACCESSIBLE_CSS = """
<style>
/* Streamlit draws captions in the text colour at 60% opacity: 3.9:1 on white, and small text
   needs 4.5:1 (WCAG 1.4.3). A solid grey of the theme's warm hue: 7:1 */
[data-testid="stCaptionContainer"] { opacity: 1; color: #5c5a58; }
/* KaTeX lets a fraction line stick out 2 px past a formula: its box would scroll by 2 px, a
   scroll box no keyboard can reach (axe: scrollable-region-focusable) */
.katex-display > .katex > .katex-html { padding-right: 2px; }
/* a chart wider than its column (a narrow window, 200% zoom) shrinks to fit instead of being
   cut off at the column's edge (WCAG 1.4.10); Vega draws an SVG with a viewBox, so it scales whole.
   Most charts are laid out again at the column's width before that (core/viz/fit.py): this is for
   grids and alphabets, which keep their size */
[data-testid="stVegaLiteChart"] { max-width: 100%; }
[data-testid="stVegaLiteChart"] > svg, [data-testid="stVegaLiteChart"] > canvas {
  max-width: 100%; height: auto; }
/* Streamlit draws a chart of more than 2,000 marks' rows on a canvas, and Vega writes a canvas's
   height in its style: narrowed to the column it kept that height, and a grid of 8 x 16 maps came
   out stretched four times as tall as wide */
[data-testid="stVegaLiteChart"] > canvas { height: auto !important; }
/* a badge is one line cut with "…" where it is wider than its column ("loop = matrix product · max
   differen…" beside a chart at 1024 px), and there is no hover on a projector: it wraps instead.
   A badge that fits stays one line */
[data-testid="stMain"] .stMarkdownBadge { white-space: normal !important; overflow: visible !important;
  text-overflow: clip !important; }
/* so are a metric's label and delta ("Vowel / consona…" beside the PCA chart, "scaled: 1.728;
   uniform: ln …" on the no-scaling pitfall, at 1024 px): they wrap, between words */
[data-testid="stMain"] :is([data-testid="stMetricLabel"], [data-testid="stMetricDelta"]) .stMarkdownEllipsis,
[data-testid="stMain"] :is([data-testid="stMetricLabel"], [data-testid="stMetricDelta"]) .stMarkdownEllipsis p,
[data-testid="stMain"] [data-testid="stMetricDelta"] div {
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important; }
[data-testid="stMain"] :is([data-testid="stMetricLabel"], [data-testid="stMetricDelta"]) p {
  word-break: normal !important; overflow-wrap: break-word !important; }
/* a refusal under a number box in a row of columns (five boxes at 1024 px) is as narrow as the
   box, and Streamlit's markdown broke its words at any letter ("Name|s: “ab|c”"): in a column it
   wraps between words, and its icon (hidden from screen readers anyway) and padding give the words
   their room */
[data-testid="stMain"] [data-testid="stColumn"] [data-testid="stAlertContainer"] { padding: 0.5rem 0.6rem; }
[data-testid="stMain"] [data-testid="stColumn"] [data-testid="stAlertContainer"]
  div:has(> span > [data-testid="stAlertDynamicIcon"]) { display: none; }
[data-testid="stMain"] [data-testid="stColumn"] [data-testid="stAlertContainer"] [data-testid="stMarkdownContainer"] {
  width: 100% !important; }
[data-testid="stMain"] [data-testid="stColumn"] [data-testid="stAlertContainer"] p {
  word-break: normal !important; overflow-wrap: break-word !important; }
/* the class board's nicknames (up to 32 letters, some with no space in them) break anywhere rather
   than widen the table past its column: one ran 28 px over at 1024 px in lecture mode */
.st-key-class_board [data-testid="stTable"] td:nth-child(2),
.st-key-class_board [data-testid="stTable"] td:nth-child(2) * { overflow-wrap: anywhere !important; }
/* the focus ring of links, buttons and the token panels, plain on any background (WCAG 2.4.7) */
a:focus-visible, button:focus-visible, [tabindex="0"]:focus-visible, [role="tab"]:focus-visible {
  outline: 3px solid #0072B2 !important; outline-offset: 2px; }
</style>
"""


def apply_lecture_style() -> None:
    """The accessible colours and focus rings of both modes; bigger text and less chrome when
    lecture mode is on."""
    st.html(ACCESSIBLE_CSS)
    if state.lecture_mode():
        st.markdown(LECTURE_CSS, unsafe_allow_html=True)


@contextlib.contextmanager
def friendly_errors(what: str = "this step") -> Iterator[None]:
    """Show a user's bad input as a clear message instead of a traceback.

    ValueError (and its subclasses) carry messages written for students; anything else is a bug
    in Attention Lab, reported as such and logged for the developers, never shown as a traceback.
    """
    try:
        yield
    except ValueError as exc:
        st.error(f"Could not compute {what}: {exc}", icon=":material/block:")
    except Exception:  # noqa: BLE001 - the last line of defence for the page
        log.exception("unexpected error in %s", what)
        st.error(f"Something went wrong in {what}. Your settings are kept; "
                 "try another value or reset this page.", icon=":material/bug_report:")


def lesson_panel(prefix: str, cls: type, page: str, obj: Any) -> Any:
    """Sidebar panel: save settings as a lesson file (with locks), load one.

    Returns the settings object to use from here on: a lesson just loaded replaces `obj`, and
    widgets bound to the old object would write its values back over the lesson's."""
    # Its controls are made only while it is open (an expander that tracks its state): closed, as
    # for nearly every student, a rerun no longer builds four widgets and registers a download.
    panel = st.sidebar.expander("Lesson presets", icon=":material/school:", key=panel_key(prefix),
                                on_change="rerun")
    if panel.open:
        obj = _lesson_controls(panel, prefix, cls, page, obj)
    elif state.locked_fields(prefix):  # why some controls are greyed out, also with the panel closed
        st.sidebar.caption("🔒 Locked: " + ", ".join(sorted(state.locked_fields(prefix))))
    return st.session_state[prefix]


def panel_key(prefix: str) -> str:
    """The session key of a page's "Lesson presets" expander (True while it is open)."""
    return f"{prefix}.lesson_panel"


def _lesson_controls(panel, prefix: str, cls: type, page: str, obj: Any) -> Any:
    with panel:
        name = state.limited_text("Lesson name", value="my lesson", key=f"{prefix}.lesson_name", limit=80)
        fields = [f for f in core_settings.dataclasses.fields(cls)]
        lock = st.multiselect("Lock these controls for students",
                              [f.name for f in fields], key=f"{prefix}.lesson_lock")
        # the file is made when clicked: an eager `data=` would store a new copy in the server's
        # media store on every rerun of every page, for every student
        st.download_button("Save lesson (JSON)",
                           data=lambda: core_settings.to_lesson(obj, name=name, page=page, locked=lock),
                           file_name=f"{name.strip().replace(' ', '_') or 'lesson'}.json",
                           mime="application/json", key=f"{prefix}.lesson_save",
                           on_click="ignore")
        upload = st.file_uploader("Load a lesson", type=["json"], key=f"{prefix}.lesson_file")
        if upload is not None and st.session_state.get(f"{prefix}.lesson_loaded") != upload.file_id:
            st.session_state[f"{prefix}.lesson_loaded"] = upload.file_id
            load_lesson_bytes(prefix, cls, page, upload.getvalue())
        if state.locked_fields(prefix):
            st.caption("🔒 Locked: " + ", ".join(sorted(state.locked_fields(prefix))))
            if st.button("Unlock all", key=f"{prefix}.unlock"):
                st.session_state[f"{prefix}.__locked"] = set()
                st.rerun()
    return obj


def load_lesson_bytes(prefix: str, cls: type, page: str, data: bytes) -> bool:
    """Apply a lesson file; on any problem keep the current settings and say why."""
    try:
        lesson, errors = core_settings.from_lesson(cls, data, page=page)
    except core_settings.SettingsError as exc:
        st.error(f"Lesson not loaded: {_md(exc)}. Your current settings are unchanged.", icon=":material/block:")
        return False
    state.replace_settings(prefix, lesson.settings, lesson.locked)
    if errors:
        st.warning("Lesson loaded with defaults for: " + _md("; ".join(errors[:6])), icon=":material/warning:")
    if lesson.ignored:  # a mistyped setting or lock did nothing: the teacher must hear which
        st.warning("Not used from this lesson: " + _md("; ".join(lesson.ignored)), icon=":material/warning:")
    st.success(f"Lesson “{_md(lesson.name)}” loaded.", icon=":material/check_circle:")
    return True


def _md(text: Any) -> str:
    """Text from a lesson file, made literal inside a Markdown notice. The name, setting names
    and values are the file author's: unescaped, `**x**`, `:red[x]` or `![](http://...)` would be
    drawn, and an image link would make every student's browser fetch a remote address."""
    return escape_markdown(str(text))


# a panel holding a chart, given no floor of its own, gets no narrower than this: on a 390 px phone
# a bar chart beside its formulas was squeezed to 49 px (words one letter per line) rather than
# going under them
CHART_FLOOR = "12rem"
WIDE_FORMULA_PX = 1200  # lecture mode, a window at least this wide: formulas beside a figure at ...
WIDE_FORMULA_EM = 1.25  # ... this size (of the 20 px text), as large as the words beside them


def wrapping_columns(spec, *, key: str, side_by_side: bool = False, gap: str = "small",
                     min_width: Sequence[int | str | None] | int | str | None = None,
                     vertical_alignment: str = "top"):
    """A row of panels like st.columns(spec) that WRAPS where its panels do not fit, instead of
    squeezing them: st.columns always splits the row, and at 1024 px with the sidebar open
    (564 px of page) a third of it drew two 6 x 6 maps as strips and cut formulas at its edge.

    Each panel is at least `min_width` wide (px, or a CSS length such as "14rem"; one for all or
    one per panel; none: no floor); a panel of words and formulas is also at least as wide as its
    widest formula or word (KaTeX does not wrap), whereas a panel holding a chart may be narrower
    than the chart's own width, down to its floor (CHART_FLOOR where none is given): the chart is
    laid out again at the column's width (core/viz/fit.py). The panels share the rest of the row in the proportions of `spec`;
    one that does not fit goes under the others, as wide as the row.

    In lecture mode the panels are stacked full width so that the large projector fonts still fit
    every value in its cell; `side_by_side` keeps them in a row there too, for panels narrow
    enough (a figure and its formula, 3 narrow matrices): stacked, they would push the step below
    the first screen. `key`: the row's name, unique on the page (its CSS class: st-key-wrap_<key>)."""
    weights = [1.0] * spec if isinstance(spec, int) else [float(w) for w in spec]
    lecture = state.lecture_mode()
    if lecture and not side_by_side:
        return [st.container() for _ in weights]
    if lecture:
        gap = "small"  # the room's rem is 20 px: a "large" gap would take 80 of them
    floors = list(min_width) if isinstance(min_width, (list, tuple)) else [min_width] * len(weights)
    row_key = f"wrap_{key}"
    rules = []
    for i, (weight, floor) in enumerate(zip(weights, floors), start=1):
        chart_floor = f"{floor}px" if isinstance(floor, int) else (floor or CHART_FLOOR)
        floor = f"{floor}px" if isinstance(floor, int) else (floor or "0px")
        panel = f".st-key-{row_key} > [data-testid='stLayoutWrapper']:nth-child({i})"
        # from a basis of 0 the panels share the row by their weights; a panel goes to the next
        # line when the ones before it leave less than its least width (its min-width)
        rules.append(f"{panel} {{ flex: {weight:g} 1 0px; min-width: min-content; }}")
        # words and formulas: as wide as the widest of them (min-content) and the floor at least;
        # a chart is fitted to its panel, which may be narrower than the chart, down to the floor
        chart = ":has([data-testid='stVegaLiteChart'])"
        rules.append(f"{panel}:not({chart}) > [data-testid='stVerticalBlock'] {{ min-width: {floor}; }}")
        rules.append(f"{panel}{chart} {{ min-width: min({chart_floor}, 100%); }}")
    if lecture:  # as in a row of st.columns (ui/layout.py): a formula beside a figure, a little smaller,
        # at 1024 px; from 1200 px (a projector's 1280) as large as the text beside it, still in the
        # row (1.0em there was 20 px of formula under 23 px of text: tests/browser, lecture formulas)
        rules.append(f".st-key-{row_key} .katex {{ font-size: 1.0em !important; }}")
        rules.append(f"@media (min-width: {WIDE_FORMULA_PX}px) {{ .st-key-{row_key} .katex "
                     f"{{ font-size: {WIDE_FORMULA_EM}em !important; }} }}")
    st.html("<style>" + "\n".join(rules) + "</style>")
    with st.container(horizontal=True, gap=gap, vertical_alignment=vertical_alignment, key=row_key):
        return [st.container() for _ in weights]


def map_floor(n_cols: int, chars: int = 4) -> str:
    """How narrow a panel holding a heatmap of `n_cols` columns may get (wrapping_columns) with
    its numbers of `chars` characters still whole in their cells: the row names and axis title, and
    a digit's 7 px a character and a margin per cell (in rem: 25% more room in lecture mode, as
    its cells and type are larger)."""
    return f"{6 + n_cols * (chars * 7 + 6) / 16:.2f}rem"
