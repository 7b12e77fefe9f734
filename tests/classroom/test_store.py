"""The class-mode store on SQLite and on a real PostgreSQL server: rules, concurrency, durability.

Every test taking `db_url` runs once per backend (see conftest.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import sqlalchemy as sa

from core.classroom import store as store_module
from core.classroom.security import ClassroomError, NotAllowed, RateLimited, RateLimiter
from core.classroom.store import ClassroomStore

REPO_ROOT = Path(__file__).resolve().parents[2]


class FakeClock:
    """A clock the test moves by hand (expiry without waiting a week)."""

    def __init__(self, now: float = 1_800_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def generous() -> dict:
    """Rate limits that never refuse (tests of other rules send many actions fast)."""
    return {"answer_limiter": RateLimiter(10**6, 1), "submission_limit": (10**6, 1.0)}


@dataclass
class FakeEvaluation:
    """What core.classroom.challenge.Evaluation carries (the store only reads these fields)."""

    val_loss: float = 2.1
    n_params: int = 5000
    steps: int = 100
    seconds: float = 20.0
    settings: dict = field(default_factory=lambda: {"n_layer": "2"})
    samples: list = field(default_factory=lambda: ["ada", "bo", "cy", "di", "ed"])


# ------------------------------------------------------------------------------ polls


def test_one_answer_per_member_per_question_and_answering_again_replaces(db_url):
    s = ClassroomStore(db_url, **generous())
    info, _ = s.create_class()
    _, ada = s.join(info.code, "Ada")
    _, bo = s.join(info.code, "Bo")
    s.answer(info.code, ada, "p3.mask", "row")
    s.answer(info.code, bo, "p3.mask", "row")
    s.answer(info.code, ada, "p3.mask", "column")  # Ada changes her mind
    poll = s.poll(info.code, "p3.mask")
    assert poll.counts == {"column": 1, "row": 1}
    assert poll.total == 2
    assert s.my_answer(info.code, ada, "p3.mask") == "column"
    assert s.my_answer(info.code, bo, "p1.other") is None
    assert s.poll(info.code, "p1.other").total == 0  # questions are separate


def test_reveal_state_is_per_question_and_only_the_lecturer_reveals(db_url):
    s = ClassroomStore(db_url, **generous())
    info, lecturer = s.create_class()
    _, ada = s.join(info.code, "Ada")
    assert not s.poll(info.code, "p3.mask").revealed
    with pytest.raises(NotAllowed):
        s.reveal(info.code, ada, "p3.mask")  # a member's token is not the lecturer's
    with pytest.raises(NotAllowed):
        s.reveal(info.code, "", "p3.mask")
    s.reveal(info.code, lecturer, "p3.mask")
    s.reveal(info.code, lecturer, "p3.mask")  # twice is fine
    assert s.poll(info.code, "p3.mask").revealed
    assert not s.poll(info.code, "p4.heads").revealed
    assert s.revealed(info.code) == {"p3.mask"}
    s.hide_reveal(info.code, lecturer, "p3.mask")
    assert s.revealed(info.code) == set()


def test_an_answer_that_arrives_after_the_reveal_is_refused_and_the_split_stays(db_url):
    """A student who pressed Send as the lecturer revealed: the answer is not counted (the class
    already sees the split), the student is told why, and after Hide again answers count again."""
    s = ClassroomStore(db_url, **generous())
    info, lecturer = s.create_class()
    _, ada = s.join(info.code, "Ada")
    _, bo = s.join(info.code, "Bo")
    s.answer(info.code, ada, "p3.mask", "row")
    s.reveal(info.code, lecturer, "p3.mask")
    with pytest.raises(ClassroomError, match="revealed the answer before yours arrived"):
        s.answer(info.code, bo, "p3.mask", "column")
    with pytest.raises(ClassroomError):
        s.answer(info.code, ada, "p3.mask", "column")  # nor changed after the reveal
    assert s.poll(info.code, "p3.mask").counts == {"row": 1}
    s.answer(info.code, bo, "p4.heads", "2")  # another question is still open
    s.hide_reveal(info.code, lecturer, "p3.mask")
    s.answer(info.code, bo, "p3.mask", "column")
    assert s.poll(info.code, "p3.mask").counts == {"column": 1, "row": 1}


def test_a_member_acts_only_in_their_own_class(db_url):
    s = ClassroomStore(db_url, **generous())
    first, _ = s.create_class()
    second, _ = s.create_class()
    _, ada = s.join(first.code, "Ada")
    with pytest.raises(NotAllowed, match="not in this class"):
        s.answer(second.code, ada, "p1.q", "a")
    with pytest.raises(NotAllowed):
        s.answer(first.code, "made-up-token", "p1.q", "a")
    assert s.member(first.code, ada).nickname == "Ada"
    assert s.member(second.code, ada) is None


def test_bad_questions_and_choices_are_refused_with_a_message(db_url):
    s = ClassroomStore(db_url, **generous())
    info, _ = s.create_class()
    _, ada = s.join(info.code, "Ada")
    for question in ("", "x" * 81, "p1 q", "<script>", None):
        with pytest.raises(ClassroomError, match="question"):
            s.answer(info.code, ada, question, "a")
    with pytest.raises(ClassroomError, match="Choose"):
        s.answer(info.code, ada, "p1.q", "   ")
    with pytest.raises(ClassroomError, match="at most"):
        s.answer(info.code, ada, "p1.q", "a" * 201)


def test_answers_are_rate_limited_per_member(db_url):
    s = ClassroomStore(db_url, answer_limiter=RateLimiter(3, 60, "answers"))
    info, _ = s.create_class()
    _, ada = s.join(info.code, "Ada")
    _, bo = s.join(info.code, "Bo")
    for choice in "abc":
        s.answer(info.code, ada, "p1.q", choice)
    with pytest.raises(RateLimited, match="Too many answers"):
        s.answer(info.code, ada, "p1.q", "d")
    s.answer(info.code, bo, "p1.q", "a")  # Bo has his own budget
    assert s.poll(info.code, "p1.q").counts == {"a": 1, "c": 1}  # the refused answer changed nothing


def test_nicknames_are_cleaned_and_unique_within_a_class(db_url):
    s = ClassroomStore(db_url, **generous())
    info, _ = s.create_class()
    other, _ = s.create_class()
    member, _ = s.join(info.code, "  Ada\u202e  Lovelace ")
    assert member.nickname == "Ada Lovelace"
    with pytest.raises(ClassroomError, match="already has that nickname"):
        s.join(info.code, "ada lovelace")  # same name up to case
    s.join(other.code, "Ada Lovelace")  # another class: fine
    with pytest.raises(ClassroomError, match="no class"):
        s.join("ZZZZZZ", "Bo")
    assert [m.nickname for m in s.members(info.code)] == ["Ada Lovelace"]


def test_a_member_who_leaves_frees_the_seat_the_nickname_and_their_answers(db_url):
    s = ClassroomStore(db_url, **generous())
    info, lecturer = s.create_class()
    other, _ = s.create_class()
    _, ada = s.join(info.code, "Ada")
    _, bo = s.join(info.code, "Bo")
    _, ada_elsewhere = s.join(other.code, "Ada")
    for token, choice in ((ada, "row"), (bo, "column")):
        s.answer(info.code, token, "p3.mask", choice)
    s.answer(info.code, ada, "p1.q", "a")
    s.reveal(info.code, lecturer, "p1.q")
    s.answer(other.code, ada_elsewhere, "p3.mask", "row")
    challenge = s.open_challenge(info.code, lecturer, "c", 10_000, 60)
    s.submit(info.code, ada, challenge.id, FakeEvaluation(val_loss=2.0))
    s.submit(info.code, bo, challenge.id, FakeEvaluation(val_loss=2.5))

    with pytest.raises(NotAllowed):
        s.leave(info.code, "made-up-token")  # only the member's own token takes the seat away
    with pytest.raises(NotAllowed):
        s.leave(other.code, bo)  # a seat in another class is not this one's
    with pytest.raises(NotAllowed):
        s.leave(info.code, lecturer)
    s.leave(info.code.lower(), ada)

    assert [m.nickname for m in s.members(info.code)] == ["Bo"]  # the lecturer's "Students joined"
    assert s.member(info.code, ada) is None
    assert s.poll(info.code, "p3.mask").counts == {"column": 1}  # "1 of 1 answered", not "2 of 1"
    assert s.poll(info.code, "p1.q").total == 0 and s.poll(info.code, "p1.q").revealed  # revealed ones too
    assert [e.nickname for e in s.leaderboard(info.code, challenge.id)] == ["Bo"]
    assert [e.nickname for e in s.submissions(info.code, challenge.id, include_hidden=True)] == ["Bo"]
    with pytest.raises(NotAllowed):
        s.answer(info.code, ada, "p3.mask", "row")  # the old token is nobody's now
    with pytest.raises(NotAllowed):
        s.leave(info.code, ada)  # leaving twice: no seat to leave
    # the other class is untouched
    assert s.member(other.code, ada_elsewhere).nickname == "Ada"
    assert s.poll(other.code, "p3.mask").counts == {"row": 1}
    # the nickname is free again: the same student rejoins as "Ada", on a fresh seat
    member, again = s.join(info.code, "ada")
    assert member.nickname == "ada" and s.my_answer(info.code, again, "p3.mask") is None
    assert [m.nickname for m in s.members(info.code)] == ["Bo", "ada"]
    s.delete_class(info.code, lecturer)
    with pytest.raises(ClassroomError, match="no class"):
        s.leave(info.code, bo)  # the class is gone: nothing to leave, and said so


# ------------------------------------------------------------------------------ follow the lecturer


def test_lecturer_state_is_published_with_a_version_and_only_by_the_lecturer(db_url):
    s = ClassroomStore(db_url, **generous())
    info, lecturer = s.create_class()
    _, ada = s.join(info.code, "Ada")
    assert s.lecturer_state(info.code).version == 0
    s.publish_state(info.code, lecturer, "causal-attention", 2, {"mask": "1"})
    state = s.publish_state(info.code, lecturer, "causal-attention", 3, {"mask": "1"})
    assert (state.version, state.page, state.step) == (2, "causal-attention", 3)
    seen = s.lecturer_state(info.code)
    assert (seen.version, seen.page, seen.step, seen.settings) == (2, "causal-attention", 3, {"mask": "1"})
    with pytest.raises(NotAllowed):
        s.publish_state(info.code, ada, "home", 0)
    with pytest.raises(ClassroomError, match="too large"):
        s.publish_state(info.code, lecturer, "p", 0, {f"k{i}": "v" * 1000 for i in range(40)})
    assert s.lecturer_state(info.code).version == 2


def test_the_pulse_is_one_shared_read_that_this_process_s_writes_refresh(db_url):
    s = ClassroomStore(db_url, **generous())
    info, lecturer = s.create_class()
    s.publish_state(info.code, lecturer, "causal-attention", 1, {"mask": "1"})
    first = s.pulse(info.code)
    assert (first.lecturer.version, first.lecturer.page, first.revealed) == (1, "causal-attention", frozenset())
    # followers ticking within max_age share the read (the same object, no database round trip)
    assert s.pulse(info.code.lower()) is first
    # a move, a reveal and a hide made through this store are seen at once
    s.publish_state(info.code, lecturer, "causal-attention", 2, {"mask": "0"})
    moved = s.pulse(info.code)
    assert (moved.lecturer.version, moved.lecturer.step, moved.lecturer.settings) == (2, 2, {"mask": "0"})
    s.reveal(info.code, lecturer, "p3.mask")
    assert s.pulse(info.code).revealed == {"p3.mask"}
    s.hide_reveal(info.code, lecturer, "p3.mask")
    assert s.pulse(info.code).revealed == frozenset()


def test_another_replica_s_move_reaches_the_pulse_within_its_age(db_url):
    here, replica = ClassroomStore(db_url, **generous()), ClassroomStore(db_url, **generous())
    info, lecturer = replica.create_class()
    assert here.pulse(info.code).lecturer.version == 0
    replica.publish_state(info.code, lecturer, "self-attention", 4)
    assert here.pulse(info.code, max_age_s=60).lecturer.version == 0  # the shared read, still young
    assert here.pulse(info.code, max_age_s=0).lecturer.version == 1  # older than allowed: read again


def test_an_ended_class_s_pulse_is_never_served_from_memory(db_url):
    clock = FakeClock()
    s = ClassroomStore(db_url, clock=clock, **generous())
    info, lecturer = s.create_class(ttl_s=60)
    s.pulse(info.code)
    clock.now += 61  # expired: the cached pulse must not outlive the class
    with pytest.raises(ClassroomError, match="no class"):
        s.pulse(info.code, max_age_s=3600)
    other, other_lecturer = s.create_class()
    s.pulse(other.code)
    s.delete_class(other.code, other_lecturer)
    with pytest.raises(ClassroomError):
        s.pulse(other.code, max_age_s=3600)


def test_a_lost_lecturer_session_gets_a_new_token_and_the_old_one_stops_working(db_url):
    s = ClassroomStore(db_url, **generous())
    info, old = s.create_class()
    assert s.is_lecturer(info.code, old)
    new = s.replace_lecturer_token(info.code)
    assert s.is_lecturer(info.code, new) and not s.is_lecturer(info.code, old)
    with pytest.raises(NotAllowed):
        s.reveal(info.code, old, "p1.q")


# ------------------------------------------------------------------------------ challenge


def test_challenge_submissions_leaderboard_hiding_and_closing(db_url):
    s = ClassroomStore(db_url, **generous())
    info, lecturer = s.create_class()
    _, ada = s.join(info.code, "Ada")
    _, bo = s.join(info.code, "=Bo")
    with pytest.raises(NotAllowed):
        s.open_challenge(info.code, ada, "mine", 10_000, 60)
    challenge = s.open_challenge(info.code, lecturer, "Lowest loss", 10_000, 60)
    assert s.current_challenge(info.code).is_open
    s.submit(info.code, ada, challenge.id, FakeEvaluation(val_loss=2.3))
    best = s.submit(info.code, ada, challenge.id, FakeEvaluation(val_loss=2.0, steps=200, seconds=40.0))
    s.submit(info.code, bo, challenge.id, FakeEvaluation(val_loss=2.1))
    board = s.leaderboard(info.code, challenge.id)
    assert [(e.nickname, e.val_loss) for e in board] == [("Ada", 2.0), ("=Bo", 2.1)]  # best per member
    assert board[0].samples == ["ada", "bo", "cy", "di", "ed"] and board[0].settings == {"n_layer": "2"}

    over_limits = (FakeEvaluation(n_params=10_001), FakeEvaluation(seconds=61), FakeEvaluation(val_loss=float("nan")))
    for too_much in over_limits:
        with pytest.raises(ClassroomError):
            s.submit(info.code, bo, challenge.id, too_much)
    # a run just over the time limit is told by how much: rounded to whole seconds, it would read
    # "60 s; at most 60 s"
    with pytest.raises(ClassroomError, match=r"trained for 60\.4 s; this challenge allows at most 60 s\."):
        s.submit(info.code, bo, challenge.id, FakeEvaluation(seconds=60.4))

    with pytest.raises(NotAllowed):
        s.hide_submission(info.code, bo, best.id)
    s.hide_submission(info.code, lecturer, best.id)
    assert [(e.nickname, e.val_loss) for e in s.leaderboard(info.code, challenge.id)] == [("=Bo", 2.1), ("Ada", 2.3)]
    assert len(s.submissions(info.code, challenge.id, include_hidden=True)) == 3

    csv_text = store_module.submissions_csv(s.leaderboard(info.code, challenge.id))
    assert csv_text.splitlines()[1].startswith("1,'=Bo,2.1000")  # no spreadsheet formula

    s.close_challenge(info.code, lecturer, challenge.id)
    assert not s.current_challenge(info.code).is_open
    with pytest.raises(ClassroomError, match="closed"):
        s.submit(info.code, ada, challenge.id, FakeEvaluation())


def test_submissions_are_rate_limited(db_url):
    s = ClassroomStore(db_url, submission_limit=(2, 600))
    info, lecturer = s.create_class()
    _, ada = s.join(info.code, "Ada")
    challenge = s.open_challenge(info.code, lecturer, "c", 10_000, 60)
    s.submit(info.code, ada, challenge.id, FakeEvaluation())
    s.submit(info.code, ada, challenge.id, FakeEvaluation(steps=200, seconds=40.0))
    with pytest.raises(RateLimited, match="Too many submissions"):
        s.submit(info.code, ada, challenge.id, FakeEvaluation(steps=300, seconds=60.0))
    assert len(s.submissions(info.code, challenge.id)) == 2


def test_a_run_at_one_step_enters_once(db_url):
    """The same run at the same step (same steps, parameters and training seconds) is refused with
    the stored entry; trained further, or a different run, it enters; a repeat does not use up the
    rate limit, and a hidden entry still counts as entered."""
    s = ClassroomStore(db_url, submission_limit=(2, 600))
    info, lecturer = s.create_class()
    _, ada = s.join(info.code, "Ada")
    _, bo = s.join(info.code, "Bo")
    challenge = s.open_challenge(info.code, lecturer, "c", 10_000, 60)
    run = FakeEvaluation(val_loss=2.2, steps=100, seconds=20.123456)
    first = s.submit(info.code, ada, challenge.id, run)
    for _ in range(3):  # more repeats than the limit allows submissions: refused as repeats each time
        with pytest.raises(store_module.AlreadyEntered, match=r"already on the board \(your entry at step 100: "
                                                              r"validation loss 2\.2000\)") as refused:
            s.submit(info.code, ada, challenge.id, FakeEvaluation(val_loss=2.2, steps=100, seconds=20.123456))
        assert refused.value.entry == first
    s.submit(info.code, bo, challenge.id, run)  # someone else's run with the same figures: theirs
    s.hide_submission(info.code, lecturer, first.id)
    with pytest.raises(store_module.AlreadyEntered, match="The lecturer has hidden it"):
        s.submit(info.code, ada, challenge.id, run)
    # trained further (more steps and seconds): a new entry, and the limit's second submission
    s.submit(info.code, ada, challenge.id, FakeEvaluation(val_loss=2.1, steps=150, seconds=30.5))
    assert sorted((e.nickname, e.steps) for e in s.submissions(info.code, challenge.id, include_hidden=True)) == \
        [("Ada", 100), ("Ada", 150), ("Bo", 100)]


def test_racing_submissions_of_one_run_store_one_entry(db_url):
    """Eight submissions of the same run at once (a double click, several tabs, several replicas),
    five runs in a row: each run is stored once, every other submission of it is told it is
    already entered. (Without the row lock on PostgreSQL about one round in three stored twice.)"""
    s = ClassroomStore(db_url, **generous())
    info, lecturer = s.create_class()
    _, ada = s.join(info.code, "Ada")
    challenge = s.open_challenge(info.code, lecturer, "c", 10_000, 60)
    n, rounds = 8, 5
    for round_ in range(rounds):
        barrier = threading.Barrier(n)
        outcomes: list[str] = []

        def click(seconds: float = 30.25 + round_) -> None:
            barrier.wait()
            try:
                s.submit(info.code, ada, challenge.id, FakeEvaluation(steps=100 + round_, seconds=seconds))
                outcomes.append("stored")
            except store_module.AlreadyEntered:
                outcomes.append("repeat")

        threads = [threading.Thread(target=click) for _ in range(n)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert sorted(outcomes) == ["repeat"] * (n - 1) + ["stored"], f"round {round_}"
    assert len(s.submissions(info.code, challenge.id, include_hidden=True)) == rounds


def test_the_submission_limit_holds_across_replicas_and_frees_up_with_time(db_url):
    """Two stores on one database, as two replicas behind a load balancer: the limit counts the
    member's stored submissions, so a third one through the other replica is refused with the
    wait until the oldest leaves the window; a refused one is not stored and does not count;
    another member is not limited."""
    clock = FakeClock()
    one = ClassroomStore(db_url, clock=clock, submission_limit=(2, 600))
    two = ClassroomStore(db_url, clock=clock, submission_limit=(2, 600))
    info, lecturer = one.create_class()
    _, ada = one.join(info.code, "Ada")
    _, bo = two.join(info.code, "Bo")
    challenge = one.open_challenge(info.code, lecturer, "c", 10_000, 60)
    one.submit(info.code, ada, challenge.id, FakeEvaluation(steps=100))
    clock.now += 100
    two.submit(info.code, ada, challenge.id, FakeEvaluation(steps=200))
    clock.now += 50
    for store in (two, one):
        with pytest.raises(RateLimited, match=r"^Too many submissions in a short time; try again in 450 s\.$"):
            store.submit(info.code, ada, challenge.id, FakeEvaluation(steps=300))
    two.submit(info.code, bo, challenge.id, FakeEvaluation(steps=300))  # Bo's own limit
    clock.now += 449  # one second before the first submission is 10 minutes old
    with pytest.raises(RateLimited, match="try again in 1 s"):
        two.submit(info.code, ada, challenge.id, FakeEvaluation(steps=300))
    clock.now += 1
    two.submit(info.code, ada, challenge.id, FakeEvaluation(steps=300))
    assert sorted((e.nickname, e.steps) for e in one.submissions(info.code, challenge.id)) == \
        [("Ada", 100), ("Ada", 200), ("Ada", 300), ("Bo", 300)]
    with pytest.raises(ValueError, match="submission limit"):
        ClassroomStore(db_url, submission_limit=(0, 600))


def test_racing_submissions_through_two_replicas_stay_within_the_limit(db_url):
    """Eight different runs of one member submitted at once, half through each of two stores on
    one database, with a limit of three: exactly three are stored, five refused, in each of three
    rounds (a new window each round)."""
    clock = FakeClock()
    replicas = [ClassroomStore(db_url, clock=clock, submission_limit=(3, 600)) for _ in range(2)]
    info, lecturer = replicas[0].create_class()
    _, ada = replicas[1].join(info.code, "Ada")
    challenge = replicas[0].open_challenge(info.code, lecturer, "c", 10_000, 60)
    n = 8
    for round_ in range(3):
        barrier = threading.Barrier(n)
        outcomes: list[str] = []

        def click(i: int) -> None:
            barrier.wait()
            try:
                replicas[i % 2].submit(info.code, ada, challenge.id, FakeEvaluation(steps=1000 * round_ + i))
                outcomes.append("stored")
            except RateLimited:
                outcomes.append("limited")

        threads = [threading.Thread(target=click, args=(i,)) for i in range(n)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert sorted(outcomes) == ["limited"] * (n - 3) + ["stored"] * 3, f"round {round_}"
        clock.now += 600
    assert len(replicas[0].submissions(info.code, challenge.id)) == 9


# ------------------------------------------------------------------------------ expiry and deletion


def test_classes_expire_and_expired_ones_are_purged(db_url):
    clock = FakeClock()
    s = ClassroomStore(db_url, clock=clock, **generous())
    info, lecturer = s.create_class(ttl_s=3600)
    keep, _ = s.create_class(ttl_s=7 * 24 * 3600)
    _, ada = s.join(info.code, "Ada")
    s.answer(info.code, ada, "p1.q", "a")
    assert s.find_class(info.code.lower()) == info  # codes are typed in any case
    clock.now += 3601
    assert s.find_class(info.code) is None
    with pytest.raises(ClassroomError, match="no class"):
        s.answer(info.code, ada, "p1.q", "b")
    assert s.purge_expired() == 1
    with s.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(store_module.answers)).scalar() == 0
        assert conn.execute(sa.select(sa.func.count()).select_from(store_module.members)).scalar() == 0
    assert s.find_class(keep.code) == keep


def test_the_lecturer_deletes_a_class_with_everything_in_it(db_url):
    s = ClassroomStore(db_url, **generous())
    info, lecturer = s.create_class()
    other, _ = s.create_class()
    _, ada = s.join(info.code, "Ada")
    _, cy = s.join(other.code, "Cy")
    s.answer(info.code, ada, "p1.q", "a")
    s.answer(other.code, cy, "p1.q", "a")
    challenge = s.open_challenge(info.code, lecturer, "c", 10_000, 60)
    s.submit(info.code, ada, challenge.id, FakeEvaluation())
    with pytest.raises(NotAllowed):
        s.delete_class(info.code, ada)
    s.delete_class(info.code, lecturer)
    assert s.find_class(info.code) is None
    with s.engine.connect() as conn:
        for table in (store_module.members, store_module.answers, store_module.challenges, store_module.submissions):
            remaining = conn.execute(sa.select(sa.func.count()).select_from(table)).scalar()
            assert remaining == (1 if table in (store_module.members, store_module.answers) else 0), table.name
    assert s.poll(other.code, "p1.q").total == 1  # the other class is untouched


# ------------------------------------------------------------------------------ schema


def test_the_schema_is_versioned_and_migrating_again_changes_nothing(db_url):
    s = ClassroomStore(db_url)
    with s.engine.connect() as conn:
        version = conn.execute(sa.select(store_module.schema_version.c.version)).scalar_one()
    assert version == store_module.SCHEMA_VERSION
    assert store_module.migrate(s.engine) == store_module.SCHEMA_VERSION  # it was already there
    with s.engine.begin() as conn:
        conn.execute(store_module.schema_version.update().values(version=store_module.SCHEMA_VERSION + 1))
    with pytest.raises(RuntimeError, match="update the app"):
        store_module.migrate(s.engine)


# ------------------------------------------------------------------------------ concurrency


def test_sixty_students_answering_at_once_are_each_counted_exactly_once(db_url):
    s = ClassroomStore(db_url)
    info, _ = s.create_class()
    tokens = [s.join(info.code, f"student {i}")[1] for i in range(60)]
    barrier = threading.Barrier(60)
    errors: list[BaseException] = []

    def student(i: int) -> None:
        try:
            # Each one opens its own store (as each session does); the engine is shared.
            session_store = ClassroomStore(db_url)
            barrier.wait(timeout=60)
            session_store.answer(info.code, tokens[i], "p3.mask", "first")
            session_store.answer(info.code, tokens[i], "p3.mask", "even" if i % 2 == 0 else "odd")
            session_store.answer(info.code, tokens[i], "p4.heads", str(i % 3))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=student, args=(i,)) for i in range(60)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors[:3]
    assert s.poll(info.code, "p3.mask").counts == {"even": 30, "odd": 30}
    assert s.poll(info.code, "p4.heads").counts == {"0": 20, "1": 20, "2": 20}


# ------------------------------------------------------------------------------ durability

WRITER = textwrap.dedent("""
    import sys
    from core.classroom.security import RateLimiter
    from core.classroom.store import ClassroomStore
    url, code, token = sys.argv[1:4]
    s = ClassroomStore(url, answer_limiter=RateLimiter(10**6, 1))
    i = 0
    while True:
        s.answer(code, token, f"q{i}", f"choice {i}")
        print(i, flush=True)  # printed only after the commit returned
        i += 1
""")


def test_a_kill_9_loses_no_committed_answer(db_url):
    s = ClassroomStore(db_url)
    info, _ = s.create_class()
    _, token = s.join(info.code, "Ada")
    writer = subprocess.Popen([sys.executable, "-c", WRITER, db_url, info.code, token], cwd=REPO_ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    committed = []
    try:
        deadline = time.monotonic() + 60
        while len(committed) < 25 and time.monotonic() < deadline:
            line = writer.stdout.readline()
            if not line:
                break
            committed.append(int(line))
        writer.send_signal(signal.SIGKILL)  # mid-write, most likely
        rest, err = writer.communicate(timeout=30)
    finally:
        if writer.poll() is None:
            writer.kill()
    committed += [int(line) for line in rest.split()]
    assert len(committed) >= 25, err[-2000:]

    store_module.dispose_engine(db_url)  # reopen from scratch, as a restarted server would
    reopened = ClassroomStore(db_url)
    for i in committed:
        assert reopened.poll(info.code, f"q{i}").counts == {f"choice {i}": 1}
    assert writer.returncode == -signal.SIGKILL


def test_a_code_of_the_wrong_length_is_named_as_likely_mistyped(db_url):
    """A five-character code got "there is no class with the code WP7FK", as if the class had
    ended; a code of another length than the store's is most likely mistyped, and says so."""
    s = ClassroomStore(db_url, **generous())
    info, _ = s.create_class()
    with pytest.raises(ClassroomError, match=f"join codes have 6 characters, this has {len(info.code) - 1}"):
        s.join(info.code[:-1], "Ada")
    with pytest.raises(ClassroomError, match=r"\(it may have ended\)"):
        s.join("ZZZZZZ" if info.code != "ZZZZZZ" else "YYYYYY", "Ada")


def test_a_seat_is_taken_back_from_the_same_browser_after_the_server_lost_the_session(db_url):
    """A server restart loses every session: the student's browser still has its desk token, and
    takes its seat back with it (a new member token; the old one stops working), answers kept.
    Another browser gets nothing; a seat left, or a class deleted, cannot be taken back."""
    s = ClassroomStore(db_url, **generous())
    info, lecturer = s.create_class()
    ada, ada_token = s.join(info.code, "Ada", desk="desk-of-ada-0123456789")
    s.answer(info.code, ada_token, "p3.mask", "row")
    assert s.reclaim_seat("desk-of-someone-else-0") is None
    assert s.reclaim_seat("") is None
    code, member, token = s.reclaim_seat("desk-of-ada-0123456789")
    assert (code, member.id, member.nickname) == (info.code, ada.id, "Ada") and token != ada_token
    assert s.my_answer(info.code, token, "p3.mask") == "row"  # the same seat, answers and all
    with pytest.raises(NotAllowed):
        s.my_answer(info.code, ada_token, "p3.mask")  # the lost session's token no longer works
    with pytest.raises(ClassroomError, match="already has that nickname"):
        s.join(info.code, "ada")  # still hers
    s.leave(info.code, token)
    assert s.reclaim_seat("desk-of-ada-0123456789") is None
    _, bo_token = s.join(info.code, "Bo", desk="desk-of-bo-01234567890")
    s.delete_class(info.code, lecturer)
    assert s.reclaim_seat("desk-of-bo-01234567890") is None


def test_a_database_of_schema_1_gets_the_seat_browsers_table_and_keeps_its_classes(db_url):
    """A class database made before member_desks (version 1), with a class in it: migrating adds
    the table, the class and its members stay, and a new join can be taken back."""
    s = ClassroomStore(db_url, **generous())
    info, _ = s.create_class()
    s.join(info.code, "Ada")
    with s.engine.begin() as conn:
        store_module.member_desks.drop(conn)
        conn.execute(store_module.schema_version.update().values(version=1))
    assert store_module.migrate(s.engine) == 1
    assert [m.nickname for m in s.members(info.code)] == ["Ada"]
    s.join(info.code, "Bo", desk="desk-of-bo-01234567890")
    assert s.reclaim_seat("desk-of-bo-01234567890")[1].nickname == "Bo"
