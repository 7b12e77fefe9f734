"""What only a CUDA GPU does in training: steps replayed from a recorded CUDA graph, bfloat16 autocast.

An eager step of these small models launches ~200 tiny kernels, and on a GPU preparing each costs the
CPU more than the GPU needs to run it: the GPU waits on Python (~100 steps/s on an H100, whatever the
batch). Recorded once as a CUDA graph (`CudaGraphStep`), the whole packed step is replayed with one
call, 3-10x faster; bfloat16 autocast then adds 10-25%. `CudaSteps` is what a `Trainer` on a CUDA
device holds (a Trainer elsewhere holds None, and none of this runs): when to record the graph, the
replay, the autocast of the forward pass, and what to do when an op cannot be recorded.
"""

from __future__ import annotations

import contextlib
from typing import ContextManager

import torch

from core.data import IGNORE_INDEX
from core.training.average import WeightAverage
from core.training.config import TrainConfig

GRAPH_WARMUP_STEPS = 3  # ordinary steps before a training step is recorded as a CUDA graph


def autocast_dtype(mode: str, device: torch.device, graphed: bool = True) -> torch.dtype | None:
    """The autocast dtype of a run's training forward pass, or None for plain float32.

    bfloat16 only on a CUDA GPU that supports it: with "bf16" always, with "auto" only when the steps
    are replayed from a CUDA graph (`graphed`). Measured on an H100: eager steps of these small models
    are bound by the CPU launching kernels, and the casts autocast adds made them ~20% slower; replayed
    from a graph, bfloat16 made them 10-25% faster. The CPU never autocasts: bfloat16 is slower there
    on most processors, and the CPU's results stay exactly those of float32."""
    if mode == "off" or device.type != "cuda" or (mode == "auto" and not graphed):
        return None
    return torch.bfloat16 if torch.cuda.is_bf16_supported() else None


class CudaGraphStep:
    """One packed training step (forward, backward, clipping, optimizer update, and with ema_decay the
    update of the weights' average) recorded as a CUDA graph.

    The batch is copied into fixed input tensors first, the learning rate into a tensor the optimizer
    reads and the average's coefficient into its own (`WeightAverage.take`), because a replay re-runs
    the recorded kernels on the same memory. The loss of each replay is copied out, so the trainer can
    read losses back later as in an eager step. Dropout masks come from the trainer's own generator,
    registered with the graph so that every replay draws new ones.
    """

    def __init__(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer, config: TrainConfig,
                 dropout_generator: torch.Generator, autocast: ContextManager,
                 average: WeightAverage | None = None):
        device = next(model.parameters()).device
        rows, length = config.batch_size, config.pack_length
        self.inputs = torch.zeros(rows, length, dtype=torch.long, device=device)  # (B, P)
        self.targets = torch.full((rows, length), IGNORE_INDEX, dtype=torch.long, device=device)  # (B, P)
        self.positions = torch.zeros(rows, length, dtype=torch.long, device=device)  # (B, P)
        self.attn_mask = torch.ones(rows, 1, length, length, dtype=torch.bool, device=device).tril()  # (B, 1, P, P)
        for group in optimizer.param_groups:  # the update must read its lr from device memory, and be recordable
            group["lr"] = torch.tensor(float(group["lr"]), device=device)
            group["capturable"] = True
        self.graph = torch.cuda.CUDAGraph()
        if config.model.dropout > 0:
            self.graph.register_generator_state(dropout_generator)
        optimizer.zero_grad(set_to_none=True)  # gradients are then created inside the graph's memory
        # thread_local: other sessions' threads may use the GPU while this one records
        with torch.cuda.graph(self.graph, capture_error_mode="thread_local"):
            with autocast:
                _, loss = model(self.inputs, self.targets, positions=self.positions, attn_mask=self.attn_mask)
            loss.backward()
            if config.grad_clip is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            optimizer.step()
            if average is not None:  # after the update, as in an eager step; reads its coefficient on the GPU
                average.apply()
        self.loss = loss.detach()  # () float32, rewritten by every replay
        self.average = average

    def run(self, inputs, targets, positions, attn_mask, lr: float, optimizer, update: int) -> torch.Tensor:
        """One training step on this batch at this learning rate; returns its loss (a 0-d device tensor).
        `update`: the number of this step's update of the weights' average (its bias correction)."""
        self.inputs.copy_(inputs)
        self.targets.copy_(targets)
        self.positions.copy_(positions)
        self.attn_mask.copy_(attn_mask)
        for group in optimizer.param_groups:
            group["lr"].fill_(lr)
        if self.average is not None:
            self.average.set_update(update)
        self.graph.replay()
        return self.loss.clone()


class CudaSteps:
    """A CUDA run's graph replay and autocast: the training step is recorded after a few eager steps
    (the optimizer has made its state by then), replayed from there on, and recorded again after the
    optimizer's tensors were replaced (a loaded state, a return to a restore point)."""

    def __init__(self, config: TrainConfig, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                 dropout_generator: torch.Generator, packed: bool, average: WeightAverage | None = None):
        self.config, self.model, self.optimizer, self.dropout_generator = config, model, optimizer, dropout_generator
        self.average = average  # the weights' running average (ema_decay), updated inside the graph too
        self.device = next(model.parameters()).device
        # replay needs fixed shapes: packed rows only
        # Muon steps read their lr on the host (core.training.muon): such a run trains eagerly
        self.use_graph = config.cuda_graph and packed and config.optimizer != "muon"
        self.autocast_dtype = autocast_dtype(config.autocast, self.device, self.use_graph)  # bfloat16 or None
        self.graph: CudaGraphStep | None = None
        self.eager_steps = 0  # ordinary steps since the graph was (re)set: recording waits for a few
        self.graph_error: str | None = None  # why recording failed, if it did (training then goes on eagerly)

    def autocast(self) -> ContextManager:
        """bfloat16 autocast of the forward pass when this run uses it, else nothing."""
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        # no cache of cast weights: inside a CUDA graph it would hold stale copies (PyTorch's advice)
        return torch.autocast(device_type="cuda", dtype=self.autocast_dtype, cache_enabled=not self.use_graph)

    def graph_ready(self) -> bool:
        """True when this step is to be replayed from the graph, recorded here on first use. False while
        the eager warm-up lasts, and for good when recording fails: the run then trains on eagerly."""
        if not self.use_graph or self.eager_steps < GRAPH_WARMUP_STEPS:
            return False
        if self.graph is not None:
            return True
        try:
            torch.cuda.synchronize(self.device)
            self.graph = CudaGraphStep(self.model, self.optimizer, self.config, self.dropout_generator,
                                       self.autocast(), self.average)
        except Exception as exc:  # an op that cannot be recorded: train on without the graph
            self._give_up(f"{type(exc).__name__}: {exc}")
            return False
        return True

    def _give_up(self, reason: str) -> None:
        self.use_graph = False
        self.autocast_dtype = autocast_dtype(self.config.autocast, self.device, graphed=False)
        self.graph_error = reason
        for group in self.optimizer.param_groups:
            if isinstance(group["lr"], torch.Tensor):
                group["lr"] = float(group["lr"])

    def replay(self, inputs, targets, positions, attn_mask, lr: float, update: int) -> torch.Tensor:
        """One training step replayed from the graph (`update`: its number for the weights' average);
        its loss (a 0-d device tensor, not read back)."""
        return self.graph.run(inputs, targets, positions, attn_mask, lr, self.optimizer, update)

    def count_eager_step(self) -> None:
        self.eager_steps += 1

    def forget_graph(self) -> None:
        """The optimizer's tensors were replaced: record the graph again after a few eager steps."""
        self.graph, self.eager_steps = None, 0

    def synchronize(self) -> None:
        """Wait until the GPU has run everything queued (so the time measured is the GPU's)."""
        torch.cuda.synchronize(self.device)
