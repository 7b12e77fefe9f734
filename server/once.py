"""`Once` and `once_per_process`: a change to a library's private parts, made at most once per process, that an
environment variable can switch off (used by server.rerun_race, server.stale_ticks and
server.config_cache, whose `install()` streamlit_app.py calls on every page run)."""

from __future__ import annotations

import functools
import os
import threading
from typing import Callable


class Once:
    """`install(apply)` runs `apply()` (True when it made its change) the first time only, under a
    lock (the first page runs of many sessions start together), unless `switch` is set to 0."""

    def __init__(self, switch: str):
        self.switch = switch  # the environment variable that turns the change off ("0")
        self.installed = False
        self._lock = threading.Lock()

    def switched_off(self) -> bool:
        return os.environ.get(self.switch, "1").strip() == "0"

    def install(self, apply: Callable[[], bool]) -> bool:
        if self.switched_off():
            return False
        with self._lock:
            if not self.installed:
                self.installed = bool(apply())
            return self.installed


def once_per_process(switch: str) -> Callable[[Callable[[], bool]], Callable[[], bool]]:
    """Decorator: `install = once_per_process("VAR")(apply)` makes the change of `apply` at most
    once; `install.once` is its Once (tests reset `install.once.installed`)."""

    def wrap(apply: Callable[[], bool]) -> Callable[[], bool]:
        once = Once(switch)

        @functools.wraps(apply)
        def install() -> bool:
            return once.install(apply)

        install.once = once
        return install

    return wrap
