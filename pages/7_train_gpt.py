"""Train the names GPT (lecture 7) live: settings and presets, controls, the live loss curve,
sampled names at each validation point, runs overlaid, "break it", checkpoints."""

import streamlit as st

from core import budget, runs, train_settings
from core.device import available_devices
from core.engine import Trainer
from ui import training
from ui.code import show_code
from ui.layout import friendly_errors, lesson_panel
from ui.state import page_settings, replace_settings, spec_widget, sync_url, widget_key

PREFIX = "train"
PRESET_BUTTONS = [
    ("lecture", "Lecture 7", "The document's values: SGD at lr 0.01, batch 32, 1,000 steps, dropout 0.1 "
                             "(converges slowly, about 2.4 nats/char)."),
    ("quick_demo", "Quick demo (~30 s)", "AdamW with warm-up and cosine decay: a good model in about "
                                         "30 s on a laptop CPU (validation ≈ 2.1 nats/char)."),
    ("best", "Best (a few minutes)", "Wider, deeper, longer context: about 1.9 nats/char in a few "
                                     "minutes on 2 CPU cores."),
]
if available_devices()["cuda"][0]:  # offered only where it can run: on a CPU it would crawl
    PRESET_BUTTONS.append(("gpu", "GPU (~10 s)", "A larger model with big packed batches, bf16 and "
                                                 "CUDA graphs: about 1.89 nats/char in ~8 s on an H100."))

st.title("Train the names GPT")
st.markdown(
    "Lecture 7's character-level GPT learns to write first names from 32,033 real ones. Each "
    "optimisation step shows it a batch of name windows and nudges the weights to make the next "
    "character more likely. Watch the loss fall: **3.30 nats** (ln 27) is a uniform guess over "
    "27 characters; a good model reaches about **2.1**, the best here about **1.9**.")

settings = page_settings(PREFIX, train_settings.TrainSettings)
settings = lesson_panel(PREFIX, train_settings.TrainSettings, "train", settings)
book = training.runbook()

# ------------------------------------------------------------------ presets
st.subheader("Settings")
preset_cols = st.columns(len(PRESET_BUTTONS) + 1)
for col, (name, title, help_text) in zip(preset_cols, PRESET_BUTTONS):
    if col.button(title, key=f"{PREFIX}.preset.{name}", help=help_text, width="stretch"):
        chosen = train_settings.preset_settings(name)
        chosen.device, chosen.overlay = settings.device, settings.overlay
        replace_settings(PREFIX, chosen)
        settings = st.session_state[PREFIX]
preset_label = preset_cols[-1].empty()  # filled once the widgets below have written their values

# ------------------------------------------------------------------ device (clamped before its widget)
offered, absent = runs.device_options()
if settings.device not in offered:
    st.session_state[f"{PREFIX}.device_notice"] = runs.device_notice(settings.device)
    settings.device = "auto"
    st.session_state.pop(widget_key(PREFIX, "device"), None)


def _clear_device_notice() -> None:
    st.session_state.pop(f"{PREFIX}.device_notice", None)


def _setting(name: str, **overrides) -> None:
    """One control, built from the metadata of its config field (label, bounds, choices)."""
    spec_widget(settings, name, prefix=PREFIX, **overrides)


model_col, train_col, device_col = st.columns(3)
with model_col:
    st.markdown("**Model**")
    for name in train_settings.fields_in("model"):
        _setting(name)
with train_col:
    st.markdown("**Training**")
    for name in train_settings.fields_in("training"):
        _setting(name)
with device_col:
    st.markdown("**Device and fine print**")
    _setting("device", options=offered, on_change=_clear_device_notice)  # only what this machine has
    if absent:
        st.caption("Not offered on this machine: " + "; ".join(
            f"{name.upper()}: {reason}" for name, reason in absent.items()) + ".")
    notice = st.session_state.get(f"{PREFIX}.device_notice")
    if notice:
        st.warning(notice, icon=":material/memory:")
    for name in train_settings.fields_in("fine print"):
        if name != "device":
            _setting(name)
    if settings.pack_length and not settings.causal:
        st.caption("Packing needs the causal mask (names in a row must not see each other), so this "
                   "mask-off run trains one window per row.")
with st.expander("More settings: evaluation, speed, biases", icon=":material/tune:"):
    for name in train_settings.fields_in("more"):
        _setting(name)

matched = train_settings.matching_preset(settings)
preset_label.markdown(f"Preset: **{train_settings.PRESET_TITLES[matched]}**" if matched else "Preset: **custom**")

# ------------------------------------------------------------------ what will be trained
problems = train_settings.settings_problems(settings)
for problem in problems:
    st.error(problem, icon="🚫")
blocked = bool(problems)
shown_before_training = [train_settings.settings_problems]  # what computed the numbers above
if not problems:
    with friendly_errors("the model's structure"):
        config = train_settings.to_train_config(settings)
        n_params = config.model.num_params()
        size_problems = budget.check_run_size(n_params, config.max_steps)
        info_col, table_col = st.columns([1, 2])
        info_col.metric("Parameters", f"{n_params:,}")
        info_col.caption(f"{settings.n_layer} decoder layers × {settings.n_head} heads of "
                         f"{settings.d_embed // settings.n_head} dimensions each; a vocabulary of 27 "
                         "characters (“.” + a–z).")
        if size_problems:
            blocked = True
            st.error("This run is too large for this server: " + " ".join(size_problems), icon="🚫")
        else:  # the structure is built only for a model this server would train
            _, module_text, parts = runs.model_structure(config)
            shown_before_training += [train_settings.to_train_config, runs.model_structure]
            with table_col.expander("Model structure (before training)", icon=":material/account_tree:"):
                st.dataframe(parts.style.format({"parameters": "{:,}", "share": "{:.1%}"}),
                             hide_index=True)
                st.code(module_text, language="text")

# ------------------------------------------------------------------ controls + the live panel
st.subheader("Train")
run = book.current
if run is not None and run.status in ("running", "paused") and run.settings != settings \
        and not problems:
    differing = [f for f in train_settings.TRAINING_FIELDS if getattr(run.settings, f) != getattr(settings, f)]
    if differing:
        st.caption(f"The settings differ from {run.label} ({', '.join(differing)}); they apply to the "
                   "next run (**Start**). The current run keeps its own settings.")
training.run_controls(book, settings, blocked=blocked)
training.continue_controls(book)
spec_widget(settings, "overlay", prefix=PREFIX)
training.live_panel(book, settings)
if len(book.runs) > 1:
    if st.button("Clear earlier runs", key=f"{PREFIX}.clear_runs", icon=":material/delete_sweep:"):
        book.clear_others()
        st.rerun()

# ------------------------------------------------------------------ break it
current = book.current
with st.expander("Break it: what happens without the causal mask?", icon=":material/heart_broken:",
                 expanded=current is not None and not current.settings.causal):
    st.markdown(
        "The model is trained to predict character *t + 1* from characters *1 … t*. The causal mask "
        "hides every later position from the attention. Switch it off (or press **Break it**) and "
        "position *t* can attend to position *t + 1*, which holds **the very character it must "
        "predict**: the answer leaks in. The training loss collapses towards 0, and so does the "
        "validation loss, because the validation windows leak in the same way.\n\n"
        "Generation is where the cheat shows: when the model writes a new name, the next character "
        "does not exist yet, so there is nothing to copy. A model that only learned to copy has "
        "learned nothing about names, and its samples turn to garbage (often empty names, or one "
        "letter over and over). A low loss means nothing "
        "if the test leaks the answer.")

# ------------------------------------------------------------------ checkpoints
st.subheader("Checkpoints")
training.checkpoint_panel(book)

if current is not None and current.trainer.step > 0:
    show_code([runs.Run.advance, Trainer.train, Trainer.evaluate, runs.smooth, runs.run_labels])
else:  # nothing has trained yet: show what computed the parameter count and the structure
    show_code(shown_before_training,
              note="The training loop's code appears here once a run has trained.")
sync_url(settings)
