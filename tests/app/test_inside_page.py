"""AppTest of the Inside-the-model page: the empty state, attention maps of every layer and head,
next-character distributions, embeddings and PCA, bad input (its fallback read by the model picked),
the URL, and a layer or head the model picked does not have (lowered, with a notice)."""

from __future__ import annotations

import json

import pytest

import numpy as np

from core import settings as core_settings
from core.lessons import inside_model
from tests.app.conftest import assert_no_exception, open_page
from tests.app.gpt_helpers import book_of, chart_rows, chart_titles, texts, tiny_trained_book

pytestmark = pytest.mark.usefixtures("one_thread")
PAGE = "pages/9_inside_model.py"


def with_model(query: dict | None = None, **changes):
    at = open_page(PAGE, query=query)
    at.session_state["gpt.runbook"] = tiny_trained_book(n_layer=2, **changes)
    at.run()
    assert_no_exception(at)
    return at


def _key(at, field: str) -> str:
    return f"inside.{at.session_state['inside.__gen']}.{field}"


def attention_rows(at):
    """The attention grid's rows (the only chart with layer facets), named for the lesson."""
    rows = chart_rows(at)
    if "facet_row" not in rows:
        return rows.iloc[0:0]
    rows = rows[rows["facet_row"].notna()]
    return rows.rename(columns={"facet_row": "layer", "facet": "head", "row": "query", "col": "key",
                                "value": "weight"}).assign(masked=~rows["finite"].astype(bool))


def test_without_a_model_the_page_explains():
    at = open_page(PAGE)
    assert_no_exception(at)
    assert "no trained model in this session yet" in texts(at.info)
    assert at.button(key="empty.look inside.quick")


def test_attention_of_every_layer_and_head_for_the_typed_name():
    at = with_model()
    rows = attention_rows(at)
    assert len(rows) == 2 * 2 * 5 * 5  # 2 layers x 2 heads x (T, T) for ".emma"
    assert set(rows["layer"]) == {"layer 1", "layer 2"} and set(rows["head"]) == {"head 1", "head 2"}
    sums = rows.groupby(["layer", "head", "query"])["weight"].sum()
    assert np.allclose(sums, 1.0, atol=1e-5)  # every row sums to 1 over the keys
    assert rows["masked"].sum() == 4 * 10
    assert "(T, T) = (5, 5)" in texts(at.markdown)
    at.text_input(key=_key(at, "name")).input("olivia").run()
    assert len(attention_rows(at)) == 2 * 2 * 7 * 7
    table = at.dataframe[0].value
    assert list(table["read so far"])[-1] == ".olivia"
    assert_no_exception(at)


def test_layer_and_head_pick_the_enlarged_map():
    at = with_model()
    at.selectbox(key=_key(at, "layer")).set_value(2).run()
    at.selectbox(key=_key(at, "head")).set_value(2).run()
    assert "Layer 2, head 2: attention weights" in chart_titles(at)
    assert "Layer 1, head 1: attention weights" not in chart_titles(at)
    assert_no_exception(at)


def test_bad_and_long_names():
    at = with_model()
    before = len(attention_rows(at))
    at.text_input(key=_key(at, "name")).input("r2d2").run()
    assert_no_exception(at)
    assert "never saw" in texts(at.error)
    assert len(attention_rows(at)) == before and "last name that could be read" in texts(at.caption)
    at.text_input(key=_key(at, "name")).input("").run()
    assert "type a name" in texts(at.error)
    at.text_input(key=_key(at, "name")).input("maximilianus").run()
    assert "longer than the model's context" in texts(at.warning)
    assert len(attention_rows(at)) == 2 * 2 * 8 * 8


def test_embeddings_heatmap_and_pca():
    at = with_model()
    rows = chart_rows(at)
    pca = rows[rows["PC1"].notna()]
    assert len(pca) == 27 and set(pca["group"]) == {"vowel", "consonant", "start/end ."}
    run = book_of(at).current
    df, _ = inside_model.embedding_pca(run.model, run.tokenizer)
    assert np.allclose(np.sort(pca["PC1"].to_numpy()), np.sort(df["PC1"].to_numpy()), atol=1e-5)
    separation = inside_model.vowel_separation(df)
    assert at.metric[0].label == "Vowel / consonant separation" and at.metric[0].value == f"{separation:.2f}"
    chance, top = inside_model.chance_separation(df)
    assert f"By chance (the labels dealt at random): {chance:.2f}, 95% below {top:.2f}" in texts(at.caption)
    assert "(27, 16)" in texts(at.markdown)


def test_mask_off_model_is_flagged():
    at = with_model(causal=False)
    assert "without the causal mask" in texts(at.markdown)
    assert "Grey cells are masked" not in texts(at.markdown)  # there are none to explain
    assert attention_rows(at)["masked"].sum() == 0
    assert "Grey cells are masked (the future)" in texts(with_model(causal=True).markdown)


def test_url_round_trip_and_clamped_layer():
    at = with_model()
    at.text_input(key=_key(at, "name")).input("sophia").run()
    at.selectbox(key=_key(at, "head")).set_value(2).run()
    params = core_settings.to_params(at.session_state["inside"])
    assert params == {"name": "sophia", "head": "2"}  # counted from 1, as the page names it
    again = with_model(query=params)
    assert again.session_state["inside"] == at.session_state["inside"]
    assert len(attention_rows(again)) == len(attention_rows(at))
    clamped = with_model(query={"layer": "7"})  # the model has 2 layers
    assert clamped.session_state["inside"].layer == 1


def two_models():
    """The page with two trained runs: run 1 (2 layers x 2 heads), run 2 (3 layers x 4 heads), run 1 picked."""
    at = open_page(PAGE)
    book = tiny_trained_book(n_layer=2)
    at.session_state["gpt.runbook"] = tiny_trained_book(book=book, n_layer=3, n_head=4)
    at.run()
    first, second = (r.run_id for r in book.trained()[::-1])  # the picker lists the newest first
    at.selectbox(key="inside.model").set_value(first).run()
    assert_no_exception(at)
    return at, book.get(first), book.get(second)


def test_after_a_typo_another_model_shows_its_own_maps():
    """The fallback after a typo is the last valid *name*, read again by the model picked: a
    typo then a model switch once showed the old model's maps under the new label, and layer 3
    (which the old maps lack) raised an IndexError."""
    at, _, second = two_models()
    at.text_input(key=_key(at, "name")).input("ava").run()  # a name run 2 has not read yet
    at.text_input(key=_key(at, "name")).input("ava!").run()
    assert "last name that could be read" in texts(at.caption)
    at.selectbox(key="inside.model").set_value(second.run_id).run()
    assert_no_exception(at)
    rows = attention_rows(at)
    assert len(rows) == 3 * 4 * 4 * 4  # run 2's 3 layers x 4 heads, for ".ava"
    expected = inside_model.inspect_name(second.model, second.tokenizer, "ava").attn  # (3, 4, T, T)
    shown = rows["weight"].fillna(0).to_numpy()  # masked cells may carry no value
    assert np.allclose(np.sort(shown), np.sort(expected.ravel()), atol=1e-5)
    assert "last name that could be read" in texts(at.caption)
    at.selectbox(key=_key(at, "layer")).set_value(3).run()
    at.selectbox(key=_key(at, "head")).set_value(4).run()
    assert_no_exception(at)
    assert "Layer 3, head 4: attention weights" in chart_titles(at)
    assert at.text_input(key=_key(at, "name")).value == "ava!"  # the typo stays to be corrected


def test_a_switch_to_a_smaller_model_lowers_layer_and_head_with_a_notice():
    at, first, second = two_models()
    at.selectbox(key="inside.model").set_value(second.run_id).run()
    at.selectbox(key=_key(at, "layer")).set_value(3).run()
    at.selectbox(key=_key(at, "head")).set_value(4).run()
    at.selectbox(key="inside.model").set_value(first.run_id).run()
    assert_no_exception(at)
    assert "Layer 3, head 4" in texts(at.info) and "layer 1, head 1 is shown" in texts(at.info)
    assert "Layer 1, head 1: attention weights" in chart_titles(at)


def test_a_link_beyond_the_model_says_what_is_shown_instead():
    at = with_model(query={"layer": "5", "head": "7"})  # the model has 2 layers and 2 heads
    notice = texts(at.info)
    assert "layer 5, head 7" in notice.lower() and "layer 1, head 1 is shown" in notice
    assert "Layer 1, head 1: attention weights" in chart_titles(at)
    assert (at.session_state["inside"].layer, at.session_state["inside"].head) == (1, 1)
    fine = with_model(query={"layer": "2"})  # the link's number is the one the page shows
    assert fine.session_state["inside"].layer == 2 and "is shown" not in texts(fine.info)
    assert "Layer 2, head 1: attention weights" in chart_titles(fine)
    zero = open_page(PAGE, query={"layer": "0"})  # layers are counted from 1: a clear word
    assert "layer must be at least 1, got 0" in texts(zero.warning)


# What each end of a Vega diverging scheme is, (low, high): the truth the caption is checked against,
# written here, not taken from the code under test (Vega's "redblue" runs from red to blue).
VEGA_DIVERGING_ENDS = {"redblue": ("red", "blue"), "blueorange": ("blue", "orange"),
                       "blueorange-r": ("orange", "blue"), "redblue-r": ("blue", "red")}


def _chart(at, axis_title: str):
    """The one chart element with an axis titled `axis_title`."""
    found = [el for el in at.get("vega_lite_chart") + at.get("arrow_vega_lite_chart")
             if f'"{axis_title}"' in el.proto.spec]
    assert len(found) == 1, f"{len(found)} charts with the axis {axis_title!r}"
    return found[0]


def _chart_spec(at, axis_title: str) -> dict:
    return json.loads(_chart(at, axis_title).proto.spec)


def _one_chart_rows(at, axis_title: str):
    """The rows behind the one chart with an axis titled `axis_title`."""
    import pandas as pd
    import pyarrow as pa

    proto = _chart(at, axis_title).proto
    blobs = ([proto.data.data] if proto.HasField("data") and proto.data.data else []) + \
        [ds.data.data for ds in proto.datasets]
    return pd.concat([pa.ipc.open_stream(b).read_pandas() for b in blobs], ignore_index=True)


def _colour_scale(spec) -> dict | None:
    if isinstance(spec, dict):
        color = spec.get("encoding", {}).get("color", {}) if isinstance(spec.get("encoding"), dict) else {}
        scale = color.get("condition", {}).get("scale") or color.get("scale")
        if scale:
            return scale
        children = list(spec.values())
    elif isinstance(spec, list):
        children = spec
    else:
        return None
    for child in children:
        found = _colour_scale(child)
        if found:
            return found
    return None


@pytest.mark.parametrize("lecture", [False, True])
def test_the_embedding_caption_names_the_colours_the_chart_draws(lecture):
    """The caption said "red positive, blue negative" under a chart drawn blue for positive (and
    orange/blue in lecture mode): the caption's words must match the chart's own colour scale."""
    at = with_model(query={"lecture": "1"} if lecture else None)
    scale = _colour_scale(_chart_spec(at, "embedding dimension"))
    low_end, high_end = scale["domain"]
    assert low_end < 0 < high_end  # signed values around 0: the scheme's low end is the negatives
    low, high = VEGA_DIVERGING_ENDS[scale["scheme"]]
    caption = next(c.value for c in at.caption if c.value.startswith("Token embedding matrix"))
    assert f"{high} positive, {low} negative" in caption, (scale["scheme"], caption)


def test_the_enlarged_map_greys_the_masked_future_as_the_grid_does():
    """The grid greys the future of a causal model; the enlarged map showed it as pale "0.00"
    cells. Now those cells carry no colour value and a dash, and the caption says so."""
    at = with_model()
    spec = _chart_spec(at, "key (the character attended to)")
    head = _one_chart_rows(at, "key (the character attended to)")
    assert len(head) == 5 * 5  # ".emma"
    future = head["col_i"] > head["row_i"]
    assert not head.loc[future, "finite"].astype(bool).any() and (head.loc[future, "label"] == "–").all()
    assert head.loc[~future, "finite"].astype(bool).all()
    assert not head.loc[~future, "label"].str.contains("–").any()
    assert "Layer 1, head 1: attention weights" in json.dumps(spec)
    caption = next(c.value for c in at.caption if c.value.startswith("Layer 1, head 1 for"))
    assert "masked (the future)" in caption
    assert_no_exception(at)


def test_a_mask_off_model_has_no_dashes_in_its_enlarged_map():
    at = with_model(causal=False)
    head = _one_chart_rows(at, "key (the character attended to)")
    assert head["finite"].astype(bool).all() and "–" not in set(head["label"])
    assert "masked" not in texts(at.caption)


def test_a_model_with_many_heads_shows_the_picked_layers_heads():
    """2 layers x 8 heads of ".emma" were 16 maps in one picture, drawn at half size or less in
    the page's column; the overview shows the heads of the layer picked for the enlarged map."""
    at = with_model(n_head=8, d_embed=32)
    assert "too many maps" in texts(at.info)
    assert "Attention weights, every head of layer 1" in [h.value for h in at.subheader]
    rows = attention_rows(at)
    assert len(rows) == 8 * 5 * 5
    assert list(dict.fromkeys(rows["head"])) == [f"layer 1, head {j}" for j in range(1, 9)]
    at.selectbox(key=_key(at, "layer")).set_value(2).run()
    assert_no_exception(at)
    rows = attention_rows(at)
    assert set(rows["head"]) == {f"layer 2, head {j}" for j in range(1, 9)}
    sums = rows.groupby(["head", "query"])["weight"].sum()
    assert np.allclose(sums, 1.0, atol=1e-5)
    assert "Attention weights, every head of layer 2" in [h.value for h in at.subheader]


def test_a_name_the_model_cannot_read_stays_in_its_box_but_not_in_the_link():
    # "em ma" went into the address bar: a reload or a shared link opened on the error again
    at = with_model()
    at.text_input(key=_key(at, "name")).input("sophia").run()
    assert at.query_params.get("name") in (["sophia"], "sophia")
    at.text_input(key=_key(at, "name")).input("so phia").run()
    assert_no_exception(at)
    assert at.error and at.text_input(key=_key(at, "name")).value == "so phia"  # kept to be corrected
    assert at.query_params.get("name") in (["sophia"], "sophia")  # the last name that was read
