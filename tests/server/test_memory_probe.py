"""server/memory_probe.py: its numbers follow the memory (they grow when memory is taken), it
reports only when asked, and it names who holds what; benchmarks/memory_diff.py reads its snapshots."""

import gc
import json
import tracemalloc

import pytest

from server import housekeeping, memory_probe

MB = 2**20


@pytest.fixture(autouse=True)
def _no_probe_file(monkeypatch):
    monkeypatch.delenv(memory_probe.PROBE_ENV, raising=False)


def test_the_resident_size_grows_with_memory_taken():
    before = memory_probe._rss_mb()
    block = b"x" * (64 * MB)  # written, so every page is resident
    during = memory_probe._rss_mb()
    assert during - before >= 50
    del block


def test_glibc_counts_a_large_block_while_it_is_held():
    libc = housekeeping._libc()
    if libc is None or not hasattr(libc, "mallinfo2"):
        pytest.skip("no glibc mallinfo2 here")
    before = memory_probe._malloc(libc)
    block = b"x" * (64 * MB)  # above glibc's largest mmap threshold: a mapping of its own
    during = memory_probe._malloc(libc)
    assert during["malloc_mmap_mb"] - before["malloc_mmap_mb"] >= 63
    del block
    assert memory_probe._malloc(libc)["malloc_mmap_mb"] <= during["malloc_mmap_mb"] - 63


def test_the_objects_count_grows_with_objects_made():
    gc.collect()  # garbage left by earlier tests, collected mid-count, would hide what is made here
    before = memory_probe._objects()["gc_objects"]
    made = [[i] for i in range(20_000)]  # lists are tracked by the collector
    assert memory_probe._objects()["gc_objects"] - before >= 19_000
    del made


def test_deep_size_counts_tensor_data_once():
    import numpy as np
    import torch

    tensor = torch.zeros(250_000)  # 1,000,000 bytes of float32
    assert memory_probe.deep_size(tensor, set()) >= 1_000_000
    assert memory_probe.deep_size([tensor, tensor], set()) < 2_000_000  # the same storage once
    assert memory_probe.deep_size({"a": np.zeros(1000)}, set()) >= 8000


def test_without_a_runtime_the_report_has_no_session_numbers():
    report = memory_probe.report(housekeeping._libc(), label="bare")
    assert report["label"] == "bare" and report["rss_mb"] > 10 and report["gc_objects"] > 1000
    assert "sessions_held" not in report and "holders" not in report  # no sessions to count
    assert memory_probe._session_state_sizes() == {}


def test_the_report_lists_a_shared_cache_and_its_entries():
    import streamlit as st

    @st.cache_data
    def probe_cache_square(x: int) -> list[int]:
        return [x] * 1000

    probe_cache_square(2)
    probe_cache_square(3)
    caches = memory_probe._caches()
    found = [v for k, v in caches.items() if k.startswith("data:") and "probe_cache_square" in k]
    assert found and found[0][0] == 2  # two entries
    st.cache_data.clear()


def test_memory_probe_writes_one_json_line_only_when_asked(tmp_path, monkeypatch):
    path = tmp_path / "memory.jsonl"
    monkeypatch.delenv(memory_probe.PROBE_ENV, raising=False)
    memory_probe.write(housekeeping._libc())
    assert not path.exists()
    monkeypatch.setenv(memory_probe.PROBE_ENV, str(path))
    memory_probe.write(housekeeping._libc(), label="test")
    report = json.loads(path.read_text())
    assert report["label"] == "test" and report["rss_mb"] > 10 and report["gc_objects"] > 1000
    if housekeeping._libc() is not None:  # glibc: its own account and what a trim gives back
        assert report["malloc_in_use_mb"] > 0 and report["rss_after_trim_mb"] > 10


def test_memory_probe_splits_the_resident_size_by_mapping():
    report = memory_probe._mappings()
    if not report:
        pytest.skip("no /proc/self/smaps on this platform")
    by_kind = report["rss_by_mapping_mb"]
    assert by_kind.get("file", 0) > 1  # the interpreter and its libraries are mapped files
    assert sum(by_kind.values()) <= memory_probe._rss_mb() * 1.05 + 1
    assert report.get("pymalloc_arenas", 1) >= 1


KEPT_FOR_THE_PROBE = {}  # a module-level holder for the probe to find


class OnlyThisTestMakesThese:
    pass


def test_memory_probe_names_who_holds_an_object_nobody_should():
    KEPT_FOR_THE_PROBE["kept"] = OnlyThisTestMakesThese()
    try:
        found = memory_probe.holders(("OnlyThisTestMakesThese",))["holders"]["OnlyThisTestMakesThese"]
        assert found[0] == 1
        assert "dict['kept'] <- dict['KEPT_FOR_THE_PROBE'] <- module" in found[1]
    finally:
        KEPT_FOR_THE_PROBE.clear()
    assert memory_probe.holders(("OnlyThisTestMakesThese",))["holders"]["OnlyThisTestMakesThese"] == [0]


def test_memory_probe_lists_objects_in_regions_new_since_its_first_report(monkeypatch):
    class Made:
        pass

    made = [Made() for _ in range(5000)]
    theirs = {id(obj) >> 20 for obj in made}
    monkeypatch.setattr(memory_probe, "_first_regions", set())
    assert "new_regions" not in memory_probe.new_regions()  # the first call only remembers
    # In a long test session the allocator reuses old regions, so say they were not in use before
    memory_probe._first_regions.difference_update(theirs)
    report = memory_probe.new_regions()
    assert report["new_regions"] >= len(theirs)
    made_there = sum(n for name, n in report["new_region_types"] if name.endswith("Made"))
    assert made_there >= 5000
    del made


def test_memory_diff_counts_the_small_blocks_a_site_gained(tmp_path):
    from benchmarks import memory_diff

    tracemalloc.start(4)
    try:
        before = tracemalloc.take_snapshot()
        kept = [object() for _ in range(5000)]  # 16-byte blocks, all from this line
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    counts_before, _ = memory_diff.small_blocks(before, 512)
    counts_after, sizes_after = memory_diff.small_blocks(after, 512)
    here = [tb for tb in counts_after if tb[-1].filename == __file__]
    gained = sum(counts_after[tb] - counts_before.get(tb, 0) for tb in here)
    assert gained >= 5000 and len(kept) == 5000
