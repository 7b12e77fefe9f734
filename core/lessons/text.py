"""The texts of the tokens and small-LM lessons: the built-in ones, and one judge for the user's own.

`validate_text` and `decode_upload` are the one place a pasted or uploaded text is judged (empty,
whitespace, too long, binary-looking, not UTF-8); `TextProblem` carries a message fit for a student.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parents[2] / "data"

DEFAULT_TEXT_PATH = DATA_DIR / "default_text.txt"

SMALL_LM_CORPUS_PATH = DATA_DIR / "small_lm_corpus.txt"

MAX_TEXT_CHARS = 100_000  # longest text a page accepts (a few book chapters)

MAX_UPLOAD_BYTES = 400_000  # 100k characters of UTF-8 are at most 400k bytes

BOOK_SENTENCE = "Hello, do you like tea? <|endoftext|> In the sunlit terraces of someunknownPlace."

PANGRAM = "the quick brown fox jumps over the lazy dog. "  # the slides' idea: one short sentence...

PANGRAM_REPEATS = 60  # ...repeated, so a model with context can learn it almost by heart


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


def visible(piece: str) -> str:
    """Make spaces, line breaks and tabs visible: '␣' '↵' '⇥'."""
    return piece.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥").replace("\r", "␍")
