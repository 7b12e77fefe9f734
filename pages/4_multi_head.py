"""Lesson 4: multi-head attention: one map per head, concatenation, output projection, three classes.

Book: chapter 3.6 of *LLMs from Scratch* (course files 002, 003 and lesson 5 of 004): the wrapper of
single causal heads vs the class that splits one projection into heads with view/transpose.
"""

import dataclasses

import streamlit as st
import torch

from core import attention
from core.lessons import causal_attention
from core.lessons import embeddings as emb
from core.lessons import multi_head
from core.lessons import walkthrough as wt
from ui import state
from ui import walkthrough
from ui.code import show_code
from ui.layout import friendly_errors, map_floor

PREFIX = walkthrough.PREFIX
MAX_SHOWN_HEADS = 8
STEPS, LABELS = wt.MULTI_STEPS, wt.MULTI_STEP_LABELS

top = walkthrough.page_top(
    "multi_head", "Multi-head attention",
    "Lesson 5 of *Coding attention mechanisms* (LLMs from Scratch, 3.6): several heads attend "
    "in parallel, each with its own W_q, W_k, W_v of width d_out / heads; their outputs are "
    "concatenated and mixed by an output projection.",
    step_field="mh_step", steps=STEPS, step_labels=LABELS)
settings, area, bar, labels, inputs = top.settings, top.area, top.bar, top.labels, top.inputs
num_tokens, d_in = inputs.shape  # (T, d_in)
step = bar.step
with bar.controls:  # compact rows: the popover should fit a projector's screen
    sizes = st.container(horizontal=True, vertical_alignment="bottom", gap="medium")
with bar.controls, state.refusals_below(), sizes:  # a refusal goes under the row, not in its 130 px
    state.number_field(settings, "heads_d_out", prefix=PREFIX, label="d_out", width=130,
                       help="Width of all heads together, d_out / H each (this page's own; pages "
                            "2–3 keep theirs). The book's `MultiHeadAttention` takes it the same way; "
                            "its `MultiHeadAttentionWrapper` takes each head's width instead: "
                            "`MultiHeadAttentionWrapper(3, 2, …, num_heads=2)` gives 4 columns, as "
                            "`MultiHeadAttention(3, 4, …, num_heads=2)` does.")
choices = multi_head.head_choices(settings.heads_d_out)
heads_note = None
if settings.num_heads not in choices:
    wanted = settings.num_heads
    settings.num_heads = multi_head.nearest_heads(settings.heads_d_out, wanted)
    st.session_state.pop(state.widget_key(PREFIX, "num_heads"), None)
    heads_note = (f"{wanted} heads do not divide d_out = {settings.heads_d_out} evenly (each head needs "
                  f"d_out / heads dimensions): using {settings.num_heads}.")
with bar.controls, sizes:
    state.bound(st.selectbox, "Heads", settings, "num_heads", prefix=PREFIX, options=choices,
                width=110, help="Only head counts that divide d_out are offered.")
with bar.controls:
    with state.refusals_below(), st.container(horizontal=True, vertical_alignment="bottom", gap="medium"):
        state.number_field(settings, "heads_seed", prefix=PREFIX, label="Seed", width=210,
                           help="torch.manual_seed(seed) before building the heads.")
        state.bound(st.selectbox, "W_q, W_k scale", settings, "qk_scale", prefix=PREFIX,
                    options=list(wt.QK_SCALES), width=180,
                    help="Multiply every head's W_q and W_k by this: each score grows by its "
                         "square. nn.Linear starts small, so at 1 (the book) every map is nearly "
                         "uniform; trained heads have larger weights and sharper maps.")
    with st.container(horizontal=True, vertical_alignment="center", gap="large"):
        state.bound(st.toggle, "Causal mask", settings, "causal", prefix=PREFIX)
        state.bound(st.checkbox, "qkv_bias", settings, "qkv_bias", prefix=PREFIX)
    state.bound(st.toggle, "Same initial weights", settings, "same_init", prefix=PREFIX,
                help="Give every head head 1's initial weights: what if they all started equal?")
    walkthrough.book_setup_button("multi", "Book: MultiHeadAttentionWrapper, seed 123, 2 heads of 2")
# notes about the choice stay on the page: they explain what the maps below show
with area.lesson:
    if heads_note:
        st.info(heads_note, icon=":material/info:")
    if len(choices) == 1:
        st.info(f"d_out = {settings.heads_d_out} can only be split into one head; raise d_out for more.",
                icon=":material/info:")

num_heads = settings.num_heads
head_names = [f"head {h + 1}" for h in range(num_heads)]
where = f"{wt.describe_inputs(settings)}; {multi_head.describe_heads(settings, num_heads)}"


def steps_code(result: multi_head.MultiHead) -> None:
    """The code that computed the maps and outputs on screen, then the book's class they match."""
    dropout = [causal_attention.with_book_dropout, causal_attention.book_dropout_keep] \
        if result.train_module_diff is not None else []
    show_code([multi_head.multi_head, attention.intermediates_from_module,
               attention.attention_intermediates, *attention.HEAD_HELPERS, *attention.MASK_HELPERS, *dropout],
              label="Show the code that computed these numbers")
    check = "MultiHeadAttention.forward = these steps"
    if result.train_module_diff is not None:
        check += "” and “MultiHeadAttention.forward (training) = these steps"
    walkthrough.show_book_code(attention.MultiHeadAttention, check)


def head_maps(result: multi_head.MultiHead) -> None:
    walkthrough.step_header(STEPS, "heads", "one attention map per head")
    shown = min(num_heads, MAX_SHOWN_HEADS)
    if num_heads > shown:
        st.caption(f"Showing the first {shown} of {num_heads} heads.")
    per_row = 2  # two maps with readable values per row, also in lecture mode: the step compares
    for start in range(0, shown, per_row):  # them. One under the other where not (1024 px)
        cols = walkthrough.columns(per_row, key=f"heads_{start}", min_width=map_floor(num_tokens),
                                   side_by_side=True)
        for h, col in zip(range(start, min(start + per_row, shown)), cols):
            with col:
                walkthrough.show_matrix(result.steps.attn_weights[h], labels, labels,
                                        name=f"multi-head-map-{h + 1}", title=f"head {h + 1}",
                                        domain=(0, 1), max_width=300, x_title="key j", y_title="query i",
                                        caption=f"{multi_head.map_caption(settings, h)}; {where}.")
    steps_code(result)


def concat_and_project(result: multi_head.MultiHead) -> None:
    walkthrough.step_header(STEPS, "concat", "concatenate, then project")
    head_dim, d_out = result.head_dim, settings.heads_d_out
    # in two pieces of a row that wraps: as one formula it ran past a phone's column, and on two
    # lines it pushed the step's figure below a projector's first screen
    with st.container(horizontal=True, horizontal_alignment="center", vertical_alignment="center", gap=None):
        st.latex(rf"\underbrace{{{num_heads} \times ({num_tokens} \times {head_dim})}}_{{\text{{heads}}}}"
                 rf"\xrightarrow{{\text{{concat}}}} ({num_tokens} \times {d_out})", width="content")
        st.latex(rf"\xrightarrow{{\cdot\, W_o + b_o,\ W_o:\ {d_out} \times {d_out}}}"
                 rf"({num_tokens} \times {d_out})", width="content")
    cols_concat = [f"h{h + 1}·{j + 1}" for h in range(num_heads) for j in range(head_dim)]
    # side by side where both keep their four-decimal numbers whole, else one under the other
    left, right = walkthrough.columns(2, key="concat", min_width=map_floor(d_out, chars=7))
    with left:
        walkthrough.show_matrix(result.steps.context_vec, labels, cols_concat, name="multi-head-concat",
                                title="heads side by side", x_title="head · dimension", y_title="token",
                                decimals=4, max_width=440,
                                caption=f"The heads' context vectors concatenated (torch.cat, dim=-1); "
                                        f"{where}.")
    with right:
        walkthrough.show_matrix(result.steps.output, labels, [f"o{j + 1}" for j in range(d_out)],
                                name="multi-head-output", title="after out_proj", x_title="dimension",
                                y_title="token", decimals=4, max_width=440,
                                caption=f"The output projection mixes what the heads found; {where}.")
    steps_code(result)


def three_classes(result: multi_head.MultiHead) -> None:
    walkthrough.step_header(STEPS, "classes", "three implementations, one result")
    st.markdown(
        "- **MultiHeadAttentionWrapper**: a list of separate `CausalAttention` heads, their outputs "
        "concatenated, then `out_proj` (the book's wrapper stops before it; the course notebook's "
        "Method A adds it).\n"
        "- **MultiHeadAttention**: one `W_query` of width d_out for every head (and likewise the "
        "keys and values), split into heads with `view` and `transpose`: fewer, larger matrix "
        "products.\n"
        "- **PyTorchMultiHeadAttention**: one projection `qkv = Linear(d_in, 3·d_out)` for the "
        "queries, keys and values together (the idea of course document 002's `qkv_linear`; 002 "
        "keeps each head's q, k and v side by side and has no mask, so its weights are laid out "
        "differently), then `F.scaled_dot_product_attention` for the scores, scaling, mask, "
        "softmax and the weighted sum of the values in one call.\n\n"
        "Copy the weights from each class into the next: all three compute the same numbers (all "
        "use the causal mask, compared in eval mode).")
    walkthrough.check_badge("MultiHeadAttentionWrapper = MultiHeadAttention (weights copied)",
                            result.impl_diff)
    walkthrough.check_badge("MultiHeadAttention = PyTorchMultiHeadAttention (one fused qkv)",
                            result.fused_diff)
    walkthrough.numbers_line("heads concatenated (what the book's wrapper returns), first row =",
                             result.wrapper_concat[0].tolist())
    walkthrough.numbers_line("wrapper + out_proj, first row =", result.wrapper_out[0].tolist())
    walkthrough.numbers_line("split-head, first row =", result.mha_out[0].tolist())
    walkthrough.numbers_line("fused qkv, first row =", result.fused_out[0].tolist())
    show_code([attention.MultiHeadAttentionWrapper, attention.MultiHeadAttention,
               attention.wrapper_to_multihead, attention.PyTorchMultiHeadAttention,
               attention.multihead_to_fused], label="Show the code of the three classes")


def why_heads_differ(result: multi_head.MultiHead) -> None:
    walkthrough.step_header(STEPS, "why", "why several heads, and why do they differ?")
    # the reasons beside the heads' weights: stacked, the figure would start below a projector's
    # first screen (a narrow W_q fits beside the text)
    text_col, figure_col = walkthrough.columns(
        [1, 1] if state.lecture_mode() else [3, 2], key="why", gap="large",
        min_width=[None, map_floor(settings.heads_d_out, chars=5)],  # W_q: signed, 2 decimals
        side_by_side=settings.heads_d_out <= 4)
    with text_col:
        st.markdown(multi_head.why_words(settings, num_heads))
    if num_heads < 2:
        with text_col:
            st.info("Choose at least 2 heads to compare them.", icon=":material/info:")
        return
    differs = result.head_diffs[1] > 1e-12
    with figure_col:
        revealed = walkthrough.predict_then_reveal(
            # everything the heads' maps come from: the bias draws shift the heads' weights,
            # the mask changes the maps (dropout does not: the maps are taken before it)
            settings, wt.question_id("heads_same", settings.tokens, settings.embeddings,
                                     settings.heads_seed, settings.same_init, num_heads,
                                     settings.heads_d_out, settings.qk_scale, settings.qkv_bias,
                                     settings.causal),
            "do head 1 and head 2 produce the same attention map?", ["yes", "no"], str,
            lambda g: g == ("no" if differs else "yes"),
            f"Their maps differ by up to {result.head_diffs[1]:.4f}: different initial weights."
            if differs else "They are identical: same weights, same input, same map.")
    if not revealed:
        return
    diffs = "  ".join(f"head {h + 1}: {d:.4f}" for h, d in enumerate(result.head_diffs))
    with text_col:
        st.markdown(f"Largest difference from head 1's map: `{diffs}`")
    W_all = torch.cat(result.head_W_query, dim=1)  # (d_in, d_out): head h owns a block of columns
    cols = [f"h{h + 1}·{j + 1}" for h in range(num_heads) for j in range(result.head_dim)]
    with figure_col:
        walkthrough.show_matrix(W_all, emb.dim_names(d_in), cols, name="multi-head-wq", decimals=2,
                                title="initial W_q of every head, side by side",
                                x_title="head · output dimension", y_title="input dimension",
                                lecture_width=300,  # its half of the page, with the row names
                                caption="Each head's initial W_q"
                                + (f" times {settings.qk_scale}" if settings.qk_scale != 1 else "")
                                + f" (its block of {result.head_dim} columns); {where}.")
    show_code(multi_head.build_wrapper, label="Show the code that built the heads")


with area.lesson, friendly_errors("multi-head attention"):
    bundle = walkthrough.cached("multi", wt.cache_key(settings, "heads_d_out", "heads_seed", "qk_scale",
                                                      "qkv_bias", "causal", "dropout_p", "dropout_seed",
                                                      "train_mode", "same_init", extra=num_heads),
                                multi_head.multi_page, inputs, dataclasses.replace(settings), num_heads)
    result = bundle.result
    with walkthrough.badge_row(bar):
        walkthrough.sdpa_badge(bundle.sdpa)
        walkthrough.check_badge("wrapper = split-head class", result.impl_diff)
        walkthrough.check_badge("split-head class = fused qkv class", result.fused_diff)
        walkthrough.check_badge("MultiHeadAttention.forward = these steps", result.module_diff)
        if result.train_module_diff is not None:
            walkthrough.check_badge("MultiHeadAttention.forward (training) = these steps",
                                    result.train_module_diff)
        walkthrough.book_badge(wt.book_reference(settings, "multi"), result.steps.context_vec)
    {"heads": head_maps, "concat": concat_and_project, "classes": three_classes,
     "why": why_heads_differ}[step](result)

walkthrough.finish_page(settings)
