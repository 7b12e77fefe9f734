"""Streamlit pieces shared by the Tokens & data and Small language model pages.

* `text_source`: built-in text or the user's own (pasted or uploaded), judged by
  `core.lessons.text.validate_text` / `decode_upload`; a bad text gets a message and the last
  valid text stays in use. The user's text lives in session state only, never in the URL.
* `keep_last_good`: run a computation; on a user-fixable error show the message and return the
  previous valid result instead of losing it.
"""

from __future__ import annotations

from typing import Any, Callable

import streamlit as st

from core.lessons import text as texts
from ui import state


def keep_last_good(key: str, compute: Callable[[], Any], what: str) -> tuple[Any, bool]:
    """(result, ok): the new result, or the last valid one (ok False) after showing why."""
    value, problem = state.keep_last_valid(key, compute)
    if problem is not None:
        tail = " The last valid result is shown below." if value is not None else ""
        st.error(f"Could not update {what}: {problem}{tail}", icon=":material/block:")
    return value, problem is None


def _read_upload(prefix: str, text_key: str, min_chars: int) -> None:
    """Decode a newly uploaded file into the text box; remember a refused file's message."""
    upload = st.file_uploader("…or upload a text file", type=["txt", "md", "csv", "text"],
                              key=f"{prefix}.upload",
                              help=f"Plain UTF-8 text, up to {texts.MAX_UPLOAD_BYTES:,} bytes.")
    error_key = f"{prefix}.upload_error"
    if upload is None:
        st.session_state.pop(error_key, None)
        return
    if st.session_state.get(f"{prefix}.upload_seen") != upload.file_id:
        st.session_state[f"{prefix}.upload_seen"] = upload.file_id
        st.session_state.pop(error_key, None)
        try:
            text = texts.decode_upload(upload.getvalue(), upload.name, min_chars=min_chars)
        except ValueError as exc:
            st.session_state[error_key] = (upload.file_id, str(exc))
        else:
            st.session_state[text_key] = text  # the text box shows (and can edit) the file's text
            st.toast(f"Loaded {upload.name}: {len(text):,} characters.", icon=":material/check_circle:")
    refused = st.session_state.get(error_key)
    if refused and refused[0] == upload.file_id:
        st.error(f"{refused[1]} The last valid text stays in use.", icon=":material/block:")


def text_source(prefix: str, settings: Any, field: str, choices: dict[str, str],
                *, min_chars: int = 2, height: int = 180) -> tuple[str, str]:
    """(text, where it came from): a built-in text, or the user's own with a last-valid fallback."""
    choice = state.bound(st.radio, "Text", settings, field, prefix=prefix,
                         options=list(choices), format_func=choices.get, horizontal=True)
    if choice != "own":
        return texts.builtin_text(choice), choices[choice]

    text_key, good_key = f"{prefix}.own_text", f"{prefix}.good_text"
    kept_key = f"{prefix}.own_text_kept"  # not a widget's key: it outlives a visit to another page
    starter = texts.builtin_text(next(iter(choices)))
    if text_key not in st.session_state:
        # Streamlit drops a widget's value when its page is left: put the student's text back (the
        # first time, the built-in text: edit it or replace it)
        st.session_state[text_key] = st.session_state.get(kept_key, starter)
    left, right = st.columns([3, 2])
    with right:  # read the upload first: it may fill the text box below
        _read_upload(prefix, text_key, min_chars)
        st.caption("Your text stays in this browser session only; it is never put in the link.")
    with left:
        # no max_chars: with one, Streamlit drops a longer paste whole and says nothing; without,
        # the text reaches validate_text, which says it is too long and keeps the last valid one
        raw = st.text_area("Paste your text", key=text_key, height=height,
                           help=f"Up to {texts.MAX_TEXT_CHARS:,} characters (a few book chapters); "
                                "a longer text is refused with a message and the last valid text "
                                "stays in use.")
        problem_slot = st.empty()  # under the box it is about (on a phone the upload comes between)
    st.session_state[kept_key] = raw
    text, problem = state.keep_last_valid(
        good_key, lambda: texts.validate_text(raw, what="Your text", min_chars=min_chars), first=starter)
    if problem is not None:
        problem_slot.error(f"{problem} The last valid text ({len(text):,} characters) stays in use.",
                           icon=":material/block:")
        return text, "your last valid text"
    return text, "your text"
