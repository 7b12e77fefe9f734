"""One simulated browser tab: a websocket client of `/_stcore/stream` that keeps the element tree,
the widget values, the ForwardMsg cache and the `run_every` fragment timers as the frontend does."""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import re
import time
import uuid

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

from benchmarks.classroom_sim.protocol import (
    BUG_BOX,
    COMPILE_ERROR,
    EARLY,
    FRAGMENT_OK,
    FULL_OK,
    INTERACTION_TIMEOUT_S,
    MAX_CACHED_MESSAGE_AGE,
    WIDGET_KINDS,
    Disconnected,
    Node,
    cookie_value,
    http_get,
    http_put_file,
    initial_state,
    site_cookies,
    text_of,
)
from benchmarks.classroom_sim.stats import Stats


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
        # runs in the order their new_session arrived: a click is answered only by a run that
        # started after it was sent, not by an earlier run that happens to finish just after it
        self.run_seq: dict[str, int] = {}
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
            self.cookie = await asyncio.to_thread(site_cookies, self.base)
        xsrf = cookie_value(self.cookie, "_streamlit_xsrf") or "xsrf-unused"
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
            for fut in [f for f, _ in self.full_waiters] + list(self.backend.values()) + list(self.file_urls.values()):
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
            self.run_seq.setdefault(self.run_id, len(self.run_seq) + 1)
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
                node.text = text_of(kind, sub) if sub is not None else ""
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
            node = Node("block", run_id, msg.metadata.active_script_hash, delta.fragment_id)
            block = delta.add_block
            if block.WhichOneof("type") == "popover" and block.popover.id:
                # a popover that tracks its state (key + on_change): opening it is a widget change
                # (ui.walkthrough's Settings: its controls are made only while it is open)
                node.kind, node.widget = "popover", block.popover
                if block.popover.id not in self.values:
                    self.values[block.popover.id] = WidgetState(id=block.popover.id,
                                                                bool_value=bool(block.popover.open))
            self.nodes[path] = node

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
            seq = self.run_seq.get(run_id, math.inf)
            for fut, sent_after in list(self.full_waiters):
                if seq > sent_after and not fut.done():
                    fut.set_result(time.monotonic())
            self.full_waiters = [(f, after) for f, after in self.full_waiters if not f.done()]
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
        waiter = (fut, len(self.run_seq))  # answered by a run whose new_session comes after this
        self.full_waiters.append(waiter)
        t0 = time.monotonic()
        await self._send_rerun(page_hash=page_hash, page_name=page_name, extra=extra,
                               only_main=only_main, query=query)
        try:
            done = await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            with contextlib.suppress(ValueError):
                self.full_waiters.remove(waiter)
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
        return await asyncio.to_thread(http_get, url, self.cookie)

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
        await asyncio.to_thread(http_put_file, upload_url, name, data, self.cookie)
        state = WidgetState(id=node.widget.id)
        info = state.file_uploader_state_value.uploaded_file_info.add()
        info.name, info.size, info.file_id = name, len(data), urls.file_id
        info.file_urls.CopyFrom(urls)
        return await self.set_value(node, state)
