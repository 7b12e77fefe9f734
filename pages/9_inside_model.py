"""Inside the trained names GPT: attention maps of every layer and head for a typed name, the
next-character distribution at each position, the token embeddings and their 2-D PCA."""

import dataclasses

import streamlit as st

from core import runs
from core.viz import names_model as names_charts
from core.lessons import inside_model as lesson
from core.models import CausalSelfAttention
from core.settings import count
from ui import training
from ui.code import show_code
from ui.layout import friendly_errors
from ui.state import bound, lecture_mode, page_title, set_field, spec_widget, sync_url

PREFIX = "inside"
# The last name that could be read, as text: after a typo the page reads it again with the model
# picked now. (Keeping its Inspection instead showed one model's maps under another's label.)
LAST_NAME_KEY = "inside.last_valid"

page_title("Inside the model")
st.markdown(
    "Type a name and look at what the trained GPT does with it: where each position looks "
    "(attention weights, one map per layer and head), what it expects next at every position, "
    "and how it has arranged the 27 characters in its embedding space.")

settings, book, run = training.model_page(PREFIX, lesson.InsideSettings, "look inside")

config = run.trainer.config.model


def _fit_to_model(settings: lesson.InsideSettings, run: runs.Run) -> None:
    """Layer and head within the picked model. A link, or a bigger model picked before, can ask
    for a map this model does not have: the first one is shown instead, and the notice says so."""
    config = run.trainer.config.model
    asked = (settings.layer, settings.head)
    for field, n in (("layer", config.n_layer), ("head", config.n_head)):
        if getattr(settings, field) > n:
            set_field(PREFIX, field, 1)
            setattr(settings, field, 1)  # also when a lesson locked it: this model has no such map
    if (settings.layer, settings.head) != asked:
        st.info(f"Layer {asked[0]}, head {asked[1]} is not in {run.label} "
                f"({count(config.n_layer, 'layer')} × {count(config.n_head, 'head')}), so "
                f"layer {settings.layer}, head {settings.head} is shown.", icon=":material/info:")


_fit_to_model(settings, run)

name_col, layer_col, head_col = st.columns([2, 1, 1])
with name_col:
    spec_widget(settings, "name", prefix=PREFIX,
                help=f"Letters a–z; the model reads at most {config.context_size} characters, “.” included.")
with layer_col:
    bound(st.selectbox, "Layer (enlarged map)", settings, "layer", prefix=PREFIX,
          options=list(range(1, config.n_layer + 1)), format_func=lambda i: f"layer {i}")
with head_col:
    bound(st.selectbox, "Head (enlarged map)", settings, "head", prefix=PREFIX,
          options=list(range(1, config.n_head + 1)), format_func=lambda i: f"head {i}")


def _inspect(run: runs.Run, name: str) -> lesson.Inspection:
    """Cached per (run, step, name) in the session, so changing the layer or head is instant."""
    key = (run.run_id, run.step, name)
    cache = st.session_state.setdefault("inside.cache", {})
    if key not in cache:
        cache.clear()
        cache[key] = lesson.inspect_name(run.model, run.tokenizer, name)
    return cache[key]


def _last_valid(run: runs.Run) -> lesson.Inspection | None:
    """After a typo: the last name that could be read, read by `run` (the model shown), or None."""
    name = st.session_state.get(LAST_NAME_KEY)
    if not isinstance(name, str):  # none yet
        return None
    try:
        inspection = _inspect(run, name)
    except ValueError:  # not in this model's alphabet (an uploaded checkpoint): the typo's error is shown
        return None
    st.caption("Showing the last name that could be read: “" + "".join(inspection.tokens[1:]) + "”.")
    return inspection


inspection = None
with friendly_errors("the attention maps"):
    inspection = _inspect(run, settings.name)
    st.session_state[LAST_NAME_KEY] = settings.name
name_read = inspection is not None  # the typed name could be read
if inspection is None:
    inspection = _last_valid(run)

if inspection is not None:
    if inspection.truncated:
        st.warning(f"The name is longer than the model's context: only the first "
                   f"{len(inspection.tokens) - 1} letters are shown.", icon=":material/content_cut:")
    T = len(inspection.tokens)
    n_layer, n_head = inspection.attn.shape[:2]
    text = "".join(inspection.tokens)
    # grey cells only exist with the mask: without it, say what the upper triangle holds instead
    mask_note = (" Grey cells are masked (the future)." if config.causal else
                 " This model was trained **without the causal mask**: the upper triangle is not "
                 "empty, it reads the future.")
    lecture = lecture_mode()
    per_row = names_charts.overview_plan(n_layer, n_head, T, lecture=lecture)  # None: every layer
    st.subheader("Attention weights, every layer and head" if per_row is None else
                 f"Attention weights, every head of layer {settings.layer}")
    st.markdown(f"Input “{text}”: {T} positions. Each map is `(T, T) = ({T}, {T})`: row = the position "
                "reading (query), column = the position it attends to (key); every row sums to 1."
                + mask_note)
    if per_row is not None and n_layer > 1:
        st.info(f"{count(n_layer, 'layer')} × {count(n_head, 'head')} are too many maps of {T} positions "
                f"to read in one picture: this shows every head of the layer picked above, the one "
                f"enlarged below, {per_row} to a row.", icon=":material/grid_view:")
    elif per_row is not None:
        st.info(f"The {n_head} heads are drawn {per_row} to a row: in one row their maps of {T} "
                "positions would be too small to read.", icon=":material/grid_view:")
    name_key = (run.run_id, run.step, text)  # the model at this step, reading this name
    grid_layer = None if per_row is None else settings.layer - 1  # 0-based, as the model counts
    training.show_cached_chart(
        lambda: names_charts.attention_grid_chart(inspection, lecture=lecture, layer=grid_layer, columns=per_row),
        name_key + (grid_layer, per_row),
        name=("Attention weights of every layer and head" if per_row is None else
              f"Attention weights of every head of layer {settings.layer}"), key="inside.grid",
        caption=(f"Attention weights of all {count(n_layer, 'layer')} × {count(n_head, 'head')} for “{text}”, "
                 if per_row is None else
                 f"Attention weights of the {count(n_head, 'head')} of layer {settings.layer} "
                 f"(of {count(n_layer, 'layer')}) for “{text}”, ")
                + f"{run.label}, step {run.step:,} (colour 0 to 1).")
    training.show_cached_chart(
        lambda: names_charts.attention_head_chart(inspection, settings.layer - 1, settings.head - 1, lecture=lecture),
        name_key + (settings.layer, settings.head),
        name=f"Attention weights, layer {settings.layer}, head {settings.head}", key="inside.head",
        caption=(f"Layer {settings.layer}, head {settings.head} for “{text}”, shape ({T}, {T}); "
                 + (f"grey “{names_charts.MASKED_CELL}”: masked (the future); " if inspection.causal else "")
                 + f"{run.label}, step {run.step:,}."))

    st.subheader("What it expects next, at every position")
    training.show_cached_chart(
        lambda: names_charts.next_char_chart(inspection, lecture=lecture), name_key,
        name="Next-character probabilities by position", key="inside.next",
        caption=(f"Next-character probabilities ({T}, {len(inspection.vocab)}) after each prefix "
                 f"of “{text}”; {run.label}, step {run.step:,}."))
    st.dataframe(lesson.top_predictions(inspection), hide_index=True)

st.subheader("Character embeddings")
weights_shape = tuple(run.model.token_embedding.weight.shape)
st.markdown(f"The token embedding matrix has one row per character: shape `{weights_shape}`. Training "
            "moves characters that behave alike (that can follow and precede the same letters) close "
            "together; after training, vowels and consonants separate.")
pca_frame, ratios = lesson.embedding_pca(run.model, run.tokenizer)
separation = lesson.vowel_separation(pca_frame)
pca_col, metric_col = st.columns([3, 1])
with pca_col:
    training.show_cached_chart(
        lambda: names_charts.pca_chart(pca_frame, ratios, lecture=lecture_mode()), (run.run_id, run.step),
        name="Character embeddings: 2-D PCA", key="inside.pca",
        caption=(f"2-D PCA of the {weights_shape[0]} character embeddings ({ratios.sum():.0%} of the "
                 f"variance); {run.label}, step {run.step:,}. Vowel/consonant separation "
                 f"{separation:.2f} (centroid gap over spread)."))
with metric_col:
    chance, chance_top = lesson.chance_separation(pca_frame)
    st.metric("Vowel / consonant separation", f"{separation:.2f}",
              help="Distance between the vowel and consonant centres in the PCA plane, divided by "
                   "the average spread within the groups. It is not 0 by chance: 5 vowels against "
                   "21 consonants have centres apart even in random groups. Dealt into random groups "
                   f"of those sizes, these same points score {chance:.2f} on average, and 95% of "
                   f"the deals score below {chance_top:.2f}.")
    st.caption(f"By chance (the labels dealt at random): {chance:.2f}, 95% below {chance_top:.2f}. "
               f"The same model before training (seed {run.trainer.config.seed}): "
               f"{lesson.initial_separation(run):.2f}.")
training.show_cached_chart(
    lambda: names_charts.embedding_heatmap(run.model, run.tokenizer, lecture=lecture_mode()), (run.run_id, run.step),
    name="Token embedding matrix", key="inside.embedding",
    caption=f"Token embedding matrix {weights_shape} ({names_charts.embedding_colours(lecture_mode())}); "
            f"{run.label}, step {run.step:,}.")

show_code([lesson.inspect_name, CausalSelfAttention.forward, lesson.top_predictions,
           lesson.embedding_pca, lesson.vowel_separation])
# a name the model cannot read stays in its box to be corrected, but not in the link: a reload or a
# shared link would open on the error again; the link holds the last name that could be read
last_read = st.session_state.get(LAST_NAME_KEY)
sync_url(settings if name_read else dataclasses.replace(
    settings, name=last_read if isinstance(last_read, str) else lesson.InsideSettings().name))
