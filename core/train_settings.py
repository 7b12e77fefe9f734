"""The Train page's settings, derived from the configs: one field per hyper-parameter, declared once.

Every field of `core.models.GPTConfig` and `core.training.TrainConfig` carries its bounds, choices,
label and format (`core.settings.spec`). `TrainSettings` is built from those fields (flat, so a link
reads `?n_layer=2&lr=0.004`), starts on the quick-demo preset, and converts to and from a
`TrainConfig` field by field. So a new hyper-parameter is one declaration in its config: it appears
on the Train page, in links, in lesson files and in run labels by itself.

Rules that span fields (heads divide d_embed; packing and the mask) live in `settings_problems` and
`to_train_config`.
"""

from __future__ import annotations

import dataclasses
import functools

from core import budget
from core import settings as core_settings
from core.training import GPU_PRESETS, PRESETS, TrainConfig, preset_config
from core.models import GPTConfig
from core.settings import spec

SOURCES = (GPTConfig, TrainConfig)  # the configs whose fields the Train page shows
PRESET_TITLES = {"lecture": "Lecture 7", "quick_demo": "quick demo", "better": "better", "best": "best",
                 "class_demo": "class demo", "gpu": "GPU"}
PAGE_ONLY = ("overlay",)  # page fields that are not hyper-parameters


def _shown_fields() -> dict[str, tuple[type, dataclasses.Field]]:
    """name -> (the config class holding it, its field) for every config field the page shows:
    all but the nested model config (its own fields are listed) and those marked `internal`."""
    return {f.name: (source, f) for source in SOURCES for f in dataclasses.fields(source)
            if "internal" not in f.metadata and f.name != "model"}


CONFIG_FIELDS = _shown_fields()


def config_fields() -> dict[str, tuple[type, dataclasses.Field]]:
    """See _shown_fields (a copy, safe to change)."""
    return dict(CONFIG_FIELDS)


def page_values(config: TrainConfig, fields: dict | None = None) -> dict:
    """The page's values of a TrainConfig (a preset, an uploaded checkpoint): flat, None -> none_is."""
    values = {}
    for name, (source, f) in (fields or CONFIG_FIELDS).items():
        value = getattr(config.model if source is GPTConfig else config, name)
        value = core_settings.to_page_value(f.metadata, value)
        choices = f.metadata.get("choices")
        if choices is not None and value not in choices and isinstance(value, str):
            value = value.partition(":")[0]  # "cuda:1" -> "cuda"
        if isinstance(value, int) and not isinstance(value, bool) \
                and core_settings.field_type(source, name) is float:
            value = float(value)  # a config may hold lr=1; the page's number input holds floats
        values[name] = value
    return values


def settings_problems(settings) -> list[str]:
    """Cross-field rules of the Train page, in words for the student (empty when it can run)."""
    problems = []
    if 0 < settings.pack_length < settings.context_size:
        problems.append(f"packed rows ({settings.pack_length} tokens) must hold at least one window "
                        f"of the context ({settings.context_size}); use 0 to switch packing off.")
    if settings.n_head > 0 and settings.d_embed % settings.n_head != 0:
        problems.append(f"d_embed ({settings.d_embed}) must be divisible by the number of heads "
                        f"({settings.n_head}): each head gets d_embed / heads dimensions.")
    return problems


def settings_cautions(settings) -> list[str]:
    """Settings that run but probably not as the student meant (a warning, never a block)."""
    cautions = []
    if settings.warmup_steps > settings.max_steps > 0:
        peak = settings.lr * settings.max_steps / settings.warmup_steps  # the last step's rate
        cautions.append(f"The warm-up ({settings.warmup_steps:,} steps) is longer than the run "
                        f"({settings.max_steps:,} steps): the learning rate climbs the whole run and "
                        f"ends at {peak:.3g} instead of reaching lr {settings.lr:g}. Use fewer warm-up "
                        "steps or more steps.")
    return cautions


TrainSettings = core_settings.derive_settings(
    "TrainSettings", SOURCES,
    defaults=page_values(PRESETS["quick_demo"]()),  # the page opens on the quick-demo preset
    extra=[("overlay", bool, spec(True, widget="checkbox",
                                  label="Show the session's earlier runs on the same chart"))],
    module=__name__,
    namespace={"__doc__": "Controls of the Train page: every displayed field of GPTConfig and "
                          "TrainConfig (see core.train_settings), plus the chart's overlay switch.",
               "problems": settings_problems})
TRAINING_FIELDS = tuple(f.name for f in dataclasses.fields(TrainSettings) if f.name not in PAGE_ONLY)


def settings_from_config(config: TrainConfig) -> TrainSettings:
    """The page's settings for a TrainConfig (a preset, an uploaded checkpoint)."""
    return TrainSettings(**page_values(config))


def packing(settings: TrainSettings) -> int | None:
    """Rows of packed names, or None. Packing keeps each name from seeing the others through the
    causal mask, so a mask-off run ("break it") trains one window per row instead."""
    if settings.pack_length <= 0 or not settings.causal:
        return None
    return max(settings.pack_length, settings.context_size)


def to_train_config(settings: TrainSettings, vocab_size: int = 27) -> TrainConfig:
    """The TrainConfig for the page's settings; ValueError with a readable message."""
    problems = settings_problems(settings)
    if problems:
        raise ValueError(" ".join(problems))
    values: dict[type, dict] = {GPTConfig: {"vocab_size": vocab_size}, TrainConfig: {}}
    for name, (source, f) in CONFIG_FIELDS.items():
        values[source][name] = core_settings.from_page_value(f.metadata, getattr(settings, name))
    values[TrainConfig]["pack_length"] = packing(settings)
    return TrainConfig(model=GPTConfig(**values[GPTConfig]), **values[TrainConfig])


def preset_settings(name: str, device: str | None = None) -> TrainSettings:
    """Settings of a named preset ("lecture", "quick_demo", "best", "gpu"). With a `device`, the
    preset for a run there (core.training.preset_config): on a CUDA GPU the quick demo and the best
    preset take their GPU versions (many more packed rows per step)."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}: choose one of {', '.join(PRESETS)}")
    config = PRESETS[name]() if device is None else preset_config(name, device)
    return settings_from_config(config)


def matching_preset(settings: TrainSettings) -> str | None:
    """The preset these settings equal (device and chart options aside), or None; the GPU version
    of a preset counts as that preset."""
    values = tuple(getattr(settings, f) for f in _COMPARED_FIELDS)
    for name, preset_values in _preset_values():
        if values == preset_values:
            return name
    return None


_COMPARED_FIELDS = tuple(f for f in TRAINING_FIELDS if f != "device")


@functools.lru_cache(maxsize=1)
def _preset_values() -> tuple[tuple[str, tuple], ...]:
    """(preset name, its compared field values) for every preset and GPU version, in order: the
    presets are fixed, and the Train page asks on every rerun."""
    found = []
    for name in PRESETS:
        for make in [PRESETS[name]] + ([GPU_PRESETS[name]] if name in GPU_PRESETS else []):
            preset = settings_from_config(make())
            found.append((name, tuple(getattr(preset, f) for f in _COMPARED_FIELDS)))
    return tuple(found)


# Wall-clock seconds from Start to the last step: what the preset buttons say (measured with
# benchmarks/presets.py --browser, benchmarks/train_speed.py and benchmarks/gpu_train.py; the runs
# are described in docs/PRESETS.md). A preset with no figure for a device gets no time in its label.
BROWSER_2_CORES = ("in Chromium against the app on a quiet 2-core machine, with the app's 1 torch thread "
                   "(half the cores), the page's redraws and validations included")
PRESET_SECONDS: dict[tuple[str, str], tuple[float, str]] = {
    ("lecture", "cpu"): (30.5, "in the browser on a busy 2-core server (load 5-10; about half that "
                               "on a quiet one)"),
    ("quick_demo", "cpu"): (39.1, BROWSER_2_CORES),
    ("better", "cpu"): (79.4, BROWSER_2_CORES),
    ("best", "cpu"): (304.8, BROWSER_2_CORES),
    # shown only on a hosted server: measured on one, with nobody else on it (2026-11-28; the
    # quick demo there: 134.8 s)
    ("class_demo", "cpu"): (18.5, "in Chromium against the app run as a class's server "
                                  "(ATTENTION_LAB_HOSTED=1) with nobody else on it"),
    ("best", "cuda"): (3.6, "on one H100 (the GPU version of the preset)"),
    ("gpu", "cuda"): (16.4, "on one H200, headless (3,000 steps of 256 rows since 2026-11-27; the live "
                            "page trains at ~0.89 of that speed)"),
}


def preset_seconds(name: str, device: str) -> tuple[float, str] | None:
    """(measured seconds, where) of preset `name` for a run on `device` ("auto" resolves here)."""
    from core.device import resolve_device

    kind = resolve_device(device)[0].type
    return PRESET_SECONDS.get((name, kind))  # nothing measured on MPS: no figure rather than a guess


def preset_size_problems(name: str, device: str, limits: budget.Limits | None = None) -> list[str]:
    """Why preset `name`, for a run on `device`, is too large for this server (core.budget's caps,
    which a hosted class sets low); empty when it fits. The Train page greys such a preset's button
    out and says why, instead of loading settings that Start would then refuse."""
    config = preset_config(name, device)
    return budget.check_run_size(config.model.num_params(), config.max_steps, limits, advice=False)


def widget_spec(name: str) -> dict:
    """The metadata of one Train page field (bounds, choices, label, ...)."""
    return dict(next(f for f in dataclasses.fields(TrainSettings) if f.name == name).metadata)


GROUPS = ("model", "training", "fine print", "more")  # the parts of the Train page's settings


def fields_in(group: str) -> list[str]:
    """The Train page's hyper-parameters shown in `group` (one of GROUPS), in declaration order;
    a field with no group (or an unknown one) goes to "more", so every field is shown somewhere."""
    def group_of(f: dataclasses.Field) -> str:
        return f.metadata.get("group") if f.metadata.get("group") in GROUPS else "more"

    return [f.name for f in dataclasses.fields(TrainSettings)
            if f.name in TRAINING_FIELDS and group_of(f) == group]
