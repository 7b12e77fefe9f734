"""ui/housekeeping.py: reaping expired sessions is safe without a Streamlit runtime, and once
per process."""

import threading

from ui import housekeeping


def test_no_runtime_means_nothing_to_reap():
    assert housekeeping.reap_expired_sessions() == 0


def test_start_is_idempotent(monkeypatch):
    monkeypatch.setattr(housekeeping, "_started", False)
    before = threading.active_count()
    housekeeping.start()
    housekeeping.start()
    assert threading.active_count() <= before + 1  # without a runtime no thread starts at all
