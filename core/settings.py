"""Page settings as small dataclasses, and their round trips to URL query params and lesson JSON.

Every lesson page keeps its controls in one dataclass. This module turns any such dataclass into
URL query parameters and back, and into a lesson file (JSON) and back, validating every value on
the way in: a tampered or malformed value never reaches the math, it falls back to the default and
the caller gets a plain-language notice to show. Written once here, so shareable links, lesson
presets and locked controls work the same on every page.

Field rules come from `dataclasses.field(metadata=...)` built with `spec(...)`:
`min`/`max` for numbers, `choices` for strings, `max_len` for lists and strings. The same metadata
says how a page shows the field (`label`, `help`, `step`, `format`, `widget`, `choice_labels`,
`short` for run labels, `none_is`, `group`), so the model and training configs (core.models.GPTConfig,
core.training.TrainConfig) carry it once and the Train page's settings are derived from them
(`derive_settings`): one declaration per hyper-parameter.
A dataclass may also define `problems(self) -> list[str]` for rules that span fields
(e.g. "the query token must exist"); when a link or a lesson breaks one, the fewest fields that
resolve it go back to their defaults and the rest is kept, with a notice naming what changed
(a blocked combination in a shared link must not cost the students every other setting).
"""

from __future__ import annotations

import base64
import dataclasses
import difflib
import functools
import itertools
import json
import math
import re
import zlib
from types import UnionType
from typing import Any, Mapping, Sequence, Union, get_args, get_origin, get_type_hints

LESSON_FORMAT = "attention-lab-lesson"
LESSON_VERSION = 1
MAX_PARAM_CHARS = 60_000        # one URL value; browsers cap whole URLs near 64k-2M chars
MAX_LESSON_BYTES = 200_000      # a lesson file holds settings, never data sets or models
COMPRESS_OVER = 600             # longer JSON values are zlib+base64url packed in the URL


SPEC_KEYS = {
    # validation (URLs, lesson files)
    "min", "max", "choices", "max_len", "doc",
    # display (page widgets, labels of runs)
    "label",  # the widget's label
    "help",  # the widget's tooltip
    "step",  # a number input's or slider's step
    "format",  # a number input's printf format, e.g. "%g"
    "widget",  # "slider" or "checkbox"; default: number input, toggle or select box by type
    "choice_labels",  # {choice: text shown for it}
    "short",  # in a run's label: a format string ("lr {:g}") or {value: text}
    "short_off",  # in a run's label, for the `none_is` value ("no clip")
    "short_one",  # in a run's label, for the value 1 ("1 layer" where `short` says "{} layers")
    "none_is",  # the page value that stands for None (e.g. 0 = no gradient clipping)
    "group",  # which part of the page shows it
    "internal",  # never a page control; the text says why (e.g. "taken from the data")
}


def spec(default: Any = dataclasses.MISSING, *, factory: Any = None, **rules: Any) -> Any:
    """A dataclass field with its rules and how to show it (the keys of SPEC_KEYS)."""
    unknown = set(rules) - SPEC_KEYS
    if unknown:
        raise TypeError(f"unknown spec keys: {', '.join(sorted(unknown))}")
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=rules)
    return dataclasses.field(default=default, metadata=rules)


def to_page_value(rules: Mapping[str, Any], value: Any) -> Any:
    """A config value as its page control holds it (None becomes the `none_is` value)."""
    return rules["none_is"] if value is None and "none_is" in rules else value


def from_page_value(rules: Mapping[str, Any], value: Any) -> Any:
    """Inverse of to_page_value: the `none_is` value becomes None again."""
    return None if "none_is" in rules and value == rules["none_is"] else value


def count(n: int, word: str) -> str:
    """3, "layer" -> "3 layers"; 1, "head" -> "1 head" (the words of a label or a caption)."""
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def describe(rules: Mapping[str, Any], value: Any) -> str:
    """A value in a few words, from the field's `short` (e.g. "lr 0.003", "mask off")."""
    short = rules.get("short")
    if "short_off" in rules and value == rules.get("none_is", None):
        return rules["short_off"]
    if "short_one" in rules and value == 1:
        return rules["short_one"]
    if isinstance(short, Mapping):
        return str(short.get(value, value))
    if "choice_labels" in rules and value in rules["choice_labels"]:
        value = rules["choice_labels"][value]
    return short.format(value) if isinstance(short, str) else str(value)


def _without_none(hint: Any) -> Any:
    """`float | None` -> float (a page control always holds a value; see none_is)."""
    args = [a for a in get_args(hint) if a is not type(None)]
    return args[0] if get_origin(hint) in (Union, UnionType) and len(args) == 1 else hint


@functools.lru_cache(maxsize=None)
def type_hints(cls: type) -> dict[str, Any]:
    """typing.get_type_hints(cls), worked out once per class. It evaluates every annotation
    string again on each call, and the pages ask for a field's type on every rerun: py-spy put
    it at 5% of a class's server time. The settings classes are few and never change; the
    returned dict is shared, so callers only read it."""
    return get_type_hints(cls)


def field_type(cls: type, name: str) -> Any:
    """The type of field `name` of dataclass `cls`, None removed (`float | None` -> float)."""
    return _without_none(type_hints(cls)[name])


def derive_settings(name: str, sources: Sequence[type], *, defaults: Mapping[str, Any],
                    extra: Sequence[tuple[str, type, Any]] = (), module: str = __name__,
                    namespace: Mapping[str, Any] | None = None) -> type:
    """A flat page-settings dataclass with one field per field of the `sources` dataclasses.

    Each field keeps its metadata (bounds, choices, label, ...); `float | None` becomes float
    (see `none_is`); fields holding a nested dataclass (it is listed among the sources itself)
    and fields marked `internal` are left out. `defaults` gives the page's starting values;
    `extra` adds page-only fields as (name, type, spec(...)). So a new config field appears on
    the page, in links and in lesson files without another declaration.
    """
    fields = []
    for source in sources:
        hints = get_type_hints(source)
        for f in dataclasses.fields(source):
            hint = _without_none(hints[f.name])
            if "internal" in f.metadata or dataclasses.is_dataclass(hint):
                continue
            if f.name not in defaults:
                raise TypeError(f"{name}: no default for {f.name!r}")
            fields.append((f.name, hint, dataclasses.field(default=defaults[f.name], metadata=f.metadata)))
    fields.extend(extra)
    cls = dataclasses.make_dataclass(name, fields, namespace=dict(namespace or {}))
    cls.__module__ = module  # where it is defined for students and pickling, not here
    return cls


class SettingsError(ValueError):
    """A value that cannot be used; the message is fit to show to a student."""


# ---------------------------------------------------------------- values <-> text
def _pack(text: str) -> str:
    """Compress long JSON so big embedding tables still fit in a link."""
    raw = zlib.compress(text.encode("utf-8"), 9)
    return "z" + base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _unpack(text: str) -> str:
    if not text.startswith("z"):
        return text
    body = text[1:] + "=" * (-len(text[1:]) % 4)
    try:
        raw = base64.urlsafe_b64decode(body.encode("ascii"))
        # cap the inflated size: a tiny "zip bomb" value must not eat the server's memory
        inflater = zlib.decompressobj()
        out = inflater.decompress(raw, MAX_PARAM_CHARS * 20)
        if inflater.unconsumed_tail:
            raise SettingsError("the packed value is too large")
        return out.decode("utf-8")
    except (ValueError, zlib.error, UnicodeDecodeError) as exc:
        raise SettingsError("the packed value is damaged") from exc


def _to_text(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (int, float, str)):
        return str(value)
    text = json.dumps(value, separators=(",", ":"))
    return _pack(text) if len(text) > COMPRESS_OVER else text


def _parse_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("1", "true", "yes", "on"):
        return True
    if isinstance(value, str) and value.lower() in ("0", "false", "no", "off"):
        return False
    raise SettingsError(f"expected true/false, got {str(value)[:40]!r}")


def _parse_number(value: Any, kind: type) -> int | float:
    if isinstance(value, bool):
        raise SettingsError("expected a number, got true/false")
    try:
        number = kind(value) if kind is float else _whole_number(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise SettingsError(f"expected {'a number' if kind is float else 'a whole number'}, "
                            f"got {str(value)[:40]!r}") from exc
    if kind is float and not math.isfinite(number):
        raise SettingsError("expected a finite number")
    return number


def _whole_number(value: Any) -> int:
    """A whole number from a link or a lesson: "4" and also "4.0" or 4.0 (a number box takes 4.0
    as 4, and a spreadsheet or a JSON writer may add the ".0"); never 4.5 or "nan"."""
    text = str(value).strip()
    try:
        return int(text)
    except ValueError:
        number = float(text)  # ValueError for what is no number at all
        if not number.is_integer():  # 4.5, and nan or inf, which are not whole either
            raise ValueError(text) from None
        return int(number)


def _number_words(value: int | float, kind: type) -> str:
    return f"{value:,}" if kind is int else f"{value:g}"


def number_range(kind: type, rules: Mapping[str, Any]) -> str:
    """What a number box takes, in words: "a whole number from 1 to 100,000"."""
    what = "a whole number" if kind is int else "a number"
    low, high = rules.get("min"), rules.get("max")
    if low is not None and high is not None:
        return f"{what} from {_number_words(low, kind)} to {_number_words(high, kind)}"
    if low is not None:
        return f"{what} of at least {_number_words(low, kind)}"
    if high is not None:
        return f"{what} of at most {_number_words(high, kind)}"
    return what


def parse_number_text(text: str, kind: type, rules: Mapping[str, Any]) -> int | float:
    """A number typed into a box, checked against its field's rules, or SettingsError saying why.

    Nothing is rounded, clamped or guessed ("12.7" is not a whole number, "1e30" is too large), so
    a page can refuse the text with this message and keep the last valid value. Accepted: spaces
    and "_" anywhere, "1,000" thousands groups in whole numbers, and "1e3" for 1000.
    """
    raw = str(text).strip()
    shown = raw if len(raw) <= 24 else raw[:24] + "…"
    cleaned = raw.replace(" ", "").replace("_", "")
    if kind is int and re.fullmatch(r"[+-]?\d{1,3}(,\d{3})+", cleaned):
        cleaned = cleaned.replace(",", "")
    if not cleaned:
        raise SettingsError("the box is empty")
    try:
        number = float(cleaned)
    except ValueError:
        hint = " (use a dot for decimals)" if "," in cleaned and kind is float else ""
        raise SettingsError(f"“{shown}” is not a number{hint}") from None
    spelled = cleaned.lower().lstrip("+-")
    if spelled.startswith("nan"):
        raise SettingsError(f"“{shown}” is not a number")
    if spelled.startswith("inf"):
        raise SettingsError(f"“{shown}” is not a finite number")
    # digits too many for a float (a 400-digit number) are simply out of range, as "1e400" is
    if kind is int and math.isfinite(number) and not number.is_integer():
        raise SettingsError(f"“{shown}” is not a whole number")
    if math.isfinite(number):
        number = int(number) if kind is int else number + 0.0  # exact below 2**53; "-0" is 0
    if "min" in rules and number < rules["min"]:
        raise SettingsError(f"“{shown}” is less than the minimum, {_number_words(rules['min'], kind)}")
    if "max" in rules and number > rules["max"]:
        raise SettingsError(f"“{shown}” is more than the maximum, {_number_words(rules['max'], kind)}")
    if not math.isfinite(number):
        raise SettingsError(f"“{shown}” is {'more' if number > 0 else 'less'} than any setting takes")
    return number


def check_rules(name: str, value: Any, rules: Mapping[str, Any]) -> None:
    """SettingsError naming the field unless `value` (already of the field's type) obeys its
    `min`, `max`, `choices` and `max_len`."""
    if "min" in rules and value < rules["min"]:
        raise SettingsError(f"{name} must be at least {rules['min']}, got {value}")
    if "max" in rules and value > rules["max"]:
        raise SettingsError(f"{name} must be at most {rules['max']}, got {value}")
    if "choices" in rules and value not in rules["choices"]:
        raise SettingsError(f"{name} must be one of {', '.join(map(str, rules['choices']))}")
    if "max_len" in rules and hasattr(value, "__len__") and len(value) > rules["max_len"]:
        raise SettingsError(f"{name} is too long ({len(value)} > {rules['max_len']})")


def check_value(name: str, value: Any, kind: type, rules: Mapping[str, Any]) -> None:
    """SettingsError naming the field unless `value` is of type `kind` (bool, int, float or str;
    a float field takes an int too, never a non-finite number) and obeys its rules (check_rules).

    For values made in code (configs, function arguments), where nothing is parsed from text.
    """
    if kind is bool and not isinstance(value, bool):
        raise SettingsError(f"{name} must be true or false, got {value!r}")
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise SettingsError(f"{name} must be a whole number, got {value!r}")
    if kind is float and (isinstance(value, bool) or not isinstance(value, (int, float))
                          or not math.isfinite(value)):
        raise SettingsError(f"{name} must be a finite number, got {value!r}")
    if kind is str and not isinstance(value, str):
        raise SettingsError(f"{name} must be text, got {value!r}")
    check_rules(name, value, rules)


def check_fields(obj: Any, skip: Sequence[str] = ()) -> None:
    """Check every field of dataclass `obj` declared with `spec(...)` against its type and rules
    (check_value); SettingsError for the first bad one. Fields holding a dataclass and fields in
    `skip` are left to the caller. An optional field (`int | None`) may hold None, but not its
    `none_is` value: that is how a page control says None (0 = no clipping), never a config."""
    for field, hint in _fields(type(obj)):
        kind = _without_none(hint)
        if not field.metadata or field.name in skip or dataclasses.is_dataclass(kind):
            continue
        value = getattr(obj, field.name)
        if kind is not hint and value is None:
            continue
        if kind is not hint and "none_is" in field.metadata and value == field.metadata["none_is"] \
                and not isinstance(value, bool):
            raise SettingsError(f"{field.name} must be None for “off”, not {value!r}")
        check_value(field.name, value, kind, field.metadata)


def _coerce(value: Any, hint: Any, name: str) -> Any:
    """Turn a URL string or a JSON value into the field's type, or raise SettingsError."""
    origin = get_origin(hint)
    if origin is list:
        if isinstance(value, str):
            try:
                value = json.loads(_unpack(value))
            except json.JSONDecodeError as exc:
                raise SettingsError(f"{name} is not valid JSON") from exc
            except RecursionError as exc:  # "[[[[…" a thousand deep: json's decoder recurses per level
                raise SettingsError(f"{name} is nested too deeply to be a table of numbers") from exc
        if not isinstance(value, list):
            raise SettingsError(f"{name} must be a list")
        (item_hint,) = get_args(hint) or (Any,)
        return [_coerce(item, item_hint, name) for item in value]
    if hint is bool:
        return _parse_bool(value)
    if hint in (int, float):
        return _parse_number(value, hint)
    if hint is str:
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise SettingsError(f"{name} must be text")
        return str(value)
    return value


def _fields(cls: type) -> list[tuple[dataclasses.Field, Any]]:
    hints = type_hints(cls)
    return [(f, hints[f.name]) for f in dataclasses.fields(cls)]


def problems_of(obj: Any) -> list[str]:
    """The cross-field problems of a settings object (its `problems()`; none when it has no rules)."""
    return obj.problems() if hasattr(obj, "problems") else []


MAX_GIVING_WAY = 2  # fields set back together to resolve a clash; more than that resets them all
MAX_TRIES = 600  # settings objects built while looking for them (a hostile link stays cheap)


def _giving_way(cls: type, values: dict[str, Any]) -> tuple[str, ...] | None:
    """The fewest fields of `values` (at most MAX_GIVING_WAY) that, set back to their defaults,
    leave no cross-field problem; None when there are none to find within MAX_TRIES.

    Later fields give way first (`values` is in declaration order): a field declared after
    another usually depends on it (heads divide the width, eval_iters fits in fit_iters), so
    `?d_embed=16&n_head=3` keeps the width the link chose and sets the heads back.
    """
    names = list(reversed(values))
    tries = 0
    for size in range(1, min(MAX_GIVING_WAY, len(names)) + 1):
        for dropped in itertools.combinations(names, size):
            tries += 1
            if tries > MAX_TRIES:
                return None
            kept = {k: v for k, v in values.items() if k not in dropped}
            if not problems_of(cls(**kept)):
                return dropped
    return None


def _shown(value: Any) -> str:
    """A value in a notice, kept short (a table of numbers is not spelled out)."""
    if isinstance(value, bool):
        return "on" if value else "off"
    text = _to_text(value)
    return text if len(text) <= 30 else text[:29] + "…"


def _set_back_words(cls: type, values: dict[str, Any], dropped: Sequence[str]) -> str:
    """The notice's words: “so n_head went back from 3 to its default (2); every other setting was kept”."""
    default = cls()
    changes = []
    for name in reversed(dropped):  # in the order the fields are declared
        verb = "went back from" if not changes else "from"  # "… went back from 3 … and b from 4 …"
        changes.append(f"{name} {verb} {_shown(values[name])} to its default ({_shown(getattr(default, name))})")
    return f"so {' and '.join(changes)}; every other setting was kept"


def _finish(cls: type, values: dict[str, Any], errors: list[str]):
    """The settings object for checked `values`. When its fields clash (`problems()`), the fewest
    fields that resolve the clash go back to their defaults and every other value is kept, with
    a notice naming them: a shared link or lesson keeps what it can instead of losing it all.
    Only when no small set of fields resolves it does everything go back to the defaults."""
    obj = cls(**values)
    problems = problems_of(obj)
    if not problems:
        return obj
    errors.extend(problems)
    dropped = _giving_way(cls, values)
    if dropped is None:
        errors.append("the settings were reset to the defaults")
        return cls()
    errors.append(_set_back_words(cls, values, dropped))
    return cls(**{k: v for k, v in values.items() if k not in dropped})


def _apply(cls: type, source: Mapping[str, Any], errors: list[str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for field, hint in _fields(cls):
        if field.name not in source:
            continue
        raw = source[field.name]
        if isinstance(raw, str) and len(raw) > MAX_PARAM_CHARS:
            errors.append(f"{field.name}: the value is too long and was ignored")
            continue
        try:
            value = _coerce(raw, hint, field.name)
            check_rules(field.name, value, field.metadata)
            values[field.name] = value
        except SettingsError as exc:
            # "d_out must be at most 64, got 99", not "d_out: d_out must be ..."; a message that
            # does not name the field gets its name in front ("layer: expected a whole number")
            said = str(exc)
            named = said.startswith(f"{field.name} ")
            errors.append(f"{said if named else f'{field.name}: {said}'}; the default was used")
    return values


# ---------------------------------------------------------------- URL query params
def to_params(obj: Any) -> dict[str, str]:
    """Query parameters for every field that differs from its default (clean, short links)."""
    default = type(obj)()
    params = {}
    for field, _ in _fields(type(obj)):
        value = getattr(obj, field.name)
        if value != getattr(default, field.name):
            params[field.name] = _to_text(value)
    return params


def from_params(cls: type, params: Mapping[str, str]) -> tuple[Any, list[str]]:
    """Settings from query parameters; bad values reported. Unknown keys are ignored here:
    `unknown_params` names them, for a notice of their own."""
    errors: list[str] = []
    values = _apply(cls, params, errors)
    return _finish(cls, values, errors), errors


def unknown_params(cls: type, params: Mapping[str, Any], allowed: Sequence[str] = ()) -> list[str]:
    """Notices for a link's keys that are neither settings of `cls` nor `allowed` (parameters the
    app reads elsewhere, e.g. ?lecture=), like a lesson file's unknown keys: “temprature (not a
    setting of this page; did you mean temperature?)”. Names only, cut to 40 characters and at most
    MAX_IGNORED_SHOWN of them (then “and N more”); a value is never repeated. A blank name is
    shown as "" so the notice still says something was there."""
    known = {f.name for f in dataclasses.fields(cls)}
    skip = known | set(allowed)
    names = [k if k.strip() else '""' for k in map(str, params) if k not in skip]
    return _unknown_names(names, known, "", "a setting")


# ---------------------------------------------------------------- lesson files
def to_lesson(obj: Any, *, name: str, page: str, locked: set[str] | list[str] = ()) -> str:
    """A lesson file: the page's settings, a name, and the controls students cannot change."""
    known = {f.name for f in dataclasses.fields(obj)}
    lesson = {
        "format": LESSON_FORMAT,
        "version": LESSON_VERSION,
        "name": name,
        "page": page,
        "settings": dataclasses.asdict(obj),
        "locked": sorted(set(locked) & known),
    }
    return json.dumps(lesson, indent=1)


@dataclasses.dataclass
class LoadedLesson:
    """A loaded lesson: settings object, its name and the locked field names.

    `ignored` names what the file held that this page cannot use (a mistyped setting or lock
    name): the rest still loads, but a teacher must hear that "max_lenght" did nothing."""

    settings: Any
    name: str
    locked: set[str]
    ignored: list[str] = dataclasses.field(default_factory=list)


MAX_IGNORED_SHOWN = 6  # a notice names this many unknown keys; a file of thousands stays one line
BOMS_UTF16 = (b"\xff\xfe", b"\xfe\xff")  # Notepad's "Unicode" / "Unicode big endian"


def _decode_lesson(data: bytes | str) -> str:
    """The file's text. utf-8-sig drops the byte-order mark Windows Notepad writes before UTF-8
    (strict utf-8 refused those files); a UTF-16 file is decoded from its own mark."""
    if isinstance(data, str):
        return data.removeprefix("\ufeff")
    return data.decode("utf-16" if data[:2] in BOMS_UTF16 else "utf-8-sig")


def _did_you_mean(name: str, known: set[str]) -> str:
    """"; did you mean max_length?" for a near miss of a known name, else ""."""
    close = difflib.get_close_matches(name, sorted(known), n=1)
    return f"; did you mean {close[0]}?" if close else ""


def _unknown_names(names: Sequence[str], known: set[str], prefix: str, what: str) -> list[str]:
    """One notice per name that is not in `known`, kept short (the names come from the file)."""
    unknown = [str(n) for n in names if n not in known]
    notes = [f"{prefix}{n[:40]} (not {what} of this page{_did_you_mean(n[:40], known)})"
             for n in unknown[:MAX_IGNORED_SHOWN]]
    if len(unknown) > MAX_IGNORED_SHOWN:
        notes.append(f"and {len(unknown) - MAX_IGNORED_SHOWN} more")
    return notes


def _read_locks(raw: Any, known: set[str]) -> tuple[set[str], list[str]]:
    """The locked field names, and notices for what could not be used. A `locked` that is not a
    list locks nothing (a string is not guessed at: "stride" and "s,t,r" read alike to a loop),
    and says so: a teacher who wrote "locked": "stride" believes the control is locked."""
    if not isinstance(raw, list):
        return set(), [f"locked (it must be a list of control names, like [\"stride\"], not "
                       f"{_json_kind(raw)}; no control was locked)"]
    names = [x for x in raw if isinstance(x, str)]
    odd = [f"locked: {_shown(x)} (not a control name)" for x in raw if not isinstance(x, str)]
    return set(names) & known, _unknown_names(names, known, "lock ", "a control") + odd[:2]


def _json_kind(value: Any) -> str:
    """A JSON value's kind in a teacher's words ("text", not "str")."""
    kinds = [(bool, "true/false"), (str, "text"), (dict, "an object"), ((int, float), "a number")]
    return next((word for kind, word in kinds if isinstance(value, kind)), "null")


def _lesson_name(raw: Any) -> str:
    """The lesson's title: one line of at most 80 characters (it is shown in a notice)."""
    if not isinstance(raw, str):
        return "lesson"
    return " ".join(raw.split())[:80] or "lesson"  # line breaks would start new Markdown blocks


def from_lesson(cls: type, data: bytes | str, *, page: str) -> tuple[LoadedLesson, list[str]]:
    """Parse and validate a lesson file; raise SettingsError when nothing usable is in it.
    Returns the lesson and the notices for values that fell back to their defaults; what the file
    held that the page has no use for is listed in `LoadedLesson.ignored`."""
    if len(data) > MAX_LESSON_BYTES:
        raise SettingsError(f"the lesson file is too large ({len(data):,} bytes; "
                            f"the limit is {MAX_LESSON_BYTES:,})")
    try:
        lesson = json.loads(_decode_lesson(data))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise SettingsError("this is not a lesson file (it is not valid JSON text in UTF-8 or UTF-16)") from exc
    if not isinstance(lesson, dict) or lesson.get("format") != LESSON_FORMAT:
        raise SettingsError("this is not an Attention Lab lesson file")
    if lesson.get("version") != LESSON_VERSION:
        raise SettingsError(f"unsupported lesson version {_shown(lesson.get('version'))}")
    if lesson.get("page") != page:
        raise SettingsError(f"this lesson is for the page {str(lesson.get('page'))[:40]!r}, "
                            f"not this one ({page!r})")
    settings = lesson.get("settings")
    if not isinstance(settings, dict):
        raise SettingsError("the lesson file has no settings")
    errors: list[str] = []
    obj = _finish(cls, _apply(cls, settings, errors), errors)
    known = {f.name for f in dataclasses.fields(cls)}
    locked, lock_notes = _read_locks(lesson.get("locked", []), known)
    ignored = _unknown_names(list(settings), known, "", "a setting") + lock_notes
    return LoadedLesson(obj, _lesson_name(lesson.get("name")), locked, ignored), errors
