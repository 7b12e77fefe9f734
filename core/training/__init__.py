"""Training the names GPT: what a run is, the one training loop, and the presets.

    config.py    TrainConfig (every hyper-parameter declared once with spec(...)), learning_rate
    trainer.py   Trainer: trains in resumable slices, evaluates, keeps the history; TrainingError
    packing.py   PackedRows: whole names packed into rows, no compute spent on padding
    snapshot.py  StateSnapshot: copies of weights and optimizer state, put back in place
    average.py   WeightAverage: the running average of the weights (TrainConfig.ema_decay)
    presets.py   PRESETS, GPU_PRESETS, preset_config(name, device) (measurements: docs/PRESETS.md)
    gpu.py       CUDA only: training steps replayed from a CUDA graph, bfloat16 autocast

A reader of the CPU path needs config.py, trainer.py and packing.py; gpu.py runs only for a CUDA device.
"""

from core.training.config import AUTOCAST_MODES, OPTIMIZERS, SCHEDULES, TrainConfig, learning_rate
from core.training.presets import (
    GPU_PRESETS,
    PRESETS,
    best_config,
    best_gpu_config,
    better_config,
    class_demo_config,
    gpu_config,
    lecture_config,
    preset_config,
    quick_demo_config,
    quick_demo_gpu_config,
)
from core.training.trainer import SliceResult, Trainer, TrainingError, make_optimizer, steps_between_loss_reads

__all__ = [
    "AUTOCAST_MODES",
    "GPU_PRESETS",
    "OPTIMIZERS",
    "PRESETS",
    "SCHEDULES",
    "SliceResult",
    "TrainConfig",
    "Trainer",
    "TrainingError",
    "best_config",
    "best_gpu_config",
    "better_config",
    "class_demo_config",
    "gpu_config",
    "learning_rate",
    "lecture_config",
    "make_optimizer",
    "preset_config",
    "quick_demo_config",
    "quick_demo_gpu_config",
    "steps_between_loss_reads",
]
