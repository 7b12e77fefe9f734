"""Small language model: a bigram table against one self-attention head, trained side by side.

The slides "A Small Language Model with Self Attention" (course document 001): a character corpus,
a 90/10 split, the bigram model (|V|×|V|) and the model with a |V|×n embedding, one head and a
linear layer; their losses; generated text; cross-entropy by hand. The models train live in a
fragment that advances all three a few steps per tick on the same batches. The math lives in
core/lessons/small_lm.py and core/models.py.
"""

from __future__ import annotations

import math

import streamlit as st

from core import budget, viz as charts
from core import models as core_models
from core.lessons import small_lm
from core.lessons import text as texts
from core.lessons import tokens_data
from core.tokenizers import CharTokenizer
from core.viz import lessons as lesson_charts
from ui import formatting as fmt
from ui import small_lm_cache, state
from ui.charts import kept_figure, make_figure, show_chart, show_figure
from ui.code import show_code
from ui.layout import friendly_errors, lesson_panel
from ui.live import leave_queue, live_fragment
from ui.text_lessons import text_source

PREFIX = "small_lm"
PAGE = "small-lm"
RACE_KEY, RUNNING_KEY = f"{PREFIX}.race", f"{PREFIX}.running"

settings = state.page_settings(PREFIX, small_lm.SmallLMSettings)
settings = lesson_panel(PREFIX, small_lm.SmallLMSettings, PAGE, settings)
lecture = state.lecture_mode()
ss = st.session_state

state.page_title("Small language model")
st.markdown(
    "A **bigram** model predicts the next character from the current one with a |V|×|V| table. "
    "Give a model a |V|×C **embedding** (n on the slides), **one self-attention head** and a linear "
    "layer to the vocabulary, and it can look back over the last T characters. Train it, with and "
    "without a position embedding, on the same batches as the bigram, and compare the three. "
    "*(Slides: A Small Language Model with Self Attention; course document 001.)*")

# ---------------------------------------------------------------------------------------------
st.header("1 · The corpus")
text, origin = text_source(PREFIX, settings, "corpus", small_lm.CORPORA, min_chars=2, height=140)
corpus_ok = True
try:
    small_lm.check_corpus(text, settings.block_size)
except ValueError as exc:
    corpus_ok = False
    st.error(f"{exc} The race below keeps its last valid corpus.", icon=":material/block:")
stats = small_lm.corpus_stats(text, settings.block_size)
m1, m2, m3, m4 = st.columns(4, vertical_alignment="bottom")  # values in line when a label wraps
m1.metric("Characters in the text", f"{stats['characters']:,}")
m2.metric("Vocabulary |V|", stats["vocabulary"])
# short labels: at 1024 px a quarter of the page cut "Train characters (first 90%)" to "(fir…"
m3.metric("Train characters", f"{stats['train']:,}", help="The first 90% of the text.")
m4.metric("Val characters", f"{stats['val']:,}", help="Validation: the last 10% of the text.")
if settings.corpus == "pangram":
    st.markdown(f"“{texts.PANGRAM.strip()}” repeated {texts.PANGRAM_REPEATS}×. Like the slides' corpus, "
                "it is tiny and repetitive: a model that remembers a few characters can predict "
                "almost everything; a model that sees one character cannot.")
vocab = CharTokenizer.from_text(text).vocab
st.html(fmt.chips_html([tokens_data.TokenChip(i, i, ch) for i, ch in enumerate(vocab)], limit=200,
                       lecture=lecture, label="Character vocabulary"))
st.caption(f"The character vocabulary of {origin}: each character with its id (sorted; “.” is always "
           "id 0 in this project's tokenizer; ␣ is the space, ↵ a line break).")

# ---------------------------------------------------------------------------------------------
st.header("2 · Three models, the same batches")
c1, c2, c3, c4 = st.columns(4)
with c1:
    state.bound(st.slider, "T · context (block size)", settings, "block_size", prefix=PREFIX,
                min_value=1, max_value=32, help="The slides use 8.")
with c2:
    state.bound(st.slider, "B · batch size", settings, "batch_size", prefix=PREFIX,
                min_value=1, max_value=128, help="Blocks per step; every model trains on the same ones. The slides' shapes use 6; "
                     "32 here gives each step a steadier gradient.")
with c3:
    state.bound(st.slider, "C · embedding size", settings, "n_embd", prefix=PREFIX,
                min_value=1, max_value=128, help="The slides use 32.")
with c4:
    state.bound(st.slider, "d · head size", settings, "head_size", prefix=PREFIX,
                min_value=1, max_value=128, help="The slides use 16.")
# a refused Seed or Steps is said under the row, at full width (state.refusals_below)
with st.expander("Training settings", icon=":material/tune:"), state.refusals_below():
    c1, c2, c3, c4 = st.columns(4)
    with c1:
        # a rate from a link or a lesson that is not one of the usual steps becomes a step of its
        # own (snapped to the nearest step, lr=0.5 trained with 0.1 and nothing said so). The rate
        # the slider started with stays a step, so the student can go back to it and the slider
        # keeps its steps while it is moved; a lesson load (a new widget key) starts over.
        given = ss.setdefault(state.widget_key(PREFIX, "lr") + ".given", settings.lr)
        state.bound(st.select_slider, "Learning rate (Adam)", settings, "lr", prefix=PREFIX,
                    options=small_lm.lr_options(given, settings.lr), format_func=lambda v: f"{v:g}",
                    help="A link or a lesson may set any rate from 1e-05 to 1; it then shows "
                         "among the usual steps.")
    with c2:
        state.number_field(settings, "seed", prefix=PREFIX, label="Seed",
                           help="Initial weights, batch order, evaluation batches.")
    with c3:
        state.number_field(settings, "max_steps", prefix=PREFIX, label="Steps",
                           max_value=min(5000, budget.LIMITS.max_steps))
    with c4:
        state.bound(st.slider, "Steps per live update", settings, "steps_per_tick", prefix=PREFIX,
                    min_value=1, max_value=100)
st.markdown(
    f"Shapes, named as on the slides (which use B = 6, T = 8, C = 32, d = 16): a batch of token ids is `(B, T) = ({settings.batch_size}, "
    f"{settings.block_size})`; embeddings `(B, T, C) = ({settings.batch_size}, {settings.block_size}, "
    f"{settings.n_embd})`; attention weights `(B, T, T)`; the head's output `(B, T, d) = "
    f"({settings.batch_size}, {settings.block_size}, {settings.head_size})`; logits `(B, T, |V|) = "
    f"({settings.batch_size}, {settings.block_size}, {stats['vocabulary']})`.")

# ---------------------------------------------------------------------------------------------
# The race lives in session state only. A change of corpus or settings rebuilds it only while it
# has not trained yet; a trained race is never thrown away without the Reset button.
race: small_lm.SmallLMRace | None = ss.get(RACE_KEY)
wanted = settings.race_config()
if corpus_ok and (race is None or (race.step == 0 and (race.text, race.config) != (text, wanted))):
    # a new batch size or learning rate is taken by the untrained race as it is (nothing built
    # depends on them); anything else builds new models
    if race is None or race.text != text or not race.adopt(wanted):
        with friendly_errors("the models"):
            race = ss[RACE_KEY] = small_lm.SmallLMRace(text, wanted)


def _start() -> None:
    ss[RUNNING_KEY] = True


def _pause() -> None:
    ss[RUNNING_KEY] = False
    leave_queue()


def _reset() -> None:
    ss[RUNNING_KEY] = False
    leave_queue()
    ss[f"{PREFIX}.reset_requested"] = True


def _finished(outcome) -> None:
    """The race reached its last step (or failed): stop, so the page draws the samples."""
    ss[RUNNING_KEY] = False
    leave_queue()


def show_model_chart(race_: small_lm.SmallLMRace, build, inputs: tuple, **kwargs) -> None:
    """A chart of the models. Untrained, they are the same for every student with the same corpus
    and settings, so the figure is kept for the class (ui.charts.show_figure: a moved slider or the
    next student redraws it without building it; building and serialising this page's charts was
    a third of its rerun). Trained, they differ from student to student: drawn as they are, since
    in the class's shared store they would push out the figures everyone draws."""
    if race_.step == 0:
        show_figure(build, inputs, **kwargs)
    else:
        show_chart(build(), **kwargs)


def table_chart(race_: small_lm.SmallLMRace, build, inputs: tuple, **kwargs) -> None:
    """show_model_chart in a box of the chart's own width, for a row that wraps (section 5): a
    chart in a box narrower than itself is shrunk as a picture, letters and all."""
    figure = kept_figure(build, inputs) if race_.step == 0 else make_figure(build, lecture)
    width = charts.drawn_width(figure.spec) if figure.spec else None  # a fitted chart's own width
    if not isinstance(width, int):
        width = charts.natural_width(figure.spec) if figure.spec else None
    with st.container(width=width + 8 if width else "content"):
        show_figure(build, inputs, figure=figure, **kwargs)


def draw_race(race_: small_lm.SmallLMRace) -> None:
    """The race as it stands: progress, the loss curves and each model's latest loss."""
    training = bool(ss.get(RUNNING_KEY))
    st.progress(min(race_.step / settings.max_steps, 1.0),
                text=f"Step {race_.step:,} of {settings.max_steps:,}" + (" · training…" if training else ""))
    if race_.error:
        st.error(f"Training stopped: {race_.error}", icon=":material/block:")
    latest, floor = race_.latest(), race_.bigram_floor()
    show_model_chart(race_, lambda: lesson_charts.race_loss_chart(
                         race_.history_frame(), floor=floor, lecture=lecture,
                         min_steps=race_.config.eval_every),
                ("race_loss", race_.history, floor, race_.config.eval_every),
                name="bigram vs self-attention loss",
                caption=(f"Mean cross-entropy on {race_.config.eval_batches}×"
                         f"{race_.config.eval_batch_size} fixed blocks of each split, every "
                         f"{race_.config.eval_every} steps; solid = validation, dashed = train. "
                         f"T={race_.config.block_size}, B={race_.config.batch_size}, "
                         f"C={race_.config.n_embd}, d={race_.config.head_size}, Adam lr "
                         f"{race_.config.lr:g}, seed {race_.config.seed}."),
                key=f"{PREFIX}.loss", downloads=not training)
    bigram_val = latest["bigram"]["val"]
    # lecture mode wraps metric labels (ui.layout): three columns. Otherwise a label is one line,
    # cut in a third of the page at 1024 px ("One head, no position (the s…"): each metric as wide
    # as its label, in a row that wraps where the page is narrow
    row = st.columns(3) if lecture else [st.container(horizontal=True, gap="medium")] * 3
    for box, (name, label) in zip(row, small_lm.MODEL_LABELS.items()):
        val = latest[name]["val"]
        box.metric(f"{label} · val loss", f"{val:.3f}", width="stretch" if lecture else "content",
                   # before the first step the gaps are the three initialisations, not learning:
                   # a green "-0.007 vs bigram" there read as attention already winning
                   delta=None if name == "bigram" or race_.last_eval_step == 0
                   else f"{val - bigram_val:+.3f} vs bigram",
                   delta_color="inverse")
    if race_.last_eval_step == 0:
        st.info(f"Before training every model guesses almost uniformly: loss ≈ ln |V| = "
                f"ln {race_.tokenizer.vocab_size} ≈ {math.log(race_.tokenizer.vocab_size):.2f}. "
                "Press **Start**.", icon=":material/play_arrow:")
    else:
        verdict = small_lm.race_verdict(latest, race_.last_eval_step, floor, len(race_.train_data))
        {"win": st.success, "overfit": st.warning}.get(verdict.kind, st.info)(verdict.text)


def bigram_caption(race_: small_lm.SmallLMRace, table: small_lm.ShownTable) -> str:
    """The bigram chart's caption; a cut table says so (its rows no longer add up to 1)."""
    V = table.vocab_size
    sums = f"each row sums to 1 over all {V:,} next characters" if table.is_cut else "each row sums to 1"
    text = (f"The bigram model's |V|×|V| = {(V, V)} table after softmax: row = current character, "
            f"column = next; {sums}. Step {race_.step:,}, seed {race_.config.seed}.")
    return f"{text} {table.note()}".strip()


def embedding_caption(race_: small_lm.SmallLMRace, table: small_lm.ShownTable) -> str:
    """The embedding chart's caption; a cut table says which rows it shows."""
    shape = (table.vocab_size, table.values.shape[1])
    text = (f"The attention model's |V|×C = {shape} token embedding: one learned vector per "
            f"character (red negative, blue positive). Step {race_.step:,}, seed {race_.config.seed}.")
    return f"{text} {table.note()}".strip()


st.header("3 · Train side by side")
if race is None:
    st.warning("No models yet: choose a corpus that is long enough (see the message above).")
else:
    # Callbacks run before the script, so the buttons below are drawn in their new state (the
    # fragment's ticks redraw only the fragment, never these buttons).
    if ss.pop(f"{PREFIX}.reset_requested", False):
        if corpus_ok:
            with friendly_errors("the models"):
                race = ss[RACE_KEY] = small_lm.SmallLMRace(text, wanted)
        else:
            st.error("Reset needs a valid corpus; the current models are kept.", icon=":material/block:")
    # Steps and steps per update may change at any time: they only decide where the run stops
    race.max_steps, race.steps_per_advance = settings.max_steps, settings.steps_per_tick
    stale = (race.text, race.config) != (text, wanted)
    # a row as wide as the buttons' labels: in columns [1, 1, 1, 3] they were cut to "S…", "P…",
    # "R…" at 1024 px in lecture mode
    buttons = st.container(horizontal=True)
    buttons.button("Start", icon=":material/play_arrow:", type="primary", key=f"{PREFIX}.start",
                   disabled=bool(ss.get(RUNNING_KEY)) or race.done, on_click=_start)
    buttons.button("Pause", icon=":material/pause:", key=f"{PREFIX}.pause",
                   disabled=not ss.get(RUNNING_KEY), on_click=_pause)
    buttons.button("Reset", icon=":material/restart_alt:", key=f"{PREFIX}.reset", on_click=_reset,
                   help="New models with the current corpus and settings.")
    if stale:
        st.info("The models below were built with another corpus or other settings. "
                "Press **Reset** to start new models with the current ones.", icon=":material/info:")

    # the app's one live-training fragment trains the race a slice per tick and redraws it
    live_fragment(f"{PREFIX}.live", race, lambda: draw_race(race),
                  running=lambda: bool(ss.get(RUNNING_KEY)) and not race.done, on_finish=_finished)
    running = bool(ss.get(RUNNING_KEY))
    # the code that computed the curves: the evaluation (every point), the models' forward passes,
    # and the training step once the models have trained (before that, no point came from it)
    trained = race.step > 0
    show_code(([small_lm.SmallLMRace.train_step] if trained else [])
              + [small_lm.SmallLMRace.evaluate, core_models.SingleHeadLM.forward,
                 core_models.SelfAttentionHead.forward, core_models.BigramLM.forward],
              note=None if trained else "The training step's code appears here once the models "
                                        "have trained (press **Start**).")

    # -----------------------------------------------------------------------------------------
    st.header("4 · Text generated by each model")
    c1, c2, c3 = st.columns(3)
    with c1:
        state.bound(st.text_input, "Start from (prompt)", settings, "prompt", prefix=PREFIX,
                    max_chars=40, help="Empty: the first character of the corpus.")
    with c2:
        state.bound(st.slider, "Characters to generate", settings, "sample_chars", prefix=PREFIX,
                    min_value=10, max_value=500, step=10)
    with c3:
        state.bound(st.slider, "Temperature", settings, "temperature", prefix=PREFIX,
                    min_value=0.05, max_value=3.0, step=0.05)
    prompt = settings.prompt
    try:
        small_lm.check_prompt(prompt, race.tokenizer)
    except ValueError as exc:
        st.error(f"{exc} Generating from the corpus' first character instead.", icon=":material/block:")
        prompt = ""
    if running:
        st.caption("Samples and tables below show the models as they were when this page last "
                   "redrew; they refresh when training is paused or finishes.")
    with friendly_errors("the generated text"):
        samples = ss.setdefault(f"{PREFIX}.samples", {})
        for name, label in small_lm.MODEL_LABELS.items():
            if not running or name not in samples or samples[name][2] is not race:
                # sampling 3 x 160 characters takes a moment: not on every update while training
                text_out = small_lm_cache.sample_text(race, name, settings.sample_chars, prompt,
                                       settings.temperature)
                samples[name] = (race.step, text_out, race)
            step_at, sample, _ = samples[name]
            st.markdown(f"**{label}** · step {step_at:,}")
            st.code(sample, language=None, wrap_lines=True)
        st.caption(f"Sampled with temperature {settings.temperature:g}, seed {race.config.seed}, "
                   f"from {prompt!r} (empty: the corpus' first character).")

    # -----------------------------------------------------------------------------------------
    st.header("5 · What each model stores")
    # a large vocabulary (pasted Chinese text: thousands of characters) is drawn as its most
    # frequent characters; the whole |V|×|V| table made a chart Streamlit could not send.
    # The two tables share a row that wraps: side by side where the page has room for both, one
    # under the other where it has not (1024 px with the sidebar). In half the row the bigram
    # table's 28 letters a side were shrunk with the picture to 7.5 px
    with friendly_errors("the tables"), st.container(horizontal=True, gap="large"):
        bigram = race.bigram_table_shown()  # (n, n) of the (V, V) table
        V = race.tokenizer.vocab_size
        table_chart(race, lambda: lesson_charts.compact_heatmap(
                        bigram.values, bigram.chars, bigram.chars, title=f"Bigram table {(V, V)}",
                        x_title="next character", y_title="current character", domain=(0.0, 1.0),
                        lecture=lecture),
                    ("bigram_table", bigram.values, tuple(bigram.chars), V),
                    name="bigram table", caption=bigram_caption(race, bigram), key=f"{PREFIX}.bigram")
        emb = race.embedding_shown()  # (n, C) of the (V, C) embedding
        shape = (race.tokenizer.vocab_size, emb.values.shape[1])
        limit = float(abs(emb.values).max()) or 1.0
        table_chart(race, lambda: lesson_charts.compact_heatmap(
                        emb.values, emb.chars, [f"d{j}" for j in range(shape[1])],
                        title=f"Token embedding {shape}", x_title="dimension", y_title="character",
                        diverging=True, scheme="redblue", domain=(-limit, limit), thin_labels=True,
                        lecture=lecture),
                    ("embedding_table", emb.values, tuple(emb.chars), shape),
                    name="embedding table", caption=embedding_caption(race, emb),
                    key=f"{PREFIX}.embedding")
    with friendly_errors("the tables"):
        params = race.n_params()
        st.caption("Parameters: " + " · ".join(f"{small_lm.MODEL_LABELS[k]} {v:,}"
                                               for k, v in params.items()))

# ---------------------------------------------------------------------------------------------
st.header("6 · Cross-entropy by hand")
st.markdown(
    "The loss every model above minimises. From the slide: logits → softmax → the negative log "
    "of the probability given to the target. `F.cross_entropy` does the same in one call.")


def _slide_example() -> None:
    state.set_field(PREFIX, "ce_logits", list(small_lm.SLIDE_CE[0]))
    state.set_field(PREFIX, "ce_target", small_lm.SLIDE_CE[1])


CE_COLUMNS = {
    "class c": st.column_config.Column("c", help="Class c", width=40),
    "logit z_c": st.column_config.Column("z_c", help="The logit z_c"),
    "exp(z_c)": st.column_config.Column("exp(z_c)"),
    "p_c = exp(z_c) / Σ": st.column_config.Column("p_c", help="p_c = exp(z_c) / Σ exp(z_c'): the softmax"),
    "target?": st.column_config.Column("target", help="The target class"),
}

locked = state.locked_fields(PREFIX)
ce_key = state.widget_key(PREFIX, "ce_logits")
if ce_key not in ss:
    ss[ce_key] = ", ".join(f"{z:g}" for z in settings.ce_logits)
# the button's column holds "Slide's example" at 1024 px in lecture mode too ([5, 2, 3] cut it)
c1, c2, c3 = st.columns([5, 2, 4], vertical_alignment="bottom")
with c1:
    raw = st.text_input("Logits (one per class)", key=ce_key, disabled="ce_logits" in locked,
                        help="Numbers separated by commas, between −50 and 50.")
try:
    logits = small_lm.parse_logits(raw)
    if "ce_logits" not in locked:
        settings.ce_logits = logits
except ValueError as exc:
    st.error(f"{exc} The last valid logits {settings.ce_logits} stay in use.", icon=":material/block:")
logits = settings.ce_logits
if settings.ce_target > len(logits) - 1:  # clamp before the widget: fewer classes than before
    state.set_field(PREFIX, "ce_target", len(logits) - 1)
with state.refusals_below(), c2:  # a refused target is said under the row (after the Logits one)
    state.number_field(settings, "ce_target", prefix=PREFIX, label="Target class", max_value=len(logits) - 1)
with c3:
    st.button("Slide's example", on_click=_slide_example, key=f"{PREFIX}.ce_reset",
              icon=":material/undo:")

with friendly_errors("the cross-entropy"):
    ce = small_lm.cross_entropy_by_hand(logits, settings.ce_target)
    left, right = st.columns([3, 2])
    with left:
        # short headers (the long ones as tooltips): with "p_c = exp(z_c) / Σ" and "target?" the
        # table ran past its column at 1024 px and the "← target" marker was off the edge
        st.dataframe(small_lm.cross_entropy_table(ce), hide_index=True, width="stretch",
                     column_config=CE_COLUMNS)
        st.markdown(
            f"Σ exp(z_c) = **{ce.denominator:.6f}** · p(target) = exp({logits[ce.target]:g}) / "
            f"{ce.denominator:.6f} = **{ce.p_target:.6f}** · loss = −log {ce.p_target:.6f} = "
            f"**{ce.by_hand:.10f}**")
    with right:
        show_chart(charts.bar_chart(ce.probs, [f"class {c}" for c in range(len(ce.probs))],
                                    highlight=ce.target, y_title="softmax probability",
                                    domain=(0.0, 1.0), lecture=lecture),
                   name="softmax of the logits",
                   caption=(f"Softmax of the logits {logits}; the target class {ce.target} "
                            f"(highlighted) gets p = {ce.p_target:.4f}, so the loss is "
                            f"−log p = {ce.by_hand:.4f}."),
                   key=f"{PREFIX}.ce")
    # two values a row: in thirds of the page the digits being compared were cut to "1.125402…"
    # at 1024 px (lecture mode)
    m1, m2 = st.columns(2)
    m1.metric("By hand (float64)", f"{ce.by_hand:.10f}")
    m2.metric("F.cross_entropy (float32)", f"{ce.torch_value:.10f}")
    m3, _ = st.columns(2)
    m3.metric("Difference", f"{ce.difference:.1e}", help="Only float32 rounding: PyTorch computes "
              "in 32-bit floats, the hand computation in 64-bit.")
    if (list(logits), settings.ce_target) == small_lm.SLIDE_CE:
        slide_loop = small_lm.cross_entropy_by_hand(small_lm.as_float32(logits), settings.ce_target).by_hand
        st.caption(f"The slide prints {small_lm.SLIDE_CE_PRINTED}, not {ce.by_hand!r}: its loop "
                   "read the logits from a float32 tensor, where 0.1 is stored as "
                   f"{small_lm.as_float32([0.1])[0]:.11f}. The same float64 sum over those "
                   f"values gives {slide_loop!r}.")
    show_code(small_lm.cross_entropy_by_hand)

state.sync_url(settings)
