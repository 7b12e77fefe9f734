"""Loss against wall-clock time on 2 CPU threads: the project's presets vs a lecture-style loop.

    python benchmarks/train_speed.py [--long | --horizon S] [--recipes quick_demo,better,best] [--threads 2] [--slice 3]
                                     [--cpu-share 0.8]

(a) the project's recipes: the CPU presets of the Train page (`core.training.PRESETS`), each run with
    `core.training.Trainer` exactly as the preset defines it (its own steps and schedule), until it
    ends or the horizon comes;
(b) a straightforward lecture-style version, written out below: explicit mask + softmax attention,
    nn.Dropout, a torch DataLoader over a Dataset built item by item in Python (lecture 7's
    NamesDataset, fixed: windows padded, targets 1-D per position), SGD at lr 0.01, the lecture's config.

All use the standard split of data/names.txt (10% validation, seed 101) and train in alternating
slices of --slice seconds, so a load change on a shared machine hits them alike. Each run's clock is
its own training time from its first step; at each checkpoint of the curve (10 s ... 90 s, or ...
300 s with --long) training pauses and the validation loss is measured on the whole held-out split
(mean loss per non-padding character), not counted in the time. A run that has ended keeps its last
loss at later checkpoints. Targets (issue 26): some recipe at <= 1.96 nats/char at 30 s, <= 1.93 at
90 s, <= 1.90 at 300 s (--long). Last line: one JSON object.

Headroom: --cpu-share S runs the whole benchmark as on a machine S times as fast as this one
(benchmarks.harness.CpuShare stops and continues the process, all its threads together, so it
keeps only S of the wall time). The presets' steps are fixed, so on a slower machine a preset is
further from its end at each checkpoint; the lowest share at which a target still passes is its
headroom.

OpenMP waiting is set before torch is imported, as the app sets it: OMP_WAIT_POLICY=PASSIVE with
GOMP_SPINCOUNT=30000. With two threads on a 2-core machine that other processes also use, threads
that spin long wait for a preempted partner and every matmul gets ~10x slower; waiting with no spin
at all makes each of a small model's many tiny ops pay a sleep and wake-up. A short spin, then
sleep, keeps most of the speed without the cliff. It applies to (a) and (b) alike.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # must precede the torch import (see docstring)
os.environ.setdefault("GOMP_SPINCOUNT", "30000")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, replace  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402

from benchmarks.harness import CpuShare, check_share, load_average  # noqa: E402
from core.data import IGNORE_INDEX, NamesData, build_names_data  # noqa: E402
from core.training import PRESETS, Trainer  # noqa: E402

TARGETS = {30: 1.96, 90: 1.93, 300: 1.90}  # seconds of training -> highest validation loss allowed
CHECKPOINTS = (10, 20, 30, 45, 60, 90, 120, 180, 240, 300)  # seconds at which the curve is measured
DEFAULT_RECIPES = ("quick_demo", "better", "best")  # the Train page's CPU presets for 30 s, 90 s, 5 min


class CurveRun:
    """A run trained in slices that measures its validation loss at fixed seconds of training time.

    Subclasses define `_train(seconds)`, `train_time`, `ended` and `val_loss()`.
    """

    name = "run"

    def __init__(self, horizon_s: float):
        self.checkpoints = [c for c in CHECKPOINTS if c <= horizon_s]
        self.curve: dict[int, float] = {}  # checkpoint seconds -> validation loss
        self.end_time: float | None = None  # training seconds when the run ended before the horizon
        self.final_loss: float | None = None

    def _next_checkpoint(self) -> int | None:
        return next((c for c in self.checkpoints if c not in self.curve), None)

    @property
    def finished(self) -> bool:
        return self._next_checkpoint() is None

    def run_slice(self, seconds: float) -> None:
        """Train up to `seconds` more, stopping at the next checkpoint to measure the curve there."""
        checkpoint = self._next_checkpoint()
        if checkpoint is None:
            return
        if not self.ended:
            self._train(min(seconds, checkpoint - self.train_time))
        if self.ended and self.final_loss is None:
            self.end_time, self.final_loss = self.train_time, self.val_loss()
        if self.ended:  # nothing changes any more: every later checkpoint shows the final loss
            for c in self.checkpoints:
                self.curve.setdefault(c, self.final_loss)
        elif self.train_time >= checkpoint - 0.01:
            self.curve[checkpoint] = self.val_loss()

    @property
    def ended(self) -> bool:
        raise NotImplementedError

    @property
    def train_time(self) -> float:
        raise NotImplementedError

    def _train(self, seconds: float) -> None:
        raise NotImplementedError

    def val_loss(self) -> float:
        raise NotImplementedError


# ---------------------------------------------------------------------------------------------
# (a) the project's recipes
# ---------------------------------------------------------------------------------------------


class PresetRun(CurveRun):
    """(a): a Trainer on one of the project's presets, run as the preset defines it, on the CPU."""

    def __init__(self, data: NamesData, preset: str, horizon_s: float):
        super().__init__(horizon_s)
        self.name = preset
        # the preset's own validations run too (restore_best may keep the weights of one), but the
        # clock is the trainer's training time, which leaves them out
        config = replace(PRESETS[preset](), device="cpu")
        self.trainer = Trainer(config, data)
        self.cpu_time = 0.0  # CPU seconds of this process while training (robust to other load)

    @property
    def ended(self) -> bool:
        return self.trainer.done

    @property
    def train_time(self) -> float:
        return self.trainer.history["elapsed"][-1] if self.trainer.step else 0.0  # validation excluded

    @property
    def steps(self) -> int:
        return self.trainer.step

    @property
    def tokens(self) -> int:
        return self.trainer.history["tokens"][-1] if self.trainer.step else 0

    def _train(self, seconds: float) -> None:
        cpu_start = time.process_time()
        self.trainer.train(time_budget_s=max(0.0, seconds))
        self.cpu_time += time.process_time() - cpu_start

    def val_loss(self) -> float:
        return self.trainer.evaluate("val")  # the whole split


# ---------------------------------------------------------------------------------------------
# (b) lecture-style baseline, written out as a student would from lecture 7
# ---------------------------------------------------------------------------------------------


@dataclass
class LectureConfig:
    """Lecture 7's GPTConfig (model and training part)."""

    vocab_size: int = 27  # set from the tokenizer
    context_size: int = 12  # window length
    n_layer: int = 3  # decoder layers
    n_head: int = 4  # heads per layer
    d_embed: int = 64  # embedding width
    d_ff: int = 256  # feed-forward width
    dropout: float = 0.1  # dropout probability
    batch_size: int = 32  # windows per step
    lr: float = 0.01  # SGD learning rate
    seed: int = 101  # torch.manual_seed


class LectureNamesDataset(Dataset):
    """Lecture 7's NamesDataset, fixed: every name gives a window (padded), targets are 1-D."""

    def __init__(self, names: list[str], stoi: dict[str, int], context_size: int):
        self.inputs, self.targets = [], []
        for name in names:
            tokens = [stoi["."]] + [stoi[char] for char in name] + [stoi["."]]
            for start in range(max(1, len(tokens) - context_size)):
                window = tokens[start : start + context_size + 1]
                inputs, targets = window[:-1], window[1:]
                padding = context_size - len(inputs)
                self.inputs.append(inputs + [0] * padding)
                self.targets.append(targets + [IGNORE_INDEX] * padding)

    def __len__(self) -> int:
        return len(self.inputs)

    def __getitem__(self, idx: int) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.tensor(self.inputs[idx]), torch.tensor(self.targets[idx])  # (T,), (T,)


class LectureCausalSelfAttention(nn.Module):
    def __init__(self, d_embed: int, n_head: int, dropout: float, context_size: int):
        super().__init__()
        self.n_head = n_head
        self.d_head = d_embed // n_head
        self.query = nn.Linear(d_embed, d_embed, bias=False)
        self.key = nn.Linear(d_embed, d_embed, bias=False)
        self.value = nn.Linear(d_embed, d_embed, bias=False)
        self.out = nn.Linear(d_embed, d_embed, bias=False)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_size, context_size), diagonal=1).bool())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q = self.query(x).view(B, T, self.n_head, self.d_head).transpose(1, 2)  # (B, n_head, T, d_head)
        k = self.key(x).view(B, T, self.n_head, self.d_head).transpose(1, 2)  # (B, n_head, T, d_head)
        v = self.value(x).view(B, T, self.n_head, self.d_head).transpose(1, 2)  # (B, n_head, T, d_head)
        attn_scores = q @ k.transpose(-2, -1) * self.d_head**-0.5  # (B, n_head, T, T)
        attn_scores = attn_scores.masked_fill(self.mask[:T, :T], float("-inf"))  # (B, n_head, T, T)
        attn_weights = self.dropout(F.softmax(attn_scores, dim=-1))  # (B, n_head, T, T)
        context_vec = (attn_weights @ v).transpose(1, 2).contiguous().view(B, T, C)  # (B, T, d_embed)
        return self.out(context_vec)  # (B, T, d_embed)


class LectureDecoderLayer(nn.Module):
    def __init__(self, config: LectureConfig):
        super().__init__()
        self.layer_norm1 = nn.LayerNorm(config.d_embed)
        self.self_attention = LectureCausalSelfAttention(
            config.d_embed, config.n_head, config.dropout, config.context_size
        )
        self.layer_norm2 = nn.LayerNorm(config.d_embed)
        self.feed_forward = nn.Sequential(
            nn.Linear(config.d_embed, config.d_ff),
            nn.GELU(),
            nn.Linear(config.d_ff, config.d_embed),
            nn.Dropout(config.dropout),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attention(self.layer_norm1(x))  # (B, T, d_embed)
        return x + self.feed_forward(self.layer_norm2(x))  # (B, T, d_embed)


class LectureGPT(nn.Module):
    def __init__(self, config: LectureConfig):
        super().__init__()
        self.token_embedding = nn.Embedding(config.vocab_size, config.d_embed)
        self.positional_embedding = nn.Embedding(config.context_size, config.d_embed)
        self.layers = nn.ModuleList(LectureDecoderLayer(config) for _ in range(config.n_layer))
        self.layer_norm = nn.LayerNorm(config.d_embed)
        self.linear = nn.Linear(config.d_embed, config.vocab_size)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(idx.size(1), device=idx.device)  # (T,)
        x = self.token_embedding(idx) + self.positional_embedding(positions)  # (B, T, d_embed)
        for layer in self.layers:
            x = layer(x)  # (B, T, d_embed)
        return self.linear(self.layer_norm(x))  # (B, T, V)


def lecture_loss(logits: torch.Tensor, targets: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    return F.cross_entropy(
        logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=IGNORE_INDEX, reduction=reduction
    )


class LectureRun(CurveRun):
    """(b): DataLoader + SGD loop, advanced in time slices."""

    name = "lecture"

    def __init__(self, data: NamesData, horizon_s: float):
        super().__init__(horizon_s)
        config = LectureConfig(vocab_size=data.tokenizer.vocab_size)
        stoi = {char: i for i, char in enumerate(data.tokenizer.vocab)}
        torch.manual_seed(config.seed)  # the lecture's set_seed
        self.model = LectureGPT(config)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=config.lr)
        self.train_loader = DataLoader(
            LectureNamesDataset(data.train_names, stoi, config.context_size),
            batch_size=config.batch_size,
            shuffle=True,
            generator=torch.Generator().manual_seed(config.seed),
        )
        self.val_loader = DataLoader(
            LectureNamesDataset(data.val_names, stoi, config.context_size), batch_size=256, shuffle=False
        )
        self.batches = self._forever()
        self._train_time = 0.0  # wall-clock seconds of training
        self.cpu_time = 0.0  # CPU seconds of this process while training (robust to other load)
        self.tokens = 0
        self.steps = 0

    def _forever(self):
        while True:  # a new shuffle every epoch (itertools.cycle would replay the first one)
            yield from self.train_loader

    @property
    def ended(self) -> bool:
        return False  # the loop has no end of its own: it trains until the horizon

    @property
    def train_time(self) -> float:
        return self._train_time

    def _train(self, seconds: float) -> None:
        cpu_start = time.process_time()
        start = time.perf_counter()
        self.model.train()
        while time.perf_counter() - start < seconds:
            inputs, targets = next(self.batches)  # (B, T), (B, T)
            loss = lecture_loss(self.model(inputs), targets)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.tokens += int((targets != IGNORE_INDEX).sum())
            self.steps += 1
        self._train_time += time.perf_counter() - start
        self.cpu_time += time.process_time() - cpu_start

    @torch.no_grad()
    def val_loss(self) -> float:
        self.model.eval()
        total, count = 0.0, 0
        for inputs, targets in self.val_loader:
            total += lecture_loss(self.model(inputs), targets, reduction="sum").item()
            count += int((targets != IGNORE_INDEX).sum())
        return total / count


# ---------------------------------------------------------------------------------------------


def run_alternating(runs: list[CurveRun], slice_s: float) -> None:
    """Advance every run by one slice in turn until each has measured its whole curve."""
    while not all(r.finished for r in runs):
        for r in runs:
            if not r.finished:
                r.run_slice(slice_s)


def run_figures(run: CurveRun) -> dict:
    """What one run did: its curve, speed and where it ended."""
    tokens_per_s = run.tokens / run.train_time if run.train_time else 0.0
    return {
        "curve": {str(c): round(v, 4) for c, v in run.curve.items()},
        "train_seconds": round(run.train_time, 2),
        "ended_at_s": None if run.end_time is None else round(run.end_time, 2),
        "final_loss": None if run.final_loss is None else round(run.final_loss, 4),
        "steps": run.steps,
        "tokens_per_s": round(tokens_per_s),
        "tokens_per_cpu_s": round(run.tokens / run.cpu_time) if run.cpu_time else 0,
    }


def print_table(runs: list[CurveRun], checkpoints: list[int]) -> None:
    """One row per run: validation loss at each checkpoint (a run that ended keeps its final loss)."""
    print("validation loss (nats/char, whole held-out split) at seconds of training from the first step:")
    print(f"{'run':<12}" + "".join(f"{c:>8} s" for c in checkpoints) + "   ended at   tokens/s")
    for r in runs:
        cells = "".join(f"{r.curve[c]:>10.4f}" for c in checkpoints)
        ended = "-" if r.end_time is None else f"{r.end_time:.1f} s"
        tokens_per_s = r.tokens / r.train_time if r.train_time else 0.0
        print(f"{r.name:<12}{cells}   {ended:>8}   {tokens_per_s:>8.0f}")


def target_results(recipes: list[CurveRun], horizon_s: float) -> dict[str, dict]:
    """Each target within the horizon: the best recipe's loss at its time, and pass/fail."""
    results = {}
    for seconds, limit in TARGETS.items():
        if seconds > horizon_s:
            continue
        best = min(recipes, key=lambda r: r.curve[seconds])
        results[str(seconds)] = {
            "limit": limit,
            "best_recipe": best.name,
            "val_loss": round(best.curve[seconds], 4),
            "pass": best.curve[seconds] <= limit,
        }
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--long", action="store_true", help="measure the curve up to 300 s (default 90 s)")
    parser.add_argument("--horizon", type=float, help="measure the curve up to this many seconds instead")
    parser.add_argument("--recipes", default=",".join(DEFAULT_RECIPES),
                        help="comma-separated presets of core.training.PRESETS (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    parser.add_argument("--slice", type=float, default=3.0, help="seconds per alternating slice")
    parser.add_argument("--no-lecture", action="store_true", help="leave out the lecture-style loop")
    parser.add_argument("--cpu-share", type=float, default=1.0,
                        help="run as on a machine this fraction as fast (0.05-1.0; default 1.0: this machine)")
    args = parser.parse_args()
    try:
        check_share(args.cpu_share)
    except ValueError as err:
        parser.error(str(err))
    names = [n.strip() for n in args.recipes.split(",") if n.strip()]
    unknown = [n for n in names if n not in PRESETS]
    if unknown or not names:
        parser.error(f"unknown presets {unknown}: choose among {', '.join(PRESETS)}")
    torch.set_num_threads(args.threads)
    horizon = args.horizon or (300.0 if args.long else 90.0)
    if horizon < CHECKPOINTS[0]:
        parser.error(f"--horizon must be at least {CHECKPOINTS[0]} s")

    load_before = load_average()
    data = build_names_data(context_size=12, val_size=0.1, seed=101)
    recipes: list[CurveRun] = [PresetRun(data, name, horizon) for name in names]
    runs = recipes + ([] if args.no_lecture else [LectureRun(data, horizon)])
    started = time.perf_counter()
    with CpuShare(os.getpid(), args.cpu_share):
        run_alternating(runs, args.slice)
    load_after = load_average()

    checkpoints = runs[0].checkpoints
    print_table(runs, checkpoints)
    targets = target_results(recipes, horizon)
    for seconds, t in targets.items():
        verdict = "PASS" if t["pass"] else "FAIL"
        print(f"target <= {t['limit']} at {seconds} s: {verdict} ({t['best_recipe']} {t['val_loss']:.4f})")
    print(f"torch threads: {args.threads}; CPU share {args.cpu_share:g}; load average before {load_before}, after {load_after}; "
          f"{time.perf_counter() - started:.0f} s in all")
    result = {
        "horizon_s": horizon,
        "threads": args.threads,
        "cpu_share": args.cpu_share,
        "runs": {r.name: run_figures(r) for r in runs},
        "targets": targets,
        "load_average_before": load_before,
        "load_average_after": load_after,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
