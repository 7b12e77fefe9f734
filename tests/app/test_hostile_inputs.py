"""Hostile-input campaign across every page: URL parameters, lesson files, session isolation.

Each lesson page is opened once to discover its settings dataclass (the objects `ui.state` keeps
in session state); then every field is fed hostile values through the URL, and hostile lesson
files through the page's lesson uploader. Each must give a clear message and a working page with
valid settings: no exception, no traceback, and the current work kept.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from core import settings as cs
from core.lessons.small_lm import SmallLMSettings
from tests.app.conftest import assert_no_exception, open_page
from ui import layout, nav

pytestmark = pytest.mark.usefixtures("one_thread")

PAGES = [lesson.file for lesson in nav.available_lessons()]

HOSTILE_SCALARS = ["nan", "-inf", "1e309", "-99999999999", "99999999999", "", "[[[",
                   "<script>alert(1)</script>", "z!!notbase64", "\x00\x01", "💥" * 50,
                   "[" * 1500 + "]" * 1500]  # 3 KB, nested deeper than json's decoder recurses


def settings_objects(at) -> dict[str, object]:
    """The page's settings dataclasses found in session state, by prefix."""
    found = {}
    for key in list(at.session_state):
        if "." in key:
            continue
        value = at.session_state[key]
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            found[key] = value
    return found


def hostile_params(obj) -> list[dict[str, str]]:
    """One URL per hostile value, setting every field of `obj` to it at once."""
    names = [f.name for f in dataclasses.fields(obj)]
    cases = [{name: value for name in names} for value in HOSTILE_SCALARS]
    # two fields only: Streamlit itself drops a whole query string over 512 KiB
    cases.append({name: "x" * 70_000 for name in names[:2]})  # over our per-value cap
    cases.append({name: json.dumps([[1e308] * 70] * 70) for name in names[:2]})
    return cases


# Each page opened plainly once for the two tests below: the hostile-link test only reads which
# settings it keeps (a fresh session, unchanged), and the lesson-file test then goes on in it. Run
# alone, a test opens its own.
_FRESH_PAGES: dict[str, object] = {}


def fresh_page(page: str):
    """The page opened with no link, for a test that only reads it: kept for `take_page`."""
    if page not in _FRESH_PAGES:
        _FRESH_PAGES[page] = open_page(page)
    return _FRESH_PAGES[page]


def take_page(page: str):
    """A plain session of the page that no test has changed (the one `fresh_page` read, else new)."""
    kept = _FRESH_PAGES.pop(page, None)
    return kept if kept is not None else open_page(page)


@pytest.mark.parametrize("page", PAGES)
def test_hostile_url_params_fall_back_to_defaults_with_a_notice(page):
    at = fresh_page(page)
    assert_no_exception(at)
    objects = settings_objects(at)
    assert objects, f"{page} keeps no settings dataclass in session state"
    for prefix, obj in objects.items():
        cases = hostile_params(obj)
        for params in cases[:-2:3] + cases[-2:]:  # a spread of cases keeps the run time sane
            hostile = open_page(page, query=params)
            assert_no_exception(hostile)
            state = hostile.session_state[prefix]
            problems = state.problems() if hasattr(state, "problems") else []
            assert problems == [], (page, problems)
            assert hostile.warning, f"{page}: hostile link {list(params.values())[0][:20]!r} got no notice"


def lesson_uploader(at, prefix):
    for uploader in at.file_uploader:
        if uploader.key == f"{prefix}.lesson_file":
            return uploader
    return None


HOSTILE_LESSONS = [
    ("binary.json", b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4),
    ("latin1.json", "{\"name\": \"caf\xe9\"}".encode("latin-1")),
    ("nested.json", b"[" * 50_000 + b"]" * 50_000),
    ("huge.json", b" " * (cs.MAX_LESSON_BYTES + 10)),
    ("foreign.json", json.dumps({"format": "something-else", "settings": {}}).encode()),
]


@pytest.mark.parametrize("page", PAGES)
def test_hostile_lesson_files_are_refused_and_settings_kept(page):
    at = take_page(page)
    tested = 0
    for prefix, obj in settings_objects(at).items():
        at.session_state[layout.panel_key(prefix)] = True  # open "Lesson presets": its controls exist then
        at.run()
        uploader = lesson_uploader(at, prefix)
        if uploader is None:
            continue
        tested += 1
        before = dataclasses.asdict(obj)
        for name, data in HOSTILE_LESSONS:
            lesson_uploader(at, prefix).upload(name, data, "application/json").run()
            assert_no_exception(at)
            assert at.error, f"{page}: {name} was not refused with a message"
            assert dataclasses.asdict(at.session_state[prefix]) == before
    assert tested, f"{page} offers no lesson uploader"


def test_sessions_do_not_share_state():
    """Two sessions of the same page: what one changes, the other never sees."""
    page = PAGES[0]
    first, second = open_page(page), open_page(page)
    prefix = next(iter(settings_objects(first)))
    obj = first.session_state[prefix]
    field = next(f for f in dataclasses.fields(obj) if f.type in (int, "int"))
    changed = getattr(obj, field.name) + 1
    setattr(first.session_state[prefix], field.name, changed)
    # a new widget generation makes the widgets take the changed value (as a lesson load does)
    first.session_state[f"{prefix}.__gen"] = first.session_state[f"{prefix}.__gen"] + 1
    first.run()
    second.run()
    assert getattr(first.session_state[prefix], field.name) == changed
    assert getattr(second.session_state[prefix], field.name) == getattr(type(obj)(), field.name)


LESSON_PAGE_IDS = {"pages/5_tokens_data.py": "tokens-data", "pages/6_small_lm.py": "small-lm",
                   "pages/7_train_gpt.py": "train", "pages/10_pitfalls.py": "pitfalls",
                   "pages/1_simple_attention.py": "simple_attention"}


def _changed_lesson(obj, page_id: str) -> tuple[str, int, str]:
    """A valid lesson file that differs from `obj` in one integer field: (field, value, file)."""
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if type(value) is not int:
            continue
        for new in (value + 1, value - 1):
            changed = dataclasses.replace(obj, **{f.name: new})
            data = cs.to_lesson(changed, name="t", page=page_id)
            lesson, errors = cs.from_lesson(type(obj), data, page=page_id)
            problems = lesson.settings.problems() if hasattr(lesson.settings, "problems") else []
            if not errors and not problems and getattr(lesson.settings, f.name) == new:
                return f.name, new, data
    raise AssertionError(f"no integer field of {type(obj).__name__} can be changed")


@pytest.mark.parametrize("page, page_id", sorted(LESSON_PAGE_IDS.items()))
def test_a_loaded_lesson_takes_effect_and_stays(page, page_id):
    """Unlocked fields of a lesson must reach the page, not be overwritten by the old widgets."""
    at = open_page(page)
    for prefix in settings_objects(at):  # open "Lesson presets": its uploader exists then
        at.session_state[layout.panel_key(prefix)] = True
    at.run()
    (prefix, obj), = [(p, o) for p, o in settings_objects(at).items() if lesson_uploader(at, p)]
    field, value, data = _changed_lesson(obj, page_id)
    lesson_uploader(at, prefix).upload("lesson.json", data.encode(), "application/json").run()
    assert_no_exception(at)
    at.run()  # the next rerun must keep the lesson's value
    assert_no_exception(at)
    assert getattr(at.session_state[prefix], field) == value, (page, field)


# ---------------------------------------------------------------- what a lesson file cannot use
SMALL_LM = "pages/6_small_lm.py"


def _upload_small_lm_lesson(data: bytes):
    """The Small LM page with "Lesson presets" open and `data` uploaded as a lesson file."""
    at = open_page(SMALL_LM)
    at.session_state[layout.panel_key("small_lm")] = True
    at.run()
    lesson_uploader(at, "small_lm").upload("lesson.json", data, "application/json").run()
    assert_no_exception(at)
    return at


def _small_lm_lesson(settings: dict, **extra) -> bytes:
    return json.dumps({"format": cs.LESSON_FORMAT, "version": cs.LESSON_VERSION, "page": "small-lm",
                       "settings": settings, **extra}).encode()


def test_unknown_settings_and_locks_of_a_lesson_are_named():
    at = _upload_small_lm_lesson(_small_lm_lesson({"temprature": 2.0, "seed": 7},
                                                  locked=["seed", "temprature"]))
    assert at.session_state["small_lm"].seed == 7  # what it can, the lesson still sets
    assert at.session_state["small_lm.__locked"] == {"seed"}
    notice = " ".join(w.value for w in at.warning)
    assert "temprature \\(not a setting of this page; did you mean temperature?\\)" in notice
    assert "lock temprature \\(not a control of this page; did you mean temperature?\\)" in notice
    assert at.success  # loaded, with the notice beside it


def test_a_locked_that_is_not_a_list_is_reported_on_the_page():
    at = _upload_small_lm_lesson(_small_lm_lesson({"seed": 7}, locked="seed"))
    assert at.session_state["small_lm.__locked"] == set()
    assert "no control was locked" in " ".join(w.value for w in at.warning)


def test_a_lesson_saved_by_notepad_with_a_byte_order_mark_loads():
    lesson = cs.to_lesson(SmallLMSettings(seed=7), name="bom", page="small-lm")
    for data in (lesson.encode("utf-8-sig"), lesson.encode("utf-16")):
        at = _upload_small_lm_lesson(data)
        assert not at.error, [e.value for e in at.error]
        assert at.session_state["small_lm"].seed == 7 and at.success


def test_a_lesson_name_is_shown_as_plain_text():
    name = "**bold** :red[x] ![i](http://example.com/a.png) <img src=x>"
    at = _upload_small_lm_lesson(_small_lm_lesson({"seed": 7}, name=name))
    shown = at.success[0].value
    assert "\\*\\*bold\\*\\*" in shown and "\\:red\\[x\\]" in shown  # every marker escaped
    assert "![" not in shown and "](" not in shown and "<img" not in shown


def test_a_refused_lesson_is_quoted_as_plain_text():
    data = json.dumps({"format": cs.LESSON_FORMAT, "version": cs.LESSON_VERSION,
                       "page": "![i](http://example.com/a.png)", "settings": {}}).encode()
    at = _upload_small_lm_lesson(data)
    assert at.error and "](" not in at.error[0].value
