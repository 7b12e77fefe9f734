"""Train the names GPT (lecture 7) live: settings and presets, controls, the live loss curve,
sampled names at each validation point, runs overlaid, "break it", checkpoints."""

import streamlit as st

from core import budget, live
from core.engine import Trainer
from ui import training
from ui.code import show_code
from ui.layout import friendly_errors, lesson_panel
from ui.state import bound, page_settings, replace_settings, sync_url, widget_key

PREFIX = "train"
PRESET_BUTTONS = [
    ("lecture", "Lecture 7", "The document's values: SGD at lr 0.01, batch 32, 1,000 steps, dropout 0.1 "
                             "(converges slowly, about 2.4 nats/char)."),
    ("quick_demo", "Quick demo (~30 s)", "AdamW with warm-up and cosine decay: a good model in about "
                                         "30 s on a laptop CPU (validation ≈ 2.1 nats/char)."),
    ("best", "Best (a few minutes)", "Wider, deeper, longer context: about 1.9 nats/char in a few "
                                     "minutes on 2 CPU cores."),
]

st.title("Train the names GPT")
st.markdown(
    "Lecture 7's character-level GPT learns to write first names from 32,033 real ones. Each "
    "optimisation step shows it a batch of name windows and nudges the weights to make the next "
    "character more likely. Watch the loss fall: **3.30 nats** (ln 27) is a uniform guess over "
    "27 characters; a good model reaches about **2.1**, the best here about **1.9**.")

settings = page_settings(PREFIX, live.TrainSettings)
settings = lesson_panel(PREFIX, live.TrainSettings, "train", settings)
book = training.runbook()

# ------------------------------------------------------------------ presets
st.subheader("Settings")
preset_cols = st.columns(len(PRESET_BUTTONS) + 1)
for col, (name, title, help_text) in zip(preset_cols, PRESET_BUTTONS):
    if col.button(title, key=f"{PREFIX}.preset.{name}", help=help_text, width="stretch"):
        chosen = live.preset_settings(name)
        chosen.device, chosen.overlay = settings.device, settings.overlay
        replace_settings(PREFIX, chosen)
        settings = st.session_state[PREFIX]
preset_label = preset_cols[-1].empty()  # filled once the widgets below have written their values

# ------------------------------------------------------------------ device (clamped before its widget)
offered, absent = live.device_options()
if settings.device not in offered:
    st.session_state[f"{PREFIX}.device_notice"] = live.device_notice(settings.device)
    settings.device = "auto"
    st.session_state.pop(widget_key(PREFIX, "device"), None)


def _clear_device_notice() -> None:
    st.session_state.pop(f"{PREFIX}.device_notice", None)


model_col, train_col, device_col = st.columns(3)
with model_col:
    st.markdown("**Model**")
    bound(st.number_input, "Context size (characters)", settings, "context_size", prefix=PREFIX,
          min_value=2, max_value=32, step=1, help="How many characters the model reads at once.")
    bound(st.number_input, "Layers", settings, "n_layer", prefix=PREFIX, min_value=1, max_value=8, step=1)
    bound(st.number_input, "Heads per layer", settings, "n_head", prefix=PREFIX, min_value=1, max_value=16,
          step=1, help="d_embed must be divisible by the number of heads.")
    bound(st.number_input, "d_embed (width)", settings, "d_embed", prefix=PREFIX, min_value=4,
          max_value=512, step=8)
    bound(st.number_input, "d_ff (feed-forward width)", settings, "d_ff", prefix=PREFIX, min_value=4,
          max_value=2048, step=32)
    bound(st.slider, "Dropout", settings, "dropout", prefix=PREFIX, min_value=0.0, max_value=0.8, step=0.05)
    bound(st.toggle, "Causal mask", settings, "causal", prefix=PREFIX,
          help="Off = break it: every position can read the future, including the answer.")
with train_col:
    st.markdown("**Training**")
    bound(st.selectbox, "Optimizer", settings, "optimizer", prefix=PREFIX, options=["adamw", "sgd"],
          format_func=lambda o: {"adamw": "AdamW", "sgd": "SGD"}[o])
    bound(st.number_input, "Learning rate", settings, "lr", prefix=PREFIX, min_value=1e-6, max_value=10.0,
          step=0.001, format="%g")
    bound(st.number_input, "Batch size", settings, "batch_size", prefix=PREFIX, min_value=1,
          max_value=1024, step=16)
    bound(st.number_input, "Steps", settings, "max_steps", prefix=PREFIX, min_value=1,
          max_value=100_000, step=100)
    bound(st.number_input, "Validate every (steps)", settings, "val_interval", prefix=PREFIX,
          min_value=1, max_value=100_000, step=50)
    bound(st.number_input, "Seed", settings, "seed", prefix=PREFIX, min_value=0, max_value=2**31 - 1,
          step=1, help="Fixes the initial weights, the batch order and the dropout masks.")
with device_col:
    st.markdown("**Device and fine print**")
    bound(st.selectbox, "Device", settings, "device", prefix=PREFIX, options=offered,
          on_change=_clear_device_notice,
          format_func=lambda d: {"auto": "auto (best available)", "cpu": "CPU", "cuda": "CUDA GPU",
                                 "mps": "Apple GPU (MPS)"}[d])
    if absent:
        st.caption("Not offered on this machine: " + "; ".join(
            f"{name.upper()}: {reason}" for name, reason in absent.items()) + ".")
    notice = st.session_state.get(f"{PREFIX}.device_notice")
    if notice:
        st.warning(notice, icon=":material/memory:")
    bound(st.number_input, "Weight decay", settings, "weight_decay", prefix=PREFIX, min_value=0.0,
          max_value=10.0, step=0.01, format="%g")
    bound(st.number_input, "Gradient clipping (0 = off)", settings, "grad_clip", prefix=PREFIX,
          min_value=0.0, max_value=1000.0, step=0.5, format="%g")
    bound(st.selectbox, "Learning-rate schedule", settings, "schedule", prefix=PREFIX,
          options=["constant", "cosine"])
    bound(st.number_input, "Warm-up steps", settings, "warmup_steps", prefix=PREFIX, min_value=0,
          max_value=100_000, step=50)
    bound(st.number_input, "Cosine ends at (share of the peak lr)", settings, "min_lr_ratio", prefix=PREFIX,
          min_value=0.0, max_value=1.0, step=0.05, format="%g")
    bound(st.number_input, "Pack names into rows of (tokens, 0 = off)", settings, "pack_length",
          prefix=PREFIX, min_value=0, max_value=256, step=8,
          help="Whole names back to back in each row, each attending only to itself: no compute is "
               "spent on padding. The batch size then counts rows.")
    if settings.pack_length and not settings.causal:
        st.caption("Packing needs the causal mask (names in a row must not see each other), so this "
                   "mask-off run trains one window per row.")

matched = live.matching_preset(settings)
preset_label.markdown(f"Preset: **{live.PRESET_TITLES[matched]}**" if matched else "Preset: **custom**")

# ------------------------------------------------------------------ what will be trained
problems = live.settings_problems(settings)
for problem in problems:
    st.error(problem, icon="🚫")
blocked = bool(problems)
if not problems:
    with friendly_errors("the model's structure"):
        config = live.to_train_config(settings)
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
            _, module_text, parts = live.model_structure(config)
            with table_col.expander("Model structure (before training)", icon=":material/account_tree:"):
                st.dataframe(parts.style.format({"parameters": "{:,}", "share": "{:.1%}"}),
                             hide_index=True)
                st.code(module_text, language="text")

# ------------------------------------------------------------------ controls + the live panel
st.subheader("Train")
run = book.current
if run is not None and run.status in ("running", "paused") and run.settings != settings \
        and not problems:
    differing = [f for f in live._TRAINING_FIELDS if getattr(run.settings, f) != getattr(settings, f)]
    if differing:
        st.caption(f"The settings differ from {run.label} ({', '.join(differing)}); they apply to the "
                   "next run (**Start**). The current run keeps its own settings.")
training.run_controls(book, settings, blocked=blocked)
training.continue_controls(book)
bound(st.checkbox, "Show the session's earlier runs on the same chart", settings, "overlay", prefix=PREFIX)
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

show_code([live.Run.advance, Trainer.train, live.run_labels])
sync_url(settings)
