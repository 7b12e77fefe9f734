"""core/settings.py unknown_params: a link's unknown keys are named (never their values), with a
did-you-mean for a near miss, as a lesson file's unknown keys are."""

from dataclasses import dataclass

from core import settings as cs


@dataclass
class Sampling:
    temperature: float = cs.spec(1.0, min=0.1, max=5.0)
    top_k: int = cs.spec(0, min=0, max=26)
    seed: int = 0


def test_known_names_give_no_notice():
    assert cs.unknown_params(Sampling, {"temperature": "2", "top_k": "3", "seed": "1"}) == []
    assert cs.unknown_params(Sampling, {}) == []


def test_a_misspelt_name_gets_a_did_you_mean():
    assert cs.unknown_params(Sampling, {"temprature": "2"}) == [
        "temprature (not a setting of this page; did you mean temperature?)"]


def test_a_wholly_foreign_name_gets_no_did_you_mean():
    assert cs.unknown_params(Sampling, {"utm_source": "mail"}) == [
        "utm_source (not a setting of this page)"]


def test_allowed_names_are_skipped_and_never_suggested():
    assert cs.unknown_params(Sampling, {"lecture": "1", "class": "ABCDEF", "temperature": "2"},
                             allowed=("lecture", "class")) == []
    # an allowed name is not a setting: a near miss of it is not "meant" as it
    assert cs.unknown_params(Sampling, {"lectur": "1"}, allowed=("lecture",)) == [
        "lectur (not a setting of this page)"]


def test_values_are_never_repeated():
    notes = cs.unknown_params(Sampling, {"tempreature": "SECRET-VALUE"})
    assert notes == ["tempreature (not a setting of this page; did you mean temperature?)"]
    assert "SECRET" not in " ".join(notes)


def test_more_than_six_names_end_with_and_n_more():
    params = {f"extra{i}": "1" for i in range(10)}
    notes = cs.unknown_params(Sampling, params)
    assert len(notes) == cs.MAX_IGNORED_SHOWN + 1
    assert notes[:2] == ["extra0 (not a setting of this page)", "extra1 (not a setting of this page)"]
    assert notes[-1] == "and 4 more"


def test_a_huge_name_is_cut_to_40_characters():
    notes = cs.unknown_params(Sampling, {"x" * 5000: "1"})
    assert notes == ["x" * 40 + " (not a setting of this page)"]


def test_a_blank_name_still_says_something_was_there():
    assert cs.unknown_params(Sampling, {"": "5"}) == ['"" (not a setting of this page)']


def test_from_params_is_unchanged_by_unknown_names():
    obj, errors = cs.from_params(Sampling, {"temprature": "2", "top_k": "3"})
    assert obj == Sampling(top_k=3) and errors == []
