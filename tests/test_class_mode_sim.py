"""The class-mode simulator's pure parts (benchmarks/classroom_sim/class_mode.py): the exactly-once
check of the answers, the poll lag and the follow lag (no server needed)."""

import math

from benchmarks.classroom_sim.class_mode import exactly_once, follow_lags, p95_with_missed, poll_lags


def test_exactly_once_finds_missing_wrong_and_extra_answers():
    sent = {("ada", "q1"): "a", ("alan", "q1"): "b", ("eve", "q1"): "a"}
    stored = {("ada", "q1"): ["a"], ("alan", "q1"): ["c"], ("bob", "q1"): ["a"], ("kim", "q1"): ["b"]}
    check = exactly_once(sent, stored, unconfirmed={("kim", "q1")})
    assert check == {"missing": {("eve", "q1")}, "wrong": {("alan", "q1")}, "extra": {("bob", "q1")}}
    assert not any(exactly_once(sent, {k: [v] for k, v in sent.items()}, set()).values())


def test_poll_lag_waits_for_a_count_that_includes_the_answer():
    acks = [(10.0, "q"), (11.0, "q")]
    views = [(9.5, "q", 0), (10.5, "q", 0), (11.2, "q", 1), (12.1, "q", 2), (20.0, "q", 2)]
    result = poll_lags(acks, views)
    assert [round(x, 2) for x in result["lags"]] == [1.2, 1.1]
    assert result["missed"] == result["unmeasured"] == 0


def test_poll_lag_tells_missed_from_unmeasured():
    assert poll_lags([(10.0, "q")], [(9.0, "q", 0), (11.0, "q", 0), (13.0, "q", 0)])["missed"] == 1
    assert poll_lags([(10.0, "q")], [(9.0, "q", 0), (10.5, "q", 0)])["unmeasured"] == 1  # the lecturer moved on
    assert poll_lags([(5.0, "q")], [(9.0, "q", 1)])["unmeasured"] == 1  # answered before the lecturer came


def test_follow_lag_counts_followers_who_joined_before_the_move():
    moves = [(100.0, 1, "simple_attention", {"step": "scores"}), (110.0, 2, "simple_attention", {"step": "weights"})]
    landings = {
        "ada": [(100.8, "simple_attention", {"step": "scores"}), (111.5, "simple_attention", {"step": "weights"})],
        "alan": [(101.0, "simple_attention", {"step": "scores"})],  # never reached step 2
        "late": [(112.0, "simple_attention", {"step": "weights"})],
        "off": [],
    }
    joined = {"ada": 90.0, "alan": 90.0, "late": 105.0, "off": 90.0}
    result = follow_lags(moves, landings, joined, {"off": [[95.0, math.inf]]})
    assert sorted(round(x, 2) for x in result["lags"]) == [0.8, 1.0, 1.5, 2.0]
    assert result["missed"] == 1 and result["missed_samples"][0][:2] == ("alan", 2)


def test_a_missed_case_counts_as_never():
    assert p95_with_missed([0.5] * 19, 1) == 0.5
    assert p95_with_missed([0.5] * 10, 5) == math.inf


def test_a_step_the_lecturer_left_at_once_may_be_skipped():
    moves = [(100.0, 1, "multi_head", {"mh_step": "why"}), (100.5, 2, "class", {})]
    landings = {"ada": [(101.0, "class", {})]}
    result = follow_lags(moves, landings, {"ada": 90.0}, {})
    assert result["missed"] == 0 and [round(x, 2) for x in result["lags"]] == [0.5]


def test_a_student_who_stops_following_before_landing_is_not_counted():
    moves = [(100.0, 1, "multi_head", {"mh_step": "why"})]
    result = follow_lags(moves, {"bob": []}, {"bob": 99.0}, {"bob": [[100.2, math.inf]]})
    assert result == {"lags": [], "missed": 0, "missed_samples": []}
