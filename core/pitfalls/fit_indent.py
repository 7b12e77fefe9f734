"""Pitfall 8: the training step indented inside the evaluation `if` (document 001, `fit`).

Buggy: `buggy_fit`, the slides' loop as written. Fixed: `fixed_fit`, the same loop one level out.
Demo: both fits on the slides' one-head model from the same seed; count the optimizer steps.
"""

from __future__ import annotations

import pandas as pd
import torch

from core.models import SingleHeadLM
from core.pitfalls.common import Pitfall
from core.pitfalls.slides import slides_setup

PITFALL = Pitfall(
    "fit_indent", "Training step indented inside the `if`",
    "Document 001 (small LM slides), `fit`",
    "The optimizer steps only when `iteration % eval_iters == 0`: 1 step in `eval_iters`.",
    "Python's indentation is the block structure: the four training lines sit inside the "
    "evaluation `if`, so they run only on evaluation iterations.")
FIT_LR = 0.01  # Adam's learning rate in the fit demo (the slides' default 1e-4 barely moves in 200 steps)


def buggy_fit(model, get_batch, eval_loss,
              train_iters=100, eval_iters=10,
              lr=FIT_LR):
    """The slides' fit, indentation as written."""
    optimizer = torch.optim.Adam(
        model.parameters(), lr=lr)
    optimizer_steps, curve = 0, []
    for iteration in range(train_iters):
        if iteration % eval_iters == 0:
            loss = eval_loss(model)
            curve.append((iteration, loss))
            # BUG: one level too deep, so the
            # model trains only on eval iterations
            x, y = get_batch("train")
            _, ce_loss = model(x, y)
            optimizer.zero_grad()
            ce_loss.backward()
            optimizer.step()
            optimizer_steps += 1
    return optimizer_steps, curve


def fixed_fit(model, get_batch, eval_loss,
              train_iters=100, eval_iters=10,
              lr=FIT_LR):
    """The same loop, training on every iteration."""
    optimizer = torch.optim.Adam(
        model.parameters(), lr=lr)
    optimizer_steps, curve = 0, []
    for iteration in range(train_iters):
        if iteration % eval_iters == 0:
            loss = eval_loss(model)
            curve.append((iteration, loss))
        # one level out: every iteration trains
        x, y = get_batch("train")
        _, ce_loss = model(x, y)
        optimizer.zero_grad()
        ce_loss.backward()
        optimizer.step()
        optimizer_steps += 1
    return optimizer_steps, curve


def check_fit_args(fit_iters: int, eval_iters: int) -> None:
    """ValueError unless the fit demo's iteration counts make sense."""
    if not 1 <= eval_iters <= fit_iters:
        raise ValueError(f"eval_iters ({eval_iters}) must be between 1 and train_iters ({fit_iters})")


def demo(fit_iters: int = 200, eval_iters: int = 10, seed: int = 123) -> dict:
    """Both fits on the slides' one-head model, same seed, same data; count the optimizer steps."""
    check_fit_args(fit_iters, eval_iters)
    results = {}
    for label, fit in (("buggy", buggy_fit), ("fixed", fixed_fit)):
        tokenizer, batch, eval_loss = slides_setup(seed)
        model = SingleHeadLM(tokenizer.vocab_size, n_embd=32, block_size=8, head_size=16, seed=seed)
        steps, curve = fit(model, batch, eval_loss, train_iters=fit_iters, eval_iters=eval_iters)
        results[label] = {"steps": steps, "curve": curve, "final_val": eval_loss(model)}
    curve = pd.DataFrame(
        [{"iteration": it, "loss": loss, "version": f"{label}: {results[label]['steps']} optimizer steps"}
         for label in results for it, loss in results[label]["curve"]]
        + [{"iteration": fit_iters, "loss": results[label]["final_val"],
            "version": f"{label}: {results[label]['steps']} optimizer steps"} for label in results])
    return {"buggy_steps": results["buggy"]["steps"], "fixed_steps": results["fixed"]["steps"],
            "buggy_val": results["buggy"]["final_val"], "fixed_val": results["fixed"]["final_val"],
            "curve": curve}
