"""Class mode under load (`--class-mode`): one lecturer, N students in one class, K of them submit runs.

    python benchmarks/student_sim.py --class-mode [--students 60] [--trainers 6] [--duration 300] [--soak]

The server runs with a generated lecturer key and a fresh SQLite store in the run's temp folder.

* The lecturer (a protocol client like the students) starts a class on the Class page with the key,
  reads the join code from the page, opens a challenge whose limits a short quick-demo run meets,
  waits while the students arrive (--arrival-s), then tours pages 1-4 and the Train page step by
  step: on a step with a class poll it waits (--poll-s), reveals, then moves on; otherwise it stays
  --step-s. At the end it opens the Class page and reads the leaderboard.
* A student joins with the code and a unique nickname, keeps "Follow the lecturer" on, glances at
  the page every second or so and answers each class poll it is shown (a random choice, after
  thinking --think-s).
* A trainer joins the same way, switches following off, answers the Train page's poll, trains a
  short run (the quick-demo preset cut to --train-steps steps), submits it to the challenge, watches
  the Class page until its entry is on the board, then follows and answers like the others.

Measured: every interaction's latency; errors (exceptions, error boxes, protocol errors); whether
every acknowledged answer is in the store exactly once, with the choice sent (read from the SQLite
file with core.classroom.store after the run); the poll lag (an answer acknowledged -> the
lecturer's live count includes it); the follow lag (the lecturer's move stored -> a following
student's page shows that page and step); submissions accepted / refused and their time to the
board. The pure helpers at the bottom compute the lags and the exactly-once check.

With --soak (issue 25: "a kill -9 of the server mid-class loses no stored answer or submission"),
the server is killed with SIGKILL halfway through the class (--duration / 2) and started again on
the same port, with the same environment: the same lecturer key and ATTENTION_LAB_DATA_DIR, so the
same SQLite file. Every client whose websocket dropped reconnects with backoff (as the frontend
does, and as behaviours.with_reconnect does for the plain --soak); its Streamlit session is new, so
its seat in the class (kept in session state) is gone:

* a student (or trainer) joins again with the code. The store keeps the old member and refuses a
  taken nickname, so it joins as "<nickname>-r1" (log.renamed maps it back); while it is out of
  the class it counts as not following. A trainer whose run was not acknowledged before the kill
  (the run lived in the killed process) trains and submits again if there is time.
* the lecturer takes the class back the way docs/CLASS.md says: the Class page's form with the key
  and the class's join code (Start or reopen), then goes back to the page and step it was on.

Measured on top: every answer and every submission acknowledged BEFORE the kill is in the store
after the restart exactly once, with the choice sent (the loss and parameters shown, for a run);
the answers acknowledged after the restart are stored exactly once too, and there are some (the
class works again, with every member back and the board's runs stored once); the seconds from the
kill to a healthy server, to the lecturer's class back and to the last rejoin; how many rejoined
members the follow panel took to a lesson page again; the errors recorded after the kill. The
targets add these lines (report.SOAK_CLASS_TARGETS).
"""

from __future__ import annotations

import asyncio
import collections
import math
import random
import re
import secrets
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

import websockets
from streamlit.proto.WidgetStates_pb2 import WidgetState

from benchmarks.classroom_sim.client import Client
from benchmarks.classroom_sim.phases import arrival_times, await_clients, warm_up
from benchmarks.classroom_sim.protocol import FRAGMENT_OK, FULL_OK, Disconnected
from benchmarks.classroom_sim.stats import Plan, Stats
from benchmarks.classroom_sim.trainers import train_progress
from benchmarks.harness import percentile

TOUR = ("simple_attention", "self_attention", "causal_attention", "multi_head", "train_gpt")
TRAIN_URL, CLASS_URL = "train_gpt", "class"
ANSWERED = re.compile(r"\*\*(\d+) of (\d+)\*\* students answered")
LAG_TARGET_S = 2.0  # the "a follower lands / a count shows within 2 s"
BOARD_WAIT_S = 30.0  # a trainer watches the board this long for its entry
END_S = 30.0  # the lecturer ends the tour this long before the deadline, to read the board
DROPPED = (Disconnected, websockets.ConnectionClosed, OSError)  # the websocket went away under a client
RECONNECT_FAILED = (OSError, websockets.InvalidHandshake, websockets.ConnectionClosed, asyncio.TimeoutError,
                    Disconnected)  # a reconnect attempt while the server is down
AFTER_KILL_S = 90.0  # a drop this long after the --soak kill still counts as the kill's
SUBMITTED = re.compile(r"Submitted: validation loss ([0-9.]+) with ([0-9,]+) parameters")


# ------------------------------------------------------------------------------ what is recorded
@dataclass
class ClassLog:
    """What the class's clients record (one asyncio thread: no locks)."""

    code: str = ""
    started: float = 0.0                            # wall time the class began (the lecturer's start)
    sent: dict = field(default_factory=dict)        # (nickname, qid) -> choice, shown back as stored
    unconfirmed: set = field(default_factory=set)   # (nickname, qid) sent, never shown back (no
    #                                                 acknowledgement, or the class moved on first)
    refused: list = field(default_factory=list)     # (nickname, qid, message)
    acks: list = field(default_factory=list)        # (monotonic time, qid) of confirmed answers
    views: list = field(default_factory=list)       # the lecturer's counts: (monotonic, qid, count)
    moves: list = field(default_factory=list)       # the lecturer's stored moves: (wall, version, page, settings)
    landings: dict = field(default_factory=dict)    # nickname -> [(wall, page, settings)] per full run
    joined: dict = field(default_factory=dict)      # nickname -> wall time the join was acknowledged
    not_following: dict = field(default_factory=dict)  # nickname -> [[from, to]] wall times, follow off
    submissions: list = field(default_factory=list)  # one dict per trainer
    revealed: list = field(default_factory=list)    # qids the lecturer revealed
    board_shown: list = field(default_factory=list)  # nicknames on the lecturer's last board
    # --soak: the kill -9 and what came back
    sent_at: dict = field(default_factory=dict)     # (nickname, qid) -> wall time the answer was shown back
    kill_wall: float | None = None                  # wall time of the kill -9
    kill_mono: float | None = None                  # the same, monotonic
    restarted_wall: float | None = None             # wall time the restarted server answered /health
    errors_at_kill: int = 0                         # errors + error boxes recorded before the kill
    renamed: dict = field(default_factory=dict)     # nickname joined again after the restart -> the first one
    rejoined: dict = field(default_factory=dict)    # first nickname -> wall time it was in the class again
    retaken: list = field(default_factory=list)     # wall times the lecturer had the class back
    redone: list = field(default_factory=list)      # trainers who trained again (their run was lost)

    def planned_drop(self, now: float) -> bool:
        """A dropped websocket the --soak kill explains (the kill happened, not long ago)."""
        return self.kill_mono is not None and self.kill_mono - 1.0 <= now <= self.kill_mono + AFTER_KILL_S


class ClassClient(Client):
    """A browser tab in class mode: calls `on_finish` after each finished run (whole page or
    fragment) and, with `read_boards`, reads the nicknames out of the leaderboard's table."""

    def __init__(self, *args, on_finish=None, read_boards: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.on_finish = on_finish
        self.read_boards = read_boards

    def _finished(self, msg) -> None:
        super()._finished(msg)
        if self.on_finish is not None and msg.script_finished in (FULL_OK, FRAGMENT_OK):
            self.on_finish(self, msg.script_finished)

    def _delta(self, msg) -> None:
        super()._delta(msg)
        element = msg.delta.new_element
        if self.read_boards and msg.delta.WhichOneof("type") == "new_element" and \
                element.WhichOneof("type") == "table":  # the board is an st.table
            node = self.nodes.get(tuple(msg.metadata.delta_path))
            if node is not None:
                node.text = board_names(element.table.arrow_data.data)

    def page_url(self) -> str:
        for page_hash, url in self.pages.values():
            if page_hash == self.page_hash:
                return url or "home"
        return ""

    def shared_params(self) -> dict:
        """This page's settings as its URL holds them, less the per-browser parameters."""
        from ui.class_follow import LOCAL_PARAMS  # the app's own list (seat, join code, lecture mode)

        return {k: v for k, v in parse_qsl(self.query_string) if k not in LOCAL_PARAMS}

    def board(self) -> list[str] | None:
        """Nicknames on the leaderboard shown now (None: no board on the page)."""
        for text in self.texts("table"):
            if text.startswith("board:"):
                return [n for n in text[len("board:"):].split("\n") if n]
        return None


def board_names(arrow: bytes) -> str:
    """'board:' and the nicknames of a leaderboard table ('' for other tables). The board's cells
    are Markdown (ui.class_challenge.board_frame escapes what students typed): unescaped here."""
    import pyarrow as pa

    table = pa.ipc.open_stream(arrow).read_all()
    if "validation loss" not in table.column_names:
        return ""
    return "board:" + "\n".join(unescape_markdown(str(n)) for n in table.column("nickname").to_pylist())


def unescape_markdown(text: str) -> str:
    """The text core.classroom.security.escape_markdown was given."""
    text = re.sub(r"\\(.)", r"\1", text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def user_key(node) -> str:
    """The key the page gave a widget (its id ends with it: "$$ID-<hash>-<key>")."""
    parts = node.widget.id.split("-", 2)
    return parts[2] if len(parts) == 3 else ""


async def timed(c: Client, stats: Stats, kind: str, action) -> float | None:
    """Await one interaction; its seconds go to the latencies, a timeout to the errors."""
    try:
        took = await action
    except asyncio.TimeoutError:
        stats.errors.append(f"{c.name}: no answer in time to '{kind}' on {c.page_title()}")
        return None
    stats.interactions.append((kind, took))
    return took


def one(c: Client, kind: str, label) -> object:
    """The first enabled widget of this kind and label on the page (an error if there is none)."""
    found = [n for n in c.widgets(kind, label) if not n.widget.disabled]
    if not found:
        raise RuntimeError(f"no enabled {kind} {getattr(label, 'pattern', label)!r} on {c.page_title()}")
    return found[0]


def text_state(node, text: str) -> WidgetState:
    """A text box's (or a radio's) new value, as the frontend sends it."""
    return WidgetState(id=node.widget.id, string_value=text)


# ------------------------------------------------------------------------------ the lecturer
class Lecturer:
    """The lecturer's tab: starts the class, opens the challenge, tours the pages, reveals."""

    def __init__(self, base: str, key: str, stats: Stats, log: ClassLog, store_dir: Path,
                 args, plan: Plan, tour_at: float):
        self.key, self.stats, self.log, self.args, self.plan = key, stats, log, args, plan
        self.store_dir, self.tour_at = store_dir, tour_at
        self.store = None
        self.at = 0  # index of the tour page being presented (where to carry on after a restart)
        self.c = ClassClient("lecturer", base, stats, random.Random(5), on_finish=self.saw,
                             read_boards=True)

    def saw(self, c: Client, status) -> None:
        """After each run: the live count of each poll on the page (for the poll lag)."""
        qids = [user_key(n).split(".", 2)[2] for n in c.widgets("button")
                if user_key(n).startswith(("class.reveal.", "class.hide."))]
        counts = [int(m[1]) for t in c.texts("markdown") for m in [ANSWERED.search(t)] if m]
        now = time.monotonic()
        for qid, count in zip(qids, counts):
            self.log.views.append((now, qid, count))
        board = self.c.board()
        if board is not None:
            self.log.board_shown = board

    async def run(self, code_ready: asyncio.Future) -> None:
        """The whole lecture; the join code goes to `code_ready` as soon as the class exists."""
        c = self.c
        try:
            await c.connect(CLASS_URL)
            code_ready.set_result(await self.start_class())
            await self.open_challenge()
            await self.wait_until(self.tour_at)
            await self.lecture()
        except Exception as exc:  # noqa: BLE001 - a benchmark counts failures, it does not stop on them
            self.stats.errors.append(f"lecturer: {type(exc).__name__}: {str(exc)[:200]}")
            if not code_ready.done():
                code_ready.set_exception(exc)
        finally:
            await c.close()

    async def lecture(self) -> None:
        """The tour and the board; after the --soak kill: take the class back, carry on where it was."""
        urls, resume = self.args.tour.split(","), False
        while True:
            try:
                while self.at < len(urls) and time.monotonic() <= self.plan.deadline - END_S:
                    await self.present(urls[self.at], resume)
                    resume = False
                    self.at += 1
                await self.read_board()
                return
            except DROPPED:
                if not self.log.planned_drop(time.monotonic()):
                    raise
            if not await self.retake():
                return
            resume = True

    async def retake(self) -> bool:
        """After the restart: a new session without the lecturer's seat. Reconnect to the Class page and
        take the class back with the form (the key and the class's join code, Start or reopen)."""
        c = self.c
        if not await reconnect(c, CLASS_URL, "", self.plan, self.stats, self.log):
            self.stats.errors.append("lecturer: the server did not come back before the end of the class")
            return False
        key = one(c, "text_input", "Lecturer key")
        code = one(c, "text_input", "Join code of a class you started")
        c.values[key.widget.id] = text_state(key, self.key)  # form fields: sent with the submit
        c.values[code.widget.id] = text_state(code, self.log.code)
        await timed(c, self.stats, "retake class", c.click(one(c, "button", "Start or reopen")))
        shown = next((t.partition("=")[2] for t in c.texts("metric") if t.startswith("Join code=")), "")
        if shown != self.log.code:
            raise RuntimeError(f"the class was not taken back (join code shown {shown!r}, "
                               f"{c.texts('alert')[:2]})")
        self.log.retaken.append(time.time())
        await self.record_move()
        return True

    async def start_class(self) -> str:
        """Type the key, press Start, read the join code the projector card shows."""
        c = self.c
        box = one(c, "text_input", "Lecturer key")
        c.values[box.widget.id] = text_state(box, self.key)  # a form field: sent with the submit
        await timed(c, self.stats, "start class", c.click(one(c, "button", "Start or reopen")))
        code = next((t.partition("=")[2] for t in c.texts("metric") if t.startswith("Join code=")), "")
        if not code:
            raise RuntimeError("no join code on the lecturer's page")
        from core.classroom import store as class_db  # the server's store, read from its file

        self.store = class_db.open_store(class_db.default_url(self.store_dir))
        self.log.code = code
        await self.record_move()
        return code

    async def open_challenge(self) -> None:
        c = self.c
        for label, value in (("Most parameters", self.args.max_params),
                             ("Most seconds of training", self.args.max_seconds)):
            box = one(c, "text_input", label)
            await timed(c, self.stats, "challenge limit", c.set_value(box, text_state(box, str(value))))
        await timed(c, self.stats, "open challenge", c.click(one(c, "button", "Open the challenge")))
        if not c.widgets("button", "Close the challenge"):
            self.stats.errors.append(f"lecturer: the challenge did not open ({c.texts('alert')[:2]})")

    async def record_move(self) -> None:
        """The lecturer's place as the store holds it now (version and the server's time)."""
        state = await asyncio.to_thread(self.store.lecturer_state, self.log.code)
        if not self.log.moves or self.log.moves[-1][1] != state.version:
            self.log.moves.append((state.updated_at, state.version, state.page, dict(state.settings)))

    async def wait_until(self, when: float) -> None:
        await self.c.pause(max(0.0, when - time.monotonic()))

    async def goto_url(self, url: str) -> None:
        title = next(t for t, (_, u) in self.c.pages.items() if u == url)
        await timed(self.c, self.stats, "lecturer page", self.c.goto(title))
        await self.record_move()

    async def goto_place(self, url: str, settings: dict) -> None:
        """Open `url` with these settings in its link (a lecturer back after a restart: the step it was on)."""
        self.c.url_path, self.c.query_string = url, urlencode(settings)
        await timed(self.c, self.stats, "lecturer page", self.c.rerun(page_name=url, page_hash=""))
        await self.record_move()

    async def present(self, url: str, resume: bool = False) -> None:
        """One page, step by step: wait on a poll, reveal it, then Next until the last step
        (`resume`: back on the step it had published last on this page, if any)."""
        c = self.c
        last = next((m for m in reversed(self.log.moves) if m[2] == url), None) if resume else None
        if last is not None:
            await self.goto_place(url, last[3])
        else:
            await self.goto_url(url)
        while time.monotonic() < self.plan.deadline - END_S:
            reveal = [n for n in c.widgets("button") if user_key(n).startswith("class.reveal.")]
            if reveal:
                await c.pause(self.args.poll_s)
                qid = user_key(reveal[0])[len("class.reveal."):]
                await timed(c, self.stats, "reveal", c.click(reveal[0]))
                self.log.revealed.append(qid)
                await c.pause(self.args.step_s / 2)  # the class reads the split
            else:
                await c.pause(self.args.step_s)
            nxt = [n for n in c.widgets("button", re.compile(r"^Next")) if user_key(n).endswith(".next")]
            if not nxt or nxt[0].widget.disabled or time.monotonic() > self.plan.deadline - END_S:
                return
            await timed(c, self.stats, "lecturer next", c.click(nxt[0]))
            await self.record_move()

    async def read_board(self) -> None:
        """The Class page at the end: wait (until the deadline) for every trainer's entry."""
        await self.goto_url(CLASS_URL)
        while time.monotonic() < self.plan.deadline:
            if len(self.c.board() or []) >= self.args.trainers_here:
                break
            await self.c.pause(0.5)
        self.log.board_shown = self.c.board() or []


# ------------------------------------------------------------------------------ students
async def join(c: ClassClient, code: str, nickname: str, stats: Stats, log: ClassLog,
               again: bool = False) -> None:
    """Open the join link, type the nickname, press Join; checks the page says so (`again`: after
    the restart, the tab is already on the join link; the join time is the first one's)."""
    if not again:
        c.query_string = f"class={code}"
        t0 = time.monotonic()
        await c.connect(CLASS_URL)
        stats.first_render.append(time.monotonic() - t0)
    box = one(c, "text_input", "Nickname")
    c.values[box.widget.id] = text_state(box, nickname)  # form fields travel with the submit
    await timed(c, stats, "join", c.click(one(c, "button", re.compile(r"^Join$"))))
    # joined: the Class page says so, or the follow panel already took the student to the lecturer's
    # page (a class that has started), whose sidebar names the class
    if not (any("You are in class" in t for t in c.texts("alert"))
            or f"**Class {code}**" in c.texts("markdown")):
        raise RuntimeError(f"join refused: {c.texts('alert')[:2]}")
    if not again:
        log.joined[nickname] = time.time()


def poll_radios(c: Client) -> list:
    return [n for n in c.widgets("radio", "Your answer") if user_key(n).startswith("class.poll.")]


async def answer_poll(c: Client, nickname: str, rng: random.Random, think: tuple, stats: Stats,
                      log: ClassLog) -> None:
    """Answer the poll on the page (if any, and not answered yet): think, choose, send."""
    radios = poll_radios(c)
    if not radios:
        return
    qid = user_key(radios[0])[len("class.poll."):]
    if (nickname, qid) in log.sent:
        stats.errors.append(f"{c.name}: asked again after answering {qid}")
        return
    await c.pause(rng.uniform(*think))
    radios = [n for n in poll_radios(c) if user_key(n) == f"class.poll.{qid}"]
    if not radios:
        return  # the lecturer moved on (or revealed) meanwhile
    choice = rng.choice(list(radios[0].widget.options))
    if radios[0].widget.form_id:  # in a form, as the app has it: the choice stays in the browser
        c.values[radios[0].widget.id] = text_state(radios[0], choice)
    else:
        await timed(c, stats, "poll choice", c.set_value(radios[0], text_state(radios[0], choice)))
    send = [n for n in c.widgets("button", "Send my answer")
            if user_key(n) == f"class.send.{qid}" and not n.widget.disabled]
    if not send:
        return
    log.unconfirmed.add((nickname, qid))
    if await timed(c, stats, "send answer", c.click(send[0])) is None:
        return  # no acknowledgement: the store may or may not hold it
    if any(user_key(n) == f"class.poll.{qid}" for n in poll_radios(c)):
        log.unconfirmed.discard((nickname, qid))
        log.refused.append((nickname, qid, "; ".join(c.texts("alert"))[:200]))
    elif choice in c.texts("text") or any(t.startswith("You answered") for t in c.texts("alert")):
        log.unconfirmed.discard((nickname, qid))  # the page shows the answer back: it was stored
        log.sent[(nickname, qid)] = choice
        log.sent_at[(nickname, qid)] = time.time()
        log.acks.append((time.monotonic(), qid))
    # else the lecturer moved the class on before the page showed it: stored or not, it cannot tell


def landing_recorder(log: ClassLog, nickname: str):
    """on_finish of a student: where each whole-page run left them (for the follow lag)."""
    landings = log.landings.setdefault(nickname, [])

    def record(c: ClassClient, status) -> None:
        if status == FULL_OK:
            landings.append((time.time(), c.page_url(), c.shared_params()))
    return record


async def follow_and_answer(c: Client, nickname: str, rng: random.Random, plan: Plan, stats: Stats,
                            log: ClassLog) -> None:
    """A following student: glance at the page about once a second, answer the polls shown."""
    while time.monotonic() < plan.deadline:
        await c.pause(rng.uniform(0.6, 1.4))
        await answer_poll(c, nickname, rng, plan.think, stats, log)


async def as_member(who: str, c: "ClassClient", stats: Stats, steps, log: ClassLog | None = None,
                    again=None) -> None:
    """Run one simulated member's `steps` (a coroutine); any failure is the run's error; the tab closes.
    A drop the --soak kill explains runs `again()` instead (reconnect, join again, carry on)."""
    try:
        body = steps
        while True:
            try:
                await body
                break
            except DROPPED:
                if again is None or log is None or not log.planned_drop(time.monotonic()):
                    raise
                body = again()
    except Exception as exc:  # noqa: BLE001
        stats.errors.append(f"{who}: {type(exc).__name__}: {str(exc)[:200]}")
    finally:
        await c.close()


async def class_student(i: int, base: str, code: str, stats: Stats, plan: Plan, log: ClassLog,
                        arrival: float) -> None:
    rng = random.Random(1000 + i)
    await asyncio.sleep(arrival)
    nickname = f"student-{i:02d}"
    c = ClassClient(f"student {i}", base, stats, rng, on_finish=landing_recorder(log, nickname))

    async def steps() -> None:
        await join(c, code, nickname, stats, log)
        await follow_and_answer(c, nickname, rng, plan, stats, log)

    async def again() -> None:
        now = await come_back(c, code, nickname, plan, stats, log)
        if now is not None:
            await follow_and_answer(c, now, rng, plan, stats, log)

    await as_member(f"student {i}", c, stats, steps(), log, again)


async def reconnect(c: Client, url: str, query: str, plan: Plan, stats: Stats, log: ClassLog) -> bool:
    """After a drop: connect again until the deadline, retrying with backoff (0.5 s, x1.5, at most
    5 s) as the frontend and behaviours.with_reconnect do. The server was restarted, so the session
    is a new one. True once a page was served (the seconds since the kill go to the reconnects)."""
    await c.close()
    delay = 0.5
    while time.monotonic() < plan.deadline:
        await asyncio.sleep(delay)
        c.query_string = query
        try:
            await c.connect(url, reuse_session=True)  # the frontend offers its old session id
        except RECONNECT_FAILED:
            await c.close()
            delay = min(delay * 1.5, 5.0)
            continue
        stats.reconnects.append(time.monotonic() - (log.kill_mono or time.monotonic()))
        return True
    return False


async def come_back(c: ClassClient, code: str, nickname: str, plan: Plan, stats: Stats,
                    log: ClassLog) -> str | None:
    """After the kill: reconnect to the join link and join again. The store keeps the first member
    and refuses a taken nickname, so the student joins under another one (rejoin_nickname). Until
    then it is out of the class: not following. Returns the nickname in the class now (None: the
    server was not back before the end)."""
    periods = log.not_following.setdefault(nickname, [])
    opened = not periods or periods[-1][1] != math.inf  # a trainer may have switched following off already
    if opened:
        periods.append([log.kill_wall or time.time(), math.inf])
    if not await reconnect(c, CLASS_URL, f"class={code}", plan, stats, log):
        stats.errors.append(f"{c.name}: the server did not come back before the end of the class")
        return None
    if any("You are in class" in t for t in c.texts("alert")):
        return current_nickname(nickname, log.renamed)  # the seat survived (the same session)
    now = rejoin_nickname(nickname, log.renamed)
    await join(c, code, now, stats, log, again=True)
    log.renamed[now] = nickname
    log.rejoined[nickname] = time.time()
    if opened:
        periods[-1][1] = time.time()
    return now


# ------------------------------------------------------------------------------ trainers
async def set_following(c: Client, on: bool, nickname: str, stats: Stats, log: ClassLog) -> None:
    toggle = one(c, "checkbox", "Follow the lecturer")
    periods = log.not_following.setdefault(nickname, [])
    if not on:
        periods.append([time.time(), math.inf])
    await timed(c, stats, "follow toggle", c.set_value(toggle, WidgetState(id=toggle.widget.id, bool_value=on)))
    if on and periods:
        periods[-1][1] = time.time()


async def train_short_run(c: Client, args, plan: Plan, stats: Stats) -> None:
    """The quick-demo preset cut to --train-steps steps; Start; watch until it is done."""
    await timed(c, stats, "preset", c.click(one(c, "button", re.compile(r"^quick demo", re.I))))
    if args.train_steps:
        box = one(c, "text_input", re.compile(r"^Steps$"))
        await timed(c, stats, "steps", c.set_value(box, text_state(box, str(args.train_steps))))
    await timed(c, stats, "start", c.click(one(c, "button", re.compile(r"^Start$"))))
    while time.monotonic() < plan.deadline - END_S:
        await c.pause(1.0)
        progress = train_progress(c)
        if progress and progress[0] >= progress[1]:
            return
    pause = [n for n in c.widgets("button", re.compile(r"^Pause$")) if not n.widget.disabled]
    if pause:  # out of time: pause and submit what there is
        await timed(c, stats, "pause", c.click(pause[0]))


async def submit_run(c: ClassClient, nickname: str, stats: Stats, log: ClassLog) -> None:
    """Press Submit (after a whole-page run enables it) and watch the Class page's board."""
    entry = {"nickname": nickname, "accepted": False}
    log.submissions.append(entry)
    for _ in range(10):  # the button is drawn by the whole page: rerun until the run is done
        await timed(c, stats, "rerun", c.rerun())
        ready = [n for n in c.widgets("button", "Submit this run") if not n.widget.disabled]
        if ready:
            break
        await c.pause(1.0)
    else:
        entry["message"] = "the submit button stayed disabled"
        return
    entry["pending"] = True  # until the page answers (a kill meanwhile: stored or not, it cannot tell)
    took = await timed(c, stats, "submit", c.click(ready[0]))
    entry.pop("pending")
    sent_at = time.monotonic()
    alerts = c.texts("alert")
    entry["submit_s"] = None if took is None else round(took, 3)
    entry["accepted"] = any(t.startswith("Submitted:") for t in alerts)
    if entry["accepted"]:
        entry["acked_at"] = time.time()
    said = ("Submitted", "Not entered", "already on the board", "Could not", "Something went wrong")
    entry["message"] = next((t for t in alerts if any(s in t for s in said)), "")[:200]
    if not entry["accepted"]:
        return
    await timed(c, stats, "page", c.goto(next(t for t, (_, u) in c.pages.items() if u == CLASS_URL)))
    while time.monotonic() - sent_at < BOARD_WAIT_S:
        if nickname in (c.board() or []):
            entry["board_lag_s"] = round(time.monotonic() - sent_at, 3)
            return
        await c.pause(0.2)


async def class_trainer(i: int, base: str, code: str, stats: Stats, plan: Plan, log: ClassLog,
                        arrival: float, args) -> None:
    rng = random.Random(2000 + i)
    await asyncio.sleep(arrival)
    nickname = f"trainer-{i:02d}"
    c = ClassClient(f"trainer {i}", base, stats, rng, on_finish=landing_recorder(log, nickname),
                    read_boards=True)

    async def train_and_submit(now: str) -> None:  # `now`: the nickname in the class now
        await set_following(c, False, nickname, stats, log)  # to train, a student leaves the lecture
        await timed(c, stats, "page", c.goto(next(t for t, (_, u) in c.pages.items() if u == TRAIN_URL)))
        await answer_poll(c, now, rng, plan.think, stats, log)  # Start waits for this answer
        await train_short_run(c, args, plan, stats)
        await submit_run(c, now, stats, log)
        await set_following(c, True, nickname, stats, log)

    async def steps() -> None:
        await join(c, code, nickname, stats, log)
        await train_and_submit(nickname)
        await follow_and_answer(c, nickname, rng, plan, stats, log)

    async def again() -> None:
        """After the kill: join again; a run not acknowledged before the kill died with the server:
        train and submit it again if the class has time left, else follow."""
        now = await come_back(c, code, nickname, plan, stats, log)
        if now is None:
            return
        mine = [e for e in log.submissions if log.renamed.get(e["nickname"], e["nickname"]) == nickname]
        for entry in mine:
            if entry.pop("pending", False):
                entry["lost_in_kill"] = "sent, no answer"  # the store may or may not hold it
            elif not entry["accepted"] and "message" not in entry:
                entry["lost_in_kill"] = "not sent"
        if not any(e["accepted"] for e in mine) and plan.deadline - time.monotonic() > END_S + 30:
            log.redone.append(nickname)
            await train_and_submit(now)
        elif not following_between(log.not_following.get(nickname, []), time.time(), time.time()):
            await set_following(c, True, nickname, stats, log)
        await follow_and_answer(c, now, rng, plan, stats, log)

    await as_member(f"trainer {i}", c, stats, steps(), log, again)


# ------------------------------------------------------------------------------ one class
def server_env(tmp: Path) -> tuple[dict, str, Path]:
    """The server's class-mode settings: a generated lecturer key, a fresh SQLite store folder."""
    key = secrets.token_urlsafe(24)
    store_dir = tmp / "classroom"
    return {"ATTENTION_LAB_LECTURER_KEY": key, "ATTENTION_LAB_DATA_DIR": str(store_dir)}, key, store_dir


def is_trainer(i: int, n: int, k: int) -> bool:
    """K trainers spread evenly over the arrivals (as in the default run)."""
    every = max(1, n // max(1, k))
    return k > 0 and i % every == 0 and i // every < k


async def class_session(args, server, stats: Stats, result: dict, key: str, store_dir: Path) -> None:
    """The whole class: warm-up, lecturer, arrivals, and the figures read from the store."""
    warm, _ = await warm_up(server.base, stats)
    await asyncio.sleep(3.0)
    result.setdefault("rss_one_student_mb", round(server.rss() / 2**20, 1))
    await warm.close()
    n, k = args.students, args.trainers
    args.trainers_here = sum(is_trainer(i, n, k) for i in range(n))
    result["trainers"] = args.trainers_here
    start = time.monotonic()
    plan = Plan(seconds=args.duration, think=tuple(args.think_s), deadline=start + args.duration)
    if args.soak:
        plan.soak_kill_at = start + args.duration / 2
    log = ClassLog()
    lecturer = Lecturer(server.base, key, stats, log, store_dir, args, plan, start + args.arrival_s)
    code_ready = asyncio.get_running_loop().create_future()
    cpu0, client_cpu0 = server.cpu(), time.process_time()
    log.started = time.time()
    tasks = [asyncio.create_task(lecturer.run(code_ready))]
    try:
        code = await asyncio.wait_for(code_ready, 120)
    except Exception as exc:  # noqa: BLE001 - no class, no students: the figures say so
        stats.errors.append(f"no class started: {type(exc).__name__}: {exc}")
        tasks[0].cancel()
        result.update(class_figures(None, log, args))
        return
    # (until 2026-11-27 a new generator per student gave them all the same time: 60 at once, ~50 s in)
    arrivals = arrival_times(n, args.arrival_s)
    for i, arrival in enumerate(arrivals):
        delay = max(0.0, start + arrival - time.monotonic())
        role = (class_trainer(i, server.base, code, stats, plan, log, delay, args) if is_trainer(i, n, k)
                else class_student(i, server.base, code, stats, plan, log, delay))
        tasks.append(asyncio.create_task(role))
    if args.soak:
        tasks.append(asyncio.create_task(kill_and_restart(server, plan, stats, log, result, start)))
    await await_clients(tasks, args, server, stats, result, start, (cpu0, client_cpu0))
    result["browser"] = {}
    result.update(await asyncio.to_thread(class_figures, lecturer.store, log, args))
    if args.soak:
        result["soak_errors_after_kill"] = (len(stats.errors) + len(stats.app_errors) - log.errors_at_kill
                                            if log.kill_mono is not None else None)


async def kill_and_restart(server, plan: Plan, stats: Stats, log: ClassLog, result: dict, start: float) -> None:
    """--soak: kill -9 the server at plan.soak_kill_at and start it again (SimServer keeps the port
    and the environment: the same lecturer key, the same ATTENTION_LAB_DATA_DIR and SQLite file)."""
    await asyncio.sleep(max(0.0, plan.soak_kill_at - time.monotonic()))
    result["soak_rss_before_kill_mb"] = round(server.rss() / 2**20, 1)
    log.errors_at_kill = len(stats.errors) + len(stats.app_errors)
    log.kill_mono, log.kill_wall = time.monotonic(), time.time()
    await asyncio.to_thread(server.kill9)
    result["soak_kill_at_s"] = round(log.kill_mono - start, 1)
    try:
        await asyncio.to_thread(server.start)
    except RuntimeError as exc:
        stats.errors.append(f"the server did not start again after the kill: {str(exc)[-300:]}")
        return
    log.restarted_wall = time.time()
    result["soak_restart_s"] = round(time.monotonic() - log.kill_mono, 2)  # kill -> /health answers


# ------------------------------------------------------------------------------ the figures
def class_figures(store, log: ClassLog, args) -> dict:
    """Every class-mode figure of the run, from the log and the store's file."""
    if store is None:
        return {"class_mode": True, "class_started": False}
    stored = stored_answers(store, log.code)
    check = exactly_once(log.sent, stored, log.unconfirmed)
    tallies: dict[str, dict[str, int]] = {}
    for (_, qid), choice in log.sent.items():
        tallies.setdefault(qid, {}).setdefault(choice, 0)
        tallies[qid][choice] += 1
    counts_match = all(store.poll(log.code, qid).counts == tally for qid, tally in tallies.items()
                       if not any(q == qid for _, q in log.unconfirmed))
    poll = poll_lags(log.acks, log.views)
    follow = follow_lags(log.moves, log.landings, log.joined, log.not_following)
    challenge = store.current_challenge(log.code)
    board = store.leaderboard(log.code, challenge.id) if challenge else []
    accepted = [s for s in log.submissions if s["accepted"]]
    lost = [s for s in log.submissions if "lost_in_kill" in s]
    board_lags = [s["board_lag_s"] for s in accepted if "board_lag_s" in s]
    soak = {} if log.kill_wall is None else soak_figures(store, log, stored)
    return {
        "class_mode": True,
        "class_code": log.code,
        "students_joined": len([m for m in store.members(log.code) if m.nickname not in log.renamed]),
        "last_join_after_s": round(max(log.joined.values()) - log.started, 1) if log.joined else None,
        "polls_revealed": len(log.revealed),
        "answers_confirmed": len(log.sent),
        "answers_unconfirmed": len(log.unconfirmed),
        "answers_refused": len(log.refused),
        "answers_missing": len(check["missing"]),
        "answers_wrong_choice": len(check["wrong"]),
        "answers_extra": len(check["extra"]),
        "poll_counts_match": counts_match,
        "answers_counted_once": bool(log.sent) and not any(check.values()) and counts_match,
        "poll_lag_n": len(poll["lags"]),
        "poll_lag_median_s": rounded(statistics.median(poll["lags"])) if poll["lags"] else None,
        "poll_lag_p95_s": rounded(p95_with_missed(poll["lags"], poll["missed"])),
        "poll_lag_missed": poll["missed"],
        "poll_lag_unmeasured": poll["unmeasured"],
        "lecturer_moves": len(log.moves),
        "follow_lag_n": len(follow["lags"]),
        "follow_lag_median_s": rounded(statistics.median(follow["lags"])) if follow["lags"] else None,
        "follow_lag_p95_s": rounded(p95_with_missed(follow["lags"], follow["missed"])),
        "follow_lag_missed": follow["missed"],
        "submissions_accepted": len(accepted),
        "submissions_refused": len(log.submissions) - len(accepted) - len(lost),
        "board_entries_store": len(board),
        "board_entries_shown": len(log.board_shown),
        "board_lag_median_s": rounded(statistics.median(board_lags)) if board_lags else None,
        "board_lag_max_s": rounded(max(board_lags)) if board_lags else None,
        "class_details": {"submissions": log.submissions, "refused_answers": log.refused[:5],
                          "answer_problems": {k: sorted(v)[:5] for k, v in check.items()},
                          "follow_missed_samples": follow["missed_samples"][:5],
                          # which moves were missed, and by how many (a stall, or one move for all?)
                          "follow_missed_by_version": dict(sorted(collections.Counter(
                              version for _, version, _, _ in follow["missed_samples"]).items())),
                          "moves": [(v, p, s) for _, v, p, s in log.moves]},
        **soak,
    }


def soak_figures(store, log: ClassLog, stored: dict) -> dict:
    """--soak: what the store holds after the kill -9 and the restart, against what the pages had
    acknowledged before the kill (and after the restart), and how long the class took to come back."""
    answers_before, answers_after = split_at(log.sent, log.sent_at, log.kill_wall)
    before = exactly_once(answers_before, stored, set())
    after = exactly_once(answers_after, stored, set())
    runs_before, runs_after = split_at(acknowledged_runs(log.submissions), {
        e["nickname"]: e["acked_at"] for e in log.submissions if e.get("acked_at")}, log.kill_wall)
    runs_stored = stored_runs(store, log.code)
    runs = runs_kept(runs_before, runs_stored)
    at_kill = [n for n, t in log.joined.items() if t < log.kill_wall]
    since_kill = lambda t: None if t is None else round(t - log.kill_wall, 1)  # noqa: E731
    back = not any(runs_kept(runs_after, runs_stored).values())  # runs submitted after the restart
    return {
        "soak_members_at_kill": len(at_kill),
        "soak_rejoined": len(log.rejoined),
        "soak_not_back": sorted(set(at_kill) - set(log.rejoined))[:10],
        "soak_server_back_after_s": since_kill(log.restarted_wall),
        "soak_lecturer_back_after_s": since_kill(log.retaken[0] if log.retaken else None),
        "soak_last_rejoin_after_s": since_kill(max(log.rejoined.values(), default=None)),
        "soak_trainers_redone": len(log.redone),
        "soak_followers_back": len(followers_back(log.landings, log.rejoined)),
        "soak_answers_before_kill": len(answers_before),
        "soak_answers_before_kill_missing": len(before["missing"]),
        "soak_answers_before_kill_wrong": len(before["wrong"]),
        "soak_answers_before_kill_kept": bool(answers_before) and not before["missing"] and not before["wrong"],
        "soak_submissions_before_kill": len(runs_before),
        "soak_submissions_before_kill_problems": {k: sorted(v) for k, v in runs.items() if v},
        "soak_submissions_before_kill_kept": bool(runs_before) and not any(runs.values()),
        "soak_answers_after_restart": len(answers_after),
        "soak_answers_after_restart_missing": len(after["missing"]),
        "soak_answers_after_restart_wrong": len(after["wrong"]),
        "soak_submissions_after_restart": len(runs_after),
        "soak_class_works_after_restart": (bool(log.retaken) and bool(answers_after) and not after["missing"]
                                           and not after["wrong"] and back
                                           and set(log.rejoined) >= set(at_kill)),
        "soak_details": {"renamed": log.renamed, "retaken_after_s": [since_kill(t) for t in log.retaken],
                         "landings_after_rejoin": {n: [(since_kill(t), p) for t, p, _ in runs if t > log.kill_wall][:4]
                                                   for n, runs in list(log.landings.items())[:4]}},
    }


def class_rows(store, code: str, table_name: str, *column_names: str) -> list:
    """(nickname, *columns) of every row of `table_name` (answers, submissions) whose member is in
    the class `code`, straight from the store's tables."""
    from core.classroom import store as class_db

    sa, table = class_db.sa, getattr(class_db, table_name)
    query = (sa.select(class_db.members.c.nickname, *(table.c[name] for name in column_names))
             .join(class_db.members, class_db.members.c.id == table.c.member_id)
             .join(class_db.classes, class_db.classes.c.id == class_db.members.c.class_id)
             .where(class_db.classes.c.code == code))
    with store.engine.connect() as conn:
        return conn.execute(query).all()


def stored_runs(store, code: str) -> dict:
    """nickname -> [(val_loss, n_params)] of the class's submissions."""
    found: dict = {}
    for nickname, val_loss, n_params in class_rows(store, code, "submissions", "val_loss", "n_params"):
        found.setdefault(nickname, []).append((round(float(val_loss), 4), int(n_params)))
    return found


def stored_answers(store, code: str) -> dict:
    """(nickname, qid) -> [choice], the class's stored answers."""
    found: dict = {}
    for nickname, qid, choice in class_rows(store, code, "answers", "question", "choice"):
        found.setdefault((nickname, qid), []).append(choice)
    return found


def rounded(value: float | None) -> float | None:
    return None if value is None else (value if math.isinf(value) else round(value, 3))


# ------------------------------------------------------------------------------ pure helpers
def followers_back(landings: dict, rejoined: dict) -> set:
    """Members who, after joining again, landed on some page other than the Class page (the follow
    panel took them to the lecturer): the class's following works again for them."""
    return {n for n, t in rejoined.items() if any(when > t and page != CLASS_URL for when, page, _ in landings.get(n, []))}


def rejoin_nickname(nickname: str, renamed: dict) -> str:
    """The nickname a member joins again with after a restart: the store keeps the first member and
    refuses a taken nickname, so "<nickname>-r<n>" (n: 1 + how often it joined again already)."""
    again = sum(1 for first in renamed.values() if first == nickname)
    return f"{nickname}-r{again + 1}"


def current_nickname(nickname: str, renamed: dict) -> str:
    """The nickname a member (first joined as `nickname`) has in the class now."""
    later = [now for now, first in renamed.items() if first == nickname]
    return later[-1] if later else nickname


def split_at(acked: dict, acked_at: dict, when: float) -> tuple[dict, dict]:
    """Split acknowledged items (key -> value) into those acknowledged before `when` and after
    (by acked_at: key -> wall time; an item without a time counts as before)."""
    before = {k: v for k, v in acked.items() if acked_at.get(k, -math.inf) < when}
    return before, {k: v for k, v in acked.items() if k not in before}


def submitted_figures(message: str) -> tuple[float, int] | None:
    """(validation loss, parameters) of the page's "Submitted: ..." message (None: not one)."""
    found = SUBMITTED.search(message or "")
    return None if found is None else (round(float(found[1].rstrip(".")), 4), int(found[2].replace(",", "")))


def acknowledged_runs(submissions: list) -> dict:
    """nickname -> (val_loss, n_params) of each accepted submission, as its page showed them."""
    out = {}
    for entry in submissions:
        figures = submitted_figures(entry.get("message", "")) if entry.get("accepted") else None
        if figures is not None:
            out[entry["nickname"]] = figures
    return out


def runs_kept(acked: dict, stored: dict) -> dict:
    """Acknowledged runs (nickname -> (val_loss, n_params)) against the store's (nickname ->
    [(val_loss, n_params)]). Missing: no row; wrong: one row, other figures; twice: more than one."""
    missing = {n for n in acked if not stored.get(n)}
    twice = {n for n in acked if len(stored.get(n, [])) > 1}
    wrong = {n for n in acked if len(stored.get(n, [])) == 1 and stored[n][0] != acked[n]}
    return {"missing": missing, "wrong": wrong, "twice": twice}


def exactly_once(sent: dict, stored: dict, unconfirmed: set) -> dict:
    """Compare the answers sent (confirmed by the page, the last per student and question) with the
    store's rows ((nickname, qid) -> [choices]). Missing: sent, not stored; wrong: stored with
    another choice (or more than one row); extra: stored, never sent (an unconfirmed send may or
    may not be stored)."""
    missing = {key for key in sent if key not in stored}
    wrong = {key for key in sent if key in stored and stored[key] != [sent[key]]}
    extra = {key for key in stored if key not in sent and key not in unconfirmed}
    return {"missing": missing, "wrong": wrong, "extra": extra}


def poll_lags(acks: list, views: list, target: float = LAG_TARGET_S) -> dict:
    """Per confirmed answer: seconds until a lecturer view of that poll, finished after the answer,
    shows a count at least as large as the answers confirmed by then (counts are anonymous: that
    is the count that includes it). Measured only for answers given while the lecturer showed the
    poll (between its first and last view of it; a trainer answers the Train page's poll long
    before the lecturer opens it). None such although the lecturer still showed the poll `target`
    seconds later: missed; the lecturer left sooner: unmeasured."""
    lags, missed, unmeasured = [], 0, 0
    for t_ack, qid in acks:
        times = [t for t, q, _ in views if q == qid]
        if not times or not times[0] <= t_ack <= times[-1]:
            unmeasured += 1
            continue
        needed = sum(1 for t, q in acks if q == qid and t <= t_ack)
        later = [(t, count) for t, q, count in views if q == qid and t > t_ack]
        shown = next((t for t, count in later if count >= needed), None)
        if shown is not None:
            lags.append(shown - t_ack)
        elif later[-1][0] > t_ack + target:
            missed += 1
        else:
            unmeasured += 1
    return {"lags": lags, "missed": missed, "unmeasured": unmeasured}


def follow_lags(moves: list, landings: dict, joined: dict, not_following: dict,
                target: float = LAG_TARGET_S, slack: float = 5.0) -> dict:
    """Per lecturer move and following student: seconds from the move being stored to the first
    whole-page run that left the student on that page with those settings. Counted only for
    students who had joined before the move and followed until the next one, and only for moves the
    lecturer stayed on for `target` s (a follower may skip a step the lecturer left sooner); a
    student who never landed before the next move (+ `slack` s) counts as missed."""
    lags, missed, samples = [], 0, []
    for index, (t_move, version, page, settings) in enumerate(moves):
        until = moves[index + 1][0] if index + 1 < len(moves) else math.inf
        if until - t_move < target:
            continue
        until += slack
        for nickname, runs in landings.items():
            if joined.get(nickname, math.inf) > t_move or \
                    not following_between(not_following.get(nickname, []), t_move, until):
                continue
            landed = next((t for t, p, s in runs if t_move <= t <= until and p == page and s == settings), None)
            if landed is None:
                missed += 1
                samples.append((nickname, version, page, settings))
            else:
                lags.append(landed - t_move)
    return {"lags": lags, "missed": missed, "missed_samples": samples}


def following_between(periods_off: list, start: float, end: float) -> bool:
    """True when no period with following switched off overlaps [start, end]."""
    return not any(off <= end and on >= start for off, on in periods_off)


def p95_with_missed(lags: list, missed: int) -> float | None:
    """The 95th percentile with each missed case counted as never (infinitely late)."""
    values = list(lags) + [math.inf] * missed
    return percentile(values, 0.95) if values else None
