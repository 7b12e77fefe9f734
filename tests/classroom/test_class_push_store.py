"""server.class_push on a real store: a move or reveal made through this process wakes the class's
members at once (the store's pulse listeners); one made through another replica's store, on the
same database (SQLite file, or PostgreSQL as replicas use it), within the watcher's look interval."""

import time
from types import SimpleNamespace

import pytest

from core.classroom.store import ClassroomStore
from server.class_push import DONE, Pusher


@pytest.fixture
def pusher_for():
    made = []

    def make(watch_s: float):
        made.append(new_pusher(watch_s))
        return made[-1]
    yield make
    for pusher, _ in made:
        pusher.stop()  # before the test's database goes


def new_pusher(watch_s: float):
    woken = []
    member = SimpleNamespace(name="ada")

    def on_loop(session, callback, delay=0.0):
        callback()  # the session's loop, run at once
        return True

    def rerun(session):
        woken.append(time.monotonic())
        return DONE

    return Pusher(session_of={"sid-ada": member}.get, rerun=rerun, on_loop=on_loop, watch_s=watch_s), woken


def wait_for(woken: list, count: int, within: float) -> float | None:
    start = time.monotonic()
    while time.monotonic() - start < within:
        if len(woken) >= count:
            return time.monotonic() - start
        time.sleep(0.01)
    return None


def test_a_move_through_this_process_wakes_members_at_once(db_url, pusher_for):
    store = ClassroomStore(db_url)
    info, lecturer = store.create_class()
    pusher, woken = pusher_for(watch_s=30.0)  # a look every 30 s: only the listener explains a quick wake
    pusher.watch(store, info.code, "sid-ada")
    assert wait_for(woken, 1, 5.0) is not None  # the first look
    store.publish_state(info.code, lecturer, "simple_attention", None, {"step": "scores"})
    assert wait_for(woken, 2, 2.0) is not None
    store.reveal(info.code, lecturer, "p1.attend")
    assert wait_for(woken, 3, 2.0) is not None


def test_a_move_through_another_replica_wakes_members_within_the_look_interval(db_url, pusher_for):
    here, there = ClassroomStore(db_url), ClassroomStore(db_url)  # two server processes' stores
    info, lecturer = there.create_class()
    pusher, woken = pusher_for(watch_s=0.3)
    pusher.watch(here, info.code, "sid-ada")
    assert wait_for(woken, 1, 5.0) is not None
    time.sleep(0.5)
    assert len(woken) == 1  # nothing changed: nobody woken again
    there.publish_state(info.code, lecturer, "self_attention", None, {"step": "weights"})
    took = wait_for(woken, 2, 5.0)
    assert took is not None and took < 2.0
