"""AppTest of the Tokens & data loaders page: defaults, every control, bad input, URL round trip."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pytest

from core import settings as core_settings
from core.lessons import tokens_data
from tests.app.conftest import ROOT, assert_no_exception, open_page
from ui import formatting as fmt
from tests.helpers import errors, metrics, warnings

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: a second thread only waits (tests/conftest.py)

PAGE = "pages/5_tokens_data.py"
PREFIX = "tokens"
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10"
LATIN1 = "Un caf\u00e9 tr\u00e8s chaud, s'il vous pla\u00eet.".encode("latin-1")


def key(field: str, gen: int = 0) -> str:
    return f"{PREFIX}.{gen}.{field}"


def html(at) -> str:
    return " ".join(h.proto.body for h in at.get("html"))


def charts(at):
    return at.get("vega_lite_chart")


@pytest.fixture(scope="module")
def base():
    at = open_page(PAGE)
    assert_no_exception(at)
    return at


def fresh():
    at = open_page(PAGE)
    assert_no_exception(at)
    return at


def test_default_page_shows_the_lesson(base):
    m = metrics(base)
    assert m["Characters"] == "966" and m["GPT-2 tokens"] == "203"
    assert m["Windows"] == str((203 - 4 - 1) // 5 + 1) == "40"
    assert m["Batches"] == "5" and m["Windows dropped"] == "0"
    assert 'id 8421"' in html(base)  # "Before", the first GPT-2 token, as a chip
    shapes = base.table[0].value["shape"].tolist()
    assert shapes[0] == "(8, 4)" and shapes[2] == "(8, 4, 256)" and shapes[4] == "(4, 256)"
    assert len(charts(base)) == 4  # windows + three embedding heatmaps
    assert not base.error
    text = " ".join(m.value for m in base.markdown)
    assert "⌊198 / 5⌋ + 1 = 40" in text and "✓ equal to the text" in text


def test_windows_show_input_beside_target_before_the_ids(base):
    # ids first, a 1024 px page (and lecture mode's larger grid) showed no target text at all
    windows = base.dataframe[0].proto
    assert list(windows.column_order) == ["window", "start", "input text", "target text", "input ids",
                                          "target ids"]
    columns = json.loads(windows.columns)
    labels = {name: column["label"] for name, column in columns.items() if "label" in column}
    assert labels == {"window": "#", "start": "start", "input text": "input", "target text": "target",
                      "input ids": "input ids", "target ids": "target ids"}
    # at their own widths the six took 842 px and a 1024 px page has 564: each has a width, the six
    # fit that room, and the rows are tall enough for the longest cell wrapped in its column
    widths = {name: column["width"] for name, column in columns.items() if name in labels}
    assert sum(widths.values()) <= 550 and min(widths.values()) >= 32
    assert columns["window"]["pinned"] and columns["start"]["pinned"]  # the room of a wide page goes to the text
    frame = base.dataframe[0].value
    assert windows.row_height == fmt.wrapped_row_height(
        frame, {c: widths[c] for c in ("input text", "target text", "input ids", "target ids")}, False) > 64
    # short metric labels (their longer words in the help): "Character vocabula…" was cut at 1024 px
    assert {"Vocabulary |V|", "Chars / token"} <= set(metrics(base))
    assert all(len(label) <= 20 for label in metrics(base))
    badge = [m.value for m in base.markdown if "-badge[" in m.value]
    assert badge and "Batch 0 = the book's create_dataloader_v1" in badge[0]
    assert any("create_dataloader_v1(text, batch_size=8, max_length=4, stride=5, shuffle=True)` with "
               "seed 123" in c.value for c in base.caption)


def test_a_names_windows_are_one_row_per_position():
    # one column per t was 13 columns for a context of 12: a 1024 px page showed t = 0 … 8
    at = fresh()
    names = at.dataframe[3].value
    assert list(names.columns) == ["window", "t", "input", "input id", "target", "target id"]
    assert names["input"].tolist()[:6] == [".", "e", "m", "m", "a", "."] and len(names) == 12
    assert names["target"].tolist()[4:6] == [".", "pad"] and names["target id"].tolist()[5] == "-1"
    at.slider(key=key("name_context")).set_value(3).run()  # .emma. in 3: three windows of three
    names = at.dataframe[3].value
    assert names["window"].tolist() == [0] * 3 + [1] * 3 + [2] * 3 and names["t"].tolist()[3:6] == [0, 1, 2]
    assert "".join(names[names["window"] == 2]["target"]) == "ma."
    assert_no_exception(at)


def test_window_controls_change_counts():
    at = fresh()
    at.text_input(key=key("max_length")).input("8").run()
    assert metrics(at)["Windows"] == str((203 - 8 - 1) // 5 + 1)
    at.text_input(key=key("stride")).input("2").run()
    assert metrics(at)["Windows"] == str((203 - 8 - 1) // 2 + 1) == "98"
    at.text_input(key=key("batch_size")).input("4").run()
    assert metrics(at)["Batches"] == str(98 // 4) and metrics(at)["Windows dropped"] == "2"
    assert at.dataframe[1].value.shape == (4, 8)  # x of the batch: (batch_size, max_length)
    first = at.dataframe[1].value.values.tolist()
    at.text_input(key=key("seed")).input("5").run()
    assert at.dataframe[1].value.values.tolist() != first  # another shuffle
    at.checkbox(key=key("shuffle")).uncheck().run()
    assert "windows [0, 1, 2, 3] (in order" in " ".join(m.value for m in at.markdown)
    assert_no_exception(at)


def test_the_shuffle_seed_leaves_the_embedding_tables_alone():
    # the book builds its layers once (torch.manual_seed(123)); the loader's shuffle does not touch
    # them, so a new shuffle seed shows the same vectors (and draws no new table)
    at = fresh()
    at.checkbox(key=key("shuffle")).uncheck().run()  # the same batch whatever the seed
    heatmaps = [c.proto.spec for c in charts(at)[1:]]
    at.text_input(key=key("seed")).input("7").run()
    assert [c.proto.spec for c in charts(at)[1:]] == heatmaps
    assert f"seed {tokens_data.EMBEDDING_SEED};" in " ".join(c.value for c in at.caption)
    # and the numbers are the table the book's seed makes
    rows = at.session_state["tokens.good_view"]
    x, _ = rows.batch(0)
    table = tokens_data.seeded_embedding(tokens_data.GPT2_N_VOCAB, 256, tokens_data.EMBEDDING_SEED)
    first = tokens_data.embed_batch(x, table, tokens_data.seeded_embedding(1024, 256, tokens_data.EMBEDDING_SEED + 1))
    shown = " ".join(m.value for m in at.markdown)
    assert f"token {first.token_embeddings[0, 0, 0].item():+.2f} + position" in shown
    assert_no_exception(at)


def test_signed_embeddings_are_drawn_on_a_diverging_scale():
    # N(0, 1) numbers: red below 0, blue above, white at 0 (a one-colour scale read -2.8 as "small")
    at = fresh()
    heatmaps = charts(at)[1:]
    assert len(heatmaps) == 3 and all('"redblue"' in c.proto.spec for c in heatmaps)
    assert "blue positive, red negative." in " ".join(c.value for c in at.caption)
    assert_no_exception(at)


def test_the_chips_are_drawn_once_and_replayed(monkeypatch):
    # st.html cleans its ~250 chips' HTML on every call: the page draws them in a cached function
    # (ui.tokens_cache.chips_element), whose element Streamlit replays on the next runs
    import streamlit as st

    from ui import tokens_cache

    calls = []
    real = st.html
    def counting(body, **kw):
        # the app's style block and the desk cookie's script (ui.desk) are drawn by st.html too
        if "<style>" not in body[:20] and "<script>" not in body[:20]:
            calls.append(body)
        return real(body, **kw)

    monkeypatch.setattr(st, "html", counting)
    tokens_cache.chips_element.clear()
    at = fresh()
    first = html(at)
    at.run()
    assert len(calls) == 2  # the BPE panel and the character panel, once each
    assert html(at) == first and "_language" in first.replace("␣", "_")
    at.toggle(key=key("allow_special")).set_value(False).run()  # other tokens: drawn anew
    assert len(calls) == 4 and html(at) != first
    assert_no_exception(at)


def window_cells(at) -> pd.DataFrame:
    """The table behind the sliding-window drawing (the page's first chart)."""
    (ds,) = charts(at)[0].proto.datasets
    return pa.ipc.open_stream(ds.data.data).read_pandas()


def test_the_window_drawing_follows_the_settings_it_is_kept_for():
    # the drawing is built once per (first tokens, length, max_length, stride) and shared
    at = fresh()
    shown = window_cells(at)
    expected = tokens_data.window_frame(at.session_state["tokens.good_view"], 20, 6)
    assert shown[list(expected.columns)].equals(expected)
    at.text_input(key=key("stride")).input("2").run()
    overlapping = window_cells(at)
    assert not overlapping.equals(shown)
    assert (overlapping.loc[overlapping["row"] == "used as input ×", "text"] == "2").any()
    at.text_input(key=key("batch_size")).input("3").run()  # not part of the drawing: kept
    assert window_cells(at).equals(overlapping)
    at.text_input(key=key("stride")).input("5").run()  # back: the first drawing again
    assert window_cells(at).equals(shown)


def test_tokens_embeddings_and_names_controls():
    at = fresh()
    at.toggle(key=key("allow_special")).set_value(False).run()
    assert metrics(at)["GPT-2 tokens"] == "208"  # the marker is read as 7 plain tokens
    at.text_input(key=key("output_dim")).input("64").run()
    assert at.table[0].value["shape"].tolist()[2] == "(8, 4, 64)"
    at.slider(key=key("show_dims")).set_value(3).run()
    heat = charts(at)[1].proto.spec
    assert '"d2"' in heat and '"d3"' not in heat
    at.text_input(key=key("batch_index")).input("4").run()
    assert "Batch 4 of 5" in " ".join(m.value for m in at.markdown)
    at.text_input(key=key("name")).set_value("olivia").run()
    assert any("**olivia** → `.olivia.` (8 ids)" in m.value for m in at.markdown)
    at.slider(key=key("name_context")).set_value(4).run()
    assert any("4 windows of 4" in m.value for m in at.markdown)
    at.radio(key=key("text_choice")).set_value("book").run()
    assert metrics(at)["GPT-2 tokens"] == "25"  # allow_special is still off: the marker is plain text
    assert_no_exception(at)


def test_batch_index_is_clamped_when_batches_shrink():
    at = fresh()
    at.text_input(key=key("stride")).input("1").run()
    at.text_input(key=key("batch_index")).input("20").run()
    assert "Batch 20 of" in " ".join(m.value for m in at.markdown)
    at.text_input(key=key("stride")).input("5").run()
    assert_no_exception(at)
    assert "Batch 4 of 5" in " ".join(m.value for m in at.markdown)
    # lowered with a visible notice, not silently
    assert any("Batch 20 no longer exists" in i.value and "batch 4 (the last)" in i.value for i in at.info)
    # lowered with a visible notice, not silently
    assert any("Batch 20 no longer exists" in i.value and "batch 4 (the last)" in i.value for i in at.info)


@pytest.mark.parametrize("field, value, message", [
    ("stride", "0", "stride: “0” is less than the minimum, 1. Kept 5"),
    ("stride", "-3", "stride: “-3” is less than the minimum, 1. Kept 5"),
    ("max_length", "0", "max_length: “0” is less than the minimum, 1. Kept 4"),
    ("max_length", "300", "max_length: “300” is more than the maximum, 256. Kept 4"),
])
def test_bad_loader_settings_are_refused_and_the_windows_kept(field, value, message):
    at = fresh()
    at.text_input(key=key(field)).input(value).run()
    assert_no_exception(at)
    assert message in errors(at)
    assert metrics(at)["Windows"] == "40" and metrics(at)["Batches"] == "5"


def test_batch_size_above_the_windows_is_lowered_with_a_notice():
    # a link asks for 64 windows per batch; the paragraph makes only 40 windows
    at = open_page(PAGE, query={"batch_size": "64"})
    assert_no_exception(at)
    assert not at.error
    assert ("batch_size 64 is larger than the number of windows (40): with drop_last=True the loader "
            "would give no batch at all, so batch_size is now 40.") in warnings(at)
    widget = at.text_input(key=key("batch_size"))
    assert widget.value == "40" and "from 1 to 40" in widget.help  # the box itself stops at the windows
    assert metrics(at)["Windows"] == "40" and metrics(at)["Batches"] == "1"
    assert at.dataframe[1].value.shape == (40, 4)  # x of the batch: (batch_size, max_length)
    at.text_input(key=key("max_length")).input("8").run()  # fewer windows: lowered again
    assert "batch_size 40 is larger than the number of windows (39)" in warnings(at)
    assert metrics(at)["Windows"] == "39" and metrics(at)["Batches"] == "1"
    at.text_input(key=key("seed")).input("5").run()  # the notice says what changed, once
    assert "larger than the number of windows" not in warnings(at)
    assert at.text_input(key=key("batch_size")).value == "39"


def test_a_batch_size_lowered_for_a_short_text_comes_back_when_the_text_grows():
    at = fresh()
    at.radio(key=key("text_choice")).set_value("book").run()  # 4 windows: 8 is lowered to 4
    assert ("batch_size 8 is larger than the number of windows (4): with drop_last=True the loader "
            "would give no batch at all, so batch_size is now 4. It goes back to 8 when the text "
            "makes that many windows.") in warnings(at)
    assert at.text_input(key=key("batch_size")).value == "4"
    at.radio(key=key("text_choice")).set_value("paragraph").run()  # 40 windows again: the 8 comes back
    assert_no_exception(at)
    assert "The text makes enough windows again: batch_size is back to 8, the size you chose." in \
        [i.value for i in at.info]
    assert at.text_input(key=key("batch_size")).value == "8"
    assert metrics(at)["Batches"] == "5" and not at.warning


def test_a_batch_size_comes_back_step_by_step_as_far_as_the_windows_allow():
    at = _own(fresh())
    at.text_area(key="tokens.own_text").set_value("one two three four five six " * 3).run()
    assert at.text_input(key=key("batch_size")).value == metrics(at)["Windows"] != "8"  # lowered
    at.text_area(key="tokens.own_text").set_value("one two three four five six " * 5).run()
    n_windows = int(metrics(at)["Windows"])
    assert 4 < n_windows < 8  # more windows than the book's sentence, still fewer than 8
    assert (f"The text makes {n_windows} windows now: batch_size is {n_windows}, on its way back to "
            "the 8 you chose.") in [i.value for i in at.info]
    assert at.text_input(key=key("batch_size")).value == str(n_windows)


def test_a_batch_size_chosen_after_it_was_lowered_is_the_one_kept():
    at = fresh()
    at.radio(key=key("text_choice")).set_value("book").run()  # 8 lowered to 4
    at.text_input(key=key("batch_size")).input("3").run()  # the student's own choice now
    at.radio(key=key("text_choice")).set_value("paragraph").run()
    assert at.text_input(key=key("batch_size")).value == "3"
    assert not [i for i in at.info if "batch_size is back" in i.value]


def test_max_length_longer_than_the_text():
    at = fresh()
    at.radio(key=key("text_choice")).set_value("book").run()
    # 4 windows cannot fill a batch of 8: lowered to 4, and the page says so
    assert "batch_size 8 is larger than the number of windows (4)" in warnings(at)
    assert at.text_input(key=key("batch_size")).value == "4"
    assert not at.error
    assert metrics(at)["Windows"] == str((20 - 4 - 1) // 5 + 1) == "4"
    assert metrics(at)["Batches"] == "1"
    at.text_input(key=key("max_length")).input("25").run()
    assert "max_length 25 is too long for this text: it has 20 tokens" in errors(at)
    assert metrics(at)["Windows"] == "4"


def _own(at):
    at.radio(key=key("text_choice")).set_value("own").run()
    assert_no_exception(at)
    return at


@pytest.mark.parametrize("text, message", [
    ("", "Your text is empty"),
    ("a", "Your text has 1 character"),
    ("  \n\t \n", "only whitespace"),
    ("x" * 20_000_000, "too long"),
], ids=["empty", "one-char", "whitespace", "20MB-paste"])
def test_bad_own_text_keeps_the_last_valid_text(text, message):
    at = _own(fresh())
    at.text_area(key="tokens.own_text").set_value("One two three four five six seven eight nine ten. " * 3).run()
    good = metrics(at)
    assert good["Characters"] == "150"
    at.text_area(key="tokens.own_text").set_value(text).run()
    assert_no_exception(at)
    assert message in errors(at) and "last valid text (150 characters) stays in use" in errors(at)
    assert metrics(at)["Characters"] == "150" and metrics(at)["Windows"] == good["Windows"]


@pytest.mark.parametrize("name, data, message", [
    ("photo.txt", PNG, "binary file"),
    ("french.txt", LATIN1, "is not UTF-8 text (byte 0xe9"),
    ("empty.txt", b"", "is empty"),
], ids=["binary", "latin-1", "empty-file"])
def test_bad_upload_keeps_the_last_valid_text(name, data, message):
    at = _own(fresh())
    before = metrics(at)
    at.file_uploader(key="tokens.upload").set_value((name, data, "text/plain")).run()
    assert_no_exception(at)
    assert message in errors(at) and "last valid text stays in use" in errors(at)
    assert metrics(at) == before
    at.run()  # the message stays while the refused file is in the uploader
    assert message in errors(at)


def test_good_upload_replaces_the_text():
    at = _own(fresh())
    body = "Uploaded text with <|endoftext|> in the middle. " * 4
    at.file_uploader(key="tokens.upload").set_value(("mine.txt", body.encode("utf-8"), "text/plain")).run()
    assert_no_exception(at)
    assert not at.error
    assert metrics(at)["Characters"] == str(len(body))
    assert at.text_area(key="tokens.own_text").value == body


def test_bad_name_keeps_the_last_table():
    at = fresh()
    at.text_input(key=key("name")).set_value("r2d2").run()
    assert "'2' is not one of them" in errors(at)
    assert any("**emma**" in m.value for m in at.markdown)
    at.text_input(key=key("name")).set_value("<b>").run()
    assert "'<', '>' are not among them" in errors(at)
    assert any("**emma**" in m.value for m in at.markdown)


def test_url_round_trip_reproduces_the_numbers():
    at = fresh()
    at.radio(key=key("text_choice")).set_value("book").run()
    at.text_input(key=key("max_length")).input("3").run()
    at.text_input(key=key("stride")).input("2").run()
    at.text_input(key=key("batch_size")).input("2").run()
    at.text_input(key=key("output_dim")).input("16").run()
    shown = metrics(at)
    params = core_settings.to_params(at.session_state[PREFIX])
    assert params == {"text_choice": "book", "max_length": "3", "stride": "2", "batch_size": "2",
                      "output_dim": "16"}
    again = open_page(PAGE, query=params)
    assert_no_exception(again)
    assert metrics(again) == shown
    assert again.table[0].value["shape"].tolist()[2] == "(2, 3, 16)"


def test_own_text_never_goes_into_the_link():
    at = _own(fresh())
    at.text_area(key="tokens.own_text").set_value("A secret draft that must stay private. " * 3).run()
    params = core_settings.to_params(at.session_state[PREFIX])
    # the draft makes 5 windows: batch_size was lowered to them, with a notice
    assert "batch_size 8 is larger than the number of windows (5)" in warnings(at)
    assert params == {"text_choice": "own", "batch_size": "5"}
    assert all("secret" not in v for v in params.values())


def test_bad_link_values_get_a_notice():
    at = open_page(PAGE, query={"stride": "0", "batch_size": "lots"})
    assert_no_exception(at)
    assert any("could not be used" in w.value for w in at.warning)
    assert metrics(at)["Windows"] == "40"


def test_lecture_mode_shows_every_heatmap():
    at = open_page(PAGE, query={"lecture": "1"})
    assert_no_exception(at)
    assert len(charts(at)) == 4
    # signed numbers on a scale with two ends (the projector's colour-blind-safe one)
    assert all('"blueorange"' in c.proto.spec for c in charts(at)[1:])
    assert 'font-size:1.15rem' in html(at)  # bigger chips on the projector


# ---------------------------------------------------------------- a lesson that locks batch_size
def _load_lesson(at, locked: list[str], **settings):
    """Load a lesson file through the sidebar's "Lesson presets", as a lecturer does."""
    from ui import layout

    lesson = core_settings.to_lesson(tokens_data.TokensDataSettings(**settings), name="big batch",
                                     page="tokens-data", locked=locked)
    at.session_state[layout.panel_key(PREFIX)] = True  # open "Lesson presets"
    at.run()
    uploader = next(u for u in at.file_uploader if u.key == f"{PREFIX}.lesson_file")
    uploader.upload("big.json", lesson.encode(), "application/json").run()
    assert_no_exception(at)
    return at


def test_a_locked_batch_size_too_large_for_the_text_is_used_lowered_with_a_notice():
    # 203 tokens cut into windows of 8, stride 8: 25 windows, fewer than the lesson's 64
    at = _load_lesson(fresh(), ["batch_size"], batch_size=64, max_length=8, stride=8)
    assert not at.error  # no "batch size is larger than the 25 windows" dead end
    assert ("The lesson fixed batch_size at 64, but this text only makes 25 windows" in warnings(at))
    assert metrics(at)["Windows"] == "25" and metrics(at)["Batches"] == "1"
    assert at.dataframe[1].value.shape == (25, 8)  # x of the batch: the windows the text has
    assert not [b for b in at.button if b.key == f"{PREFIX}.fit_batch"]  # no button that does nothing
    box = at.text_input(key=key("batch_size", gen=1))
    assert box.disabled and box.value == "25"  # the size in use, still locked
    assert at.session_state[PREFIX].batch_size == 64  # the lesson's value is kept for a longer text
    at.text_input(key=key("stride", gen=1)).input("4").run()  # 49 windows: still lowered
    assert "this text only makes 49 windows" in warnings(at) and metrics(at)["Batches"] == "1"
    at.text_input(key=key("stride", gen=1)).input("2").run()  # 98 windows: the lesson's 64 holds
    assert "The lesson fixed" not in warnings(at) and not at.error
    assert at.dataframe[1].value.shape == (64, 8)


def test_a_locked_batch_size_that_fits_is_left_alone():
    at = _load_lesson(fresh(), ["batch_size"], batch_size=16)
    assert not at.error and "The lesson fixed" not in warnings(at)
    assert metrics(at)["Batches"] == "2" and at.dataframe[1].value.shape == (16, 4)


# ---------------------------------------------------------------- a link the page refuses
def test_a_refused_link_value_leaves_the_address_bar():
    # max_length 256 leaves 203 tokens too short for one window: the error stays on the page, but a
    # reload or a shared copy of the address must not open on it again
    at = open_page(PAGE, query={"max_length": "256", "stride": "1"})
    assert_no_exception(at)
    assert "max_length 256 is too long for this text" in errors(at)
    assert "max_length" not in at.query_params
    again = open_page(PAGE, query=dict(at.query_params))  # the reload
    assert_no_exception(again)
    assert "too long for this text" not in errors(again)
    assert metrics(again)["Windows"] == metrics(open_page(PAGE, query={"stride": "1"}))["Windows"]


def test_a_link_that_works_stays_in_the_address_bar():
    at = open_page(PAGE, query={"max_length": "8", "stride": "2"})
    assert not at.error
    assert (at.query_params.get("max_length"), at.query_params.get("stride")) == ("8", "2")


def test_tokens_holding_part_of_a_character_are_explained():
    # "😀🎉 héllo 你好" showed nine "�" chips with nothing to say why
    at = _own(fresh())
    assert not any("“�”" in c.value for c in at.caption)  # the built-in text has none
    at.text_area(key="tokens.own_text").set_value("Emoji 😀🎉 and héllo 你好, a few more words here. " * 2).run()
    assert_no_exception(at)
    [note] = [c.value for c in at.caption if "“�”" in c.value]
    summary = tokens_data.token_summary("Emoji 😀🎉 and héllo 你好, a few more words here. " * 2)
    assert summary.n_partial > 0 and note.startswith(f"{summary.n_partial} GPT-2 tokens show “�”")


def test_a_refusal_ends_when_the_student_moves_another_control_or_leaves_the_page():
    """A refused paste into "A name" (limit 40) says so under the box, which goes back to its
    name. The message ends in the run where the student changes any other control (it stayed
    while the slider moved), and it is not there when the student comes back to the page."""
    at = fresh()
    at.text_input(key=key("name")).input("Bartholomew-Maximilian Featherstonehaugh-Smythe").run()
    assert_no_exception(at)
    assert "A name: 47 characters is over the limit of 40; the box went back to “emma”." in errors(at)
    assert at.text_input(key=key("name")).value == "emma"
    at.slider(key=key("name_context")).set_value(10).run()
    assert "over the limit" not in errors(at)
    at.text_input(key=key("name")).input("x" * 41).run()
    assert "A name: 41 characters is over the limit of 40" in errors(at)
    at.run()  # a rerun that changes nothing keeps it
    assert "A name: 41 characters" in errors(at)
    at.switch_page(str(ROOT / "pages/6_small_lm.py")).run()
    assert any("Small language model" in t.value for t in at.title)
    at.switch_page(str(ROOT / PAGE)).run()
    assert_no_exception(at)
    assert any("Tokens" in t.value for t in at.title)
    assert "over the limit" not in errors(at)
