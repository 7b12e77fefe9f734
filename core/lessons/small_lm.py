"""Lesson 6 (page 6): a small language model, bigram table vs one self-attention head.

`SmallLMRace` trains a bigram table and two one-head attention models (with and without position
embeddings) side by side on the same batches, keeps their loss history and generates text with
each; it is driven through the live-training protocol. Also: cross-entropy by hand, as on the slide
(logits -> softmax -> -log p(target)).
"""

from __future__ import annotations

import math
import re
import threading
from dataclasses import dataclass, fields
from typing import Callable, ContextManager, Sequence

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from core import budget
from core.data import encode_corpus, get_batch, train_val_split_tensor
from core.lessons.text import TextProblem, visible
from core.live_training import Outcome, SteppedTraining
from core.models import BigramLM, SingleHeadLM, generate
from core.settings import spec
from core.tokenizers import CharTokenizer

CORPORA = {"pangram": "A short sentence, repeated (the slides' idea)",
           "essay": "A few paragraphs about attention", "own": "Your own text"}


@dataclass
class Verdict:
    """What the race shows so far, in words for the page."""
    kind: str  # "win" (attention lower on validation), "overfit" (lower on train only) or "behind"
    text: str  # Markdown


SLIDES_RESULT = "(The slides, after 4,000 steps on a short repeated sentence: bigram ≈ 0.70, self-attention ≈ 0.15.)"


def race_verdict(latest: dict[str, dict[str, float]], step: int, floor: float, train_chars: int) -> Verdict:
    """The attention model against the bigram at the last evaluation (`latest`: SmallLMRace.latest).

    Differences in nats per character and perplexities (e^loss: how many characters the model is
    as unsure as a uniform choice between), not a ratio of losses, which has no meaning of its own.
    A model lower on the training blocks but higher on validation is memorising a short text: the
    page says so, where "keep training" would make it worse."""
    attention, bigram = latest["attention"], latest["bigram"]
    gap = attention["val"] - bigram["val"]
    said = (f"At step {step:,} the attention model's validation loss is **{attention['val']:.3f}** "
            f"against the bigram's **{bigram['val']:.3f}** (perplexity {math.exp(attention['val']):.2f} "
            f"against {math.exp(bigram['val']):.2f}): ")
    floor_note = (f" No bigram table can go below {floor:.3f} on the training blocks measured, because "
                  "it only ever sees one character.")
    if gap < 0:
        return Verdict("win", said + f"**{-gap:.3f} nats lower**." + floor_note + " " + SLIDES_RESULT)
    if attention["train"] < bigram["train"]:
        return Verdict("overfit", said + f"**{gap:.3f} nats higher**, though on the training blocks it "
                       f"is lower ({attention['train']:.3f} against {bigram['train']:.3f}). It is "
                       f"learning this short text ({train_chars:,} training characters) by heart "
                       "rather than what carries over to new text, and more steps make that worse. "
                       "Try the repeated sentence, or a longer text of your own.")
    return Verdict("behind", said + f"still **{gap:.3f} nats higher**: keep training." + floor_note)


@dataclass
class SmallLMSettings:
    """Controls of the Small language model page (the user's own corpus is never in a link)."""

    corpus: str = spec("pangram", choices=tuple(CORPORA))  # which text the models learn
    block_size: int = spec(8, min=1, max=32)  # T, characters of context (the slides: 8)
    batch_size: int = spec(32, min=1, max=128)  # B, blocks per training step
    n_embd: int = spec(32, min=1, max=128)  # C, embedding width (the slides: 32)
    head_size: int = spec(16, min=1, max=128)  # d, the attention head's width (the slides: 16)
    lr: float = spec(0.01, min=1e-5, max=1.0)  # Adam learning rate, the same for all models
    seed: int = spec(1337, min=0, max=2**31 - 1)  # initial weights, batch order and eval batches
    max_steps: int = spec(1500, min=10, max=5000)  # training stops here
    steps_per_tick: int = spec(20, min=1, max=100)  # steps per live update (keeps each tick short)
    sample_chars: int = spec(160, min=10, max=500)  # length of the generated text
    temperature: float = spec(1.0, min=0.05, max=3.0)  # sampling temperature
    prompt: str = spec("", max_len=40)  # text the generation starts from (empty: the corpus' start)
    ce_logits: list[float] = spec(factory=lambda: [0.1, 0.5, 0.2, 0.1], max_len=20)  # the slide's logits
    ce_target: int = spec(1, min=0, max=19)  # the slide's target class

    def problems(self) -> list[str]:
        if not 2 <= len(self.ce_logits) <= 20:
            return ["the cross-entropy example needs 2 to 20 logits"]
        if self.ce_target >= len(self.ce_logits):
            return [f"ce_target {self.ce_target} is not a class of {len(self.ce_logits)} logits"]
        if any(not math.isfinite(z) or abs(z) > MAX_ABS_LOGIT for z in self.ce_logits):
            return [f"logits must be finite and between −{MAX_ABS_LOGIT} and {MAX_ABS_LOGIT}"]
        return []

    def race_config(self) -> "RaceConfig":
        return RaceConfig(block_size=self.block_size, batch_size=self.batch_size,
                          n_embd=self.n_embd, head_size=self.head_size, lr=self.lr, seed=self.seed)


MODEL_LABELS = {
    "bigram": "Bigram table (|V|×|V|)",
    "attention_nopos": "One head, no position (the slides)",
    "attention": "One head + position",
}


VAL_FRAC = 0.1  # the slides' 90/10 split by position
SAMPLE_CHUNK = 100  # characters: samples are drawn in whole chunks and cut (SmallLMRace.generate)

# The learning-rate slider's usual steps. A link or a lesson may set any rate the settings accept
# (SmallLMSettings.lr); `lr_options` then adds it, so the slider never shows another rate.
LR_STEPS = (1e-4, 3e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1)

# Most distinct characters a corpus may have. The bigram table has |V|² entries and Adam keeps two
# more copies: 3,000 characters are 9 million weights (~150 MB with Adam) and ~0.25 s per
# training step on one core; 4,000 took twice as long. A text of common Chinese or Japanese fits.
MAX_VOCABULARY = 3_000

# The tables of section 5 draw at most this many characters (the most frequent ones): a heatmap
# of more is unreadable, and 3,000 characters made a bigram chart of hundreds of MB, beyond what
# Streamlit sends to a browser (server.maxMessageSize: 100 MB in .streamlit/config.toml).
TABLE_CHARS = 50


def lr_options(*rates: float) -> list[float]:
    """The learning-rate slider's options: the usual steps, plus each of `rates` that is another
    valid rate (from a link or a lesson), so the student trains with the rate they were given."""
    return sorted({*LR_STEPS, *rates})


def max_vocabulary(limits: budget.Limits | None = None) -> int:
    """Most distinct characters a corpus may have on this server: MAX_VOCABULARY, and no more than
    a bigram table (|V|² weights, the largest model here) within the server's largest model
    (budget.LIMITS.max_params: 400,000 on a hosted server, so 632 characters)."""
    limits = budget.LIMITS if limits is None else limits
    return min(MAX_VOCABULARY, math.isqrt(limits.max_params))


def check_corpus(text: str, block_size: int, limits: budget.Limits | None = None) -> None:
    """Raise TextProblem if a 90/10 split of `text` cannot give a block of `block_size` + 1, or
    if the text has more distinct characters than the models may learn here (max_vocabulary)."""
    n_distinct, most = len(set(text)), max_vocabulary(limits)
    if n_distinct > most:
        raise TextProblem(
            f"The corpus has {n_distinct:,} distinct characters; these models learn at most "
            f"{most:,} on this server (the bigram table alone would have {n_distinct ** 2:,} weights). "
            "Use a shorter excerpt, or a text with fewer kinds of characters.")
    n_train = int(len(text) * (1 - VAL_FRAC))
    n_val = len(text) - n_train
    need = block_size + 1
    if n_val < need:
        raise TextProblem(
            f"The corpus has {len(text):,} characters, so its 10% validation part has only {n_val}; "
            f"a block of {block_size} needs {need} (one more for the last target). Use at least "
            f"{need * 10:,} characters or a smaller block size.")


@dataclass(frozen=True)
class RaceConfig:
    """Everything that defines a race besides the corpus."""

    block_size: int = 8  # T, characters of context
    batch_size: int = 32  # B, blocks per step (the same blocks for all three models)
    n_embd: int = 32  # C, width of the token (and position) embeddings
    head_size: int = 16  # d, width of the attention head
    lr: float = 0.01  # Adam learning rate
    seed: int = 1337  # initial weights, batch order, evaluation batches
    eval_every: int = 50  # evaluate on fixed train and val batches every this many steps
    eval_batches: int = 4  # batches per split per evaluation
    eval_batch_size: int = 64  # blocks per evaluation batch

    # read only once training starts: an untrained race is the same with any values of these
    TRAINING_ONLY = ("batch_size", "lr", "eval_every")

    def untrained_key(self) -> tuple:
        """What fixes the untrained race (its models, evaluation batches and samples)."""
        return tuple(getattr(self, f.name) for f in fields(self) if f.name not in self.TRAINING_ONLY)


class SmallLMRace(SteppedTraining):
    """Three models trained side by side on the same batches of one character corpus.

    * "bigram": a |V| x |V| table (the next character from the current one only);
    * "attention_nopos": embedding |V| x C, one causal head, linear to |V| (the slides' model);
    * "attention": the same plus a position embedding (the slides forgot it).

    One `torch.Generator` draws every training batch, and each batch is used by all three models,
    so their curves differ only by what the models can learn. Evaluation uses fixed batches drawn
    once from another generator (the same for all models), so the curves are smooth and comparable.

    A live run (core.live_training): `train_step()` is one step of all three models; `advance`
    (from SteppedTraining) trains for a time budget, at most `steps_per_advance` steps, inside a
    training slot; `done` once `max_steps` are trained; `history` holds every evaluation. The page
    may change `max_steps` and `steps_per_advance` between slices (they do not change the numbers).
    """

    def __init__(self, text: str, config: RaceConfig = RaceConfig(), max_steps: int | None = None,
                 steps_per_advance: int | None = None):
        check_corpus(text, config.block_size)
        self.text, self.config = text, config
        self.tokenizer = CharTokenizer.from_text(text)
        data = encode_corpus(text, self.tokenizer)  # (n_chars,)
        self.train_data, self.val_data = train_val_split_tensor(data, VAL_FRAC)  # (n_train,), (n_val,)
        V, c = self.tokenizer.vocab_size, config
        self.models = {
            "bigram": BigramLM(V, seed=c.seed),
            "attention_nopos": SingleHeadLM(V, c.n_embd, c.block_size, c.head_size,
                                            use_position=False, seed=c.seed),
            "attention": SingleHeadLM(V, c.n_embd, c.block_size, c.head_size,
                                      use_position=True, seed=c.seed),
        }
        self._optimizers: dict[str, torch.optim.Optimizer] | None = None  # built by the first step
        self.batch_generator = torch.Generator().manual_seed(c.seed)
        eval_generator = torch.Generator().manual_seed(c.seed + 1)
        self.eval_sets = {
            split: [get_batch(data_, c.block_size, c.eval_batch_size, eval_generator)
                    for _ in range(c.eval_batches)]
            for split, data_ in (("train", self.train_data), ("val", self.val_data))}
        self.step = 0
        self.max_steps = max_steps  # done once this many steps are trained (None: never)
        self.steps_per_advance = steps_per_advance  # at most this many steps per advance (None: no cap)
        self.history: list[dict] = []  # {"step", "model", "split", "loss"}
        self.lock = threading.Lock()  # held while a slice trains; ui.live holds it while drawing
        self._samples: dict[tuple, tuple[int, str]] = {}  # -> (characters drawn, text)
        self._bigram_floor: float | None = None  # computed on first use (bigram_floor)
        self._record_eval()

    def adopt(self, config: RaceConfig) -> bool:
        """Take `config` in place of the race's own if that changes nothing built so far (an
        untrained race, and only training settings differ); False when the race must be rebuilt.
        Why: a student trying batch sizes and learning rates before pressing Start rebuilt the
        three models and evaluated them again (16 batches) for each value."""
        if self.step != 0 or self._optimizers is not None or \
                config.untrained_key() != self.config.untrained_key():
            return False
        self.config = config
        return True

    # ---------------------------------------------------------------- training
    @property
    def optimizers(self) -> dict[str, torch.optim.Optimizer]:
        """One Adam per model, built at the first training step (Adam starts with empty state, so
        the numbers are the same): a student who only looks at the untrained models never loads
        PyTorch's optimizer machinery, which imports torch._dynamo (~70 MiB a server keeps)."""
        if self._optimizers is None:
            self._optimizers = {name: torch.optim.Adam(model.parameters(), lr=self.config.lr)
                                for name, model in self.models.items()}
        return self._optimizers

    @property
    def done(self) -> bool:
        """Nothing left to train: `max_steps` reached, or a step failed (`error`)."""
        return self.error is not None or (self.max_steps is not None and self.step >= self.max_steps)

    def train_step(self) -> None:
        """One step of every model on the same batch; evaluate every `eval_every` steps."""
        c = self.config
        xb, yb = get_batch(self.train_data, c.block_size, c.batch_size, self.batch_generator)  # (B, T)
        for name, model in self.models.items():
            _, loss = model(xb, yb)  # loss: mean cross-entropy over B*T targets
            self.optimizers[name].zero_grad(set_to_none=True)
            loss.backward()
            self.optimizers[name].step()
        self.step += 1
        if self.step % c.eval_every == 0:
            self._record_eval()

    def advance(self, budget_s: float | None, slot: ContextManager | None = None, *,
                n_steps: int | None = None) -> Outcome:
        """Train for up to `budget_s` seconds and at most `n_steps` (default `steps_per_advance`)
        steps, inside `slot`; the live-training protocol's one entry point (see SteppedTraining)."""
        cap = n_steps if n_steps is not None else self.steps_per_advance
        with self.lock:
            return super().advance(budget_s, slot, n_steps=cap)

    @torch.no_grad()
    def evaluate(self) -> dict[str, dict[str, float]]:
        """Mean loss of every model on the fixed train and val batches: {model: {split: loss}}."""
        result = {}
        for name, model in self.models.items():
            model.eval()
            result[name] = {split: float(np.mean([model(x, y)[1].item() for x, y in batches]))
                            for split, batches in self.eval_sets.items()}
            model.train()
        return result

    def _record_eval(self) -> None:
        for name, losses in self.evaluate().items():
            for split, loss in losses.items():
                self.history.append({"step": self.step, "model": name, "split": split, "loss": loss})

    def latest(self) -> dict[str, dict[str, float]]:
        """The most recent evaluation: {model: {"train": loss, "val": loss}}."""
        last_step = self.history[-1]["step"]
        out: dict[str, dict[str, float]] = {}
        for row in self.history:
            if row["step"] == last_step:
                out.setdefault(row["model"], {})[row["split"]] = row["loss"]
        return out

    @property
    def last_eval_step(self) -> int:
        return self.history[-1]["step"]

    def history_frame(self) -> pd.DataFrame:
        df = pd.DataFrame(self.history)
        df["model"] = df["model"].map(MODEL_LABELS)
        return df

    # ---------------------------------------------------------------- what the models know
    def bigram_floor(self) -> float:
        """The lowest loss any bigram table can reach on the train curve's blocks: H(next char |
        current char) over the (current, next) pairs of those blocks.

        A bigram model sees only the current character, so the best it can do is predict the
        next-character frequencies observed after it; their entropy is its floor, whatever it trains.
        Counted on the fixed blocks the dashed train curve is measured on, not the whole training
        text: a sample of blocks has its own frequencies, and the curve went below a floor
        computed on the whole text (2.124 against 2.134 on the essay). Counted over the pairs that
        occur, not a |V|×|V| table (72 MB for a large vocabulary); kept: the blocks never change.
        """
        if self._bigram_floor is None:
            V = self.tokenizer.vocab_size
            current = torch.cat([x.flatten() for x, _ in self.eval_sets["train"]]).numpy().astype(np.int64)
            following = torch.cat([y.flatten() for _, y in self.eval_sets["train"]]).numpy().astype(np.int64)
            # each (current, next) pair as one number, counted
            pairs, counts = np.unique(current * V + following, return_counts=True)
            seen = np.bincount(current, minlength=V)  # how often each character is a current one
            probs = counts / seen[pairs // V]  # P(next | current) of each pair that occurs
            self._bigram_floor = float(-(counts * np.log(probs)).sum() / counts.sum())
        return self._bigram_floor

    @torch.no_grad()
    def bigram_probabilities(self) -> np.ndarray:
        """Softmax of each row of the bigram table: P(next | current), (V, V)."""
        table = self.models["bigram"].logits_table.weight  # (V, V)
        return torch.softmax(table, dim=-1).numpy()  # (V, V), rows sum to 1

    @torch.no_grad()
    def embedding_table(self) -> np.ndarray:
        """The attention model's token embedding, (V, C)."""
        return self.models["attention"].token_embedding.weight.detach().numpy().copy()  # (V, C)

    def frequent_ids(self, limit: int = TABLE_CHARS) -> np.ndarray:
        """Ids of the corpus' `limit` most frequent characters, in vocabulary order (every id
        when the vocabulary is no larger). Ties go to the lower id, so the choice never wobbles."""
        V = self.tokenizer.vocab_size
        if V <= limit:
            return np.arange(V)
        counts = np.bincount(torch.cat([self.train_data, self.val_data]).numpy(), minlength=V)
        most_frequent_first = np.argsort(-counts, kind="stable")
        return np.sort(most_frequent_first[:limit])

    @torch.no_grad()
    def bigram_table_shown(self, limit: int = TABLE_CHARS) -> "ShownTable":
        """The part of the bigram table to draw: P(next | current) for the `limit` most frequent
        characters, as rows and as columns. Each row's softmax is over every next character, so
        a cut table's rows sum to less than 1."""
        ids = self.frequent_ids(limit)
        rows = self.models["bigram"].logits_table.weight[torch.from_numpy(ids)]  # (n, V)
        probs = torch.softmax(rows, dim=-1)[:, torch.from_numpy(ids)].numpy()  # (n, n)
        return ShownTable(probs, self._labels(ids), self.tokenizer.vocab_size)

    def embedding_shown(self, limit: int = TABLE_CHARS) -> "ShownTable":
        """The rows of the token embedding to draw: those of the `limit` most frequent characters."""
        ids = self.frequent_ids(limit)
        return ShownTable(self.embedding_table()[ids], self._labels(ids), self.tokenizer.vocab_size)

    def _labels(self, ids: np.ndarray) -> list[str]:
        return vocab_labels([self.tokenizer.vocab[i] for i in ids])

    def n_params(self) -> dict[str, int]:
        return {name: model.num_params() for name, model in self.models.items()}

    def generate(self, name: str, n_chars: int, prompt: str = "", temperature: float = 1.0,
                 seed: int = 0, *, untrained: Callable[[int], str] | None = None) -> str:
        """`prompt` plus `n_chars` characters sampled from model `name` (memoised per step).

        Sampling draws one id per character from a generator seeded with `seed`, so a shorter
        sample is the start of a longer one: the race draws whole chunks of SAMPLE_CHUNK characters
        and cuts, and the "Characters to generate" slider moved by ten reads what was drawn.
        `untrained(n)`, if given, is asked for the text of n characters instead while the race
        has not trained: untrained models depend only on the corpus and the config, so a caller
        may keep one text per setting for everybody (the page shares them between sessions)."""
        start = prompt or self.text[0]
        key = (name, prompt, temperature, seed, self.step)
        drawn, text = self._samples.get(key, (0, ""))
        if drawn < n_chars:
            drawn = -(-n_chars // SAMPLE_CHUNK) * SAMPLE_CHUNK  # n_chars rounded up to whole chunks
            if untrained is not None and self.step == 0:
                text = untrained(drawn)
            else:
                idx = self.tokenizer.encode_tensor(start)[None, :]  # (1, len(start))
                generator = torch.Generator().manual_seed(seed)
                out = generate(self.models[name], idx, drawn, temperature=temperature,
                               generator=generator, block_size=self.config.block_size)  # (1, len + drawn)
                text = self.tokenizer.decode(out[0])
            self._samples[key] = (drawn, text)
        return text[:len(start) + n_chars]  # one character per id


@dataclass(frozen=True)
class ShownTable:
    """A model's table as the page draws it: whole, or cut to the most frequent characters."""

    values: np.ndarray  # (shown, ...) one row per shown character
    chars: list[str]  # the shown characters, made visible (vocab_labels), in vocabulary order
    vocab_size: int  # characters in the whole vocabulary

    @property
    def is_cut(self) -> bool:
        return len(self.chars) < self.vocab_size

    def note(self) -> str:
        """What a caption says of a cut table ("" when the whole table is drawn)."""
        if not self.is_cut:
            return ""
        return (f"Showing the {len(self.chars)} most frequent of {self.vocab_size:,} characters "
                "(a larger table is unreadable and too big to send to the browser).")


def check_prompt(prompt: str, tokenizer: CharTokenizer) -> str:
    """The prompt if every character is in the corpus' vocabulary; TextProblem otherwise."""
    unknown = sorted(set(prompt) - set(tokenizer.vocab))
    if unknown:
        shown = ", ".join(repr(ch) for ch in unknown[:6])
        raise TextProblem(f"The prompt uses characters the corpus never has: {shown}. "
                          "A character model can only start from characters it knows.")
    return prompt


MAX_ABS_LOGIT = 50.0  # exp(50) ≈ 5e21 is still a readable number; larger values are not a lesson


def parse_logits(text: str) -> list[float]:
    """Numbers separated by commas or spaces (brackets allowed); TextProblem with a clear message."""
    body = (text or "").strip().strip("[]()").strip()
    if not body:
        raise TextProblem("Type the logits as numbers separated by commas, e.g. 0.1, 0.5, 0.2, 0.1.")
    parts = [p for p in re.split(r"[,\s;]+", body) if p]
    values = []
    for part in parts:
        try:
            value = float(part)
        except ValueError:
            raise TextProblem(f"{part[:20]!r} is not a number.") from None
        if not math.isfinite(value):
            raise TextProblem(f"{part[:20]!r} is not a finite number.")
        if abs(value) > MAX_ABS_LOGIT:
            raise TextProblem(f"Keep logits between −{MAX_ABS_LOGIT:g} and {MAX_ABS_LOGIT:g} "
                              f"(got {value:g}) so exp(logit) stays a readable number.")
        values.append(value)
    if not 2 <= len(values) <= 20:
        raise TextProblem(f"Give 2 to 20 logits (one per class); got {len(values)}.")
    return values


@dataclass
class CrossEntropySteps:
    """Every number of the slide's computation, and PyTorch's answer beside it."""

    logits: list[float]  # z_c, one per class
    target: int  # the correct class
    exps: list[float]  # exp(z_c)
    denominator: float  # sum over c of exp(z_c)
    probs: list[float]  # softmax: exp(z_c) / denominator
    p_target: float  # probability of the target class
    by_hand: float  # -log p_target
    torch_value: float  # F.cross_entropy(logits, target), in float32
    difference: float  # |by_hand - torch_value|: only float32 rounding


SLIDE_CE = ([0.1, 0.5, 0.2, 0.1], 1)  # the slide's logits and target class
SLIDE_CE_PRINTED = "1.1254029644614048"  # what the slide prints for them (course document 001)


def as_float32(values: Sequence[float]) -> list[float]:
    """`values` as a float32 tensor stores them, back as Python floats (0.1 -> 0.10000000149...):
    what a loop over `tensor.tolist()` reads, as the slide's did."""
    return torch.tensor(list(values), dtype=torch.float32).tolist()


def cross_entropy_by_hand(logits: Sequence[float], target: int) -> CrossEntropySteps:
    """logits -> softmax -> negative log-likelihood of the target, in plain Python like the slide."""
    if not 0 <= target < len(logits):
        raise TextProblem(f"The target must be a class between 0 and {len(logits) - 1}, got {target}.")
    exps = [math.exp(z) for z in logits]  # the softmax numerators
    denominator = sum(exps)  # the same for every class
    probs = [e / denominator for e in exps]  # they add up to 1
    p_target = probs[target]
    by_hand = -math.log(p_target)  # the loss is small when the target gets a large probability
    torch_value = F.cross_entropy(torch.tensor([list(logits)]), torch.tensor([target])).item()
    return CrossEntropySteps(list(logits), target, exps, denominator, probs, p_target, by_hand,
                             torch_value, abs(by_hand - torch_value))


def cross_entropy_table(steps: CrossEntropySteps) -> pd.DataFrame:
    return pd.DataFrame({
        "class c": list(range(len(steps.logits))),
        "logit z_c": [f"{z:.4f}" for z in steps.logits],
        "exp(z_c)": [f"{e:.6g}" for e in steps.exps],
        "p_c = exp(z_c) / Σ": [f"{p:.6f}" for p in steps.probs],
        "target?": ["← target" if c == steps.target else "" for c in range(len(steps.logits))],
    })


def vocab_labels(vocab: Sequence[str]) -> list[str]:
    """Characters as axis labels: space, line break and tab made visible."""
    return [visible(ch) for ch in vocab]


def corpus_stats(text: str, block_size: int) -> dict[str, int]:
    """Characters, vocabulary size and the train/val split sizes of a corpus."""
    n_train = int(len(text) * (1 - VAL_FRAC))
    return {"characters": len(text), "vocabulary": CharTokenizer.from_text(text).vocab_size,
            "train": n_train, "val": len(text) - n_train, "block_size": block_size}
