"""Class-poll questions of the names-GPT pages that are not walkthrough steps (those are asked by
the pages 1–4 themselves): the loss of an untrained model (Train page) and which name is novel
(Sample page). Each is the same for the whole class, so the answers can be counted together.
"""

from __future__ import annotations

import functools
import math
import random
from dataclasses import dataclass

from core.data import load_names

N_CHARACTERS = 27  # "." + a-z: the names GPT's vocabulary


@dataclass(frozen=True)
class Question:
    """A multiple-choice question: its id in the class store, the words, the choices, the right ones."""

    qid: str  # letters, digits and . _ : / - (core.classroom.store.QUESTION_PATTERN)
    prompt: str
    options: tuple[str, ...]
    right: frozenset[str]
    answer: str  # the explanation shown with the reveal


def untrained_loss() -> Question:
    """Before any training step, what validation loss does the model start at?"""
    uniform = math.log(N_CHARACTERS)
    return Question(
        "train.untrained_loss.v1",
        "before the first training step, what loss does the untrained model start at?",
        ("about 0", "about 1", f"about {uniform:.1f}", "about 27"),
        frozenset({f"about {uniform:.1f}"}),
        f"An untrained model spreads its guesses about evenly over the {N_CHARACTERS} characters, so its "
        f"loss starts near ln {N_CHARACTERS} ≈ {uniform:.2f} nats (a uniform guess); training pushes it down.")


INVENTED = ("zorvelyn", "brelinka", "quessandra", "tavrimo")  # candidates; the first not in the data is used


@functools.lru_cache(maxsize=1)
def novel_name() -> Question:
    """Three real names from the data and one invented: which one did a model make up?"""
    names = load_names()
    known = set(names)
    invented = next(name for name in INVENTED if name not in known)
    rng = random.Random(2024)  # the same four names for every student
    real = rng.sample(sorted(n for n in known if 5 <= len(n) <= 8), 3)
    options = real + [invented]
    rng.shuffle(options)
    return Question(
        "sample.novel_name.v1",
        "three of these names are in the names data and one was invented by a model: which one is new?",
        tuple(options), frozenset({invented}),
        f"“{invented}” is in none of the {len(names):,} names; the other three are real. A trained model "
        "invents names like it, built from the letter patterns of real ones; the table below labels each "
        "sampled name new, training split or validation split.")
