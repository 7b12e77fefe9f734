"""Settings <-> session state <-> URL: the one place pages keep their controls.

A page calls `settings = page_settings("walkthrough", WalkthroughSettings)` once, builds its
widgets with `bound(st.slider, "Query token", settings, "query", ...)`, and calls
`sync_url(settings)` at the end. The dataclass in `st.session_state` is the source of truth:
widget keys are seeded from it whenever Streamlit has dropped them (page switch), so values
survive navigation; a generation counter in the widget keys lets a lesson load or a reset
replace every widget value at once. The first visit reads the URL, so a shared link
reproduces what the lecturer showed; bad parameters fall back to defaults with a notice, a name
the page does not know (a misspelt setting) is named in a notice of its own, and a
combination the page blocks is never written to the URL (the last one that works stays there).

Every number box of the app is `checked_number` (a settings field: `number_field`, bounds from its
spec): typed text is checked here, never changed into another number in the browser.
`refusals_below` moves the refusals of a row of boxes under the whole row, at full width.
`keep_last_valid` keeps the last good result of a computation a user's entry can make fail.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import hashlib
import threading
import unicodedata
from typing import Any, Callable, Iterator, Sequence

import streamlit as st

from core import settings as core_settings
from core.classroom.security import escape_markdown
from ui.classroom import JOIN_PARAM

GLOBAL_PARAMS = ("lecture",)  # kept in the URL on every page
# read by the app elsewhere, not a page setting: a join link's ?class=CODE (ui.class_follow's
# LOCAL_PARAMS, less GLOBAL_PARAMS; that module imports this one, so it is not imported here)
LINK_ONLY_PARAMS = (JOIN_PARAM,)
UNKNOWN_WORDS = "The link held something this page does not know, so it was ignored: "
ENTRY_FLAG = "_entry_point_ran"  # set by streamlit_app.py on every run, before the page runs


def ensure_entry_point() -> None:
    """Make sure the page runs inside streamlit_app.py (navigation, lecture mode, threads).

    A fresh server that sees a `pages/` folder routes the very first deep link (e.g. a shared
    `/pitfalls?...` link) straight to the page file, Streamlit's old multipage mode, until some
    run calls `st.navigation`. Then we switch that mode off and rerun: the rerun goes through the
    entry point and lands on the same page, because our url paths equal the inferred ones.
    """
    if st.session_state.get(ENTRY_FLAG):
        return
    from streamlit.runtime.pages_manager import PagesManager

    PagesManager.uses_pages_directory = False
    st.rerun()


def _gen_key(prefix: str) -> str:
    return f"{prefix}.__gen"


def _locked_key(prefix: str) -> str:
    return f"{prefix}.__locked"


def page_settings(prefix: str, cls: type) -> Any:
    """The session's settings object for `prefix`, loaded from the URL on first use."""
    ensure_entry_point()
    ss = st.session_state
    if prefix not in ss:
        params = {k: v for k, v in st.query_params.to_dict().items() if k not in GLOBAL_PARAMS}
        obj, errors = core_settings.from_params(cls, params)
        ss[prefix] = obj
        ss[_gen_key(prefix)] = 0
        ss[_locked_key(prefix)] = set()
        if errors:
            ss[f"{prefix}.__notice"] = errors
        unknown = core_settings.unknown_params(cls, params, allowed=LINK_ONLY_PARAMS)
        if unknown:  # a misspelt name would otherwise open the page with the default, no word
            ss[f"{prefix}.__unknown"] = unknown
    notice = ss.pop(f"{prefix}.__notice", None)
    if notice:
        # a clash between fields names what went back to its default and says the rest was kept
        # the notices quote the link's values: shown literally, never as Markdown (an image there
        # would make the browser fetch its address)
        link_notice("Some settings in the link could not be used and were set to their defaults: "
                    + _literal("; ".join(n.rstrip(".") for n in notice[:6])) + ".")
    unknown = ss.pop(f"{prefix}.__unknown", None)
    if unknown:
        link_notice(UNKNOWN_WORDS + _literal("; ".join(unknown)) + ".")
    return ss[prefix]


# A link's notices go under the page's title on every page, whether the page reads its settings
# before drawing the title or after: `page_title` leaves a place for them (for this run only).
NOTICE_AREA = "_link_notices.area"  # this run's place under the title, once page_title drew it
NOTICES_WAITING = "_link_notices.waiting"  # notices made before the title was drawn


LAST_PAGE = "_last_page"  # session key: the page of the last run (a refusal ends with its page)


def start_page_run(page: str | None = None) -> None:
    """Called by streamlit_app.py before every page run: no place and no notice from a past run,
    and no refusal from another page (a student who comes back finds the boxes, not old errors)."""
    st.session_state.pop(NOTICE_AREA, None)
    st.session_state.pop(NOTICES_WAITING, None)
    ss = st.session_state
    # the refusals made by this run's callbacks: shown in this run whatever else changed
    fresh = ss.pop(NEW_REFUSALS, set())
    if page is not None and ss.get(LAST_PAGE, page) != page:
        _forget_refusals()
    elif _a_control_changed(ss.get(CONTROLS_SEEN, {})):  # before anything is drawn: an old
        _forget_refusals(keep=fresh)  # refusal is gone in the very run the student moved on
    ss[LAST_PAGE] = page
    ss[CONTROLS_SEEN] = {}


CONTROLS_SEEN = "_controls.seen"  # session key: {widget key: value} of the bound controls last run


def _a_control_changed(seen: dict) -> bool:
    """Whether a bound control (bound) holds another value than at the end of the last run."""
    ss = st.session_state
    return any(key in ss and ss[key] != value for key, value in seen.items())


def link_notice(text: str) -> None:
    """A warning about the link, under the page's title (see page_title)."""
    area = st.session_state.get(NOTICE_AREA)
    if area is not None:
        area.warning(text, icon=":material/warning:")
    else:
        st.session_state.setdefault(NOTICES_WAITING, []).append(text)


def page_title(title: str, **kwargs) -> None:
    """The page's title (st.title's arguments), then the link's notices under it."""
    st.title(title, **kwargs)
    area = st.session_state[NOTICE_AREA] = st.container()
    for text in st.session_state.pop(NOTICES_WAITING, []):
        area.warning(text, icon=":material/warning:")


def _literal(text: str) -> str:
    """Names from a link, shown as they are on one line: `?**x**=1` or `?[a](http://e)=1` is
    neither bold nor a link (escaped as ui.layout does lesson names), a line break is a space."""
    return escape_markdown(" ".join(text.split()))


def replace_settings(prefix: str, obj: Any, locked: set[str] | None = None) -> None:
    """Swap in a whole new settings object (reset, lesson load); widgets follow."""
    ss = st.session_state
    ss[prefix] = obj
    ss[_gen_key(prefix)] = ss.get(_gen_key(prefix), 0) + 1
    if locked is not None:
        ss[_locked_key(prefix)] = set(locked)


def locked_fields(prefix: str) -> set[str]:
    return st.session_state.get(_locked_key(prefix), set())


RENEWED = "#"  # a bound widget's key, this, then a digest of what it shows (bound's renew_with)


def renewed_key(key: str, shown: Sequence[str]) -> str:
    """`key`, then RENEWED and a digest of the texts a widget shows: a new key, so a new widget,
    whenever they change (see bound's renew_with)."""
    return key + RENEWED + hashlib.blake2s("\n".join(shown).encode(), digest_size=6).hexdigest()


def widget_key(prefix: str, field: str) -> str:
    return f"{prefix}.{st.session_state.get(_gen_key(prefix), 0)}.{field}"


_controls = threading.local()  # per script thread: one page run of one session


@contextlib.contextmanager
def controls_hidden(hidden: bool = True) -> Iterator[None]:
    """While `hidden`: `bound` and `number_field` make no widget and return the settings' value.
    For controls in a closed popover (ui.walkthrough's Settings), which the browser does not show:
    making them cost a page run ~15% of its time, in a class 54 times per lecturer move."""
    before = getattr(_controls, "hidden", False)
    _controls.hidden = hidden
    try:
        yield
    finally:
        _controls.hidden = before


def controls_are_hidden() -> bool:
    return getattr(_controls, "hidden", False)


def _skip_hidden(key: str) -> bool:
    """True when controls are hidden. The widget's key is dropped, so the control is seeded from
    the settings when it is drawn again: a value that changed meanwhile (Next, a lesson, the
    lecturer's move) is what it shows, never the one it last had."""
    if not controls_are_hidden():
        return False
    st.session_state.pop(key, None)
    return True


def bound(widget: Callable[..., Any], label: str, obj: Any, field: str, *, prefix: str,
          to_widget: Callable[[Any], Any] = lambda v: v,
          from_widget: Callable[[Any], Any] = lambda v: v, renew_with: Sequence[str] = (),
          **kwargs: Any) -> Any:
    """Create `widget` showing `obj.field`; write the widget's value back into `obj`.

    `renew_with`: texts the widget shows (a select box's option labels); when they change, the
    widget is made anew, seeded from `obj.field`. Streamlit 1.67 keeps a keyed select box's
    typed-in text when its labels change under the same value: after a new draw of names the box
    still showed a name of the last draw while the charts took apart the new one."""
    key = widget_key(prefix, field)
    if renew_with:
        key = renewed_key(key, renew_with)
    if _skip_hidden(key):
        return getattr(obj, field)
    if key not in st.session_state:
        st.session_state[key] = to_widget(getattr(obj, field))
    is_locked = field in locked_fields(prefix)
    if is_locked:
        kwargs["help"] = (kwargs.get("help", "") + " 🔒 Locked by the lesson.").strip()
        st.session_state[key] = to_widget(getattr(obj, field))  # a locked value cannot drift
    limit = kwargs.pop("max_chars", None)
    if limit is not None:  # checked here: Streamlit's own limit drops a longer paste without a word
        kwargs["help"] = f"{kwargs.get('help', '')} {LIMIT_HELP.format(limit=limit)}".strip()
        kwargs["on_change"] = _length_check(label, key, limit, lambda: to_widget(getattr(obj, field)))
    value = widget(label, key=key, disabled=is_locked or kwargs.pop("disabled", False), **kwargs)
    if limit is not None:
        _show_refusal(REFUSED.format(key=key))
    st.session_state.setdefault(CONTROLS_SEEN, {})[key] = value  # start_page_run compares
    if not is_locked:
        setattr(obj, field, from_widget(value))
    return getattr(obj, field)


LIMIT_HELP = "Up to {limit:,} characters; a longer text is refused with a message."


def _kept_words(text: str) -> str:
    """How a refusal names the text a box went back to."""
    if text == "":
        return "the box is empty again"
    if len(text) <= 40:
        return f"the box went back to “{text}”"
    return "the box went back to its last text"


def _length_check(label: str, key: str, limit: int, kept: Callable[[], str],
                  on_taken: Callable[[str], None] | None = None) -> Callable[[], None]:
    """The on_change of a text box with a length limit: a longer text is refused with a message
    and the box goes back to the text in force (`kept()`); a text that fits is passed to
    `on_taken` and ends every refusal shown, as a number box's valid value does. Streamlit's
    `max_chars` would stop typing at the limit, but it drops a longer paste whole, and the student
    saw nothing happen."""
    def check() -> None:
        text = st.session_state.get(key)
        if isinstance(text, str) and len(text) > limit:
            _refuse(key, f"{label}: {len(text):,} characters is over the limit of {limit:,}; "
                         f"{_kept_words(kept())}.")
            st.session_state[key] = kept()
        else:
            if on_taken is not None:
                on_taken(text)
            _forget_refusals()
    return check


def limited_text(label: str, *, key: str, limit: int, value: str, **kwargs: Any) -> str:
    """A keyed text box that is no settings field (a lesson's name, a challenge's title) with a
    length limit checked as `bound` checks one: a longer text is refused with a message under the
    box, and the box goes back to the last text that fitted (kept in the session), which is
    returned. `value`: the text of the first draw; a box drawn again after a while unseen (in a
    panel closed meanwhile) shows its last text again."""
    kept_key = KEPT.format(key=key)
    if key not in st.session_state:
        st.session_state[key] = st.session_state.get(kept_key, value)
    st.session_state.setdefault(kept_key, st.session_state[key])

    def take(text: str) -> None:
        st.session_state[kept_key] = text
    kwargs["help"] = f"{kwargs.get('help', '')} {LIMIT_HELP.format(limit=limit)}".strip()
    st.text_input(label, key=key,
                  on_change=_length_check(label, key, limit, lambda: st.session_state[kept_key], take), **kwargs)
    _show_refusal(REFUSED.format(key=key))
    return st.session_state[kept_key]


def format_number(value: int | float, kind: type, fmt: str | None = None) -> str:
    """How a number box shows a value: 700, 0.008, 1e-06. A float takes the field's printf
    `format` ("%g") when that text reads back as the very same float, else the shortest text
    that does, so showing a value never changes it."""
    if kind is int:
        return str(int(value))
    if fmt:
        try:
            text = fmt % value
            if float(text) == float(value):
                return text
        except (TypeError, ValueError):
            pass  # a format that is not printf, or text that is not a number: the exact text
    return repr(float(value))


NUMBER_HELP = "anything else is refused and the last value kept"  # ends every number box's help
REFUSED = "{key}.refused"  # session key of the message about the last text a box refused (number or length)
KEPT = "{key}.value"  # session key of the value a number box holds in force
NEW_REFUSALS = "_refusals.new"  # refusal keys set by callbacks since the last page run began


def _forget_refusals(keep=()) -> None:
    """Drop every box's refusal (but those in `keep`): a value was taken or a control changed, in
    that box or another, and what was refused before is history (the refused boxes show the values
    in force). A refusal stayed until its own box took a value, and five of them piled up on the
    Tokens page while the student went on with other boxes."""
    suffix = REFUSED.format(key="")
    for key in [k for k in st.session_state if isinstance(k, str) and k.endswith(suffix)]:
        if key not in keep:
            st.session_state.pop(key, None)


def _refuse(key: str, message: str) -> None:
    """Store a box's refusal (from its on_change callback), to be drawn by the run that follows."""
    refused_key = REFUSED.format(key=key)
    st.session_state[refused_key] = message
    st.session_state.setdefault(NEW_REFUSALS, set()).add(refused_key)


def checked_number(label: str, *, key: str, kind: type, rules: dict, value: int | float,
                   on_valid: Callable[[int | float], None] | None = None, help: str | None = None,
                   disabled: bool = False, **kwargs: Any) -> int | float:
    """The app's one number box: it never changes what was typed into something else.

    Streamlit's number input turns "1e30" into 1 and "abc" into the minimum in the browser, so the
    server cannot tell them from a real 1. This box is a text input checked here
    (core.settings.parse_number_text against `rules`: min, max, format): text that is not a number
    of the field's type and range is refused with an error under the box (under its row inside
    `refusals_below`), which stays until a valid value is typed in this box or another one, and
    the box goes back to the last valid value, which stays in force.
    Returns the value in force; `on_valid(value)` runs when a new value is taken.
    """
    refused_key, kept_key = REFUSED.format(key=key), KEPT.format(key=key)
    fmt = rules.get("format")
    if key not in st.session_state:  # first draw, or a value set from code: nothing refused
        st.session_state[key] = format_number(value, kind, fmt)
        st.session_state.pop(refused_key, None)

    def check() -> None:
        text = st.session_state[key]
        try:
            number = core_settings.parse_number_text(text, kind, rules)
        except core_settings.SettingsError as exc:
            kept = st.session_state.get(kept_key, value)
            _refuse(key, f"{label}: {exc}. Kept {format_number(kept, kind, fmt)}; type "
                         f"{core_settings.number_range(kind, rules)}.")
            st.session_state[key] = format_number(kept, kind, fmt)
        else:
            _forget_refusals()
            st.session_state[kept_key] = number
            st.session_state[key] = format_number(number, kind, fmt)
            if on_valid is not None:
                on_valid(number)

    words = core_settings.number_range(kind, rules)
    help_text = f"{help} " if help else ""
    st.text_input(label, key=key, on_change=check, disabled=disabled,
                  help=f"{help_text}Type {words}; {NUMBER_HELP}.",
                  **kwargs)
    _show_refusal(refused_key)
    number = number_now(key, kind, rules, value)
    st.session_state[kept_key] = number
    return number


# the refusals of the row being drawn, or None outside `refusals_below`. A context variable, not a
# module global: each session runs its script in its own thread, which has its own context
_row_refusals: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "row_refusals", default=None)


def _show_refusal(refused_key: str) -> None:
    """Draw the refusal stored under `refused_key`, if any: under its box, or, inside
    `refusals_below`, under the whole row."""
    refusal = st.session_state.get(refused_key)
    if refusal:
        pending = _row_refusals.get()
        if pending is None:
            _draw_refusal(refusal)
        else:
            pending.append(refusal)


def _draw_refusal(message: str) -> None:
    st.error(message, icon=":material/block:")


@contextlib.contextmanager
def refusals_below() -> Iterator[None]:
    """Around a row of controls (`st.columns`, a horizontal container), entered outside the row's
    own `with`: the refusals of its number boxes are drawn after the row, in the container the row
    sits in, at full width and in the order of the boxes. Under its box in a narrow column a
    refusal wrapped to many lines, and in a bottom-aligned row it pushed every neighbour down.
    Nothing is drawn when the block raises (a rerun or stop too). Nested, the inner one keeps its
    own refusals and draws them under its own row."""
    refusals: list[str] = []
    token = _row_refusals.set(refusals)
    try:
        yield
    finally:
        _row_refusals.reset(token)
    for message in refusals:
        _draw_refusal(message)


def forget_number(key: str) -> None:
    """Let a checked_number box start again from the `value` its next draw gives (its text, the
    value it kept and any refusal go), e.g. when what the box describes has changed."""
    for name in (key, REFUSED.format(key=key), KEPT.format(key=key)):
        st.session_state.pop(name, None)


def number_now(key: str, kind: type, rules: dict, fallback: int | float) -> int | float:
    """The value a number box holds: what its text reads as when that is valid, else `fallback`.
    For callbacks (a button beside the box), which may run before the box's own check."""
    try:
        return core_settings.parse_number_text(st.session_state.get(key, ""), kind, rules)
    except core_settings.SettingsError:  # text refused, or bounds that moved: keep the old value
        return st.session_state.get(KEPT.format(key=key), fallback)


def field_rules(obj: Any, field: str) -> dict:
    """The spec(...) metadata of a settings field (bounds, label, help, format ...)."""
    return dict(next(f for f in dataclasses.fields(obj) if f.name == field).metadata)


def number_field(obj: Any, field: str, *, prefix: str, label: str | None = None,
                 min_value: int | float | None = None, max_value: int | float | None = None,
                 help: str | None = None, disabled: bool = False, **kwargs: Any) -> int | float:
    """A number field of a settings dataclass in the app's number box (`checked_number`).

    Its type, label, help, bounds and format come from the field's spec(...); `min_value` /
    `max_value` narrow the bounds where they depend on the data (e.g. at most the number of
    batches). The box's key is `widget_key(prefix, field)`, as for every bound control, so links,
    lesson files and locks work the same. Returns the value in force, written into `obj`."""
    if _skip_hidden(widget_key(prefix, field)):
        return getattr(obj, field)
    rules = field_rules(obj, field)
    if min_value is not None:
        rules["min"] = min_value
    if max_value is not None:
        rules["max"] = max_value
    kind = core_settings.field_type(type(obj), field)
    help = help if help is not None else rules.get("help")
    key = widget_key(prefix, field)
    is_locked = field in locked_fields(prefix)
    if is_locked:
        st.session_state[key] = format_number(getattr(obj, field), kind, rules.get("format"))
        help = ((help or "") + " 🔒 Locked by the lesson.").strip()
    value = checked_number(label or rules.get("label", field), key=key, kind=kind, rules=rules,
                           value=getattr(obj, field), help=help, disabled=is_locked or disabled,
                           **kwargs)
    if not is_locked:
        setattr(obj, field, value)
    return getattr(obj, field)


def spec_widget(obj: Any, field: str, *, prefix: str, **overrides: Any) -> Any:
    """The widget of a settings field, built from its metadata (core.settings.spec): a toggle for
    a bool, a select box for `choices` (shown with `choice_labels`), a text input for a string
    (at most `max_len` characters), a slider with the declared bounds and step when the field says
    `widget="slider"`, and otherwise the app's number box (`number_field`), which refuses what is
    not a number in range with a message. `overrides` replace any widget argument
    (e.g. `options=` for the devices this machine has)."""
    rules = field_rules(obj, field)
    label = rules.get("label", field)
    kwargs: dict[str, Any] = {k: rules[k] for k in ("help", "step", "format") if k in rules}
    value = getattr(obj, field)
    if isinstance(value, bool):
        widget = st.checkbox if rules.get("widget") == "checkbox" else st.toggle
        kwargs.pop("step", None), kwargs.pop("format", None)
    elif "choices" in rules:
        widget = st.selectbox
        kwargs = {"options": list(rules["choices"]), **({"help": rules["help"]} if "help" in rules else {})}
        names = rules.get("choice_labels")
        if names:
            kwargs["format_func"] = lambda choice: names.get(choice, str(choice))
    elif isinstance(value, str):
        widget = st.text_input
        kwargs = {"max_chars": rules["max_len"]} if "max_len" in rules else {}
        kwargs.update({"help": rules["help"]} if "help" in rules else {})
    elif rules.get("widget") == "slider":
        widget = st.slider
        for bound_name, arg in (("min", "min_value"), ("max", "max_value")):
            if bound_name in rules:
                kwargs[arg] = rules[bound_name]
    else:
        return number_field(obj, field, prefix=prefix, **overrides)
    kwargs.update(overrides)
    return bound(widget, label, obj, field, prefix=prefix, **kwargs)


def keep_last_valid(key: str, compute: Callable[[], Any], first: Any = None) -> tuple[Any, ValueError | None]:
    """(value, problem): `compute()` and no problem; or, when it raises a ValueError (a value the
    user can fix), the value of the last call under `key` that worked (`first` before any did)
    and the error, for the caller to show. So a bad entry never loses the last good result."""
    try:
        value = compute()
    except ValueError as exc:
        return st.session_state.get(key, first), exc
    st.session_state[key] = value
    return value, None


def set_field(prefix: str, field: str, value: Any) -> None:
    """Change one field from code (e.g. a button); its widget is reseeded on the next run."""
    obj = st.session_state[prefix]
    if field in locked_fields(prefix):
        return
    setattr(obj, field, value)
    key = widget_key(prefix, field)
    for made in [k for k in st.session_state if k == key or str(k).startswith(key + RENEWED)]:
        del st.session_state[made]


def switched_on(value: Any) -> bool:
    """A switch in a link (e.g. ?lecture=): on for 1, true, yes or on, in any case or width
    (a phone keyboard may type a full-width "１"); off for anything else."""
    text = unicodedata.normalize("NFKC", str(value or "")).strip().lower()
    return text in ("1", "true", "yes", "on")


def _last_valid_key(obj: Any) -> str:
    return f"__last_valid_params.{type(obj).__module__}.{type(obj).__qualname__}"


def shareable_params(obj: Any) -> dict[str, str]:
    """The query params a link should hold for `obj`: its own, or, while its fields clash (the page
    blocks it and says why), those of the last combination this session had that worked. A
    blocked combination in the address bar would be shared or reloaded as it is, and the link
    would then open with some settings set back (core.settings._finish)."""
    key = _last_valid_key(obj)
    if core_settings.problems_of(obj):
        return dict(st.session_state.get(key, {}))
    params = core_settings.to_params(obj)
    st.session_state[key] = params
    return dict(params)


def sync_url(obj: Any) -> None:
    """Mirror the settings into the address bar, keeping global params (lecture mode). A blocked
    combination is not mirrored: the address keeps the last one that works (shareable_params)."""
    wanted = shareable_params(obj)
    current = st.query_params.to_dict()
    for key in GLOBAL_PARAMS:
        if key in current:
            wanted[key] = current[key]
    if wanted != current:
        st.query_params.clear()
        st.query_params.update(wanted)


def lecture_mode() -> bool:
    """True when the global lecture-mode switch is on."""
    return bool(st.session_state.get("lecture_mode", False))


def switch_page(page: str, query: dict[str, str] | None = None) -> None:
    """st.switch_page that keeps lecture mode on. A page switched to from inside a page run lost
    the sidebar switch's state (Streamlit 1.67), and the new page read lecture mode from its
    address, which st.switch_page empties: "Train the quick demo now" turned lecture mode off."""
    query = dict(query or {})
    if lecture_mode():
        query["lecture"] = "1"
    st.switch_page(page, query_params=query or None)


def defaults_of(cls: type) -> dict[str, Any]:
    return dataclasses.asdict(cls())
