"""Lesson 5 (page 5): text -> tokens -> sliding windows -> batches -> embeddings.

* tokens: GPT-2 BPE and characters as (position, id, piece) chips, counts and round trips,
  `<|endoftext|>` as one special token or as plain text;
* the sliding-window loader: `build_loader_view` (windows, batches, shuffle with a seed, exactly
  as the book's `create_dataloader_v1`), the window table and the cells of the window drawing;
* embeddings: token + position embedding tables and the shape of every step, as in the book;
* the names GPT's padded windows for one name.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
import torch.nn as nn
from torch.utils.data import DataLoader

from core.data import IGNORE_INDEX, count_windows, create_dataloader_v1, name_windows_loop, sliding_windows
from core.lessons.text import TextProblem, visible
from core.models import embedding_skeleton
from core.settings import spec
from core.tokenizers import END_OF_TEXT, GPT2_N_VOCAB, CharTokenizer, bpe_tokens, encode_bpe, gpt2_encoding
from core.viz import unique_labels

MAX_WINDOW_IDS = 1_000_000  # windows x max_length kept in memory for one session (8 MB per tensor)

GPT2_CONTEXT = 1024  # rows of GPT-2's position embedding table (the book's max_len)


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
    n_partial: int = 0  # GPT-2 tokens holding part of a character's UTF-8 bytes (shown as "�")

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
        n_end_of_text=text.count(END_OF_TEXT), n_bpe_plain=len(plain_ids),
        n_partial=sum(not _whole_characters(encoding.decode_single_token_bytes(i)) for i in ids))


def _whole_characters(piece: bytes) -> bool:
    """Whether a token's bytes are whole UTF-8 characters (a byte-level BPE token may hold part
    of one: "é" is two bytes, an emoji four, and a token can end between them)."""
    try:
        piece.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def partial_note(n_partial: int) -> str:
    """Why `n_partial` GPT-2 tokens show as "�"; "" when none does."""
    if not n_partial:
        return ""
    return (f"{n_partial} GPT-2 {'token shows' if n_partial == 1 else 'tokens show'} “�”: GPT-2's BPE "
            "works on the text's UTF-8 bytes, not its characters, and a character of several bytes "
            "(é is 2, 你 is 3, an emoji 4) can be split between tokens. A piece that is not a whole "
            "character cannot be written on its own; together the pieces decode to the text again "
            "(the round trip below).")


def end_of_text_pieces() -> tuple[list[int], list[int]]:
    """Ids of "<|endoftext|>" as the special token ([50256]) and as plain text (several ids)."""
    encoding = gpt2_encoding()
    return (encoding.encode(END_OF_TEXT, allowed_special={END_OF_TEXT}),
            encoding.encode(END_OF_TEXT, disallowed_special=()))


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
    seed: int = spec(123, min=0, max=2**31 - 1)  # seeds the shuffle (the tables keep EMBEDDING_SEED)
    batch_index: int = spec(0, min=0, max=100_000)  # which batch the embedding section shows
    output_dim: int = spec(256, min=1, max=512)  # embedding width (the lesson: 256)
    show_dims: int = spec(8, min=2, max=16)  # embedding columns drawn in the heatmaps
    name: str = spec("emma", max_len=40)  # the name turned into padded windows
    name_context: int = spec(12, min=1, max=32)  # the names GPT's context size (lecture 7: 12)


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
        has = f"{n_tokens} token" if n_tokens == 1 else f"{n_tokens} tokens"
        problems.append(
            f"max_length {max_length} is too long for this text: it has {has}, and one "
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


def batch_size_limit(n_tokens: int, max_length: int, stride: int) -> int | None:
    """The largest batch_size these windows can fill (the number of windows, at most 64), or None
    when the window settings themselves are wrong (loader_problems says why)."""
    if loader_problems(n_tokens, max_length, stride, 1):
        return None
    return min(64, count_windows(n_tokens, max_length, stride))


def fitted_batch_size(current: int, wanted: int | None, limit: int | None) -> tuple[int, int | None]:
    """The batch_size to use when the windows allow at most `limit`, and the one to come back to.

    `wanted` is the size the user chose before it was lowered (None: `current` is their choice).
    A batch larger than the windows is lowered to `limit`; when the text grows again the size
    goes back up, as far as the user's own choice, so a short draft does not leave it at 2 for
    good. Returns (batch_size, wanted), wanted None once the choice is in force again."""
    target = current if wanted is None else wanted
    if limit is None:  # the window settings are wrong: change nothing until they are fixed
        return current, wanted
    size = max(1, min(target, limit))
    return size, (target if size < target else None)


def windows_that_work(settings: TokensDataSettings, n_tokens: int) -> TokensDataSettings:
    """`settings` with the window field the text refuses (max_length, else stride) set back to its
    default, or both when one is not enough; unchanged when the text can be cut into windows.

    For the page's link: a link holding the refused value would reopen on the same error when it
    is reloaded or shared. A batch_size above the windows is left as it is, because the page
    lowers it itself (with a notice) when the link is opened."""
    def works(s: TokensDataSettings) -> bool:
        return batch_size_limit(n_tokens, s.max_length, s.stride) is not None

    if works(settings):
        return settings
    default = TokensDataSettings()
    tries = [{"max_length": default.max_length}, {"stride": default.stride},
             {"max_length": default.max_length, "stride": default.stride}]
    candidates = [dataclasses.replace(settings, **fields) for fields in tries]
    return next((c for c in candidates if works(c)), candidates[-1])


def stride_note(stride: int, max_length: int) -> str:
    """What a stride does to the tokens, against the window's length: overlap, an exact tiling, or
    gaps. With gaps, the first token after each window is still that window's last target; only
    the ones after it (stride − max_length − 1 of them) are never read at all."""
    if stride < max_length:
        return (f"stride {stride} < max_length {max_length}: neighbouring windows overlap, so tokens "
                "are read several times (dark green).")
    if stride == max_length:
        return "stride = max_length: every token is an input exactly once, with no overlap."
    unread = stride - max_length - 1
    said = (f"stride {stride} > max_length {max_length}: after each window, a token is never an "
            "input (grey), but it is still that window's last target")
    if unread == 0:
        return said + ": every token is read, as an input or as a target."
    return said + (f"; the {unread} after it {'is' if unread == 1 else 'are'} never read at all, "
                   "neither as an input nor as a target.")


def window_count_formula(n_tokens: int, max_length: int, stride: int) -> str:
    """The count of windows written out: ⌊(n − max_length − 1) / stride⌋ + 1 = N."""
    n = count_windows(n_tokens, max_length, stride)
    return (f"⌊({n_tokens} − {max_length} − 1) / {stride}⌋ + 1 = "
            f"⌊{n_tokens - max_length - 1} / {stride}⌋ + 1 = {n}")


def ids_key(ids: tuple[int, ...]) -> str:
    """A short digest of a tuple of ids (equal tuples, equal keys)."""
    return hashlib.sha1(np.asarray(ids, dtype=np.int64).tobytes()).hexdigest()[:20]


@dataclass
class LoaderView:
    """Everything the page shows about one text cut into windows and batches."""

    settings: TokensDataSettings  # a copy of the settings that made this view
    token_ids: list[int]  # the whole text as GPT-2 ids
    pieces: list[str]  # the text of each token
    inputs: torch.Tensor  # (N, max_length) every window's input ids
    targets: torch.Tensor  # (N, max_length) the same windows shifted by one token
    batch_indices: list[list[int]]  # windows of each batch, in the order the loader gives them
    book_first_batch: bool | None = None  # the book's create_dataloader_v1 gives the same batch 0

    @property
    def n_tokens(self) -> int:
        return len(self.token_ids)

    @functools.cached_property
    def distinct_ids(self) -> tuple[int, ...]:
        """The text's distinct ids, sorted (worked out once per view: a view is shared, read-only)."""
        return tuple(sorted(set(self.token_ids)))

    @functools.cached_property
    def distinct_ids_key(self) -> str:
        """A short name for `distinct_ids`, for a cache key cheaper than the ids themselves."""
        return ids_key(self.distinct_ids)

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
    view = LoaderView(settings=dataclasses.replace(settings), token_ids=token_ids,
                      pieces=[piece for _, piece in tokens], inputs=inputs, targets=targets,
                      batch_indices=batch_indices)
    view.book_first_batch = matches_book_loader(text, view)
    return view


def matches_book_loader(text: str, view: LoaderView) -> bool | None:
    """Whether the book's `create_dataloader_v1` (same text, settings and seed) yields the same
    first batch as `view`; None when "<|endoftext|>" is read as plain text (the book's loader
    always reads it as the special token, so the two tokenizations differ on purpose)."""
    s = view.settings
    if not s.allow_special:
        return None
    loader = create_dataloader_v1(text, batch_size=s.batch_size, max_length=s.max_length,
                                  stride=s.stride, shuffle=s.shuffle, drop_last=True, seed=s.seed)
    book_x, book_y = next(iter(loader))  # (B, T), (B, T)
    x, y = view.batch(0)  # (B, T), (B, T)
    return bool(torch.equal(book_x, x) and torch.equal(book_y, y))


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


def seeded_embedding(num_embeddings: int, embedding_dim: int, seed: int) -> nn.Embedding:
    """`nn.Embedding(num, dim)` with N(0, 1) weights (PyTorch's own init) drawn from `seed`.

    Built on the meta device and filled from a private generator, so it never touches the global
    RNG that other sessions share.
    """
    layer = embedding_skeleton(num_embeddings, embedding_dim).to_empty(device="cpu")
    with torch.no_grad():
        layer.weight.normal_(generator=torch.Generator().manual_seed(seed))
    return layer


# The token and position tables' seed: the book's `torch.manual_seed(123)` before it builds its
# layers. Not the shuffle seed: the layers are made once and the loader's shuffle does not touch
# them, so a new shuffle shows the same vector for the same token, as in the book. (It also means
# a class trying shuffle seeds does not redraw the 50,257-row table for each: 0.1-0.2 s a time.)
EMBEDDING_SEED = 123

EMBEDDING_CHUNK_ROWS = 1024  # rows of a table drawn at a time by seeded_embedding_rows


class EmbeddingRows(nn.Module):
    """Some rows of `seeded_embedding(num_embeddings, embedding_dim, seed)`, looked up like it.

    GPT-2's token table is 50,257 x d floats (51 MB at d = 256) and a batch reads a few dozen of
    its rows: a server with a class keeps only these rows, the same numbers as the whole table.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, ids: torch.Tensor, rows: torch.Tensor):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim  # the whole table's shape
        self.register_buffer("ids", ids)  # (n,) sorted distinct ids
        self.register_buffer("weight_rows", rows)  # (n, d) their rows of the table

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        at = torch.searchsorted(self.ids, x)  # (B, T) where each id's row is kept
        if not torch.equal(self.ids[at.clamp(max=len(self.ids) - 1)], x):
            raise KeyError("an id whose row was not drawn")
        return self.weight_rows[at]  # (B, T, d)


def seeded_embedding_rows(num_embeddings: int, embedding_dim: int, seed: int,
                          ids: list[int] | tuple[int, ...]) -> EmbeddingRows:
    """The rows `ids` of `seeded_embedding(num_embeddings, embedding_dim, seed).weight`, without
    ever holding the whole table: it is drawn EMBEDDING_CHUNK_ROWS rows at a time, up to the
    largest id, and only the wanted rows are kept.

    Why the numbers are the same: PyTorch's CPU `normal_` draws one uniform number per element in
    order and turns each block of 16 into normals (Box-Muller), redrawing the last 16 when the size
    is not a multiple of 16. Chunks of 1024 rows are multiples of 16 elements, so they consume the
    generator exactly as the whole table does (tests/core/test_text_lessons.py checks it).
    """
    wanted = torch.tensor(sorted(set(int(i) for i in ids)), dtype=torch.long)  # (n,)
    if len(wanted) == 0 or wanted[0] < 0 or wanted[-1] >= num_embeddings:
        raise ValueError(f"ids must lie in 0..{num_embeddings - 1}")
    generator = torch.Generator().manual_seed(seed)
    rows = torch.empty(len(wanted), embedding_dim)  # (n, d)
    start = 0
    while start <= wanted[-1]:
        stop = min(start + EMBEDDING_CHUNK_ROWS, num_embeddings)
        if (num_embeddings - stop) * embedding_dim < 16:  # a tiny last chunk: draw it with this one
            stop = num_embeddings
        chunk = torch.empty(stop - start, embedding_dim).normal_(generator=generator)  # (rows, d)
        inside = (wanted >= start) & (wanted < stop)
        rows[inside] = chunk[wanted[inside] - start]
        start = stop
    return EmbeddingRows(num_embeddings, embedding_dim, wanted, rows)


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
            {"step": f"input embeddings: the position embeddings ({T}, {d}) added to each of the {B} windows",
             "code": "token_embeddings + pos_embeddings",
             "shape": str(tuple(self.input_embeddings.shape))},
        ])


@torch.no_grad()
def embed_batch(x: torch.Tensor, token_embedding_layer: nn.Embedding | EmbeddingRows,
                pos_embedding_layer: nn.Embedding) -> EmbeddingSteps:
    """Token embeddings + position embeddings of a batch of ids, as in the book's chapter 2.
    The token layer may hold only the rows of this batch's ids (`seeded_embedding_rows`)."""
    max_length = x.shape[1]
    token_embeddings = token_embedding_layer(x)  # (B, T, d)
    pos_embeddings = pos_embedding_layer(torch.arange(max_length))  # (T, d)
    input_embeddings = token_embeddings + pos_embeddings  # (B, T, d): the same positions for every row
    return EmbeddingSteps(
        x=x, token_embeddings=token_embeddings, pos_embeddings=pos_embeddings,
        input_embeddings=input_embeddings,
        token_table_shape=(token_embedding_layer.num_embeddings, token_embedding_layer.embedding_dim),
        pos_table_shape=tuple(pos_embedding_layer.weight.shape))


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
                          f"{'is not one of them' if len(bad) == 1 else 'are not among them'}.")
    return cleaned


def name_window_frames(name: str, context_size: int) -> list[pd.DataFrame]:
    """The windows of one name as tables: rows input / input id / target / target id, one column per t."""
    inputs, targets = name_windows_loop([name], NAMES_TOKENIZER, context_size)  # (n, T), (n, T)
    frames = []
    for x_row, y_row in zip(inputs.tolist(), targets.tolist()):
        columns = {}
        for t, (x_id, y_id) in enumerate(zip(x_row, y_row)):
            columns[f"t={t}"] = [
                NAMES_TOKENIZER.itos[x_id], str(x_id),
                "pad" if y_id == IGNORE_INDEX else NAMES_TOKENIZER.itos[y_id], str(y_id)]
        frames.append(pd.DataFrame(columns, index=["input", "input id", "target", "target id"]))
    return frames
