"""Named training recipes for the names GPT (`PRESETS`) and their GPU versions (`preset_config`).

Each preset was tuned for a goal and measured; the figures, dates and commands are in docs/PRESETS.md.
On a GPU a step takes many more packed rows at a higher learning rate: `preset_config(name, device)`
gives a preset's GPU version when the run's device is a CUDA GPU.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

import torch

from core.device import resolve_device
from core.models import GPTConfig
from core.training.config import TrainConfig

# Steps of the CPU presets: as many as 2 CPU threads run in the preset's time on a quiet machine
# (measured: docs/PRESETS.md), so the cosine decay ends when the time does.
QUICK_DEMO_STEPS = 1200
BETTER_STEPS = 2000
BEST_STEPS = 4000
CLASS_DEMO_STEPS = 400


def lecture_config() -> TrainConfig:
    """Lecture 7 as written: its GPTConfig, SGD at lr 0.01, batch 32, 1000 steps."""
    return TrainConfig(
        model=GPTConfig(),
        optimizer="sgd",
        lr=0.01,
        weight_decay=0.0,
        batch_size=32,
        max_steps=1000,
        val_interval=100,
        seed=101,
    )


def quick_demo_config() -> TrainConfig:
    """A quick first run: validation loss <= 1.96 within 30 s on 2 CPU cores (it ends at ~1.92 in ~25 s).

    Two layers of width 64 with two heads each, no dropout: fewer and larger ops than the lecture's
    three layers of four heads, so more characters per second, which in 30 s matters more than depth.
    Muon for the blocks' weight matrices and AdamW for the rest (core.training.muon): on this model it
    reaches AdamW's 2,100-step loss in about 700 steps (docs/PRESETS.md, 2026-11-28). Warm-up and a
    cosine decay to a fifth of the peak, with weight decay 0.2: Muon's steps are large, and without
    them the loss turned back up near the end (1.9212 at 1,200 steps with 0.05 and a twentieth;
    1.9124 with these). Names packed into rows of 32 tokens so no compute goes to padding. Validated
    on the running average of the weights (0.99, ~the last 100 steps), lower than the last step's
    weights all along the decay, so a slower machine still mid-schedule at 30 s is further below the goal.
    """
    return TrainConfig(
        model=GPTConfig(context_size=12, n_layer=2, n_head=2, d_embed=64, d_ff=256, dropout=0.0),
        optimizer="muon",
        lr=1e-2,
        weight_decay=0.2,
        batch_size=45,
        pack_length=32,
        max_steps=QUICK_DEMO_STEPS,
        val_interval=200,
        seed=101,
        grad_clip=1.0,
        schedule="cosine",
        warmup_steps=50,
        min_lr_ratio=0.2,
        ema_decay=0.99,
    )


def better_config() -> TrainConfig:
    """A better model within 90 s on 2 CPU cores; goal validation loss <= 1.93 (it ends at ~1.88 in ~50 s).

    The quick demo's recipe at width 96 (feed-forward 384) with 30 packed rows a step and a slower
    running average of the weights (0.995, ~the last 200 steps). Its weight decay (0.2) and the decay
    to a fifth of the peak matter most here: with 0.05 and a twentieth this model over-fits from step
    ~2,000 on (1.8901 at step 2,000 of 3,000, 1.9192 at the end); with them its validation loss still
    falls at its last step (docs/PRESETS.md, 2026-11-28). The weights of the best validation point are
    kept (`restore_best`).
    """
    return replace(
        quick_demo_config(),
        model=GPTConfig(context_size=12, n_layer=2, n_head=2, d_embed=96, d_ff=384, dropout=0.0),
        batch_size=30,
        max_steps=BETTER_STEPS,
        val_interval=250,
        restore_best=True,
        ema_decay=0.995,
    )


def best_config() -> TrainConfig:
    """The best CPU run: validation loss <= 1.90 within 5 minutes on 2 CPU cores (it ends at ~1.87).

    The quick demo's recipe at width 128 (four heads of 32, feed-forward 512) with 30 packed rows a
    step, weight decay 0.3, a slower running average of the weights (0.995) and the weights of the
    best validation point kept (`restore_best`). With Muon, regularisation by weight decay did better
    here than dropout, which costs a third of the speed (2 x 96 with dropout 0.1: 1.8892 after 5,000
    steps; without, decay 0.2: 1.8711 after 4,000). Until 2026-11-28 this preset was 4 layers x 96
    with dropout 0.1 and AdamW: 1.8939 at 300 s (docs/PRESETS.md).
    """
    return replace(
        quick_demo_config(),
        model=GPTConfig(context_size=12, n_layer=2, n_head=4, d_embed=128, d_ff=512, dropout=0.0),
        batch_size=30,
        max_steps=BEST_STEPS,
        weight_decay=0.3,
        val_interval=250,
        restore_best=True,
        ema_decay=0.995,
    )


def class_demo_config() -> TrainConfig:
    """Names within minutes on a server shared by a class (shown on a hosted server's Train page).

    There training gets a share of one core divided among everyone training (core.budget): in a full
    class of 60 on one core with six training, about half a second of training a minute each
    (docs/HOSTING.md), so the quick demo's 1,200 steps of ~23 ms take about an hour. This preset
    spends that half second where it buys the most at so small a budget: one layer of width 32 (a
    step costs about a third of the quick demo's: 7.0 against 22.7 ms at one thread) and 400 steps
    at twice the learning rate. It ends
    at about 2.05 nats/char, below the bigram's ~2.45: names that read like names. Chosen by the loss
    after the same CPU time (docs/PRESETS.md, 2026-11-28, "A preset for a shared server"); the
    running average of the weights is left out because at 400 steps it lagged (2.0559 with it, 2.0490 without).
    """
    return replace(
        quick_demo_config(),
        model=GPTConfig(context_size=12, n_layer=1, n_head=2, d_embed=32, d_ff=128, dropout=0.0),
        lr=2e-2,
        weight_decay=0.05,
        min_lr_ratio=0.05,
        max_steps=CLASS_DEMO_STEPS,
        val_interval=100,
        ema_decay=None,
    )


# A GPU step of these small models costs about the same whatever the batch, so the GPU versions take
# many more packed rows per step; TrainConfig's defaults already add the CUDA graph and bfloat16.


def quick_demo_gpu_config() -> TrainConfig:
    """The quick demo on a GPU: the lecture's three layers of four heads (on a GPU a step costs about
    the same for either model) with 480 packed rows per step at a higher learning rate."""
    return replace(
        quick_demo_config(),
        model=GPTConfig(context_size=12, n_layer=3, n_head=4, d_embed=64, d_ff=256, dropout=0.0),
        device="cuda",
        optimizer="adamw",  # the GPU version as measured (docs/PRESETS.md); Muon is the CPU's
        weight_decay=0.05,
        min_lr_ratio=0.05,
        batch_size=480,
        lr=1.2e-2,
        max_steps=700,
        val_interval=100,
        ema_decay=None,  # the GPU version as measured (docs/PRESETS.md); the average is the CPU's
    )


def best_gpu_config() -> TrainConfig:
    """The best preset on a GPU, as measured there (docs/PRESETS.md): four layers of 96 with dropout
    0.1 (the CPU's `best` until 2026-11-28), AdamW, 240 rows per step at lr 1.5e-2, and a cosine decay
    that ends before the many passes over the names start to over-fit."""
    return replace(
        quick_demo_gpu_config(),  # AdamW, packing, clipping, warm-up and cosine as measured on the GPU
        model=GPTConfig(context_size=12, n_layer=4, n_head=4, d_embed=96, d_ff=384, dropout=0.1),
        lr=1.5e-2,
        weight_decay=0.1,
        batch_size=240,
        max_steps=1200,
        val_interval=100,
        warmup_steps=100,
    )


def gpu_config() -> TrainConfig:
    """A larger model for a GPU: 6 layers of width 192, strong regularisation, validation and the end
    on the running average of the weights (EMA, decay 0.995), and the weights of the best validation
    point kept (the names are few, so every larger model over-fits in the end). On one H200 the
    average took the best validation loss from 1.883 to 1.867 (docs/PRESETS.md, 2026-11-27)."""
    return TrainConfig(
        model=GPTConfig(context_size=12, n_layer=6, n_head=6, d_embed=192, d_ff=768, dropout=0.2),
        optimizer="adamw",
        lr=3e-3,
        weight_decay=0.3,
        batch_size=256,
        pack_length=32,
        max_steps=3000,
        val_interval=200,
        seed=101,
        device="cuda",
        grad_clip=1.0,
        schedule="cosine",
        warmup_steps=200,
        min_lr_ratio=0.0,
        restore_best=True,
        ema_decay=0.995,
    )


PRESETS: dict[str, Callable[[], TrainConfig]] = {
    "lecture": lecture_config,
    "quick_demo": quick_demo_config,
    "better": better_config,
    "best": best_config,
    "class_demo": class_demo_config,  # shown on a hosted server only (pages/7_train_gpt.py)
    "gpu": gpu_config,  # needs a CUDA GPU; elsewhere it falls back to the CPU and is slow
}

# what each preset becomes when the run's device is a GPU (presets without an entry stay as they are)
GPU_PRESETS: dict[str, Callable[[], TrainConfig]] = {
    "quick_demo": quick_demo_gpu_config,
    "best": best_gpu_config,
    "gpu": gpu_config,
}


def preset_config(name: str, device: str | torch.device = "auto") -> TrainConfig:
    """The preset `name` for a run on `device`: its GPU version when that resolves to a CUDA GPU."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}: choose one of {', '.join(PRESETS)}")
    resolved, _ = resolve_device(device)
    if resolved.type == "cuda" and name in GPU_PRESETS:
        return GPU_PRESETS[name]()
    return PRESETS[name]()
