"""Class mode's safety pieces: the lecturer key, join codes, tokens, nicknames, rate limits, expiry.

No Streamlit and no database here; `core.classroom.store` and the class pages use these.

* The lecturer key is a server setting (environment variable `ATTENTION_LAB_LECTURER_KEY`, or the
  Streamlit secret of the same name that the page passes in). No key = class mode is off.
  `check_lecturer_key` compares in constant time and waits a little after a wrong key, so guessing
  is slow and the answer's timing says nothing about how close a guess was.
* A join code is short and read off a projector: no letters or digits that look alike (0/O, 1/I/L).
* Tokens (the lecturer's and each member's) are random; only their SHA-256 is stored, so a copy of
  the database does not let anyone act as a member or as the lecturer.
* A nickname is the only personal thing stored. `clean_nickname` removes control characters and the
  invisible marks that reorder text (right-to-left overrides), collapses whitespace and refuses empty
  or over-long names with a message. The pages always show it as plain text, never Markdown or HTML.
* `RateLimiter`: at most N events per key in a sliding window (per server process).
"""

from __future__ import annotations

import collections
import hashlib
import hmac
import math
import os
import re
import secrets
import threading
import time
import unicodedata
from typing import Callable, Mapping

LECTURER_KEY_ENV = "ATTENTION_LAB_LECTURER_KEY"  # the server's lecturer key (env or st.secrets)
TTL_DAYS_ENV = "ATTENTION_LAB_CLASS_TTL_DAYS"  # how long a class lives (days)
DEFAULT_TTL_DAYS = 7.0
WRONG_KEY_DELAY_S = 1.0  # wait after a wrong lecturer key (slows guessing)

CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I/L: readable from the back row
CODE_LENGTH = 6  # 31**6, about 890 million codes
NICKNAME_MAX_CHARS = 32
ZERO_WIDTH_JOINER = "\u200d"  # kept: it glues emoji sequences (👩‍💻) together


class ClassroomError(ValueError):
    """Something a user did cannot be done; the message can be shown to them as is."""


class NotAllowed(ClassroomError):
    """The caller lacks the right (wrong lecturer token, not a member of this class)."""


class AlreadyEntered(ClassroomError):
    """The same run at the same step is already among the challenge's entries: it is not stored
    twice. `entry` is the stored one (a core.classroom.store.Submission, hidden or not). Here, not
    in the store, so that a page can catch it without loading SQLAlchemy."""

    def __init__(self, entry):
        hidden = " The lecturer has hidden it from the board." if entry.hidden else ""
        super().__init__(f"This run is already on the board (your entry at step {entry.steps:,}: validation loss "
                         f"{entry.val_loss:.4f}); it is not entered twice. Train it further or start a new run "
                         f"to enter again.{hidden}")
        self.entry = entry


class RateLimited(ClassroomError):
    """Too many actions in a short time; the message says how long to wait."""

    def __init__(self, what: str, wait_s: float):
        self.wait_s = max(1, math.ceil(wait_s))
        super().__init__(f"Too many {what} in a short time; try again in {self.wait_s} s.")


# ---------------------------------------------------------------------------------------------
# The lecturer key
# ---------------------------------------------------------------------------------------------


def configured_lecturer_key(secrets_map: Mapping | None = None) -> str | None:
    """The server's lecturer key: from the environment, else from `secrets_map` (st.secrets);
    None when class mode is off (no key, or a blank one)."""
    key = os.environ.get(LECTURER_KEY_ENV)
    if not key and secrets_map is not None:
        try:
            key = secrets_map.get(LECTURER_KEY_ENV)
        except Exception:  # st.secrets raises when there is no secrets file at all
            key = None
    key = str(key).strip() if key is not None else ""
    return key or None


def check_lecturer_key(given: str | None, configured: str | None,
                       wrong_delay_s: float = WRONG_KEY_DELAY_S) -> bool:
    """True if `given` is the configured key (constant-time compare); after a wrong key, a short wait.
    Spaces around `given` do not count: a pasted key often brings them, and the configured key
    never has any (configured_lecturer_key strips it)."""
    if not configured:
        return False
    ok = hmac.compare_digest(_digest(str(given or "").strip()), _digest(configured))
    if not ok and wrong_delay_s > 0:
        time.sleep(wrong_delay_s)
    return ok


def _digest(text: str) -> bytes:
    # Comparing fixed-length digests keeps the compare's time independent of the key's length too.
    return hashlib.sha256(text.encode("utf-8")).digest()


# ---------------------------------------------------------------------------------------------
# Join codes and tokens
# ---------------------------------------------------------------------------------------------


def new_join_code(length: int = CODE_LENGTH) -> str:
    """A random join code from CODE_ALPHABET, e.g. "K7QMPX"."""
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(length))


def normalize_code(text: str | None) -> str:
    """A typed code as stored: upper case, spaces and dashes dropped ("k7q-mpx " -> "K7QMPX");
    "" for anything that cannot be a code (code_problem says why)."""
    code = _typed_code(text)
    if not code or len(code) > 16 or any(char not in CODE_ALPHABET for char in code):
        return ""
    return code


def _typed_code(text: str | None) -> str:
    return re.sub(r"[\s\-]", "", str(text or "")).upper()


def code_problem(text: str | None) -> str | None:
    """Why `text` cannot be a join code, in words for the person who typed it; None when it can."""
    typed = _typed_code(text)
    if not typed:
        return "The join code is empty: type the code the lecturer shows."
    why = _why_not_a_code(typed)
    if why is None:
        return None
    return f"That is not a join code: {why}" + ("" if len(typed) > 16 else " Check the code on the lecturer's screen.")


def reopen_code_problem(text: str | None) -> str | None:
    """Why `text`, typed by the lecturer to reopen one of their classes, cannot be a join code, in
    words for the lecturer (what they typed, quoted, Markdown-safe); None when it can be one, or
    when it is empty (no code: a new class)."""
    typed = _typed_code(text)
    if not typed:
        return None
    why = _why_not_a_code(typed)
    if why is None:
        return None
    shown = " ".join(str(text).split())
    shown = escape_markdown(shown if len(shown) <= 24 else shown[:23] + "…")
    return (f"“{shown}” is not a join code: {why} Type the code your class's projector card shows, or "
            "leave the box empty to start a new class.")


def _why_not_a_code(typed: str) -> str | None:
    """What is wrong with a typed code (`_typed_code`, not empty), as the end of "... is not a join
    code: ..."; None when it can be a code."""
    if len(typed) > 16:
        return f"codes have {CODE_LENGTH} characters, this has {len(typed):,}."
    look_alikes = sorted(set(typed) & set("0O1IL"))
    if look_alikes:
        return ("it has " + " and ".join(look_alikes) + ", and codes leave out 0, O, 1, I and L (they are "
                "easy to mix up).")
    if any(char not in CODE_ALPHABET for char in typed):
        return f"codes have {CODE_LENGTH} letters and digits (A–Z and 2–9)."
    return None


def new_token() -> str:
    """A secret for a lecturer or a member session (kept in that session only)."""
    return secrets.token_urlsafe(24)


def token_hash(token: str) -> str:
    """What the database keeps of a token."""
    return hashlib.sha256(str(token).encode("utf-8")).hexdigest()


def token_matches(token: str | None, stored_hash: str) -> bool:
    """Constant-time check of a token against its stored hash."""
    return hmac.compare_digest(token_hash(token or ""), str(stored_hash))


# ---------------------------------------------------------------------------------------------
# Nicknames
# ---------------------------------------------------------------------------------------------


def _invisible(char: str) -> bool:
    """Control characters, format marks (bidi overrides, zero-width spaces), surrogates, private use."""
    if char == ZERO_WIDTH_JOINER:
        return False
    return unicodedata.category(char) in ("Cc", "Cf", "Cs", "Co", "Cn")


def clean_nickname(text: str | None, max_chars: int = NICKNAME_MAX_CHARS) -> str:
    """The nickname to store, or ClassroomError with a message saying what to change.

    Control characters and invisible marks are dropped, whitespace runs become one space; the
    result must have 1..max_chars characters. Markup (`<script>`, `**bold**`) is kept as typed:
    it is text, and the pages show it as text."""
    if not isinstance(text, str):
        raise ClassroomError("Type a nickname.")
    if len(text) > 20 * max_chars:  # refuse huge pastes before any per-character work
        raise ClassroomError(f"That nickname is far too long; use at most {max_chars} characters.")
    text = unicodedata.normalize("NFC", text)
    # Line and paragraph separators count as whitespace; everything else invisible goes.
    visible = "".join(" " if char.isspace() else char for char in text if char.isspace() or not _invisible(char))
    nickname = " ".join(visible.split())
    if not nickname.strip(ZERO_WIDTH_JOINER):
        raise ClassroomError("Type a nickname (letters, digits or emoji; it cannot be empty).")
    if len(nickname) > max_chars:
        raise ClassroomError(f"That nickname has {len(nickname)} characters; use at most {max_chars}.")
    return nickname


def nickname_key(nickname: str) -> str:
    """The form two nicknames are compared in ("Ada" and "ada " are the same person in a class)."""
    return unicodedata.normalize("NFKC", nickname).casefold()


def escape_markdown(text: str) -> str:
    """`text` made safe inside st.markdown / a Markdown table: Markdown and HTML characters escaped.
    (Prefer st.text or a dataframe cell, which never interpret it.)"""
    text = str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|~$:])", r"\\\1", text)


# ---------------------------------------------------------------------------------------------
# Rate limits and expiry
# ---------------------------------------------------------------------------------------------


class RateLimiter:
    """At most `max_events` per key within any `window_s` seconds (sliding window), thread-safe.

    Kept in this server process's memory: with several replicas each one limits on its own, which
    still bounds what one member can do to a few times the limit. (Challenge submissions are
    counted in the database instead: ClassroomStore.submit.)"""

    def __init__(self, max_events: int, window_s: float, what: str = "actions",
                 clock: Callable[[], float] = time.monotonic):
        if max_events < 1 or window_s <= 0:
            raise ValueError("a rate limit needs max_events >= 1 and window_s > 0")
        self.max_events, self.window_s, self.what, self.clock = max_events, window_s, what, clock
        self._events: dict[object, collections.deque] = {}
        self._lock = threading.Lock()

    def check(self, key: object) -> None:
        """Count one event for `key`, or raise RateLimited (the event is then not counted)."""
        now = self.clock()
        with self._lock:
            events = self._events.setdefault(key, collections.deque())
            while events and events[0] <= now - self.window_s:
                events.popleft()
            if len(events) >= self.max_events:
                raise RateLimited(self.what, events[0] + self.window_s - now)
            events.append(now)
            if len(self._events) > 10_000:  # forget keys that have been quiet for a whole window
                self._events = {k: d for k, d in self._events.items() if d and d[-1] > now - self.window_s}


def class_ttl_s(days: float | None = None) -> float:
    """How long a class lives, in seconds: `days`, else ATTENTION_LAB_CLASS_TTL_DAYS, else 7 days."""
    if days is None:
        try:
            days = float(os.environ.get(TTL_DAYS_ENV, DEFAULT_TTL_DAYS))
        except ValueError:
            days = DEFAULT_TTL_DAYS
    if not days > 0:  # also refuses NaN
        raise ClassroomError(f"A class must live a positive number of days, got {days}.")
    return float(days) * 24 * 3600
