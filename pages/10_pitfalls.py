"""Pitfalls: every bug of the original course documents, run live beside the correct code.

One pitfall is open at a time (the `pitfall` setting, so `?pitfall=softmax_dim` opens one
directly). For each: where it is, the buggy code and the fixed code side by side, or one under the
other on a narrow page (the real source of the functions that computed the numbers, from
core.pitfalls and the core modules), the numbers that show the difference, and one sentence on why.
The numbers come from `core.pitfalls.<key>.demo` (cached in ui.pitfalls), the charts from
core.viz.pitfalls; the SGD-against-AdamW race trains in slices inside ui.pitfalls.race_panel, so
the page stays responsive while it trains.
"""

from __future__ import annotations

from typing import Callable

import pandas as pd
import streamlit as st

from core import attention, data, models, tokenizers, training
from core import pitfalls as pf
from core.pitfalls import (config_end_id, encode_shape, fit_indent, mask_after_softmax, mask_zero,
                           module_typos, no_position, no_scaling, prep_global, sgd, short_names, slides,
                           softmax_dim, spelling, vocab_order)
from core.viz import pitfalls as viz_pitfalls
from ui import layout, state
from ui import pitfalls as pitfalls_ui
from ui.charts import show_chart

PREFIX = pitfalls_ui.PREFIX
PAGE = "pitfalls"
LAST_CORPUS_KEY = "pitfalls.last_valid_corpus"

settings = state.page_settings(PREFIX, pf.PitfallsSettings)
settings = layout.lesson_panel(PREFIX, pf.PitfallsSettings, PAGE, settings)
lecture = state.lecture_mode()
OFF = {"delta_color": "off", "delta_arrow": "off"}  # a metric's delta that is a comparison, not a change


def render_softmax_dim() -> None:
    pitfalls_ui.side_by_side([softmax_dim.buggy_causal_attention], [softmax_dim.fixed_causal_attention],
                             [softmax_dim.demo, attention.CausalAttention.forward])
    seed = pitfalls_ui.widget(settings, "seed")
    result = pitfalls_ui.demo("softmax_dim", seed)
    buggy_sums = result["sums"].query("version == 'buggy dim=1'")["row_sum"]
    fixed_row, buggy_row = result["fixed_context_row0"], result["buggy_context_row0"]
    with pitfalls_ui.metric_row():  # in a third of a 1024 px page both values were cut ("0.187 … …")
        st.metric("Row sums, buggy", f"{buggy_sums.min():.3f} to {buggy_sums.max():.3f}",
                  help="Each row is one query's weights over the keys; they should add up to 1.")
        st.metric("Row sums, fixed", "all 1.000")
        st.metric("Context of “Your” (2,)", f"[{fixed_row[0]:.4f}, {fixed_row[1]:.4f}]",
                  delta=f"buggy: [{buggy_row[0]:.4f}, {buggy_row[1]:.4f}]", **OFF,
                  help="Fixed value; document 002 prints [-0.4519, 0.2216] for seed 123.")
    st.caption(f"The project's `core.attention.CausalAttention.forward` (under “How this page measures it”) "
               f"gives the same context vectors as `fixed_causal_attention`: largest difference "
               f"{result['fixed_vs_module']:.1e}.")
    cap = f"CausalAttention(3, 2) after torch.manual_seed({seed}) on the book's six tokens (batch item 0)."
    pitfalls_ui.heatmap_row([(result["buggy_weights"], "Buggy: softmax over dim=1"),
                             (result["fixed_weights"], "Fixed: softmax over dim=-1")], result["tokens"],
                            name="pitfall-softmax-dim-weights", data_key=(seed,),
                            caption="Attention weights: with dim=1 every COLUMN sums to 1, with dim=-1 every "
                                    "ROW does. " + cap)
    show_chart(viz_pitfalls.row_sums_chart(result["sums"], lecture=lecture, title="Row sums: buggy vs fixed"),
               name="pitfall-softmax-dim-row-sums",
               caption="Sum of each query's attention weights (dashed line: 1). " + cap)


def render_mask_zero() -> None:
    pitfalls_ui.side_by_side([mask_zero.buggy_mask_by_zero], [mask_zero.fixed_mask_by_position, attention.causal_mask],
                             mask_zero.demo)
    result = pitfalls_ui.demo("mask_zero")
    a, b = st.columns(2)
    a.metric("Visible scores that are exactly 0", result["n_genuine_zero"],
             help="Scores of a query with itself or an EARLIER token: the mask must keep them.")
    b.metric("Visible positions the buggy mask hides", result["n_wrongly_hidden"], help="Fixed: 0.")
    # one table under the other: side by side at 1024 px (lecture mode's bigger grid font) each hid a
    # column behind a scroll bar
    st.markdown("Five tokens (shape (5, 3)) built so that “on” scores **exactly 0** with “the” "
                "(−1·1 + 1·0 + 1·1) and with “sat” (−1·1 + 1·1 + 1·0):")
    st.dataframe(pd.DataFrame(mask_zero.ZERO_EMBEDDINGS, index=result["tokens"], columns=["d1", "d2", "d3"]),
                 width="content")
    st.markdown("The weights of those two visible keys:")
    st.dataframe(result["zero_cells"], hide_index=True, width="content",
                 column_config={c: st.column_config.NumberColumn(format="%.4f")
                                for c in ("score", "buggy weight", "fixed weight")})
    cap = "Scores x·xᵀ/√3 of the constructed tokens."
    pitfalls_ui.heatmap_row([(result["attn_scores"], "Scores")], result["tokens"], weights=False,
                            name="pitfall-mask-zero-scores", caption=cap + " Row “on” has two genuine zeros.")
    pitfalls_ui.heatmap_row([(result["buggy_weights"], "Buggy: masked where score == 0"),
                             (result["fixed_weights"], "Fixed: masked by position")], result["tokens"],
                            name="pitfall-mask-zero-weights",
                            caption="Weights after each mask. Buggy row “on” gives 0 to “the” and “sat”. "
                                    + cap)


def render_mask_after_softmax() -> None:
    pitfalls_ui.side_by_side([mask_after_softmax.buggy_mask_after_softmax],
                             [mask_after_softmax.renormalised_mask_after_softmax, mask_zero.fixed_mask_by_position],
                             mask_after_softmax.demo)
    seed = pitfalls_ui.widget(settings, "seed")
    result = pitfalls_ui.demo("mask_after_softmax", seed)
    sums = result["sums"]
    buggy_sums = sums.query("version == 'mask after softmax'")["row_sum"]
    with pitfalls_ui.metric_row():
        st.metric("Row sums, mask after softmax", f"{buggy_sums.min():.3f} to {buggy_sums.max():.3f}")
        st.metric("Row sums, renormalised", "all 1.000")
        st.metric("Largest |renormalised − masked before|", f"{result['max_diff_renorm_vs_fixed']:.1e}",
                  help="Float rounding only: the two are the same weights.")
    cap = f"SelfAttentionV2(3, 2) after torch.manual_seed({seed}) (the book uses 789), the six tokens."
    pitfalls_ui.heatmap_row([(result["buggy_weights"], "Mask after softmax"),
                             (result["renormalised_weights"], "… then renormalise (= −∞ before)")], result["tokens"],
                            name="pitfall-mask-after-weights", data_key=(seed,),
                            caption="Causal weights masked after the softmax, without and with renormalisation; the "
                           "renormalised weights equal the −∞-before-softmax ones (largest difference "
                           f"{result['max_diff_renorm_vs_fixed']:.1e}). " + cap)
    show_chart(viz_pitfalls.row_sums_chart(sums, lecture=lecture, title="Row sums of the three versions"),
               name="pitfall-mask-after-row-sums", caption="Sum of each query's weights (dashed: 1). " + cap)


def render_no_scaling() -> None:
    pitfalls_ui.side_by_side([no_scaling.buggy_unscaled_weights],
                             [no_scaling.fixed_scaled_weights, no_scaling.softmax_jacobian_norm],
                             [no_scaling.demo, no_scaling.scaling_run])
    seed = pitfalls_ui.widget(settings, "seed")
    table = pitfalls_ui.demo("no_scaling", seed)
    last = table[table["d_k"] == max(no_scaling.SCALING_DKS)].set_index("version")
    buggy, fixed = last.loc["no scaling (buggy)"], last.loc["÷ √d_k (fixed)"]
    a, b, c = st.columns(3)
    a.metric("Max weight at d_k = 512", f"{buggy['max weight']:.3f}", delta=f"scaled: {fixed['max weight']:.3f}", **OFF)
    b.metric("Entropy at d_k = 512 (nats)", f"{buggy['entropy (nats)']:.3f}",
             delta=f"scaled: {fixed['entropy (nats)']:.3f}; uniform: ln 8 = 2.079", **OFF)
    c.metric("Softmax gradient at d_k = 512", f"{buggy['softmax gradient']:.3f}",
             delta=f"scaled: {fixed['softmax gradient']:.3f}", **OFF,
             help="Mean Frobenius norm of d softmax / d scores; 0 means no gradient reaches the scores.")
    cap = (f"Queries and keys ~ N(0, 1) of shape (64, 8, d_k): 64 sequences of 8 tokens per d_k, seed {seed}; "
           "means over every query row.")
    show_chart(viz_pitfalls.scaling_figure(table, lecture=lecture), name="pitfall-no-scaling",
               caption="Max weight, entropy and softmax gradient against d_k, without and with ÷√d_k. " + cap)
    # one table per version with the metrics' full names: one wide table of eight "metric raw /
    # metric ÷√d_k" columns hid the last ones behind a scroll bar at 1024 px. Every row in view, as
    # tall as the grid draws its rows: a height in px for 35 px rows hid the last rows in lecture
    # mode, where the grid's rows grow with the 20 px root font
    for version, part in table.groupby("version", sort=False):
        st.markdown(f"**{version}**")
        st.dataframe(part.drop(columns="version"), hide_index=True, height="content",
                     column_config={c: st.column_config.NumberColumn(format="%.3f")
                                    for c in part.columns if c not in ("d_k", "version")})
    st.caption("Entropy in nats (uniform over 8 keys: 2.079); softmax gradient: mean norm of the softmax "
               "Jacobian.")


def render_short_names() -> None:
    pitfalls_ui.side_by_side([short_names.buggy_lecture_windows], [data.name_windows_loop],
                             [short_names.demo, short_names.examples_by_length], fixed_height=480)
    context_size = pitfalls_ui.widget(settings, "context_size")
    result = pitfalls_ui.names_demo("short_names", context_size)
    n = result["n_names"]
    a, b, c, d = st.columns(4)
    a.metric(f"Names with no example, lecture (of {n:,})", f"{result['lecture_zero']:,}",
             delta=f"{result['lecture_zero'] / n:.1%} of all names", delta_color="inverse", delta_arrow="off")
    b.metric(f"Names with no example, ours (of {n:,})", f"{result['our_zero']:,}")
    c.metric("Training examples, lecture", f"{result['lecture_windows']:,}")
    d.metric("Training examples, ours", f"{result['our_windows']:,}",
             help=f"{result['our_targets']:,} real next-character targets (padding excluded).")
    cap = f"All {n:,} names of data/names.txt, context size {context_size}."
    show_chart(viz_pitfalls.names_length_chart(result["table"], lecture=lecture), name="pitfall-short-names",
               caption="Number of names of each length, coloured by whether the lecture's windowing "
                       "gives them any example. " + cap)
    table = result["table"]
    st.dataframe(table, hide_index=True, height="content")  # every row in view, as no_scaling's


def render_sgd() -> None:
    pitfalls_ui.side_by_side([sgd.buggy_sgd_config, training.lecture_config],
                             [sgd.fixed_adamw_config, training.make_optimizer],
                             [sgd.optimizer_race_configs, sgd.optimizer_table])
    pitfalls_ui.race_controls(settings)
    key = pitfalls_ui.race_key(settings)
    st.dataframe(sgd.optimizer_table(*key), hide_index=True)  # a setting per row: only the optimizer's differ
    pitfalls_ui.race_panel(key)


def _widget_row(*fields: str) -> list:
    """The pitfall's settings `fields` in one row of columns; their values. A refused number is
    said under the row, at full width (state.refusals_below)."""
    values = []
    with state.refusals_below():
        for column, field in zip(st.columns(len(fields)), fields):
            with column:
                values.append(pitfalls_ui.widget(settings, field))
    return values


def render_vocab_order() -> None:
    pitfalls_ui.side_by_side([vocab_order.buggy_vocab], [vocab_order.fixed_vocab, tokenizers.CharTokenizer.from_text],
                             [vocab_order.demo, vocab_order.fit_bigram_probs, vocab_order.sample_bigram_ids])
    hash_a, hash_b, seed = _widget_row("hash_seed_a", "hash_seed_b", "seed")
    if hash_a == hash_b:
        st.info("Both runs use the same hash seed, so even `list(set(...))` gives the same order: "
                "pick two different seeds to see a restart.", icon=":material/info:")
    result = pitfalls_ui.names_demo("vocab_order", hash_a, hash_b, seed)
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Characters whose id changed: buggy", f"{result['buggy_changed']} of {result['n_chars']}")
    m2.metric("Characters whose id changed: fixed", f"{result['fixed_changed']} of {result['n_chars']}")
    n_samples = len(result["samples"])
    m3.metric("Samples unchanged after the restart: buggy", f"{result['buggy_same_samples']} of {n_samples}")
    m4.metric("Samples unchanged after the restart: fixed", f"{result['fixed_same_samples']} of {n_samples}")
    st.markdown("A bigram model is fitted on all names under **run A**'s ids and saved; its samples "
                f"(seed {seed}) are decoded with run A's vocabulary and with **run B**'s:")
    st.dataframe(pitfalls_ui.decoded_samples(result["samples"]), hide_index=True, height="content")
    with st.expander("The saved ids, and every character's id in both runs", icon=":material/table:"):
        st.dataframe(result["samples"][["saved ids (run A)", "buggy: decoded in run A"]], hide_index=True)
        st.dataframe(result["ids"], hide_index=True)
    st.caption("The shuffle in `buggy_vocab` stands in for PYTHONHASHSEED: in one Python process a "
               "set's order is fixed, but every new process (a restart, another student's laptop) "
               "salts string hashes differently.")


def render_fit_indent() -> None:
    pitfalls_ui.side_by_side([fit_indent.buggy_fit], [fit_indent.fixed_fit], [fit_indent.demo, slides.slides_setup],
                             wrap=False)
    iters, every, seed = _widget_row("fit_iters", "eval_iters", "seed")
    try:
        fit_indent.check_fit_args(iters, every)
    except ValueError as exc:
        st.error(f"{exc}. Showing the defaults (train_iters 200, eval_iters 10) instead.", icon=":material/block:")
        iters, every = 200, 10
    with st.spinner("Training both loops…"):
        result = pitfalls_ui.demo("fit_indent", iters, every, seed)
    m1, m2, m3 = st.columns(3)
    m1.metric("Optimizer steps: buggy", result["buggy_steps"], delta=f"in {iters} iterations", **OFF)
    m2.metric("Optimizer steps: fixed", result["fixed_steps"])
    m3.metric("Validation loss at the end", f"{result['buggy_val']:.3f}", delta=f"fixed: {result['fixed_val']:.3f}",
              **OFF)
    show_chart(viz_pitfalls.fit_curve_chart(result["curve"], lecture=lecture), name="pitfall-fit-indent",
               caption=f"The slides' one-head model (n_embd 32, head 16, block 8, batch 6), Adam lr "
                       f"{fit_indent.FIT_LR}, on our repeated pangram; train_iters {iters}, eval_iters {every}, "
                       f"seed {seed}.")


def render_prep_global() -> None:
    pitfalls_ui.side_by_side([prep_global.buggy_prep], [prep_global.fixed_prep], prep_global.demo)
    corpus = state.bound(st.text_area, "Corpus passed to prep(corpus)", settings, "prep_corpus",
                         prefix=PREFIX, max_chars=prep_global.MAX_CORPUS_CHARS, height=90,
                         help=f"The notebook's global `text` is {len(prep_global.text)} characters of a "
                              "repeated pangram.")
    last, problem = state.keep_last_valid(LAST_CORPUS_KEY, lambda: (prep_global.demo(corpus), corpus))
    if problem is not None:
        st.error(f"Could not use this corpus: {problem}", icon=":material/block:")
        default = pf.PitfallsSettings().prep_corpus
        last = last or (prep_global.demo(default), default)  # no valid corpus yet in this session
        st.caption(f"Showing the last valid corpus: {last[1]!r}")
    result = last[0]
    a, b, c = st.columns(3)
    a.metric("Characters in your corpus", result["corpus_chars"])
    buggy = result["buggy"]
    b.metric("Characters the buggy prep split", "crashed" if result["buggy_chars"] is None else result["buggy_chars"],
             help=f"The global text has {result['global_chars']} characters.")
    c.metric("Characters the fixed prep split", result["fixed_chars"])
    if not buggy.ok:
        st.markdown("The vocabulary comes from your corpus, but the text it encodes is the global one, "
                    "so the first character your corpus lacks crashes the encoder:")
        pitfalls_ui.error_box(buggy.error)
        st.caption("Now add every character of the global text to your corpus (for example append "
                   f"{prep_global.text[:45]!r}): the buggy prep runs, silently, on the wrong text.")
    else:
        st.warning(f"The buggy prep ran without an error, but it split the notebook's global text "
                   f"({result['global_chars']} characters), not your {result['corpus_chars']}.",
                   icon=":material/warning:")
    st.dataframe(result["table"], hide_index=True)
    st.caption("The buggy prep reads the notebook's global `text`; the fixed one its argument `corpus`.")


def render_no_position() -> None:
    pitfalls_ui.side_by_side([no_position.buggy_forward_no_position], [models.SingleHeadLM.forward], no_position.demo)
    seed = pitfalls_ui.widget(settings, "seed")
    with st.spinner("Training both models…"):
        result = pitfalls_ui.demo("no_position", seed)
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
    show_chart(viz_pitfalls.order_change_chart(diffs, lecture=lecture), name="pitfall-no-position",
               caption=f"Largest absolute change of the last position's logits when the first 7 of "
                       f"{result['text']!r} are permuted; seed {seed}.")


def render_encode_shape() -> None:
    pitfalls_ui.side_by_side([short_names.buggy_lecture_windows, encode_shape.buggy_unpack], [data.name_windows_loop],
                             encode_shape.demo, fixed_height=560)
    result = pitfalls_ui.names_demo("encode_shape", pitfalls_ui.widget(settings, "context_size"))
    if result["buggy_shape"] is None:
        st.warning("No name is longer than this context, so the lecture's dataset is empty.")
        return
    a, b = st.columns(2)
    a.metric("Batch of inputs: lecture", str(result["buggy_shape"]))
    b.metric("Batch of inputs: ours", str(result["fixed_shape"]))
    left, right = st.columns(2)
    with left:
        st.markdown("`batch_size, context_size = x.size()` (the lecture's forward) on the lecture's batch:")
        pitfalls_ui.error_box(result["buggy_unpack"].error)
        st.markdown("Our GPT on the lecture's batch:")
        pitfalls_ui.error_box(result["buggy_model"].error)
    with right:
        st.markdown("The same on our batch:")
        st.code(f"batch_size, context_size = {result['fixed_unpack'].value}\n"
                f"logits {result['fixed_logits_shape']}, loss {result['fixed_loss']:.4f}\n"
                "(an untrained model: about ln 27 = 3.30)", language="text", wrap_lines=True)
    st.markdown("The first example each way:")
    st.code(f"lecture: {result['buggy_first']}\nours:    {result['fixed_first']}", language="text", wrap_lines=True)
    st.dataframe(encode_shape.shape_table(result), hide_index=True)


def render_config_end_id() -> None:
    pitfalls_ui.side_by_side([config_end_id.BuggyLectureGPT.forward, config_end_id.BuggyLectureGPT.generate],
                             [models.generate], config_end_id.demo, fixed_height=640)
    seed = pitfalls_ui.widget(settings, "seed")
    trained_key = pitfalls_ui.finished_races().latest_with_seed(seed)
    result = pitfalls_ui.config_end_id_result(seed, trained_key)
    st.markdown("1. The lecture's `generate` as written:")
    pitfalls_ui.error_box(result["first_error"])
    st.markdown("2. Its `forward` on an input one token longer than the context: the assert's own "
                "message reads `self.config`, so the student sees this instead of the assert:")
    pitfalls_ui.error_box(result["assert_error"] or "no error (Python runs with -O, so asserts are skipped)")
    st.markdown("3. With `self.config` patched in by hand, the list `end_id` makes the context (1, T, 1), "
                "which `forward` cannot unpack:")
    pitfalls_ui.error_box(result["second_error"])
    st.markdown(f"4. And the stop test could never fire: `tokenizer.encode('.')` is `{result['end_id']}`, "
                f"so `0 == {result['end_id']}` is **{result['end_test']}**.")
    which = ("the AdamW model trained on the SGD-vs-AdamW pitfall" if trained_key is not None else
             "an untrained GPT (random letters; train the race on the SGD-vs-AdamW pitfall with this "
             "seed to sample from a trained one)")
    st.markdown(f"**Fixed:** `core.models.generate(..., stop_token=0)` samples from {which}:")
    samples = pd.DataFrame({"sample": range(1, len(result["fixed_names"]) + 1), "name": result["fixed_names"]})
    st.dataframe(samples, hide_index=True, width=360)


def render_module_typos() -> None:
    pitfalls_ui.side_by_side([module_typos.BuggyForwardTypo, module_typos.buggy_build_liner, module_typos.BuggyOutProj.__init__],
                             [attention.MultiHeadAttention.__init__], module_typos.demo)
    st.caption("`BuggyOutProj.forward` is the usual multi-head forward; only its `__init__` differs from the fix.")
    table = pitfalls_ui.demo("module_typos", settings.seed)
    st.markdown("Each one run on the book's batch of shape (2, 6, 3), with d_out = 4 and 2 heads:")
    for row in table.itertuples(index=False):
        st.markdown(f"`{row.code}`")
        st.code(row.outcome, language="text", wrap_lines=True)


def render_spelling() -> None:
    pitfalls_ui.side_by_side([spelling.buggy_find_attention_class], [spelling.fixed_find_attention_class],
                             spelling.demo)
    result = pitfalls_ui.demo("spelling")
    left, right = st.columns(2, gap="medium")
    with left:
        st.markdown("Code that uses the lecture's name cannot find our class:")
        pitfalls_ui.error_box(result["buggy_error"], "found the class")
    with right:
        st.markdown("The right spelling finds it:")
        st.code(f"<class '{result['fixed_class']}'>", language="text")
    st.markdown("Attention classes inside our GPT: " + ", ".join(f"`{n}`" for n in result["attention_classes"]))


# what each pitfall shows between its header and its "why": render_softmax_dim, render_mask_zero, ...
RENDERERS: dict[str, Callable[[], None]] = {key: globals()[f"render_{key}"] for key in pf.PITFALLS}

state.page_title("Pitfalls")
st.caption("The bugs of the original notebooks and slides, and two common mistakes they avoid, "
           "run live beside the correct code. Every number below is computed now, by the code shown.")
pitfalls_ui.pitfall_menu(settings)
with layout.friendly_errors("this pitfall"):
    if settings.pitfall == "overview":
        pitfalls_ui.overview(settings)
    else:  # every pitfall: its header, its own part, the one-sentence why
        pitfall = pitfalls_ui.header(settings.pitfall)
        RENDERERS[settings.pitfall]()
        pitfalls_ui.why(pitfall)
state.sync_url(settings)
