"""The Sample-names lesson (page 8): names drawn from a trained names GPT, and what it weighed at
every step of one name.

* `SampleSettings`: the page's controls (links and lesson files work through core.settings);
* `sample_for_page`: the page's names, each labelled new / in the training split / in the
  validation split (core.sampling.sample_names does the drawing);
* `name_steps`, `steps_table`: the next-character distributions along one name.
The charts of this page are in core.viz.names_model.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.runs import Run, split_sets
from core.sampling import SampledName, next_char_distributions, sample_names
from core.settings import spec
from core.tokenizers import BOUNDARY_TOKEN, CharTokenizer

LABEL_TITLES = {"new": "new", "train": "in the training split", "val": "in the validation split",
                "empty": "empty (“.” at once)"}


@dataclass
class SampleSettings:
    """Controls of the Sample page."""

    # how many names to sample; a one-word label: "How many names" took two lines in a row of five
    # at 1024 px (lecture mode), above a box lower than its neighbours'
    n: int = spec(20, min=1, max=200, step=5, label="Names", help="How many names to sample.")
    # < 1 sharpens, > 1 flattens the distribution
    temperature: float = spec(1.0, min=0.05, max=5.0, step=0.05, widget="slider", label="Temperature")
    # keep the k most likely characters; 0 = all of them (27: "." and a-z, every model's alphabet)
    top_k: int = spec(0, min=0, max=27, step=1, widget="slider", label="Top-k (0 = all)",
                      help="Keep only the k most likely next characters; 0 keeps all 27.")
    # every name starts with this
    prefix: str = spec("", max_len=20, label="Prefix", help="Every name starts with these letters.")
    # same seed, same model -> same names
    seed: int = spec(42, min=0, max=2**31 - 1, step=1, label="Seed")
    chosen: int = spec(1, min=1, max=200)  # which sampled name to take apart (from 1, as the table)
    step: int = spec(0, min=0, max=60)  # which step of that name the bar chart shows



@dataclass(frozen=True)
class SampleResult:
    """One draw of names and what it was drawn with: everything the page shows about the names
    (table, shares, chart, caption) comes from one of these, so they always agree."""

    run_id: int  # the run whose model drew them
    run_label: str  # its label, as the page names it
    run_step: int  # the model's step when they were drawn
    settings: SampleSettings  # a copy of the settings that drew them
    samples: tuple[SampledName, ...]  # the names, in the order drawn

    @property
    def key(self) -> tuple:
        """Identifies the draw (run, step and every setting that changes the names)."""
        s = self.settings
        return (self.run_id, self.run_step, s.n, s.temperature, s.top_k, s.prefix, s.seed)

    def describe(self) -> str:
        s = self.settings
        return (f"{self.run_label}, step {self.run_step:,}; temperature {s.temperature:g}, top-k "
                f"{s.top_k or 'all'}, prefix “{s.prefix}”, seed {s.seed}")


def sample_result(run: Run, settings: SampleSettings) -> SampleResult:
    """The page's names with what drew them (ValueError for a prefix the model cannot read)."""
    kept = dataclasses.replace(settings, prefix=clean_prefix(settings.prefix, run.tokenizer))
    return SampleResult(run.run_id, run.label, run.step, kept, tuple(sample_for_page(run, kept)))


def sample_for_page(run: Run, settings: SampleSettings) -> list[SampledName]:
    """The Sample page's names (ValueError for a prefix the model cannot read)."""
    prefix = clean_prefix(settings.prefix, run.tokenizer)
    train_set, val_set = split_sets(run)
    return sample_names(run.model, run.tokenizer, settings.n, temperature=settings.temperature,
                        top_k=settings.top_k or None, prefix=prefix, seed=settings.seed,
                        max_len=max(30, len(prefix) + 1), train_names=train_set, val_names=val_set)


def in_alphabet(text: str, tokenizer: CharTokenizer, what: str) -> str:
    """`text` lower-cased and trimmed, or ValueError if it holds "." or characters outside the vocab."""
    text = str(text).strip()
    if BOUNDARY_TOKEN in text:
        raise ValueError(f'{what} must not contain "." (it marks the start and end of a name).')
    vocab = set(tokenizer.vocab)
    unknown = sorted({c for c in text if _lowered(c) not in vocab})
    if unknown:
        raise ValueError(f"{what} has characters the model never saw: "
                         + ", ".join(repr(c) for c in unknown) + " (names use the letters a–z).")
    return "".join(_lowered(c) for c in text)


def _lowered(char: str) -> str:
    """`char` in lower case when that is one character that turns back into it, else `char` itself.
    str.lower alone turns "İ" into "i" plus a combining dot (two characters, and an error message
    naming a lone dot) and the Kelvin sign "K" into a plain "k": neither is a letter a student typed."""
    low = char.lower()
    return low if len(low) == 1 and low.upper() == char else char


def clean_prefix(prefix: str, tokenizer: CharTokenizer) -> str:
    """The prefix in the model's alphabet (lower-cased, spaces trimmed), or ValueError saying why."""
    return in_alphabet(prefix, tokenizer, "the prefix")


def name_in_range(chosen: int, names: list[str]) -> tuple[int, str | None]:
    """The sampled name to take apart, counted from 1 as people count the rows of the table (and
    as a link says it): `chosen`, or the last one with a notice saying why when `chosen` is beyond
    this draw (a link or lesson written for more names, or fewer names asked for since)."""
    if chosen <= len(names):
        return chosen, None
    last = len(names)  # n is at least 1 (SampleSettings.n), so there is a last name
    return last, (f"Name {chosen} is not among the {len(names)} sampled names, so the last one, "
                  f"name {last} (“{names[last - 1] or '(empty)'}”), is shown.")


def step_in_range(step: int, name: str) -> tuple[int, str | None]:
    """The step of `name` to show: `step`, or the last one with a notice saying why. Steps are
    numbered from 0, as on the page's Step slider: step t has read “.” and t letters, so a name
    of L letters has steps 0 to L (the last one weighs the end of the name)."""
    last = len(name)
    if step <= last:
        return step, None
    count = "only step 0" if last == 0 else f"{last + 1} steps (0 to {last})"
    return last, (f"“{name or '(empty)'}” has {count}, so there is no step {step}; "
                  f"the last one, step {last}, is shown.")


def samples_table(samples: list[SampledName]) -> pd.DataFrame:
    """One row per sampled name: the name, its length and where it stands."""
    return pd.DataFrame({"name": [s.name or "(empty)" for s in samples],
                         "length": [len(s.name) for s in samples],
                         "where": [LABEL_TITLES[s.label] for s in samples]})



@dataclass
class NameSteps:
    """What the model weighed at every step of one name."""

    contexts: list[str]  # what the model had read before each step: ".", ".e", ".em", ...
    chosen: list[str]  # the character that actually came next ("." ends the name)
    probs: np.ndarray  # (steps, V) next-character probabilities
    vocab: list[str]  # column labels of probs
    given: int = 0  # the first `given` characters were the prefix, typed, not sampled

    def was_given(self, step: int) -> bool:
        """True when the character of `step` came from the prefix: the model weighed it, but the
        prefix chose it (its p may be tiny: the names data has few names starting "qx")."""
        return step < self.given


def name_steps(run: Run, name: str, prefix: str = "") -> NameSteps:
    """Next-character distributions along `name` (ValueError for characters the model lacks);
    `prefix`: what the name was drawn with, its characters given rather than sampled."""
    probs = next_char_distributions(run.model, run.tokenizer, name).numpy()  # (len(name) + 1, V)
    text = BOUNDARY_TOKEN + name
    contexts = [text[: t + 1] for t in range(len(name) + 1)]
    chosen = list(name) + [BOUNDARY_TOKEN]
    given = len(prefix) if prefix and name.startswith(prefix) else 0
    return NameSteps(contexts, chosen, probs, run.tokenizer.vocab, given)


def steps_table(steps: NameSteps, top: int = 3) -> pd.DataFrame:
    """Per step: context, the character that came, its probability, the top alternatives."""
    rows = []
    for t, (context, char) in enumerate(zip(steps.contexts, steps.chosen)):
        p = steps.probs[t]  # (V,)
        order = np.argsort(-p)[:top]
        rows.append({"step": t, "read so far": context, "next": char,
                     "from": "prefix" if steps.was_given(t) else "sampled",
                     "p(next)": float(p[steps.vocab.index(char)]),
                     "most likely": ", ".join(f"{steps.vocab[i]} {p[i]:.2f}" for i in order)})
    return pd.DataFrame(rows)

