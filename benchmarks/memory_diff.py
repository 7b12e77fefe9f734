"""Which allocation sites hold more small Python blocks after a class than before it.

The memory probe (server/memory_probe.py) dumps a tracemalloc snapshot whenever the server holds
at most one session: before the class and after it has left. Run the simulator with
`--memory-probe tracemalloc --server-env PYTHONTRACEMALLOC=10`, then

    python -m benchmarks.memory_diff BEFORE.snap AFTER.snap [--top 25] [--max-size 512]

Only blocks up to --max-size bytes are compared: those are the ones Python's own allocator packs
into its 1 MiB arenas, where one block still alive keeps a whole arena resident. The sites are
grouped by their whole traceback and ordered by how many more blocks they hold after the class.
"""

from __future__ import annotations

import argparse
import collections
import tracemalloc


def small_blocks(snapshot: tracemalloc.Snapshot, max_size: int) -> collections.Counter:
    """(count, bytes) of blocks of at most max_size bytes, per traceback."""
    counts: collections.Counter = collections.Counter()
    sizes: collections.Counter = collections.Counter()
    for trace in snapshot.traces:
        if trace.size <= max_size:
            counts[trace.traceback] += 1
            sizes[trace.traceback] += trace.size
    return counts, sizes


def frame_text(traceback: tracemalloc.Traceback, frames: int) -> str:
    lines = []
    for frame in list(traceback)[:frames]:
        name = frame.filename.split("site-packages/")[-1].split("/main/")[-1]
        lines.append(f"      {name}:{frame.lineno}")
    return "\n".join(lines)


def innermost_line(traceback: tracemalloc.Traceback) -> str:
    """'file:line' of the allocation itself, whatever called it."""
    return f"{traceback[-1].filename.split('site-packages/')[-1]}:{traceback[-1].lineno}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--max-size", type=int, default=512)
    parser.add_argument("--frames", type=int, default=6)
    args = parser.parse_args()
    before_n, before_b = small_blocks(tracemalloc.Snapshot.load(args.before), args.max_size)
    after_n, after_b = small_blocks(tracemalloc.Snapshot.load(args.after), args.max_size)
    print(f"small blocks before {sum(before_n.values()):,} ({sum(before_b.values()) / 2**20:.1f} MB), "
          f"after {sum(after_n.values()):,} ({sum(after_b.values()) / 2**20:.1f} MB)")
    grown = {tb: after_n[tb] - before_n.get(tb, 0) for tb in after_n}
    new_sites = [tb for tb in after_n if tb not in before_n]
    print(f"sites only after the class: {len(new_sites):,} holding {sum(after_n[tb] for tb in new_sites):,} blocks")
    # the same code location, whatever called it: a coarser view
    by_line: collections.Counter = collections.Counter()
    for tb, diff in grown.items():
        by_line[innermost_line(tb)] += diff
    for tb in before_n:
        if tb not in after_n:
            by_line[innermost_line(tb)] -= before_n[tb]
    print("\nby innermost line (more blocks after the class):")
    for where, diff in by_line.most_common(args.top):
        print(f"  {diff:+8,}  {where}")
    print("\nby whole traceback:")
    for tb, diff in sorted(grown.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"  {diff:+8,} blocks, {(after_b[tb] - before_b.get(tb, 0)) / 1024:+9.1f} KB")
        print(frame_text(tb, args.frames))


if __name__ == "__main__":
    main()
