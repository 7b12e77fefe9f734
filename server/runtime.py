"""Access to Streamlit's runtime, shared by server/housekeeping.py and server/memory_probe.py.

Streamlit does not publish its Runtime's session manager or the sessions it holds, so these
functions read its internals, and each one says what it returns when they are not there: outside
`streamlit run` (a test, a script, AppTest's mock runtime) or after an internal moved in a new
Streamlit. Nothing here changes a session; that is housekeeping's job.
"""

from __future__ import annotations


def instance():
    """Streamlit's Runtime of this process, or None when none was started (a test, a script)."""
    from streamlit.runtime import Runtime

    return Runtime.instance() if Runtime.exists() else None


def session_manager():
    """Streamlit's session manager, or None (no runtime, or under AppTest's mock runtime)."""
    return getattr(instance(), "_session_mgr", None)


def session_storage():
    """(storage lock, TTL cache) of Streamlit's disconnected sessions, or None if not found."""
    manager = session_manager()
    if manager is None:
        return None
    storage = getattr(manager, "_session_storage", None)
    cache = getattr(storage, "_cache", None)
    lock = getattr(manager, "_storage_lock", None)
    if cache is None or lock is None or not hasattr(cache, "expire"):
        return None
    return lock, cache


def session_ids() -> set[str] | None:
    """Ids of every session Streamlit holds (connected or waiting for a reconnect), or None."""
    manager = session_manager()
    lock = getattr(manager, "_storage_lock", None)
    if manager is None or lock is None:
        return None
    with lock:
        return {info.session.id for info in manager.list_sessions()}


def active_session(session_id: str):
    """The AppSession of `session_id` while it is a connected tab; None when it waits for a
    reconnect, is gone, or there is no session manager to ask."""
    manager = session_manager()
    info = manager.get_active_session_info(session_id) if manager is not None else None
    return None if info is None else info.session


def is_connected(session_id: str) -> bool | None:
    """Whether `session_id` is a connected tab (not one waiting for a reconnect, nor gone); None
    when there is no session manager to ask (a test, a script, an internal that moved)."""
    if session_manager() is None:
        return None
    try:
        return active_session(session_id) is not None
    except Exception:  # noqa: BLE001 - Streamlit's internals may change
        return None


def session_counts() -> dict:
    """{"sessions_active": connected tabs, "sessions_held": those plus the ones waiting for a
    reconnect}, or {} when there is no session manager to ask (or it no longer answers)."""
    manager = session_manager()
    if manager is None:
        return {}
    try:
        return {"sessions_active": len(manager.list_active_sessions()),
                "sessions_held": len(manager.list_sessions())}
    except Exception:  # noqa: BLE001 - Streamlit's internals may change; callers only report this
        return {}


def nobody_left() -> bool:
    """True when Streamlit holds no session at all (connected or waiting for a reconnect); False
    also when there is no runtime to ask."""
    manager = session_manager()
    return manager is not None and not manager.list_sessions()
