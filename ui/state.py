"""Settings <-> session state <-> URL: the one place pages keep their controls.

A page calls `settings = page_settings("walkthrough", WalkthroughSettings)` once, builds its
widgets with `bound(st.slider, "Query token", settings, "query", ...)`, and calls
`sync_url(settings)` at the end. The dataclass in `st.session_state` is the source of truth:
widget keys are seeded from it whenever Streamlit has dropped them (page switch), so values
survive navigation; a generation counter in the widget keys lets a lesson load or a reset
replace every widget value at once. The first visit reads the URL, so a shared link
reproduces what the lecturer showed; bad parameters fall back to defaults with a notice.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import streamlit as st

from core import settings as core_settings

GLOBAL_PARAMS = ("lecture",)  # kept in the URL on every page
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
    notice = ss.pop(f"{prefix}.__notice", None)
    if notice:
        st.warning("Some settings in the link could not be used and were set to their defaults: "
                   + "; ".join(notice[:6]), icon=":material/warning:")
    return ss[prefix]


def replace_settings(prefix: str, obj: Any, locked: set[str] | None = None) -> None:
    """Swap in a whole new settings object (reset, lesson load); widgets follow."""
    ss = st.session_state
    ss[prefix] = obj
    ss[_gen_key(prefix)] = ss.get(_gen_key(prefix), 0) + 1
    if locked is not None:
        ss[_locked_key(prefix)] = set(locked)


def locked_fields(prefix: str) -> set[str]:
    return st.session_state.get(_locked_key(prefix), set())


def widget_key(prefix: str, field: str) -> str:
    return f"{prefix}.{st.session_state.get(_gen_key(prefix), 0)}.{field}"


def bound(widget: Callable[..., Any], label: str, obj: Any, field: str, *, prefix: str,
          to_widget: Callable[[Any], Any] = lambda v: v,
          from_widget: Callable[[Any], Any] = lambda v: v, **kwargs: Any) -> Any:
    """Create `widget` showing `obj.field`; write the widget's value back into `obj`."""
    key = widget_key(prefix, field)
    if key not in st.session_state:
        st.session_state[key] = to_widget(getattr(obj, field))
    is_locked = field in locked_fields(prefix)
    if is_locked:
        kwargs["help"] = (kwargs.get("help", "") + " 🔒 Locked by the lesson.").strip()
        st.session_state[key] = to_widget(getattr(obj, field))  # a locked value cannot drift
    value = widget(label, key=key, disabled=is_locked or kwargs.pop("disabled", False), **kwargs)
    if not is_locked:
        setattr(obj, field, from_widget(value))
    return getattr(obj, field)


def format_number(value: int | float, kind: type) -> str:
    """How a number box shows a value: 700, 0.008, 1e-06 (the shortest text that reads back as the
    very same float, so showing a value never changes it)."""
    return str(int(value)) if kind is int else repr(float(value))


REFUSED = "{key}.refused"  # session key of the message about the last text a number box refused


def checked_number(label: str, *, key: str, kind: type, rules: dict, value: int | float,
                   on_valid: Callable[[int | float], None] | None = None, help: str | None = None,
                   disabled: bool = False, **kwargs: Any) -> int | float:
    """A number box that never changes what was typed into something else.

    Streamlit's number input turns "1e30" into 1 and "abc" into the minimum in the browser, so the
    server cannot tell them from a real 1. This box is a text input checked here
    (core.settings.parse_number_text): text that is not a number of the field's type and range is
    refused with a message under the box, and the box goes back to the last valid value, which
    stays in force. Returns the value in force; `on_valid(value)` runs when a new value is taken.
    """
    refused_key = REFUSED.format(key=key)
    if key not in st.session_state:
        st.session_state[key] = format_number(value, kind)

    def check() -> None:
        text = st.session_state[key]
        try:
            number = core_settings.parse_number_text(text, kind, rules)
        except core_settings.SettingsError as exc:
            kept = st.session_state.get(f"{key}.value", value)
            st.session_state[refused_key] = (
                f"{label}: {exc}. Kept {format_number(kept, kind)}; type "
                f"{core_settings.number_range(kind, rules)}.")
            st.session_state[key] = format_number(kept, kind)
        else:
            st.session_state.pop(refused_key, None)
            st.session_state[f"{key}.value"] = number
            st.session_state[key] = format_number(number, kind)
            if on_valid is not None:
                on_valid(number)

    words = core_settings.number_range(kind, rules)
    help_text = f"{help} " if help else ""
    st.text_input(label, key=key, on_change=check, disabled=disabled,
                  help=f"{help_text}Type {words}; anything else is refused and the last value kept.",
                  **kwargs)
    if st.session_state.get(refused_key):
        st.error(st.session_state[refused_key], icon=":material/block:")
    try:
        number = core_settings.parse_number_text(st.session_state[key], kind, rules)
    except core_settings.SettingsError:  # a value set from code that does not fit: keep the old one
        number = value
    st.session_state[f"{key}.value"] = number
    return number


def spec_widget(obj: Any, field: str, *, prefix: str, typed: bool = False, **overrides: Any) -> Any:
    """The widget of a settings field, built from its metadata (core.settings.spec): a toggle for
    a bool, a select box for `choices` (shown with `choice_labels`), a text input for a string
    (at most `max_len` characters), a slider or a number input with the declared bounds, step
    and format. `overrides` replace any widget argument
    (e.g. `options=` for the devices this machine has). `typed=True` makes a number field a
    `checked_number` box (refuses what is not a number in range, with a message) instead of
    Streamlit's number input (which silently turns "1e30" into 1)."""
    rules = next(f for f in dataclasses.fields(obj) if f.name == field).metadata
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
    elif typed and rules.get("widget") != "slider":
        return _checked_field(obj, field, prefix=prefix, rules=rules, label=label,
                              help=rules.get("help"), **overrides)
    else:
        widget = st.slider if rules.get("widget") == "slider" else st.number_input
        for bound_name, arg in (("min", "min_value"), ("max", "max_value")):
            if bound_name in rules:
                kwargs[arg] = rules[bound_name]
    kwargs.update(overrides)
    return bound(widget, label, obj, field, prefix=prefix, **kwargs)


def _checked_field(obj: Any, field: str, *, prefix: str, rules: Any, label: str,
                   help: str | None = None, **kwargs: Any) -> Any:
    """A settings field in a `checked_number` box (see spec_widget's `typed`)."""
    kind = core_settings.field_type(type(obj), field)
    is_locked = field in locked_fields(prefix)
    key = widget_key(prefix, field)
    if is_locked:
        st.session_state[key] = format_number(getattr(obj, field), kind)  # a locked value cannot drift
        help = ((help or "") + " 🔒 Locked by the lesson.").strip()
    value = checked_number(label, key=key, kind=kind, rules=dict(rules), value=getattr(obj, field),
                           help=help, disabled=is_locked or kwargs.pop("disabled", False), **kwargs)
    if not is_locked:
        setattr(obj, field, value)
    return getattr(obj, field)


def set_field(prefix: str, field: str, value: Any) -> None:
    """Change one field from code (e.g. a button); its widget is reseeded on the next run."""
    obj = st.session_state[prefix]
    if field in locked_fields(prefix):
        return
    setattr(obj, field, value)
    st.session_state.pop(widget_key(prefix, field), None)


def sync_url(obj: Any) -> None:
    """Mirror the settings into the address bar, keeping global params (lecture mode)."""
    wanted = core_settings.to_params(obj)
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


def defaults_of(cls: type) -> dict[str, Any]:
    return dataclasses.asdict(cls())
