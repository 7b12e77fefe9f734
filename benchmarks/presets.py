"""Train each preset of core.training.PRESETS to the end and check it against its goal.

    python benchmarks/presets.py [--only quick_demo best] [--threads 2]

Goals (2 CPU cores, issue 26): "quick_demo" reaches a validation loss <= 1.96 nats/char within 30 s,
"better" <= 1.93 within 90 s, "best" <= 1.90 within 300 s; "lecture" (SGD at lr 0.01, 1000 steps) has no goal, it shows how slowly the
lecture's own settings converge (about 2.4). The time counted is the whole run as the app would do it,
validation passes included. The machine's load average and the process's CPU seconds are printed too,
since other processes may share the machine (CPU seconds do not grow when others take the cores).

--live trains each preset the way the Train page does, and is what the page's preset labels come
from (core.train_settings.PRESET_SECONDS): a `core.runs.Run` advanced by the live fragment's own
tick (`ui.live.tick`, Streamlit in bare mode) with the page's drawing (`ui.training.draw_live`)
after every slice, a slice per tick in a training slot, with the app's torch threads
(core.budget) unless --threads is given. The time counted is from Start to the last step.

--browser measures what a student waits for: a real `streamlit run` server (loopback) and headless
Chromium (benchmarks.harness's flags), the Train page at 1280x900, the preset's button, then
Start; the time runs from the click on Start until the progress line says "finished" (read twice
a second), with the app's torch threads. The labels of the preset buttons come from this
(core.train_settings.PRESET_SECONDS). --hosted runs that server as a class's (ATTENTION_LAB_HOSTED=1:
one torch thread, training a quarter of one core, a redraw a second) with nobody else on it; the
"class_demo" preset's button is offered only there.

Last line: one JSON object.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch: see benchmarks/train_speed.py
os.environ.setdefault("GOMP_SPINCOUNT", "30000")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from benchmarks.harness import load_average  # noqa: E402
from core.data import build_names_data  # noqa: E402
from core.training import PRESETS, Trainer  # noqa: E402

GOALS = {  # preset -> (max validation loss, max seconds)
    "quick_demo": (1.96, 30.0),
    "better": (1.93, 90.0),
    "best": (1.90, 300.0),
    "class_demo": (2.07, 10.0),  # this project's own goal (2026-11-28): names that read like names, at once
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=list(PRESETS), choices=list(PRESETS))
    parser.add_argument("--threads", type=int, default=None,
                        help="torch.set_num_threads (default: 2, or the app's with --live)")
    parser.add_argument("--live", action="store_true", help="train through the Train page's tick")
    parser.add_argument("--browser-limit-s", type=float, default=600.0, help="longest wait per preset")
    parser.add_argument("--browser", action="store_true",
                        help="time each preset in Chromium against a real server, Start to finish")
    parser.add_argument("--hosted", action="store_true",
                        help="with --browser: the server runs as a class's (ATTENTION_LAB_HOSTED=1)")
    args = parser.parse_args()
    if args.live:
        live_main(args)
        return
    if args.browser:
        browser_main(args)
        return
    args.threads = args.threads or 2
    torch.set_num_threads(args.threads)

    data = build_names_data(context_size=12, val_size=0.1, seed=101)
    results = {}
    for name in args.only:
        config = PRESETS[name]()
        load_before = load_average()
        trainer = Trainer(config, data)
        start, cpu_start = time.perf_counter(), time.process_time()
        trainer.train()
        seconds = time.perf_counter() - start
        cpu_seconds = time.process_time() - cpu_start  # all threads of this process; robust to other load
        val_loss = trainer.weights_val_loss  # of the weights it ends with (restore_best: its best point's)
        entry = {
            "steps": trainer.step,
            "seconds": round(seconds, 1),
            "cpu_seconds": round(cpu_seconds, 1),
            "val_loss": round(val_loss, 4),
            "tokens_per_s": round(trainer.history["tokens"][-1] / trainer.history["elapsed"][-1]),
            "params": trainer.model.num_params(),
            "load_average_before": load_before,
            "load_average_after": load_average(),
        }
        if name in GOALS:
            max_loss, max_seconds = GOALS[name]
            entry["goal"] = f"val <= {max_loss} within {max_seconds:.0f} s"
            entry["loss_pass"] = val_loss <= max_loss
            entry["time_pass"] = seconds <= max_seconds
        results[name] = entry
        curve = ", ".join(f"{s}: {v:.3f}" for s, v in zip(trainer.history["val_steps"], trainer.history["val_loss"]))
        print(f"{name}: {trainer.step} steps in {seconds:.1f} s ({cpu_seconds:.1f} CPU s), val {val_loss:.4f} nats/char "
              f"({entry['tokens_per_s']} tokens/s; load {load_before} -> {entry['load_average_after']})")
        print(f"  validation curve: {curve}", flush=True)
    print(json.dumps({"threads": args.threads, "presets": results}))


def live_main(args) -> None:
    """Each preset from Start to its last step through the page's tick; see the docstring."""
    import logging

    from core import budget, runs, train_settings

    if args.threads:
        torch.set_num_threads(args.threads)
    else:
        budget.configure_torch_threads()
    logging.disable(logging.WARNING)  # bare mode warns on every Streamlit call
    from ui import live as ui_live, training

    results = {}
    for name in args.only:
        if name == "gpu" and not torch.cuda.is_available():
            print("gpu: skipped (no CUDA GPU here)", flush=True)
            continue
        settings = train_settings.preset_settings(name)
        runs.names_data(settings.context_size)  # the data is loaded once per server, not per run
        book = runs.RunBook(owner=f"presets-{name}")
        load_before, cpu_start = load_average(), time.process_time()
        start = time.perf_counter()
        run = book.create(settings)
        runs.start(run)
        ticks = 0
        while run.active:
            ui_live.tick(run, lambda: training.draw_live(book, settings), ui_live.SLICE_S,
                         running=lambda: run.active)
            ticks += 1
        seconds = time.perf_counter() - start
        entry = {"steps": run.step, "seconds": round(seconds, 1),
                 "cpu_seconds": round(time.process_time() - cpu_start, 1),
                 "training_seconds": round(run.history["elapsed"][-1], 1),
                 "val_loss": round(run.trainer.last_val_loss, 4), "ticks": ticks,
                 "steps_per_s": round(run.step / seconds, 1),
                 "load_average_before": load_before, "load_average_after": load_average()}
        results[name] = entry
        print(f"{name}: {run.step} steps in {seconds:.1f} s through the page's tick "
              f"({entry['cpu_seconds']} CPU s, {entry['training_seconds']} s inside steps), val "
              f"{entry['val_loss']:.4f}; load {load_before} -> {entry['load_average_after']}", flush=True)
    print(json.dumps({"mode": "live", "threads": torch.get_num_threads(), "cpu_count": os.cpu_count(),
                      "date": time.strftime("%Y-%m-%d"), "presets": results}))


def browser_main(args) -> None:
    """Each preset in a real browser against a real server, Start to finished; see the docstring."""
    import re

    from playwright.sync_api import sync_playwright

    from benchmarks.harness import CHROMIUM, CHROMIUM_ARGS, IDLE, StreamlitServer, open_page_url
    from benchmarks.harness.browser import progress_text
    from ui.training import PRESET_NAMES

    env = {"ATTENTION_LAB_TORCH_THREADS": str(args.threads)} if args.threads else {}
    if args.hosted:
        env["ATTENTION_LAB_HOSTED"] = "1"
    server = StreamlitServer(env=env or None)
    server.start(timeout=60)
    url = server.url
    results = {}

    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            for name in args.only:
                if name == "gpu":
                    print("gpu: skipped (its button is offered only with a CUDA GPU)", flush=True)
                    continue
                if name == "class_demo" and not args.hosted:
                    print("class_demo: skipped (its button is offered only on a hosted server: --hosted)", flush=True)
                    continue
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.set_default_timeout(60_000)
                open_page_url(page, url, "train_gpt", "Train the names GPT")
                page.get_by_role("button", name=re.compile("^" + re.escape(PRESET_NAMES[name]))).click()
                page.wait_for_timeout(300)
                page.wait_for_selector(IDLE)
                load_before = load_average()
                start = time.perf_counter()
                page.get_by_role("button", name="Start", exact=True).click()
                limit = time.perf_counter() + args.browser_limit_s
                text = ""
                while time.perf_counter() < limit:
                    text = progress_text(page)
                    if " · finished · " in text or "stopped on an error" in text:
                        break
                    page.wait_for_timeout(500)
                seconds = time.perf_counter() - start
                val = [m for m in page.locator("[data-testid='stMetric']").all_inner_texts() if "Val loss" in m]
                steps = re.search(r"step ([\d,]+) of ([\d,]+)", text)
                entry = {"seconds": round(seconds, 1), "finished": " · finished · " in text,
                         "steps": steps.group(1) if steps else None,
                         "max_steps": PRESETS[name]().max_steps,
                         "val_loss": (re.findall(r"\d\.\d{3}", val[0]) or [None])[0] if val else None,
                         "load_average_before": load_before, "load_average_after": load_average()}
                results[name] = entry
                print(f"{name}: {entry['seconds']} s from Start to finished in Chromium "
                      f"(val {entry['val_loss']}; load {load_before} -> {entry['load_average_after']})",
                      flush=True)
                page.close()
            browser.close()
    finally:
        server.stop()
    print(json.dumps({"mode": "browser", "hosted": args.hosted, "threads": args.threads or "app default",
                      "cpu_count": os.cpu_count(), "date": time.strftime("%Y-%m-%d"), "presets": results}))


if __name__ == "__main__":
    main()
