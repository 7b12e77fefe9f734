"""Lesson 3: the causal mask and dropout on the attention weights, step by step.

Book: chapter 3.5 of *LLMs from Scratch* (course file 004, lesson 4). Also shows why the mask goes
before the softmax: masking after it needs a renormalisation, and without one rows stop summing to 1.
"""

import dataclasses

import numpy as np
import streamlit as st

from core import attention, viz as charts
from core.lessons import causal_attention
from core.lessons import self_attention
from core.lessons import walkthrough as wt
from ui import state
from ui import walkthrough
from ui.code import show_code
from ui.layout import friendly_errors, map_floor

STEPS, LABELS = wt.CAUSAL_STEPS, wt.CAUSAL_STEP_LABELS
PREFIX = walkthrough.PREFIX

top = walkthrough.page_top(
    "causal_attention", "Causal attention and dropout",
    "Lesson 4 of *Coding attention mechanisms* (LLMs from Scratch, 3.5): a language model must not "
    "look at later tokens, so scores above the diagonal are set to −∞ before the softmax; dropout "
    "then zeroes random attention weights while training and rescales the rest by 1/(1 − p).",
    step_field="causal_step", steps=STEPS, step_labels=LABELS, weights_editor=True)
settings, area, bar, labels, inputs = top.settings, top.area, top.bar, top.labels, top.inputs
num_tokens, d_in = inputs.shape  # (T, d_in)
step = bar.step
with bar.controls:  # compact rows: the popover should fit a projector's screen
    with st.container(horizontal=True, vertical_alignment="bottom", gap="medium"):
        query = walkthrough.query_select(settings, labels, width=300)
        walkthrough.book_setup_button("causal", "Book: CausalAttention, seed 123")
        walkthrough.book_setup_button("masked", "Book 3.5.1–3.5.2: masked weights, dropout")
    with st.container(horizontal=True, vertical_alignment="center", gap="large"):
        state.bound(st.toggle, "Causal mask", settings, "causal", prefix=PREFIX,
                    help="Hide every later token (j > i) from query i.")
        state.bound(st.toggle, "Training mode", settings, "train_mode", prefix=PREFIX,
                    help="model.train(): dropout active. model.eval(): dropout off.")
    # a refused seed is said under the row, not in its 210 px (state.refusals_below)
    with state.refusals_below(), st.container(horizontal=True, vertical_alignment="bottom", gap="medium"):
        walkthrough.dropout_slider(settings, width=300)
        state.number_field(settings, "dropout_seed", prefix=PREFIX, label="Dropout seed", width=210)
    st.markdown("**Queries, keys, values**: W_q, W_k, W_v as on the previous page")
    projection = walkthrough.projection_controls(settings, d_in)
projection = walkthrough.weights_editor(settings, projection, d_in, top.weights_slot, area.lesson)
with bar.controls:
    st.caption(wt.describe_weights(settings, projection))

q_name, qi = labels[query], query + 1
outs = [f"o{j + 1}" for j in range(settings.d_out)]
mode = "training" if settings.train_mode else "eval"
where = (f"{wt.describe_inputs(settings)}; {wt.describe_weights(settings, projection)}; mask "
         f"{'on' if settings.causal else 'off'}; dropout p={settings.dropout_p:g}, seed "
         f"{settings.dropout_seed}, {mode} mode")


def steps_code(extra=()) -> None:
    """The code that computed the steps on screen, then the book's class they were checked against."""
    show_code([causal_attention.causal_attention, attention.attention_intermediates, *attention.MASK_HELPERS,
               *extra],
              label="Show the code that computed these numbers")
    if bundle.module_diff is None:  # mask off: the book's class (always causal) was not compared
        return
    check = "CausalAttention (eval) = these steps"
    if bundle.train_module_diff is not None:
        check += "” and “CausalAttention (training) = these steps"
    walkthrough.show_book_code(attention.CausalAttention, check)


def masked_labels(steps) -> np.ndarray:
    """'−∞' text on the hidden cells."""
    return np.where(steps.mask.numpy(), charts.NEG_INF_LABEL, "")


def scores_step(steps) -> None:
    walkthrough.step_header(STEPS, "scores", "scaled scores, as on the previous page")
    st.latex(r"\frac{Q K^\top}{\sqrt{d_k}}")
    words = causal_attention.scores_words(settings.causal)
    walkthrough.show_matrix(steps.scaled_scores[0], labels, labels, name="causal-scaled-scores",
                            title=words.title, x_title="key j", y_title="query i", highlight_row=query,
                            caption=f"{words.caption}; {where}.")
    steps_code()


def mask_step(steps) -> None:
    walkthrough.step_header(STEPS, "mask", "the causal mask")
    # two formulas in one centred paragraph: side by side where they fit, the second under the
    # first where they do not. As one display formula the right one ran past a 1024 px page
    # ("M = triu(1,"); always on two lines, the figure fell below the first screen of a projector
    if settings.causal:
        left = (r"\displaystyle M_{ij} = \begin{cases} 1 & j > i \text{ (a later token: hide)} \\ "
                r"0 & j \le i \end{cases}")
        right = r"\displaystyle M = \mathrm{triu}(\mathbf{1}, \text{diagonal}=1)"
    else:  # what the figure shows, and what the switch would bring back
        left = r"\displaystyle M_{ij} = 0 \text{ for every } i, j"
        right = (r"\displaystyle \text{(the causal mask, } \mathrm{triu}(\mathbf{1}, \text{diagonal}=1)"
                 r"\text{, is switched off)}")
    # each formula one group, so that neither breaks inside itself ("M =" | "triu(…)"); in lecture
    # mode a paragraph's type is 1.15x a formula's: \small brings it back to the size of the others
    size = r"\small " if state.lecture_mode() else ""
    st.markdown(f"${size}{{{left}}}$ \u2003 ${size}{{{right}}}$", text_alignment="center")
    words = causal_attention.mask_words(settings.causal)
    if words.text:
        st.info(words.text, icon=":material/info:")
    walkthrough.show_matrix(steps.mask.to(int), labels, labels, name="causal-mask", decimals=0,
                            title=words.title, x_title="key j", y_title="query i",
                            highlight_row=query, caption=f"{words.caption}; {where}.")
    show_code(attention.causal_mask)


def masked_step(steps) -> None:
    walkthrough.step_header(STEPS, "masked", "masked scores")
    if settings.causal:
        st.latex(r"\tilde{\omega}_{ij} = \begin{cases} -\infty & M_{ij} = 1 \\ "
                 r"\omega_{ij} / \sqrt{d_k} & \text{otherwise} \end{cases}")
    else:
        st.latex(r"\tilde{\omega}_{ij} = \omega_{ij} / \sqrt{d_k}\quad"
                 r"\text{(the mask is off: no score is hidden)}")
    words = causal_attention.masked_words(settings.causal)
    walkthrough.show_matrix(steps.masked_scores[0], labels, labels, name="causal-masked-scores",
                            title=words.title, x_title="key j", y_title="query i",
                            highlight_row=query, special=masked_labels(steps),
                            caption=f"{words.caption}; {where}.")
    walkthrough.numbers_line(f"row {q_name} =", steps.masked_scores[0, query].tolist())
    steps_code()


def weights_step(steps) -> None:
    walkthrough.step_header(STEPS, "weights", "attention weights")
    # the formula and what it gives, in a row that wraps: in one formula the words ran past the
    # page at 1024 px ("every row still sums to" and no more)
    walkthrough.formula_with_words(r"A = \mathrm{softmax}_{\text{row}}(\tilde{\Omega}):",
                                   "zeros above the diagonal, every row still sums to 1" if settings.causal
                                   else "no zeros (the mask is off), every row sums to 1")
    words = causal_attention.weights_words(settings.causal, causal_attention.dropout_active(settings))
    weights = steps.attn_weights[0]
    top = wt.argmax_tokens(weights[query])
    revealed = walkthrough.predict_then_reveal(
        settings, walkthrough.scores_question_id("causal_top", settings, projection, query,
                                                 settings.causal),
        words.text.format(q=q_name),
        list(range(num_tokens)), lambda i: labels[i], lambda g: g in top,
        f"“{labels[top[0]]}” (α = {wt.fmt_number(float(weights[query, top[0]]))})"
        + (f". “{q_name}” can only see tokens 1 … {qi}." if settings.causal else "."))
    if revealed:
        walkthrough.show_matrix(weights, labels, labels, name="causal-weights", domain=(0, 1),
                                title=words.title, x_title="key j", y_title="query i",
                                highlight_row=query, caption=f"{words.caption}; {where}.")
        walkthrough.numbers_line(f"α_{qi}j =", weights[query].tolist())
        walkthrough.numbers_line("row sums =", weights.sum(dim=-1).tolist())
    steps_code()


def dropout_step(steps) -> None:
    walkthrough.step_header(STEPS, "dropout", "dropout on the attention weights")
    view = causal_attention.dropout_view(steps)
    # A_ij over (1 - p) as a fraction, "prob.": written out on one line the definition was 416 px,
    # past a phone's 358 px column ("with probabi…")
    definition = (r"\text{dropout}(A)_{ij} = \begin{cases} 0 & \text{with prob. } p \\ "
                  r"\frac{A_{ij}}{1 - p} & \text{otherwise} \end{cases}")
    if view.active:
        st.latex(definition)
    else:  # the definition here, what it does now beside the map; "(in training mode)" goes under
        # the definition where both do not fit (it was cut to "(in training mo" at 1024 px)
        walkthrough.formula_with_words(definition, "(in training mode)")
    # what dropout did beside the map: above it, the words pushed it below a projector's screen
    chart_col, text_col = walkthrough.columns([3, 2], key="dropout", gap="large", side_by_side=True,
                                              min_width=[map_floor(num_tokens), None])
    with text_col:
        dropout_effect(view)
    special = np.where(~view.keep.numpy() & ~steps.mask.numpy(), "✕", "")
    special = np.where(steps.mask.numpy(), "0", special)
    words = causal_attention.dropout_words(settings)
    with chart_col:
        walkthrough.show_matrix(view.dropped_weights, labels, labels, name="causal-dropout", special=special,
                                title=words.title, x_title="key j", y_title="query i",
                                highlight_row=query, lecture_width=walkthrough.LECTURE_COLUMN_W,
                                caption=f"{words.caption}; {where}.")
    walkthrough.numbers_line("row sums =", view.row_sums())
    # the dropout draw runs only in training mode with p > 0
    steps_code(([causal_attention.with_book_dropout, causal_attention.book_dropout_keep]
                if view.active else [])
               + [causal_attention.dropout_view])


def dropout_effect(view) -> None:
    """What dropout does with the current switches: nothing (eval mode, p = 0), or how much."""
    if not view.active:
        st.latex(r"\text{here: } \text{dropout}(A) = A")
    if not settings.train_mode:
        st.info("Eval mode (`model.eval()`): dropout is off, the weights pass through unchanged. "
                "Switch on **Training mode** to see it.", icon=":material/info:")
    elif settings.dropout_p == 0:
        st.info("p = 0: nothing is dropped. Raise **Dropout p**.", icon=":material/info:")
    else:
        st.markdown(f"p = {view.p:g}: **{view.n_dropped} of {view.n_visible}** visible weights "
                    f"were dropped (seed {settings.dropout_seed}); the others were multiplied by "
                    f"1/(1 − p) = **{view.scale:.4f}**, so each weight keeps its expected value. "
                    "Rows no longer sum to exactly 1. The zeros are drawn as the book's "
                    f"`nn.Dropout({view.p:g})` draws them right after "
                    f"`torch.manual_seed({settings.dropout_seed})`"
                    + (", so `CausalAttention` in training mode drops the same weights (see "
                       "**Checks** at the top)." if settings.causal else "."))


def context_step(steps) -> None:
    walkthrough.step_header(STEPS, "context", "context vectors")
    words = causal_attention.context_words(settings)
    st.latex(r"Z = \text{dropout}(A)\, V" if causal_attention.dropout_active(settings) else
             r"Z = A\, V\quad\text{(dropout is off)}")
    walkthrough.show_matrix(steps.context_vec, labels, outs, name="causal-context", decimals=4,
                            title=words.title, x_title="dimension", y_title="token", highlight_row=query,
                            caption=f"{words.caption}; {where}.")
    walkthrough.numbers_line(f"z^({qi}) =", steps.context_vec[query].tolist())
    st.markdown(words.text)
    steps_code()


def order_step(steps) -> None:
    walkthrough.step_header(STEPS, "order", "where does the mask go?")
    orders = bundle.orders
    sums = orders.row_sums()
    if state.lecture_mode():  # the panels stacked; the words beside the first one
        first_col, text_col = walkthrough.columns([3, 2], key="order", gap="large", side_by_side=True,
                                                  min_width=[map_floor(num_tokens), None])
        check_row = st.container()  # full width: a badge does not wrap, in the column it was cut
        cols = [first_col, st.container(), st.container()]
    else:
        text_col = check_row = st.container()
        # in a row that wraps: in a row of three at 1024 px the maps were laid out at 212 and 160 px,
        # numbers at 7 px running into each other; the first panel also carries the row names
        floor = map_floor(num_tokens)
        cols = walkthrough.columns([1.3, 1, 1], key="order",
                                   min_width=[floor, f"calc({floor} - 6rem)", f"calc({floor} - 6rem)"])
    with text_col:
        st.markdown("Three ways to hide the future, always with the causal mask here: mask "
                    "**before** the softmax (the book); mask **after** it and divide each row by "
                    "its new sum; mask after it **without** renormalising.")
    with check_row:
        walkthrough.check_badge("before softmax = after softmax + renormalise", orders.max_diff)
    hidden = attention.causal_mask(num_tokens).numpy()
    undefined = np.zeros_like(hidden, dtype=object)
    undefined[:] = ""
    for row in orders.undefined_rows:
        undefined[row, :] = "0/0"
    panels = [("before", "mask, then softmax", orders.before, None),
              ("after_renorm", "softmax, mask, renormalise", orders.after_renorm, undefined),
              ("after_no_renorm", "softmax, then mask", orders.after_no_renorm, None)]
    all_sum_to_one = causal_attention.rows_sum_to_one(orders.after_no_renorm)
    reveal_last = walkthrough.predict_then_reveal(
        settings, walkthrough.scores_question_id("rows_sum", settings, projection),  # always masked
        "if you mask after the softmax and do NOT renormalise, does every row still sum to 1?",
        ["yes", "no"], str, lambda g: g == ("yes" if all_sum_to_one else "no"),
        "No: softmax spread each row's weight over all tokens, and zeroing the future throws part "
        "of it away. Only the last row, which hides nothing, still sums to 1."
        if not all_sum_to_one else "Yes, here every row still sums to 1.")
    for i, (col, (key, title, matrix, special)) in enumerate(zip(cols, panels)):
        with col:
            if key == "after_no_renorm" and not reveal_last:
                st.markdown(f"**{title}**: hidden until you commit your guess.")
                continue
            walkthrough.show_matrix(matrix, labels, labels, name=f"masking-order-{key}", title=title,
                                    domain=(0, 1), max_width=320, special=special, row_axis=i == 0,
                                    lecture_width=(walkthrough.LECTURE_COLUMN_W if i == 0
                                                   else walkthrough.LECTURE_FILL_W),
                                    x_title="key j", y_title="query i",
                                    caption=f"Row sums: {'  '.join(f'{s:.3f}' for s in sums[key])}.")
    if orders.undefined_rows:
        st.warning("In some rows every visible weight underflowed to 0 in the softmax (the largest "
                   "score was in the hidden future), so renormalising divides 0 by 0 (marked "
                   "0/0). Masking before the softmax has no such problem.", icon=":material/warning:")
    show_code(causal_attention.masking_orders)


with area.lesson, friendly_errors("causal attention"):
    qkv_bias = settings.qkv_bias and settings.variant == "v2"
    bundle = walkthrough.cached("causal", wt.cache_key(settings, "variant", "weight_seed", "d_out",
                                                       "qkv_bias", "custom_weights", "causal", "dropout_p",
                                                       "dropout_seed", "train_mode"),
                                causal_attention.causal_page, inputs, projection,
                                dataclasses.replace(settings), qkv_bias)
    steps = bundle.steps
    with walkthrough.badge_row(bar):
        walkthrough.sdpa_badge(bundle.sdpa)
        if bundle.module_diff is not None:
            walkthrough.check_badge("CausalAttention (eval) = these steps", bundle.module_diff)
        if bundle.train_module_diff is not None:
            walkthrough.check_badge("CausalAttention (training) = these steps", bundle.train_module_diff)
        walkthrough.book_badge(wt.book_reference(settings, "causal"), steps.context_vec)
        for short, what, field, rows in wt.book_weight_references(settings):  # printed weight matrices
            walkthrough.book_badge((what, rows), getattr(steps, field)[0], short)  # head 0 of (1, T, T)
    {"scores": scores_step, "mask": mask_step, "masked": masked_step, "weights": weights_step,
     "order": order_step, "dropout": dropout_step, "context": context_step}[step](steps)

walkthrough.finish_page(settings)
