"""What the Tokens & data loaders page computes once and shares between reruns and sessions.

The page's cached functions live here, not in the page: a page file runs again on every rerun, so
a cache decorator written in it was applied again each time, and Streamlit reads the function's
source to name its cache whenever it is applied (inspect.getsource: ~1 ms a function, six of them
on every rerun of this page). Here they are decorated once per process.
"""

from __future__ import annotations

import streamlit as st

from core.lessons import tokens_data
from core.tokenizers import GPT2_N_VOCAB, CharTokenizer
from core.viz import lessons as lesson_charts
from ui import formatting as fmt
from ui.charts import Figure, make_figure

@st.cache_data(max_entries=16, show_spinner=False)
def token_summary(text: str, allow_special: bool) -> tokens_data.TokenSummary:
    return tokens_data.token_summary(text, allow_special)


CHIPS_SHOWN = 250  # chips drawn per tokenizer; the rest of the text is counted, not drawn


@st.cache_data(max_entries=16, show_spinner=False)
def chips_panels(text: str, allow_special: bool, lecture: bool) -> tuple[str, str, int]:
    # The finished HTML of both panels, not the chips: a cached value is copied out to every
    # session that asks, and the whole text's chips (~25,000 objects for the default text, for
    # 250 drawn) made every student's rerun build and free ~8 MB of small objects.
    char_tokenizer = CharTokenizer.from_text(text)
    bpe_html = fmt.chips_html(tokens_data.bpe_chips(text, allow_special), limit=CHIPS_SHOWN, lecture=lecture,
                              label="GPT-2 BPE tokens")
    char_html = fmt.chips_html(tokens_data.char_chips(text, char_tokenizer), limit=CHIPS_SHOWN, lecture=lecture,
                               label="Character tokens")
    return bpe_html, char_html, char_tokenizer.vocab_size


@st.cache_resource(max_entries=32, show_spinner=False)
def chips_element(text: str, allow_special: bool, lecture: bool, which: str) -> None:
    # st.html cleans its body on every call (textwrap.dedent over the ~250 chips' HTML, and a scan
    # for style tags): py-spy put that at a twentieth of this page's time in a 10-minute class.
    # Drawn inside a cached function, the finished element is replayed (as name_windows_table).
    bpe_html, char_html, _ = chips_panels(text, allow_special, lecture)
    st.html(bpe_html if which == "bpe" else char_html)


@st.cache_resource(max_entries=16, show_spinner=False)
def loader_view(text: str, settings: tokens_data.TokensDataSettings) -> tokens_data.LoaderView:
    # The whole text is tokenized and windowed here: once per text and settings, not per click.
    # One object shared by the sessions (only ever read): each session keeps its last good view,
    # and a copy per session (cache_data's) was ~0.6 MB a student held for as long as they stayed.
    return tokens_data.build_loader_view(text, settings)


@st.cache_resource(max_entries=8, show_spinner=False)
def token_rows(output_dim: int, seed: int, ids_key: str, _ids: tuple[int, ...]):
    # only the rows of these ids: the whole 50,257-row table is 51 MB at width 256, and a class
    # trying widths and seeds kept one table each in the server's memory. Keyed by a digest of the
    # ids (tokens_data.ids_key): hashing thousands of ids on every rerun was 2% of a busy server.
    return tokens_data.seeded_embedding_rows(GPT2_N_VOCAB, output_dim, seed, _ids)


@st.cache_resource(max_entries=32, show_spinner=False)
def name_windows_table(name: str, context: int, lecture: bool, _tables) -> None:
    # The greyed padding is a pandas Styler, and Streamlit formats a styled table cell by cell on
    # every rerun (py-spy: 3% of a busy server's time, a fifth of this page's rerun). Drawn inside a
    # cached function, the finished element is kept and replayed (Streamlit stores the elements a
    # cached function draws), so it is formatted once per name and context for the whole class.
    styler = fmt.style_padded_windows(_tables)
    # every position of a window of 12 without a scroll bar (a row is 2.1875rem: 35 px, in lecture
    # mode's 20 px type 44 px)
    row_px = 44 if lecture else 35
    st.dataframe(styler, hide_index=True, width="stretch", height=row_px * (min(len(styler.data), 13) + 1) + 3)


ROWS_OF_THE_TEXT = 4096  # up to this many distinct ids, the rows of the whole text are kept


def rows_for(view: tokens_data.LoaderView, x, output_dim: int, seed: int):
    # Drawing rows walks the table up to the largest id (0.1-0.3 s at width 256): keyed by the
    # text's ids, not the batch's, so another batch, stride or batch size costs nothing.
    if len(view.distinct_ids) <= ROWS_OF_THE_TEXT:
        return token_rows(output_dim, seed, view.distinct_ids_key, view.distinct_ids)
    ids = tuple(sorted(set(x.flatten().tolist())))
    return token_rows(output_dim, seed, tokens_data.ids_key(ids), ids)


@st.cache_resource(max_entries=4, show_spinner=False)
def pos_table(output_dim: int, seed: int):
    return tokens_data.seeded_embedding(tokens_data.GPT2_CONTEXT, output_dim, seed + 1)


@st.cache_resource(max_entries=32, show_spinner=False)
def window_figure(ids_shown: tuple[int, ...], n_tokens: int, max_length: int, stride: int,
                  max_tokens: int, lecture: bool, _view: tokens_data.LoaderView) -> Figure:
    # The sliding-window drawing, ready to draw (its Vega-Lite spec and Arrow bytes): it depends
    # only on the first tokens, the text's length, max_length and stride (the key), so clicks on
    # batches, seeds and embeddings, and every student reading the same text, reuse it. Building
    # the Altair objects (~100 cells) and serialising them was a seventh of this page's rerun.
    # A cache of its own: each stride a student tries is one more figure, which in the class's
    # shared store (ui.charts.show_figure) would push out the walkthrough's figures.
    return make_figure(lambda: lesson_charts.window_chart(_view, max_tokens=max_tokens, max_windows=6,
                                                          lecture=lecture), lecture)
