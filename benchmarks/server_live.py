"""The Train page on a real server against the headless engine: steps/s and redraws per second.

    python benchmarks/server_live.py [--preset gpu] [--steps 6000] [--repeats 2] [--device cuda] [--browser]

Starts `streamlit run streamlit_app.py` on loopback (benchmarks.harness.StreamlitServer) and opens
the Train page in one of two clients. By default `benchmarks.classroom_sim.client` speaks Streamlit's
websocket protocol and keeps the `run_every` fragment timers as the frontend does, so the server
does exactly the work it does for a browser; only the drawing on the student's own machine is
missing. With --browser the page is opened by headless Chromium driven by Playwright (the
binary and flags of benchmarks.harness; ATTENTION_LAB_CHROMIUM names another binary, e.g. one
unpacked under /tmp on the GPU machine), at 1280x900, so the frontend really draws every tick. The
preset's settings travel in the page's link (`max_steps` raised with --steps so the run lasts long
enough to measure a rate); the tab presses Start and watches the live fragment until the progress
line says the last step is done.

Measured for each run: seconds from the Start click to the last step on screen, steps/s over
that time, redraws per second that showed a new step, and (websocket only) the median fragment
tick (sent to finished). For diagnosis (not the target): seconds from the click to the first step on
screen, and steps/s between the first and the last redraw that showed a step (`between_redraws`). The same settings headless (`Trainer` in this process, on the same
device): seconds and steps/s from construction to the last step, validation passes included in
both. One warm-up of each (CUDA start, kernels, graph capture), then live and headless alternated
`--repeats` times. Target: live steps/s >= 0.9 x headless steps/s.

Without CUDA, `--device cpu --preset quick_demo --steps 300` checks the machinery. The last line
printed is one JSON object; its "client" says which client watched ("chromium" or "websocket").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("STREAMLIT_BROWSER_GATHER_USAGE_STATS", "false")

import torch  # noqa: E402

from benchmarks.classroom_sim.client import Client  # noqa: E402
from benchmarks.classroom_sim.stats import Stats  # noqa: E402
from benchmarks.classroom_sim.trainers import train_progress  # noqa: E402
from benchmarks.harness import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    IDLE,
    StreamlitServer,
    load_average,
    open_page_url,
)
from core import budget, runs, train_settings  # noqa: E402
from core import settings as core_settings  # noqa: E402
from core.training import Trainer  # noqa: E402

TRAIN_URL = "train_gpt"
TRAIN_HEADING = "Train the names GPT"
GOAL_RATIO = 0.9
RUN_TIMEOUT_S = 240.0


# Installed in the Chromium tab before Start: a MutationObserver notes (performance.now(), step,
# total) each time the DOM changes and the progress line shows a step other than the last noted,
# from the Start click on (a capturing click listener takes its time). The page's own clock, no
# polling in between: every redraw that showed a new step is counted, however short.
WATCH_PROGRESS_JS = r"""() => {
  const re = /step ([\d,]+) of ([\d,]+)/;
  const watch = window.__labWatch = {t0: null, shown: []};
  const read = () => {
    for (const bar of document.querySelectorAll("[data-testid='stProgress']")) {
      const m = re.exec(bar.textContent);
      if (m) return [parseInt(m[1].replace(/,/g, "")), parseInt(m[2].replace(/,/g, ""))];
    }
    return null;
  };
  window.addEventListener("click", () => { watch.t0 = performance.now(); }, {capture: true, once: true});
  new MutationObserver(() => {
    const p = watch.t0 === null ? null : read();
    const last = watch.shown[watch.shown.length - 1];
    if (p && (!last || last[1] !== p[0])) watch.shown.push([performance.now() - watch.t0, p[0], p[1]]);
  }).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""
# What the Python side polls: how many new steps were shown, the last one, the alert boxes' texts
# and the exception boxes' (what the websocket client counts as errors).
READ_PROGRESS_JS = """() => {
  const shown = window.__labWatch.shown;
  const texts = (id) => [...document.querySelectorAll(`[data-testid='${id}']`)].map((e) => e.textContent);
  return {count: shown.length, last: shown[shown.length - 1] || null, first: shown.find((s) => s[1] > 0) || null,
          alerts: texts("stAlertContainer"), exceptions: texts("stException")};
}"""


def stop_messages(alerts: list[str]) -> list[str]:
    """The alert boxes that mean the run will not reach its last step (both clients watch for them)."""
    return [t for t in alerts if "error" in t.lower() or "stopped" in t.lower()]


def settings_for(preset: str, device: str, steps: int | None) -> train_settings.TrainSettings:
    settings = train_settings.preset_settings(preset, device=device)
    settings.device = device
    if steps:
        settings.max_steps = steps
    return settings


def between_redraws(first: tuple[float, int] | None, last: tuple[float, int]) -> dict:
    """Where the live side's time went, from the first and last redraws that showed a step (seconds
    from the Start click, step): the click to the first step on screen (the click's page run, the
    run's construction, the first tick), and the steps/s between the two redraws (training as the
    page shows it, without those fixed costs; the gap after the last step's redraw is not in it
    either). Diagnostic only: the target compares the whole Start-to-last-step rate."""
    if first is None or last[0] <= first[0]:
        return {"first_step_s": None, "between_redraws_steps_per_s": None}
    return {"first_step_s": round(first[0], 2),
            "between_redraws_steps_per_s": round((last[1] - first[1]) / (last[0] - first[0]), 1)}


def headless(settings: train_settings.TrainSettings) -> dict:
    """The bare engine: construction to the last step, validation passes included."""
    data = runs.names_data(settings.context_size)
    config = train_settings.to_train_config(settings)
    start = time.perf_counter()
    trainer = Trainer(config, data)
    trainer.train()
    if trainer.device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    return {"seconds": round(seconds, 2), "steps": trainer.step, "steps_per_s": round(trainer.step / seconds, 1),
            "device": str(trainer.device), "val_loss": round(min(trainer.history["val_loss"]), 4)}


async def live(base: str, settings: train_settings.TrainSettings) -> dict:
    """One tab: open the Train page with the settings in its link, press Start, watch to the end."""
    stats = Stats()
    client = Client("lecturer", base, stats, random.Random(1))
    client.query_string = urllib.parse.urlencode(core_settings.to_params(settings))
    try:
        await client.connect(TRAIN_URL)
        start = [b for b in client.widgets("button") if b.widget.label == "Start"]
        if not start:
            raise RuntimeError("no Start button on the Train page; texts: " + " | ".join(client.texts())[:400])
        t0 = time.monotonic()
        await client.click(start[0])
        shown: list[tuple[float, int]] = []
        total = settings.max_steps
        while time.monotonic() - t0 < RUN_TIMEOUT_S:
            progress = train_progress(client)
            if progress is not None:
                step, total = progress
                if not shown or step != shown[-1][1]:
                    shown.append((time.monotonic() - t0, step))
                if step >= total:
                    break
            errors = stop_messages(client.texts("alert"))
            if errors:
                raise RuntimeError(f"the run stopped: {errors[0][:300]}")
            await client.pause(0.02)
        seconds = time.monotonic() - t0
        if not shown or shown[-1][1] < total:
            raise RuntimeError(f"no last step within {RUN_TIMEOUT_S:.0f} s (last seen {shown[-1:]})")
        # a redraw that shows a new step: what the student sees move (each tick of a training run does)
        first = next((entry for entry in shown if entry[1] > 0), None)
        return {"seconds": round(seconds, 2), "steps": total, "steps_per_s": round(total / seconds, 1),
                "redraws_per_s": round(len(shown) / seconds, 2), "steps_shown": len(shown),
                **between_redraws(first, shown[-1]),
                "tick_p50_s": round(statistics.median(stats.ticks), 3) if stats.ticks else None,
                "errors": stats.errors[:5]}
    finally:
        await client.close()


def live_browser(chromium, base: str, settings: train_settings.TrainSettings) -> dict:
    """One Chromium tab: the Train page from the same link as `live`, Start, watched to the end.

    Redraws are counted by WATCH_PROGRESS_JS's MutationObserver in the page (its clock, from the
    click); Python only polls its notes every 20 ms to see the end or an error, so the polling
    neither adds redraws nor delays the frontend. No fragment tick times here: tick_p50_s is None."""
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    try:
        page.set_default_timeout(60_000)
        query = urllib.parse.urlencode(core_settings.to_params(settings))
        open_page_url(page, base, f"{TRAIN_URL}?{query}", TRAIN_HEADING)
        # on a busy machine the idle check can pass before the script has drawn past the heading
        start = page.get_by_role("button", name="Start", exact=True)
        start.wait_for()
        page.wait_for_selector(IDLE)
        page.evaluate(WATCH_PROGRESS_JS)
        t0 = time.monotonic()
        start.click()
        seen = watch_to_last_step(page, t0)
        seconds, steps = seen["last"][0] / 1000, seen["last"][2]
        return {"seconds": round(seconds, 2), "steps": steps, "steps_per_s": round(steps / seconds, 1),
                "redraws_per_s": round(seen["count"] / seconds, 2), "steps_shown": seen["count"],
                **between_redraws(_seconds_step(seen["first"]), _seconds_step(seen["last"])),
                "tick_p50_s": None, "errors": [f"exception: {t[:200]}" for t in seen["exceptions"]][:5]}
    finally:
        page.close()


def _seconds_step(note: list | None) -> tuple[float, int] | None:
    """A WATCH_PROGRESS_JS note [ms from the click, step, total] as (seconds, step)."""
    return None if note is None else (note[0] / 1000, note[1])


def watch_to_last_step(page, t0: float) -> dict:
    """Poll the tab's notes until the last step is shown; raise on a stop message or the timeout."""
    while True:
        seen = page.evaluate(READ_PROGRESS_JS)
        if seen["last"] and seen["last"][1] >= seen["last"][2]:
            return seen
        errors = stop_messages(seen["alerts"])
        if errors:
            raise RuntimeError(f"the run stopped: {errors[0][:300]}")
        if time.monotonic() - t0 > RUN_TIMEOUT_S:
            raise RuntimeError(f"no last step within {RUN_TIMEOUT_S:.0f} s (last seen {seen['last']})")
        page.wait_for_timeout(20)


GIL_RATE_HZ = 200  # py-spy samples per second


@contextmanager
def gil_profile(pid: int, seconds: float, delay_s: float = 3.0):
    """While the block runs, py-spy samples process `pid` every 1/GIL_RATE_HZ s for `seconds` (from
    `delay_s` after the start), keeping only samples where a thread holds the GIL; yields a dict
    filled after the block: thread name -> share of the recorded wall time it held the GIL. The
    thread that trains (live-training) against everything else the server runs in Python (the
    script threads drawing, the event loop): what a worker on a GPU waits for. Empty when off."""
    shares: dict[str, float] = {}
    if seconds <= 0:
        yield shares
        return
    raw = Path(tempfile.mkdtemp()) / "gil.txt"
    command = ["py-spy", "record", "--gil", "--threads", "--nonblocking", "-p", str(pid), "-r", str(GIL_RATE_HZ),
               "-d", str(int(round(seconds))), "-f", "raw", "-o", str(raw)]
    recorder = threading.Timer(delay_s, lambda: subprocess.run(command, capture_output=True, timeout=seconds + 60))
    recorder.start()
    try:
        yield shares
    finally:
        recorder.join()
        if raw.exists():
            shares.update(gil_shares(raw.read_text(), GIL_RATE_HZ * round(seconds)))


def gil_shares(raw: str, samples_taken: int) -> dict[str, float]:
    """py-spy's raw (collapsed) stacks -> thread name (ids dropped) -> its samples / samples_taken."""
    counts: dict[str, int] = {}
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        thread = re.sub(r"\s*\(\d+\)", "", stack.split(";")[0]).removeprefix("thread").strip(" :")
        counts[thread] = counts.get(thread, 0) + int(count)
    return {name: round(n / samples_taken, 4) for name, n in sorted(counts.items(), key=lambda kv: -kv[1])}


@contextmanager
def live_runner(browser: bool):
    """`run(base, settings) -> dict` for the chosen client. One Chromium serves all the runs (a
    fresh tab, so a fresh session, each): its start-up stays out of the pairs."""
    if not browser:
        yield lambda base, settings: asyncio.run(live(base, settings))
        return
    from playwright.sync_api import sync_playwright  # only --browser needs Playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield lambda base, settings: live_browser(chromium, base, settings)
        finally:
            chromium.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="gpu")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--steps", type=int, default=6000, help="max_steps of the run (0: the preset's)")
    parser.add_argument("--repeats", type=int, default=2, help="live/headless pairs after the warm-up")
    parser.add_argument("--browser", action="store_true",
                        help="watch in headless Chromium (Playwright) instead of the websocket client")
    parser.add_argument("--background", choices=("auto", "on", "off"), default="auto",
                        help="the server's ATTENTION_LAB_BACKGROUND_TRAINING: auto trains a CUDA run in a "
                             "worker thread between the page's draws, off in the page's ticks (ui.live)")
    parser.add_argument("--gil-profile", type=float, default=0.0, metavar="SECONDS",
                        help="record which of the server's threads hold the GIL (py-spy --gil) for this "
                             "many seconds of the first measured live run, from 3 s after it starts; "
                             "0: off")
    args = parser.parse_args()
    if not 0 <= args.gil_profile <= 120:
        parser.error("--gil-profile must be from 0 to 120 seconds")
    if args.gil_profile and not shutil.which("py-spy"):
        parser.error("--gil-profile needs py-spy on the PATH (pip install py-spy)")

    budget.configure_torch_threads()  # the headless runs use the app's torch threads, as the server does
    settings = settings_for(args.preset, args.device, args.steps)
    client = "chromium" if args.browser else "websocket"
    print(f"load before: {load_average()}; torch {torch.__version__}; device {args.device}; "
          f"preset {args.preset}, {settings.max_steps} steps; client {client}; background {args.background}",
          flush=True)
    server = StreamlitServer(env={"ATTENTION_LAB_BACKGROUND_TRAINING": args.background},
                             options={"global.developmentMode": "false"})  # Streamlit outside site-packages (the GPU machine's carried wheels) would think it is in development
    print(f"server answered after {server.start(timeout=120):.1f} s", flush=True)
    pairs = []
    try:
        with live_runner(args.browser) as run_live:
            warm = replace(settings, max_steps=min(settings.max_steps, 300))
            print("warm-up live:", run_live(server.url, warm), flush=True)
            print("warm-up headless:", headless(warm), flush=True)
            for i in range(args.repeats):
                with gil_profile(server.pid, args.gil_profile if i == 0 else 0.0) as gil:
                    lv = run_live(server.url, settings)
                if gil:
                    lv["gil_share"] = gil
                    print(f"GIL held, share of wall time, by thread: {gil}", flush=True)
                hl = headless(settings)
                pairs.append((lv, hl))
                print(f"pair {i + 1}: live {lv}\n        headless {hl}\n        ratio "
                      f"{lv['steps_per_s'] / hl['steps_per_s']:.3f}", flush=True)
    except Exception as exc:  # noqa: BLE001
        print(f"FAILED: {type(exc).__name__}: {exc}\n--- server log ---\n{server.log_tail(3000)}", flush=True)
    finally:
        server.stop()
    ratios = [lv["steps_per_s"] / hl["steps_per_s"] for lv, hl in pairs]
    result = {
        "preset": args.preset, "device": args.device, "steps": settings.max_steps, "client": client,
        "background": args.background,
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "pairs": [{"live": lv, "headless": hl} for lv, hl in pairs],
        "ratio_median": round(statistics.median(ratios), 3) if ratios else None,
        "goal_ratio": GOAL_RATIO,
        "ok": bool(ratios) and statistics.median(ratios) >= GOAL_RATIO,
    }
    print(f"live/headless steps/s: {result['ratio_median']} (target >= {GOAL_RATIO}) -> "
          f"{'PASS' if result['ok'] else 'FAIL'}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
