"""Live training speed of the Train page against the headless engine, and the presets' targets.

1. Throughput: the same "quick demo" run trained (a) headless, `Trainer.train(n_steps)`, and (b)
   through the page's own loop: `ui.live.tick`, the body of the live fragment, with the Train
   page's drawing (`ui.training.draw_live`), called back to back with Streamlit in bare mode, so
   everything a tick does is included (the protocol's `run.advance(SLICE_S, slot)` inside a global
   slot, samples at validation points, the progress bar, metrics, the loss chart's rows turned
   into Arrow, the download buttons); only the websocket is missing.
   Target: live steps/s >= 90% of headless steps/s. The two are alternated to share the machine's
   load fairly.
2. "quick demo" preset through the live-training protocol (`run.advance(SLICE_S, slot)` back to
   back): target validation <= 2.10 nats/char within 30 s.
3. "best" preset the same way: target validation <= 1.92 within 5 minutes.

Torch uses the app's thread setting (core.budget, ATTENTION_LAB_TORCH_THREADS) unless --threads.
Usage: python benchmarks/train_live.py [--steps 200] [--repeats 4] [--skip-best] [--threads N]
The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("STREAMLIT_BROWSER_GATHER_USAGE_STATS", "false")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch, as streamlit_app.py sets it
os.environ.setdefault("GOMP_SPINCOUNT", "30000")

import torch  # noqa: E402

from benchmarks.harness import load_average  # noqa: E402
from core import budget, runs, train_settings  # noqa: E402
from core.training import Trainer  # noqa: E402


def _quiet_streamlit() -> None:
    """Bare mode warns on every call ("missing ScriptRunContext"); the benchmark needs none of it."""
    logging.disable(logging.WARNING)  # Streamlit resets its loggers' levels when it reads its config


def _page_loop():
    """The live fragment's tick and the Train page's drawing (Streamlit in bare mode)."""
    _quiet_streamlit()
    from ui import live as ui_live, training

    return ui_live, training


def headless_rate(settings: train_settings.TrainSettings, steps: int) -> float:
    """Steps per wall-clock second of the bare engine (validation passes included)."""
    trainer = Trainer(train_settings.to_train_config(settings), runs.names_data(settings.context_size))
    start = time.perf_counter()
    trainer.train(n_steps=steps)
    return steps / (time.perf_counter() - start)


def live_rate(page, settings: train_settings.TrainSettings, steps: int, owner: str) -> tuple[float, float]:
    """Steps per wall-clock second through the page's tick, and the share of time spent drawing."""
    ui_live, training = page
    book = runs.RunBook(owner=owner)
    run = book.create(settings)
    runs.start(run)
    start = time.perf_counter()
    while run.step < steps and run.active:
        ui_live.tick(run, lambda: training.draw_live(book, settings), ui_live.SLICE_S,
                     running=lambda: run.active)
    wall = time.perf_counter() - start
    train_time = run.history["elapsed"][-1]  # cumulative seconds inside optimisation steps
    return run.step / wall, 1.0 - train_time / wall


def preset_race(slice_s: float, name: str, limit_s: float, target: float) -> dict:
    """Train a preset through the live-training protocol, a slice at a time in a training slot
    as the page does, for at most `limit_s` wall seconds."""
    settings = train_settings.preset_settings(name)
    owner = f"race-{name}"
    run = runs.RunBook(owner=owner).create(settings)
    runs.start(run)
    start = time.perf_counter()
    reached_at = None
    seen = 0
    while run.active and time.perf_counter() - start < limit_s:
        run.advance(slice_s, budget.SLOTS.slot(owner))
        history = run.history
        for step, val in zip(history["val_steps"][seen:], history["val_loss"][seen:]):
            if reached_at is None and val <= target:
                reached_at = time.perf_counter() - start
            print(f"  {name}: step {step:>5} val {val:.4f} at {time.perf_counter() - start:6.1f} s", flush=True)
        seen = len(history["val_loss"])
    elapsed = time.perf_counter() - start
    val_losses = run.history["val_loss"]
    return {
        "target": target,
        "limit_s": limit_s,
        "best_val_within_limit": round(min(val_losses), 4) if val_losses else None,
        "last_val": round(val_losses[-1], 4) if val_losses else None,
        "steps_done": run.step,
        "max_steps": run.max_steps,
        "finished": run.status == "done",
        "seconds": round(elapsed, 1),
        "reached_target_at_s": round(reached_at, 1) if reached_at is not None else None,
        "ok": reached_at is not None and reached_at <= limit_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=200, help="steps per throughput measurement")
    parser.add_argument("--repeats", type=int, default=4, help="headless/live pairs, alternated")
    parser.add_argument("--skip-best", action="store_true", help="skip the 5-minute 'best' race")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: the app's)")
    args = parser.parse_args()

    if args.threads:
        torch.set_num_threads(args.threads)
    else:
        budget.configure_torch_threads()
    page = _page_loop()
    ui_live = page[0]
    settings = train_settings.preset_settings("quick_demo")
    settings.max_steps = max(settings.max_steps, args.steps + 1)
    runs.names_data(settings.context_size)  # load the data once, outside the timings
    headless_rate(settings, 20)  # warm-up: first-call costs of torch

    headless, live_rates, draw_shares = [], [], []
    for i in range(args.repeats):
        headless.append(headless_rate(settings, args.steps))
        rate, share = live_rate(page, settings, args.steps, owner=f"bench-{i}")
        live_rates.append(rate)
        draw_shares.append(share)
        print(f"pair {i + 1}: headless {headless[-1]:.1f} steps/s, live {rate:.1f} steps/s "
              f"({rate / headless[-1]:.1%}), time not training in live ticks {share:.1%}", flush=True)
    ratios = [lv / hl for lv, hl in zip(live_rates, headless)]

    result = {
        "benchmark": "train_live",
        "torch_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "load_average_1min": round(load_average()[0], 2),
        "tick": {"run_every_s": ui_live.TICK_S, "slice_s": ui_live.SLICE_S},
        "throughput": {
            "steps_per_measurement": args.steps,
            "headless_steps_per_s": round(statistics.median(headless), 2),
            "live_steps_per_s": round(statistics.median(live_rates), 2),
            "live_over_headless": round(statistics.median(ratios), 4),
            "pairs": [round(r, 4) for r in ratios],
            "time_not_training_in_ticks": round(statistics.median(draw_shares), 4),
            "target": 0.90,
            "ok": statistics.median(ratios) >= 0.90,
        },
    }
    print("quick demo race (target val <= 2.10 within 30 s):", flush=True)
    result["quick_demo"] = preset_race(ui_live.SLICE_S, "quick_demo", 30.0, 2.10)
    if not args.skip_best:
        print("best race (target val <= 1.92 within 300 s):", flush=True)
        result["best"] = preset_race(ui_live.SLICE_S, "best", 300.0, 1.92)
    result["load_average_1min_end"] = round(load_average()[0], 2)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
