"""Where a busy server's time goes: a py-spy recording of the server, sorted into what a lecturer
can act on (first renders of each page, session set-up, the websocket, training, housekeeping).

Record the server while the simulated class arrives (py-spy samples from outside the process; with
--nonblocking it never pauses the server), then read the recording:

    python benchmarks/student_sim.py &                  # the server's PID is in its log line
    py-spy record --pid PID --duration 60 --rate 50 --nonblocking --format raw -o arrival.txt
    python -m benchmarks.arrival_profile arrival.txt

`--format raw` writes one line per distinct stack: the frames from the thread's root to the
innermost, separated by ";", then the number of samples. A sample is counted once, in the first
category (in ORDER) whose rule matches one of its frames.
"""

from __future__ import annotations

import argparse
import collections
import re
from pathlib import Path

# (category, pattern matched against the frames of a stack), tried in this order
ORDER = [
    ("training: names GPT (Train page)", re.compile(r"core/training/|core/live_training\.py")),
    ("training: Small LM race", re.compile(r"core/lessons/small_lm\.py.*train_step")),
    ("housekeeping (session reaper, malloc_trim)", re.compile(r"server/housekeeping\.py")),
    # py-spy names a page by its file name alone: "<module> (5_tokens_data.py:12)"
    ("page script", re.compile(r"[(/]((?:\d+_\w+)|home)\.py:\d+\)")),
    ("entry point (navigation, sidebar, class follow)", re.compile(r"streamlit_app\.py")),
    ("session set-up (a new browser tab)", re.compile(r"app_session\.py.*__init__|runtime\.py.*create_session|"
                                                      r"connect_session|_create_or_reconnect")),
    ("websocket and messages (tornado)", re.compile(r"tornado/|browser_websocket_handler|forward_msg|"
                                                    r"websocket")),
    ("script runner bookkeeping", re.compile(r"scriptrunner/")),
]
THREAD_IDLE = re.compile(r"\b(wait|select|epoll|poll|sleep|acquire)\b \(")


def parse(path: Path) -> list[tuple[list[str], int]]:
    """[(frames root-first, samples)] from a py-spy --format raw file."""
    stacks = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        head, _, count = line.rpartition(" ")
        if head and count.isdigit():
            stacks.append((head.split(";"), int(count)))
    return stacks


def category(frames: list[str]) -> str:
    text = ";".join(frames)
    for name, rule in ORDER:
        found = rule.search(text)
        if found:
            if name == "page script":
                return f"page script: {found.group(1)}"
            return name
    if THREAD_IDLE.search(frames[-1] if frames else ""):
        return "waiting (a thread blocked in a lock or a poll)"
    return "other"


def breakdown(stacks: list[tuple[list[str], int]]) -> collections.Counter:
    counts: collections.Counter = collections.Counter()
    for frames, samples in stacks:
        counts[category(frames)] += samples
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("raw", type=Path, help="py-spy record --format raw output")
    parser.add_argument("--rate", type=float, default=50.0, help="the recording's samples per second")
    args = parser.parse_args()
    if not args.raw.is_file():
        parser.error(f"no such recording: {args.raw} (make one with py-spy record --format raw)")
    counts = breakdown(parse(args.raw))
    total = sum(counts.values()) or 1
    print(f"{total:,} samples ({total / args.rate:.1f} thread-seconds at {args.rate:g} Hz)")
    for name, samples in counts.most_common():
        print(f"{100 * samples / total:6.1f}%  {samples / args.rate:7.1f} s  {name}")


if __name__ == "__main__":
    main()
