"""Lesson 1: simple attention without trainable weights, one query step by step, then all tokens.

Book: chapter 3.3 of *LLMs from Scratch* (course file 004, lessons 1-2). With the defaults the
page prints the book's numbers for the query "journey".
"""

import streamlit as st
import torch

from core import attention
from core.lessons import embeddings as emb
from core.lessons import simple_attention
from core.lessons import walkthrough as wt
from ui import formatting as fmt
from ui import state
from ui import walkthrough
from ui.code import show_code
from ui.layout import friendly_errors, map_floor

STEPS, LABELS = wt.SIMPLE_STEPS, wt.SIMPLE_STEP_LABELS

top = walkthrough.page_top(
    "simple_attention", "Simple attention",
    "Lessons 1–2 of *Coding attention mechanisms* (LLMs from Scratch, 3.3): a query scores every "
    "token by a dot product (ω), softmax turns the scores into weights (α), and the weighted sum "
    "of the inputs is the context vector (z). No trainable weights yet.",
    step_field="step", steps=STEPS, step_labels=LABELS)
settings, area, bar, labels, inputs = top.settings, top.area, top.bar, top.labels, top.inputs
num_tokens, d_in = inputs.shape  # (T, d_in)
step = bar.step
with bar.controls:
    query = walkthrough.query_select(settings, labels, width=300)

q_name, qi = labels[query], query + 1  # the book numbers tokens from 1: x^(1), x^(2), ...
where = wt.describe_inputs(settings)


def ask_top_token(result: simple_attention.SimpleAttention) -> bool:
    """Predict, then reveal: which token gets the most attention from the query?"""
    top = wt.argmax_tokens(result.attn_weights)
    return walkthrough.predict_then_reveal(
        settings, wt.question_id("simple_top", settings.tokens, settings.embeddings, query),
        f"which token does “{q_name}” attend to most?", list(range(num_tokens)),
        lambda i: labels[i], lambda g: g in top,
        f"The largest weight goes to “{labels[top[0]]}” "
        f"(α = {wt.fmt_number(float(result.attn_weights[top[0]]))}): the token with the largest "
        "dot product with the query, that is its length times the cosine of its angle to the "
        "query. Softmax keeps that order.")


def scores_step(result: simple_attention.SimpleAttention) -> None:
    walkthrough.step_header(STEPS, "scores", "ω, the attention scores")
    chart_col, text_col = walkthrough.columns([1, 1], key="scores", gap="large", side_by_side=True)
    with text_col:
        st.markdown(f"Score of every token against the query **{q_name}** (x^({qi})): "
                    "the dot product of the two embeddings.")
        st.latex(rf"\omega_{{{qi}j}} = x^{{({qi})}} \cdot x^{{(j)}} = "
                 rf"\sum_{{k=1}}^{{{d_in}}} x^{{({qi})}}_k \, x^{{(j)}}_k")
        st.latex(walkthrough.sum_over_lines(fmt.dot_product_latex(
            inputs[query].tolist(), inputs[0].tolist(), float(result.attn_scores[0]), qi, 1)))
        walkthrough.check_badge("loop = matrix product", result.loop_vs_matmul)
    with chart_col:
        if ask_top_token(result):
            walkthrough.show_bars(result.attn_scores, labels, name="simple-attention-scores",
                                  title=f"ω: scores of query “{q_name}”", x_title="token j",
                                  y_title=f"ω_{qi}j", highlight=query,
                                  caption=f"Dot product of x^({qi}) “{q_name}” with every token (query "
                                   f"highlighted); {where}.")
            walkthrough.numbers_line("ω =", result.attn_scores.tolist())
    show_code([attention.attn_scores_loop, attention.attn_scores_matmul])


def weights_step(result: simple_attention.SimpleAttention) -> None:
    walkthrough.step_header(STEPS, "weights", "α, the attention weights")
    # one sentence above the formulas, the comparison under the bars: all above them, the words
    # pushed the bars below a projector's screen
    st.markdown("Softmax turns the scores into positive weights that add up to 1.")
    soft_col, plain_col = walkthrough.columns(2, key="weights", gap="medium", side_by_side=True)
    with soft_col:
        st.latex(rf"\alpha_{{{qi}j}} = \mathrm{{softmax}}(\omega_{{{qi}}})_j = "
                 rf"\frac{{\exp(\omega_{{{qi}j}})}}{{\sum_{{k=1}}^{{{num_tokens}}} \exp(\omega_{{{qi}k}})}}")
    with plain_col:
        st.latex(rf"\alpha^{{\text{{plain}}}}_{{{qi}j}} = "
                 rf"\frac{{\omega_{{{qi}j}}}}{{\sum_{{k=1}}^{{{num_tokens}}} \omega_{{{qi}k}}}}")
    if ask_top_token(result):
        series = {"softmax": result.attn_weights.tolist()}
        if result.attn_weights_plain is not None:
            series["plain ω / Σω"] = result.attn_weights_plain.tolist()
        # full width: two bars per token with their four-decimal values written on them
        walkthrough.show_bars(result.attn_weights, labels, series=series, name="simple-attention-weights",
                              title=f"α: weights of query “{q_name}”", x_title="token j",
                              y_title=f"α_{qi}j", max_width=640, caption=f"Softmax of the scores beside "
                              f"plain normalisation, query “{q_name}”; {where}.")
        walkthrough.numbers_line("α (softmax) =", result.attn_weights.tolist())
        sums = f"Σα = {float(result.attn_weights.sum()):.4f} (softmax)"
        if result.attn_weights_plain is not None:
            walkthrough.numbers_line("α (plain) =", result.attn_weights_plain.tolist())
            sums += f", {float(result.attn_weights_plain.sum()):.4f} (plain)"
        st.markdown(sums)
    st.markdown("Plain normalisation (divide by the sum) also adds up to 1, but keeps negative "
                "scores negative and breaks when the sum is 0.")
    if result.plain_note:
        st.info(f"Plain normalisation: {result.plain_note}", icon=":material/info:")
    show_code([attention.attn_weights_softmax, attention.attn_weights_plain])


def context_step(result: simple_attention.SimpleAttention) -> None:
    walkthrough.step_header(STEPS, "context", "z, the context vector")
    dims = emb.dim_names(d_in)
    # a few bars need little room: the weighted sum beside them needs more
    chart_col, text_col = walkthrough.columns([2, 3] if d_in <= 4 else [1, 1], key="context", gap="large",
                                             side_by_side=True)
    with text_col:
        st.markdown(f"The context vector of **{q_name}** is the sum of all inputs, each scaled "
                    "by its attention weight: the table's rows add up to z.")
        st.latex(rf"z^{{({qi})}} = \sum_{{j=1}}^{{{num_tokens}}} \alpha_{{{qi}j}}\, x^{{(j)}}")
        st.latex(walkthrough.sum_over_lines(fmt.weighted_sum_latex(
            result.attn_weights.tolist(), inputs[:, 0].tolist(), float(result.context_vec[0]), qi)))
        walkthrough.check_badge("loop = matrix product", result.loop_vs_matmul)
    with chart_col:
        walkthrough.show_bars(result.context_vec, dims, name="simple-attention-context",
                              title=f"z: context vector of “{q_name}”", x_title="dimension",
                              y_title=f"z^({qi})",
                              caption=f"Weighted sum of the inputs for query “{q_name}”; {where}.")
        walkthrough.numbers_line("z =", result.context_vec.tolist())
    matrix = torch.cat([result.contributions, result.context_vec[None]], dim=0)  # (T + 1, d_in)
    walkthrough.show_matrix(matrix, labels + ["z = Σ"], dims, name="simple-attention-contributions",
                            title="α_j · x^(j), and their sum z", x_title="dimension", y_title="token j",
                            decimals=4, highlight_row=num_tokens,
                            caption=f"Each row is one input scaled by its weight for query “{q_name}”; "
                             f"the last row is their sum, the context vector; {where}.")
    show_code([attention.context_vec_loop, attention.context_vec_matmul])


def matrix_step(result: simple_attention.SimpleAttention) -> None:
    walkthrough.step_header(STEPS, "matrix", "all tokens at once")
    # the sentence and the formulas beside the first map: above it, they pushed the maps below a
    # projector's screen. Lecture mode stacks the maps; on a wide screen the two maps and the words
    # share a row, which wraps where they do not fit (1024 px: one under the other; in thirds of
    # the row the maps were strips of piled-up labels and overlapping numbers)
    floor = map_floor(num_tokens)
    if state.lecture_mode():
        scores_col, text_col = walkthrough.columns([3, 2], key="matrix", gap="large", side_by_side=True,
                                                   min_width=[floor, None])
        weights_col = st.container()
    else:
        scores_col, weights_col, text_col = walkthrough.columns(3, key="matrix", gap="large",
                                                                min_width=[floor, floor, None])
    with text_col:
        st.markdown("The same three steps for every query at once, as matrix products. Row "
                    f"**{q_name}** of each matrix is exactly what the first three steps computed.")
        st.latex(rf"\begin{{aligned}} \Omega &= X X^\top & ({num_tokens}\times{num_tokens}) \\ "
                 rf"A &= \mathrm{{softmax}}_{{\text{{row}}}}(\Omega) & ({num_tokens}\times{num_tokens}) \\ "
                 rf"Z &= A X & ({num_tokens}\times{d_in}) \end{{aligned}}")
    with scores_col:
        walkthrough.show_matrix(result.all_scores, labels, labels, name="simple-attention-all-scores",
                                title="Ω = X Xᵀ", x_title="key j", y_title="query i", highlight_row=query,
                                max_width=320, lecture_width=walkthrough.LECTURE_COLUMN_W,
                                caption=f"Every pair's dot product; {where}.")
    with weights_col:
        walkthrough.show_matrix(result.all_weights, labels, labels, name="simple-attention-all-weights",
                                title="A = softmax(Ω) by row", x_title="key j", y_title="query i",
                                domain=(0, 1), highlight_row=query, max_width=320,
                                caption=f"Row-wise softmax: each row sums to 1; {where}.")
    # full width: a badge does not wrap, in the text column its end was cut off
    walkthrough.check_badge(f"row “{q_name}” of A and Z = the one-query α and z", result.row_vs_single)
    walkthrough.show_matrix(result.all_context, labels, emb.dim_names(d_in),
                            name="simple-attention-all-context",
                            title="Z = A X", x_title="dimension", y_title="query i", decimals=4,
                            highlight_row=query, caption=f"One context vector per token; {where}.")
    show_code([attention.all_attn_scores, attention.all_attn_weights, attention.all_context_vecs])


with area.lesson, friendly_errors("simple attention"):
    bundle = walkthrough.cached("simple", wt.cache_key(settings, "query"), simple_attention.simple_page,
                                inputs, query)
    result = bundle.result
    with walkthrough.badge_row(bar):
        walkthrough.sdpa_badge(bundle.sdpa)
    {"scores": scores_step, "weights": weights_step, "context": context_step,
     "matrix": matrix_step}[step](result)

walkthrough.finish_page(settings)
