"""Training the names GPT on a CUDA GPU against the CPU of the same machine.

    python benchmarks/gpu_train.py [--cpu-cap 60] [--gpu-cap 60] [--seconds 5] [--skip-cpu-run]

Without a CUDA GPU it prints one line saying so and exits 0 (last line: a JSON object with "skipped").

On a GPU it measures, after a short warm-up that starts CUDA (reported as cuda_init_s):
1. training tokens/s (non-padding target characters per second of training time) of the quick-demo
   model: its GPU preset (`quick_demo_gpu_config`), the CPU preset unchanged on the GPU, and the CPU
   preset on the CPU with all its threads;
2. time to a validation loss <= 1.95, <= 1.90 and <= 1.88 nats/char (wall-clock from the first step,
   validation passes and slicing included, CUDA already started) for the GPU presets "best"
   (`best_gpu_config`) and "gpu" (`gpu_config`), and for the CPU's "best" preset on the CPU, each
   stopped at its cap if it gets there first.

Targets (H100-class GPU): >= 1M training tokens/s for the quick-demo model; the best preset at <= 1.91
within 15 s; the "gpu" preset at <= 1.88 within 60 s. Last line: one JSON object. Imports only core
modules that need no Streamlit, so it runs on a bare torch machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from benchmarks.harness import load_average  # noqa: E402
from core.data import NamesData, build_names_data  # noqa: E402
from core.training import (  # noqa: E402
    TrainConfig,
    Trainer,
    best_config,
    best_gpu_config,
    gpu_config,
    quick_demo_config,
    quick_demo_gpu_config,
)

TARGETS = (1.95, 1.90, 1.88)  # validation losses whose first time is reported
GOAL_TOKENS_PER_S = 1_000_000  # quick-demo model on the GPU
GOAL_BEST = (1.91, 15.0)  # (loss, seconds) for the best GPU preset
GOAL_GPU = (1.88, 60.0)  # (loss, seconds) for the "gpu" preset


def cuda_warm_up(data: NamesData) -> float:
    """Start CUDA, cuBLAS and the kernels once, so no timed run pays for it; returns the seconds."""
    start = time.perf_counter()
    config = replace(quick_demo_gpu_config(), max_steps=20, val_interval=10)
    Trainer(config, data).train()
    torch.cuda.synchronize()
    return time.perf_counter() - start


def throughput(config: TrainConfig, data: NamesData, seconds: float) -> dict:
    """Training tokens/s and steps/s over `seconds` of training, after 30 warm-up steps."""
    config = replace(config, max_steps=100_000, val_interval=100_000)  # no validation inside the timing
    trainer = Trainer(config, data)
    trainer.train(n_steps=30)
    result = trainer.train(time_budget_s=seconds)
    return {
        "device": str(trainer.device),
        "batch_size": config.batch_size,
        "autocast": str(trainer.autocast_dtype),
        "tokens_per_s": round(result.tokens_per_s),
        "steps_per_s": round(result.steps_per_s, 1),
        "steps": result.steps,
    }


def time_to_targets(config: TrainConfig, data: NamesData, cap_s: float) -> dict:
    """Train in slices that end at each validation, and note when each target loss is first reached."""
    trainer = Trainer(config, data)
    reached: dict[str, float | None] = {f"{t:.2f}": None for t in TARGETS}
    curve = []
    start = time.perf_counter()
    while not trainer.done and time.perf_counter() - start < cap_s:
        result = trainer.train(n_steps=config.val_interval)
        wall = time.perf_counter() - start
        for step, val_loss in result.val_points:
            curve.append((step, round(wall, 2), round(val_loss, 4)))
            for target in TARGETS:
                key = f"{target:.2f}"
                if reached[key] is None and val_loss <= target:
                    reached[key] = round(wall, 2)
    wall = time.perf_counter() - start
    return {
        "device": str(trainer.device),
        "steps": trainer.step,
        "max_steps": config.max_steps,
        "finished": trainer.done,
        "wall_s": round(wall, 2),
        "train_s": round(trainer.history["elapsed"][-1], 2) if trainer.history["elapsed"] else 0.0,
        "tokens": trainer.history["tokens"][-1] if trainer.history["tokens"] else 0,
        "final_val_loss": round(trainer.last_val_loss, 4) if trainer.last_val_loss is not None else None,
        "best_val_loss": round(min(trainer.history["val_loss"]), 4) if trainer.history["val_loss"] else None,
        # the validation loss of the weights the run ends with (restore_best: those of its best point)
        "weights_val_loss": round(trainer.weights_val_loss, 4) if trainer.weights_val_loss is not None else None,
        "weights_step": trainer.weights_step if trainer.weights_step is not None else trainer.step,
        "seconds_to": reached,
        "curve": curve,
    }


def first_time(run: dict, loss: float) -> float | None:
    """Seconds at which `run` first validated at or below `loss` (curve points), or None."""
    return next((wall for _, wall, val in run["curve"] if val <= loss), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds of each throughput run")
    parser.add_argument("--gpu-cap", type=float, default=60.0, help="cap in seconds of each GPU loss run")
    parser.add_argument("--cpu-cap", type=float, default=60.0, help="cap in seconds of the CPU loss run")
    parser.add_argument("--skip-cpu-run", action="store_true", help="no CPU loss run (it is the slowest)")
    args = parser.parse_args()

    if not torch.cuda.is_available():
        reason = "torch has no CUDA support" if torch.version.cuda is None else "no CUDA GPU found"
        print(f"SKIPPED: gpu_train needs a CUDA GPU ({reason}); nothing was measured.")
        print(json.dumps({"skipped": True, "reason": reason}))
        return

    device_name = torch.cuda.get_device_name(0)
    print(f"GPU: {device_name}; torch {torch.__version__}; CPU threads: {torch.get_num_threads()} "
          f"of {os.cpu_count()}; load average {load_average()}", flush=True)
    data = build_names_data(context_size=12, val_size=0.1, seed=101)
    init_s = cuda_warm_up(data)
    print(f"CUDA start-up and first kernels: {init_s:.1f} s (not counted below)", flush=True)

    speed = {
        "gpu_preset_on_gpu": throughput(quick_demo_gpu_config(), data, args.seconds),
        "cpu_preset_on_gpu": throughput(replace(quick_demo_config(), device="cuda"), data, args.seconds),
        "cpu_preset_on_cpu": throughput(replace(quick_demo_config(), device="cpu"), data, args.seconds),
    }
    for name, row in speed.items():
        print(f"quick-demo model, {name}: {row['tokens_per_s']:,} tokens/s ({row['steps_per_s']} steps/s, "
              f"batch {row['batch_size']}, autocast {row['autocast']})", flush=True)

    runs = {
        "best_gpu": time_to_targets(best_gpu_config(), data, args.gpu_cap),
        "gpu": time_to_targets(gpu_config(), data, args.gpu_cap),
    }
    if not args.skip_cpu_run:
        runs["best_cpu"] = time_to_targets(replace(best_config(), device="cpu"), data, args.cpu_cap)
    for name, run in runs.items():
        # what the run ends with (restore_best: its best point's weights) beside its last validation
        print(f"{name} on {run['device']}: seconds to <= {run['seconds_to']}; ends with {run['weights_val_loss']} "
              f"(the weights of step {run['weights_step']}; last validation {run['final_val_loss']}) after "
              f"{run['steps']}/{run['max_steps']} steps, {run['wall_s']} s wall ({run['train_s']} s training)",
              flush=True)

    best_s = first_time(runs["best_gpu"], GOAL_BEST[0])
    gpu_s = first_time(runs["gpu"], GOAL_GPU[0])
    goals = {
        "tokens_per_s": speed["gpu_preset_on_gpu"]["tokens_per_s"] >= GOAL_TOKENS_PER_S,
        "best_1.91_in_15s": best_s is not None and best_s <= GOAL_BEST[1],
        "gpu_1.88_in_60s": gpu_s is not None and gpu_s <= GOAL_GPU[1],
    }
    print(f"goals: {goals}; best <= 1.91 at {best_s} s, gpu <= 1.88 at {gpu_s} s", flush=True)
    print(json.dumps({
        "skipped": False, "device": device_name, "torch": torch.__version__, "cuda_init_s": round(init_s, 2),
        "load_average": load_average(), "throughput": speed,
        "runs": {k: {key: v for key, v in run.items() if key != "curve"} for k, run in runs.items()},
        "seconds_best_to_1.91": best_s, "seconds_gpu_to_1.88": gpu_s, "goals": goals,
    }))


if __name__ == "__main__":
    main()
