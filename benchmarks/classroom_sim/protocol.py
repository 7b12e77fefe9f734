"""Streamlit's frontend protocol as the simulated students speak it: the run statuses, the element
tree's nodes, the value a widget holds when it mounts, and the HTTP side (the XSRF cookie, the
deferred-file download, the file uploader's PUT)."""

from __future__ import annotations

import re
import urllib.request
import uuid
from dataclasses import dataclass
from typing import Any

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

FULL_OK = ForwardMsg.FINISHED_SUCCESSFULLY
FRAGMENT_OK = ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY
EARLY = ForwardMsg.FINISHED_EARLY_FOR_RERUN
COMPILE_ERROR = ForwardMsg.FINISHED_WITH_COMPILE_ERROR
MAX_CACHED_MESSAGE_AGE = 2  # streamlit's global.maxCachedMessageAge (the frontend evicts at this age)
INTERACTION_TIMEOUT_S = 60.0  # a rerun with no script_finished by then is an error
WIDGET_KINDS = {"button", "download_button", "number_input", "checkbox", "slider", "selectbox",
                "button_group", "text_area", "text_input", "radio", "file_uploader"}
BUG_BOX = re.compile(r"Something went wrong")  # ui.layout.friendly_errors' words for a bug


@dataclass
class Node:
    """One element of the page as the client keeps it (light: no chart data)."""

    kind: str            # Element oneof name: "button", "markdown", "vega_lite_chart", ...
    run_id: str          # script run that sent it (stale ones are dropped when a run finishes)
    script_hash: str     # active_script_hash: the entry point's or the page's
    fragment_id: str     # fragment that drew it ("" when the whole page did)
    widget: Any = None   # the widget's proto (small) for widget kinds
    text: str = ""       # visible text of text-like elements (markdown, progress, alert, exception)


def text_of(kind: str, sub: Any) -> str:
    """The visible text of a text-like element ("" for the others)."""
    if kind in ("markdown", "text", "code"):
        return sub.body if hasattr(sub, "body") else getattr(sub, "code_text", "")
    if kind == "progress":
        return sub.text
    if kind == "alert":
        return sub.body
    if kind == "exception":
        return f"{sub.type}: {sub.message}"
    if kind == "heading":
        return sub.body
    if kind == "metric":
        return f"{sub.label}={sub.body}"
    return ""


def initial_state(kind: str, w: Any) -> WidgetState | None:
    """The value the frontend's widget manager stores for a widget when it mounts (its default,
    or the value the server set). None for widgets that hold no value (buttons, uploaders)."""
    state = WidgetState(id=w.id)
    if kind == "number_input":
        if not (w.set_value or w.HasField("default")):
            return None
        state.double_value = w.value if w.set_value else w.default
    elif kind == "checkbox":
        state.bool_value = w.value if w.set_value else w.default
    elif kind == "slider":
        if len(w.options):  # select_slider: the option labels travel
            values = list(w.raw_value) if w.set_value else [w.options[i] for i in map(int, w.default)]
            state.string_array_value.data.extend(values)
        else:
            state.double_array_value.data.extend(list(w.value) if w.set_value else list(w.default))
    elif kind in ("selectbox", "radio"):
        if w.set_value and w.HasField("raw_value"):
            state.string_value = w.raw_value
        elif w.HasField("default") and w.default < len(w.options):
            state.string_value = w.options[w.default]
        else:
            return None
    elif kind == "button_group":
        values = list(w.raw_values) if w.set_value else [w.options[i].content for i in w.default]
        state.string_array_value.data.extend(values)
    elif kind in ("text_area", "text_input"):
        if w.set_value:
            state.string_value = w.value
        elif w.HasField("default"):
            state.string_value = w.default
        else:
            return None
    else:
        return None
    return state


class Disconnected(Exception):
    """The websocket closed under the client."""



def http_get(url: str, cookie: str = "") -> bytes:
    """GET `url` with the site's cookies, as the browser fetches a download."""
    req = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.read()


def site_cookies(base: str) -> str:
    """The cookies a browser keeps from /_stcore/health (Streamlit's XSRF cookie; behind a load
    balancer, its sticky-session cookie too), as one Cookie header."""
    with urllib.request.urlopen(f"{base}/_stcore/health", timeout=30) as r:
        pairs = [h.split(";", 1)[0].strip() for h in r.headers.get_all("Set-Cookie") or []]
    return "; ".join(p for p in pairs if "=" in p)


def cookie_value(cookie: str, name: str) -> str:
    """The value of cookie `name` in a Cookie header ("" if it is not there)."""
    for pair in cookie.split(";"):
        key, _, value = pair.strip().partition("=")
        if key == name:
            return value
    return ""


def http_put_file(url: str, name: str, data: bytes, cookie: str) -> None:
    """PUT a file the way the frontend's uploader does (XSRF cookie echoed in a header)."""
    xsrf = cookie_value(cookie, "_streamlit_xsrf")
    boundary = uuid.uuid4().hex
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n"
            f"Content-Type: application/octet-stream\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
    headers = {"Content-Type": f"multipart/form-data; boundary={boundary}"}
    if cookie:
        headers["Cookie"] = cookie
    if xsrf:
        headers["X-Xsrftoken"] = xsrf
    req = urllib.request.Request(url, data=body, method="PUT", headers=headers)
    with urllib.request.urlopen(req, timeout=60) as r:
        r.read()
