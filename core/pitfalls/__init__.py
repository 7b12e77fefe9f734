"""The Pitfalls lesson: every bug of the original course documents, run live beside the fix.

One module per pitfall (`softmax_dim`, `mask_zero`, ... `spelling`), each holding
* `PITFALL`: its catalogue entry (title, where in the originals, the effect, one sentence on why);
* the buggy code: `buggy_*` functions (or classes) that reproduce the original as written, small
  enough to show on screen, and that really run (or really crash) so the numbers come from them;
* the fixed code: the project's real core code where it exists (`core.attention`,
  `core.data.name_windows`, `core.tokenizers.CharTokenizer`, `core.models`, `core.training`),
  otherwise a `fixed_*` function beside the buggy one;
* `demo(...)`: runs both on the same inputs and returns the numbers that show the difference
  (plain values and pandas DataFrames, ready for a table or a chart).

`common.py` holds what they share: the `Pitfall` record, `Caught`/`run_caught` (the buggy code is
meant to crash), `build_seeded` (the book's global-seed builds), `row_sums`. This file holds the registry:
`PITFALL_LIST` in course order, `PITFALLS` by key, `MODULES` by key, and `PitfallsSettings`, the
page's controls (`?pitfall=...` opens one pitfall directly). Charts live in `core.viz.pitfalls`.

Randomness is explicit: every demo takes a `seed`. The book's classes (`CausalAttention`, ...)
draw their initial weights from torch's global RNG, so they are built inside `build_seeded`, which
forks that RNG and holds a lock, leaving every other session's random numbers untouched.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.pitfalls import (config_end_id, encode_shape, fit_indent, mask_after_softmax, mask_zero,
                           module_typos, no_position, no_scaling, prep_global, sgd, short_names,
                           softmax_dim, spelling, vocab_order)
from core.pitfalls.common import Caught, Pitfall, build_seeded, row_sums, run_caught
from core.settings import spec

__all__ = ["Caught", "Pitfall", "build_seeded", "row_sums", "run_caught", "MODULES", "PITFALL_LIST",
           "PITFALLS", "PITFALL_CHOICES", "PitfallsSettings"]

MODULES = {module.PITFALL.key: module for module in (
    softmax_dim, mask_zero, mask_after_softmax, no_scaling, short_names, sgd, vocab_order,
    fit_indent, prep_global, no_position, encode_shape, config_end_id, module_typos, spelling)}
PITFALL_LIST: list[Pitfall] = [module.PITFALL for module in MODULES.values()]  # course order
PITFALLS: dict[str, Pitfall] = {p.key: p for p in PITFALL_LIST}
PITFALL_CHOICES = ("overview",) + tuple(PITFALLS)


def _menu_label(key: str) -> str:
    return "Overview: all pitfalls" if key == "overview" else f"{PITFALL_CHOICES.index(key)} · {PITFALLS[key].title}"


@dataclass
class PitfallsSettings:
    """Controls of the Pitfalls page (one pitfall open at a time); each field's spec holds its
    bounds or choices (checked on links and lesson files) and its widget's label and help."""

    # which pitfall is open ("overview": all of them)
    pitfall: str = spec("overview", choices=PITFALL_CHOICES, label="Pitfall",
                        choice_labels={key: _menu_label(key) for key in PITFALL_CHOICES})
    # seeds every random input, model and batch order
    seed: int = spec(123, min=0, max=1_000_000, step=1, label="Seed",
                     help="Seeds the random inputs, weights and batches.")
    # window length for the names pitfalls (lecture: 12)
    context_size: int = spec(12, min=1, max=32, widget="slider", label="Context size (window length)",
                             help="The lecture uses 12.")
    # steps of EACH optimizer in the SGD/AdamW race
    optim_steps: int = spec(300, min=10, max=1000, step=50, label="Steps per optimizer",
                            help="The lecture trains 1000 steps; 300 take roughly 5-10 s per optimizer on "
                                 "2 CPU cores.")
    # AdamW's learning rate (SGD keeps the lecture's 0.01)
    adamw_lr: float = spec(0.003, choices=sgd.ADAMW_LRS, label="AdamW learning rate",
                           choice_labels={lr: f"{lr:g}" for lr in sgd.ADAMW_LRS})
    # stands in for PYTHONHASHSEED of the run that saved, and of the run that loads
    hash_seed_a: int = spec(1, min=0, max=10_000, step=1, label="Hash seed of the run that saved")
    hash_seed_b: int = spec(2, min=0, max=10_000, step=1, label="Hash seed of the run that loads")
    fit_iters: int = spec(200, min=10, max=1000, step=10, label="train_iters")  # train_iters of the slides' fit
    eval_iters: int = spec(10, min=1, max=500, step=1, label="eval_iters")  # eval_iters of the slides' fit
    prep_corpus: str = spec("hello world, hello class", max_len=prep_global.MAX_CORPUS_CHARS)  # corpus passed to prep

    def problems(self) -> list[str]:
        if self.eval_iters > self.fit_iters:
            return [f"eval_iters ({self.eval_iters}) must not exceed fit_iters ({self.fit_iters})"]
        return []
