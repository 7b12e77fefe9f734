"""Streamlit's theme options, read once per configuration instead of once per page run.

At the start of every whole-page run Streamlit sends the browser a "new session" message that
carries the theme. To fill it, `app_session._populate_theme_msg` asks
`config.get_options_for_section` for six theme sections, and each call walks all ~200 config
options under the config lock. In a class of 60 (54 followers' page runs per lecturer move)
py-spy put that walk at 5% of the server's Python time, for an answer that never changes while
the server runs.

`install()` (called by streamlit_app.py, once per process) keeps the theme sections' answers.
Any change to an option (`config._set_option`, through which `st.set_option`, the config files
and the command-line flags all pass) forgets them, and so does a re-read of the config (a new
options dict). Each caller gets its own copy. Other sections are read as before.
ATTENTION_LAB_CONFIG_CACHE=0 leaves Streamlit as it is.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable

from server.once import once_per_process

CACHED_PREFIX = "theme"  # the sections kept: "theme", "theme.light", "theme.dark.sidebar", ...

@once_per_process("ATTENTION_LAB_CONFIG_CACHE")
def install() -> bool:
    """Patch streamlit.config once per process; True when the cache is in place."""
    from streamlit import config

    getter = getattr(config, "get_options_for_section", None)
    setter = getattr(config, "_set_option", None)
    if getter is None or setter is None or not hasattr(config, "_config_options"):
        return False  # a Streamlit without these private parts: leave it as it is
    cache = SectionCache(getter, lambda: config._config_options)
    config.get_options_for_section = cache.get
    config._set_option = cache.forgetting(setter)
    return True


class SectionCache:
    """`get(section)`: the options of a config section, kept for the theme sections until
    `forget()` or until the config's options dict is replaced (`options()` returns it)."""

    def __init__(self, read: Callable[[str], dict[str, Any]], options: Callable[[], Any]):
        self._read = read
        self._options = options
        self._kept: dict[str, dict[str, Any]] = {}
        self._kept_for: Any = None  # the options dict the kept answers were read from
        self._generation = 0  # counts forget(): an answer read across one is not kept
        self._lock = threading.Lock()

    def get(self, section: str) -> dict[str, Any]:
        if not section.startswith(CACHED_PREFIX):
            return self._read(section)
        with self._lock:
            if self._options() is self._kept_for and section in self._kept:
                return dict(self._kept[section])
            generation = self._generation
        # read outside the lock: the first read parses the config files, which sets options
        # (and so calls forget(), which takes the lock)
        answer = self._read(section)
        with self._lock:
            if generation == self._generation:
                if self._options() is not self._kept_for:
                    self._kept, self._kept_for = {}, self._options()
                self._kept[section] = answer
        return dict(answer)

    def forget(self) -> None:
        with self._lock:
            self._kept, self._kept_for = {}, None
            self._generation += 1

    def forgetting(self, set_option: Callable) -> Callable:
        """`set_option` that forgets the kept answers once it has set (a theme option may be the one)."""

        @functools.wraps(set_option)
        def set_and_forget(*args, **kwargs):
            try:
                return set_option(*args, **kwargs)
            finally:
                self.forget()  # also stops a read that crossed the change from keeping its answer

        return set_and_forget
