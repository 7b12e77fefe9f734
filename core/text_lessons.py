"""The two lessons around the attention pages: tokens and data loaders, and the small language model.

Everything here is UI-free (no streamlit import) so the pages stay thin and the tests can check each
number:

* text input: `validate_text` (empty, whitespace, too long, binary-looking) and `decode_upload`
  (size, binary, UTF-8) — the one place a pasted or uploaded text is judged;
* tokens: GPT-2 BPE and character "chips" (id + piece), counts, round trips, `<|endoftext|>`;
* the sliding-window loader: `build_loader_view` (windows, batches, shuffle with a seed), the window
  table and a chart of the windows drawn over the token sequence;
* embeddings: token + position embedding tables and the shape of every step, as in the book;
* the names GPT's padded windows for one name;
* the small LM: `SmallLMRace` trains a bigram table and two one-head attention models (with and
  without position embeddings) side by side on the same batches, keeps their loss history and
  generates text with each;
* cross-entropy by hand, as on the slide (logits -> softmax -> -log p(target)).
"""

from __future__ import annotations

import dataclasses
import html
import math
import re
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import altair as alt
import numpy as np
import pandas as pd
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader

from core.viz import palette, unique_labels
from core.data import (
    IGNORE_INDEX,
    count_windows,
    encode_corpus,
    get_batch,
    name_windows,
    sliding_windows,
    train_val_split_tensor,
)
from core.models import BigramLM, SingleHeadLM, generate
from core.settings import spec
from core.tokenizers import END_OF_TEXT, GPT2_N_VOCAB, CharTokenizer, bpe_tokens, encode_bpe, gpt2_encoding

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
DEFAULT_TEXT_PATH = DATA_DIR / "default_text.txt"
SMALL_LM_CORPUS_PATH = DATA_DIR / "small_lm_corpus.txt"

MAX_TEXT_CHARS = 100_000  # longest text a page accepts (a few book chapters)
MAX_UPLOAD_BYTES = 400_000  # 100k characters of UTF-8 are at most 400k bytes
BOOK_SENTENCE = "Hello, do you like tea? <|endoftext|> In the sunlit terraces of someunknownPlace."
PANGRAM = "the quick brown fox jumps over the lazy dog. "  # the slides' idea: one short sentence...
PANGRAM_REPEATS = 60  # ...repeated, so a model with context can learn it almost by heart
MAX_WINDOW_IDS = 1_000_000  # windows x max_length kept in memory for one session (8 MB per tensor)
GPT2_CONTEXT = 1024  # rows of GPT-2's position embedding table (the book's max_len)


# =============================================================================================
# Text input: one function judges every pasted or uploaded text
# =============================================================================================


class TextProblem(ValueError):
    """A text that cannot be used; the message says why and what to do, fit to show a student."""


def builtin_text(name: str) -> str:
    """The texts the project ships: 'paragraph', 'book', 'pangram' or 'essay'."""
    if name == "paragraph":
        return DEFAULT_TEXT_PATH.read_text(encoding="utf-8").rstrip("\n")
    if name == "book":
        return BOOK_SENTENCE
    if name == "pangram":
        return PANGRAM * PANGRAM_REPEATS
    if name == "essay":
        return SMALL_LM_CORPUS_PATH.read_text(encoding="utf-8").rstrip("\n")
    raise ValueError(f"unknown built-in text {name!r}")


def _control_share(text: str) -> float:
    """Share of characters that are control codes other than tab, newline, carriage return, form feed."""
    sample = text[:20_000]
    if not sample:
        return 0.0
    bad = sum(1 for ch in sample if unicodedata.category(ch) == "Cc" and ch not in "\t\n\r\f")
    return bad / len(sample)


def validate_text(text: str, *, what: str = "Your text", min_chars: int = 2) -> str:
    """Return `text` (newlines normalised to \\n) or raise TextProblem with a clear message.

    Rejected: not a string, longer than MAX_TEXT_CHARS, empty, whitespace only, shorter than
    `min_chars` (one character gives nothing to predict), or full of control codes (binary data).
    """
    if not isinstance(text, str):
        raise TextProblem(f"{what} must be text.")
    if len(text) > MAX_TEXT_CHARS:
        raise TextProblem(
            f"{what} is too long ({len(text):,} characters); this page accepts at most "
            f"{MAX_TEXT_CHARS:,}. Paste a shorter excerpt (a few pages are plenty for these lessons).")
    if text == "":
        raise TextProblem(f"{what} is empty: paste or upload some text.")
    if not text.strip():
        raise TextProblem(f"{what} holds only whitespace (spaces, tabs or line breaks): "
                          "there are no words to tokenize.")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\x00" in text or _control_share(text) > 0.01:
        raise TextProblem(f"{what} looks like binary data (it is full of control codes), "
                          "not text. Paste or upload plain text.")
    if len(text) < min_chars:
        raise TextProblem(
            f"{what} has {len(text)} character{'s' if len(text) != 1 else ''}; at least "
            f"{min_chars} are needed (a model reads one character and predicts the next).")
    return text


def decode_upload(data: bytes, filename: str = "the file", *, min_chars: int = 2) -> str:
    """Decode an uploaded file as UTF-8 text, or raise TextProblem saying why it cannot be used."""
    if len(data) > MAX_UPLOAD_BYTES:
        raise TextProblem(
            f"{filename} is {len(data):,} bytes; uploads are limited to {MAX_UPLOAD_BYTES:,} bytes "
            f"(about {MAX_TEXT_CHARS:,} characters). Upload a shorter excerpt.")
    if len(data) == 0:
        raise TextProblem(f"{filename} is empty.")
    if b"\x00" in data[:8192]:
        raise TextProblem(f"{filename} is a binary file (it contains NUL bytes), not text. "
                          "Upload a plain-text file (.txt or .md).")
    try:
        text = data.decode("utf-8-sig")  # -sig: drop the byte-order mark some editors write
    except UnicodeDecodeError as exc:
        high = sum(1 for b in data[:8192] if b >= 0x80) / min(len(data), 8192)
        if high > 0.3:
            raise TextProblem(f"{filename} looks like a binary file, not text. "
                              "Upload a plain-text file (.txt or .md).") from None
        raise TextProblem(
            f"{filename} is not UTF-8 text (byte 0x{data[exc.start]:02x} at position {exc.start:,} "
            "cannot be read). Save it as UTF-8 in your editor and upload it again.") from None
    return validate_text(text, what=filename, min_chars=min_chars)


# =============================================================================================
# Tokens: GPT-2 BPE and characters, as chips
# =============================================================================================

# Light backgrounds that stay readable with black text, alternating so neighbouring chips differ.
CHIP_COLOURS = ["#DCEBFA", "#FDE4C8", "#D9F0D3", "#F9D5D3", "#E6DCF2", "#D4EFEE", "#F7EBC0"]
SPECIAL_CHIP_COLOUR = "#FFD54F"


@dataclass(frozen=True)
class TokenChip:
    """One token as shown on screen: its position, id and visible text."""

    index: int  # position in the token sequence
    token_id: int  # id in the tokenizer's vocabulary
    piece: str  # the exact text of the token
    special: bool = False  # "<|endoftext|>" as one special token

    @property
    def shown(self) -> str:
        return visible(self.piece)


def visible(piece: str) -> str:
    """Make spaces, line breaks and tabs visible: '␣' '↵' '⇥'."""
    return piece.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥").replace("\r", "␍")


def gpt2_piece(token_id: int) -> str:
    """The text of one GPT-2 token (bytes of a split character are shown as �)."""
    return gpt2_encoding().decode_single_token_bytes(int(token_id)).decode("utf-8", errors="replace")


def bpe_chips(text: str, allow_special: bool = True) -> list[TokenChip]:
    """The GPT-2 tokens of `text` (tiktoken, offline) as chips."""
    return [TokenChip(i, token_id, piece, token_id == GPT2_N_VOCAB - 1 and allow_special)
            for i, (token_id, piece) in enumerate(bpe_tokens(text, allow_special))]


def char_chips(text: str, tokenizer: CharTokenizer) -> list[TokenChip]:
    """One chip per character of `text`, with the character tokenizer's ids."""
    return [TokenChip(i, token_id, ch) for i, (ch, token_id) in enumerate(zip(text, tokenizer.encode(text)))]


def chips_html(chips: Sequence[TokenChip], *, limit: int = 300, lecture: bool = False,
               max_height: int = 380) -> str:
    """HTML of coloured chips, the id under each token; at most `limit` chips."""
    size = "1.15rem" if lecture else "0.95rem"
    id_size = "0.85rem" if lecture else "0.7rem"
    parts = []
    for chip in chips[:limit]:
        colour = SPECIAL_CHIP_COLOUR if chip.special else CHIP_COLOURS[chip.index % len(CHIP_COLOURS)]
        parts.append(
            f'<span class="al-chip" title="position {chip.index}, id {chip.token_id}" '
            f'style="display:inline-flex;flex-direction:column;align-items:center;'
            f'background:{colour};border-radius:5px;padding:1px 5px;margin:2px;'
            f'font-family:ui-monospace,monospace;font-size:{size};line-height:1.2;color:#111">'
            f'<span>{html.escape(chip.shown) or "∅"}</span>'
            f'<span style="font-size:{id_size};color:#444">{chip.token_id}</span></span>')
    more = ""
    if len(chips) > limit:
        more = (f'<div style="color:#555;font-size:{id_size}">… showing the first {limit:,} of '
                f'{len(chips):,} tokens</div>')
    # a scroll box keeps a long text from pushing the rest of the lesson far down the page
    return (f'<div style="line-height:2.1;max-height:{max_height}px;overflow-y:auto">'
            f'{"".join(parts)}</div>{more}')


@dataclass(frozen=True)
class TokenSummary:
    """Counts and round trips of both tokenizers on one text."""

    n_chars: int  # characters in the text
    n_bpe: int  # GPT-2 tokens
    char_vocab_size: int  # distinct characters (+ "." which the project's tokenizer always has)
    bpe_round_trip: bool  # gpt2.decode(gpt2.encode(text)) == text
    char_round_trip: bool  # char.decode(char.encode(text)) == text
    n_end_of_text: int  # how many "<|endoftext|>" markers the text holds
    n_bpe_plain: int  # GPT-2 tokens when the marker is read as ordinary text

    @property
    def chars_per_token(self) -> float:
        return self.n_chars / max(self.n_bpe, 1)


def token_summary(text: str, allow_special: bool = True) -> TokenSummary:
    """Count tokens both ways and check that decoding gives the text back."""
    encoding = gpt2_encoding()
    ids = encode_bpe(text, allow_special)
    plain_ids = encode_bpe(text, allow_special=False) if allow_special else ids
    char_tok = CharTokenizer.from_text(text)
    return TokenSummary(
        n_chars=len(text), n_bpe=len(ids), char_vocab_size=char_tok.vocab_size,
        bpe_round_trip=encoding.decode(ids) == text,
        char_round_trip=char_tok.decode(char_tok.encode(text)) == text,
        n_end_of_text=text.count(END_OF_TEXT), n_bpe_plain=len(plain_ids))


def end_of_text_pieces() -> tuple[list[int], list[int]]:
    """Ids of "<|endoftext|>" as the special token ([50256]) and as plain text (several ids)."""
    encoding = gpt2_encoding()
    return (encoding.encode(END_OF_TEXT, allowed_special={END_OF_TEXT}),
            encoding.encode(END_OF_TEXT, disallowed_special=()))


# =============================================================================================
# Page settings
# =============================================================================================

TOKEN_TEXTS = {"paragraph": "Built-in paragraph", "book": "The book's sentence", "own": "Your own text"}


@dataclass
class TokensDataSettings:
    """Controls of the Tokens & data page (the user's own text is never part of a link)."""

    text_choice: str = spec("paragraph", choices=tuple(TOKEN_TEXTS))  # which text the page reads
    allow_special: bool = spec(True)  # "<|endoftext|>" is one special token (id 50256)
    max_length: int = spec(4, min=1, max=256)  # tokens per input window (the lesson: 4)
    stride: int = spec(5, min=1, max=10_000)  # start of one window to the next (the lesson: 5)
    batch_size: int = spec(8, min=1, max=64)  # windows per batch (the lesson: 8)
    shuffle: bool = spec(True)  # shuffle the windows each epoch, as create_dataloader does
    seed: int = spec(123, min=0, max=2**31 - 1)  # seeds the shuffle and the embedding tables
    batch_index: int = spec(0, min=0, max=100_000)  # which batch the embedding section shows
    output_dim: int = spec(256, min=1, max=512)  # embedding width (the lesson: 256)
    show_dims: int = spec(8, min=2, max=16)  # embedding columns drawn in the heatmaps
    name: str = spec("emma", max_len=40)  # the name turned into padded windows
    name_context: int = spec(12, min=1, max=32)  # the names GPT's context size (lecture 7: 12)


CORPORA = {"pangram": "A short sentence, repeated (the slides' idea)",
           "essay": "A few paragraphs about attention", "own": "Your own text"}


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


# =============================================================================================
# The sliding-window loader
# =============================================================================================


def loader_problems(n_tokens: int, max_length: int, stride: int, batch_size: int) -> list[str]:
    """Everything wrong with these loader settings for a text of `n_tokens` tokens (empty: fine)."""
    problems = []
    if max_length < 1:
        problems.append(f"max_length must be at least 1 token, got {max_length}.")
    elif max_length > 256:
        problems.append(f"max_length can be at most 256 tokens on this page, got {max_length}.")
    if stride <= 0:
        problems.append(f"stride must be at least 1 token (windows have to move forward), got {stride}.")
    if batch_size < 1:
        problems.append(f"batch_size must be at least 1, got {batch_size}.")
    elif batch_size > 64:
        problems.append(f"batch_size can be at most 64 on this page, got {batch_size}.")
    if problems:
        return problems
    if n_tokens <= max_length:
        problems.append(
            f"max_length {max_length} is too long for this text: it has {n_tokens} tokens, and one "
            f"window needs max_length + 1 = {max_length + 1} (the inputs plus one more for the last "
            "target). Use a smaller max_length or a longer text.")
        return problems
    n_windows = count_windows(n_tokens, max_length, stride)
    if n_windows * max_length > MAX_WINDOW_IDS:
        problems.append(
            f"These settings make {n_windows:,} windows of {max_length} tokens "
            f"({n_windows * max_length:,} ids); this page keeps at most {MAX_WINDOW_IDS:,}. "
            "Use a larger stride, a smaller max_length or a shorter text.")
        return problems
    if batch_size > n_windows:
        problems.append(
            f"batch_size {batch_size} is larger than the number of windows ({n_windows}); with "
            "drop_last=True the loader would give no batch at all. Use a batch size of at most "
            f"{n_windows}, a smaller stride, or a longer text.")
    return problems


def window_count_formula(n_tokens: int, max_length: int, stride: int) -> str:
    """The count of windows written out: ⌊(n − max_length − 1) / stride⌋ + 1 = N."""
    n = count_windows(n_tokens, max_length, stride)
    return (f"⌊({n_tokens} − {max_length} − 1) / {stride}⌋ + 1 = "
            f"⌊{n_tokens - max_length - 1} / {stride}⌋ + 1 = {n}")


@dataclass
class LoaderView:
    """Everything the page shows about one text cut into windows and batches."""

    settings: TokensDataSettings  # a copy of the settings that made this view
    token_ids: list[int]  # the whole text as GPT-2 ids
    pieces: list[str]  # the text of each token
    inputs: torch.Tensor  # (N, max_length) every window's input ids
    targets: torch.Tensor  # (N, max_length) the same windows shifted by one token
    batch_indices: list[list[int]]  # windows of each batch, in the order the loader gives them

    @property
    def n_tokens(self) -> int:
        return len(self.token_ids)

    @property
    def n_windows(self) -> int:
        return len(self.inputs)

    @property
    def n_batches(self) -> int:
        return len(self.batch_indices)

    @property
    def dropped(self) -> int:
        """Windows left out because they do not fill a last batch (drop_last=True)."""
        return self.n_windows - self.n_batches * self.settings.batch_size

    def batch(self, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Batch `k` exactly as the DataLoader yields it: x and y, both (B, max_length)."""
        rows = torch.tensor(self.batch_indices[k], dtype=torch.long)  # (B,)
        return self.inputs[rows], self.targets[rows]  # (B, T), (B, T)

    def input_uses(self) -> np.ndarray:
        """For every token: in how many windows it is an input (0: never read as an input)."""
        T, stride = self.settings.max_length, self.settings.stride
        uses = np.zeros(self.n_tokens + 1, dtype=np.int64)
        starts = np.arange(self.n_windows) * stride  # (N,)
        np.add.at(uses, starts, 1)  # +1 where a window starts...
        np.add.at(uses, starts + T, -1)  # ...-1 where it stops: the running sum counts windows
        return np.cumsum(uses)[: self.n_tokens]  # (n_tokens,)


def build_loader_view(text: str, settings: TokensDataSettings) -> LoaderView:
    """Tokenize `text`, cut it into windows and batches; ValueError with a message if it cannot.

    The windows are those of the book's GPTDatasetV1 (`sliding_windows`) and the batches are drawn
    in the order of `create_dataloader_v1` with the same seed (tests check both against the real
    loader), from one tokenization of the text.
    """
    tokens = bpe_tokens(text, settings.allow_special)
    token_ids = [token_id for token_id, _ in tokens]
    problems = loader_problems(len(token_ids), settings.max_length, settings.stride, settings.batch_size)
    if problems:
        raise ValueError(" ".join(problems))
    inputs, targets = sliding_windows(token_ids, settings.max_length, settings.stride)  # (N, T) each
    # Which windows make each batch: the same DataLoader logic over the window numbers, with a
    # generator seeded alike, draws the same order as the real loader.
    index_loader = DataLoader(range(len(inputs)), batch_size=settings.batch_size,
                              shuffle=settings.shuffle, drop_last=True,
                              generator=torch.Generator().manual_seed(settings.seed))
    batch_indices = [rows.tolist() for rows in index_loader]
    return LoaderView(settings=dataclasses.replace(settings), token_ids=token_ids,
                      pieces=[piece for _, piece in tokens], inputs=inputs, targets=targets,
                      batch_indices=batch_indices)


def window_table(view: LoaderView, limit: int = 60) -> pd.DataFrame:
    """One row per window: where it starts, its input ids and its targets (shifted by one)."""
    rows = []
    for w in range(min(view.n_windows, limit)):
        start = w * view.settings.stride
        inputs = view.inputs[w].tolist()
        targets = view.targets[w].tolist()
        rows.append({
            "window": w, "start": start,
            "input ids": str(inputs), "target ids": str(targets),
            "input text": " | ".join(visible(p) for p in view.pieces[start:start + len(inputs)]),
            "target text": " | ".join(visible(p) for p in view.pieces[start + 1:start + 1 + len(targets)]),
        })
    return pd.DataFrame(rows)


WINDOW_KINDS = ["input", "target", "never an input", "input of 1 window", "input of 2+ windows"]


def window_frame(view: LoaderView, max_tokens: int = 24, max_windows: int = 8) -> pd.DataFrame:
    """Cells of the window drawing: a coverage row, then an input and a target row per window."""
    shown = min(view.n_tokens, max_tokens)
    labels = unique_labels([f"{i}:{visible(p)}" for i, p in enumerate(view.pieces[:shown])])
    uses = view.input_uses()
    rows = []
    for pos in range(shown):
        kind = WINDOW_KINDS[2 + min(int(uses[pos]), 2)]
        rows.append({"row": "used as input ×", "pos": labels[pos], "kind": kind,
                     "text": str(int(uses[pos])), "order": 0})
    T, stride = view.settings.max_length, view.settings.stride
    for w in range(min(view.n_windows, max_windows)):
        start = w * stride
        if start >= shown:
            break
        for role, offset, ids in (("input", 0, view.inputs[w]), ("target", 1, view.targets[w])):
            for j in range(T):
                pos = start + offset + j
                if pos >= shown:
                    break
                rows.append({"row": f"window {w} {role}", "pos": labels[pos], "kind": role,
                             "text": str(int(ids[j])), "order": 1 + 2 * w + offset})
    return pd.DataFrame(rows)


def window_chart(view: LoaderView, *, max_tokens: int = 24, max_windows: int = 8,
                 lecture: bool = False) -> alt.LayerChart:
    """The windows drawn over the token sequence: overlap and never-read tokens are visible."""
    df = window_frame(view, max_tokens, max_windows)
    colours = palette(lecture)
    kind_scale = alt.Scale(domain=WINDOW_KINDS,
                           range=[colours[0], colours[1], "#E8E8E8", "#C7E9C0", "#74C476"])
    pos_order = list(dict.fromkeys(df["pos"]))
    row_order = list(dict.fromkeys(df.sort_values("order", kind="stable")["row"]))
    # the y labels take ~110 px more: the whole chart stays within the page's ~800 px
    cell = max(22, min(40 if lecture else 36, 640 // max(len(pos_order), 1)))
    base = alt.Chart(df).encode(
        x=alt.X("pos:N", sort=pos_order, title="token position : token",
                axis=alt.Axis(labelAngle=-55, orient="top", labelOverlap=False)),
        y=alt.Y("row:N", sort=row_order, title=None),
        tooltip=["row:N", "pos:N", alt.Tooltip("text:N", title="id / uses"), "kind:N"])
    rect = base.mark_rect(stroke="white", strokeWidth=1.5).encode(
        color=alt.Color("kind:N", scale=kind_scale, title=None,
                        legend=alt.Legend(orient="bottom", columns=3)))
    text = base.mark_text(fontSize=12 if lecture else 10).encode(
        text="text:N",
        color=alt.condition("datum.kind == 'input' || datum.kind == 'target'",
                            alt.value("white"), alt.value("black")))
    return alt.layer(rect, text).properties(width=cell * len(pos_order),
                                            height=(cell - 10) * len(row_order))


# =============================================================================================
# Embeddings: token + position, with the shape of every step
# =============================================================================================


def seeded_embedding(num_embeddings: int, embedding_dim: int, seed: int) -> nn.Embedding:
    """`nn.Embedding(num, dim)` with N(0, 1) weights (PyTorch's own init) drawn from `seed`.

    Built on the meta device and filled from a private generator, so it never touches the global
    RNG that other sessions share.
    """
    with torch.device("meta"):
        layer = nn.Embedding(num_embeddings, embedding_dim)
    layer = layer.to_empty(device="cpu")
    with torch.no_grad():
        layer.weight.normal_(generator=torch.Generator().manual_seed(seed))
    return layer


@dataclass
class EmbeddingSteps:
    """The book's embedding steps for one batch, each tensor with its shape."""

    x: torch.Tensor  # (B, T) token ids of the batch
    token_embeddings: torch.Tensor  # (B, T, d) one row of the token table per id
    pos_embeddings: torch.Tensor  # (T, d) one row of the position table per position
    input_embeddings: torch.Tensor  # (B, T, d) their sum, broadcast over the batch
    token_table_shape: tuple[int, int]  # (50257, d)
    pos_table_shape: tuple[int, int]  # (1024, d)

    def shape_rows(self) -> pd.DataFrame:
        B, T = self.x.shape
        d = self.token_table_shape[1]
        return pd.DataFrame([
            {"step": "token ids of one batch", "code": "x, y = next(iter(dataloader))",
             "shape": str(tuple(self.x.shape))},
            {"step": "token embedding table", "code": f"nn.Embedding({self.token_table_shape[0]}, {d})",
             "shape": str(self.token_table_shape)},
            {"step": "token embeddings", "code": "token_embedding_layer(x)",
             "shape": str(tuple(self.token_embeddings.shape))},
            {"step": "position embedding table", "code": f"nn.Embedding({self.pos_table_shape[0]}, {d})",
             "shape": str(self.pos_table_shape)},
            {"step": "position embeddings", "code": f"pos_embedding_layer(torch.arange({T}))",
             "shape": str(tuple(self.pos_embeddings.shape))},
            {"step": f"input embeddings ({T}, {d}) added to each of the {B} rows",
             "code": "token_embeddings + pos_embeddings",
             "shape": str(tuple(self.input_embeddings.shape))},
        ])


@torch.no_grad()
def embed_batch(x: torch.Tensor, token_embedding_layer: nn.Embedding,
                pos_embedding_layer: nn.Embedding) -> EmbeddingSteps:
    """Token embeddings + position embeddings of a batch of ids, as in the book's chapter 2."""
    max_length = x.shape[1]
    token_embeddings = token_embedding_layer(x)  # (B, T, d)
    pos_embeddings = pos_embedding_layer(torch.arange(max_length))  # (T, d)
    input_embeddings = token_embeddings + pos_embeddings  # (B, T, d): the same positions for every row
    return EmbeddingSteps(
        x=x, token_embeddings=token_embeddings, pos_embeddings=pos_embeddings,
        input_embeddings=input_embeddings,
        token_table_shape=tuple(token_embedding_layer.weight.shape),
        pos_table_shape=tuple(pos_embedding_layer.weight.shape))


# =============================================================================================
# The names GPT's data: one name, padded windows
# =============================================================================================

NAMES_TOKENIZER = CharTokenizer(["."] + [chr(c) for c in range(ord("a"), ord("z") + 1)])


def validate_name(name: str) -> str:
    """A name for the demo: 1 to 40 letters a–z (upper case is lowered), or TextProblem."""
    cleaned = (name or "").strip().lower()
    if not cleaned:
        raise TextProblem("Type a name (letters a–z), e.g. emma.")
    if len(cleaned) > 40:
        raise TextProblem(f"That name has {len(cleaned)} letters; use at most 40.")
    bad = sorted({ch for ch in cleaned if ch not in "abcdefghijklmnopqrstuvwxyz"})
    if bad:
        shown = ", ".join(repr(ch) for ch in bad[:5])
        raise TextProblem(f"The names data uses only the letters a–z; {shown} "
                          f"{'is' if len(bad) == 1 else 'are'} not one of them.")
    return cleaned


def name_window_frames(name: str, context_size: int) -> list[pd.DataFrame]:
    """The windows of one name as tables: rows input / input id / target / target id, one column per t."""
    inputs, targets = name_windows([name], NAMES_TOKENIZER, context_size)  # (n, T), (n, T)
    frames = []
    for x_row, y_row in zip(inputs.tolist(), targets.tolist()):
        columns = {}
        for t, (x_id, y_id) in enumerate(zip(x_row, y_row)):
            columns[f"t={t}"] = [
                NAMES_TOKENIZER.itos[x_id], str(x_id),
                "pad" if y_id == IGNORE_INDEX else NAMES_TOKENIZER.itos[y_id], str(y_id)]
        frames.append(pd.DataFrame(columns, index=["input", "input id", "target", "target id"]))
    return frames


def style_padding(table: pd.DataFrame):
    """The table with its padded positions (target id -1) greyed out, for st.dataframe."""
    padded = [col for col in table.columns if table.loc["target id", col] == str(IGNORE_INDEX)]
    return table.style.set_properties(subset=padded, **{"background-color": "#ECECEC", "color": "#777"})


# =============================================================================================
# The small language model: bigram vs one self-attention head, side by side
# =============================================================================================

MODEL_LABELS = {
    "bigram": "Bigram table (|V|×|V|)",
    "attention_nopos": "One head, no position (the slides)",
    "attention": "One head + position",
}
VAL_FRAC = 0.1  # the slides' 90/10 split by position


def check_corpus(text: str, block_size: int) -> None:
    """Raise TextProblem if a 90/10 split of `text` cannot give a block of `block_size` + 1."""
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


class SmallLMRace:
    """Three models trained side by side on the same batches of one character corpus.

    * "bigram": a |V| x |V| table (the next character from the current one only);
    * "attention_nopos": embedding |V| x C, one causal head, linear to |V| (the slides' model);
    * "attention": the same plus a position embedding (the slides forgot it).

    One `torch.Generator` draws every training batch, and each batch is used by all three models,
    so their curves differ only by what the models can learn. Evaluation uses fixed batches drawn
    once from another generator (the same for all models), so the curves are smooth and comparable.
    """

    def __init__(self, text: str, config: RaceConfig = RaceConfig()):
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
        self.optimizers = {name: torch.optim.Adam(model.parameters(), lr=c.lr)
                           for name, model in self.models.items()}
        self.batch_generator = torch.Generator().manual_seed(c.seed)
        eval_generator = torch.Generator().manual_seed(c.seed + 1)
        self.eval_sets = {
            split: [get_batch(data_, c.block_size, c.eval_batch_size, eval_generator)
                    for _ in range(c.eval_batches)]
            for split, data_ in (("train", self.train_data), ("val", self.val_data))}
        self.step = 0
        self.history: list[dict] = []  # {"step", "model", "split", "loss"}
        self._samples: dict[tuple, str] = {}
        self._record_eval()

    # ---------------------------------------------------------------- training
    def advance(self, n_steps: int, time_budget_s: float | None = None) -> int:
        """Train every model `n_steps` more steps on the same batches; returns the step reached.

        With `time_budget_s`, stop early once that much time has passed (a live page must answer
        quickly even on a busy server); the batches stay the same, only the stopping point moves.
        """
        c = self.config
        deadline = None if time_budget_s is None else time.perf_counter() + time_budget_s
        for _ in range(max(0, int(n_steps))):
            xb, yb = get_batch(self.train_data, c.block_size, c.batch_size, self.batch_generator)  # (B, T)
            for name, model in self.models.items():
                _, loss = model(xb, yb)  # loss: mean cross-entropy over B*T targets
                self.optimizers[name].zero_grad(set_to_none=True)
                loss.backward()
                self.optimizers[name].step()
            self.step += 1
            if self.step % c.eval_every == 0:
                self._record_eval()
            if deadline is not None and time.perf_counter() > deadline:
                break  # at least one step per call, so a busy server still makes progress
        return self.step

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
        """The lowest training loss any bigram table can reach: H(next char | current char).

        A bigram model sees only the current character, so the best it can do is predict the
        next-character frequencies observed after it; their entropy is its floor, whatever it trains.
        """
        V = self.tokenizer.vocab_size
        ids = self.train_data.numpy()
        counts = np.zeros((V, V))
        np.add.at(counts, (ids[:-1], ids[1:]), 1)
        row_totals = counts.sum(axis=1, keepdims=True)
        probs = np.divide(counts, row_totals, out=np.zeros_like(counts), where=row_totals > 0)
        nonzero = counts > 0
        return float(-(counts[nonzero] * np.log(probs[nonzero])).sum() / counts.sum())

    @torch.no_grad()
    def bigram_probabilities(self) -> np.ndarray:
        """Softmax of each row of the bigram table: P(next | current), (V, V)."""
        table = self.models["bigram"].logits_table.weight  # (V, V)
        return torch.softmax(table, dim=-1).numpy()  # (V, V), rows sum to 1

    @torch.no_grad()
    def embedding_table(self) -> np.ndarray:
        """The attention model's token embedding, (V, C)."""
        return self.models["attention"].token_embedding.weight.detach().numpy().copy()  # (V, C)

    def n_params(self) -> dict[str, int]:
        return {name: model.num_params() for name, model in self.models.items()}

    def generate(self, name: str, n_chars: int, prompt: str = "", temperature: float = 1.0,
                 seed: int = 0) -> str:
        """`prompt` plus `n_chars` characters sampled from model `name` (memoised per step)."""
        key = (name, n_chars, prompt, temperature, seed, self.step)
        if key not in self._samples:
            start = prompt or self.text[0]
            idx = self.tokenizer.encode_tensor(start)[None, :]  # (1, len(start))
            generator = torch.Generator().manual_seed(seed)
            out = generate(self.models[name], idx, n_chars, temperature=temperature,
                           generator=generator, block_size=self.config.block_size)  # (1, len + n)
            self._samples[key] = self.tokenizer.decode(out[0])
        return self._samples[key]


def check_prompt(prompt: str, tokenizer: CharTokenizer) -> str:
    """The prompt if every character is in the corpus' vocabulary; TextProblem otherwise."""
    unknown = sorted(set(prompt) - set(tokenizer.vocab))
    if unknown:
        shown = ", ".join(repr(ch) for ch in unknown[:6])
        raise TextProblem(f"The prompt uses characters the corpus never has: {shown}. "
                          "A character model can only start from characters it knows.")
    return prompt


# =============================================================================================
# Cross-entropy by hand (the slide: logits [0.1, 0.5, 0.2, 0.1], target 1 -> 1.1254)
# =============================================================================================

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


# =============================================================================================
# Chart builders specific to these lessons
# =============================================================================================


def race_loss_chart(history: pd.DataFrame, *, floor: float | None = None, lecture: bool = False,
                    width: int = 640, height: int = 340) -> alt.LayerChart:
    """Train (dashed) and val (solid) loss of every model against the step; the bigram floor dotted."""
    colours = palette(lecture)
    models = list(MODEL_LABELS.values())
    lines = alt.Chart(history).mark_line(strokeWidth=3 if lecture else 2).encode(
        x=alt.X("step:Q", title="training step"),
        y=alt.Y("loss:Q", title="loss (nats / character)", scale=alt.Scale(zero=True)),
        color=alt.Color("model:N", scale=alt.Scale(domain=models, range=colours[:3]), title=None,
                        legend=alt.Legend(orient="top", columns=1, labelLimit=320)),
        strokeDash=alt.StrokeDash("split:N", scale=alt.Scale(domain=["val", "train"],
                                                             range=[[1, 0], [6, 4]]),
                                  title=None, legend=alt.Legend(orient="top")),
        tooltip=["model:N", "split:N", "step:Q", alt.Tooltip("loss:Q", format=".4f")])
    layers = [lines]
    if floor is not None and math.isfinite(floor):
        rule_df = pd.DataFrame({"loss": [floor], "label": [f"best possible bigram (train): {floor:.3f}"]})
        rule = alt.Chart(rule_df).mark_rule(strokeDash=[2, 3], color="#555").encode(y="loss:Q")
        label = alt.Chart(rule_df).mark_text(align="right", dy=-7, x=width - 4, color="#333",
                                             fontSize=14 if lecture else 11).encode(y="loss:Q", text="label:N")
        layers += [rule, label]
    return alt.layer(*layers).properties(width=width, height=height)


def matrix_heatmap(matrix, row_labels: Sequence[str], col_labels: Sequence[str], *,
                   title: str = "", x_title: str = "", y_title: str = "", scheme: str = "blues",
                   max_side: int = 300, domain: tuple[float, float] | None = None,
                   lecture: bool = False) -> alt.Chart:
    """A compact heatmap for tables too big to print a value in each cell (tooltips hold them).

    Cells may be taller than wide, so the row labels (characters) stay readable even when there
    are many columns; the colour legend sits below, so the chart stays narrow.
    """
    values = np.asarray(matrix, dtype=np.float64)
    rows, cols = unique_labels(row_labels), unique_labels(col_labels)
    r_idx, c_idx = np.meshgrid(np.arange(len(rows)), np.arange(len(cols)), indexing="ij")
    df = pd.DataFrame({"row": np.asarray(rows, dtype=object)[r_idx.ravel()],
                       "col": np.asarray(cols, dtype=object)[c_idx.ravel()],
                       "value": values.ravel()})
    cell_w = max(5, min(22, max_side // max(len(cols), 1)))
    cell_h = max(5, min(22, max_side // max(len(rows), 1)))
    font = 13 if lecture else 10
    long_cols = max((len(c) for c in cols), default=0) > 2
    scale = alt.Scale(scheme=scheme, domain=list(domain)) if domain else alt.Scale(scheme=scheme)
    return alt.Chart(df).mark_rect().encode(
        x=alt.X("col:N", sort=cols, title=x_title,
                axis=alt.Axis(labels=cell_w >= 9, labelOverlap=long_cols and cell_w < 11,
                              labelAngle=-90 if long_cols else 0, labelFontSize=min(cell_w, font))),
        y=alt.Y("row:N", sort=rows, title=y_title,
                axis=alt.Axis(labels=cell_h >= 9, labelOverlap=False, labelFontSize=min(cell_h, font))),
        color=alt.Color("value:Q", scale=scale, title=None,
                        legend=alt.Legend(orient="bottom", direction="horizontal", gradientLength=160)),
        tooltip=[alt.Tooltip("row:N", title=y_title or "row"), alt.Tooltip("col:N", title=x_title or "col"),
                 alt.Tooltip("value:Q", format=".3f")],
    ).properties(title=title, width=cell_w * len(cols), height=cell_h * len(rows))


def vocab_labels(vocab: Sequence[str]) -> list[str]:
    """Characters as axis labels: space, line break and tab made visible."""
    return [visible(ch) for ch in vocab]


def corpus_stats(text: str, block_size: int) -> dict[str, int]:
    """Characters, vocabulary size and the train/val split sizes of a corpus."""
    n_train = int(len(text) * (1 - VAL_FRAC))
    return {"characters": len(text), "vocabulary": CharTokenizer.from_text(text).vocab_size,
            "train": n_train, "val": len(text) - n_train, "block_size": block_size}

