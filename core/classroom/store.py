"""Class mode's storage: classes, members, poll answers, reveals, challenges and submissions.

One small module over SQLAlchemy Core, so the same code runs on
* SQLite (the default): one file in a folder (`ATTENTION_LAB_DATA_DIR`, default `./.classroom`),
  in WAL mode (readers never wait for the writer) with a busy timeout (writers queue instead of
  failing); a committed answer survives a `kill -9` of the server (tests/classroom/test_store.py);
* PostgreSQL, for several replicas of the app: a URL in `ATTENTION_LAB_DB_URL`, or the Streamlit
  secret `[connections.classroom] url` that the page reads and passes to `open_store(url)`.

The schema is versioned: the table `schema_version` holds the version this database is at, and
`migrate` applies the steps in MIGRATIONS above it, in order, in one transaction (so a database is
never half-migrated). A new version is a new function appended to MIGRATIONS.

Rules kept here, whatever page calls:
* only the lecturer's token (returned once by `create_class`) moves the class, reveals, opens or
  closes challenges, hides entries or deletes the class;
* a member acts only as themself (their token), answers once per question (answering again
  replaces the answer), and is rate limited; a member who leaves takes their answers and
  submissions with them;
* a run enters a challenge once per step: the same member's entry with the same steps, parameter
  count and training seconds is refused (`AlreadyEntered`), also when two submissions of it race
  (a double click, two tabs; on PostgreSQL the member's row is locked for the check);
* an expired class is as good as gone (`purge_expired` deletes its rows).
Every refusal is a `ClassroomError` (a ValueError) whose message can be shown as is.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import logging
import math
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from core.classroom.security import (CODE_LENGTH, AlreadyEntered, ClassroomError, NotAllowed, RateLimited, RateLimiter, class_ttl_s,
                                     clean_nickname, code_problem, new_join_code, new_token, nickname_key,
                                     normalize_code, token_hash, token_matches)

log = logging.getLogger(__name__)

DB_URL_ENV = "ATTENTION_LAB_DB_URL"  # a database URL (PostgreSQL for replicas); overrides the folder
DATA_DIR_ENV = "ATTENTION_LAB_DATA_DIR"  # the folder of the SQLite file
DEFAULT_DATA_DIR = "./.classroom"
SQLITE_FILE = "classroom.sqlite3"
BUSY_TIMEOUT_MS = 15_000  # a SQLite writer waits this long for the lock before failing
QUESTION_PATTERN = re.compile(r"^[A-Za-z0-9_.:/-]{1,80}$")  # poll ids the pages use, e.g. "p3.mask"
MAX_CHOICE_CHARS = 200
MAX_STATE_BYTES = 20_000  # the lecturer's published page/step/settings, as JSON
ANSWERS_PER_MINUTE = 30  # per member
PULSE_MAX_AGE_S = 0.25  # followers of one class share a read of the lecturer's place this long
MAX_PULSES = 1_000  # classes whose last pulse this process keeps
SUBMISSIONS_PER_10_MIN = 5  # per member, counted in the database (every replica sees them all)
SUBMISSION_WINDOW_S = 600.0

# =============================================================================================
# Schema
# =============================================================================================

metadata = sa.MetaData()

schema_version = sa.Table(
    "schema_version", metadata,
    sa.Column("id", sa.Integer, primary_key=True),  # always 1: one row
    sa.Column("version", sa.Integer, nullable=False),
)

classes = sa.Table(
    "classes", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("code", sa.String(16), nullable=False, unique=True),
    sa.Column("lecturer_hash", sa.String(64), nullable=False),  # SHA-256 of the lecturer's token
    sa.Column("created_at", sa.Float, nullable=False),  # Unix seconds
    sa.Column("expires_at", sa.Float, nullable=False),
    sa.Column("state_json", sa.Text, nullable=False, default="{}"),  # {"page", "step", "settings"}
    sa.Column("state_version", sa.Integer, nullable=False, default=0),  # +1 per lecturer move
    sa.Column("state_at", sa.Float, nullable=False, default=0.0),
)

members = sa.Table(
    "members", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("class_id", sa.Integer, sa.ForeignKey("classes.id", ondelete="CASCADE"), nullable=False),
    sa.Column("nickname", sa.String(255), nullable=False),  # as shown (cleaned)
    sa.Column("nickname_key", sa.String(255), nullable=False),  # case-folded, for uniqueness
    sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("joined_at", sa.Float, nullable=False),
    sa.UniqueConstraint("class_id", "nickname_key", name="uq_member_nickname"),
)

answers = sa.Table(
    "answers", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("class_id", sa.Integer, sa.ForeignKey("classes.id", ondelete="CASCADE"), nullable=False),
    sa.Column("member_id", sa.Integer, sa.ForeignKey("members.id", ondelete="CASCADE"), nullable=False),
    sa.Column("question", sa.String(80), nullable=False),
    sa.Column("choice", sa.String(MAX_CHOICE_CHARS), nullable=False),
    sa.Column("answered_at", sa.Float, nullable=False),
    sa.UniqueConstraint("member_id", "question", name="uq_answer_once"),
    sa.Index("ix_answers_class_question", "class_id", "question"),
)

reveals = sa.Table(
    "reveals", metadata,
    sa.Column("class_id", sa.Integer, sa.ForeignKey("classes.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("question", sa.String(80), primary_key=True),
    sa.Column("revealed_at", sa.Float, nullable=False),
)

challenges = sa.Table(
    "challenges", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("class_id", sa.Integer, sa.ForeignKey("classes.id", ondelete="CASCADE"), nullable=False),
    sa.Column("title", sa.String(200), nullable=False),
    sa.Column("max_params", sa.Integer, nullable=False),
    sa.Column("max_seconds", sa.Float, nullable=False),
    sa.Column("is_open", sa.Boolean, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("closed_at", sa.Float, nullable=True),
)

submissions = sa.Table(
    "submissions", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("challenge_id", sa.Integer, sa.ForeignKey("challenges.id", ondelete="CASCADE"), nullable=False),
    sa.Column("member_id", sa.Integer, sa.ForeignKey("members.id", ondelete="CASCADE"), nullable=False),
    sa.Column("val_loss", sa.Float, nullable=False),  # computed by the server (core.classroom.challenge)
    sa.Column("n_params", sa.Integer, nullable=False),
    sa.Column("steps", sa.Integer, nullable=False),
    sa.Column("seconds", sa.Float, nullable=False),
    sa.Column("settings_json", sa.Text, nullable=False),  # the run's TrainSettings, for a link
    sa.Column("samples_json", sa.Text, nullable=False),  # five names sampled by the server
    sa.Column("hidden", sa.Boolean, nullable=False, default=False),
    sa.Column("submitted_at", sa.Float, nullable=False),
    sa.Index("ix_submissions_challenge", "challenge_id"),
)

V1_TABLES = (classes, members, answers, reveals, challenges, submissions)

# Which browser holds a seat: the hash of the browser's desk token (ui.desk's cookie, a random
# secret). A student whose session was lost with the server (a restart, a redeploy) takes the seat
# back from their browser's cookie, instead of finding their nickname taken by their old self.
member_desks = sa.Table(
    "member_desks", metadata,
    sa.Column("member_id", sa.Integer, sa.ForeignKey("members.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("desk_hash", sa.String(64), nullable=False),
    sa.Index("ix_member_desks_desk", "desk_hash"),
)


def _migrate_to_1(conn: Connection) -> None:
    """Version 1: every table of class mode."""
    metadata.create_all(conn, tables=list(V1_TABLES))


def _migrate_to_2(conn: Connection) -> None:
    """Version 2: the browser each seat was taken from (member_desks)."""
    metadata.create_all(conn, tables=[member_desks])


# MIGRATIONS[i] takes version i to i + 1
MIGRATIONS: list[Callable[[Connection], None]] = [_migrate_to_1, _migrate_to_2]
SCHEMA_VERSION = len(MIGRATIONS)


def migrate(engine: Engine) -> int:
    """Bring the database to SCHEMA_VERSION (one transaction); returns the version it was at."""
    with _write(engine) as conn:
        if conn.dialect.name == "postgresql":
            # Two replicas starting at once: the second waits here, then finds the work done.
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(7262031)"))
        metadata.create_all(conn, tables=[schema_version])
        found = conn.execute(sa.select(schema_version.c.version).where(schema_version.c.id == 1)).scalar()
        if found is None:
            conn.execute(schema_version.insert().values(id=1, version=0))
            found = 0
        if found > SCHEMA_VERSION:
            raise RuntimeError(f"the class database has schema version {found}; this app knows up to "
                               f"{SCHEMA_VERSION} (update the app)")
        for version in range(found, SCHEMA_VERSION):
            MIGRATIONS[version](conn)
        conn.execute(schema_version.update().where(schema_version.c.id == 1).values(version=SCHEMA_VERSION))
    return found


# =============================================================================================
# Engines: one per URL and process
# =============================================================================================

_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()


def default_url(data_dir: str | os.PathLike | None = None) -> str:
    """ATTENTION_LAB_DB_URL if set, else a SQLite file in `data_dir` / ATTENTION_LAB_DATA_DIR / ./.classroom."""
    url = os.environ.get(DB_URL_ENV, "").strip()
    if url and data_dir is None:
        return url
    folder = Path(data_dir or os.environ.get(DATA_DIR_ENV) or DEFAULT_DATA_DIR).expanduser().resolve()
    return f"sqlite:///{folder / SQLITE_FILE}"


def normalize_url(url: str) -> str:
    """`postgres://` and `postgresql://` (what hosts hand out) use psycopg 3, the driver installed."""
    url = str(url).strip()
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


def get_engine(url: str) -> Engine:
    """The engine for `url`, made once per process (its pool is shared by every session)."""
    url = normalize_url(url)
    with _engines_lock:
        engine = _engines.get(url)
        if engine is None:
            engine = _make_engine(url)
            migrate(engine)
            _engines[url] = engine
        return engine


def dispose_engine(url: str) -> None:
    """Close the pooled connections of `url` (tests; a deleted database)."""
    with _engines_lock:
        engine = _engines.pop(normalize_url(url), None)
    if engine is not None:
        engine.dispose()


def _make_engine(url: str) -> Engine:
    parsed = sa.engine.make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(parsed)
    if parsed.get_backend_name() != "postgresql":
        raise ClassroomError(f"class mode stores its data in SQLite or PostgreSQL, not {parsed.get_backend_name()}")
    # A class of 60 is a handful of short queries per second: a small pool per replica is plenty.
    return sa.create_engine(parsed, pool_size=5, max_overflow=20, pool_timeout=30, pool_pre_ping=True)


def _sqlite_engine(parsed: sa.engine.URL) -> Engine:
    if parsed.database and parsed.database != ":memory:":
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    # Connections to a SQLite file are cheap; enough of them that 60 sessions rarely wait for one.
    engine = sa.create_engine(parsed, pool_size=10, max_overflow=60, pool_timeout=30,
                              connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record):
        dbapi_connection.isolation_level = None  # we emit BEGIN ourselves (below)
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        # In WAL mode NORMAL keeps every commit through a crash of the server process (kill -9);
        # only a power cut or OS crash can lose the last commits. FULL (an fsync per commit) made
        # 60 students answering at once 2.5x slower.
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn):
        # A write takes the lock at BEGIN (IMMEDIATE) so it queues on busy_timeout, instead of
        # failing when a read transaction later tries to become a write.
        write = conn.get_execution_options().get("classroom_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine


@contextlib.contextmanager
def _write(engine: Engine) -> Iterator[Connection]:
    """`with _write(engine) as conn:` one write transaction, committed at the end (rolled back on error)."""
    with engine.connect().execution_options(classroom_write=True) as conn, conn.begin():
        yield conn


# =============================================================================================
# What the store returns
# =============================================================================================


@dataclass(frozen=True)
class ClassInfo:
    """A class as the pages see it (no secrets)."""

    id: int
    code: str  # the join code
    created_at: float  # Unix seconds
    expires_at: float


@dataclass(frozen=True)
class Member:
    """A student in a class."""

    id: int
    class_id: int
    nickname: str  # cleaned; always shown as plain text
    joined_at: float


@dataclass(frozen=True)
class LecturerState:
    """Where the lecturer is: the followers go there."""

    version: int  # +1 per move; 0 = never moved
    page: str  # a page's url path, e.g. "causal-attention"; "" before the first move
    step: int | None
    settings: dict  # the lesson's settings as URL query parameters (core.settings.to_params)
    updated_at: float


@dataclass(frozen=True)
class ClassPulse:
    """What every follower checks once a second: where the lecturer is and what is revealed."""

    lecturer: LecturerState
    revealed: frozenset[str]  # the questions revealed to everyone
    read_at: float  # time.monotonic() of the database read it comes from
    expires_at: float  # the class's end (the store's clock): a pulse is never served after it


@dataclass(frozen=True)
class PollCounts:
    """The class's answers to one question."""

    question: str
    counts: dict[str, int]  # choice -> number of members who chose it
    revealed: bool

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass(frozen=True)
class Challenge:
    id: int
    class_id: int
    title: str
    max_params: int
    max_seconds: float
    is_open: bool
    created_at: float
    closed_at: float | None


@dataclass(frozen=True)
class Submission:
    """One evaluated submission (all numbers computed by the server)."""

    id: int
    challenge_id: int
    member_id: int
    nickname: str
    val_loss: float
    n_params: int
    steps: int
    seconds: float
    settings: dict
    samples: list[str]
    hidden: bool
    submitted_at: float


# =============================================================================================
# The store
# =============================================================================================


class ClassroomStore:
    """Every class-mode operation, on one database. Thread-safe. Make one per process and URL (the
    pages cache it): its answer limiter must see every session; the engine is shared per URL anyway.

    `submission_limit` is (submissions, seconds) per member: counted from the stored submissions
    in the write that stores one, so it holds across replicas and server restarts."""

    def __init__(self, url: str | None = None, *, clock: Callable[[], float] = time.time,
                 answer_limiter: RateLimiter | None = None,
                 submission_limit: tuple[int, float] = (SUBMISSIONS_PER_10_MIN, SUBMISSION_WINDOW_S)):
        self.url = normalize_url(url or default_url())
        self.engine = get_engine(self.url)
        self.clock = clock
        self.answer_limiter = answer_limiter or RateLimiter(ANSWERS_PER_MINUTE, 60, "answers")
        if submission_limit[0] < 1 or not submission_limit[1] > 0:
            raise ValueError("a submission limit needs at least 1 submission in a positive number of seconds")
        self.submission_limit = (int(submission_limit[0]), float(submission_limit[1]))
        # code -> the last ClassPulse read: 60 followers ticking once a second share one read
        self._pulses: dict[str, ClassPulse] = {}
        self._pulse_lock = threading.Lock()
        # called with a class's code after a move, reveal or deletion made through this store (the
        # server wakes that class's followers at once: server/class_push.py); never raises into a write
        self.pulse_listeners: list[Callable[[str], None]] = []

    @property
    def backend(self) -> str:
        """"sqlite" or "postgresql"."""
        return self.engine.dialect.name

    # -- classes ---------------------------------------------------------------------------------

    def create_class(self, ttl_s: float | None = None) -> tuple[ClassInfo, str]:
        """A new class and the lecturer's token (keep it in the lecturer's session; it is the only
        way to act as this class's lecturer, and it is not stored in readable form)."""
        ttl_s = class_ttl_s() if ttl_s is None else float(ttl_s)
        if not ttl_s > 0:
            raise ClassroomError("A class must last a positive time.")
        token, now = new_token(), self.clock()
        for _ in range(20):  # a repeated code is astronomically rare; try another
            code = new_join_code()
            try:
                with _write(self.engine) as conn:
                    class_id = conn.execute(classes.insert().values(
                        code=code, lecturer_hash=token_hash(token), created_at=now, expires_at=now + ttl_s,
                        state_json="{}", state_version=0, state_at=now)).inserted_primary_key[0]
                return ClassInfo(int(class_id), code, now, now + ttl_s), token
            except IntegrityError:
                continue
        raise ClassroomError("Could not make a new join code; try again.")

    def find_class(self, code: str) -> ClassInfo | None:
        """The live class with this join code (as typed), or None (no such class, or expired)."""
        code = normalize_code(code)
        if not code:
            return None
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(classes).where(classes.c.code == code)).first()
        if row is None or row.expires_at <= self.clock():
            return None
        return ClassInfo(row.id, row.code, row.created_at, row.expires_at)

    def is_lecturer(self, code: str, lecturer_token: str | None) -> bool:
        """True if `lecturer_token` is this live class's lecturer token."""
        with self.engine.connect() as conn:
            row = self._class_row(conn, code, missing_ok=True)
        return row is not None and token_matches(lecturer_token, row.lecturer_hash)

    def replace_lecturer_token(self, code: str) -> str:
        """A new lecturer token for a live class (the old one stops working). The page calls it only
        after checking the server's lecturer key, e.g. when the lecturer's browser lost its session."""
        token = new_token()
        with _write(self.engine) as conn:
            row = self._class_row(conn, code)
            conn.execute(classes.update().where(classes.c.id == row.id).values(lecturer_hash=token_hash(token)))
        return token

    def delete_class(self, code: str, lecturer_token: str) -> None:
        """Delete the class and everything in it (members, answers, challenges, submissions)."""
        with _write(self.engine) as conn:
            row = self._lecturer_row(conn, code, lecturer_token)
            _delete_classes(conn, [row.id])
        self._forget_pulse(code)

    def purge_expired(self) -> int:
        """Delete every expired class with all its rows; returns how many classes went."""
        with _write(self.engine) as conn:
            ids = [r.id for r in conn.execute(sa.select(classes.c.id).where(classes.c.expires_at <= self.clock()))]
            _delete_classes(conn, ids)
        return len(ids)

    # -- members -----------------------------------------------------------------------------------

    def join(self, code: str, nickname: str, desk: str | None = None) -> tuple[Member, str]:
        """Join the class with a nickname; returns the member and their token (kept in their session).
        `desk`: the browser's desk token, kept as a hash so the seat can be taken back from the same
        browser after the server lost the session (reclaim_seat).
        ClassroomError: no such class, a refused nickname, or one already taken in this class."""
        nickname = clean_nickname(nickname)
        token, now = new_token(), self.clock()
        try:
            with _write(self.engine) as conn:
                row = self._class_row(conn, code)
                member_id = conn.execute(members.insert().values(
                    class_id=row.id, nickname=nickname, nickname_key=nickname_key(nickname),
                    token_hash=token_hash(token), joined_at=now)).inserted_primary_key[0]
                if desk:
                    conn.execute(member_desks.insert().values(member_id=member_id, desk_hash=token_hash(desk)))
        except IntegrityError:
            # The nickname is not repeated: messages are shown as Markdown, a nickname only ever as text.
            raise ClassroomError("Someone in this class already has that nickname; pick another.") from None
        return Member(int(member_id), row.id, nickname, now), token

    def reclaim_seat(self, desk: str) -> tuple[str, Member, str] | None:
        """The seat this browser (its desk token) took last in a class still running, with a new
        member token (the old one, held by a session the server lost, stops working): (the class's
        code, the member, the token), or None. A seat left (leave) or removed with its class is gone."""
        if not desk:
            return None
        with _write(self.engine) as conn:
            found = conn.execute(
                sa.select(members, classes.c.code).join(member_desks, member_desks.c.member_id == members.c.id)
                .join(classes, classes.c.id == members.c.class_id)
                .where(member_desks.c.desk_hash == token_hash(desk), classes.c.expires_at > self.clock())
                .order_by(members.c.joined_at.desc()).limit(1)).first()
            if found is None:
                return None
            token = new_token()
            conn.execute(members.update().where(members.c.id == found.id).values(token_hash=token_hash(token)))
        return found.code, Member(found.id, found.class_id, found.nickname, found.joined_at), token

    def leave(self, code: str, member_token: str) -> None:
        """The member leaves the class (their own token says who): their seat goes, and with it
        everything they sent: their poll answers (no longer counted, revealed or not) and their
        challenge submissions (off the board). Their nickname is free again. NotAllowed when the
        token holds no seat in this class; ClassroomError when the class is gone."""
        with _write(self.engine) as conn:
            member = self._member_row(conn, code, member_token)
            conn.execute(submissions.delete().where(submissions.c.member_id == member.id))
            conn.execute(answers.delete().where(answers.c.member_id == member.id))
            conn.execute(member_desks.delete().where(member_desks.c.member_id == member.id))
            conn.execute(members.delete().where(members.c.id == member.id))

    def member(self, code: str, member_token: str | None) -> Member | None:
        """The member holding `member_token` in this live class, or None."""
        with self.engine.connect() as conn:
            row = self._member_row(conn, code, member_token, missing_ok=True)
        return None if row is None else Member(row.id, row.class_id, row.nickname, row.joined_at)

    def members(self, code: str) -> list[Member]:
        """Everyone in the class, in joining order."""
        with self.engine.connect() as conn:
            row = self._class_row(conn, code)
            rows = conn.execute(sa.select(members).where(members.c.class_id == row.id).order_by(members.c.id))
            return [Member(r.id, r.class_id, r.nickname, r.joined_at) for r in rows]

    # -- follow the lecturer -----------------------------------------------------------------------

    def publish_state(self, code: str, lecturer_token: str, page: str, step: int | None = None,
                      settings: dict | None = None) -> LecturerState:
        """The lecturer moved (page, step, lesson settings): followers go there."""
        payload = {"page": str(page)[:100], "step": None if step is None else int(step),
                   "settings": {str(k)[:64]: str(v)[:2000] for k, v in (settings or {}).items()}}
        state_json = json.dumps(payload, sort_keys=True)
        if len(state_json) > MAX_STATE_BYTES:
            raise ClassroomError("These settings are too large to publish to the class.")
        now = self.clock()
        with _write(self.engine) as conn:
            row = self._lecturer_row(conn, code, lecturer_token)
            conn.execute(classes.update().where(classes.c.id == row.id).values(
                state_json=state_json, state_version=classes.c.state_version + 1, state_at=now))
            version = conn.execute(sa.select(classes.c.state_version).where(classes.c.id == row.id)).scalar_one()
        self._forget_pulse(code)
        return LecturerState(version, payload["page"], payload["step"], payload["settings"], now)

    def lecturer_state(self, code: str) -> LecturerState:
        """Where the lecturer is now (version 0: nowhere yet)."""
        with self.engine.connect() as conn:
            return _lecturer_state(self._class_row(conn, code))

    def pulse(self, code: str, max_age_s: float = PULSE_MAX_AGE_S) -> ClassPulse:
        """The lecturer's place and the revealed questions, read at most `max_age_s` ago.

        Every following student's page asks this once a second; in a class of 60 that was 60-120
        database reads a second on the server's one core. They now share one read per
        `max_age_s` per class and process. A move or reveal made through this process is seen at
        once (those writes forget the pulse); one made on another replica, at most `max_age_s`
        later. A class that ended raises ClassroomError, never from the cache."""
        key = normalize_code(code)
        now = time.monotonic()
        with self._pulse_lock:
            cached = self._pulses.get(key)
        if cached is not None and now - cached.read_at <= max_age_s and self.clock() < cached.expires_at:
            return cached
        with self.engine.connect() as conn:
            row = self._class_row(conn, code)
            revealed = frozenset(q for (q,) in conn.execute(
                sa.select(reveals.c.question).where(reveals.c.class_id == row.id)))
        fresh = ClassPulse(_lecturer_state(row), revealed, now, row.expires_at)
        with self._pulse_lock:
            if len(self._pulses) >= MAX_PULSES:  # classes that ended stay out of memory
                self._pulses.clear()
            self._pulses[key] = fresh
        return fresh

    def _forget_pulse(self, code: str) -> None:
        """The class's pulse changed: the next read is a fresh one, and the listeners hear of it."""
        key = normalize_code(code)
        with self._pulse_lock:
            self._pulses.pop(key, None)
        for listener in list(self.pulse_listeners):
            try:
                listener(key)
            except Exception:  # noqa: BLE001 - a listener's failure must never undo a stored write
                log.exception("a pulse listener failed")

    # -- polls ------------------------------------------------------------------------------------

    def answer(self, code: str, member_token: str, question: str, choice: str) -> None:
        """Record the member's answer; a second answer to the same question replaces the first. An
        answer that arrives after the lecturer revealed the question is refused: it would change a
        split the class already sees (checked in the same transaction as the write)."""
        question, choice = _check_question(question), _check_choice(choice)
        now = self.clock()
        with _write(self.engine) as conn:
            member = self._member_row(conn, code, member_token)
            self.answer_limiter.check(("answer", member.id))
            if conn.execute(sa.select(reveals.c.question).where(
                    reveals.c.class_id == member.class_id, reveals.c.question == question)).first() is not None:
                raise ClassroomError("The lecturer revealed the answer before yours arrived, so it was "
                                     "not counted.")
            values = dict(class_id=member.class_id, member_id=member.id, question=question, choice=choice,
                          answered_at=now)
            statement = _insert(conn)(answers).values(**values)
            conn.execute(statement.on_conflict_do_update(
                index_elements=["member_id", "question"],
                set_={"choice": statement.excluded.choice, "answered_at": statement.excluded.answered_at}))

    def my_answer(self, code: str, member_token: str, question: str) -> str | None:
        """The member's own answer to `question`, or None."""
        question = _check_question(question)
        with self.engine.connect() as conn:
            member = self._member_row(conn, code, member_token)
            return conn.execute(sa.select(answers.c.choice).where(
                answers.c.member_id == member.id, answers.c.question == question)).scalar()

    def poll(self, code: str, question: str) -> PollCounts:
        """How many members chose what, and whether the lecturer revealed the answer."""
        question = _check_question(question)
        with self.engine.connect() as conn:
            row = self._class_row(conn, code)
            counted = conn.execute(
                sa.select(answers.c.choice, sa.func.count()).where(
                    answers.c.class_id == row.id, answers.c.question == question).group_by(answers.c.choice))
            counts = {choice: int(n) for choice, n in counted}
            revealed = conn.execute(sa.select(reveals.c.question).where(
                reveals.c.class_id == row.id, reveals.c.question == question)).first() is not None
        return PollCounts(question, dict(sorted(counts.items())), revealed)

    def reveal(self, code: str, lecturer_token: str, question: str) -> None:
        """Reveal `question` to everyone (idempotent)."""
        question = _check_question(question)
        with _write(self.engine) as conn:
            row = self._lecturer_row(conn, code, lecturer_token)
            statement = _insert(conn)(reveals).values(class_id=row.id, question=question, revealed_at=self.clock())
            conn.execute(statement.on_conflict_do_nothing(index_elements=["class_id", "question"]))
        self._forget_pulse(code)

    def hide_reveal(self, code: str, lecturer_token: str, question: str) -> None:
        """Undo a reveal (the lecturer clicked too early)."""
        question = _check_question(question)
        with _write(self.engine) as conn:
            row = self._lecturer_row(conn, code, lecturer_token)
            conn.execute(reveals.delete().where(reveals.c.class_id == row.id, reveals.c.question == question))
        self._forget_pulse(code)

    def revealed(self, code: str) -> set[str]:
        """The questions the lecturer has revealed in this class."""
        with self.engine.connect() as conn:
            row = self._class_row(conn, code)
            return {q for (q,) in conn.execute(sa.select(reveals.c.question).where(reveals.c.class_id == row.id))}

    # -- the challenge -------------------------------------------------------------------------------

    def open_challenge(self, code: str, lecturer_token: str, title: str, max_params: int,
                       max_seconds: float) -> Challenge:
        """Open a challenge (closing any open one: one challenge runs at a time)."""
        title = " ".join(str(title or "").split())[:200] or "Lowest validation loss"
        if isinstance(max_params, bool) or not isinstance(max_params, int) or max_params < 1:
            raise ClassroomError(f"The parameter limit must be a whole number of at least 1, got {max_params!r}.")
        if not (isinstance(max_seconds, (int, float)) and math.isfinite(max_seconds) and max_seconds > 0):
            raise ClassroomError(f"The time limit must be a positive number of seconds, got {max_seconds!r}.")
        now = self.clock()
        with _write(self.engine) as conn:
            row = self._lecturer_row(conn, code, lecturer_token)
            conn.execute(challenges.update().where(challenges.c.class_id == row.id, challenges.c.is_open)
                         .values(is_open=False, closed_at=now))
            challenge_id = conn.execute(challenges.insert().values(
                class_id=row.id, title=title, max_params=max_params, max_seconds=float(max_seconds),
                is_open=True, created_at=now, closed_at=None)).inserted_primary_key[0]
        return Challenge(int(challenge_id), row.id, title, max_params, float(max_seconds), True, now, None)

    def close_challenge(self, code: str, lecturer_token: str, challenge_id: int) -> None:
        with _write(self.engine) as conn:
            row = self._lecturer_row(conn, code, lecturer_token)
            conn.execute(challenges.update().where(challenges.c.id == challenge_id, challenges.c.class_id == row.id,
                                                   challenges.c.is_open).values(is_open=False, closed_at=self.clock()))

    def current_challenge(self, code: str) -> Challenge | None:
        """The class's newest challenge (open or closed), or None."""
        with self.engine.connect() as conn:
            row = self._class_row(conn, code)
            found = conn.execute(sa.select(challenges).where(challenges.c.class_id == row.id)
                                 .order_by(challenges.c.id.desc()).limit(1)).first()
        return None if found is None else _challenge(found)

    def submit(self, code: str, member_token: str, challenge_id: int, result) -> Submission:
        """Store a submission evaluated by the server: `result` is a core.classroom.challenge.Evaluation
        (or anything with its fields). Refused when the challenge is closed or its limits are broken."""
        now = self.clock()
        with _write(self.engine) as conn:
            member = self._member_row(conn, code, member_token)
            found = conn.execute(sa.select(challenges).where(challenges.c.id == challenge_id,
                                                             challenges.c.class_id == member.class_id)).first()
            if found is None:
                raise ClassroomError("There is no such challenge in this class.")
            if not found.is_open:
                raise ClassroomError("This challenge is closed; no more submissions.")
            _check_limits(result, found)
            if conn.dialect.name == "postgresql":
                # One member's submissions one at a time: a second one (a double click, another tab,
                # another replica) waits here until the first commits, then finds its entry below.
                # On SQLite every write transaction already holds the one lock (BEGIN IMMEDIATE).
                conn.execute(sa.select(members.c.id).where(members.c.id == member.id).with_for_update())
            earlier = _entry_of(conn, found.id, member.id, int(result.steps), int(result.n_params),
                                float(result.seconds))
            if earlier is not None:
                raise AlreadyEntered(earlier)  # before the rate limit: a repeat does not use it up
            self._check_submission_rate(conn, member.id, now)
            samples = [str(name)[:60] for name in result.samples][:10]
            submission_id = conn.execute(submissions.insert().values(
                challenge_id=found.id, member_id=member.id, val_loss=float(result.val_loss),
                n_params=int(result.n_params), steps=int(result.steps), seconds=float(result.seconds),
                settings_json=json.dumps(result.settings, sort_keys=True), samples_json=json.dumps(samples),
                hidden=False, submitted_at=now)).inserted_primary_key[0]
        return Submission(int(submission_id), found.id, member.id, member.nickname, float(result.val_loss),
                          int(result.n_params), int(result.steps), float(result.seconds), dict(result.settings),
                          samples, False, now)

    def _submission_wait(self, conn, member_id: int, now: float) -> float:
        """Seconds until the member may submit again (0: now): `submission_limit` stored
        submissions within the window, and the oldest of them must leave it first."""
        most, window_s = self.submission_limit
        recent = conn.execute(sa.select(submissions.c.submitted_at)
                              .where(submissions.c.member_id == member_id, submissions.c.submitted_at > now - window_s)
                              .order_by(submissions.c.submitted_at.desc()).limit(most)).scalars().all()
        return recent[-1] + window_s - now if len(recent) >= most else 0.0

    def _check_submission_rate(self, conn, member_id: int, now: float) -> None:
        """Raise RateLimited when the member may not submit now. Read inside submit's write (the
        member's row locked on PostgreSQL, the database on SQLite), so two replicas cannot both
        let a last submission through."""
        wait = self._submission_wait(conn, member_id, now)
        if wait > 0:
            raise RateLimited("submissions", wait)

    def submission_wait(self, code: str, member_token: str | None) -> float:
        """Seconds until the member may submit again, 0 when they may now (or when the token is no
        member: `submit` says so). The page asks before scoring a run, so a member at the limit
        does not make the server score runs it will refuse; `submit` checks again."""
        with self.engine.connect() as conn:
            member = self._member_row(conn, code, member_token, missing_ok=True)
            return 0.0 if member is None else self._submission_wait(conn, member.id, self.clock())

    def entry_of(self, code: str, member_token: str | None, challenge_id: int, steps: int, n_params: int,
                 seconds: float) -> Submission | None:
        """The member's entry (hidden or not) of the run with these figures (core.classroom.challenge.
        run_figures): the run at this step is already entered. None when it is not, or when the token
        is no member of the class (`submit` then says so)."""
        with self.engine.connect() as conn:
            member = self._member_row(conn, code, member_token, missing_ok=True)
            return None if member is None else _entry_of(conn, challenge_id, member.id, steps, n_params, seconds)

    def submissions(self, code: str, challenge_id: int, *, include_hidden: bool = False) -> list[Submission]:
        """Every submission of the challenge, best (lowest validation loss) first."""
        with self.engine.connect() as conn:
            row = self._class_row(conn, code)
            query = (sa.select(submissions, members.c.nickname)
                     .join(members, members.c.id == submissions.c.member_id)
                     .join(challenges, challenges.c.id == submissions.c.challenge_id)
                     .where(submissions.c.challenge_id == challenge_id, challenges.c.class_id == row.id)
                     .order_by(submissions.c.val_loss, submissions.c.submitted_at, submissions.c.id))
            if not include_hidden:
                query = query.where(sa.not_(submissions.c.hidden))
            return [_submission(r) for r in conn.execute(query)]

    def leaderboard(self, code: str, challenge_id: int) -> list[Submission]:
        """Each member's best visible submission, best first (what the projected board shows)."""
        best: dict[int, Submission] = {}
        for entry in self.submissions(code, challenge_id):
            best.setdefault(entry.member_id, entry)
        return list(best.values())

    def hide_submission(self, code: str, lecturer_token: str, submission_id: int, hidden: bool = True) -> None:
        """Hide (or show again) one entry of the board."""
        with _write(self.engine) as conn:
            row = self._lecturer_row(conn, code, lecturer_token)
            in_class = sa.select(challenges.c.id).where(challenges.c.class_id == row.id)
            conn.execute(submissions.update().where(submissions.c.id == submission_id,
                                                    submissions.c.challenge_id.in_(in_class))
                         .values(hidden=bool(hidden)))

    # -- lookups shared by the operations above ------------------------------------------------------

    def _class_row(self, conn: Connection, code: str, missing_ok: bool = False):
        normalized = normalize_code(code)
        row = None
        if normalized:
            row = conn.execute(sa.select(classes).where(classes.c.code == normalized)).first()
        if row is None or row.expires_at <= self.clock():
            if missing_ok:
                return None
            if not normalized:  # what was typed cannot be a code at all: say why
                raise ClassroomError(code_problem(code) or "There is no class with that code.")
            # a code's letters are safe to show; one of another length was most likely mistyped
            if len(normalized) != CODE_LENGTH:
                raise ClassroomError(f"There is no class with the code {normalized}: join codes have "
                                     f"{CODE_LENGTH} characters, this has {len(normalized)}. Check the "
                                     "code on the lecturer's screen.")
            raise ClassroomError(f"There is no class with the code {normalized} (it may have ended).")
        return row

    def _lecturer_row(self, conn: Connection, code: str, lecturer_token: str):
        row = self._class_row(conn, code)
        if not token_matches(lecturer_token, row.lecturer_hash):
            raise NotAllowed("Only this class's lecturer can do that.")
        return row

    def _member_row(self, conn: Connection, code: str, member_token: str | None, missing_ok: bool = False):
        row = self._class_row(conn, code, missing_ok=missing_ok)
        found = None
        if row is not None and member_token:
            found = conn.execute(sa.select(members).where(members.c.token_hash == token_hash(member_token),
                                                          members.c.class_id == row.id)).first()
        if found is None and not missing_ok:
            raise NotAllowed("You are not in this class; join it with its code and a nickname.")
        return found


def _lecturer_state(row) -> LecturerState:
    """The lecturer's place as a class row stores it."""
    payload = json.loads(row.state_json or "{}")
    return LecturerState(row.state_version, payload.get("page", ""), payload.get("step"),
                         payload.get("settings", {}), row.state_at)


def open_store(url: str | None = None, data_dir: str | os.PathLike | None = None, **kwargs) -> ClassroomStore:
    """The store for `url` (e.g. st.secrets' [connections.classroom] url), else ATTENTION_LAB_DB_URL,
    else the SQLite file in `data_dir` / ATTENTION_LAB_DATA_DIR / ./.classroom."""
    return ClassroomStore(url or default_url(data_dir), **kwargs)


# =============================================================================================
# Helpers
# =============================================================================================


def _insert(conn: Connection):
    """The dialect's INSERT, which has ON CONFLICT (an upsert in one statement, no race)."""
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert


def _delete_classes(conn: Connection, class_ids: list[int]) -> None:
    """Delete classes and their rows, children first (explicit, so no database setting is relied on)."""
    if not class_ids:
        return
    in_classes = sa.select(challenges.c.id).where(challenges.c.class_id.in_(class_ids))
    conn.execute(submissions.delete().where(submissions.c.challenge_id.in_(in_classes)))
    in_members = sa.select(members.c.id).where(members.c.class_id.in_(class_ids))
    conn.execute(member_desks.delete().where(member_desks.c.member_id.in_(in_members)))
    for table in (challenges, answers, reveals, members):
        conn.execute(table.delete().where(table.c.class_id.in_(class_ids)))
    conn.execute(classes.delete().where(classes.c.id.in_(class_ids)))


def _check_question(question: str) -> str:
    if not isinstance(question, str) or not QUESTION_PATTERN.match(question):
        raise ClassroomError("Unknown question id (letters, digits and . _ : / - only, at most 80).")
    return question


def _check_choice(choice: str) -> str:
    if not isinstance(choice, str) or not choice.strip():
        raise ClassroomError("Choose an answer first.")
    if len(choice) > MAX_CHOICE_CHARS:
        raise ClassroomError(f"An answer can have at most {MAX_CHOICE_CHARS} characters.")
    return choice.strip()


def _check_limits(result, challenge_row) -> None:
    """The challenge's limits against the server's numbers (the evaluation already checked them;
    checked again here so no other path can store an entry over the limits)."""
    if not math.isfinite(float(result.val_loss)):
        raise ClassroomError("The validation loss is not a finite number; this model cannot enter.")
    if int(result.n_params) > challenge_row.max_params:
        raise ClassroomError(f"The model has {int(result.n_params):,} parameters; this challenge allows at most "
                             f"{challenge_row.max_params:,}.")
    if float(result.seconds) > challenge_row.max_seconds:
        # one decimal, as the evaluation says it: "120 s; at most 120 s" would hide a 120.4 s run's excess
        raise ClassroomError(f"The run trained for {float(result.seconds):.1f} s; this challenge allows at most "
                             f"{challenge_row.max_seconds:g} s.")


def _entry_of(conn: Connection, challenge_id: int, member_id: int, steps: int, n_params: int,
              seconds: float) -> Submission | None:
    """The member's stored entry of the run with these figures: the same steps, parameter count and
    training seconds (a float the server measured to the microsecond, so two runs never share it,
    and a run trained further has more). None when there is none."""
    row = conn.execute(
        sa.select(submissions, members.c.nickname)
        .join(members, members.c.id == submissions.c.member_id)
        .where(submissions.c.challenge_id == challenge_id, submissions.c.member_id == member_id,
               submissions.c.steps == steps, submissions.c.n_params == n_params,
               sa.func.abs(submissions.c.seconds - seconds) <= 1e-9 * max(1.0, abs(seconds)))
        .order_by(submissions.c.id).limit(1)).first()
    return None if row is None else _submission(row)


def _challenge(row) -> Challenge:
    return Challenge(row.id, row.class_id, row.title, row.max_params, row.max_seconds, bool(row.is_open),
                     row.created_at, row.closed_at)


def _submission(row) -> Submission:
    return Submission(row.id, row.challenge_id, row.member_id, row.nickname, row.val_loss, row.n_params, row.steps,
                      row.seconds, json.loads(row.settings_json), json.loads(row.samples_json), bool(row.hidden),
                      row.submitted_at)


def submissions_csv(entries: list[Submission]) -> str:
    """The board as CSV text (nickname, loss, parameters, steps, seconds, names, settings)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["rank", "nickname", "val_loss", "n_params", "steps", "seconds", "sampled_names", "settings",
                     "hidden"])
    for rank, entry in enumerate(entries, start=1):
        # A leading =, +, - or @ would make a spreadsheet run the nickname as a formula.
        nickname = "'" + entry.nickname if entry.nickname[:1] in "=+-@\t\r" else entry.nickname
        writer.writerow([rank, nickname, f"{entry.val_loss:.4f}", entry.n_params, entry.steps, f"{entry.seconds:.1f}",
                         " ".join(entry.samples), json.dumps(entry.settings, sort_keys=True), entry.hidden])
    return buffer.getvalue()

