"""Does a training run keep its speed after the student visits another page and comes back?

    python benchmarks/page_switch.py [--measure-s 10] [--away-s 5] [--steps 20000] [--away sample_names]
                                     [--threads N] [--repeats 1]

A real `streamlit run` server on a free loopback port and one headless Chromium (Debian's, with
the flags of benchmarks.harness). The browser opens the Train page on the quick-demo preset
(with more steps, so the run outlasts the measurement), presses Start, and then:

1. before: reads the progress line ("step N of M") twice a second for `--measure-s` seconds;
2. away: clicks the Sample page in the sidebar and stays there `--away-s` seconds;
3. after: clicks the Train page in the sidebar and reads the same run's progress again.

Printed per phase: steps per wall second (what the student sees: the target), the run's own
training speed (the progress line's "steps/s": steps per second spent inside optimisation steps),
their ratio (the duty cycle: the share of wall time spent training) and the CPU seconds per wall
second of the server and of the browser (so a slow phase on a busy machine can be told apart
from a slow app: when other processes take the cores, the training speed falls in both phases).
Target: after / before >= 0.9 for the steps per wall second (the median over --repeats runs).
`--away none` is the control: the same measurement without leaving the Train page, to tell what
a page switch does from what the machine's other load does.

Bounded in time (the whole run stops itself after --limit-s), loopback only. The last line printed
is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.harness import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    StreamlitServer,
    cpu_seconds,
    descendants,
    load_average,
    open_page_url,
)

TARGET = 0.9
PROGRESS = "[data-testid='stProgress']"
PAGE_TITLES = {"train_gpt": "Train the names GPT", "sample_names": "Sample names",
               "inside_model": "Inside the model", "home": "Home"}


def total_cpu(pids: set[int]) -> float:
    """CPU seconds of these processes together (those that still exist)."""
    return sum(cpu_seconds(pid) for pid in pids)


def threads_of(pid: int) -> int:
    """OS threads of a process (a leak of OpenMP teams per page switch would show here)."""
    try:
        return len(list(Path(f"/proc/{pid}/task").iterdir()))
    except OSError:
        return -1


def progress(page) -> tuple[int, float, str]:
    """(step, the run's training steps/s, the whole line) from the Train page's progress bar."""
    bar = page.locator(PROGRESS)
    text = bar.first.inner_text(timeout=2000) if bar.count() else ""
    step = re.search(r"step ([\d,]+) of", text)
    speed = re.search(r"· ([\d,.]+) steps/s", text)
    return (int(step.group(1).replace(",", "")) if step else -1,
            float(speed.group(1).replace(",", "")) if speed else 0.0, text)


def measure(page, seconds: float, server_pid: int) -> dict:
    """Read the progress line every 0.5 s for `seconds`; steps per wall second and CPU shares."""
    browser_pids = descendants(os.getpid()) - {server_pid}
    step0, _, _ = progress(page)
    cpu_server0, cpu_browser0 = cpu_seconds(server_pid), total_cpu(browser_pids)
    start = time.monotonic()
    speeds, steps = [], []
    while time.monotonic() - start < seconds:
        page.wait_for_timeout(500)
        step, speed, text = progress(page)
        steps.append(step)
        if speed:
            speeds.append(speed)
    wall = time.monotonic() - start
    step1, _, text = progress(page)
    wall_rate = (step1 - step0) / wall
    train_rate = sum(speeds) / len(speeds) if speeds else 0.0
    return {"steps": [step0, step1], "wall_s": round(wall, 2),
            "steps_per_wall_s": round(wall_rate, 2),
            "train_steps_per_s": round(train_rate, 2),  # the run's own speed inside its steps
            "duty": round(wall_rate / train_rate, 3) if train_rate else None,
            "server_cpu_per_s": round((cpu_seconds(server_pid) - cpu_server0) / wall, 2),
            "browser_cpu_per_s": round((total_cpu(browser_pids) - cpu_browser0) / wall, 2),
            "load_average": load_average(), "server_threads": threads_of(server_pid),
            "progress_line": text,
            "trace": steps}


def go_to(page, title: str, timeout_s: float = 60) -> None:
    """Click a page in the sidebar and wait until its title is shown."""
    page.locator("[data-testid='stSidebarNav']").get_by_text(title, exact=True).click()
    page.get_by_role("heading", name=title).first.wait_for(timeout=timeout_s * 1000)


def run(args) -> dict:
    from playwright.sync_api import sync_playwright

    server = StreamlitServer(env={"ATTENTION_LAB_TORCH_THREADS": str(args.threads)} if args.threads else None)
    server.start(timeout=60)
    url = server.url
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(60_000)
            # the quick demo's settings with more steps, so the run outlasts the three phases
            open_page_url(page, url, f"train_gpt?max_steps={args.steps}", "Train the names GPT")
            page.get_by_role("button", name="Start", exact=True).first.click()
            deadline = time.monotonic() + 60
            while progress(page)[0] < 1 and time.monotonic() < deadline:
                page.wait_for_timeout(300)
            page.wait_for_timeout(2000)  # past the first validation point and the warm-up
            before = measure(page, args.measure_s, server.pid)
            away_start, away_step = time.monotonic(), before["steps"][1]
            if args.away != "none":  # "none": a control run that stays on the Train page
                go_to(page, PAGE_TITLES[args.away])
            page.wait_for_timeout(args.away_s * 1000)
            if args.away != "none":
                go_to(page, "Train the names GPT")
            page.wait_for_selector(PROGRESS)
            back_at = progress(page)[0]
            after = measure(page, args.measure_s, server.pid)
            browser.close()
    finally:
        server.stop()
    ratio = after["steps_per_wall_s"] / before["steps_per_wall_s"] if before["steps_per_wall_s"] else 0.0
    return {"benchmark": "page_switch", "away_page": args.away, "away_s": args.away_s,
            "measure_s": args.measure_s, "torch_threads": args.threads or "app default",
            "steps_while_away": back_at - away_step,
            "seconds_away": round(time.monotonic() - away_start - args.measure_s, 1),
            "before": before, "after": after, "ratio": round(ratio, 3),
            "target": TARGET, "ok": ratio >= TARGET}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--measure-s", type=float, default=10.0, help="seconds measured per phase")
    parser.add_argument("--away-s", type=float, default=5.0, help="seconds on the other page")
    parser.add_argument("--away", default="sample_names", choices=["sample_names", "inside_model", "home", "none"],
                        help="the page visited in between; none: stay (a control without a switch)")
    parser.add_argument("--steps", type=int, default=20000, help="the run's max_steps (outlasts the test)")
    parser.add_argument("--threads", type=int, default=0, help="ATTENTION_LAB_TORCH_THREADS (0: the app's)")
    parser.add_argument("--repeats", type=int, default=1, help="whole runs (fresh server each); the median ratio counts")
    parser.add_argument("--limit-s", type=float, default=0, help="hard stop for the whole benchmark "
                        "(default: 150 s per repeat)")
    args = parser.parse_args()
    args.limit_s = args.limit_s or 150.0 * args.repeats
    import signal
    import statistics

    def over_limit(*_):
        raise TimeoutError(f"benchmark over its limit of {args.limit_s:.0f} s")

    signal.signal(signal.SIGALRM, over_limit)
    signal.alarm(int(args.limit_s))
    results = []
    for i in range(args.repeats):
        result = run(args)
        results.append(result)
        for phase in ("before", "after"):
            p = result[phase]
            print(f"run {i + 1} {phase:6s}: {p['steps_per_wall_s']:6.2f} steps/s of wall time, run's "
                  f"training speed {p['train_steps_per_s']:6.2f} steps/s (duty {p['duty']}), server CPU "
                  f"{p['server_cpu_per_s']:.2f}/s, browser CPU {p['browser_cpu_per_s']:.2f}/s, "
                  f"server threads {p['server_threads']}, load {p['load_average']}")
        print(f"run {i + 1} ratio after/before: {result['ratio']:.3f}; steps while away: "
              f"{result['steps_while_away']}", flush=True)
    signal.alarm(0)
    ratios = [r["ratio"] for r in results]
    median = statistics.median(ratios)
    print(f"median ratio after/before over {len(ratios)} run(s): {median:.3f} (target >= {TARGET})")
    summary = {key: results[0][key] for key in ("benchmark", "away_page", "away_s", "measure_s", "torch_threads")}
    summary.update({"ratios": ratios, "ratio": round(median, 3), "target": TARGET, "ok": median >= TARGET,
                    "before_steps_per_wall_s": [r["before"]["steps_per_wall_s"] for r in results],
                    "after_steps_per_wall_s": [r["after"]["steps_per_wall_s"] for r in results],
                    "before_duty": [r["before"]["duty"] for r in results],
                    "after_duty": [r["after"]["duty"] for r in results],
                    "load_average": [r["after"]["load_average"][0] for r in results],
                    "runs": results})
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
