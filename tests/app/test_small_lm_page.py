"""AppTest of the Small language model page: training controls, the lesson's finding, bad input,
cross-entropy by hand and the URL round trip."""

from __future__ import annotations

import dataclasses
import math
import re

import pytest
import torch

from core import budget
from core import settings as core_settings
from core.lessons import small_lm
from core.lessons import text as texts
from tests.app.conftest import assert_no_exception, open_page
from tests.helpers import errors, metrics, shown

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: a second thread only waits (tests/conftest.py)

PAGE = "pages/6_small_lm.py"
PREFIX = "small_lm"
LATIN1 = "na\u00efve caf\u00e9 cr\u00e8me br\u00fbl\u00e9e ".encode("latin-1") * 5


def key(field: str, gen: int = 0) -> str:
    return f"{PREFIX}.{gen}.{field}"


def step_of(at) -> int:
    text = at.get("progress")[0].proto.text
    return int(re.match(r"Step ([\d,]+) of", text).group(1).replace(",", ""))


def samples(at) -> list[str]:
    """The generated texts (code blocks without a language; "Show the code" blocks are python)."""
    return [c.value for c in at.code if c.language != "python"]


def fresh(query=None):
    at = open_page(PAGE, query=query)
    assert_no_exception(at)
    return at


def test_default_page():
    at = fresh()
    m = metrics(at)
    assert m["Characters in the text"] == f"{len(texts.PANGRAM) * texts.PANGRAM_REPEATS:,}" == "2,700"
    assert m["Vocabulary |V|"] == "28" and m["Val characters"] == "270"
    assert step_of(at) == 0
    for label in small_lm.MODEL_LABELS.values():  # untrained: every model near ln 28 = 3.33
        assert abs(float(m[f"{label} · val loss"]) - math.log(28)) < 0.1
    # untrained, no model is ahead of the bigram: no gain shown (browser review: a green
    # "-0.007 vs bigram" at step 0 read as attention already winning)
    assert [x.proto.delta for x in at.metric if x.label.endswith("· val loss")] == ["", "", ""]
    assert m["By hand (float64)"] == "1.1254029631"  # the slide's example
    assert m["F.cross_entropy (float32)"].startswith("1.12540")
    # the slide's own printed value is explained: its loop read float32 logits; the app computes it
    slide = " ".join(c.value for c in at.caption if c.value.startswith("The slide prints"))
    assert f"The slide prints {small_lm.SLIDE_CE_PRINTED}, not 1.1254029630966222" in slide
    assert f"gives {small_lm.SLIDE_CE_PRINTED}." in slide  # computed here, equal to the slide's
    assert len(at.get("vega_lite_chart")) == 4  # loss curves, bigram table, embedding, softmax bars
    assert len(samples(at)) == 3  # a sample from each model
    assert all(sample.startswith("t") for sample in samples(at))  # from the corpus' first character
    assert "(32, 8)" in " ".join(x.value for x in at.markdown)  # (B, T) shapes as on the slides
    assert not at.error


def test_untrained_models_figures_are_kept_for_the_class_and_trained_ones_drawn_as_they_are(monkeypatch):
    from core.viz import lessons as lesson_charts

    built = []
    real = lesson_charts.compact_heatmap
    monkeypatch.setattr(lesson_charts, "compact_heatmap", lambda *a, **k: built.append(k["title"]) or real(*a, **k))
    at = fresh(query={"seed": "4321"})  # a seed no other test draws: the figures are made here
    assert len(built) == 2  # the bigram table and the embedding
    tables = [c.proto.spec for c in at.get("vega_lite_chart")]
    at.slider(key=next(w.key for w in at.slider if w.key.endswith("temperature"))).set_value(1.5).run()
    assert len(built) == 2 and [c.proto.spec for c in at.get("vega_lite_chart")] == tables  # kept
    classmate = fresh(query={"seed": "4321"})  # another student, the same untrained models
    assert len(built) == 2 and [c.proto.spec for c in classmate.get("vega_lite_chart")] == tables
    at.button(key="small_lm.start").click().run()
    at.button(key="small_lm.pause").click().run()
    trained = len(built)
    assert trained > 2  # the models moved on: both tables drawn from the new weights
    at.run()
    assert len(built) == trained + 2  # trained models are this student's own: drawn, not kept
    assert_no_exception(at)


def test_start_pause_reset():
    at = fresh()
    at.button(key="small_lm.start").click().run()
    assert_no_exception(at)
    at.run()  # the live fragment draws, then trains: the picture lags one slice (ui.live)
    first = step_of(at)
    assert first >= 1
    at.run()  # the fragment advances once per run
    second = step_of(at)
    assert second > first
    at.button(key="small_lm.pause").click().run()
    paused = step_of(at)
    at.run()
    assert step_of(at) == paused
    at.button(key="small_lm.reset").click().run()
    assert step_of(at) == 0
    assert_no_exception(at)


def test_training_stops_at_max_steps_and_draws_samples():
    at = fresh(query={"max_steps": "10", "steps_per_tick": "100"})
    at.button(key="small_lm.start").click().run()
    for _ in range(30):
        if step_of(at) >= 10:
            break
        at.run()
    assert step_of(at) == 10
    at.run()
    assert step_of(at) == 10 and at.button(key="small_lm.start").disabled
    assert any("step 10" in m.value for m in at.markdown)  # samples of the trained models
    assert_no_exception(at)


@pytest.fixture(scope="module")
def trained_race():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        race = small_lm.SmallLMRace(texts.builtin_text("pangram"), small_lm.SmallLMSettings().race_config())
        race.advance(None, n_steps=400)
    finally:
        torch.set_num_threads(before)
    return race


def test_the_lessons_finding_shows(trained_race):
    at = fresh()
    at.session_state["small_lm.race"] = trained_race
    at.run()
    assert_no_exception(at)
    assert step_of(at) == 400
    m = metrics(at)
    bigram = float(m[f"{small_lm.MODEL_LABELS['bigram']} · val loss"])
    attention = float(m[f"{small_lm.MODEL_LABELS['attention']} · val loss"])
    assert attention < 0.5 * bigram
    deltas = {x.label: x.proto.delta for x in at.metric if x.label.endswith("· val loss")}
    assert deltas[f"{small_lm.MODEL_LABELS['attention']} · val loss"] == f"{attention - bigram:+.3f} vs bigram"
    message = " ".join(s.value for s in at.success)
    assert f"**{bigram - attention:.3f} nats lower**" in message and "bigram ≈ 0.70, self-attention ≈ 0.15" in message


@pytest.mark.parametrize("text, message", [
    ("", "Your text is empty"),
    ("a", "Your text has 1 character"),
    (" \n \t ", "only whitespace"),
    ("z" * 20_000_000, "too long"),
    ("abcdefghij", "validation part has only 1"),
], ids=["empty", "one-char", "whitespace", "20MB-paste", "too-short-for-a-block"])
def test_bad_corpus_keeps_the_trained_models(text, message):
    at = fresh()
    at.button(key="small_lm.start").click().run()
    at.button(key="small_lm.pause").click().run()
    trained = step_of(at)
    assert trained >= 1
    at.radio(key=key("corpus")).set_value("own").run()
    assert not at.error and step_of(at) == trained  # the own text starts as the built-in one
    at.text_area(key="small_lm.own_text").set_value(text).run()
    assert_no_exception(at)
    assert message in errors(at)
    assert step_of(at) == trained  # the trained race is still there
    at.button(key="small_lm.reset").click().run()
    assert_no_exception(at)
    if message == "validation part has only 1":  # no valid corpus: Reset refuses, models kept
        assert "Reset needs a valid corpus" in errors(at) and step_of(at) == trained
    else:  # the last valid text is still in use, so Reset starts over on it
        assert step_of(at) == 0


@pytest.mark.parametrize("name, data, message", [
    ("image.txt", b"GIF89a\x01\x00\x01\x00\x00\x00\x00;", "binary file"),
    ("notes.txt", LATIN1, "is not UTF-8 text"),
], ids=["binary", "latin-1"])
def test_bad_upload_is_refused(name, data, message):
    at = fresh()
    at.radio(key=key("corpus")).set_value("own").run()
    before = metrics(at)["Characters in the text"]
    at.file_uploader(key="small_lm.upload").set_value((name, data, "text/plain")).run()
    assert_no_exception(at)
    assert message in errors(at)
    assert metrics(at)["Characters in the text"] == before


def test_settings_change_after_training_needs_reset():
    at = fresh()
    at.button(key="small_lm.start").click().run()
    at.button(key="small_lm.pause").click().run()
    trained = step_of(at)
    at.slider(key=key("block_size")).set_value(4).run()
    assert any("Press **Reset**" in i.value for i in at.info)
    assert step_of(at) == trained
    at.button(key="small_lm.reset").click().run()
    assert step_of(at) == 0
    assert at.session_state["small_lm.race"].config.block_size == 4
    assert not any("Press **Reset**" in i.value for i in at.info)


def test_untrained_models_follow_the_settings():
    at = fresh()
    at.radio(key=key("corpus")).set_value("essay").run()
    race = at.session_state["small_lm.race"]
    assert race.text == texts.builtin_text("essay") and race.step == 0
    assert metrics(at)["Vocabulary |V|"] == str(race.tokenizer.vocab_size)


def test_bad_prompt_falls_back():
    at = fresh()
    at.text_input(key=key("prompt")).set_value("QZ!").run()
    assert "never has" in errors(at) and "'Q'" in errors(at)
    at.text_input(key=key("prompt")).set_value("the ").run()
    assert not at.error
    assert len(samples(at)) == 3 and all(sample.startswith("the ") for sample in samples(at))


def test_cross_entropy_by_hand_controls():
    at = fresh()
    at.text_input(key=key("ce_logits")).set_value("1, 2, 3").run()
    at.text_input(key=key("ce_target")).input("2").run()
    expected = -math.log(math.exp(3) / (math.exp(1) + math.exp(2) + math.exp(3)))
    assert metrics(at)["By hand (float64)"] == f"{expected:.10f}"
    at.text_input(key=key("ce_logits")).set_value("1, x").run()
    assert "'x' is not a number" in errors(at)
    assert metrics(at)["By hand (float64)"] == f"{expected:.10f}"  # the last valid logits stay
    at.text_input(key=key("ce_logits")).set_value("99, 1").run()
    assert "between" in errors(at)
    at.text_input(key=key("ce_logits")).set_value("0.5, 0.5").run()
    assert at.session_state[PREFIX].ce_target == 1  # clamped: only two classes now
    assert metrics(at)["By hand (float64)"] == f"{math.log(2):.10f}"
    at.button(key="small_lm.ce_reset").click().run()
    assert metrics(at)["By hand (float64)"] == "1.1254029631"
    assert_no_exception(at)


def test_url_round_trip():
    at = fresh()
    at.radio(key=key("corpus")).set_value("essay").run()
    at.slider(key=key("block_size")).set_value(4).run()
    at.text_input(key=key("ce_logits")).set_value("1, 2, 3").run()
    at.text_input(key=key("ce_target")).input("0").run()
    shown = metrics(at)
    params = core_settings.to_params(at.session_state[PREFIX])
    assert params == {"corpus": "essay", "block_size": "4", "ce_logits": "[1.0,2.0,3.0]", "ce_target": "0"}
    again = fresh(query=params)
    assert metrics(again) == shown
    assert again.session_state["small_lm.race"].config.block_size == 4


def test_own_corpus_stays_out_of_the_link():
    at = fresh()
    at.radio(key=key("corpus")).set_value("own").run()
    at.text_area(key="small_lm.own_text").set_value("my private diary entry. " * 10).run()
    params = core_settings.to_params(at.session_state[PREFIX])
    assert params == {"corpus": "own"}


def test_batch_size_and_learning_rate_keep_the_untrained_models():
    at = fresh()
    race = at.session_state["small_lm.race"]
    before = samples(at)
    at.slider(key=key("batch_size")).set_value(16).run()
    at.select_slider(key=key("lr")).set_value(0.003).run()
    assert at.session_state["small_lm.race"] is race  # not rebuilt, not evaluated again
    assert (race.config.batch_size, race.config.lr) == (16, 0.003)
    assert samples(at) == before
    assert "Adam lr 0.003" in " ".join(c.value for c in at.caption)
    at.slider(key=key("head_size")).set_value(8).run()
    assert at.session_state["small_lm.race"] is not race  # new models
    assert_no_exception(at)


def test_model_and_sampling_controls():
    at = fresh()
    at.slider(key=key("batch_size")).set_value(16).run()
    at.slider(key=key("n_embd")).set_value(24).run()
    at.slider(key=key("head_size")).set_value(8).run()
    at.select_slider(key=key("lr")).set_value(0.003).run()
    at.text_input(key=key("seed")).input("7").run()
    config = at.session_state["small_lm.race"].config  # untrained: rebuilt with every change
    assert (config.batch_size, config.n_embd, config.head_size, config.lr, config.seed) == (16, 24, 8, 0.003, 7)
    assert "(B, T, C) = (16, 8, 24)" in " ".join(m.value for m in at.markdown)
    at.slider(key=key("sample_chars")).set_value(30).run()
    assert [len(s) for s in samples(at)] == [31, 31, 31]  # the first character + 30 sampled
    before = samples(at)
    at.slider(key=key("temperature")).set_value(0.05).run()  # sharpens even untrained logits
    assert samples(at) != before
    at.text_input(key=key("max_steps")).input("20").run()
    assert at.get("progress")[0].proto.text.endswith("of 20")
    assert_no_exception(at)


# ---------------------------------------------------------------- a learning rate off the slider's steps
def lr_slider(at):
    return next(s for s in at.select_slider if s.key.endswith(".lr"))


def test_a_learning_rate_from_a_link_is_used_as_given():
    at = fresh(query={"lr": "0.5"})  # not a slider step: it was snapped to 0.1 without a word
    assert lr_slider(at).value == 0.5 and "0.5" in lr_slider(at).options  # as the slider shows it
    assert at.session_state["small_lm.race"].config.lr == 0.5
    assert "Adam lr 0.5," in " ".join(c.value for c in at.caption)
    assert core_settings.to_params(at.session_state[PREFIX]) == {"lr": "0.5"}  # the link survives
    assert not at.warning and not at.error
    lr_slider(at).set_value(0.03).run()  # a usual step
    at.run()
    assert at.session_state["small_lm.race"].config.lr == 0.03
    assert "0.5" in lr_slider(at).options  # the link's rate stays a step: the student may go back
    lr_slider(at).set_value(0.5).run()
    assert at.session_state["small_lm.race"].config.lr == 0.5
    assert_no_exception(at)


@pytest.mark.parametrize("value, message", [("5", "lr must be at most 1.0, got 5.0"),
                                            ("abc", "expected a number, got 'abc'")])
def test_a_learning_rate_out_of_range_is_reported(value, message):
    at = fresh(query={"lr": value})
    assert message in shown(" ".join(w.value for w in at.warning))
    assert at.session_state["small_lm.race"].config.lr == 0.01 == lr_slider(at).value  # the default


def test_a_learning_rate_from_a_lesson_file_is_used_as_given():
    from ui import layout

    lesson = core_settings.to_lesson(small_lm.SmallLMSettings(lr=0.2), name="fast", page="small-lm",
                                     locked=["lr"])
    at = fresh()
    at.session_state[layout.panel_key(PREFIX)] = True  # open "Lesson presets"
    at.run()
    uploader = next(u for u in at.file_uploader if u.key == f"{PREFIX}.lesson_file")
    uploader.upload("fast.json", lesson.encode(), "application/json").run()
    assert_no_exception(at)
    assert lr_slider(at).value == 0.2 and at.session_state["small_lm.race"].config.lr == 0.2
    at.run()  # locked: the slider is set from the lesson on every run, and keeps 0.2
    assert lr_slider(at).value == 0.2 and at.session_state["small_lm.race"].config.lr == 0.2


def test_a_lesson_name_over_its_limit_is_refused_and_the_name_outlives_the_closed_panel():
    """Streamlit's max_chars (80) dropped a longer paste without a word; and the panel's box,
    made only while it is open, came back as "my lesson" after the panel was closed and opened."""
    from ui import layout

    at = fresh()
    at.session_state[layout.panel_key(PREFIX)] = True  # open "Lesson presets"
    at.run()
    name_box = lambda: at.text_input(key=f"{PREFIX}.lesson_name")  # noqa: E731
    name_box().input("Week 3: attention").run()
    name_box().input("w" * 95).run()
    assert_no_exception(at)
    assert ("Lesson name: 95 characters is over the limit of 80; the box went back to “Week 3: attention”."
            in " ".join(e.value for e in at.error))
    assert name_box().value == "Week 3: attention"
    at.session_state[layout.panel_key(PREFIX)] = False
    at.run()
    at.session_state[layout.panel_key(PREFIX)] = True
    at.run()
    assert name_box().value == "Week 3: attention"


# ---------------------------------------------------------------- a vocabulary of thousands of characters
MAX_CHART_BYTES = 3_000_000  # the whole bigram table of 3,000 characters was a 532 MB message


def many_characters(n_distinct: int, length: int = 20_000) -> str:
    """Text of `n_distinct` CJK characters, each at least once (pasted Chinese text)."""
    chars = [chr(0x4E00 + i) for i in range(n_distinct)]
    return "".join(chars) + "".join(chars[(i * 7919) % n_distinct] for i in range(length))


def use_own_text(at, text: str):
    at.radio(key=key("corpus")).set_value("own").run()
    at.text_area(key="small_lm.own_text").set_value(text).run()
    assert_no_exception(at)
    return at


@pytest.fixture
def room_for_3000_characters(monkeypatch):
    """A server whose largest model holds a 3,000 × 3,000 bigram table (MAX_VOCABULARY is the cap)."""
    monkeypatch.setattr(budget, "LIMITS", dataclasses.replace(budget.LIMITS, max_params=small_lm.MAX_VOCABULARY ** 2))


@pytest.mark.usefixtures("room_for_3000_characters")
def test_own_text_of_3000_characters_draws_the_most_frequent_ones():
    at = use_own_text(fresh(), many_characters(small_lm.MAX_VOCABULARY))
    assert not at.error
    assert metrics(at)["Vocabulary |V|"] == "3001"  # the text's 3,000 and the tokenizer's "."
    captions = " ".join(c.value for c in at.caption)
    assert captions.count("Showing the 50 most frequent of 3,001 characters") == 2  # both tables
    assert "each row sums to 1 over all 3,001 next characters" in captions
    sizes = [len(c.proto.SerializeToString()) for c in at.get("vega_lite_chart")]
    assert len(sizes) == 4 and max(sizes) < MAX_CHART_BYTES  # what Streamlit sends per chart
    assert at.session_state["small_lm.race"].tokenizer.vocab_size == 3001  # trains on all of them


@pytest.mark.usefixtures("room_for_3000_characters")
def test_own_text_with_too_many_characters_is_refused_with_the_limit():
    at = use_own_text(fresh(), many_characters(small_lm.MAX_VOCABULARY + 1))
    assert "3,001 distinct characters; these models learn at most 3,000 on this server" in errors(at)
    assert at.session_state["small_lm.race"].text == texts.builtin_text("pangram")  # kept


# ---------------------------------------------------------------- layout at 1024 px (visual audit)
def _blocks(node, path=()):
    """(element, the blocks above it) for every element of the page."""
    for child in getattr(node, "children", {}).values():
        if getattr(child, "children", None) is not None and child.type != "metric":
            yield from _blocks(child, path + (child,))
        else:
            yield child, path + (child,)


def _parent(at, element):
    """The innermost layout block around `element`: a column or a flex container."""
    for el, path in _blocks(at._tree):
        if el is element:
            return next(b for b in reversed(path[:-1]) if b.type in ("column", "flex_container"))
    raise AssertionError("element not on the page")


def _metric(at, label: str):
    return next(m for m in at.metric if m.label == label)


def test_training_buttons_sit_in_a_row_as_wide_as_their_labels():
    # in columns [1, 1, 1, 3] they were cut to "S…", "P…", "R…" at 1024 px in lecture mode
    at = fresh(query={"lecture": "1"})
    rows = {id(_parent(at, at.button(key=f"{PREFIX}.{name}"))) for name in ("start", "pause", "reset")}
    assert len(rows) == 1
    row = _parent(at, at.button(key=f"{PREFIX}.start"))
    assert row.type == "flex_container"
    flex = row.proto.flex_container
    assert flex.direction == flex.HORIZONTAL and flex.wrap


def test_corpus_metrics_have_short_labels_with_the_detail_in_help():
    at = fresh()
    m = metrics(at)
    assert m["Train characters"] == "2,430" and m["Val characters"] == "270"
    assert "90%" in _metric(at, "Train characters").proto.help
    assert "10%" in _metric(at, "Val characters").proto.help
    assert all(len(label) <= 22 for label in m if "loss" not in label and "(float" not in label)


@pytest.mark.parametrize("lecture", [False, True])
def test_model_losses_wrap_instead_of_cutting_their_labels(lecture):
    at = fresh(query={"lecture": "1"} if lecture else None)
    labels = [f"{label} · val loss" for label in small_lm.MODEL_LABELS.values()]
    parents = [_parent(at, _metric(at, label)) for label in labels]
    if lecture:  # lecture mode wraps a metric's label: three columns, as before
        assert [p.type for p in parents] == ["column"] * 3
    else:  # one line per label: a row that wraps, each metric as wide as its label
        assert len({id(p) for p in parents}) == 1 and parents[0].type == "flex_container"
        flex = parents[0].proto.flex_container
        assert flex.direction == flex.HORIZONTAL and flex.wrap


def test_cross_entropy_values_have_half_a_row_each_and_show_every_digit():
    # in thirds of the page, "1.1254029631" was cut to "1.125402…" at 1024 px in lecture mode
    at = fresh(query={"lecture": "1"})
    m = metrics(at)
    hand, torch_ = m["By hand (float64)"], m["F.cross_entropy (float32)"]
    assert hand == "1.1254029631" and len(torch_) == len(hand)
    assert hand[:8] == torch_[:8]  # they agree to 6 decimals: the lesson's point
    assert float(m["Difference"]) == pytest.approx(abs(float(hand) - float(torch_)), rel=0.2)
    for label in ("By hand (float64)", "F.cross_entropy (float32)", "Difference"):
        column = _parent(at, _metric(at, label))
        assert column.type == "column" and column.weight == pytest.approx(0.5)


def test_slide_example_button_has_room_for_its_label():
    at = fresh(query={"lecture": "1"})
    column = _parent(at, at.button(key=f"{PREFIX}.ce_reset"))
    # [5, 2, 3] gave it 0.3: "Slide's exa…" at 1024 px in lecture mode
    assert column.type == "column" and column.weight >= 0.35


def test_cross_entropy_table_has_short_headers_and_shows_the_target():
    import json

    at = fresh()
    table = at.dataframe[0]
    config = json.loads(table.proto.columns)
    labels = [config[c]["label"] for c in table.value.columns]
    assert labels == ["c", "z_c", "exp(z_c)", "p_c", "target"]
    assert config["class c"]["width"] <= 50
    assert "exp(z_c) / Σ" in config["p_c = exp(z_c) / Σ"]["help"]  # the formula kept as a tooltip
    assert list(table.value["target?"]) == ["", "← target", "", ""]


def test_loss_chart_legend_draws_solid_and_dashed_lines_named_as_in_the_caption():
    # "val" and "train" were two identical dots (squares once trained) next to a caption that
    # says solid = validation, dashed = train
    import json

    at = fresh()
    spec = json.loads(at.get("vega_lite_chart")[0].proto.spec)
    dash = spec["layer"][0]["encoding"]["strokeDash"]
    assert dash["scale"] == {"domain": ["validation (solid)", "train (dashed)"], "range": [[1, 0], [6, 4]]}
    legend = dash["legend"]
    assert legend["symbolType"] == "stroke" and legend["symbolStrokeColor"]
    assert "solid = validation, dashed = train" in " ".join(c.value for c in at.caption)
    at.button(key=f"{PREFIX}.start").click().run()
    at.button(key=f"{PREFIX}.pause").click().run()
    spec = json.loads(at.get("vega_lite_chart")[0].proto.spec)  # trained: drawn as lines
    assert spec["layer"][0]["encoding"]["strokeDash"]["legend"]["symbolType"] == "stroke"
