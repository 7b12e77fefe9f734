"""Tokens & data loaders: text -> GPT-2 tokens -> sliding windows -> batches -> embeddings.

The book's chapter 2 (course document 003): `GPTDatasetV1`, `create_dataloader`, token + position
embeddings giving (8, 4, 256); and how the names GPT of lecture 7 turns one name into padded windows.
All the work is done in core/lessons/tokens_data.py and core/data.py; this page only draws it.
"""

from __future__ import annotations

import dataclasses

import streamlit as st

from core import data as core_data
from core import viz as charts
from core.lessons import text as texts
from core.lessons import tokens_data
from core.tokenizers import END_OF_TEXT, GPT2_N_VOCAB, bpe_tokens, gpt2_source
from core.viz import lessons as lesson_charts
from ui import formatting as fmt
from ui import state
from ui import tokens_cache
from ui.charts import show_figure
from ui.code import show_code
from ui.layout import friendly_errors, lesson_panel
from ui.text_lessons import keep_last_good, text_source

PREFIX = "tokens"
PAGE = "tokens-data"

settings = state.page_settings(PREFIX, tokens_data.TokensDataSettings)
settings = lesson_panel(PREFIX, tokens_data.TokensDataSettings, PAGE, settings)
lecture = state.lecture_mode()


def show_window_chart(view: tokens_data.LoaderView, max_tokens: int, lecture: bool, caption: str) -> None:
    """The sliding-window drawing of `view`, made once per what it shows (tokens_cache.window_figure)."""
    vs = view.settings
    figure = tokens_cache.window_figure(tuple(view.token_ids[:max_tokens + 1]), view.n_tokens, vs.max_length,
                                        vs.stride, max_tokens, lecture, view)
    show_figure(lambda: lesson_charts.window_chart(view, max_tokens=max_tokens, max_windows=6, lecture=lecture),
                (), figure=figure, name="sliding windows", caption=caption)


# The windows table (tokens_data.window_table): each window's tokens as text, input beside target,
# before their ids. Ids first, a 1024 px page (or lecture mode's larger grid) showed no target at all.
# At their own widths the six columns took 842 px (1,052 in lecture mode) and a 1024 px page has 564
# (644): the ids were behind a scroll bar and the target cut ("␣su…"). So each column has a width
# that fits the six in that room, and a row is as tall as its longest cell wrapped in its column
# (on a wider page the grid shares the rest of the room between the four of them). In lecture
# mode they fit 514 px: a table already drawn when the sidebar's switch turns lecture mode on keeps
# its 14 px text and is zoomed by 1.25 in a box narrowed by as much (ui.layout.LECTURE_CSS).
WINDOW_COLUMNS = ["window", "start", "input text", "target text", "input ids", "target ids"]
WINDOW_WIDTHS = {False: {"window": 32, "start": 46, "input text": 140, "target text": 140,
                         "input ids": 94, "target ids": 94},  # 546 px of 564
                 True: {"window": 36, "start": 52, "input text": 130, "target text": 130,
                        "input ids": 78, "target ids": 78}}  # 504 px of 514 (or 644 at 17.5 px)
WINDOW_WRAPPED = ("input text", "target text", "input ids", "target ids")


def window_column_config(lecture: bool) -> dict:
    """The windows table's headers, tooltips and column widths (WINDOW_WIDTHS)."""
    widths = WINDOW_WIDTHS[lecture]
    number, text = st.column_config.NumberColumn, st.column_config.TextColumn
    return {
        # pinned: the grid gives a wider page's room to the other columns only
        "window": number("#", help="The window's number.", width=widths["window"], pinned=True),
        "start": number("start", help="Where its first token is: window × stride.", width=widths["start"],
                        pinned=True),
        "input text": text("input", help="The window's tokens, as text (␣ = a space).",
                           width=widths["input text"]),
        "target text": text("target", help="The same tokens one step to the right: each one is the token "
                                           "that follows its input.", width=widths["target text"]),
        "input ids": text("input ids", help="The window's GPT-2 token ids: what the model reads.",
                          width=widths["input ids"]),
        "target ids": text("target ids", help="The ids it learns to predict: the input ids one step to the "
                                              "right.", width=widths["target ids"]),
    }


def locked_batch_for_text(settings: tokens_data.TokensDataSettings,
                          batch_max: int | None) -> tokens_data.TokensDataSettings:
    """The settings the loader uses when a lesson locks batch_size: the lesson's size, or the
    number of windows when this text makes fewer. A lock cannot be changed from the page (not
    even by a "Use batch_size" button: ui.state.set_field ignores locked fields), so without
    this a lesson's 64 left a short text on an error; the lesson's value itself stays in
    `settings`, and applies again to a text that makes that many windows."""
    if batch_max is None or settings.batch_size <= batch_max:
        return settings
    return dataclasses.replace(settings, batch_size=batch_max)


def fit_batch_to_text(settings: tokens_data.TokensDataSettings,
                      batch_max: int | None) -> tuple[int | None, int | None]:
    """Lower the user's batch_size to the windows of a short text, and bring it back as the text
    grows (tokens_data.fitted_batch_size). Returns (the size before a change this run, else None;
    the size it is on its way back to, else None)."""
    # (the size this page set, the user's own choice): a size lowered for a short text comes back
    set_by_page, wanted = st.session_state.get(f"{PREFIX}.batch_lowered", (None, None))
    if settings.batch_size != set_by_page:
        wanted = None  # the user (or a link) chose a size since: that is the choice now
    batch_size, wanted = tokens_data.fitted_batch_size(settings.batch_size, wanted, batch_max)
    batch_was = settings.batch_size if batch_size != settings.batch_size else None
    if batch_was is not None:
        state.set_field(PREFIX, "batch_size", batch_size)
    st.session_state[f"{PREFIX}.batch_lowered"] = (batch_size, wanted)
    return batch_was, wanted


def locked_batch_notice(locked_size: int, used_size: int) -> None:
    """Say why the windows use another batch_size than the one the lesson fixed."""
    st.warning(f"The lesson fixed batch_size at {locked_size}, but this text only makes {used_size} "
               f"windows: with drop_last=True a batch of {locked_size} would give no batch at all, so "
               f"the windows below use batch_size {used_size}. The lesson's {locked_size} applies "
               "again to a text that makes that many windows.", icon=":material/lock:")


state.page_title("Tokens & data loaders")
st.markdown(
    "Attention works on vectors, not on letters. This lesson follows one text all the way: "
    "**tokens** (GPT-2's byte-pair encoding beside plain characters), **windows** of `max_length` "
    "tokens whose targets are the inputs shifted by one, **batches** from a DataLoader, and the "
    "**token + position embeddings** that attention finally reads. *(Book chapter 2; course "
    "document 003.)*")

# ---------------------------------------------------------------------------------------------
st.header("1 · The text")
text, text_origin = text_source(PREFIX, settings, "text_choice", tokens_data.TOKEN_TEXTS, min_chars=2)
st.caption(f"Using {text_origin}: {len(text):,} characters.")
if settings.text_choice != "own":
    with st.expander("Read the text", icon=":material/article:"):
        st.code(text, language=None, wrap_lines=True)

# ---------------------------------------------------------------------------------------------
st.header("2 · Two tokenizers")
state.bound(st.toggle, f"Read {END_OF_TEXT} as one special token", settings, "allow_special",
            prefix=PREFIX, help="On: the marker becomes id 50256, as in the book's GPTDatasetV1 "
            "(allowed_special={'<|endoftext|>'}). Off: it is split like ordinary text.")
with friendly_errors("the tokens"):
    summary = tokens_cache.token_summary(text, settings.allow_special)
    char_vocab = summary.char_vocab_size
    # labels of a word or two: a quarter of the page at 1024 px cut "Character vocabula…"
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Characters", f"{summary.n_chars:,}")
    m2.metric("Vocabulary |V|", f"{char_vocab:,}",
              help="The character tokenizer's vocabulary: the distinct characters of the text, "
                   "plus “.” (the start/end token) when the text has none.")
    m3.metric("GPT-2 tokens", f"{summary.n_bpe:,}")
    m4.metric("Chars / token", f"{summary.chars_per_token:.2f}",
              help="Characters per GPT-2 token: how much text one BPE token covers on average.")

    left, right = st.columns(2)
    with left:
        st.subheader(f"GPT-2 BPE · {summary.n_bpe:,} tokens")
        tokens_cache.chips_element(text, settings.allow_special, lecture, "bpe")
        st.caption(f"Vocabulary of {GPT2_N_VOCAB:,} ids; ␣ marks a space that belongs to the token. "
                   f"Encoding loaded offline from the {gpt2_source().split(' (')[0]}.")
        if summary.n_partial:
            st.caption(tokens_data.partial_note(summary.n_partial))
    with right:
        st.subheader(f"Characters · {summary.n_chars:,} tokens")
        tokens_cache.chips_element(text, settings.allow_special, lecture, "chars")
        st.caption(f"One id per character, vocabulary of {char_vocab} (sorted; “.” is always id 0 "
                   "in this project's tokenizer, because the names GPT uses it as start/end).")

    ok = ":green[**✓ equal to the text**]" if summary.bpe_round_trip else ":red[**✗ differs from the text**]"
    ok_chars = ":green[**✓ equal to the text**]" if summary.char_round_trip else \
        ":red[**✗ differs from the text**]"
    st.markdown(f"**Decode round trip** — GPT-2: `decode(encode(text))` {ok} · "
                f"characters: `decode(encode(text))` {ok_chars}")

    special_ids, plain_ids = tokens_data.end_of_text_pieces()
    with st.container(border=True):
        st.markdown(
            f"**How `{END_OF_TEXT}` is handled.** GPT-2 puts this marker between unrelated documents. "
            f"Read as a special token it is one id, `{special_ids}`; read as ordinary text it is "
            f"{len(plain_ids)} tokens `{plain_ids}` that mean nothing special. The character tokenizer "
            f"always sees its {len(END_OF_TEXT)} characters.")
        if summary.n_end_of_text:
            st.markdown(
                f"This text holds the marker {summary.n_end_of_text}×: "
                f"{summary.n_bpe:,} GPT-2 tokens now, "
                f"{summary.n_bpe_plain:,} if it were read as plain text.")
        else:
            st.markdown(f"This text has no marker; add `{END_OF_TEXT}` between two paragraphs "
                        "of your own text to see it.")
    show_code([bpe_tokens, tokens_data.token_summary], label="Show the code that tokenized the text")

# ---------------------------------------------------------------------------------------------
st.header("3 · Sliding windows and batches")
st.markdown(
    "`GPTDatasetV1` reads `max_length` tokens as the **input** and the same tokens moved one "
    "step to the right as the **target**; the next window starts `stride` tokens later. "
    "`DataLoader` groups windows into batches (dropping a last, incomplete batch).")
# aligned at the bottom: a label of two lines ("Shuffle seed") no longer lowers its box alone
with state.refusals_below():  # a refused entry is said under the row, at full width
    c1, c2, c3, c4, c5 = st.columns(5, vertical_alignment="bottom")
    with c1:
        state.number_field(settings, "max_length", prefix=PREFIX, help="Tokens per window (the lesson uses 4).")
    with c2:
        state.number_field(settings, "stride", prefix=PREFIX,
                           help="How far the next window starts (the lesson uses 5). "
                                "stride < max_length: windows overlap; stride > max_length: tokens are skipped.")
    batch_locked = "batch_size" in state.locked_fields(PREFIX)
    # computed for a locked batch_size too: a lesson's size can be too large for the text as well
    batch_max = tokens_data.batch_size_limit(tokens_cache.token_summary(text, settings.allow_special).n_bpe,
                                             settings.max_length, settings.stride)
    loader_settings = settings  # what the windows are made with (a locked batch_size may be lowered)
    batch_was, wanted = None, None
    with c3:
        if batch_locked:  # the lesson's value stays in settings; only this text's windows use less
            loader_settings = locked_batch_for_text(settings, batch_max)
        else:
            batch_was, wanted = fit_batch_to_text(settings, batch_max)
        # a locked box shows the size in use (its object's value); the notice below names the lesson's
        state.number_field(loader_settings, "batch_size", prefix=PREFIX, max_value=batch_max,
                           help="Windows per batch (the lesson uses 8); at most the number of windows.")
    with c4:
        state.number_field(settings, "seed", prefix=PREFIX, label="Shuffle seed",
                           help="Seeds the shuffle (a private torch.Generator). The embedding tables below keep "
                                f"the book's seed, {tokens_data.EMBEDDING_SEED}: a new shuffle, the same vectors.")
    with c5:
        state.bound(st.checkbox, "shuffle", settings, "shuffle", prefix=PREFIX,
                    help="Shuffle the order of the windows each epoch, like create_dataloader(shuffle=True).")

if loader_settings is not settings:
    locked_batch_notice(settings.batch_size, loader_settings.batch_size)
elif batch_was is not None and settings.batch_size < batch_was:
    st.warning(f"batch_size {batch_was} is larger than the number of windows ({batch_max}): with "
               f"drop_last=True the loader would give no batch at all, so batch_size is now {batch_max}."
               + (f" It goes back to {wanted} when the text makes that many windows." if wanted else ""),
               icon=":material/vertical_align_bottom:")
elif batch_was is not None:
    st.info(f"The text makes {batch_max} windows now: batch_size is {settings.batch_size}, on its way back "
            f"to the {wanted} you chose." if wanted else
            f"The text makes enough windows again: batch_size is back to {settings.batch_size}, the size "
            "you chose.", icon=":material/vertical_align_top:")
view, loader_ok = None, False
with friendly_errors("the windows"):
    view, loader_ok = keep_last_good(f"{PREFIX}.good_view",
                                     lambda: tokens_cache.loader_view(text, loader_settings), "the windows")
# never offered for a locked batch_size: set_field ignores it, so the button would do nothing
if not loader_ok and not batch_locked and settings.max_length >= 1 and settings.stride >= 1:
    n_windows_now = core_data.count_windows(tokens_cache.token_summary(text, settings.allow_special).n_bpe,
                                            settings.max_length, settings.stride)
    if 1 <= n_windows_now < settings.batch_size:
        st.button(f"Use batch_size {n_windows_now}", key=f"{PREFIX}.fit_batch",
                  on_click=state.set_field, args=(PREFIX, "batch_size", n_windows_now),
                  icon=":material/auto_fix_high:")
if view is not None:
    vs = view.settings
    if not loader_ok:
        st.info(f"Showing the last valid windows: max_length {vs.max_length}, stride {vs.stride}, "
                f"batch_size {vs.batch_size}, {view.n_tokens} tokens.", icon=":material/undo:")
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Tokens in the loader", f"{view.n_tokens:,}")
    m2.metric("Windows", f"{view.n_windows:,}")
    m3.metric("Batches", f"{view.n_batches:,}")
    m4.metric("Windows dropped", f"{view.dropped:,}",
              help="drop_last=True: windows that do not fill a last batch are left out.")
    st.markdown(
        f"Number of windows = ⌊(tokens − max_length − 1) / stride⌋ + 1 = "
        f"{tokens_data.window_count_formula(view.n_tokens, vs.max_length, vs.stride).split(' = ', 1)[1]}"
        f" · batches = ⌊{view.n_windows} / {vs.batch_size}⌋ = {view.n_batches}")
    st.caption(tokens_data.stride_note(vs.stride, vs.max_length))
    max_tokens = 16 if lecture else 20
    show_window_chart(view, max_tokens, lecture,
                      caption=(f"The first {min(view.n_tokens, max_tokens)} GPT-2 tokens; top row: in how "
                               f"many windows each token is an input; below, each window's input ids "
                               f"(blue) and target ids (orange, shifted by one). max_length "
                               f"{vs.max_length}, stride {vs.stride}."))
    st.subheader("Input → target windows")
    # the tokens as text first, input beside target, then their ids: at 1024 px (and in lecture
    # mode) the ids ran past the page's edge and hid the target text entirely
    windows = tokens_data.window_table(view, limit=60)
    widths = WINDOW_WIDTHS[lecture]
    st.dataframe(windows, hide_index=True, width="stretch", column_order=WINDOW_COLUMNS,
                 column_config=window_column_config(lecture),
                 row_height=fmt.wrapped_row_height(windows, {c: widths[c] for c in WINDOW_WRAPPED}, lecture))
    if view.n_windows > 60:
        st.caption(f"The first 60 of {view.n_windows:,} windows.")
    if view.book_first_batch is None:
        st.caption(f"{END_OF_TEXT} is read as plain text here, so these windows differ on purpose "
                   "from the book's create_dataloader_v1 (which always reads it as one token).")
    else:
        ok = view.book_first_batch
        # short, the call itself in the caption below: a badge is one line, and the whole call
        # in it was cut at 1024 px ("… strid…")
        st.badge(("Batch 0 = " if ok else "Batch 0 ≠ ") + "the book's create_dataloader_v1",
                 color="green" if ok else "red",
                 icon=":material/check_circle:" if ok else ":material/error:",
                 help="Batch 0 of this page's loader, compared with the book's loader on the same text.")
        st.caption(("Exactly" if ok else "Not") + " the first batch of the book's "
                   f"`create_dataloader_v1(text, batch_size={vs.batch_size}, max_length={vs.max_length}, "
                   f"stride={vs.stride}, shuffle={vs.shuffle})` with seed {vs.seed}.")
    # the functions that made these windows and batches (and, when it ran, the book's loader
    # they were checked against)
    show_code([tokens_data.build_loader_view, core_data.sliding_windows, core_data.count_windows]
              + ([core_data.GPTDatasetV1, core_data.create_dataloader_v1, tokens_data.matches_book_loader]
                 if view.book_first_batch is not None else []),
              label="Show the code that cut the windows and batches")

# ---------------------------------------------------------------------------------------------
st.header("4 · One batch becomes embeddings")
if view is not None:
    vs = view.settings
    if settings.batch_index > view.n_batches - 1:  # clamp before the widget (batches can shrink)
        last = max(view.n_batches - 1, 0)
        st.info(f"Batch {settings.batch_index} no longer exists: these settings make "
                f"{view.n_batches} batch(es), so batch {last} (the last) is shown.",
                icon=":material/info:")
        state.set_field(PREFIX, "batch_index", last)
    with state.refusals_below():  # a refused entry is said under the row, at full width
        c1, c2, c3 = st.columns(3, vertical_alignment="bottom")  # boxes in line when a label wraps
        with c1:
            state.number_field(settings, "batch_index", prefix=PREFIX, label="Batch shown",
                               max_value=max(view.n_batches - 1, 0),
                               help="0 is the batch the book looks at (`for batch in dataloader: ... break`).")
        with c2:
            # "(embedding width)" in the help: in the label it took three lines at 1024 px in lecture mode
            state.number_field(settings, "output_dim", prefix=PREFIX, label="Output dim",
                               help="The embedding width: the lesson uses 256, as GPT-2 small uses 768.")
        with c3:
            state.bound(st.slider, "Columns shown in the heatmaps", settings, "show_dims", prefix=PREFIX,
                        min_value=2, max_value=16)
    with friendly_errors("the embeddings"):
        k = min(settings.batch_index, view.n_batches - 1)
        x, y = view.batch(k)
        order = "shuffled with seed " + str(vs.seed) if vs.shuffle else "in order (no shuffle)"
        st.markdown(f"Batch {k} of {view.n_batches}, windows {view.batch_indices[k]} ({order}).")
        left, right = st.columns(2)
        left.markdown(f"**x** — inputs `{tuple(x.shape)}`")
        left.dataframe(x.numpy(), width="stretch")
        right.markdown(f"**y** — targets `{tuple(y.shape)}`")
        right.dataframe(y.numpy(), width="stretch")

        output_dim = settings.output_dim
        init_seed = tokens_data.EMBEDDING_SEED  # the layers' seed, not the shuffle's
        token_rows = tokens_cache.rows_for(view, x, output_dim, init_seed)
        steps = tokens_data.embed_batch(x, token_rows, tokens_cache.pos_table(output_dim, init_seed))
        st.subheader("Shapes, step by step")
        st.table(steps.shape_rows().set_index("step"))
        st.markdown(
            f"The batch `{tuple(x.shape)}` of ids becomes `{tuple(steps.input_embeddings.shape)}`: "
            f"every id picks one row of the `{steps.token_table_shape}` token table, every position "
            f"one row of the `{steps.pos_table_shape}` position table (GPT-2's context is "
            f"{tokens_data.GPT2_CONTEXT} tokens; only rows 0–{x.shape[1] - 1} are used), and the two add up. "
            f"The app draws the token table's rows in order from the seed but keeps only the "
            f"{len(token_rows.ids):,} rows of this text's ids: the same numbers as the whole table.")

        dims = min(settings.show_dims, output_dim)
        rows = min(x.shape[1], 8)
        first = x[0, :rows].tolist()
        token_labels = [f"{texts.visible(tokens_data.gpt2_piece(i))} ({i})" for i in first]
        pos_labels = [f"pos {t}" for t in range(rows)]
        # "token @ position", without the id: the longer labels pushed this heatmap past its column
        sum_labels = [f"{texts.visible(tokens_data.gpt2_piece(i))} @ {t}" for t, i in enumerate(first)]
        dim_labels = [f"d{j}" for j in range(dims)]
        tok_slice = steps.token_embeddings[0, :rows, :dims].numpy()  # (rows, dims)
        pos_slice = steps.pos_embeddings[:rows, :dims].numpy()  # (rows, dims)
        sum_slice = steps.input_embeddings[0, :rows, :dims].numpy()  # (rows, dims)
        bound_ = float(max(abs(tok_slice).max(), abs(pos_slice).max(), abs(sum_slice).max()))
        domain = (-bound_, bound_)
        cell = 36 if lecture else 30
        # two heatmaps per row (one in lecture mode): narrower columns would shrink the cells
        per_row = 1 if lecture else 2
        grid = [c for _ in range(4 // per_row) for c in st.columns(per_row)]  # 4 slots
        parts = [("token embeddings", tok_slice, token_labels, "token_embedding_layer(x)[0]"),
                 ("position embeddings", pos_slice, pos_labels, f"pos_embedding_layer(torch.arange({x.shape[1]}))"),
                 ("input embeddings (sum)", sum_slice, sum_labels, "token + position")]
        for col, (name, values, labels, code) in zip(grid, parts):
            with col:
                # kept per process by the numbers it shows (ui.charts.show_figure): students on the
                # default settings all draw the same three, and building them was this page's
                # costliest part of a rerun in a class (py-spy, docs/HOSTING.md)
                show_figure(lambda values=values, labels=labels: charts.heatmap(
                                values, list(labels), list(dim_labels), fmt=".2f", lecture=lecture, cell=cell,
                                domain=domain, diverging=True, x_title="embedding dimension"),
                            ("tokens-heatmap", values, list(labels), list(dim_labels), cell, domain),
                            name=name,
                            caption=(f"{name.capitalize()} `{code}`: rows 0–{rows - 1}, dims 0–{dims - 1} "
                                     f"of {output_dim}; N(0, 1) init, seed {init_seed}; "
                                     + ("orange positive, blue negative." if lecture else
                                        "blue positive, red negative.")),
                            key=f"{PREFIX}.{name}")
        with grid[3]:
            st.markdown(
                f"**Check one cell.** Row 0, dimension d0: token "
                f"{tok_slice[0, 0]:+.2f} + position {pos_slice[0, 0]:+.2f} = "
                f"**{sum_slice[0, 0]:+.2f}**. The same position row is added to every window "
                f"of the batch, so “{texts.visible(tokens_data.gpt2_piece(first[0]))}” gets a different vector "
                "at position 0 than at position 3.")
        show_code([tokens_data.embed_batch, tokens_data.seeded_embedding_rows, tokens_data.seeded_embedding],
                  label="Show the code that embedded the batch")

# ---------------------------------------------------------------------------------------------
st.header("5 · How the names GPT's data is made")
st.markdown(
    "The names GPT (lecture 7) reads characters, not BPE tokens. Each name becomes "
    "“.” + name + “.” (the dot marks start and end); inputs are all but the last character, "
    "targets all but the first. Short names are **padded** — inputs with “.” (id 0), targets with "
    f"**{core_data.IGNORE_INDEX}**, which the loss ignores — and long names slide one step at a time.")
c1, c2 = st.columns(2)
with c1:
    state.bound(st.text_input, "A name", settings, "name", prefix=PREFIX, max_chars=40)
with c2:
    state.bound(st.slider, "Context size (T)", settings, "name_context", prefix=PREFIX,
                min_value=1, max_value=32, help="Lecture 7 uses 12.")
frames, name_ok = None, False
with friendly_errors("the name windows"):
    frames, name_ok = keep_last_good(
        f"{PREFIX}.good_name_frames",
        lambda: (tokens_data.validate_name(settings.name), settings.name_context,
                 tokens_data.name_window_frames(tokens_data.validate_name(settings.name),
                                                settings.name_context)),
        "the name windows")
    if frames is not None:
        shown_name, context, tables = frames
        n_pad = int((tables[-1].loc["target id"] == str(core_data.IGNORE_INDEX)).sum())
        st.markdown(f"**{shown_name}** → `.{shown_name}.` ({len(shown_name) + 2} ids) → "
                    f"{len(tables)} window{'s' if len(tables) != 1 else ''} of {context}"
                    + (f", the last with {n_pad} padded target{'s' if n_pad != 1 else ''}." if n_pad else "."))
        shown_windows = min(len(tables), 6)
        which = "Window 0" if shown_windows == 1 else f"Windows 0–{shown_windows - 1}"
        st.caption(f"{which}: inputs and targets, shape ({context},) each, one row per position t; "
                   "grey = padding")
        tokens_cache.name_windows_table(shown_name, context, lecture, tables[:6])
        if len(tables) > 6:
            st.caption(f"… and {len(tables) - 6} more windows.")
    show_code(core_data.name_windows_loop, label="Show the code that cut the name's windows")

# The link holds the last valid values, so a shared link never opens on an error.
link = dataclasses.replace(settings)
if view is not None and not loader_ok:
    link.max_length, link.stride, link.batch_size = (view.settings.max_length, view.settings.stride,
                                                     view.settings.batch_size)
if not loader_ok:
    # On a first visit there is no last valid view (a link opened on values this text refuses):
    # the refused window field goes back to its default, or a reload would show the error again.
    link = tokens_data.windows_that_work(link, tokens_cache.token_summary(text, settings.allow_special).n_bpe)
if frames is not None and not name_ok:
    link.name, link.name_context = frames[0], frames[1]
state.sync_url(link)
