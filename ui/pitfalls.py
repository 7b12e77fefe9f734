"""Streamlit pieces of the Pitfalls page (pages/10_pitfalls.py).

* layout: a pitfall's header, its code side by side, the "why" box, caught errors, rows of
  heatmaps, widgets whose bounds come from PitfallsSettings' field specs, the menu, the overview;
* caches: `demo(key, *args)` and `names_demo(key, *args)` run `core.pitfalls.<key>.demo` once
  per argument set (every demo is deterministic in its arguments);
* the SGD/AdamW race: `race_panel` keeps the session's `core.pitfalls.sgd.OptimizerRace` and hands
  it to the app's one live-training fragment (`ui.live.live_fragment`), which trains it a slice
  per tick; finished races are kept for every session (`finished_races`).

The numbers come from core.pitfalls, the charts from core.viz.pitfalls; this module only lays
them out. "Show the code" is literal: `side_by_side` shows the real source of the functions that
computed what the page shows, read from their files at run time.
"""

from __future__ import annotations

import math
import textwrap
from typing import Callable, Iterable

import pandas as pd
import streamlit as st

from core import budget, data, pitfalls as pf, runs, tokenizers, viz
from core.live_training import Outcome
from core.pitfalls import sgd
from core.viz import fit, pitfalls as viz_pitfalls
from ui import layout, state
from ui.charts import download_buttons, draw_chart, show_chart
from ui.code import note_shown, source_of
from ui.live import live_fragment

PREFIX = "pitfalls"  # session-state key of the page's PitfallsSettings and prefix of its widgets


def header(key: str) -> pf.Pitfall:
    """The pitfall's title, where it is in the originals and what goes wrong."""
    pitfall = pf.PITFALLS[key]
    st.header(pitfall.title, divider="gray")
    st.markdown(f"**Where:** {pitfall.where}  \n**What goes wrong:** {pitfall.effect}")
    return pitfall


def why(pitfall: pf.Pitfall) -> None:
    st.info(f"**Why:** {pitfall.why}", icon=":material/lightbulb:")


def _code(fn: Callable, height: int | None = None, wrap: bool = True) -> None:
    """The real source of `fn` under its name and module (the honest-code test records it). Name and
    module apart: as one dotted path ("core.pitfalls.softmax_dim.buggy_causal_attention") a code
    column at 1024 px broke it inside a word ("buggy_causal_at|tention")."""
    note_shown([fn])
    st.caption(f"`{fn.__qualname__}` in `{fn.__module__}`")
    st.code(textwrap.dedent(source_of(fn)), language="python", height=height or "content", wrap_lines=wrap)


# The width of each of the two code columns. Side by side where the page has room for both
# (from a ~1340 px window with the sidebar open, ~1380 in lecture mode), else one under the other:
# two halves of a 1024 px page (~250 px each) broke code and names inside words ("sel|f.mask").
# At these widths no word of the pitfalls' sources is broken (14 px code; 16 px in lecture mode).
CODE_COLUMN_PX = {False: 430, True: 490}


def side_by_side(buggy: Iterable[Callable], fixed: Iterable[Callable],
                 demo: Callable | Iterable[Callable] = (), fixed_height: int | None = None,
                 wrap: bool = True) -> None:
    """The buggy code and the fixed code, their real source, side by side when the page has room
    for two columns of CODE_COLUMN_PX (a long fixed source scrolls inside `fixed_height` pixels so
    the two stay side by side), else the fixed under the buggy; and below, folded, `demo`: the
    function(s) that ran both and measured the numbers on the page. wrap=False where indentation is
    the lesson: a wrapped line would start at the left margin."""
    width = CODE_COLUMN_PX[state.lecture_mode()]
    with st.container(horizontal=True, gap="small"):  # a row that wraps what does not fit
        for title, fns, height in ((":material/bug_report: As in the original", buggy, None),
                                   (":material/check_circle: Fixed", fixed, fixed_height)):
            with st.container(width=width):
                st.markdown(f"**{title}**")
                for fn in fns:
                    _code(fn, height, wrap)
    demo = [demo] if callable(demo) else list(demo)
    if demo:
        with st.expander("How this page measures it", icon=":material/code:"):
            for fn in demo:
                _code(fn)


def metric_row():
    """A row of metrics (st.metric in it) that wraps: each metric as wide as its value at least, a
    metric that does not fit goes under the others. In a third of a 1024 px page (st.columns(3)) a
    value such as "[-0.4519, 0.2216]" was cut to "[-0.4519, …"."""
    return st.container(horizontal=True, gap="medium")


def decoded_samples(samples: pd.DataFrame) -> pd.DataFrame:
    """core.pitfalls.vocab_order's samples, one row per (vocabulary, sample): decoded in run A, in
    run B, and whether the two agree. Its five columns side by side (the ids and four decodings)
    hid the last ones behind a scroll bar at 1024 px."""
    parts = []
    for version in ("buggy", "fixed"):
        run_a, run_b = samples[f"{version}: decoded in run A"], samples[f"{version}: decoded in run B"]
        parts.append(pd.DataFrame({"vocabulary": version, "decoded in run A": run_a, "decoded in run B": run_b,
                                   "same": run_a == run_b}))
    return pd.concat(parts, ignore_index=True)


def widget(settings: pf.PitfallsSettings, field: str, **overrides):
    """The widget of `settings.<field>`, built from its spec (label, bounds or choices, help)."""
    return state.spec_widget(settings, field, prefix=PREFIX, **overrides)


def error_box(text: str | None, no_error: str = "ran without an error") -> None:
    """A crash of the ORIGINAL code, shown as the message it raised (never a traceback)."""
    if not text:
        st.success(no_error, icon=":material/check:")
        return
    st.markdown("**Raised:**")
    st.code(text, language="text", wrap_lines=True)


@st.cache_resource(show_spinner=False, max_entries=64)
def _heatmap_figure(name: str, data_key: tuple, lecture: bool, weights: bool, cell: int | None,
                    panel: int | None, _panels: list[tuple], _tokens: list[str]):
    """Build the Altair figure once per (figure, data, mode, panel): Altair's own checks cost more
    than the math. `panel` None is every panel in one figure, else that panel alone on the
    figure's colour scale. `data_key` names the numbers (e.g. the seed); Altair charts are never
    mutated (every .properties/.configure returns a copy), so sharing one object is safe."""
    if panel is None:
        return viz_pitfalls.heatmap_row(_panels, _tokens, weights=weights, lecture=lecture, cell=cell)
    return viz_pitfalls.heatmap_row([_panels[panel]], _tokens, weights=weights, lecture=lecture, cell=cell,
                                    domain=viz_pitfalls.shared_domain(_panels, weights))


def heatmap_row(panels: list[tuple], tokens: list[str], *, name: str, caption: str, data_key: tuple = (),
                weights: bool = True) -> None:
    """Several (T, T) heatmaps, (matrix, title) pairs, side by side with one caption and one
    Download menu of the figure with every panel (one picture for a slide). Each panel is a chart
    of its own in a row that wraps, so that in a narrow column (1024 px with the sidebar open) it
    is laid out again with its numbers at full size (core/viz/fit.py) or goes under the other,
    instead of the whole figure being scaled down as a picture."""
    lecture = state.lecture_mode()
    cell = 42 if lecture else None  # two (6, 6) panels and their labels still fit a 1280-pixel projector
    if len(panels) == 1:
        show_chart(_heatmap_figure(name, data_key, lecture, weights, cell, None, panels, tokens),
                   name=name, caption=caption)
        return
    charts = [_heatmap_figure(name, data_key, lecture, weights, cell, i, panels, tokens) for i in range(len(panels))]
    built = [viz.vega_spec(chart, lecture) for chart in charts]
    specs = [viz.fit_to_column(spec) for spec in built]
    # bottoms aligned: a title on two lines beside one on one line would lower that plot alone
    row = layout.wrapping_columns(len(panels), key=name, side_by_side=True, vertical_alignment="bottom",
                                  min_width=[_floor_px(s) for s in built])
    for chart, spec, column in zip(charts, specs, row):
        with column:
            draw_chart(chart, spec, lecture=lecture,
                       description=viz.description(viz.chart_title(chart) or name, caption))
    st.caption(caption)
    download_buttons(lambda: _heatmap_figure(name, data_key, lecture, weights, cell, None, panels, tokens),
                     title=name, caption=caption, key=name, lecture=lecture)


def _floor_px(spec: dict | None) -> int | None:
    """How narrow a panel may get for its chart (`spec` as built, before fit_to_column): the least
    width the chart can be laid out at (fit.SHRINK_TO of its own), its own width where it cannot
    be laid out again."""
    natural = viz.natural_width(spec) if spec is not None else None
    if natural is None:
        return None
    return math.ceil(natural * fit.SHRINK_TO) if fit.can_fit(spec) else natural


# ---------------------------------------------------------------------------------------------
# The menu and the overview
# ---------------------------------------------------------------------------------------------


def _open(key: str) -> None:
    state.set_field(PREFIX, "pitfall", key)


def _step(delta: int) -> None:
    index = pf.PITFALL_CHOICES.index(st.session_state[PREFIX].pitfall)
    _open(pf.PITFALL_CHOICES[(index + delta) % len(pf.PITFALL_CHOICES)])


def pitfall_menu(settings: pf.PitfallsSettings) -> None:
    """The pitfall selectbox with Back and Next buttons (a lesson lock on `pitfall` holds all three)."""
    menu, prev_col, next_col = st.columns([3, 1, 1], vertical_alignment="bottom")
    with prev_col:
        st.button("Back", icon=":material/arrow_back:", key="pitfalls.prev", on_click=_step,
                  args=(-1,), width="stretch")
    with next_col:
        st.button("Next", icon=":material/arrow_forward:", key="pitfalls.next", on_click=_step,
                  args=(1,), width="stretch")
    with menu:
        widget(settings, "pitfall")


def measured_headlines(settings: pf.PitfallsSettings) -> dict[str, str]:
    """One measured number per cheap pitfall (the trained ones say where to run them)."""
    out = {}
    buggy = demo("softmax_dim", settings.seed)["sums"].query("version == 'buggy dim=1'")["row_sum"]
    out["softmax_dim"] = f"row sums {buggy.min():.2f} … {buggy.max():.2f} instead of 1"
    out["mask_zero"] = f"{demo('mask_zero')['n_wrongly_hidden']} visible scores of exactly 0 hidden"
    after = demo("mask_after_softmax", settings.seed)["sums"].query("version == 'mask after softmax'")["row_sum"]
    out["mask_after_softmax"] = f"row sums {after.min():.2f} … {after.max():.2f}"
    sc = demo("no_scaling", settings.seed)
    row = sc[(sc["d_k"] == 512) & (sc["version"] == "no scaling (buggy)")].iloc[0]
    out["no_scaling"] = f"d_k 512: max weight {row['max weight']:.3f}, entropy {row['entropy (nats)']:.3f}"
    sn = names_demo("short_names", settings.context_size)
    out["short_names"] = (f"context {settings.context_size}: {sn['lecture_zero']:,} of {sn['n_names']:,} "
                          f"names give no example (ours: {sn['our_zero']})")
    done = finished_races().get(race_key(settings))
    out["sgd"] = "val " + " vs ".join(f"{v:.3f}" for v in done["final_val"].values()) if done else "train it on its page"
    vo = names_demo("vocab_order", settings.hash_seed_a, settings.hash_seed_b, settings.seed)
    out["vocab_order"] = f"{vo['buggy_changed']} of {vo['n_chars']} ids change after a restart"
    every = max(1, settings.eval_iters)
    out["fit_indent"] = f"{-(-settings.fit_iters // every)} optimizer steps in {settings.fit_iters} iterations"
    out["prep_global"] = "KeyError or the wrong text"
    out["no_position"] = "last output identical under permutation"
    es = names_demo("encode_shape", settings.context_size)
    out["encode_shape"] = f"batches of shape {es['buggy_shape']}" if es["buggy_shape"] else "no name longer than the context"
    out["config_end_id"] = "AttributeError: no attribute 'config'"
    out["module_typos"] = "NotImplementedError, AttributeError, RuntimeError"
    out["spelling"] = "causal, not casual"
    return out


def overview(settings: pf.PitfallsSettings) -> None:
    """Every pitfall as a card, two per row in course order, with its measured headline."""
    st.header("All pitfalls at a glance", divider="gray")
    in_originals = sum(p.in_originals for p in pf.PITFALL_LIST)
    st.markdown(f"The course documents teach the right ideas, but their code has bugs. {in_originals} "
                "of the pitfalls below are those bugs; the other "
                f"{len(pf.PITFALL_LIST) - in_originals} are common mistakes the originals avoid. "
                "Each one runs here as written, beside the fix, with the numbers that show the "
                "difference.")
    with st.spinner("Running the quick demos…"):
        headlines = measured_headlines(settings)
    for i, pitfall in enumerate(pf.PITFALL_LIST, start=1):
        if i % 2 == 1:  # a new row of two cards, so the reading order is the course order
            row = st.columns(2, gap="medium")
        with row[(i - 1) % 2].container(border=True, height="stretch"):
            st.markdown(f"**{i} · {pitfall.title}**  \n:gray[{pitfall.where}]")
            st.markdown(pitfall.effect)
            st.markdown(f":material/science: **Here:** {headlines.get(pitfall.key, '')}")
            # below the headline, not in a fifth of the card: in lecture mode that fifth was too
            # narrow for the word and the button showed "O…"
            st.button("Open", key=f"pitfalls.open.{pitfall.key}", on_click=_open, args=(pitfall.key,),
                      icon=":material/arrow_forward:")


# ---------------------------------------------------------------------------------------------
# Cached demos: every demo is deterministic in its arguments, so one run serves every session
# ---------------------------------------------------------------------------------------------


@st.cache_resource(show_spinner=False)
def names_and_tokenizer() -> tuple[list[str], tokenizers.CharTokenizer]:
    names = data.load_names()
    return names, tokenizers.CharTokenizer.from_text("".join(names))


@st.cache_data(show_spinner=False, max_entries=256)
def demo(key: str, *args):
    """`core.pitfalls.<key>.demo(*args)`, computed once per argument set."""
    return pf.MODULES[key].demo(*args)


@st.cache_data(show_spinner=False, max_entries=128)
def names_demo(key: str, *args):
    """`core.pitfalls.<key>.demo(names, ..., *args)` on every name of data/names.txt."""
    names, tokenizer = names_and_tokenizer()
    if key == "vocab_order":
        return pf.MODULES[key].demo(names, *args)
    return pf.MODULES[key].demo(names, tokenizer, *args)


# ---------------------------------------------------------------------------------------------
# The SGD/AdamW race
# ---------------------------------------------------------------------------------------------

RACE_KEY = "pitfalls.race"  # this session's race being trained (a core.pitfalls.sgd.OptimizerRace)


def race_data() -> data.NamesData:
    """The lecture's data: context 12, 10% validation, seed 101: the same shared, read-only object
    as the Train page's runs (core.runs.names_data), not a second copy of the windows."""
    return runs.names_data(12)


@st.cache_resource(show_spinner=False)
def finished_races() -> sgd.FinishedRaces:
    """Finished races of every session on this server (see core.pitfalls.sgd.FinishedRaces)."""
    return sgd.FinishedRaces()


def race_key(settings: pf.PitfallsSettings) -> sgd.RaceKey:
    return (settings.optim_steps, settings.seed, float(settings.adamw_lr))


def race_controls(settings: pf.PitfallsSettings) -> None:
    """Steps, AdamW's learning rate and the seed of the race (steps capped by the server's limit);
    a refused number is said under the row, at full width."""
    with state.refusals_below():
        a, b, c = st.columns(3)
        with a:
            widget(settings, "optim_steps")
        with b:
            widget(settings, "adamw_lr")
        with c:
            widget(settings, "seed")
    if settings.optim_steps > budget.LIMITS.max_steps:
        st.warning(f"This server allows at most {budget.LIMITS.max_steps:,} steps per run; "
                   f"using {budget.LIMITS.max_steps:,}.", icon=":material/warning:")
        settings.optim_steps = budget.LIMITS.max_steps


def race_panel(key: sgd.RaceKey) -> None:
    """The Train button (unless this race is finished or training) and the live view: the app's
    one live-training fragment (ui.live) trains the race a slice per tick and calls `draw_race`."""
    race = st.session_state.get(RACE_KEY)
    race = race if race is not None and race.key == key else None  # a race of other settings waits
    if finished_races().get(key) is not None:  # finished, here or by another session
        if race is not None:
            st.session_state.pop(RACE_KEY, None)
        race = None
    elif race is None or race.error is not None:
        if st.button(f"Train both for {key[0]} steps", type="primary", icon=":material/play_arrow:",
                     key="pitfalls.race_start"):
            with layout.friendly_errors("the training runs"):
                race = st.session_state[RACE_KEY] = sgd.demo(*key, race_data())

    def finish(outcome: Outcome) -> None:
        if outcome.error is None:  # a diverged race stays in the session, to show its error
            finished_races().put(key, sgd.race_result(race.trainers))
            st.session_state.pop(RACE_KEY, None)

    live_fragment("pitfalls_race", race, lambda: draw_race(key, race), on_finish=finish)


def draw_race(key: sgd.RaceKey, race: sgd.OptimizerRace | None) -> None:
    """The race as it stands: finished (kept for everyone), training, or not started."""
    done = finished_races().get(key)
    if done is not None:
        show_race(done["histories"], done["final_val"], key, finished=True)
        return
    if race is None:
        st.info("Press **Train both** to train the lecture's GPT with each optimizer, from the same "
                "seed on the same batches. The result is kept for everyone on this server.",
                icon=":material/model_training:")
        return
    if race.error:
        st.error(f"Training stopped: {race.error}", icon=":material/block:")
    for label, trainer in race.trainers.items():
        st.progress(trainer.step / trainer.config.max_steps,
                    text=f"{label}: step {trainer.step} of {trainer.config.max_steps}")
    final = {label: t.last_val_loss for label, t in race.trainers.items()}
    show_race(race.history, final, key, finished=False)


def show_race(histories: dict, final: dict, key: sgd.RaceKey, finished: bool) -> None:
    """The validation losses as metrics and the loss curves of both optimizers."""
    steps, seed, lr = key
    if finished:
        st.markdown(f"**Validation loss after {steps} steps**, on the whole validation split:")
    else:
        st.markdown(f"**Latest validation loss**, on {sgd.RACE_VAL_WINDOWS:,} held-out windows:")
    cols = st.columns(len(final) + 1)
    for column, (label, val) in zip(cols, final.items()):
        column.metric(label, "—" if val is None else f"{val:.3f}",
                      help="Mean cross-entropy per character, in nats (a uniform guess is ln 27 = 3.30).")
    values = [v for v in final.values() if v is not None]
    if finished and len(values) == 2:
        cols[-1].metric("SGD − AdamW", f"{values[0] - values[1]:+.3f}",
                        help="Positive: SGD is still behind after the same number of steps.")
    frame = sgd.race_frame(histories)
    if len(frame):
        show_chart(viz_pitfalls.race_chart(frame, lecture=state.lecture_mode()), name="pitfall-sgd-vs-adamw",
                   key="pitfall-sgd-vs-adamw",
                   caption=f"The lecture's GPT (3 layers, 4 heads, d_embed 64, dropout 0.1), batch 32, "
                           f"{steps} steps each, seed {seed}; SGD lr 0.01 vs AdamW lr {lr:g}. Validation "
                           f"points every {max(10, steps // 10)} steps on {sgd.RACE_VAL_WINDOWS:,} held-out "
                           "windows; the final numbers use the whole validation split. "
                           + ("Finished." if finished else "Training…"), downloads=finished)
    if finished:
        st.caption("The course notes quote about 2.40 (SGD) against 2.10 (AdamW) after 1,000 steps. "
                   "On this app's names and split the gap is smaller: 2.30–2.32 against 2.17–2.19 "
                   "after 1,000 steps (AdamW at lr 0.003, seeds 101 and 123; at lr 0.01 AdamW "
                   "gives 2.30–2.33). The numbers above are "
                   "this race's own.")
        with st.expander("How these numbers are measured", icon=":material/code:"):
            for fn in (sgd.race_result, sgd.race_frame):
                _code(fn)


@st.cache_data(show_spinner=False, max_entries=32)
def config_end_id_result(seed: int, trained_key: tuple | None) -> dict:
    """The lecture's generate crashing, and ours sampling from the race's AdamW model if one was
    trained with this seed (trained_key), else from an untrained GPT."""
    _, tokenizer = names_and_tokenizer()
    result = finished_races().get(trained_key) if trained_key else None
    return pf.MODULES["config_end_id"].demo(tokenizer, seed, sgd.model_from_result(result) if result else None)
