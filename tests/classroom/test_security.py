"""Class mode's safety pieces: the lecturer key, join codes, nicknames, rate limits, expiry."""

from __future__ import annotations

import time

import pytest

from core.classroom import security
from core.classroom.security import ClassroomError, RateLimited, RateLimiter, clean_nickname


# ------------------------------------------------------------------------------ lecturer key


def test_lecturer_key_compare_accepts_only_the_exact_key():
    assert security.check_lecturer_key("s3cret key", "s3cret key", wrong_delay_s=0)
    assert security.check_lecturer_key("  s3cret key \t", "s3cret key", wrong_delay_s=0)  # pasted with spaces
    for wrong in ("s3cret", "s3cretkey", "s3cret  key", "S3CRET KEY", "", None):
        assert not security.check_lecturer_key(wrong, "s3cret key", wrong_delay_s=0)
    assert not security.check_lecturer_key("anything", None, wrong_delay_s=0)  # class mode off
    assert not security.check_lecturer_key("", "", wrong_delay_s=0)


def test_a_wrong_key_waits_before_answering():
    start = time.perf_counter()
    assert not security.check_lecturer_key("guess", "right", wrong_delay_s=0.2)
    assert time.perf_counter() - start >= 0.2


def test_the_key_compare_is_constant_time(monkeypatch):
    calls = []
    original = security.hmac.compare_digest
    monkeypatch.setattr(security.hmac, "compare_digest", lambda a, b: calls.append((a, b)) or original(a, b))
    security.check_lecturer_key("short", "a much longer configured key", wrong_delay_s=0)
    (given, configured), = calls
    assert len(given) == len(configured) == 32  # digests: equal length whatever the keys


def test_configured_key_comes_from_the_environment_or_secrets(monkeypatch):
    monkeypatch.delenv(security.LECTURER_KEY_ENV, raising=False)
    assert security.configured_lecturer_key() is None
    assert security.configured_lecturer_key({security.LECTURER_KEY_ENV: "  from-secrets "}) == "from-secrets"
    assert security.configured_lecturer_key({security.LECTURER_KEY_ENV: "  "}) is None

    class Broken:
        def get(self, key):
            raise FileNotFoundError("no secrets.toml")

    assert security.configured_lecturer_key(Broken()) is None
    monkeypatch.setenv(security.LECTURER_KEY_ENV, "from-env")
    assert security.configured_lecturer_key({security.LECTURER_KEY_ENV: "x"}) == "from-env"


# ------------------------------------------------------------------------------ codes and tokens


def test_join_codes_are_short_random_and_unambiguous():
    drawn = [security.new_join_code() for _ in range(500)]
    # 31^6 = 887,503,681 codes: 500 draws repeat one with probability 1.4e-4 (it happened once,
    # on CI; create_class draws again then), three or more repeats about 1e-12
    assert len(set(drawn)) >= 498
    assert all(len(code) == 6 and set(code) <= set(security.CODE_ALPHABET) for code in drawn)
    assert set("".join(drawn)) == set(security.CODE_ALPHABET)  # every character is used
    assert not set("01ILO") & set(security.CODE_ALPHABET)


def test_typed_codes_are_normalized_and_junk_is_no_code():
    assert security.normalize_code(" k7q-mpx ") == "K7QMPX"
    for junk in ("", None, "K7QMP0", "'; DROP TABLE classes;--", "A" * 40):
        assert security.normalize_code(junk) == ""


def test_tokens_are_stored_only_as_hashes():
    token = security.new_token()
    stored = security.token_hash(token)
    assert token not in stored and len(stored) == 64
    assert security.token_matches(token, stored)
    assert not security.token_matches(token + "x", stored)
    assert not security.token_matches(None, stored)


# ------------------------------------------------------------------------------ nicknames


@pytest.mark.parametrize("typed, stored", [
    ("<script>alert(1)</script>", "<script>alert(1)</script>"),  # kept as text; pages show it as text
    ("**bold**", "**bold**"),
    ("Ada\u202eecalevoL", "AdaecalevoL"),  # right-to-left override
    ("\u2067Bo\u2069 \u200fCy\u200e", "Bo Cy"),  # isolates and direction marks
    ("  Ada \t\n  Lovelace\u2028 ", "Ada Lovelace"),
    ("Zoë 🚀", "Zoë 🚀"),
    ("👩\u200d💻 dev", "👩\u200d💻 dev"),  # the joiner inside an emoji sequence stays
    ("null\x00byte\x1b[31m", "nullbyte[31m"),
    ("zero\u200bwidth", "zerowidth"),
    ("Ze\u0301", "Zé"),  # composed (NFC)
    ("محمد", "محمد"),  # right-to-left letters are fine; only the override marks go
])
def test_nicknames_are_cleaned(typed, stored):
    assert clean_nickname(typed) == stored


@pytest.mark.parametrize("typed", ["", "   ", "\u202e\u200f", "\x00\x01", "\u200d", None, 42])
def test_empty_nicknames_are_refused_with_a_message(typed):
    with pytest.raises(ClassroomError, match="nickname"):
        clean_nickname(typed)


@pytest.mark.parametrize("typed", ["x" * 10_000, "é" * 33, "🚀" * 5_000])
def test_long_nicknames_are_refused_with_a_message(typed):
    with pytest.raises(ClassroomError, match="at most 32"):
        clean_nickname(typed)


def test_a_nickname_of_exactly_the_limit_is_fine():
    assert clean_nickname("a" * 32) == "a" * 32


def test_nicknames_compare_case_insensitively():
    assert security.nickname_key("ADA") == security.nickname_key("ada")
    assert security.nickname_key("Ａda") == security.nickname_key("ada")  # full-width letters


def test_escape_markdown_leaves_no_markup():
    escaped = security.escape_markdown("**bold** <script>x</script> [a](b)")
    assert "<" not in escaped and "**" not in escaped and "](" not in escaped


# ------------------------------------------------------------------------------ rate limits and expiry


def test_rate_limiter_allows_n_per_window_per_key():
    now = [0.0]
    limiter = RateLimiter(3, 10, "answers", clock=lambda: now[0])
    for _ in range(3):
        limiter.check("ada")
    with pytest.raises(RateLimited, match=r"Too many answers.*10 s"):
        limiter.check("ada")
    limiter.check("bo")
    now[0] = 9.9
    with pytest.raises(RateLimited):
        limiter.check("ada")
    now[0] = 10.01
    limiter.check("ada")  # the first events left the window


def test_class_lifetime_defaults_to_seven_days_and_is_configurable(monkeypatch):
    monkeypatch.delenv(security.TTL_DAYS_ENV, raising=False)
    assert security.class_ttl_s() == 7 * 24 * 3600
    monkeypatch.setenv(security.TTL_DAYS_ENV, "1.5")
    assert security.class_ttl_s() == 1.5 * 24 * 3600
    assert security.class_ttl_s(2) == 2 * 24 * 3600
    for bad in (0, -1, float("nan")):
        with pytest.raises(ClassroomError):
            security.class_ttl_s(bad)


@pytest.mark.parametrize("typed, says", [
    ("", "is empty"),
    ("  - ", "is empty"),
    ("K0QMPX", "it has 0, and codes leave out"),
    ("kilo12", "it has 1 and I and L"),
    ("ab#cde", "6 letters and digits"),
    ("Q" * 17, "this has 17"),
])
def test_why_a_typed_code_cannot_be_a_code(typed, says):
    assert says in security.code_problem(typed)
    assert security.normalize_code(typed) == ""  # the two agree on what is not a code


@pytest.mark.parametrize("typed", ["K7QMPX", "k7q-mpx", " k7q mpx "])
def test_a_code_as_a_student_types_it_has_no_problem(typed):
    assert security.code_problem(typed) is None and security.normalize_code(typed) == "K7QMPX"


@pytest.mark.parametrize("typed, says", [
    ("hello0", "“hello0” is not a join code: it has 0 and L and O, and codes leave out 0, O, 1, I and L"),
    ("ab#cd", "“ab\\#cd” is not a join code: codes have 6 letters and digits"),  # Markdown-safe
    ("Q" * 30, "is not a join code: codes have 6 characters, this has 30."),
])
def test_a_mistyped_code_to_reopen_is_named_to_the_lecturer(typed, says):
    said = security.reopen_code_problem(typed)
    assert says in said and "leave the box empty to start a new class" in said
    assert "lecturer's screen" not in said  # that is the students' advice


@pytest.mark.parametrize("typed", ["", "  - ", "K7QMPX", " k7q-mpx "])
def test_a_usable_or_empty_code_to_reopen_has_no_problem(typed):
    assert security.reopen_code_problem(typed) is None
