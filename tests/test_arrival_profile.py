"""benchmarks/arrival_profile.py sorts a py-spy recording's stacks into what a lecturer can act on."""

from __future__ import annotations

from benchmarks.arrival_profile import breakdown, category, parse

RUNNER = "_run_script (streamlit/runtime/scriptrunner/script_runner.py:961)"
ENTRY = "<module> (streamlit_app.py:65)"


def test_each_stack_goes_to_the_first_rule_that_matches(tmp_path):
    raw = tmp_path / "arrival.txt"
    raw.write_text("\n".join([
        f"{RUNNER};{ENTRY};<module> (5_tokens_data.py:332);show_chart (ui/charts.py:33) 40",
        f"{RUNNER};{ENTRY};<module> (home.py:12) 3",
        f"{RUNNER};tick (ui/live.py:102);train (core/training/trainer.py:420);forward (core/models.py:509) 25",
        f"{RUNNER};{ENTRY};follow_panel (ui/class_follow.py:98) 2",
        "_run (tornado/ioloop.py:10);write_message (streamlit/web/server/browser_websocket_handler.py:99) 5",
        "run (threading.py:982);_reap (server/housekeeping.py:230) 1",
        "run (threading.py:982);wait (threading.py:320) 7",
        "not a stack line",
    ]) + "\n", encoding="utf-8")
    counts = breakdown(parse(raw))
    assert counts == {"page script: 5_tokens_data": 40, "page script: home": 3,
                      "training: names GPT (Train page)": 25,
                      "entry point (navigation, sidebar, class follow)": 2,
                      "websocket and messages (tornado)": 5,
                      "housekeeping (session reaper, malloc_trim)": 1,
                      "waiting (a thread blocked in a lock or a poll)": 7}


def test_a_stack_nothing_names_is_other():
    assert category(["run (threading.py:982)", "compute (numpy/core/foo.py:1)"]) == "other"
