"""The class-mode simulator's pure parts (benchmarks/classroom_sim/class_mode.py): the exactly-once
check of the answers, the poll lag and the follow lag, and --soak's checks after a kill -9 (no server
needed)."""

import math

from benchmarks.classroom_sim.class_mode import (acknowledged_runs, current_nickname, exactly_once, follow_lags,
                                                 followers_back,
                                                 p95_with_missed, poll_lags, rejoin_nickname, runs_kept,
                                                 split_at, submitted_figures)


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


# ------------------------------------------------------------------------------ --soak (a kill -9 mid-class)
def test_a_member_joins_again_under_a_new_nickname_after_a_restart():
    renamed = {}
    assert rejoin_nickname("ada", renamed) == "ada-r1"
    assert current_nickname("ada", renamed) == "ada"
    renamed["ada-r1"] = "ada"
    renamed["alan-r1"] = "alan"
    assert rejoin_nickname("ada", renamed) == "ada-r2"  # a second restart
    assert current_nickname("ada", renamed) == "ada-r1"


def test_answers_split_at_the_kill():
    sent = {("ada", "q1"): "a", ("ada-r1", "q2"): "b", ("bob", "q1"): "c"}
    at = {("ada", "q1"): 10.0, ("ada-r1", "q2"): 30.0}
    before, after = split_at(sent, at, when=20.0)
    assert before == {("ada", "q1"): "a", ("bob", "q1"): "c"}  # no time: counted before (checked, never skipped)
    assert after == {("ada-r1", "q2"): "b"}


def test_the_figures_of_a_submitted_message():
    message = "Submitted: validation loss 2.4312 with 151,296 parameters. See the board on the Class page."
    assert submitted_figures(message) == (2.4312, 151296)
    assert submitted_figures("Could not score your run") is None
    entries = [{"nickname": "t1", "accepted": True, "message": message},
               {"nickname": "t2", "accepted": False, "message": "Could not ..."},
               {"nickname": "t3", "accepted": True, "message": ""}]
    assert acknowledged_runs(entries) == {"t1": (2.4312, 151296)}


def test_runs_kept_finds_missing_changed_and_doubled_runs():
    acked = {"t1": (2.4312, 151296), "t2": (2.5, 100), "t3": (2.6, 100), "t4": (2.7, 100)}
    stored = {"t1": [(2.4312, 151296)], "t2": [(2.51, 100)], "t4": [(2.7, 100), (2.7, 100)], "t5": [(3.0, 1)]}
    assert runs_kept(acked, stored) == {"missing": {"t3"}, "wrong": {"t2"}, "twice": {"t4"}}
    assert not any(runs_kept({"t1": (2.4312, 151296)}, stored).values())


def test_a_follower_is_back_once_it_lands_beyond_the_class_page_after_joining_again():
    landings = {"ada": [(5.0, "simple_attention", {}), (21.0, "class", {}), (23.0, "self_attention", {})],
                "bob": [(5.0, "simple_attention", {}), (21.0, "class", {})]}
    assert followers_back(landings, {"ada": 20.0, "bob": 20.0}) == {"ada"}


def test_a_soak_run_adds_its_target_lines():
    from benchmarks.classroom_sim.report import targets

    result = {"class_mode": True, "soak": True, "trainers": 1, "class_errors": 0, "interaction_p95_s": 0.2,
              "answers_counted_once": True, "poll_lag_p95_s": 0.9, "follow_lag_p95_s": 0.9, "peak_rss_mb": 500,
              "board_entries_shown": 1, "soak_restart_s": 0.7, "soak_answers_before_kill_kept": True,
              "soak_submissions_before_kill_kept": True, "soak_class_works_after_restart": False,
              "soak_errors_after_kill": 0}
    verdicts = targets(result)
    assert verdicts["answers acked before the kill stored once"] and verdicts["0 errors after the kill"]
    assert verdicts["the class works after the restart"] is False
    assert not any("kill" in name for name in targets({**result, "soak": False}))


def test_students_arrive_spread_over_the_window_not_all_at_once():
    from benchmarks.classroom_sim.phases import arrival_times

    times = arrival_times(60, 60.0)
    assert times == sorted(times) and all(0 <= t <= 60 for t in times)
    assert len(set(times)) == 60  # until 2026-11-27 the class mode gave every student the same time
    assert max(times) - min(times) > 45  # spread over the minute
    assert sum(t < 30 for t in times) in range(18, 43)  # about half in each half
    assert arrival_times(60, 60.0) == times  # the same class every run


def test_the_board_reader_gives_the_nicknames_as_typed():
    """The lecturer's board is an st.table of Markdown cells (nicknames escaped): the simulator reads
    them back as the students typed them, and ignores other tables."""
    import pyarrow as pa

    from benchmarks.classroom_sim.class_mode import board_names
    from core.classroom.security import escape_markdown

    typed = ["trainer-01", "*Grace* [x](y)", "a<b>&c", "=cy"]

    def arrow(columns: dict) -> bytes:
        sink = pa.BufferOutputStream()
        table = pa.table(columns)
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        return sink.getvalue().to_pybytes()

    board = arrow({"nickname": [escape_markdown(n) for n in typed], "validation loss": [2.0, 2.1, 2.2, 2.3]})
    assert board_names(board) == "board:" + "\n".join(typed)
    assert board_names(arrow({"nickname": ["x"], "loss": [1.0]})) == ""
