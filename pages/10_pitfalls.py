"""Pitfalls: every bug of the original course documents, run live beside the correct code.

One pitfall is open at a time (the `pitfall` setting, so `?pitfall=softmax_dim` opens one
directly). For each: where it is, the buggy code and the fixed code side by side (their real
source from core/pitfalls.py and the core modules), the numbers that show the difference, and
one sentence on why. The SGD-against-AdamW race trains two core.engine.Trainer runs in slices
inside a fragment, so the page stays responsive while they train.
"""

from __future__ import annotations

import textwrap
import uuid
from typing import Callable, Iterable

import altair as alt
import pandas as pd
import streamlit as st

from core import attention, budget, data, engine, models, tokenizers, viz as charts
from core import pitfalls as pf
from ui import layout, state
from ui.charts import show_chart as _show_chart
from ui.code import source_of

PREFIX = "pitfalls"
PAGE = "pitfalls"
RACE_KEY = "pitfalls.race"  # the session's running SGD/AdamW race (two Trainers)
RACE_TICK_S = 0.3  # seconds of training per optimizer per fragment tick
LAST_CORPUS_KEY = "pitfalls.last_valid_corpus"
MAX_KEPT_RACES = 24  # finished races kept for everyone (each holds a small GPT's weights, ~0.6 MB)

settings = state.page_settings(PREFIX, pf.PitfallsSettings)
settings = layout.lesson_panel(PREFIX, pf.PitfallsSettings, PAGE, settings)
lecture = state.lecture_mode()


# ---------------------------------------------------------------------------------------------
# Cached computations (keyed on the settings they use)
# ---------------------------------------------------------------------------------------------


@st.cache_resource(show_spinner=False)
def names_and_tokenizer() -> tuple[list[str], tokenizers.CharTokenizer]:
    names = data.load_names()
    return names, tokenizers.CharTokenizer.from_text("".join(names))


@st.cache_resource(show_spinner=False)
def race_data() -> data.NamesData:
    """The lecture's data: context 12, 10% validation, seed 101 (shared, read-only)."""
    return data.build_names_data(context_size=12, val_size=0.1, seed=101)


@st.cache_resource(show_spinner=False)
def finished_races() -> dict:
    """Finished SGD/AdamW races of every session, by (steps, seed, lr): the runs are seeded and
    deterministic, so a class pressing Train at once trains each setting only once."""
    return {}


@st.cache_data(show_spinner=False, max_entries=32)
def softmax_dim(seed: int) -> dict:
    return pf.softmax_dim_demo(seed)


@st.cache_data(show_spinner=False)
def mask_zero() -> dict:
    return pf.mask_zero_demo()


@st.cache_data(show_spinner=False, max_entries=32)
def mask_after(seed: int) -> dict:
    return pf.mask_after_softmax_demo(seed)


@st.cache_data(show_spinner=False, max_entries=32)
def scaling(seed: int) -> pd.DataFrame:
    return pf.scaling_demo(seed)


@st.cache_data(show_spinner=False, max_entries=64)
def short_names(context_size: int) -> dict:
    names, tokenizer = names_and_tokenizer()
    return pf.short_names_demo(names, tokenizer, context_size)


@st.cache_data(show_spinner=False, max_entries=64)
def encode_shape(context_size: int) -> dict:
    names, tokenizer = names_and_tokenizer()
    return pf.encode_shape_demo(names, tokenizer, context_size)


@st.cache_data(show_spinner=False, max_entries=64)
def vocab_order(hash_seed_a: int, hash_seed_b: int, seed: int) -> dict:
    names, _ = names_and_tokenizer()
    return pf.vocab_order_demo(names, hash_seed_a, hash_seed_b, seed)


@st.cache_data(show_spinner=False, max_entries=32)
def fit_indent(fit_iters: int, eval_iters: int, seed: int) -> dict:
    return pf.fit_indent_demo(fit_iters, eval_iters, seed)


@st.cache_data(show_spinner=False, max_entries=32)
def no_position(seed: int) -> dict:
    return pf.no_position_demo(seed)


@st.cache_data(show_spinner=False, max_entries=32)
def config_end_id(seed: int, trained_key: tuple | None) -> dict:
    """The lecture's generate crashing, and ours sampling from the race's AdamW model if one was
    trained with this seed (trained_key), else from an untrained GPT."""
    _, tokenizer = names_and_tokenizer()
    result = finished_races().get(trained_key) if trained_key else None
    model = pf.model_from_result(result) if result else None
    return pf.config_end_id_demo(tokenizer, seed, model)


@st.cache_data(show_spinner=False)
def spelling() -> dict:
    return pf.spelling_demo()


@st.cache_data(show_spinner=False)
def module_typos(seed: int) -> pd.DataFrame:
    return pf.module_typos_demo(seed)


# ---------------------------------------------------------------------------------------------
# Page pieces shared by every pitfall
# ---------------------------------------------------------------------------------------------


def show_chart(chart, **kwargs) -> None:
    """ui.charts.show_chart, with the chart's width and height meaning the PLOT area.

    Streamlit fits a whole Vega-Lite chart (axes and legend included) into its width, which
    shrinks heatmap cells to about half; "pad" autosize keeps the cells at the size asked for."""
    _show_chart(chart.properties(autosize=alt.AutoSizeParams(type="pad")), **kwargs)


def header(key: str) -> pf.Pitfall:
    pitfall = pf.PITFALLS[key]
    st.header(pitfall.title, divider="gray")
    st.markdown(f"**Where:** {pitfall.where}  \n**What goes wrong:** {pitfall.effect}")
    return pitfall


def side_by_side(buggy: Iterable[Callable], fixed: Iterable[Callable], fixed_height: int | None = None,
                 wrap: bool = True) -> None:
    """The buggy code and the fixed code, their real source, in two columns (a long fixed
    source scrolls inside `fixed_height` pixels so the two stay side by side). wrap=False
    where indentation is the lesson: a wrapped line would start at the left margin."""
    left, right = st.columns(2, gap="medium")
    for column, title, fns, height in ((left, ":material/bug_report: As in the original", buggy, None),
                                       (right, ":material/check_circle: Fixed", fixed, fixed_height)):
        with column:
            st.markdown(f"**{title}**")
            for fn in fns:
                st.caption(f"`{fn.__module__}.{fn.__qualname__}`")
                st.code(textwrap.dedent(source_of(fn)), language="python", height=height or "content",
                        wrap_lines=wrap)


def why(pitfall: pf.Pitfall) -> None:
    st.info(f"**Why:** {pitfall.why}", icon=":material/lightbulb:")


def seed_input() -> int:
    return state.bound(st.number_input, "Seed", settings, "seed", prefix=PREFIX, min_value=0,
                       max_value=1_000_000, step=1, help="Seeds the random inputs, weights and batches.")


def error_box(text: str | None, no_error: str = "ran without an error") -> None:
    """A crash of the ORIGINAL code, shown as the message it raised (never a traceback)."""
    if not text:
        st.success(no_error, icon=":material/check:")
        return
    st.markdown("**Raised:**")
    st.code(text, language="text", wrap_lines=True)


@st.cache_resource(show_spinner=False, max_entries=64)
def heatmap_figure(name: str, data_key: tuple, lecture_mode: bool, weights: bool, cell: int | None,
                   _panels: list[tuple], _tokens: list[str]) -> alt.HConcatChart:
    """Build the Altair figure once per (figure, data, mode): Altair's own checks cost more than
    the math. `data_key` names the numbers (e.g. the seed); Altair charts are never mutated
    (every .properties/.configure returns a copy), so sharing one object is safe."""
    shape = tuple(_panels[0][0].shape)
    charts_row = [charts.heatmap(matrix.detach().numpy(), _tokens, _tokens, title=f"{title} {shape}",
                                 x_title="key", y_title="query", fmt=".2f", lecture=lecture_mode, cell=cell,
                                 domain=(0.0, 1.0) if weights else None)
                  for matrix, title in _panels]
    return alt.hconcat(*charts_row, spacing=24).resolve_scale(color="shared" if weights else "independent")


def heatmap_row(panels: list[tuple], tokens: list[str], *, name: str, caption: str, data_key: tuple = (),
                weights: bool = True, cell: int | None = None) -> None:
    """Several (T, T) heatmaps side by side in ONE figure (one download for the slide).

    panels: (matrix, title) pairs; weights=True puts every panel on the same 0..1 colour scale."""
    if cell is None and lecture:
        cell = 42  # two (6, 6) panels and their labels still fit a 1280-pixel projector
    figure = heatmap_figure(name, data_key, lecture, weights, cell, panels, tokens)
    show_chart(figure, name=name, caption=caption)


# ---------------------------------------------------------------------------------------------
# One renderer per pitfall
# ---------------------------------------------------------------------------------------------


def render_softmax_dim() -> None:
    pitfall = header("softmax_dim")
    side_by_side([pf.buggy_causal_attention], [attention.CausalAttention.forward])
    seed = seed_input()
    result = softmax_dim(seed)
    buggy_sums = result["sums"].query("version == 'buggy dim=1'")["row_sum"]
    a, b, c = st.columns(3)
    a.metric("Row sums, buggy", f"{buggy_sums.min():.3f} … {buggy_sums.max():.3f}",
             help="Each row is one query's weights over the keys; they should add up to 1.")
    b.metric("Row sums, fixed", "all 1.000")
    fixed_row, buggy_row = result["fixed_context_row0"], result["buggy_context_row0"]
    c.metric("Context of “Your” (2,)", f"[{fixed_row[0]:.4f}, {fixed_row[1]:.4f}]",
             delta=f"buggy: [{buggy_row[0]:.4f}, {buggy_row[1]:.4f}]", delta_color="off", delta_arrow="off",
             help="Fixed value; document 002 prints [-0.4519, 0.2216] for seed 123.")
    cap = f"CausalAttention(3, 2) after torch.manual_seed({seed}) on the book's six tokens (batch item 0)."
    heatmap_row([(result["buggy_weights"], "Buggy: softmax over dim=1"),
                 (result["fixed_weights"], "Fixed: softmax over dim=-1")], result["tokens"],
                name="pitfall-softmax-dim-weights", data_key=(seed,),
                caption="Attention weights: with dim=1 every COLUMN sums to 1, with dim=-1 every ROW does. " + cap)
    show_chart(pf.row_sums_chart(result["sums"], lecture=lecture, title="Row sums: buggy vs fixed"),
               name="pitfall-softmax-dim-row-sums",
               caption="Sum of each query's attention weights (dashed line: 1). " + cap)
    why(pitfall)


def render_mask_zero() -> None:
    pitfall = header("mask_zero")
    side_by_side([pf.buggy_mask_by_zero], [pf.fixed_mask_by_position, attention.causal_mask])
    result = mask_zero()
    a, b = st.columns(2)
    a.metric("Visible scores that are exactly 0", result["n_genuine_zero"],
             help="Scores of a query with itself or an EARLIER token: the mask must keep them.")
    b.metric("Visible positions the buggy mask hides", result["n_wrongly_hidden"], help="Fixed: 0.")
    left, right = st.columns([1, 2], gap="medium")
    with left:
        st.markdown("Five tokens (shape (5, 3)) built so that “on” scores **exactly 0** with “the” "
                    "(−1·1 + 1·0 + 1·1) and with “sat” (−1·1 + 1·1 + 1·0):")
        st.dataframe(pd.DataFrame(pf.ZERO_EMBEDDINGS, index=result["tokens"], columns=["d1", "d2", "d3"]))
    with right:
        st.markdown("The weights of those two visible keys:")
        st.dataframe(result["zero_cells"], hide_index=True,
                     column_config={c: st.column_config.NumberColumn(format="%.4f")
                                    for c in ("score", "buggy weight", "fixed weight")})
    cap = "Scores x·xᵀ/√3 of the constructed tokens."
    heatmap_row([(result["attn_scores"], "Scores")], result["tokens"], weights=False,
                name="pitfall-mask-zero-scores", caption=cap + " Row “on” has two genuine zeros.")
    heatmap_row([(result["buggy_weights"], "Buggy: masked where score == 0"),
                 (result["fixed_weights"], "Fixed: masked by position")], result["tokens"],
                name="pitfall-mask-zero-weights",
                caption="Weights after each mask. Buggy row “on” gives 0 to “the” and “sat”. " + cap)
    why(pitfall)


def render_mask_after_softmax() -> None:
    pitfall = header("mask_after_softmax")
    side_by_side([pf.buggy_mask_after_softmax], [pf.renormalised_mask_after_softmax, pf.fixed_mask_by_position])
    seed = seed_input()
    result = mask_after(seed)
    sums = result["sums"]
    buggy_sums = sums.query("version == 'mask after softmax'")["row_sum"]
    a, b, c = st.columns(3)
    a.metric("Row sums, mask after softmax", f"{buggy_sums.min():.3f} … {buggy_sums.max():.3f}")
    b.metric("Row sums, renormalised", "all 1.000")
    c.metric("Largest |renormalised − masked before|", f"{result['max_diff_renorm_vs_fixed']:.1e}",
             help="Float rounding only: the two are the same weights.")
    cap = f"SelfAttentionV2(3, 2) after torch.manual_seed({seed}) (the book uses 789), the six tokens."
    heatmap_row([(result["buggy_weights"], "Mask after softmax"),
                 (result["renormalised_weights"], "… then renormalise (= −∞ before)")], result["tokens"],
                name="pitfall-mask-after-weights", data_key=(seed,),
                caption="Causal weights masked after the softmax, without and with renormalisation; the "
                        "renormalised weights equal the −∞-before-softmax ones (largest difference "
                        f"{result['max_diff_renorm_vs_fixed']:.1e}). " + cap)
    show_chart(pf.row_sums_chart(sums, lecture=lecture, title="Row sums of the three versions"),
               name="pitfall-mask-after-row-sums", caption="Sum of each query's weights (dashed: 1). " + cap)
    why(pitfall)


def render_no_scaling() -> None:
    pitfall = header("no_scaling")
    side_by_side([pf.buggy_unscaled_weights], [pf.fixed_scaled_weights, pf.softmax_jacobian_norm])
    seed = seed_input()
    table = scaling(seed)
    last = table[table["d_k"] == max(pf.SCALING_DKS)].set_index("version")
    buggy, fixed = last.loc["no scaling (buggy)"], last.loc["÷ √d_k (fixed)"]
    a, b, c = st.columns(3)
    a.metric("Max weight at d_k = 512", f"{buggy['max weight']:.3f}", delta=f"scaled: {fixed['max weight']:.3f}",
             delta_color="off", delta_arrow="off")
    b.metric("Entropy at d_k = 512 (nats)", f"{buggy['entropy (nats)']:.3f}",
             delta=f"scaled: {fixed['entropy (nats)']:.3f}; uniform: ln 8 = 2.079", delta_color="off", delta_arrow="off")
    c.metric("Softmax gradient at d_k = 512", f"{buggy['softmax gradient']:.3f}",
             delta=f"scaled: {fixed['softmax gradient']:.3f}", delta_color="off", delta_arrow="off",
             help="Mean Frobenius norm of d softmax / d scores; 0 means no gradient reaches the scores.")
    cap = (f"Queries and keys ~ N(0, 1) of shape (64, 8, d_k): 64 sequences of 8 tokens per d_k, seed {seed}; "
           "means over every query row.")
    show_chart(pf.scaling_figure(table, lecture=lecture), name="pitfall-no-scaling",
               caption="Max weight, entropy and softmax gradient against d_k, without and with ÷√d_k. " + cap)
    short = {"score std": "score std", "max weight": "max weight", "entropy (nats)": "entropy",
             "softmax gradient": "gradient"}
    wide = table.pivot(index="d_k", columns="version", values=list(short))
    wide.columns = [f"{short[metric]} {'raw' if version.startswith('no') else '÷√d_k'}"
                    for metric, version in wide.columns]
    st.dataframe(wide.reset_index(), hide_index=True, height=36 * (len(wide) + 1) + 4,
                 column_config={c: st.column_config.NumberColumn(format="%.3f", width="small") for c in wide.columns})
    st.caption("raw: no scaling (the bug); ÷√d_k: scaled. Entropy in nats (uniform over 8 keys: 2.079); "
               "gradient: mean norm of the softmax Jacobian.")
    why(pitfall)


def context_input() -> int:
    return state.bound(st.slider, "Context size (window length)", settings, "context_size", prefix=PREFIX,
                       min_value=1, max_value=32, help="The lecture uses 12.")


def render_short_names() -> None:
    pitfall = header("short_names")
    side_by_side([pf.buggy_lecture_windows], [data.name_windows], fixed_height=480)
    context_size = context_input()
    result = short_names(context_size)
    n = result["n_names"]
    a, b, c, d = st.columns(4)
    a.metric(f"Names with no example, lecture (of {n:,})", f"{result['lecture_zero']:,}",
             delta=f"{result['lecture_zero'] / n:.1%} of all names", delta_color="inverse", delta_arrow="off")
    b.metric(f"Names with no example, ours (of {n:,})", f"{result['our_zero']:,}")
    c.metric("Training examples, lecture", f"{result['lecture_windows']:,}")
    d.metric("Training examples, ours", f"{result['our_windows']:,}",
             help=f"{result['our_targets']:,} real next-character targets (padding excluded).")
    cap = f"All {n:,} names of data/names.txt, context size {context_size}."
    show_chart(pf.names_length_chart(result["table"], lecture=lecture), name="pitfall-short-names",
               caption="Number of names of each length, coloured by whether the lecture's windowing "
                       "gives them any example. " + cap)
    table = result["table"]
    st.dataframe(table, hide_index=True, height=36 * (len(table) + 1) + 4)
    why(pitfall)


def race_key() -> tuple:
    return (settings.optim_steps, settings.seed, float(settings.adamw_lr))


def render_sgd() -> None:
    pitfall = header("sgd")
    side_by_side([pf.buggy_sgd_config, engine.lecture_config],
                 [pf.fixed_adamw_config, engine._make_optimizer])
    a, b, c = st.columns(3)
    with a:
        state.bound(st.number_input, "Steps per optimizer", settings, "optim_steps", prefix=PREFIX,
                    min_value=10, max_value=1000, step=50,
                    help="The lecture trains 1000 steps; 300 take roughly 5-10 s per optimizer on "
                         "2 CPU cores.")
    with b:
        state.bound(st.selectbox, "AdamW learning rate", settings, "adamw_lr", prefix=PREFIX,
                    options=list(pf.ADAMW_LRS), format_func=lambda v: f"{v:g}")
    with c:
        seed_input()
    if settings.optim_steps > budget.LIMITS.max_steps:
        st.warning(f"This server allows at most {budget.LIMITS.max_steps:,} steps per run; "
                   f"using {budget.LIMITS.max_steps:,}.", icon=":material/warning:")
        settings.optim_steps = budget.LIMITS.max_steps
    key = race_key()
    done = finished_races().get(key)
    run = st.session_state.get(RACE_KEY)
    running = done is None and run is not None and run["key"] == key and run.get("error") is None
    if done is None and not running:
        label = f"Train both for {settings.optim_steps} steps"
        if st.button(label, type="primary", icon=":material/play_arrow:", key="pitfalls.race_start"):
            with layout.friendly_errors("the training runs"):
                st.session_state[RACE_KEY] = {"key": key, "error": None, "trainers": pf.race_trainers(
                    settings.optim_steps, settings.seed, float(settings.adamw_lr), race_data())}
                running = True
    st.fragment(race_view, run_every=0.5 if running else None, key="pitfalls_race")(key)
    why(pitfall)


def _train_tick(run: dict) -> bool:
    """One slice of each unfinished run; False when the server's training slots were all busy."""
    owner = st.session_state.setdefault("pitfalls.owner", uuid.uuid4().hex)
    granted = True
    try:
        for trainer in run["trainers"].values():
            if not trainer.done:
                result = trainer.train(time_budget_s=RACE_TICK_S, slot=budget.SLOTS.slot(owner, timeout=0.2))
                granted = granted and result.ran
    except ValueError as exc:  # TrainingError (diverged) and bad settings
        run["error"] = str(exc)
    if not granted:
        ahead = budget.SLOTS.position(owner)
        st.caption(f":material/hourglass_top: Other sessions are training; waiting for a slot"
                   + (f" ({ahead} ahead)." if ahead else "."))
    return granted


def race_view(key: tuple) -> None:
    """Train a slice of both runs (if running) and redraw the curves."""
    done = finished_races().get(key)
    run = st.session_state.get(RACE_KEY)
    if done is None and (run is None or run["key"] != key):
        st.info("Press **Train both** to train the lecture's GPT with each optimizer, from the same "
                "seed on the same batches. The result is kept for everyone on this server.",
                icon=":material/model_training:")
        return
    if done is None:
        if run.get("error") is None:
            _train_tick(run)
        if run.get("error"):
            st.error(f"Training stopped: {run['error']}", icon=":material/block:")
        trainers = run["trainers"]
        for label, trainer in trainers.items():
            st.progress(trainer.step / trainer.config.max_steps,
                        text=f"{label}: step {trainer.step} of {trainer.config.max_steps}")
        if all(t.done for t in trainers.values()) and run.get("error") is None:
            store = finished_races()
            store[key] = pf.race_result(trainers)
            while len(store) > MAX_KEPT_RACES:  # oldest first: dicts keep insertion order
                store.pop(next(iter(store)), None)
            st.session_state.pop(RACE_KEY, None)
            st.rerun()  # a full rerun turns the fragment's timer off
        histories = {label: t.history for label, t in trainers.items()}
        final = {label: t.last_val_loss for label, t in trainers.items()}
    else:
        histories, final = done["histories"], done["final_val"]
    show_race(histories, final, key, finished=done is not None)


def show_race(histories: dict, final: dict, key: tuple, finished: bool) -> None:
    steps, seed, lr = key
    if finished:
        st.markdown(f"**Validation loss after {steps} steps**, on the whole validation split:")
    else:
        st.markdown(f"**Latest validation loss**, on {pf.RACE_VAL_WINDOWS:,} held-out windows:")
    cols = st.columns(len(final) + 1)
    for column, (label, val) in zip(cols, final.items()):
        column.metric(label, "—" if val is None else f"{val:.3f}",
                      help="Mean cross-entropy per character, in nats (a uniform guess is ln 27 = 3.30).")
    values = [v for v in final.values() if v is not None]
    if finished and len(values) == 2:
        cols[-1].metric("SGD − AdamW", f"{values[0] - values[1]:+.3f}",
                        help="Positive: SGD is still behind after the same number of steps.")
    frame = pf.race_frame(histories)
    if len(frame):
        chart = charts.line_chart(frame, x="step", y="loss", series="optimizer", dash="split",
                                  title="SGD (lecture) vs AdamW: same model, data, batches and steps",
                                  x_title="optimisation step", y_title="loss (nats per character)",
                                  lecture=lecture)
        show_chart(chart, name="pitfall-sgd-vs-adamw", key="pitfall-sgd-vs-adamw",
                   caption=f"The lecture's GPT (3 layers, 4 heads, d_embed 64, dropout 0.1), batch 32, "
                           f"{steps} steps each, seed {seed}; SGD lr 0.01 vs AdamW lr {lr:g}. Validation "
                           f"points every {max(10, steps // 10)} steps on {pf.RACE_VAL_WINDOWS:,} held-out "
                           "windows; the final numbers use the whole validation split. "
                           + ("Finished." if finished else "Training…"), downloads=finished)
    if finished:
        st.caption("COURSE.md reports about 2.40 (SGD) against 2.10 (AdamW) after 1000 steps; "
                   "the numbers above are measured here.")


def render_vocab_order() -> None:
    pitfall = header("vocab_order")
    side_by_side([pf.buggy_vocab], [pf.fixed_vocab, tokenizers.CharTokenizer.from_text])
    a, b, c = st.columns(3)
    with a:
        hash_a = state.bound(st.number_input, "Hash seed of the run that saved", settings, "hash_seed_a",
                             prefix=PREFIX, min_value=0, max_value=10_000, step=1)
    with b:
        hash_b = state.bound(st.number_input, "Hash seed of the run that loads", settings, "hash_seed_b",
                             prefix=PREFIX, min_value=0, max_value=10_000, step=1)
    with c:
        seed = seed_input()
    if hash_a == hash_b:
        st.info("Both runs use the same hash seed, so even `list(set(...))` gives the same order: "
                "pick two different seeds to see a restart.", icon=":material/info:")
    result = vocab_order(hash_a, hash_b, seed)
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Characters whose id changed: buggy", f"{result['buggy_changed']} of {result['n_chars']}")
    m2.metric("Characters whose id changed: fixed", f"{result['fixed_changed']} of {result['n_chars']}")
    n_samples = len(result["samples"])
    m3.metric("Samples unchanged after the restart: buggy", f"{result['buggy_same_samples']} of {n_samples}")
    m4.metric("Samples unchanged after the restart: fixed", f"{result['fixed_same_samples']} of {n_samples}")
    st.markdown("A bigram model is fitted on all names under **run A**'s ids and saved; its samples "
                f"(seed {seed}) are decoded with run A's vocabulary and with **run B**'s:")
    st.dataframe(result["samples"], hide_index=True)
    with st.expander("Every character's id in both runs", icon=":material/table:"):
        st.dataframe(result["ids"], hide_index=True)
    st.caption("The shuffle in `buggy_vocab` stands in for PYTHONHASHSEED: in one Python process a "
               "set's order is fixed, but every new process (a restart, another student's laptop) "
               "salts string hashes differently.")
    why(pitfall)


def render_fit_indent() -> None:
    pitfall = header("fit_indent")
    side_by_side([pf.buggy_fit], [pf.fixed_fit], wrap=False)
    a, b, c = st.columns(3)
    with a:
        iters = state.bound(st.number_input, "train_iters", settings, "fit_iters", prefix=PREFIX,
                            min_value=10, max_value=1000, step=10)
    with b:
        every = state.bound(st.number_input, "eval_iters", settings, "eval_iters", prefix=PREFIX,
                            min_value=1, max_value=500, step=1)
    with c:
        seed = seed_input()
    try:
        pf.check_fit_args(iters, every)
    except ValueError as exc:
        st.error(f"{exc}. Showing the defaults (train_iters 200, eval_iters 10) instead.",
                 icon=":material/block:")
        iters, every = 200, 10
    with st.spinner("Training both loops…"):
        result = fit_indent(iters, every, seed)
    m1, m2, m3 = st.columns(3)
    m1.metric("Optimizer steps: buggy", result["buggy_steps"], delta=f"in {iters} iterations",
              delta_color="off", delta_arrow="off")
    m2.metric("Optimizer steps: fixed", result["fixed_steps"])
    m3.metric("Validation loss at the end", f"{result['buggy_val']:.3f}",
              delta=f"fixed: {result['fixed_val']:.3f}", delta_color="off", delta_arrow="off")
    chart = charts.line_chart(result["curve"], x="iteration", y="loss", series="version", points=True,
                              title="Validation loss during fit", x_title="iteration",
                              y_title="validation loss (nats)", lecture=lecture)
    show_chart(chart, name="pitfall-fit-indent",
               caption=f"The slides' one-head model (n_embd 32, head 16, block 8, batch 6), Adam lr "
                       f"{pf.FIT_LR}, on our repeated pangram; train_iters {iters}, eval_iters {every}, "
                       f"seed {seed}.")
    why(pitfall)


def render_prep_global() -> None:
    pitfall = header("prep_global")
    side_by_side([pf.buggy_prep], [pf.fixed_prep])
    corpus = state.bound(st.text_area, "Corpus passed to prep(corpus)", settings, "prep_corpus",
                         prefix=PREFIX, max_chars=pf.MAX_CORPUS_CHARS, height=90,
                         help=f"The notebook's global `text` is {len(pf.text)} characters of a repeated "
                              "pangram.")
    try:
        result = pf.prep_global_demo(corpus)
        st.session_state[LAST_CORPUS_KEY] = corpus
    except ValueError as exc:
        st.error(f"Could not use this corpus: {exc}", icon=":material/block:")
        last = st.session_state.get(LAST_CORPUS_KEY, pf.PitfallsSettings().prep_corpus)
        st.caption(f"Showing the last valid corpus: {last!r}")
        result = pf.prep_global_demo(last)
    a, b, c = st.columns(3)
    a.metric("Characters in your corpus", result["corpus_chars"])
    buggy = result["buggy"]
    b.metric("Characters the buggy prep split",
             len(buggy.value["train_text"]) + len(buggy.value["val_text"]) if buggy.ok else "crashed",
             help=f"The global text has {result['global_chars']} characters.")
    c.metric("Characters the fixed prep split",
             len(result["fixed"].value["train_text"]) + len(result["fixed"].value["val_text"]))
    if not buggy.ok:
        st.markdown("The vocabulary comes from your corpus, but the text it encodes is the global one, "
                    "so the first character your corpus lacks crashes the encoder:")
        error_box(buggy.error)
        st.caption("Now add every character of the global text to your corpus (for example append "
                   f"{pf.text[:45]!r}): the buggy prep runs, silently, on the wrong text.")
    else:
        st.warning(f"The buggy prep ran without an error, but it split the notebook's global text "
                   f"({result['global_chars']} characters), not your {result['corpus_chars']}.",
                   icon=":material/warning:")
    st.dataframe(result["table"], hide_index=True)
    why(pitfall)


def render_no_position() -> None:
    pitfall = header("no_position")
    side_by_side([pf.buggy_forward_no_position], [models.SingleHeadLM.forward])
    seed = seed_input()
    with st.spinner("Training both models…"):
        result = no_position(seed)
    diffs = result["max_logit_diff"]
    buggy_diff, fixed_diff = diffs.values()
    a, b = st.columns(2)
    a.metric("Largest change of the last logits: no positions", f"{buggy_diff:.1e}",
             help="Float rounding only: the prediction is the same for any order of the earlier tokens.")
    b.metric("… with a position embedding", f"{fixed_diff:.3f}")
    st.markdown(f"Input {result['text']!r} and the same characters with all but the last shuffled, "
                f"{result['permuted']!r} (seed {seed}). Both models trained {result['train_iters']} steps "
                "on the slides' sentence from the same seed.")
    st.dataframe(result["predictions"], hide_index=True)
    frame = pd.DataFrame({"model": list(diffs), "max |Δ logit|": list(diffs.values())})
    chart = charts.bar_chart(frame["max |Δ logit|"], frame["model"], title="How much the last output changes",
                             y_title="max |Δ logit| at the last position", fmt=".2e", lecture=lecture)
    show_chart(chart, name="pitfall-no-position",
               caption=f"Largest absolute change of the last position's logits when the first 7 of "
                       f"{result['text']!r} are permuted; seed {seed}.")
    why(pitfall)


def render_encode_shape() -> None:
    pitfall = header("encode_shape")
    side_by_side([pf.buggy_lecture_windows, pf.buggy_unpack], [data.name_windows], fixed_height=560)
    context_size = context_input()
    result = encode_shape(context_size)
    if result["buggy_shape"] is None:
        st.warning("No name is longer than this context, so the lecture's dataset is empty.")
        return
    a, b = st.columns(2)
    a.metric("Batch of inputs: lecture", str(result["buggy_shape"]))
    b.metric("Batch of inputs: ours", str(result["fixed_shape"]))
    left, right = st.columns(2)
    with left:
        st.markdown("`batch_size, context_size = x.size()` (the lecture's forward) on the lecture's batch:")
        error_box(result["buggy_unpack"].error)
        st.markdown("Our GPT on the lecture's batch:")
        error_box(result["buggy_model"].error)
    with right:
        st.markdown("The same on our batch:")
        st.code(f"batch_size, context_size = {result['fixed_unpack'].value}\n"
                f"logits {result['fixed_logits_shape']}, loss {result['fixed_loss']:.4f}\n"
                "(an untrained model: about ln 27 = 3.30)", language="text", wrap_lines=True)
    st.markdown("The first example each way:")
    st.code(f"lecture: {result['buggy_first']}\nours:    {result['fixed_first']}", language="text",
            wrap_lines=True)
    st.dataframe(pd.DataFrame([
        {"version": "lecture (encode per char)", "inputs": str(result["buggy_shape"]),
         "targets": str(result["buggy_target_shape"])},
        {"version": "ours (name_windows)", "inputs": str(result["fixed_shape"]),
         "targets": str(result["fixed_target_shape"])}]), hide_index=True)
    why(pitfall)


def render_config_end_id() -> None:
    pitfall = header("config_end_id")
    side_by_side([pf.BuggyLectureGPT.forward, pf.BuggyLectureGPT.generate], [models.generate],
                 fixed_height=640)
    seed = seed_input()
    trained_key = next((k for k in reversed(finished_races()) if k[1] == seed), None)
    result = config_end_id(seed, trained_key)
    trained = trained_key is not None
    st.markdown("1. The lecture's `generate` as written:")
    error_box(result["first_error"])
    st.markdown("2. Its `forward` on an input one token longer than the context: the assert's own "
                "message reads `self.config`, so the student sees this instead of the assert:")
    error_box(result["assert_error"] or "no error (Python runs with -O, so asserts are skipped)")
    st.markdown("3. With `self.config` patched in by hand, the list `end_id` makes the context (1, T, 1), "
                "which `forward` cannot unpack:")
    error_box(result["second_error"])
    st.markdown(f"4. And the stop test could never fire: `tokenizer.encode('.')` is `{result['end_id']}`, "
                f"so `0 == {result['end_id']}` is **{result['end_test']}**.")
    which = ("the AdamW model trained on the SGD-vs-AdamW pitfall" if trained else
             "an untrained GPT (random letters; train the race on the SGD-vs-AdamW pitfall with this "
             "seed to sample from a trained one)")
    st.markdown(f"**Fixed:** `core.models.generate(..., stop_token=0)` samples from {which}:")
    samples = pd.DataFrame({"sample": range(1, len(result["fixed_names"]) + 1), "name": result["fixed_names"]})
    st.dataframe(samples, hide_index=True, width=360)
    why(pitfall)


def render_module_typos() -> None:
    pitfall = header("module_typos")
    side_by_side([pf.BuggyForwardTypo, pf.buggy_build_liner, pf.BuggyOutProj.__init__],
                 [attention.MultiHeadAttention.__init__])
    st.caption("`BuggyOutProj.forward` is the usual multi-head forward; only its `__init__` differs from the fix.")
    table = module_typos(settings.seed)
    st.markdown("Each one run on the book's batch of shape (2, 6, 3), with d_out = 4 and 2 heads:")
    for row in table.itertuples(index=False):
        st.markdown(f"`{row.code}`")
        st.code(row.outcome, language="text", wrap_lines=True)
    why(pitfall)


def render_spelling() -> None:
    pitfall = header("spelling")
    side_by_side([pf.buggy_find_attention_class], [pf.fixed_find_attention_class])
    result = spelling()
    left, right = st.columns(2, gap="medium")
    with left:
        st.markdown("Code that uses the lecture's name cannot find our class:")
        error_box(result["buggy_error"], "found the class")
    with right:
        st.markdown("The right spelling finds it:")
        st.code(f"<class '{result['fixed_class']}'>", language="text")
    st.markdown("Attention classes inside our GPT: " + ", ".join(f"`{n}`" for n in result["attention_classes"]))
    why(pitfall)


# ---------------------------------------------------------------------------------------------
# Overview
# ---------------------------------------------------------------------------------------------


def measured_headlines() -> dict[str, str]:
    """One measured number per cheap pitfall (the trained ones say where to run them)."""
    out = {}
    sd = softmax_dim(settings.seed)["sums"]
    buggy = sd.query("version == 'buggy dim=1'")["row_sum"]
    out["softmax_dim"] = f"row sums {buggy.min():.2f} … {buggy.max():.2f} instead of 1"
    mz = mask_zero()
    out["mask_zero"] = f"{mz['n_wrongly_hidden']} visible scores of exactly 0 hidden"
    ma = mask_after(settings.seed)["sums"]
    after = ma.query("version == 'mask after softmax'")["row_sum"]
    out["mask_after_softmax"] = f"row sums {after.min():.2f} … {after.max():.2f}"
    sc = scaling(settings.seed)
    row = sc[(sc["d_k"] == 512) & (sc["version"] == "no scaling (buggy)")].iloc[0]
    out["no_scaling"] = f"d_k 512: max weight {row['max weight']:.3f}, entropy {row['entropy (nats)']:.3f}"
    sn = short_names(settings.context_size)
    out["short_names"] = (f"context {settings.context_size}: {sn['lecture_zero']:,} of {sn['n_names']:,} "
                          f"names give no example (ours: {sn['our_zero']})")
    done = finished_races().get(race_key())
    out["sgd"] = ("val " + " vs ".join(f"{v:.3f}" for v in done["final_val"].values())
                  if done else "train it on its page")
    vo = vocab_order(settings.hash_seed_a, settings.hash_seed_b, settings.seed)
    out["vocab_order"] = f"{vo['buggy_changed']} of {vo['n_chars']} ids change after a restart"
    every = max(1, settings.eval_iters)
    out["fit_indent"] = f"{-(-settings.fit_iters // every)} optimizer steps in {settings.fit_iters} iterations"
    out["prep_global"] = "KeyError or the wrong text"
    out["no_position"] = "last output identical under permutation"
    es = encode_shape(settings.context_size)
    out["encode_shape"] = (f"batches of shape {es['buggy_shape']}" if es["buggy_shape"]
                           else "no name longer than the context")
    out["config_end_id"] = "AttributeError: no attribute 'config'"
    out["module_typos"] = "NotImplementedError, AttributeError, RuntimeError"
    out["spelling"] = "causal, not casual"
    return out


def open_pitfall(key: str) -> None:
    state.set_field(PREFIX, "pitfall", key)


def render_overview() -> None:
    st.header("All pitfalls at a glance", divider="gray")
    st.markdown("The course documents teach the right ideas, but their code has bugs. Each one runs "
                "here as written, beside the fix, with the numbers that show the difference.")
    with st.spinner("Running the quick demos…"):
        headlines = measured_headlines()
    for i, pitfall in enumerate(pf.PITFALL_LIST, start=1):
        if i % 2 == 1:  # a new row of two cards, so the reading order is the course order
            row = st.columns(2, gap="medium")
        with row[(i - 1) % 2].container(border=True, height="stretch"):
            st.markdown(f"**{i} · {pitfall.title}**  \n:gray[{pitfall.where}]")
            st.markdown(pitfall.effect)
            text, button = st.columns([4, 1], vertical_alignment="center")
            text.markdown(f":material/science: **Here:** {headlines.get(pitfall.key, '')}")
            button.button("Open", key=f"pitfalls.open.{pitfall.key}", on_click=open_pitfall,
                          args=(pitfall.key,), width="stretch")


RENDERERS: dict[str, Callable[[], None]] = {
    "overview": render_overview,
    "softmax_dim": render_softmax_dim,
    "mask_zero": render_mask_zero,
    "mask_after_softmax": render_mask_after_softmax,
    "no_scaling": render_no_scaling,
    "short_names": render_short_names,
    "sgd": render_sgd,
    "vocab_order": render_vocab_order,
    "fit_indent": render_fit_indent,
    "prep_global": render_prep_global,
    "no_position": render_no_position,
    "encode_shape": render_encode_shape,
    "config_end_id": render_config_end_id,
    "module_typos": render_module_typos,
    "spelling": render_spelling,
}


def label_of(key: str) -> str:
    if key == "overview":
        return "Overview: all pitfalls"
    return f"{pf.PITFALL_CHOICES.index(key)} · {pf.PITFALLS[key].title}"


def step_pitfall(delta: int) -> None:
    index = pf.PITFALL_CHOICES.index(settings.pitfall)
    state.set_field(PREFIX, "pitfall", pf.PITFALL_CHOICES[(index + delta) % len(pf.PITFALL_CHOICES)])


# ---------------------------------------------------------------------------------------------
# The page
# ---------------------------------------------------------------------------------------------

st.title("Pitfalls")
st.caption("The bugs of the original notebooks and slides, run live beside the correct code. "
           "Every number below is computed now, by the code shown.")
menu, prev_col, next_col = st.columns([3, 1, 1], vertical_alignment="bottom")
with prev_col:
    st.button("Back", icon=":material/arrow_back:", key="pitfalls.prev", on_click=step_pitfall,
              args=(-1,), width="stretch")
with next_col:
    st.button("Next", icon=":material/arrow_forward:", key="pitfalls.next", on_click=step_pitfall,
              args=(1,), width="stretch")
with menu:
    state.bound(st.selectbox, "Pitfall", settings, "pitfall", prefix=PREFIX, options=list(pf.PITFALL_CHOICES),
                format_func=label_of)

with layout.friendly_errors("this pitfall"):
    RENDERERS[settings.pitfall]()

state.sync_url(settings)
