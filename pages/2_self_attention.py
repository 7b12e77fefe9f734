"""Lesson 2: self-attention with trainable weights W_q, W_k, W_v, step by step, and why we scale.

Book: chapter 3.4 of *LLMs from Scratch* (course file 004, lesson 3); the scaling panel follows the
slides of course file 001 (softmax of logits vs logits × 100).
"""

import math

import streamlit as st

from core import attention
from core.lessons import embeddings as emb
from core.lessons import self_attention
from core.lessons import walkthrough as wt
from core.viz import lessons as lesson_charts
from ui import state
from ui import walkthrough
from ui.charts import show_chart
from ui.code import show_code
from ui.layout import friendly_errors, map_floor

STEPS, LABELS = wt.SELF_STEPS, wt.SELF_STEP_LABELS

top = walkthrough.page_top(
    "self_attention", "Self-attention with trainable weights",
    "Lesson 3 of *Coding attention mechanisms* (LLMs from Scratch, 3.4): three trainable matrices "
    "turn each embedding into a query, a key and a value. Scores are queries · keys, scaled by "
    "1/√d_k, softmaxed by row; the context vectors are the weighted sums of the values.",
    step_field="sa_step", steps=STEPS, step_labels=LABELS, weights_editor=True)
settings, area, bar, labels, inputs = top.settings, top.area, top.bar, top.labels, top.inputs
num_tokens, d_in = inputs.shape  # (T, d_in)
step = bar.step
with bar.controls:
    query = walkthrough.query_select(settings, labels, width=300)
    projection = walkthrough.projection_controls(settings, d_in)
    with st.container(horizontal=True, gap="small"):
        walkthrough.book_setup_button("v1", "Book: SelfAttention_v1, seed 123")
        walkthrough.book_setup_button("v2", "Book: SelfAttention_v2, seed 789")
projection = walkthrough.weights_editor(settings, projection, d_in, top.weights_slot, area.lesson)

q_name, qi = labels[query], query + 1
d_out = settings.d_out
outs = [f"o{j + 1}" for j in range(d_out)]
where = f"{wt.describe_inputs(settings)}; {wt.describe_weights(settings, projection)}"
module_cls = attention.SelfAttentionV1 if settings.variant == "v1" else attention.SelfAttentionV2


def steps_code() -> None:
    """The code that computed the steps on screen, then the book's class they were checked against."""
    show_code([self_attention.self_attention, attention.attention_intermediates],
              label="Show the code that computed these numbers")
    walkthrough.show_book_code(module_cls, f"{module_cls.__name__}.forward = these steps")


def weights_step(steps) -> None:
    walkthrough.step_header(STEPS, "weights", "the trainable weights W_q, W_k, W_v")
    st.latex(rf"W_q,\ W_k,\ W_v \in \mathbb{{R}}^{{d_{{in}} \times d_{{out}}}} = "
             rf"\mathbb{{R}}^{{{d_in} \times {d_out}}}")
    cols = walkthrough.columns(3, key="weights", side_by_side=d_out <= 3)  # narrow matrices fit in a row
    for col, name, W in zip(cols, ("W_q", "W_k", "W_v"), projection.matrices()):
        with col:
            walkthrough.show_matrix(W, emb.dim_names(d_in), outs, name=f"self-attention-{name}", title=name,
                                    x_title="output dimension", y_title="input dimension", decimals=4,
                                    max_width=300, caption=f"{name}; {where}.")
    biases = [b for b in (projection.b_query, projection.b_key, projection.b_value) if b is not None]
    if biases:
        for name, b in zip(("b_q", "b_k", "b_v"), biases):
            walkthrough.numbers_line(f"{name} `{wt.shape_text(b)}` =", b.tolist())
    # how they were made, under the matrices: above them, it pushed them below a projector's screen
    st.markdown(self_attention.weights_words(projection))
    # the weights on screen: the book's class built after torch.manual_seed (or edited by hand)
    show_code([self_attention.seeded_module, module_cls, self_attention.projection_for])


def qkv_step(steps) -> None:
    walkthrough.step_header(STEPS, "qkv", "queries, keys and values")
    bias = " + b" if projection.b_query is not None else ""
    # the formula and its shapes side by side, the sentence on rows under the matrices: stacked
    # above them, the three pushed the matrices below a projector's screen
    formula_col, shape_col = walkthrough.columns([3, 2], key="qkv_formulas", gap="medium", side_by_side=True)
    with formula_col:
        st.latex(rf"Q = X W_q{bias},\quad K = X W_k{bias},\quad V = X W_v{bias}")
    with shape_col:
        st.latex(rf"({num_tokens} \times {d_in}) \cdot ({d_in} \times {d_out}) = "
                 rf"({num_tokens} \times {d_out})")
    cols = walkthrough.columns(3, key="qkv", side_by_side=d_out <= 3)  # narrow matrices fit in a row
    for col, name, t in zip(cols, ("Q", "K", "V"), (steps.queries, steps.keys, steps.values)):
        with col:
            walkthrough.show_matrix(t, labels, outs, name=f"self-attention-{name}", title=name,
                                    x_title="dimension", y_title="token", decimals=4, highlight_row=query,
                                    max_width=300, caption=f"{name} = X W_{name.lower()}; {where}.")
    st.markdown(f"Row **{q_name}** of Q is its query q^({qi}); every row of K is a key, "
                "every row of V a value.")
    walkthrough.numbers_line(f"q^({qi}) =", steps.queries[query].tolist())
    steps_code()


def scores_step(steps) -> None:
    walkthrough.step_header(STEPS, "scores", "attention scores Q Kᵀ")
    st.latex(rf"\Omega = Q K^\top \;({num_tokens} \times {num_tokens}),\qquad "
             rf"\omega_{{ij}} = q^{{(i)}} \cdot k^{{(j)}}")
    walkthrough.show_matrix(steps.attn_scores[0], labels, labels, name="self-attention-scores",
                            title="Ω = Q Kᵀ", x_title="key j", y_title="query i", highlight_row=query,
                            caption=f"Every query dotted with every key; {where}.")
    walkthrough.numbers_line(f"ω_{qi}j =", steps.attn_scores[0, query].tolist())
    steps_code()


def scaled_step(steps) -> None:
    walkthrough.step_header(STEPS, "scaled", "scaled scores Q Kᵀ / √d_k")
    head_dim = steps.head_dim
    # the formula and the sentence beside the map: above it, they pushed it below a projector's screen
    # ... in a row that wraps: the words go under the map where both do not fit
    chart_col, text_col = walkthrough.columns([3, 2], key="scaled", gap="large", side_by_side=True,
                                              min_width=[map_floor(num_tokens), None])
    with text_col:
        st.latex(r"\frac{Q K^\top}{\sqrt{d_k}}")
        # on two lines: on one, "√d_k = 1.4142" was cut to "√d_k =" beside the map at 1024 px
        st.latex(rf"\begin{{aligned}} d_k &= d_{{out}} = {head_dim} \\ "
                 rf"\sqrt{{d_k}} &= {math.sqrt(head_dim):.4f} \end{{aligned}}")
        st.markdown("Dividing by √d_k stops the scores' spread from growing with the width of the "
                    "keys (for independent entries of mean 0 and variance 1, a score's variance is "
                    "d_k before and 1 after), so softmax does not collapse to nearly one-hot (see "
                    "the panel below).")
    with chart_col:
        walkthrough.show_matrix(steps.scaled_scores[0], labels, labels, name="self-attention-scaled",
                                title="Q Kᵀ / √d_k", x_title="key j", y_title="query i",
                                highlight_row=query, lecture_width=walkthrough.LECTURE_COLUMN_W,
                                caption=f"The scores divided by √{head_dim}; {where}.")
    walkthrough.numbers_line(f"row {q_name} =", steps.scaled_scores[0, query].tolist())
    steps_code()
    with friendly_errors("the scaling panel"):
        scaling_panel()


def softmax_step(steps) -> None:
    walkthrough.step_header(STEPS, "softmax", "attention weights")
    walkthrough.formula_with_words(r"A = \mathrm{softmax}_{\text{row}}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right)"
                                   rf"\quad ({num_tokens} \times {num_tokens})", "each row sums to 1")
    weights = steps.attn_weights[0]
    top = wt.argmax_tokens(weights[query])
    revealed = walkthrough.predict_then_reveal(
        settings, walkthrough.scores_question_id("self_top", settings, projection, query),
        f"with these weights, which token does “{q_name}” attend to most?",
        list(range(num_tokens)), lambda i: labels[i], lambda g: g in top,
        f"“{labels[top[0]]}” gets α = {wt.fmt_number(float(weights[query, top[0]]))}. With trainable "
        "weights the answer depends on W_q and W_k, not only on the embeddings.")
    if revealed:
        walkthrough.show_matrix(weights, labels, labels, name="self-attention-weights",
                                title="A = softmax(Q Kᵀ / √d_k)", x_title="key j", y_title="query i",
                                domain=(0, 1), highlight_row=query,
                                caption=f"Row-wise softmax of the scaled scores; {where}.")
        walkthrough.numbers_line(f"α_{qi}j =", weights[query].tolist())
    steps_code()


def context_step(steps) -> None:
    walkthrough.step_header(STEPS, "context", "context vectors")
    st.latex(rf"Z = A V \quad ({num_tokens} \times {num_tokens}) \cdot ({num_tokens} \times {d_out})"
             rf" = ({num_tokens} \times {d_out})")
    walkthrough.show_matrix(steps.context_vec, labels, outs, name="self-attention-context",
                            title="Z = A V", x_title="dimension", y_title="token", decimals=4,
                            highlight_row=query, caption=f"One context vector per token; {where}.")
    walkthrough.numbers_line(f"z^({qi}) =", steps.context_vec[query].tolist())
    steps_code()


def scaling_panel() -> None:
    st.divider()
    st.header("Why divide by √d_k?")
    st.markdown("A dot product of two random vectors with d_k independent, zero-mean, "
                "unit-variance entries has variance d_k: the wider the keys, the more spread out the raw scores, and softmax of "
                "widely spread scores puts nearly all the weight on one token. Dividing by √d_k "
                "brings the spread back to 1 for every d_k.")
    state.bound(st.select_slider, "d_k (width of queries and keys)", settings, "scale_dk",
                prefix=walkthrough.PREFIX, options=list(wt.SCALE_DKS))
    d_k = settings.scale_dk
    seed = settings.weight_seed
    peak = self_attention.softmax_peak(d_k, 6, seed)
    table = self_attention.scaling_table(seed)
    left_col, right_col = walkthrough.columns(2, key="scaling")
    with left_col:
        lecture = state.lecture_mode()
        chart = lesson_charts.scaling_chart(table, chosen=d_k, lecture=lecture, width=560 if lecture else 340)
        show_chart(chart, name="scaling-curve", caption=(
            f"Mean largest softmax weight over 64 random sequences of 6 queries and 6 keys "
            f"(N(0, 1) entries), with and without 1/√d_k; seed {seed}. 1.0 means one-hot."))
    with right_col:
        keys = [f"k{j + 1}" for j in range(6)]
        walkthrough.show_bars(peak["row_unscaled"], keys, name="scaling-row",
                              title=f"One query's weights, d_k = {d_k}", x_title="key", y_title="weight",
                              decimals=2,
                              domain=(0, 1), series={"softmax(q·k)": peak["row_unscaled"],
                                                     "softmax(q·k / √d_k)": peak["row_scaled"]},
                              caption=f"One random query against 6 random keys, d_k = {d_k}, seed {seed}. "
                               f"Spread (std) of the raw scores ≈ {peak['score_std']:.2f}, "
                               f"of the scaled ones ≈ {peak['scaled_std']:.2f}.")
    logits, soft, soft100 = self_attention.slide_logits()
    st.subheader("The slides' example: logits vs logits × 100")
    names = [f"{v:g}" for v in logits]
    walkthrough.show_bars(soft, names, name="scaling-slides", title="softmax of the slides' logits",
                          x_title="logit", y_title="weight", domain=(0, 1), decimals=2, max_width=520,
                          series={"softmax(logits)": soft, "softmax(logits × 100)": soft100},
                          caption="Logits [0.1, 0.4, −0.9, 0.02, 0.35, −0.62] (course file 001): "
                           "diffuse weights, then nearly one-hot once multiplied by 100.")
    walkthrough.numbers_line("softmax(logits) =", soft, 2)
    walkthrough.numbers_line("softmax(logits × 100) =", soft100, 2)
    show_code([self_attention.scaling_run, self_attention.softmax_peak, self_attention._softmax_peak.__wrapped__,
               self_attention.slide_logits])


with area.lesson, friendly_errors("self-attention"):
    qkv_bias = settings.qkv_bias and settings.variant == "v2"
    bundle = walkthrough.cached("self", wt.cache_key(settings, "variant", "weight_seed", "d_out", "qkv_bias",
                                                     "custom_weights"),
                                self_attention.self_page, inputs, projection, qkv_bias)
    steps = bundle.steps
    with walkthrough.badge_row(bar):
        walkthrough.sdpa_badge(bundle.sdpa)
        walkthrough.check_badge(f"{module_cls.__name__}.forward = these steps", bundle.module_diff)
        walkthrough.book_badge(wt.book_reference(settings, "self"), steps.context_vec)
    {"weights": weights_step, "qkv": qkv_step, "scores": scores_step, "scaled": scaled_step,
     "softmax": softmax_step, "context": context_step}[step](steps)

walkthrough.finish_page(settings)
