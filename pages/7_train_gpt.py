"""Train the names GPT (lecture 7) live. The first screen holds what a lecture needs while it
trains: the presets, the run's controls, its progress and the live loss curve. Every setting sits
in one collapsed panel above the controls (tabs: model, training, device, more, structure); below
the curve: runs overlaid, "break it", checkpoints."""

import streamlit as st

from core import budget, runs, train_settings
from core.classroom import questions
from core.models import GPT, CausalSelfAttention, DecoderLayer, FeedForward, GPTConfig
from core.settings import count
from core.training import Trainer, make_optimizer
from core.training.muon import MuonAdamW, orthogonalise
from ui import class_challenge, class_polls, training
from ui.code import show_code
from ui.layout import friendly_errors, lesson_panel
from ui.state import page_settings, page_title, refusals_below, replace_settings, spec_widget, sync_url, widget_key

PREFIX = "train"
PRESETS_SHOWN = training.presets_shown()

page_title("Train the names GPT")
INTRO = ("A character-level GPT learns to write first names from 32,033 real ones, a batch of name "
         "windows per step. Watch the loss fall: **3.30 nats** (ln 27) is a uniform guess over 27 "
         "characters; Lecture 7's SGD run ends near **2.3**, the quick demo near **1.91** and the best "
         "preset near **1.87**.")

settings = page_settings(PREFIX, train_settings.TrainSettings)
settings = lesson_panel(PREFIX, train_settings.TrainSettings, "train", settings)
book = training.runbook()
if book.current is None:  # before the first run the words lead; while training, the curve does
    st.markdown(INTRO)

# ------------------------------------------------------------------ presets (one row)
with st.container(horizontal=True, vertical_alignment="center"):
    for name in PRESETS_SHOWN:
        title, help_text, too_large = training.preset_button(name, settings.device)
        if st.button(title, key=f"{PREFIX}.preset.{name}", help=help_text, disabled=too_large):
            # on a CUDA run the quick demo and best presets take their GPU versions (bigger batches)
            chosen = train_settings.preset_settings(name, device=settings.device)
            chosen.device, chosen.overlay = settings.device, settings.overlay
            replace_settings(PREFIX, chosen)
            settings = st.session_state[PREFIX]
    summary_box = st.empty()  # filled once the widgets below have written their values

# ------------------------------------------------------------------ device (clamped before its widget)
offered, absent = runs.device_options()
if settings.device not in offered:
    st.session_state[f"{PREFIX}.device_notice"] = runs.device_notice(settings.device)
    settings.device = "auto"
    st.session_state.pop(widget_key(PREFIX, "device"), None)


def _clear_device_notice() -> None:
    st.session_state.pop(f"{PREFIX}.device_notice", None)


def _setting(name: str, **overrides) -> None:
    """One control, built from the metadata of its config field (label, bounds, choices); number
    boxes refuse what is not a number in range, with a message (ui.state.checked_number)."""
    spec_widget(settings, name, prefix=PREFIX, **overrides)


# ------------------------------------------------------------------ every setting, in one panel
with st.expander("All settings: model, training, device", icon=":material/tune:"):
    model_tab, train_tab, device_tab, more_tab, structure_tab = st.tabs(
        ["Model", "Training", "Device and fine print", "More", "Model structure"])
    # each tab's boxes in two columns: a refused number is said under both, at the tab's width
    # (in its column it pushed the boxes under it out of line with their neighbours)
    with model_tab, refusals_below():
        cols = st.columns(2)
        for i, name in enumerate(train_settings.fields_in("model")):
            with cols[i % 2]:
                _setting(name)
    with train_tab, refusals_below():
        cols = st.columns(2)
        for i, name in enumerate(train_settings.fields_in("training")):
            with cols[i % 2]:
                _setting(name)
    with device_tab, refusals_below():
        cols = st.columns(2)
        with cols[0]:
            _setting("device", options=offered, on_change=_clear_device_notice)  # only what this machine has
            if absent:
                st.caption("Not offered on this machine: " + "; ".join(
                    f"{name.upper()}: {reason}" for name, reason in absent.items()) + ".")
        fine_print = [n for n in train_settings.fields_in("fine print") if n != "device"]
        for i, name in enumerate(fine_print):
            with cols[(i + 1) % 2]:
                _setting(name)
        if settings.pack_length and not settings.causal:
            st.caption("Packing needs the causal mask (names in a row must not see each other), so "
                       "this mask-off run trains one window per row.")
    with more_tab, refusals_below():
        st.caption("Evaluation, speed, biases, which weights the run ends with, and their running average.")
        cols = st.columns(2)
        for i, name in enumerate(train_settings.fields_in("more")):
            with cols[i % 2]:
                _setting(name)

notice = st.session_state.get(f"{PREFIX}.device_notice")
if notice:  # outside the panel: a fallback must be seen
    st.warning(notice, icon=":material/memory:")

# ------------------------------------------------------------------ what will be trained
problems = train_settings.settings_problems(settings)
for problem in problems:
    st.error(problem, icon=":material/block:")
blocked = bool(problems)
for caution in train_settings.settings_cautions(settings):
    st.warning(caution, icon=":material/warning:")
shown_before_training = [train_settings.settings_problems]  # what computed the numbers above
n_params = None
if not problems:
    with friendly_errors("the model's structure"):
        config = train_settings.to_train_config(settings)
        n_params = config.model.num_params()
        size_problems = budget.check_run_size(n_params, config.max_steps)
        if size_problems:
            blocked = True
            st.error("This run is too large for this server: " + " ".join(size_problems), icon=":material/block:")
        else:  # the structure is built only for a model this server would train
            _, module_text, parts = runs.model_structure(config)
            shown_before_training += [train_settings.to_train_config, GPTConfig.num_params,
                                      runs.model_structure, runs._structure_table.__wrapped__,
                                      runs._structure.__wrapped__]
            with structure_tab:
                st.metric("Parameters", f"{n_params:,}")
                st.caption(f"{count(settings.n_layer, 'decoder layer')} × {count(settings.n_head, 'head')} of "
                           f"{settings.d_embed // settings.n_head} dimensions each; a vocabulary of "
                           "27 characters (“.” + a–z).")
                # formatted by the browser (a pandas Styler cost ~7 ms of every rerun)
                st.dataframe(parts, hide_index=True, column_config={
                    "parameters": st.column_config.NumberColumn(format="localized"),
                    "share": st.column_config.NumberColumn(format="percent")})
                st.code(module_text, language="text")
if n_params is None:
    with structure_tab:
        st.caption("The structure appears once the settings above can be trained.")
summary_box.markdown(training.settings_summary(settings, n_params, book.current))

# ------------------------------------------------------------------ controls + the live panel
run = book.current
if run is not None and run.status in ("running", "paused") and run.settings != settings \
        and not problems:
    differing = [f for f in train_settings.TRAINING_FIELDS if getattr(run.settings, f) != getattr(settings, f)]
    if differing:
        st.caption(f"The settings differ from {run.label} ({', '.join(differing)}); they apply to the "
                   "next run (**Start a new run**). The current run keeps its own settings.")
# in a class, a run (and its loss curve) waits for the class poll on the untrained model's loss
answered = class_polls.ask(questions.untrained_loss())
training.run_controls(book, settings, blocked=blocked or not answered)
live_slot = st.container()  # the live panel goes here, drawn after the overlay switch below has its value
with st.container(horizontal=True, vertical_alignment="center"):
    spec_widget(settings, "overlay", prefix=PREFIX)
    training.forget_run_buttons(book)
with live_slot:
    training.live_panel(book, settings)
class_challenge.submit_panel(book.current)  # only for a student in a class with an open challenge

# ------------------------------------------------------------------ break it
current = book.current
if current is not None:
    st.markdown(INTRO)
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
    muon = [make_optimizer, MuonAdamW._muon_step, orthogonalise] if current.trainer.config.optimizer == "muon" else []
    # the step first (forward, backward, update), then the loop around it, then the model it trains
    show_code([Trainer._train_step, Trainer.train, Trainer.evaluate, GPT, DecoderLayer,
               CausalSelfAttention, FeedForward, *muon, runs.Run.advance, runs.smooth, runs.run_labels])
else:  # nothing has trained yet: show what computed the parameter count and the structure
    show_code(shown_before_training,
              note="The training loop's code appears here once a run has trained.")
sync_url(settings)
