"""Desks: what a browser's sessions made, kept across a page reload.

A reload (F5, or a laptop browser that discarded a background tab and loads it again) opens a new
Streamlit session, and a new session starts with empty state: a student's trained model, minutes
of training, was gone without a word. Each browser has a random token (a cookie, ui.desk), its
desk. Every page run files what its session made (the Train page's runs) on that desk, by
reference, so filing costs nothing while the session lives. When a session with the same token
starts with nothing of its own, the newest thing filed there by a session that is no longer
connected is handed to it.

What a departed session filed is kept for `park_s` seconds after its session was last held by the
server (Streamlit itself keeps a closed tab's session for two minutes, for a reconnect), at most
`max_parked` sessions' worth in all, oldest dropped first. This module holds no Streamlit: the
server's housekeeping tells it which sessions are still held (`expire`), and ui.desk which ones
are connected.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

PARK_S = 30 * 60.0  # how long a departed session's work waits for its browser to come back
MAX_PARKED = 120  # sessions' worth of work kept in all (a class of 60 reloading twice each)


@dataclasses.dataclass
class Filed:
    """What one session filed on a desk."""

    session_id: str  # the Streamlit session that made it
    things: dict[str, Any]  # session-state key -> object (a core.runs.RunBook)
    seen: float  # clock time the session was last known to be held by the server


class Desks:
    """Every browser's desk, shared by all sessions of the server (thread-safe)."""

    def __init__(self, park_s: float = PARK_S, max_parked: int = MAX_PARKED,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.park_s = park_s
        self.max_parked = max_parked
        self._clock = clock
        self._lock = threading.Lock()
        self._desks: dict[str, list[Filed]] = {}  # token -> filings, oldest first

    def file(self, token: str, session_id: str, things: dict[str, Any]) -> None:
        """`session_id` (on desk `token`) holds `things` now; replaces what it filed before."""
        with self._lock:
            filings = [f for f in self._desks.get(token, []) if f.session_id != session_id]
            filings.append(Filed(session_id, dict(things), self._clock()))
            self._desks[token] = filings
            self._cap()

    def forget(self, token: str, session_id: str) -> None:
        """`session_id` holds nothing worth keeping any more (its runs were all let go)."""
        with self._lock:
            self._drop(token, lambda f: f.session_id == session_id)

    def take_left_behind(self, token: str, session_id: str, connected: Callable[[str], bool],
                         wanted: Callable[[Filed], bool] = lambda filed: True) -> Filed | None:
        """The newest `wanted` filing on desk `token` by another session that is not `connected` (a
        reload's old session, a closed tab), removed from the desk; None if there is none. A
        session still connected (the same browser's other tab) keeps its work: nothing is taken
        from it. `wanted`: whether a filing holds anything worth handing over (a tab that only
        looked at the Train page filed an empty book)."""
        with self._lock:
            for filed in reversed(self._desks.get(token, [])):
                if filed.session_id != session_id and wanted(filed) and not connected(filed.session_id):
                    self._drop(token, lambda f: f is filed)
                    return filed
        return None

    def knows(self, token: str) -> bool:
        """Whether any session of this server filed on desk `token` (a live tab, or one parked)."""
        with self._lock:
            return bool(self._desks.get(token))

    def expire(self, held: Iterable[str] | None) -> int:
        """One housekeeping round: filings of sessions the server still holds (`held`, connected or
        waiting for a reconnect) are seen now; the others go once `park_s` has passed since they
        were last seen. `held` None (the server could not say): nothing is renewed. Returns how
        many filings went."""
        held = set(held or ())
        now = self._clock()
        with self._lock:
            before = self.count()
            for filings in self._desks.values():
                for filed in filings:
                    if filed.session_id in held:
                        filed.seen = now
            for token in list(self._desks):
                self._drop(token, lambda f: f.session_id not in held and now - f.seen > self.park_s)
            return before - self.count()

    def clear(self) -> int:
        """Forget every desk (a hosted server that nobody uses any more); returns how many filings."""
        with self._lock:
            gone = self.count()
            self._desks.clear()
            return gone

    def count(self) -> int:
        """How many sessions' filings are kept."""
        return sum(len(filings) for filings in self._desks.values())

    def _drop(self, token: str, which: Callable[[Filed], bool]) -> None:  # under self._lock
        kept = [f for f in self._desks.get(token, []) if not which(f)]
        if kept:
            self._desks[token] = kept
        else:
            self._desks.pop(token, None)

    def _cap(self) -> None:  # under self._lock: the least recently seen filings go first
        extra = self.count() - self.max_parked
        if extra <= 0:
            return
        oldest = sorted((f for filings in self._desks.values() for f in filings), key=lambda f: f.seen)
        going = {id(f) for f in oldest[:extra]}
        for token in list(self._desks):
            self._drop(token, lambda f: id(f) in going)


DESKS = Desks()  # the server's desks (one per process; replicas each keep their own)
