"""Class mode under load (`--class-mode`): one lecturer, N students in one class, K of them submit runs.

    python benchmarks/student_sim.py --class-mode [--students 60] [--trainers 6] [--duration 300]

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
"""

from __future__ import annotations

import asyncio
import math
import random
import re
import secrets
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl

from streamlit.proto.WidgetStates_pb2 import WidgetState

from benchmarks.classroom_sim.client import Client
from benchmarks.classroom_sim.phases import await_clients, warm_up
from benchmarks.classroom_sim.protocol import FRAGMENT_OK, FULL_OK
from benchmarks.classroom_sim.stats import Plan, Stats
from benchmarks.classroom_sim.trainers import train_progress
from benchmarks.harness import percentile

TOUR = ("simple_attention", "self_attention", "causal_attention", "multi_head", "train_gpt")
TRAIN_URL, CLASS_URL = "train_gpt", "class"
ANSWERED = re.compile(r"\*\*(\d+) of (\d+)\*\* students answered")
LAG_TARGET_S = 2.0  # the "a follower lands / a count shows within 2 s"
BOARD_WAIT_S = 30.0  # a trainer watches the board this long for its entry
END_S = 30.0  # the lecturer ends the tour this long before the deadline, to read the board


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
                element.WhichOneof("type") == "dataframe":
            node = self.nodes.get(tuple(msg.metadata.delta_path))
            if node is not None:
                node.text = board_names(element.dataframe.arrow_data.data)

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
        for text in self.texts("dataframe"):
            if text.startswith("board:"):
                return [n for n in text[len("board:"):].split("\n") if n]
        return None


def board_names(arrow: bytes) -> str:
    """'board:' and the nicknames of a leaderboard table ('' for other tables)."""
    import pyarrow as pa

    table = pa.ipc.open_stream(arrow).read_all()
    if "validation loss" not in table.column_names:
        return ""
    return "board:" + "\n".join(str(n) for n in table.column("nickname").to_pylist())


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
            for url in self.args.tour.split(","):
                if time.monotonic() > self.plan.deadline - END_S:
                    break
                await self.present(url)
            await self.read_board()
        except Exception as exc:  # noqa: BLE001 - a benchmark counts failures, it does not stop on them
            self.stats.errors.append(f"lecturer: {type(exc).__name__}: {str(exc)[:200]}")
            if not code_ready.done():
                code_ready.set_exception(exc)
        finally:
            await c.close()

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

    async def present(self, url: str) -> None:
        """One page, step by step: wait on a poll, reveal it, then Next until the last step."""
        c = self.c
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
async def join(c: ClassClient, code: str, nickname: str, stats: Stats, log: ClassLog) -> None:
    """Open the join link, type the nickname, press Join; checks the page says so."""
    c.query_string = f"class={code}"
    t0 = time.monotonic()
    await c.connect(CLASS_URL)
    stats.first_render.append(time.monotonic() - t0)
    box = one(c, "text_input", "Nickname")
    c.values[box.widget.id] = text_state(box, nickname)  # form fields travel with the submit
    await timed(c, stats, "join", c.click(one(c, "button", re.compile(r"^Join$"))))
    if not any("You are in class" in t for t in c.texts("alert")):
        raise RuntimeError(f"join refused: {c.texts('alert')[:2]}")
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


async def as_member(who: str, c: "ClassClient", stats: Stats, steps) -> None:
    """Run one simulated member's `steps` (a coroutine); any failure is the run's error; the tab closes."""
    try:
        await steps
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

    await as_member(f"student {i}", c, stats, steps())


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
    took = await timed(c, stats, "submit", c.click(ready[0]))
    sent_at = time.monotonic()
    alerts = c.texts("alert")
    entry["submit_s"] = None if took is None else round(took, 3)
    entry["accepted"] = any(t.startswith("Submitted:") for t in alerts)
    entry["message"] = next((t for t in alerts if "Submitted" in t or "Could not" in t), "")[:200]
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

    async def steps() -> None:
        await join(c, code, nickname, stats, log)
        await set_following(c, False, nickname, stats, log)  # to train, a student leaves the lecture
        await timed(c, stats, "page", c.goto(next(t for t, (_, u) in c.pages.items() if u == TRAIN_URL)))
        await answer_poll(c, nickname, rng, plan.think, stats, log)  # Start waits for this answer
        await train_short_run(c, args, plan, stats)
        await submit_run(c, nickname, stats, log)
        await set_following(c, True, nickname, stats, log)
        await follow_and_answer(c, nickname, rng, plan, stats, log)

    await as_member(f"trainer {i}", c, stats, steps())


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
    arrivals = sorted(random.Random(0).uniform(0, args.arrival_s) for _ in range(n))
    for i, arrival in enumerate(arrivals):
        delay = max(0.0, start + arrival - time.monotonic())
        role = (class_trainer(i, server.base, code, stats, plan, log, delay, args) if is_trainer(i, n, k)
                else class_student(i, server.base, code, stats, plan, log, delay))
        tasks.append(asyncio.create_task(role))
    await await_clients(tasks, args, server, stats, result, start, (cpu0, client_cpu0))
    result["browser"] = {}
    result.update(await asyncio.to_thread(class_figures, lecturer.store, log, args))


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
    board_lags = [s["board_lag_s"] for s in accepted if "board_lag_s" in s]
    return {
        "class_mode": True,
        "class_code": log.code,
        "students_joined": len(store.members(log.code)),
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
        "submissions_refused": len(log.submissions) - len(accepted),
        "board_entries_store": len(board),
        "board_entries_shown": len(log.board_shown),
        "board_lag_median_s": rounded(statistics.median(board_lags)) if board_lags else None,
        "board_lag_max_s": rounded(max(board_lags)) if board_lags else None,
        "class_details": {"submissions": log.submissions, "refused_answers": log.refused[:5],
                          "answer_problems": {k: sorted(v)[:5] for k, v in check.items()},
                          "follow_missed_samples": follow["missed_samples"][:5],
                          "moves": [(v, p, s) for _, v, p, s in log.moves]},
    }


def stored_answers(store, code: str) -> dict:
    """(nickname, qid) -> choice, straight from the store's tables."""
    from core.classroom import store as class_db

    sa = class_db.sa
    query = (sa.select(class_db.members.c.nickname, class_db.answers.c.question, class_db.answers.c.choice)
             .join(class_db.members, class_db.members.c.id == class_db.answers.c.member_id)
             .join(class_db.classes, class_db.classes.c.id == class_db.answers.c.class_id)
             .where(class_db.classes.c.code == code))
    with store.engine.connect() as conn:
        rows = conn.execute(query).all()
    found: dict = {}
    for nickname, qid, choice in rows:
        found.setdefault((nickname, qid), []).append(choice)
    return found


def rounded(value: float | None) -> float | None:
    return None if value is None else (value if math.isinf(value) else round(value, 3))


# ------------------------------------------------------------------------------ pure helpers
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
