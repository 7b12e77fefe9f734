"""core/train_settings.py and core.settings.derive_settings: the Train page's settings are derived
from the config dataclasses' field metadata, so a hyper-parameter is declared once."""

import dataclasses

import pytest

from core import settings as core_settings, train_settings
from core.training import PRESETS, TrainConfig, learning_rate
from core.models import GPTConfig
from core.settings import spec


def shown_fields():
    return [(source, f) for source in (GPTConfig, TrainConfig) for f in dataclasses.fields(source)
            if f.name != "model" and "internal" not in f.metadata]


def test_every_config_field_is_declared_for_the_page():
    for source, f in shown_fields():
        rules, kind = f.metadata, core_settings.field_type(source, f.name)
        assert rules.get("label"), f"{source.__name__}.{f.name} needs a label"
        if kind in (int, float) and "choices" not in rules:
            assert {"min", "max", "step"} <= set(rules), f"{f.name} needs min, max and step"
            assert rules["min"] < rules["max"]
            default = core_settings.to_page_value(rules, f.default)
            assert rules["min"] <= default <= rules["max"], f.name
        if "choices" in rules:
            assert f.default in rules["choices"]
        assert rules.get("group") in train_settings.GROUPS, f.name
    assert [f.name for _, f in shown_fields()] == list(train_settings.TRAINING_FIELDS)


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_fits_the_declared_bounds_and_survives_a_link(name):
    settings = train_settings.preset_settings(name)
    back, errors = core_settings.from_params(train_settings.TrainSettings, core_settings.to_params(settings))
    assert back == settings and not errors
    assert train_settings.to_train_config(back) == PRESETS[name]()


def test_a_link_with_heads_that_do_not_divide_the_width_keeps_every_other_field():
    # ?n_head=3&d_embed=16 is blocked on the page; opening it must not cost the link's other fields
    link = {"n_head": "3", "d_embed": "16", "lr": "0.004", "n_layer": "1", "optimizer": "sgd"}
    settings, errors = core_settings.from_params(train_settings.TrainSettings, link)
    default = train_settings.TrainSettings()
    assert (settings.d_embed, settings.lr, settings.n_layer, settings.optimizer) == (16, 0.004, 1, "sgd")
    assert settings.n_head == default.n_head and not train_settings.settings_problems(settings)
    assert "divisible" in errors[0]
    assert errors[-1] == (f"so n_head went back from 3 to its default ({default.n_head}); "
                          "every other setting was kept")


def test_two_clashes_in_one_link_set_back_one_field_each():
    link = {"n_head": "3", "d_embed": "16", "pack_length": "4", "seed": "5"}
    settings, errors = core_settings.from_params(train_settings.TrainSettings, link)
    default = train_settings.TrainSettings()
    assert (settings.d_embed, settings.seed) == (16, 5)
    assert (settings.n_head, settings.pack_length) == (default.n_head, default.pack_length)
    assert "n_head went back from 3" in errors[-1] and "pack_length from 4" in errors[-1]


def test_none_values_have_a_page_value_and_come_back():
    config = dataclasses.replace(PRESETS["lecture"](), grad_clip=None, pack_length=None, val_batches=None)
    settings = train_settings.settings_from_config(config)
    assert (settings.grad_clip, settings.pack_length, settings.val_batches) == (0.0, 0, 0)
    assert train_settings.to_train_config(settings) == config
    config = dataclasses.replace(config, val_batches=3, grad_clip=2.5, device="cuda:1")
    settings = train_settings.settings_from_config(config)
    assert (settings.val_batches, settings.grad_clip, settings.device) == (3, 2.5, "cuda")


def test_a_new_config_field_reaches_the_page_settings_without_another_declaration():
    """What adding a hyper-parameter takes: one field with spec(...) in its config."""

    @dataclasses.dataclass
    class NewTrainConfig(TrainConfig):
        # read the loss from the device every this many steps (a GPU saves a sync per step)
        loss_every: int = spec(1, min=1, max=100, step=1, group="more", label="Read the loss every (steps)",
                               short="loss every {}")

    values = train_settings.page_values(PRESETS["quick_demo"](), train_settings.config_fields())
    derived = core_settings.derive_settings("Derived", (GPTConfig, NewTrainConfig),
                                            defaults={**values, "loss_every": 1})
    field = next(f for f in dataclasses.fields(derived) if f.name == "loss_every")
    assert field.default == 1 and field.metadata["max"] == 100
    obj, errors = core_settings.from_params(derived, {"loss_every": "8", "lr": "0.01"})
    assert (obj.loss_every, obj.lr) == (8, 0.01) and not errors
    obj, errors = core_settings.from_params(derived, {"loss_every": "1000"})
    assert obj.loss_every == 1 and "loss_every must be at most 100" in errors[0]
    assert core_settings.describe(field.metadata, 8) == "loss every 8"


def test_derived_fields_need_a_default_and_unknown_spec_keys_are_refused():
    with pytest.raises(TypeError, match="no default"):
        core_settings.derive_settings("Broken", (GPTConfig,), defaults={})
    with pytest.raises(TypeError, match="unknown spec keys"):
        spec(1, minimum=0)


def test_run_labels_read_the_fields_wording():
    rules = train_settings.widget_spec
    assert core_settings.describe(rules("optimizer"), "sgd") == "SGD"
    assert core_settings.describe(rules("causal"), False) == "mask off"
    assert core_settings.describe(rules("grad_clip"), 0.0) == "no clip"
    assert core_settings.describe(rules("grad_clip"), 1.5) == "clip 1.5"
    assert core_settings.describe(rules("max_steps"), 4400) == "4,400 steps"


def test_lesson_files_carry_every_derived_field_and_its_rules():
    settings = dataclasses.replace(train_settings.preset_settings("best"), bias=False, val_batches=4)
    text = core_settings.to_lesson(settings, name="deeper", page="train", locked={"n_layer", "bias"})
    lesson, errors = core_settings.from_lesson(train_settings.TrainSettings, text, page="train")
    assert lesson.settings == settings and lesson.locked == {"n_layer", "bias"} and not errors
    bad = text.replace(f'"n_layer": {settings.n_layer}', '"n_layer": 99')
    assert bad != text
    lesson, errors = core_settings.from_lesson(train_settings.TrainSettings, bad, page="train")
    assert lesson.settings.n_layer == train_settings.TrainSettings().n_layer
    assert any("n_layer must be at most 8" in e for e in errors)


@pytest.mark.parametrize("warmup, steps, cautioned", [(300, 200, True), (200, 200, False), (0, 200, False)])
def test_a_warm_up_longer_than_the_run_is_cautioned_with_the_rate_it_ends_at(warmup, steps, cautioned):
    settings = train_settings.TrainSettings(warmup_steps=warmup, max_steps=steps, lr=0.003)
    cautions = train_settings.settings_cautions(settings)
    assert bool(cautions) is cautioned
    if cautioned:  # the last step (index steps - 1) has lr * steps / warmup: core.training.learning_rate
        config = train_settings.to_train_config(settings)
        assert f"ends at {learning_rate(config, steps - 1):.3g}" in cautions[0]
