"""server.desks: what a browser's sessions made is handed to its next session after a reload."""

from __future__ import annotations

import threading

from server.desks import Desks


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def never_connected(session_id: str) -> bool:
    return False


def test_a_reloaded_tab_takes_what_its_old_session_filed_once():
    desks = Desks()
    book = object()
    desks.file("tok", "old", {"book": book})
    filed = desks.take_left_behind("tok", "new", never_connected)
    assert filed is not None and filed.things["book"] is book and filed.session_id == "old"
    assert desks.take_left_behind("tok", "another", never_connected) is None  # taken: gone from the desk
    assert desks.count() == 0


def test_another_browser_and_the_session_itself_get_nothing():
    desks = Desks()
    desks.file("tok", "old", {"book": 1})
    assert desks.take_left_behind("other-token", "new", never_connected) is None
    assert desks.take_left_behind("tok", "old", never_connected) is None  # its own filing
    assert desks.count() == 1


def test_a_tab_still_connected_keeps_its_work():
    desks = Desks()
    desks.file("tok", "tab-1", {"book": 1})
    assert desks.take_left_behind("tok", "tab-2", connected=lambda sid: sid == "tab-1") is None
    assert desks.count() == 1
    assert desks.take_left_behind("tok", "tab-2", never_connected).session_id == "tab-1"  # once closed


def test_the_newest_wanted_filing_is_taken():
    desks = Desks()
    desks.file("tok", "a", {"n": 1})
    desks.file("tok", "b", {"n": 2})
    desks.file("tok", "c", {"n": 0})  # a tab that only looked: nothing worth handing over
    filed = desks.take_left_behind("tok", "new", never_connected, wanted=lambda f: f.things["n"] > 0)
    assert filed.session_id == "b"
    assert desks.count() == 2  # "a" and the empty "c" stay until they expire


def test_filing_again_replaces_the_session_s_earlier_filing():
    desks = Desks()
    desks.file("tok", "s", {"n": 1})
    desks.file("tok", "s", {"n": 2})
    assert desks.count() == 1
    assert desks.take_left_behind("tok", "new", never_connected).things == {"n": 2}


def test_departed_sessions_expire_after_the_park_time_and_held_ones_are_renewed():
    clock = Clock()
    desks = Desks(park_s=60, clock=clock)
    desks.file("tok", "gone", {"n": 1})
    desks.file("tok", "held", {"n": 2})
    clock.now += 59
    assert desks.expire(held={"held"}) == 0
    clock.now += 2  # "gone" was last seen 61 s ago; "held" was seen at the last round
    assert desks.expire(held={"held"}) == 1
    clock.now += 55  # a held session is renewed every round, however long it lives
    assert desks.expire(held={"held"}) == 0
    clock.now += 61  # ...and goes park_s after it was last held
    assert desks.expire(held=set()) == 1
    assert desks.count() == 0


def test_when_the_server_cannot_say_which_sessions_it_holds_nothing_is_renewed():
    clock = Clock()
    desks = Desks(park_s=10, clock=clock)
    desks.file("tok", "s", {"n": 1})
    clock.now += 11
    assert desks.expire(held=None) == 1


def test_at_most_max_parked_filings_are_kept_the_least_recently_seen_going_first():
    clock = Clock()
    desks = Desks(max_parked=3, clock=clock)
    for i in range(5):
        clock.now += 1
        desks.file(f"tok{i}", f"s{i}", {"n": i})
    assert desks.count() == 3
    for i in (0, 1):
        assert desks.take_left_behind(f"tok{i}", "new", never_connected) is None
    assert desks.take_left_behind("tok4", "new", never_connected).things == {"n": 4}


def test_clear_and_forget():
    desks = Desks()
    desks.file("tok", "a", {"n": 1})
    desks.file("tok", "b", {"n": 2})
    desks.forget("tok", "a")
    assert desks.count() == 1
    assert desks.clear() == 1 and desks.count() == 0


def test_sixty_sessions_filing_and_taking_at_once_lose_nothing():
    """A class: 60 script threads file on every page run while reloaded tabs take theirs back."""
    desks = Desks(max_parked=10_000)
    taken: list[str] = []
    start = threading.Barrier(60)

    def student(i: int) -> None:
        start.wait()
        for turn in range(50):
            desks.file(f"tok{i}", f"s{i}-{turn}", {"n": turn})
        filed = desks.take_left_behind(f"tok{i}", "reloaded", never_connected)
        taken.append(filed.session_id)

    threads = [threading.Thread(target=student, args=(i,)) for i in range(60)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(taken) == sorted(f"s{i}-49" for i in range(60))  # each its own newest, none lost
    assert desks.count() == 60 * 49
