"""A class of N simulated students on one small server: Streamlit's own websocket protocol, no browsers.

    python benchmarks/student_sim.py [--students 60] [--trainers 6] [--duration 600]
        [--server-cores 0 | 0,1] [--browsers 2] [--curve] [--soak] [--inventory]

Each simulated student is a light asyncio client of the protocol the Streamlit frontend speaks
(`/_stcore/stream`, the `BackMsg` / `ForwardMsg` protobufs of the installed streamlit): it opens a
session (`rerun_script` with the page and query string), learns the pages from the `navigation`
message, keeps the element tree it is sent (deltas by path, stale ones dropped when a run
finishes, like the frontend), finds the widgets in it by type and label, and keeps their values
the way the frontend's widget manager does (defaults on mount, values the server sets, all sent
with every rerun). It also keeps the frontend's ForwardMsg cache (the server sends a `ref_hash`
for a large element the client says it holds) and emulates `run_every` fragments exactly as the
frontend does: on an `auto_rerun` message it sends a `rerun_script` with `fragment_id` and
`is_auto_rerun` every `interval` seconds, whether or not the last tick has finished, until a full
run or a `stop_auto_rerun` clears it.

A student moves between the pages and changes widgets found on them (Next/Previous, the query
token, the embeddings CSV box, number inputs, toggles, sliders, select boxes, the sample
settings); K trainers open the Train page, press Start and watch the live fragment tick (a new
run with another seed when one finishes). Per interaction it measures the time from sending the
change to the `script_finished` message (server side: nothing here renders), and counts errors:
exception elements, a run that finishes with an error, disconnects, timeouts.

Two or three real browsers (headless Chromium through Playwright, `--browsers`) run alongside and
measure click-to-render end to end under the same load (benchmarks/classroom_load.py's student).

The server is pinned to `--server-cores` (taskset semantics via sched_setaffinity: `0` = one
core), this process and the browsers to the remaining core (core 1). Loopback only, bounded in
time, stops by itself; the last printed line is one JSON object.

Phases: cold start; one student visits every page (the one-student RSS); N students arrive within
--arrival-s and act until --duration is over; all leave; after the server's disconnected-session
TTL (--leave-wait) the RSS is read again (a leak shows as RSS that stays up).

--curve runs N = 10, 30, 60, 90 (K = N / 10) and prints a table. --soak kills the server with
kill -9 halfway and restarts it: the clients reconnect; before the kill each trainer downloads
its checkpoint through the download button (the deferred-file protocol), and after the restart
uploads it through the file uploader (the upload protocol) and checks the run is back at its step.
--inventory prints the widgets of every page and exits (to check what the simulator sees).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import csv
import io
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import websockets  # noqa: E402
from streamlit.proto.BackMsg_pb2 import BackMsg  # noqa: E402
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402
from streamlit.proto.WidgetStates_pb2 import WidgetState  # noqa: E402

FULL_OK = ForwardMsg.FINISHED_SUCCESSFULLY
FRAGMENT_OK = ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY
EARLY = ForwardMsg.FINISHED_EARLY_FOR_RERUN
COMPILE_ERROR = ForwardMsg.FINISHED_WITH_COMPILE_ERROR
MAX_CACHED_MESSAGE_AGE = 2  # streamlit's global.maxCachedMessageAge (the frontend evicts at this age)
INTERACTION_TIMEOUT_S = 60.0  # a rerun with no script_finished by then is an error
WIDGET_KINDS = {"button", "download_button", "number_input", "checkbox", "slider", "selectbox",
                "button_group", "text_area", "text_input", "radio", "file_uploader"}
# Widgets a student does not press at random: they start training (only the K trainers do that),
# throw away work, or download files (downloads never rerun the app).
AVOID = re.compile(r"^(Start|Break it|Reset|Stop|Pause|Resume|Clear|Train|Lecture mode|Download|PNG|"
                   r"SVG|Upload|Load|Apply|Save)", re.I)
TRAIN_PAGE = re.compile(r"train.*gpt|train_gpt", re.I)
BUG_BOX = re.compile(r"Something went wrong")  # ui.layout.friendly_errors' words for a bug
STEP_TEXT = re.compile(r"step ([\d,]+) of ([\d,]+)")


# =============================================================================================
# The protocol client: one browser tab's worth of Streamlit frontend, without the rendering
# =============================================================================================


@dataclass
class Node:
    """One element of the page as the client keeps it (light: no chart data)."""

    kind: str            # Element oneof name: "button", "markdown", "vega_lite_chart", ...
    run_id: str          # script run that sent it (stale ones are dropped when a run finishes)
    script_hash: str     # active_script_hash: the entry point's or the page's
    fragment_id: str     # fragment that drew it ("" when the whole page did)
    widget: Any = None   # the widget's proto (small) for widget kinds
    text: str = ""       # visible text of text-like elements (markdown, progress, alert, exception)


def _text_of(kind: str, sub: Any) -> str:
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


@dataclass
class Stats:
    """Everything the clients measure, shared by all of them (one asyncio thread: no locks)."""

    interactions: list = field(default_factory=list)   # (kind, seconds) full reruns a student caused
    ticks: list = field(default_factory=list)          # seconds per fragment tick (send -> finish)
    first_render: list = field(default_factory=list)   # connect -> first page finished
    errors: list = field(default_factory=list)         # strings
    app_errors: list = field(default_factory=list)     # st.error boxes seen (clear messages, not bugs)
    early: int = 0                                     # runs ended early for a newer rerun
    reconnects: list = field(default_factory=list)     # seconds from the disconnect to a served page
    trainer_steps: dict = field(default_factory=dict)  # student -> [(t, cumulative steps)]
    soak: dict = field(default_factory=dict)
    lesson: int = 0  # which class (--classes): trainers are told apart per class


class Client:
    """One simulated browser tab connected to the app."""

    def __init__(self, name: str, base: str, stats: Stats, rng: random.Random):
        self.name, self.base, self.stats, self.rng = name, base, stats, rng
        self.ws = None
        self.session_id = ""
        self.pages: dict[str, tuple[str, str]] = {}  # page title -> (script hash, url path)
        self.page_hash = ""
        self.main_hash = ""
        self.url_path = ""
        self.query_string = ""
        self.nodes: dict[tuple, Node] = {}
        self.values: dict[str, WidgetState] = {}     # widget id -> the value sent with every rerun
        self.cache: dict[str, list] = {}             # hash -> [bytes, run count when last used, fragment]
        self.run_count = 0
        self.run_id = ""                             # the script run now in progress
        self.fragment_run = False
        self.auto: dict[str, tuple[float, asyncio.Task]] = {}  # fragment id -> (interval, ticker)
        self.full_waiters: list[asyncio.Future] = []
        self.tick_sent: list[float] = []             # send times of ticks not yet finished
        self.reader: asyncio.Task | None = None
        self.closed = asyncio.Event()
        self.alive = False
        self.seen_exceptions: set[str] = set()
        self.backend: dict[str, asyncio.Future] = {}
        self.file_urls: dict[str, asyncio.Future] = {}
        self.recv_bytes = 0
        self.cookie = ""  # the cookies a browser would hold for this site (Streamlit's XSRF one)

    # ------------------------------------------------------------------ connection
    async def connect(self, url_path: str = "", reuse_session: bool = False) -> float:
        """Open the websocket and run the page at `url_path`; returns seconds to the first finish."""
        uri = self.base.replace("http://", "ws://") + "/_stcore/stream"
        if not self.cookie:  # the frontend asks /_stcore/health first, which sets the XSRF cookie
            self.cookie = await asyncio.to_thread(_site_cookies, self.base)
        xsrf = _cookie_value(self.cookie, "_streamlit_xsrf") or "xsrf-unused"
        protocols = ["streamlit", xsrf] + ([self.session_id] if reuse_session and self.session_id else [])
        self.ws = await websockets.connect(uri, subprotocols=protocols, max_size=None, proxy=None,
                                           open_timeout=20, ping_interval=None, compression=None,
                                           additional_headers={"Cookie": self.cookie} if self.cookie else None)
        self.closed.clear()
        self.alive = True
        self.reader = asyncio.create_task(self._read())
        self.url_path = url_path
        t0 = time.monotonic()
        await self.rerun(page_name=url_path, page_hash="")
        return time.monotonic() - t0

    async def close(self) -> None:
        self._stop_tickers()
        self.alive = False
        if self.ws is not None:
            with contextlib.suppress(Exception):
                await self.ws.close()
        if self.reader is not None:
            self.reader.cancel()
            with contextlib.suppress(BaseException):
                await self.reader

    async def _read(self) -> None:
        try:
            async for raw in self.ws:
                self.recv_bytes += len(raw)
                self._handle(raw)
        except (websockets.ConnectionClosed, OSError):
            pass
        finally:
            self.alive = False
            self.closed.set()
            self._stop_tickers()
            for fut in self.full_waiters + list(self.backend.values()) + list(self.file_urls.values()):
                if not fut.done():
                    fut.set_exception(Disconnected(self.name))
            self.full_waiters.clear()

    # ------------------------------------------------------------------ incoming messages
    def _handle(self, raw: bytes) -> None:
        msg = ForwardMsg()
        msg.ParseFromString(raw)
        kind = msg.WhichOneof("type")
        if kind == "ref_hash":  # a large element the client said it holds: take it from the cache
            entry = self.cache.get(msg.ref_hash)
            if entry is None:
                self.stats.errors.append(f"{self.name}: cache miss for {msg.ref_hash}")
                return
            entry[1] = self.run_count
            full = ForwardMsg()
            full.ParseFromString(entry[0])
            full.metadata.CopyFrom(msg.metadata)
            msg, kind = full, full.WhichOneof("type")
        elif msg.metadata.cacheable and msg.hash and msg.hash not in self.cache:
            self.cache[msg.hash] = [raw, self.run_count, msg.delta.fragment_id]

        if kind == "new_session":
            ns = msg.new_session
            if ns.HasField("initialize") and ns.initialize.session_id:
                self.session_id = ns.initialize.session_id
            self.run_id = msg.metadata.run.script_run_id
            self.fragment_run = bool(msg.metadata.run.fragment_ids)
            if not self.fragment_run:
                self.page_hash = ns.page_script_hash
                self.main_hash = ns.main_script_hash
                self._stop_tickers()  # the frontend clears its run_every timers on every full run
        elif kind == "navigation":
            self.pages = {p.page_name: (p.page_script_hash, p.url_pathname) for p in msg.navigation.app_pages}
            if msg.navigation.page_script_hash:
                self.page_hash = msg.navigation.page_script_hash
        elif kind == "delta":
            self._delta(msg)
        elif kind == "page_info_changed":
            self.query_string = msg.page_info_changed.query_string
        elif kind == "auto_rerun":
            self._auto_rerun(msg.auto_rerun.fragment_id, msg.auto_rerun.interval)
        elif kind == "stop_auto_rerun":
            for fid in msg.stop_auto_rerun.fragment_ids:
                self._stop_ticker(fid)
        elif kind == "script_finished":
            self._finished(msg)
        elif kind == "page_not_found":
            self.stats.errors.append(f"{self.name}: page not found ({msg.page_not_found.page_name})")
        elif kind == "backend_operation_response":
            resp = msg.backend_operation_response
            fut = self.backend.pop(resp.request_id, None)
            if fut is not None and not fut.done():
                fut.set_result(resp)
        elif kind == "file_urls_response":
            fut = self.file_urls.pop(msg.file_urls_response.response_id, None)
            if fut is not None and not fut.done():
                fut.set_result(msg.file_urls_response)

    def _delta(self, msg: ForwardMsg) -> None:
        delta = msg.delta
        path = tuple(msg.metadata.delta_path)
        run_id = msg.metadata.run.script_run_id or self.run_id
        which = delta.WhichOneof("type")
        if which == "new_element":
            kind = delta.new_element.WhichOneof("type")
            sub = getattr(delta.new_element, kind) if kind else None
            node = Node(kind or "", run_id, msg.metadata.active_script_hash, delta.fragment_id)
            if kind in WIDGET_KINDS:
                node.widget = sub
                if kind not in ("button", "download_button", "file_uploader"):
                    state = initial_state(kind, sub)
                    if state is not None and (sub.id not in self.values or getattr(sub, "set_value", False)):
                        self.values[sub.id] = state
            else:
                node.text = _text_of(kind, sub) if sub is not None else ""
            if kind == "exception":
                key = f"{self.page_title()}: {node.text[:200]}"
                if key not in self.seen_exceptions:
                    self.seen_exceptions.add(key)
                    self.stats.errors.append(f"{self.name}: exception on {key}")
            elif kind == "alert" and sub.format == 1:  # ERROR box
                message = f"{self.page_title()}: {node.text[:160]}"
                if BUG_BOX.search(node.text):  # the app's last line of defence caught a bug
                    if message not in self.seen_exceptions:
                        self.seen_exceptions.add(message)
                        self.stats.errors.append(f"{self.name}: bug box on {message}")
                else:  # a clear message about the student's input: counted apart, not an error
                    self.stats.app_errors.append(message)
            self.nodes[path] = node
        elif which == "add_block":
            self.nodes[path] = Node("block", run_id, msg.metadata.active_script_hash, delta.fragment_id)

    def _finished(self, msg: ForwardMsg) -> None:
        status = msg.script_finished
        run = msg.metadata.run
        run_id = run.script_run_id or self.run_id
        if status in (FULL_OK, COMPILE_ERROR):
            # like the frontend: drop what this run did not redraw, forget widgets no longer shown
            self.nodes = {p: n for p, n in self.nodes.items() if n.run_id == run_id}
            shown = {n.widget.id for n in self.nodes.values() if n.widget is not None}
            self.values = {k: v for k, v in self.values.items() if k in shown}
            self._age_cache([])
            if status == COMPILE_ERROR:
                self.stats.errors.append(f"{self.name}: the script failed on {self.page_title()}")
            for fut in self.full_waiters:
                if not fut.done():
                    fut.set_result(time.monotonic())
            self.full_waiters.clear()
        elif status == FRAGMENT_OK:
            fragments = set(run.fragment_ids)
            self.nodes = {p: n for p, n in self.nodes.items()
                          if n.run_id == run_id or n.fragment_id not in fragments}
            self._age_cache(list(fragments))
            if self.tick_sent:
                self.stats.ticks.append(time.monotonic() - self.tick_sent.pop(0))
        elif status == EARLY:
            self.stats.early += 1
            if self.fragment_run and self.tick_sent:
                self.tick_sent.pop(0)

    def _age_cache(self, fragment_ids: list[str]) -> None:
        """The frontend's cache eviction: at each finished run, drop what was not used for
        more than maxCachedMessageAge runs (for a fragment run, only that fragment's entries)."""
        self.run_count += 1
        for key, (raw, used, frag) in list(self.cache.items()):
            if fragment_ids and (not frag or frag not in fragment_ids):
                continue
            if self.run_count - used > MAX_CACHED_MESSAGE_AGE:
                del self.cache[key]

    # ------------------------------------------------------------------ fragments (run_every)
    def _auto_rerun(self, fragment_id: str, interval: float) -> None:
        if not fragment_id:
            return
        current = self.auto.get(fragment_id)
        if current is not None and current[0] == interval:
            return
        self._stop_ticker(fragment_id)
        self.auto[fragment_id] = (interval, asyncio.create_task(self._ticker(fragment_id, interval)))

    async def _ticker(self, fragment_id: str, interval: float) -> None:
        """setInterval(() => sendUpdateWidgetsMessage(fragmentId, true), interval * 1000)."""
        with contextlib.suppress(asyncio.CancelledError, Disconnected, websockets.ConnectionClosed):
            while True:
                await asyncio.sleep(interval)
                if not self.alive:
                    return
                self.tick_sent.append(time.monotonic())
                await self._send_rerun(fragment_id=fragment_id, auto=True)

    def _stop_ticker(self, fragment_id: str) -> None:
        entry = self.auto.pop(fragment_id, None)
        if entry is not None:
            entry[1].cancel()

    def _stop_tickers(self) -> None:
        for fid in list(self.auto):
            self._stop_ticker(fid)
        self.tick_sent.clear()

    # ------------------------------------------------------------------ outgoing messages
    def _client_state(self, msg: BackMsg, *, page_hash: str | None, page_name: str, fragment_id: str,
                      auto: bool, states: list[WidgetState], query: str) -> None:
        cs = msg.rerun_script
        cs.query_string = query
        cs.widget_states.widgets.extend(states)
        cs.page_script_hash = self.page_hash if page_hash is None else page_hash
        cs.page_name = page_name
        cs.fragment_id = fragment_id
        cs.is_auto_rerun = auto
        cs.cached_message_hashes.extend(self.cache.keys())
        ctx = cs.context_info
        ctx.timezone, ctx.timezone_offset, ctx.locale = "UTC", 0, "en-US"
        ctx.url = f"{self.base}/{self.url_path}" + (f"?{query}" if query else "")
        ctx.is_embedded, ctx.color_scheme = False, "light"

    async def _send_rerun(self, *, page_hash: str | None = None, page_name: str = "",
                          fragment_id: str = "", auto: bool = False, extra: list[WidgetState] = (),
                          only_main: bool = False, query: str | None = None) -> None:
        if not self.alive:
            raise Disconnected(self.name)
        if only_main:  # a page change keeps only the entry point's widgets (the sidebar toggle)
            ids = {n.widget.id for n in self.nodes.values()
                   if n.widget is not None and n.script_hash == self.main_hash}
            states = [v for k, v in self.values.items() if k in ids]
        else:
            states = list(self.values.values())
        msg = BackMsg()
        self._client_state(msg, page_hash=page_hash, page_name=page_name, fragment_id=fragment_id,
                           auto=auto, states=states + list(extra),
                           query=self.query_string if query is None else query)
        await self.ws.send(msg.SerializeToString())

    async def rerun(self, *, page_hash: str | None = None, page_name: str = "",
                    extra: list[WidgetState] = (), only_main: bool = False,
                    query: str | None = None, timeout: float = INTERACTION_TIMEOUT_S) -> float:
        """Send a whole-page rerun and wait for its script_finished; returns the seconds taken."""
        fut = asyncio.get_running_loop().create_future()
        self.full_waiters.append(fut)
        t0 = time.monotonic()
        await self._send_rerun(page_hash=page_hash, page_name=page_name, extra=extra,
                               only_main=only_main, query=query)
        try:
            done = await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            with contextlib.suppress(ValueError):
                self.full_waiters.remove(fut)
            raise
        return done - t0

    async def pause(self, seconds: float) -> None:
        """Think for `seconds`; a dropped connection ends the pause at once (the frontend
        notices a closed websocket immediately and reconnects in the background)."""
        try:
            await asyncio.wait_for(self.closed.wait(), seconds)
        except asyncio.TimeoutError:
            return
        raise Disconnected(self.name)

    # ------------------------------------------------------------------ what the student sees
    def page_title(self) -> str:
        for title, (h, _) in self.pages.items():
            if h == self.page_hash:
                return title
        return self.page_hash[:8] or "?"

    def widgets(self, kind: str | None = None, label: str | re.Pattern | None = None) -> list[Node]:
        found = []
        for path in sorted(self.nodes):
            node = self.nodes[path]
            if node.widget is None or (kind and node.kind != kind):
                continue
            if label is not None:
                text = node.widget.label
                if isinstance(label, str) and label.lower() not in text.lower():
                    continue
                if isinstance(label, re.Pattern) and not label.search(text):
                    continue
            found.append(node)
        return found

    def texts(self, kind: str | None = None) -> list[str]:
        return [n.text for p, n in sorted(self.nodes.items()) if n.text and (kind is None or n.kind == kind)]

    # ------------------------------------------------------------------ actions
    async def goto(self, title: str) -> float:
        page_hash, url = self.pages[title]
        self.url_path = url
        self.query_string = ""  # the frontend drops the old page's query params on a page change
        return await self.rerun(page_hash=page_hash, only_main=True, query="")

    async def click(self, node: Node) -> float:
        return await self.rerun(extra=[WidgetState(id=node.widget.id, trigger_value=True)])

    async def set_value(self, node: Node, state: WidgetState) -> float:
        self.values[node.widget.id] = state
        return await self.rerun()

    async def download(self, node: Node, timeout: float = 60.0) -> bytes:
        """A download button with deferred data: ask the server for the file's URL, fetch it."""
        request_id = uuid.uuid4().hex
        fut = asyncio.get_running_loop().create_future()
        self.backend[request_id] = fut
        msg = BackMsg()
        msg.backend_operation_request.request_id = request_id
        msg.backend_operation_request.session_id = self.session_id
        msg.backend_operation_request.deferred_file.file_id = node.widget.deferred_file_id
        await self.ws.send(msg.SerializeToString())
        resp = await asyncio.wait_for(fut, timeout)
        if resp.error_msg:
            raise RuntimeError(f"download refused: {resp.error_msg}")
        url = resp.deferred_file.url
        url = url if url.startswith("http") else self.base + "/" + url.lstrip("/")
        return await asyncio.to_thread(_http_get, url, self.cookie)

    async def upload(self, node: Node, name: str, data: bytes, timeout: float = 60.0) -> float:
        """The file uploader's protocol: ask for upload URLs, PUT the file, set the widget's state."""
        request_id = uuid.uuid4().hex
        fut = asyncio.get_running_loop().create_future()
        self.file_urls[request_id] = fut
        msg = BackMsg()
        msg.file_urls_request.request_id = request_id
        msg.file_urls_request.session_id = self.session_id
        msg.file_urls_request.file_names.append(name)
        await self.ws.send(msg.SerializeToString())
        resp = await asyncio.wait_for(fut, timeout)
        if resp.error_msg or not resp.file_urls:
            raise RuntimeError(f"upload refused: {resp.error_msg}")
        urls = resp.file_urls[0]
        upload_url = urls.upload_url if urls.upload_url.startswith("http") else \
            self.base + "/" + urls.upload_url.lstrip("/")
        await asyncio.to_thread(_http_put_file, upload_url, name, data, self.cookie)
        state = WidgetState(id=node.widget.id)
        info = state.file_uploader_state_value.uploaded_file_info.add()
        info.name, info.size, info.file_id = name, len(data), urls.file_id
        info.file_urls.CopyFrom(urls)
        return await self.set_value(node, state)


def _http_get(url: str, cookie: str = "") -> bytes:
    req = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.read()


def _site_cookies(base: str) -> str:
    """The cookies a browser keeps from /_stcore/health (Streamlit's XSRF cookie; behind a load
    balancer, its sticky-session cookie too), as one Cookie header."""
    with urllib.request.urlopen(f"{base}/_stcore/health", timeout=30) as r:
        pairs = [h.split(";", 1)[0].strip() for h in r.headers.get_all("Set-Cookie") or []]
    return "; ".join(p for p in pairs if "=" in p)


def _cookie_value(cookie: str, name: str) -> str:
    for pair in cookie.split(";"):
        key, _, value = pair.strip().partition("=")
        if key == name:
            return value
    return ""


def _http_put_file(url: str, name: str, data: bytes, cookie: str) -> None:
    """PUT a file the way the frontend's uploader does (XSRF cookie echoed in a header)."""
    xsrf = _cookie_value(cookie, "_streamlit_xsrf")
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


# =============================================================================================
# What a student does with a widget
# =============================================================================================


def _nudge_csv(text: str, rng: random.Random) -> str | None:
    """Change one number of an embeddings CSV a little (keeps its shape valid)."""
    rows = list(csv.reader(io.StringIO(text)))
    cells = [(i, j) for i, row in enumerate(rows) for j, cell in enumerate(row)
             if re.fullmatch(r"\s*-?\d+(\.\d+)?\s*", cell)]
    if not cells:
        return None
    i, j = rng.choice(cells)
    value = float(rows[i][j]) + rng.choice([-0.1, 0.1])
    rows[i][j] = f"{max(-1.0, min(1.0, value)):.2f}"
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue().rstrip("\n")


def change_for(node: Node, current: WidgetState | None, rng: random.Random) -> WidgetState | None:
    """A small change a student would make to this widget (None: nothing sensible to do)."""
    w, kind = node.widget, node.kind
    state = WidgetState(id=w.id)
    if kind == "number_input":
        value = current.double_value if current is not None else w.default
        step = w.step or 1.0
        new = value + rng.choice([-1, 1]) * step
        if (w.has_min and new < w.min) or (w.has_max and new > w.max):
            new = value - (new - value)
        if (w.has_min and new < w.min) or (w.has_max and new > w.max):
            return None
        state.double_value = round(new) if w.data_type == 0 else new  # INT inputs stay whole
    elif kind == "checkbox":
        state.bool_value = not (current.bool_value if current is not None else w.default)
    elif kind == "slider":
        if len(w.options) or current is None or not current.double_array_value.data:
            return None
        values = list(current.double_array_value.data)
        step = w.step or 1.0
        new = values[0] + rng.choice([-1, 1]) * step
        if not w.min <= new <= w.max:
            new = values[0] - (new - values[0])
        values[0] = min(max(new, w.min), w.max)
        state.double_array_value.data.extend(values)
    elif kind in ("selectbox", "radio"):
        options = [o for o in w.options if current is None or o != current.string_value]
        if not options:
            return None
        state.string_value = rng.choice(options)
    elif kind == "button_group":
        chosen = set(current.string_array_value.data) if current is not None else set()
        options = [o.content for o in w.options if o.content not in chosen]
        if not options:
            return None
        state.string_array_value.data.append(rng.choice(options))
    elif kind == "text_area":
        text = current.string_value if current is not None else w.default
        new = _nudge_csv(text, rng) if "csv" in w.label.lower() else None
        if new is None or new == text:
            return None
        state.string_value = new
    else:
        return None
    return state


def pick_action(client: Client, rng: random.Random) -> tuple[Node, WidgetState | None] | None:
    """A widget on the page a student would use now, weighted towards Next / Previous."""
    choices, weights = [], []
    for node in client.widgets():
        w = node.widget
        if w.disabled or node.kind in ("download_button", "file_uploader") or AVOID.search(w.label):
            continue
        if node.kind == "button":
            weight = 4.0 if re.search(r"next|previous", w.label, re.I) else 0.5
            choices.append((node, None))
            weights.append(weight)
            continue
        change = change_for(node, client.values.get(w.id), rng)
        if change is not None:
            choices.append((node, change))
            weights.append(2.0 if node.kind == "text_area" else 1.0)
    if not choices:
        return None
    return rng.choices(choices, weights)[0]


# =============================================================================================
# Students and trainers
# =============================================================================================


@dataclass
class Plan:
    seconds: float          # how long each student stays
    think: tuple            # pause between actions (uniform in [min, max] s)
    deadline: float         # monotonic time every student leaves by
    soak_kill_at: float | None = None
    skip_pages: str = ""    # regex of page titles the students never open (to find a page's cost)


async def act(client: Client, stats: Stats, rng: random.Random, plan: Plan) -> None:
    """One action on the current page, timed; errors are recorded, not raised (except disconnect)."""
    picked = pick_action(client, rng)
    if picked is None:
        return
    node, change = picked
    try:
        if change is None:
            took = await client.click(node)
        else:
            took = await client.set_value(node, change)
        stats.interactions.append((node.kind, took))
        if node.kind == "text_area":  # an edited CSV takes effect with its Apply button
            apply = [b for b in client.widgets("button", "Apply") if not b.widget.disabled]
            if apply:
                await asyncio.sleep(rng.uniform(0.5, 2.0))
                stats.interactions.append(("button", await client.click(apply[0])))
    except asyncio.TimeoutError:
        stats.errors.append(f"{client.name}: no answer within {INTERACTION_TIMEOUT_S:.0f} s to "
                            f"{node.kind} '{node.widget.label}' on {client.page_title()}")


async def with_reconnect(client: Client, stats: Stats, plan: Plan, body) -> None:
    """Run `body(client)`; when the connection drops (a server restart), reconnect the way the
    frontend does (retry with backoff, same page, same URL query) and carry on until the deadline.
    Outside a planned restart, a drop is an error."""
    while time.monotonic() < plan.deadline:
        try:
            await body(client)
            return
        except (Disconnected, websockets.ConnectionClosed, OSError) as exc:
            t_drop = time.monotonic()
            planned = plan.soak_kill_at is not None and abs(t_drop - plan.soak_kill_at) < 60
            if not planned:
                stats.errors.append(f"{client.name}: disconnected ({type(exc).__name__})")
            await client.close()
            delay = 0.5
            while time.monotonic() < plan.deadline:
                await asyncio.sleep(delay)
                try:
                    page, query, old_id = client.url_path, client.query_string, client.session_id
                    await client.connect(page, reuse_session=True)
                    stats.reconnects.append(time.monotonic() - (plan.soak_kill_at or t_drop))
                    # what came back: the same session (a blip), or a new one whose page settings
                    # come from the link (the query string), everything else lost
                    kept = stats.soak.setdefault("_reconnected", {
                        "same_session": 0, "new_session": 0, "page_had_settings_in_link": 0,
                        "page_settings_from_link": 0})
                    if client.session_id == old_id:
                        kept["same_session"] += 1
                    else:
                        kept["new_session"] += 1
                        kept["page_had_settings_in_link"] += int(bool(query))
                        kept["page_settings_from_link"] += int(bool(query) and client.query_string == query)
                    break
                except (OSError, websockets.InvalidHandshake, websockets.ConnectionClosed,
                        asyncio.TimeoutError, Disconnected):
                    delay = min(delay * 1.5, 5.0)


async def student(i: int, base: str, stats: Stats, plan: Plan, arrival: float) -> None:
    rng = random.Random(1000 + i)
    await asyncio.sleep(arrival)
    client = Client(f"student {i}", base, stats, rng)
    try:
        t0 = time.monotonic()
        await client.connect("")
        stats.first_render.append(time.monotonic() - t0)

        async def walk(c: Client) -> None:
            while time.monotonic() < plan.deadline:
                titles = [t for t in c.pages if not TRAIN_PAGE.search(t)
                          and not (plan.skip_pages and re.search(plan.skip_pages, t, re.I))] or list(c.pages)
                await c.pause(rng.uniform(*plan.think))
                if time.monotonic() >= plan.deadline:
                    return
                title = rng.choice(titles)
                try:
                    took = await c.goto(title)
                    stats.interactions.append(("page", took))
                except asyncio.TimeoutError:
                    stats.errors.append(f"{c.name}: page {title} did not finish in time")
                for _ in range(rng.randint(2, 5)):
                    await c.pause(rng.uniform(*plan.think))
                    if time.monotonic() >= plan.deadline:
                        return
                    await act(c, stats, rng, plan)

        await with_reconnect(client, stats, plan, walk)
    except Exception as exc:  # noqa: BLE001 - a benchmark counts failures, it does not stop on them
        stats.errors.append(f"student {i}: {type(exc).__name__}: {str(exc)[:160]}")
    finally:
        await client.close()


def train_progress(client: Client) -> tuple[int, int] | None:
    for text in client.texts("progress"):
        m = STEP_TEXT.search(text)
        if m:
            return int(m[1].replace(",", "")), int(m[2].replace(",", ""))
    return None


async def trainer(i: int, base: str, stats: Stats, plan: Plan, arrival: float) -> None:
    """Open the Train page, press Start, watch the run tick; start another when it finishes."""
    rng = random.Random(2000 + i)
    await asyncio.sleep(arrival)
    client = Client(f"trainer {i}" + (f" (class {stats.lesson + 1})" if stats.lesson else ""), base, stats, rng)
    record = stats.trainer_steps.setdefault(client.name, [])
    done_before = 0  # steps of this trainer's finished runs
    last_step = 0
    soak = stats.soak.setdefault(client.name, {})
    try:
        t0 = time.monotonic()
        await client.connect("")
        stats.first_render.append(time.monotonic() - t0)
        title = next(t for t in client.pages if TRAIN_PAGE.search(t))

        async def start_run(c: Client) -> None:
            start = c.widgets("button", re.compile(r"^Start$"))
            if not start:
                raise RuntimeError("no Start button on the Train page")
            took = await c.click(start[0])
            stats.interactions.append(("start", took))

        async def watch(c: Client) -> None:
            nonlocal done_before, last_step
            if c.page_title() != title:
                took = await c.goto(title)
                stats.interactions.append(("page", took))
            if train_progress(c) is None or not c.auto:
                if soak.get("checkpoint") and not soak.get("restored"):
                    await restore(c)
                resume = [b for b in c.widgets("button", re.compile(r"^Resume$")) if not b.widget.disabled]
                if resume:  # the uploaded run goes on from its step
                    stats.interactions.append(("resume", await c.click(resume[0])))
                    if soak.get("restored") and "step_after_resume" not in soak:
                        soak["step_after_resume"] = (train_progress(c) or (None, None))[0]
                else:
                    await start_run(c)
            while time.monotonic() < plan.deadline:
                await c.pause(1.0)
                progress = train_progress(c)
                if progress is None:
                    continue
                step, total = progress
                if step < last_step:  # a new run (or a restart): count what the old one did
                    done_before += last_step
                last_step = step
                record.append((time.monotonic(), done_before + step))
                if plan.soak_kill_at and not soak.get("checkpoint") and \
                        plan.soak_kill_at - 25 < time.monotonic() < plan.soak_kill_at - 2 and step > 0:
                    await save_checkpoint(c, step)
                if step >= total and not c.auto:  # finished: another run with a new seed
                    await c.pause(rng.uniform(*plan.think))
                    seed = c.widgets("number_input", "Seed")
                    if seed:
                        change = change_for(seed[0], c.values.get(seed[0].widget.id), rng)
                        if change is not None:
                            stats.interactions.append(("number_input", await c.set_value(seed[0], change)))
                    await start_run(c)

        async def save_checkpoint(c: Client, step: int) -> None:
            button = c.widgets("download_button", "checkpoint")
            if button and button[0].widget.disabled:
                # the button is drawn by the whole page, not by the ticking fragment: it still
                # shows the state of the page's last full run (step 0). A student reruns the page
                # (R, or any widget) and it is enabled.
                stats.interactions.append(("rerun", await c.rerun()))
                button = c.widgets("download_button", "checkpoint")
            if not button or button[0].widget.disabled:
                soak["no_download_because"] = "no enabled download button"
                return
            try:
                data = await c.download(button[0])
            except Exception as exc:  # noqa: BLE001
                stats.errors.append(f"{c.name}: checkpoint download failed: {exc}")
                return
            soak["checkpoint"], soak["step_shown_before_download"] = data, step
            soak["bytes"] = len(data)
            soak.pop("no_download_because", None)

        async def restore(c: Client) -> None:
            """After the restart: the run is gone; upload the checkpoint and check the step."""
            soak["lost_run_step"] = last_step
            uploader = c.widgets("file_uploader", "checkpoint")
            if not uploader:
                stats.errors.append(f"{c.name}: no checkpoint uploader after the restart")
                return
            try:
                await c.upload(uploader[0], "names-gpt.pt", soak["checkpoint"])
            except Exception as exc:  # noqa: BLE001
                stats.errors.append(f"{c.name}: checkpoint upload failed: {type(exc).__name__}: {exc}")
                return
            # the page drew its run controls before the upload panel added the run: one more
            # rerun and Resume knows about it
            stats.interactions.append(("rerun", await c.rerun()))
            soak["restored"] = True
            soak["upload_s"] = round(time.monotonic() - plan.soak_kill_at, 1)
            soak["upload_message"] = next((t for t in c.texts("alert") if "Loaded" in t), "")[:200]

        await with_reconnect(client, stats, plan, watch)
    except Exception as exc:  # noqa: BLE001
        stats.errors.append(f"trainer {i}: {type(exc).__name__}: {str(exc)[:160]}")
    finally:
        await client.close()


# =============================================================================================
# The server and what it uses
# =============================================================================================


def rss_bytes(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().strip()


def other_processes_cpu(exclude: set[int], top: int = 6) -> list[tuple[str, float]]:
    """Busiest other processes over the last 2 s (what else shared the machine)."""
    def snapshot() -> dict[int, tuple[str, float]]:
        out = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) not in exclude:
                try:
                    comm = (entry / "comm").read_text().strip()
                    out[int(entry.name)] = (comm, cpu_seconds(int(entry.name)))
                except OSError:
                    continue
        return out

    a = snapshot()
    time.sleep(2.0)
    b = snapshot()
    busy = [(f"{b[p][0]}[{p}]", round((b[p][1] - a[p][1]) / 2.0, 2)) for p in b if p in a]
    return sorted([x for x in busy if x[1] > 0.02], key=lambda x: -x[1])[:top]


class Server:
    """`streamlit run streamlit_app.py` on loopback, pinned to `cores`; kill -9 and restart."""

    def __init__(self, port: int, cores: set[int], env: dict, ttl: int):
        self.port, self.cores, self.env, self.ttl = port, cores, env, ttl
        self.proc: subprocess.Popen | None = None
        self.peak = 0
        self.cpu_before = 0.0  # CPU of killed incarnations, summed
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._watch = threading.Thread(target=self._sample, daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> float:
        cores = self.cores
        t0 = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(ROOT / "streamlit_app.py"),
             "--server.port", str(self.port), "--server.address", "127.0.0.1",
             "--server.headless", "true", "--server.disconnectedSessionTTL", str(self.ttl)],
            cwd=ROOT, env={**os.environ, **self.env}, stdout=subprocess.DEVNULL,
            stderr=open(self.env["ATTENTION_LAB_SERVER_LOG"], "a"),
            preexec_fn=lambda: os.sched_setaffinity(0, cores))
        while time.monotonic() - t0 < 90:
            try:
                with urllib.request.urlopen(f"{self.base}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        if not self._watch.is_alive():
                            self._watch.start()
                        return time.monotonic() - t0
            except OSError:
                time.sleep(0.2)
        self.proc.kill()
        raise RuntimeError("the server did not answer within 90 s")

    def kill9(self) -> None:
        self.cpu_before += cpu_seconds(self.proc.pid)
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def rss(self) -> int:
        return rss_bytes(self.proc.pid) if self.proc else 0

    def cpu(self) -> float:
        return self.cpu_before + (cpu_seconds(self.proc.pid) if self.proc else 0.0)

    def _sample(self) -> None:
        while not self._stop.is_set():
            value = self.rss()
            self.peak = max(self.peak, value)
            self.samples.append((time.monotonic(), value))
            time.sleep(0.5)

    def stop(self) -> None:
        self._stop.set()
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# =============================================================================================
# One run of the benchmark
# =============================================================================================


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


async def warm_up(base: str, stats: Stats) -> tuple[Client, float]:
    """One student opens every page once (torch is imported, the shared caches fill)."""
    client = Client("warm-up student", base, stats, random.Random(7))
    await client.connect("")
    for title in list(client.pages):
        await client.goto(title)
    await client.goto(next(iter(client.pages)))
    return client, 0.0


async def one_student_class(args: argparse.Namespace, base: str, stats: Stats, result: dict,
                            server: "Server") -> "Client":
    """The one-student level after a class of one (--baseline-s): one student trains on the Train
    page for half the time, then walks the other pages for the other half, and leaves; after the
    sessions' TTL (--leave-wait) the RSS is read. Beside the level after a single visit of every
    page, this one includes what training and a class's length load for good (PyTorch's autograd
    and optimizer code, the pages' first-use caches), so the class of N is compared with a class of
    one on the same protocol: what remains is what the N students added."""
    half = args.baseline_s / 2
    solo = Stats()  # its clicks are not the class's; its errors are
    for role in (trainer, student):
        plan = Plan(seconds=half, think=tuple(args.think_s), deadline=time.monotonic() + half)
        await role(9000, base, solo, plan, 0.0)
    stats.errors.extend(f"one-student class: {e}" for e in solo.errors)
    steps = solo.trainer_steps.get("trainer 9000", [])
    result["one_student_class_steps"] = steps[-1][1] if steps else 0
    await asyncio.sleep(args.leave_wait)
    result["rss_one_student_class_mb"] = round(server.rss() / 2**20, 1)
    warm = Client("warm-up student", base, stats, random.Random(7))
    await warm.connect("")
    return warm


async def browsers(base: str, count: int, stats: dict, seconds: float) -> None:
    """Real Chromium tabs walking the attention pages (classroom_load's student)."""
    if count <= 0:
        return
    from playwright.async_api import async_playwright

    from benchmarks import classroom_load
    from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        tasks = [asyncio.create_task(classroom_load.student(1000 + b, browser, base, False, seconds,
                                                            (2.0, 6.0), stats)) for b in range(count)]
        await asyncio.gather(*tasks)
        await browser.close()


def browser_cpu(exclude: set[int]) -> float:
    """CPU of this process's descendants except the server (Playwright's driver and Chromium)."""
    from benchmarks.classroom_load import descendants

    return sum(cpu_seconds(p) for p in descendants(os.getpid()) - exclude)


async def classroom(args: argparse.Namespace, server: Server, stats: Stats, result: dict) -> None:
    base = server.base
    warm, _ = await warm_up(base, stats)
    await asyncio.sleep(35.0 if args.memory_probe else 3.0)  # the probe reports every 30 s
    result.setdefault("rss_one_student_mb", round(server.rss() / 2**20, 1))
    if args.baseline_s > 0 and "rss_one_student_class_mb" not in result:
        await warm.close()
        warm = await one_student_class(args, base, stats, result, server)
    n, k = args.students, args.trainers
    start = time.monotonic()
    plan = Plan(seconds=args.duration, think=tuple(args.think_s), deadline=start + args.duration,
                skip_pages=args.skip_pages)
    if args.soak:
        plan.soak_kill_at = start + args.duration / 2
    rng = random.Random(0)
    arrivals = sorted(rng.uniform(0, args.arrival_s) for _ in range(n))
    tasks = []
    for i, arrival in enumerate(arrivals):
        role = trainer if i % max(1, n // max(1, k)) == 0 and i // max(1, n // max(1, k)) < k else student
        tasks.append(asyncio.create_task(role(i, base, stats, plan, arrival)))
    n_trainers = sum(1 for i in range(n) if i % max(1, n // max(1, k)) == 0 and i // max(1, n // max(1, k)) < k)
    result["trainers"] = n_trainers
    browser_stats = {"first_render": [], "latency": [], "errors": [], "trainers_started": 0,
                     "trainer_steps": []}
    if args.browsers:
        tasks.append(asyncio.create_task(browsers(base, args.browsers, browser_stats,
                                                  args.duration - args.arrival_s / 2)))
    if args.soak:
        tasks.append(asyncio.create_task(soak_restart(server, plan, result)))
    cpu0, client_cpu0 = server.cpu(), time.process_time()
    await warm.close()
    done, pending = await asyncio.wait(tasks, timeout=args.duration + 150)
    for task in pending:
        task.cancel()
        stats.errors.append("a client did not stop within its time bound")
    result["wall_s"] = round(time.monotonic() - start, 1)
    result["server_cpu_s"] = round(server.cpu() - cpu0, 1)
    result["sim_cpu_s"] = round(time.process_time() - client_cpu0, 1)
    result["browser"] = browser_stats


async def soak_restart(server: Server, plan: Plan, result: dict) -> None:
    await asyncio.sleep(max(0.0, plan.soak_kill_at - time.monotonic()))
    result["soak_rss_before_kill_mb"] = round(server.rss() / 2**20, 1)
    await asyncio.to_thread(server.kill9)
    t0 = time.monotonic()
    result["soak_restart_s"] = round(await asyncio.to_thread(server.start), 2)
    result["soak_restart_at_s"] = round(t0 - (plan.deadline - 2 * (plan.deadline - plan.soak_kill_at)), 1)
    before = [v for t, v in server.samples if t < plan.soak_kill_at]
    result["soak_peak_rss_before_kill_mb"] = round(max(before, default=0) / 2**20, 1)
    await asyncio.sleep(60)  # every client has reconnected by then
    after = [v for t, v in server.samples if t > t0]
    result["soak_peak_rss_first_minute_after_restart_mb"] = round(max(after, default=0) / 2**20, 1)


def run_once(args: argparse.Namespace) -> dict:
    cores = {int(c) for c in args.server_cores.split(",")}
    client_cores = ({0, 1} - cores) or {1}
    os.sched_setaffinity(0, client_cores)  # this process (and the browsers it starts): the other core
    tmp = Path(tempfile.mkdtemp(prefix="attention-lab-sim-"))
    env = {"ATTENTION_LAB_TIMING_LOG": str(tmp / "runs.tsv"),
           "ATTENTION_LAB_SERVER_LOG": str(tmp / "server.log")}
    if not args.not_hosted:
        env["ATTENTION_LAB_HOSTED"] = "1"
    if args.memory_probe:  # ui/memory_probe.py: one JSON line every 30 s in the server's temp folder
        env["ATTENTION_LAB_MEMORY_PROBE"] = str(tmp / "memory.jsonl")
        if args.memory_probe == "tracemalloc":
            env["PYTHONTRACEMALLOC"] = "1"
    for pair in args.server_env:
        name, _, value = pair.partition("=")
        env[name] = value
    server = Server(free_port(), cores, env, args.session_ttl)
    result: dict[str, Any] = {"students": args.students, "trainers_asked": args.trainers,
                              "duration_s": args.duration, "server_cores": args.server_cores,
                              "client_cores": ",".join(map(str, sorted(client_cores))),
                              "hosted": not args.not_hosted, "think_s": list(args.think_s),
                              "arrival_s": args.arrival_s, "soak": args.soak,
                              "loadavg_before": loadavg(), "server_env": args.server_env,
                              "tmp": str(tmp)}
    stats = Stats()
    busy_before = other_processes_cpu({os.getpid()})
    result["other_busy_before"] = busy_before
    try:
        result["cold_start_s"] = round(server.start(), 2)
        result["rss_idle_cold_mb"] = round(server.rss() / 2**20, 1)
        for lesson in range(args.classes):  # a second class on the same server: a leak grows
            stats.lesson = lesson
            asyncio.run(classroom(args, server, stats, result))
            result["rss_end_of_class_mb"] = round(server.rss() / 2**20, 1)
            if args.leave_wait > 0:  # every student has left; their sessions expire after the TTL
                time.sleep(args.leave_wait)
                result["rss_after_leave_mb"] = round(server.rss() / 2**20, 1)
                result.setdefault("rss_after_each_class_mb", []).append(result["rss_after_leave_mb"])
        result["server_alive"] = server.proc.poll() is None
    finally:
        server.stop()
    result["loadavg_after"] = loadavg()
    result["other_busy_after"] = other_processes_cpu({os.getpid()})
    summarise(result, stats, server, tmp, args)
    return result


def summarise(result: dict, stats: Stats, server: Server, tmp: Path, args: argparse.Namespace) -> None:
    lat = [s for _, s in stats.interactions]
    by_kind: dict[str, list[float]] = {}
    for kind, s in stats.interactions:
        by_kind.setdefault(kind, []).append(s)
    runs = []
    log = tmp / "runs.tsv"
    if log.exists():
        for line in log.read_text().splitlines():
            with contextlib.suppress(ValueError):
                runs.append(float(line.partition("\t")[2]))
    minutes = {}
    for name, points in stats.trainer_steps.items():
        if len(points) >= 2:
            dt = (points[-1][0] - points[0][0]) / 60
            minutes[name] = round((points[-1][1] - points[0][1]) / dt, 1) if dt > 0 else 0.0
        else:
            minutes[name] = 0.0
    one = result.get("rss_one_student_mb")
    after = result.get("rss_after_leave_mb")
    browser = result.pop("browser", {})
    blat = browser.get("latency", [])
    result.update({
        "interactions": len(lat),
        "interaction_median_s": round(statistics.median(lat), 3) if lat else None,
        "interaction_p95_s": round(percentile(lat, 0.95), 3) if lat else None,
        "interaction_max_s": round(max(lat), 3) if lat else None,
        "by_kind": {k: {"n": len(v), "median_s": round(statistics.median(v), 3),
                        "p95_s": round(percentile(v, 0.95), 3)} for k, v in sorted(by_kind.items())},
        "server_runs": len(runs),
        "server_run_median_s": round(statistics.median(runs), 3) if runs else None,
        "server_run_p95_s": round(percentile(runs, 0.95), 3) if runs else None,
        "ticks": len(stats.ticks),
        "tick_median_s": round(statistics.median(stats.ticks), 3) if stats.ticks else None,
        "tick_p95_s": round(percentile(stats.ticks, 0.95), 3) if stats.ticks else None,
        "runs_ended_early": stats.early,
        "first_render_median_s": round(statistics.median(stats.first_render), 3) if stats.first_render else None,
        "steps_per_min": minutes,
        "every_trainer_advances": bool(minutes) and all(v > 0 for v in minutes.values()),
        "peak_rss_mb": round(server.peak / 2**20, 1),
        "after_leave_vs_one_student": round(after / one - 1, 3) if after and one else None,
        "after_leave_vs_one_student_class": (round(after / result["rss_one_student_class_mb"] - 1, 3)
                                             if after and result.get("rss_one_student_class_mb") else None),
        "sim_cpu_per_client": round(result.get("sim_cpu_s", 0) / max(1, args.students)
                                    / max(1e-9, result.get("wall_s", 1)), 4),
        "browsers": args.browsers,
        "browser_clicks": len(blat),
        "browser_click_median_s": round(statistics.median(blat), 3) if blat else None,
        "browser_click_p95_s": round(percentile(blat, 0.95), 3) if blat else None,
        "browser_errors": len(browser.get("errors", [])),
        "app_error_boxes": len(stats.app_errors),
        "errors": len(stats.errors),
    })
    if stats.reconnects:
        result["reconnects"] = len(stats.reconnects)
        result["reconnect_median_s"] = round(statistics.median(stats.reconnects), 2)
        result["reconnect_max_s"] = round(max(stats.reconnects), 2)
    if args.soak:
        result["soak_trainers"] = soak_report(stats)
    result["pass"] = bool(
        result["errors"] == 0 and lat and result["interaction_p95_s"] <= 1.0
        and result["interaction_median_s"] <= 0.2 and result["every_trainer_advances"]
        and result["peak_rss_mb"] <= 1024
        and (after is None or (one and abs(after / one - 1) <= 0.10)))
    result["error_samples"] = stats.errors[:12]
    result["app_error_samples"] = sorted(set(stats.app_errors))[:6]
    result["browser_error_samples"] = browser.get("errors", [])[:4]


def soak_report(stats: Stats) -> list[dict]:
    """Per trainer: the step it had, what it downloaded, what the upload restored (and a check of
    the downloaded bytes with core.checkpoints, outside the app)."""
    from core import runs

    out = []
    for name, soak in sorted(stats.soak.items()):
        if name.startswith("_"):
            out.append({name.strip("_"): soak})
            continue
        entry = {k: v for k, v in soak.items() if k != "checkpoint"}
        data = soak.get("checkpoint")
        if data:
            try:
                run = runs.run_from_checkpoint(data, "names-gpt.pt")
                entry["checkpoint_step"] = run.step
                entry["checkpoint_val_loss"] = (round(run.trainer.last_val_loss, 4)
                                                if run.trainer.last_val_loss is not None else None)
            except Exception as exc:  # noqa: BLE001
                entry["checkpoint_error"] = f"{type(exc).__name__}: {exc}"
        out.append(entry)
    return out


# =============================================================================================
# Inventory, curve, CLI
# =============================================================================================


async def inventory(base: str) -> None:
    stats = Stats()
    client = Client("inventory", base, stats, random.Random(0))
    await client.connect("")
    for title in list(client.pages):
        took = await client.goto(title)
        print(f"== {title} ({took:.2f} s, {len(client.nodes)} nodes, query '{client.query_string[:60]}')")
        for node in client.widgets():
            value = client.values.get(node.widget.id)
            shown = value.WhichOneof("value") if value is not None else None
            print(f"   {node.kind:15} {'(disabled) ' if node.widget.disabled else ''}{node.widget.label[:60]!r}"
                  f" main={node.script_hash == client.main_hash} value={shown}")
    print("errors:", stats.errors[:5])
    await client.close()


def print_row(r: dict) -> None:
    print(f"{r['students']:>4} {r['trainers']:>3} {r['server_cores']:>5} {r['interactions']:>6} "
          f"{r['interaction_median_s']!s:>8} {r['interaction_p95_s']!s:>8} {r['peak_rss_mb']:>8} "
          f"{r.get('rss_after_leave_mb')!s:>8} {r['errors']:>6} {r['every_trainer_advances']!s:>6} "
          f"{r['sim_cpu_per_client']:>7} {r['loadavg_before'].split()[0]:>5}", flush=True)


TABLE_HEADER = (f"{'N':>4} {'K':>3} {'cores':>5} {'inter':>6} {'median':>8} {'p95':>8} {'peakMB':>8} "
                f"{'leaveMB':>8} {'errors':>6} {'adv':>6} {'cpu/cl':>7} {'load':>5}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="protocol-level classroom load test")
    parser.add_argument("--students", type=int, default=60)
    parser.add_argument("--trainers", type=int, default=6)
    parser.add_argument("--duration", type=float, default=600.0, help="seconds the class lasts")
    parser.add_argument("--server-cores", default="0", help="cores of the server: 0 or 0,1")
    parser.add_argument("--browsers", type=int, default=0, help="real Chromium tabs alongside")
    parser.add_argument("--arrival-s", type=float, default=60.0)
    parser.add_argument("--think-s", type=float, nargs=2, default=(2.0, 6.0))
    parser.add_argument("--session-ttl", type=int, default=120,
                        help="server.disconnectedSessionTTL (Streamlit's default 120 s)")
    parser.add_argument("--leave-wait", type=float, default=None,
                        help="seconds to wait after everyone left before reading RSS (default TTL + 40)")
    parser.add_argument("--classes", type=int, default=1,
                        help="classes one after the other on the same server (RSS after each)")
    parser.add_argument("--baseline-s", type=float, default=0.0,
                        help="before the class, a class of one student (trains, then walks the pages) "
                             "for this many seconds; its RSS after leaving is a second one-student level")
    parser.add_argument("--skip-pages", default="", help="regex of page titles students never open")
    parser.add_argument("--not-hosted", action="store_true", help="without the hosted caps")
    parser.add_argument("--curve", action="store_true", help="N = 10, 30, 60, 90 and a table")
    parser.add_argument("--curve-n", type=int, nargs="+", default=[10, 30, 60, 90])
    parser.add_argument("--soak", action="store_true", help="kill -9 the server halfway, restart it")
    parser.add_argument("--inventory", action="store_true", help="print every page's widgets and exit")
    parser.add_argument("--memory-probe", nargs="?", const="on", default="", choices=["", "on", "tracemalloc"],
                        help="the server writes ui/memory_probe.py's report every 30 s (to tmp/memory.jsonl)")
    parser.add_argument("--server-env", nargs="*", default=[], metavar="NAME=VALUE",
                        help="extra environment variables of the server (e.g. MALLOC_ARENA_MAX=2)")
    args = parser.parse_args(argv)
    if args.leave_wait is None:
        args.leave_wait = args.session_ttl + 40

    if args.inventory:
        os.sched_setaffinity(0, {1} if os.cpu_count() > 1 else {0})
        tmp = Path(tempfile.mkdtemp(prefix="attention-lab-sim-"))
        server = Server(free_port(), {0}, {"ATTENTION_LAB_HOSTED": "1",
                                            "ATTENTION_LAB_SERVER_LOG": str(tmp / "server.log")}, 120)
        try:
            server.start()
            asyncio.run(inventory(server.base))
        finally:
            server.stop()
        return 0

    if args.curve:
        rows = []
        for n in args.curve_n:
            sub = argparse.Namespace(**{**vars(args), "students": n, "trainers": max(1, n // 10),
                                        "curve": False})
            r = run_once(sub)
            rows.append(r)
            print(json.dumps({k: r[k] for k in ("students", "trainers", "interaction_median_s",
                                                "interaction_p95_s", "peak_rss_mb", "errors")}), flush=True)
        print(TABLE_HEADER)
        for r in rows:
            print_row(r)
        print(json.dumps({"curve": [{k: r.get(k) for k in (
            "students", "trainers", "server_cores", "duration_s", "interactions", "interaction_median_s",
            "interaction_p95_s", "server_run_p95_s", "tick_p95_s", "peak_rss_mb", "rss_one_student_mb",
            "rss_after_leave_mb", "errors", "every_trainer_advances", "steps_per_min",
            "sim_cpu_per_client", "server_cpu_s", "loadavg_before", "loadavg_after")} for r in rows]}))
        return 0

    result = run_once(args)
    for key, value in result.items():
        if key not in ("error_samples", "by_kind", "soak_trainers"):
            print(f"{key:>28}: {value}")
    for key in ("by_kind", "soak_trainers", "error_samples"):
        if key in result:
            print(f"{key:>28}: {json.dumps(result[key], default=str)[:2000]}")
    print(TABLE_HEADER)
    print_row(result)
    print(json.dumps(result, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
