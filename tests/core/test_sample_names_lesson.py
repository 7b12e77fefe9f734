"""core.lessons.sample_names: the prefix and the name a student types, cleaned into the model's alphabet."""

from __future__ import annotations

import pytest

from core.lessons.sample_names import clean_prefix, in_alphabet
from core.tokenizers import CharTokenizer

NAMES_VOCAB = CharTokenizer.from_text(".abcdefghijklmnopqrstuvwxyz")


@pytest.mark.parametrize("typed, cleaned", [("Em", "em"), ("  JUL ", "jul"), ("", ""), ("aNNa", "anna")])
def test_a_prefix_is_lower_cased_and_trimmed(typed, cleaned):
    assert clean_prefix(typed, NAMES_VOCAB) == cleaned


@pytest.mark.parametrize("typed, named", [
    ("İsa", "'İ'"),  # str.lower makes it "i" + a combining dot: the message must name the letter typed
    ("\u212aai", "'\u212a'"),  # the Kelvin sign looks like K but is not a letter of the alphabet
    ("zoë", "'ë'"),
    ("a1", "'1'"),
])
def test_a_character_outside_the_alphabet_is_named_as_typed(typed, named):
    with pytest.raises(ValueError, match="never saw") as refused:
        clean_prefix(typed, NAMES_VOCAB)
    assert named in str(refused.value)
    assert "\u0307" not in str(refused.value)  # never a lone combining dot


def test_the_end_of_name_mark_is_refused_with_its_reason():
    with pytest.raises(ValueError, match="marks the start and end"):
        in_alphabet("em.ma", NAMES_VOCAB, "the name")
