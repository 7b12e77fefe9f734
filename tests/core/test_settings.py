"""core/settings.py: URL and lesson round trips, validation, hostile values."""

import base64
import json
import math
import zlib
from dataclasses import dataclass

import pytest

from core import settings as cs


@dataclass
class Demo:
    query: int = cs.spec(1, min=0, max=63)
    causal: bool = True
    dropout_p: float = cs.spec(0.0, min=0.0, max=0.9)
    variant: str = cs.spec("v2", choices=("v1", "v2"))
    tokens: list[str] = cs.spec(factory=lambda: ["a", "b", "c"], max_len=64)
    table: list[list[float]] = cs.spec(factory=lambda: [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]])

    def problems(self):
        out = []
        if self.query >= len(self.tokens):
            out.append("the query token does not exist")
        if len(self.table) != len(self.tokens):
            out.append("one embedding row per token is needed")
        return out


def test_defaults_give_empty_params():
    assert cs.to_params(Demo()) == {}


def test_url_round_trip_keeps_every_field():
    obj = Demo(query=2, causal=False, dropout_p=0.25, variant="v1",
               tokens=["x", "y", "z"], table=[[1.5, -2.0], [0.0, 3.25], [1e-3, 7.0]])
    params = cs.to_params(obj)
    assert all(isinstance(v, str) for v in params.values())
    back, errors = cs.from_params(Demo, params)
    assert errors == []
    assert back == obj


def test_large_values_are_packed_and_unpacked():
    tokens = [f"t{i}" for i in range(64)]
    table = [[i * 0.01 + j for j in range(64)] for i in range(64)]
    obj = Demo(query=5, tokens=tokens, table=table)
    params = cs.to_params(obj)
    assert params["table"].startswith("z")
    back, errors = cs.from_params(Demo, params)
    assert errors == [] and back.table == table


@pytest.mark.parametrize("params, field", [
    ({"query": "abc"}, "query"),
    ({"query": "99"}, "query"),
    ({"causal": "maybe"}, "causal"),
    ({"dropout_p": "nan"}, "dropout_p"),
    ({"dropout_p": "inf"}, "dropout_p"),
    ({"variant": "v3"}, "variant"),
    ({"tokens": "[1, 2"}, "tokens"),
    ({"tokens": "zzzz"}, "tokens"),
    ({"table": json.dumps([["a", 1]] * 3)}, "table"),
])
def test_bad_values_fall_back_to_default_with_a_notice(params, field):
    obj, errors = cs.from_params(Demo, params)
    assert getattr(obj, field) == getattr(Demo(), field)
    assert errors and field in errors[0]
    # the field is named once: "query must be ...", not "query: query must be ..." (browser review)
    assert errors[0].count(field) == 1 and errors[0].endswith("; the default was used")


def test_a_clash_between_fields_sets_back_only_the_field_that_gives_way():
    # query 2 needs a third token: the later field (tokens) gives way, the rest of the link stays
    obj, errors = cs.from_params(Demo, {"query": "2", "tokens": '["a","b"]', "causal": "0", "variant": "v1"})
    assert obj == Demo(query=2, causal=False, variant="v1")
    assert any("query token" in e for e in errors)
    assert errors[-1] == ('so tokens went back from ["a","b"] to its default (["a","b","c"]); '
                          "every other setting was kept")


@dataclass
class Equal:
    """Three fields that must be equal: from x=1, y=2, z=3 no one or two defaults (0) resolve it."""
    x: int = cs.spec(0, min=0, max=9)
    y: int = cs.spec(0, min=0, max=9)
    z: int = cs.spec(0, min=0, max=9)

    def problems(self):
        return [] if self.x == self.y == self.z else ["x, y and z must be equal"]


def test_a_clash_no_small_set_of_fields_resolves_resets_everything():
    obj, errors = cs.from_params(Equal, {"x": "1", "y": "2", "z": "3"})
    assert obj == Equal() and errors == ["x, y and z must be equal", "the settings were reset to the defaults"]


def test_a_lesson_with_clashing_fields_keeps_the_others():
    text = cs.to_lesson(Demo(causal=False), name="n", page="p")
    lesson = json.loads(text)
    lesson["settings"]["query"] = 5  # no sixth token
    loaded, errors = cs.from_lesson(Demo, json.dumps(lesson), page="p")
    assert loaded.settings == Demo(causal=False)  # query gives way: tokens and table are the defaults
    assert "query went back from 5 to its default (1)" in errors[-1]


def test_oversized_and_zip_bomb_values_are_refused():
    obj, errors = cs.from_params(Demo, {"tokens": "[" + "1," * 40_000 + "1]"})
    assert obj == Demo() and "too long" in errors[0]
    bomb = "z" + base64.urlsafe_b64encode(zlib.compress(b"[" + b"0," * 5_000_000 + b"0]")).decode()
    assert len(bomb) < cs.MAX_PARAM_CHARS
    obj, errors = cs.from_params(Demo, {"table": bomb})
    assert obj == Demo() and errors


def test_json_nested_deeper_than_the_decoder_recurses_is_refused_with_a_message():
    deep = "[" * 1500 + "]" * 1500  # 3 KB, under the length cap
    obj, errors = cs.from_params(Demo, {"tokens": deep})
    assert obj == Demo() and "nested too deeply" in errors[0]
    packed = "z" + base64.urlsafe_b64encode(zlib.compress(deep.encode())).decode()
    obj, errors = cs.from_params(Demo, {"table": packed})
    assert obj == Demo() and "nested too deeply" in errors[0]


def test_unknown_params_are_ignored():
    obj, errors = cs.from_params(Demo, {"evil": "<script>", "query": "0"})
    assert obj.query == 0 and errors == []


def test_lesson_round_trip_with_locks():
    obj = Demo(query=0, causal=False)
    text = cs.to_lesson(obj, name="Masking", page="causal", locked={"causal", "not_a_field"})
    lesson, errors = cs.from_lesson(Demo, text.encode(), page="causal")
    assert errors == [] and lesson.settings == obj
    assert lesson.locked == {"causal"} and lesson.name == "Masking"


@pytest.mark.parametrize("data, message", [
    (b"\xff\xfe\x00garbage", "not a lesson file"),
    (b"[1, 2, 3]", "not an Attention Lab lesson"),
    (json.dumps({"format": "attention-lab-lesson", "version": 99}).encode(), "version"),
    (json.dumps({"format": "attention-lab-lesson", "version": 1, "page": "other",
                 "settings": {}}).encode(), "for the page"),
    (json.dumps({"format": "attention-lab-lesson", "version": 1, "page": "p",
                 "settings": 5}).encode(), "no settings"),
    (b"{" * 100_000, "not a lesson file"),
    (b" " * (cs.MAX_LESSON_BYTES + 1), "too large"),
])
def test_bad_lesson_files_are_refused(data, message):
    with pytest.raises(cs.SettingsError, match=message):
        cs.from_lesson(Demo, data, page="p")


def test_lesson_with_bad_values_loads_defaults_for_them():
    text = json.dumps({"format": "attention-lab-lesson", "version": 1, "page": "p",
                       "settings": {"query": 1, "dropout_p": 5.0, "variant": ["x"]},
                       "locked": "causal"})
    lesson, errors = cs.from_lesson(Demo, text, page="p")
    assert lesson.settings.dropout_p == 0.0 and lesson.settings.variant == "v2"
    assert len(errors) == 2 and lesson.locked == set()


def _lesson_text(settings, **extra) -> str:
    return json.dumps({"format": "attention-lab-lesson", "version": 1, "page": "p",
                       "settings": settings, **extra})


def test_unknown_settings_in_a_lesson_are_named_with_a_guess():
    text = _lesson_text({"querry": 0, "causal": False})
    lesson, errors = cs.from_lesson(Demo, text, page="p")
    assert lesson.settings == Demo(causal=False) and errors == []  # what it can, it applies
    assert lesson.ignored == ["querry (not a setting of this page; did you mean query?)"]


def test_unknown_lock_names_are_named_and_known_ones_kept():
    text = _lesson_text({"query": 0}, locked=["query", "casual", "zzzzzz", 7])
    lesson, _ = cs.from_lesson(Demo, text, page="p")
    assert lesson.locked == {"query"}
    assert lesson.ignored == ["lock casual (not a control of this page; did you mean causal?)",
                              "lock zzzzzz (not a control of this page)",
                              "locked: 7 (not a control name)"]


@pytest.mark.parametrize("locked, kind", [("causal", "text"), ({"causal": True}, "an object"),
                                          (None, "null"), (1, "a number"), (True, "true/false")])
def test_a_locked_that_is_not_a_list_is_reported(locked, kind):
    lesson, _ = cs.from_lesson(Demo, _lesson_text({}, locked=locked), page="p")
    assert lesson.locked == set()
    assert len(lesson.ignored) == 1 and f"not {kind}; no control was locked" in lesson.ignored[0]


def test_a_lesson_full_of_unknown_keys_gives_a_short_notice():
    lesson, _ = cs.from_lesson(Demo, _lesson_text({f"k{i}" + "x" * 100: 1 for i in range(1000)}), page="p")
    assert len(lesson.ignored) == cs.MAX_IGNORED_SHOWN + 1 and lesson.ignored[-1] == "and 994 more"
    assert max(len(note) for note in lesson.ignored) < 120


def test_a_saved_lesson_loads_without_notices():
    lesson, errors = cs.from_lesson(Demo, cs.to_lesson(Demo(), name="n", page="p", locked=["query"]), page="p")
    assert errors == [] and lesson.ignored == []


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-16-le", "utf-16-be"])
def test_a_lesson_saved_with_a_byte_order_mark_loads(encoding):
    text = cs.to_lesson(Demo(query=0), name="Café", page="p")
    data = text.encode(encoding)
    if not data.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        data = "\ufeff".encode(encoding) + data  # what Notepad writes before UTF-16 text
    lesson, errors = cs.from_lesson(Demo, data, page="p")
    assert lesson.settings == Demo(query=0) and lesson.name == "Café" and errors == []
    lesson, _ = cs.from_lesson(Demo, "\ufeff" + text, page="p")  # text read by a BOM-unaware reader
    assert lesson.name == "Café"


def test_a_lesson_name_is_one_line():
    lesson, _ = cs.from_lesson(Demo, _lesson_text({}, name="# Title\n\n---\nmore"), page="p")
    assert lesson.name == "# Title --- more"
    lesson, _ = cs.from_lesson(Demo, _lesson_text({}, name=" \n "), page="p")
    assert lesson.name == "lesson"


def test_a_typed_number_is_taken_exactly_or_refused_with_the_reason():
    from core.settings import SettingsError, number_range, parse_number_text

    steps = {"min": 1, "max": 100_000}
    assert parse_number_text("3000", int, steps) == 3000
    assert parse_number_text(" 1,000 ", int, steps) == 1000 and parse_number_text("1_000", int, steps) == 1000
    assert parse_number_text("1e3", int, steps) == 1000
    assert parse_number_text("0.008", float, {"min": 1e-6, "max": 10.0}) == 0.008
    for text, why in [("abc", "is not a number"), ("1e30", "more than the maximum, 100,000"),
                      ("12.7", "not a whole number"), ("-5", "less than the minimum, 1"),
                      ("", "empty"), ("nan", "“nan” is not a number"), ("inf", "not a finite number"),
                      ("-Infinity", "not a finite number"), ("9" * 400, "more than the maximum, 100,000"),
                      ("1e400", "more than the maximum"), ("-1e400", "less than the minimum, 1")]:
        with pytest.raises(SettingsError, match=why):
            parse_number_text(text, int, steps)
    with pytest.raises(SettingsError, match="“999999999999999999999999…” is more than any setting takes"):
        parse_number_text("9" * 400, float, {})
    # "-0" is 0, also as a float (a box never shows "-0.0")
    assert parse_number_text("-0", int, {"min": 0}) == 0
    assert math.copysign(1.0, parse_number_text("-0", float, {"min": 0.0})) == 1.0
    with pytest.raises(SettingsError, match="use a dot for decimals"):
        parse_number_text("0,5", float, {})
    assert number_range(int, steps) == "a whole number from 1 to 100,000"
    assert number_range(float, {"min": 0.0, "max": 1.0}) == "a number from 0 to 1"



@pytest.mark.parametrize("given", ["2.0", " 2 ", "2e0", "+2.000"])
def test_a_link_may_write_a_whole_number_with_a_point_zero(given):
    obj, errors = cs.from_params(Demo, {"query": given})
    assert obj.query == 2 and errors == []


def test_a_lesson_may_hold_a_whole_number_as_a_json_float():
    lesson = json.loads(cs.to_lesson(Demo(query=2), name="x", page="p"))
    lesson["settings"]["query"] = 2.0  # what some JSON writers put for 2
    loaded, errors = cs.from_lesson(Demo, json.dumps(lesson), page="p")
    assert loaded.settings.query == 2 and errors == []


@pytest.mark.parametrize("given", ["1.5", "nan", "inf", "two", "1e400"])
def test_a_whole_number_field_still_refuses_what_is_not_whole(given):
    obj, errors = cs.from_params(Demo, {"query": given})
    assert obj.query == Demo().query and errors and "whole number" in errors[0]
