"""Tests of the lessons of pages 5-6 (core/lessons/text.py, tokens_data.py, small_lm.py): text
validation, tokens, windows, embeddings, names windows, the small-LM race and cross-entropy by hand."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import re
import socket

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from core import models
from core import settings as core_settings
from core.data import IGNORE_INDEX, create_dataloader_v1
from core.lessons import small_lm
from core.lessons import text as texts
from core.lessons import tokens_data
from core.live_training import LiveTraining
from core.tokenizers import CharTokenizer, clear_gpt2_cache, gpt2_encoding
from core.viz import lessons as lesson_charts
from ui import formatting as fmt

# rasbt, LLMs from Scratch, ch. 2: the ids tiktoken's "gpt2" gives this sentence (published).
BOOK_IDS = [15496, 11, 466, 345, 588, 8887, 30, 220, 50256, 554,
            262, 4252, 18250, 8812, 2114, 286, 617, 34680, 27271, 13]


# ---------------------------------------------------------------- text validation
@pytest.mark.parametrize("text, message", [
    ("", "is empty"),
    ("   \n\t  ", "only whitespace"),
    ("a", "has 1 character;"),
    ("x" * (texts.MAX_TEXT_CHARS + 1), "too long"),
    ("ab\x01\x02\x03\x04" * 10, "binary"),
    ("text\x00more", "binary"),
], ids=["empty", "whitespace", "one-char", "too-long", "control-codes", "nul"])
def test_validate_text_rejects_bad_text(text, message):
    with pytest.raises(texts.TextProblem, match=message):
        texts.validate_text(text)


def test_validate_text_twenty_megabytes_is_refused_quickly():
    with pytest.raises(texts.TextProblem, match=r"20,000,000 characters.*at most 100,000"):
        texts.validate_text("a" * 20_000_000)


def test_validate_text_accepts_and_normalises_newlines():
    assert texts.validate_text("ab\r\ncd\re") == "ab\ncd\ne"
    assert texts.validate_text("héllo wörld ✓") == "héllo wörld ✓"
    assert texts.validate_text("ab", min_chars=2) == "ab"


def test_decode_upload_reads_utf8_and_drops_bom():
    assert texts.decode_upload("caf\u00e9\n".encode("utf-8"), "a.txt") == "caf\u00e9\n"
    assert texts.decode_upload(b"\xef\xbb\xbfhello", "bom.txt") == "hello"


@pytest.mark.parametrize("data, message", [
    (b"", "is empty"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary file"),
    (bytes(range(128, 256)) * 8, "binary file"),
    ("Caf\u00e9 au lait, tr\u00e8s bien".encode("latin-1"), r"not UTF-8 text \(byte 0xe9 at position 3 cannot"),
    (b"a" * (texts.MAX_UPLOAD_BYTES + 1), "uploads are limited"),
    (b"   \n  ", "only whitespace"),
], ids=["empty", "png", "high-bytes", "latin-1", "too-big", "whitespace"])
def test_decode_upload_refuses_with_a_reason(data, message):
    with pytest.raises(texts.TextProblem, match=message):
        texts.decode_upload(data, "notes.txt")


# ---------------------------------------------------------------- GPT-2 tokens, offline
@pytest.fixture
def no_network(monkeypatch, tmp_path):
    """Every socket connection fails, and tiktoken's cache is an empty folder."""
    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError("network blocked in tests")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty-cache"))
    clear_gpt2_cache()
    yield attempts
    clear_gpt2_cache()


def test_gpt2_chip_ids_equal_tiktoken_with_network_blocked(no_network):
    chips = tokens_data.bpe_chips(texts.BOOK_SENTENCE, allow_special=True)
    assert [c.token_id for c in chips] == BOOK_IDS
    assert "".join(c.piece for c in chips) == texts.BOOK_SENTENCE
    assert [c.special for c in chips].count(True) == 1 and chips[8].special
    summary = tokens_data.token_summary(texts.BOOK_SENTENCE)
    assert (summary.n_bpe, summary.n_end_of_text, summary.bpe_round_trip) == (20, 1, True)
    assert no_network == []


def test_end_of_text_special_or_plain(no_network):
    special, plain = tokens_data.end_of_text_pieces()
    assert special == [50256]
    assert len(plain) > 1 and 50256 not in plain
    assert gpt2_encoding().decode(plain) == "<|endoftext|>"
    summary = tokens_data.token_summary(texts.BOOK_SENTENCE, allow_special=False)
    # " <" merges into one token, so the count is not simply 20 - 1 + len(plain)
    assert summary.n_bpe == summary.n_bpe_plain == 25
    assert 50256 not in [c.token_id for c in tokens_data.bpe_chips(texts.BOOK_SENTENCE, allow_special=False)]


def test_char_chips_and_html_escape():
    text = "<b>a & b</b>\n"
    tokenizer = CharTokenizer.from_text(text)
    chips = tokens_data.char_chips(text, tokenizer)
    assert [c.token_id for c in chips] == tokenizer.encode(text)
    html = fmt.chips_html(chips, limit=5)
    assert "&lt;" in html and "<b>" not in html
    assert "showing the first 5 of 13 tokens" in html
    assert texts.visible(" a\n\t") == "␣a↵⇥"


def test_token_summary_counts_both_tokenizers():
    summary = tokens_data.token_summary("hello hello")
    assert summary.n_chars == 11
    assert summary.char_vocab_size == len(set("hello hello")) + 1  # plus "." at id 0
    assert summary.char_round_trip and summary.bpe_round_trip
    assert summary.chars_per_token == pytest.approx(11 / summary.n_bpe)


# ---------------------------------------------------------------- windows and batches
def _book_loop_count(n_tokens: int, max_length: int, stride: int) -> int:
    """The book's GPTDatasetV1 loop, literally."""
    return len(range(0, n_tokens - max_length, stride))


@pytest.mark.parametrize("max_length, stride", [(4, 1), (4, 4), (4, 5), (4, 6), (2, 3), (19, 1), (8, 100)])
def test_window_count_matches_formula_and_book_loop(max_length, stride):
    settings = tokens_data.TokensDataSettings(text_choice="book", max_length=max_length, stride=stride, batch_size=1)
    view = tokens_data.build_loader_view(texts.BOOK_SENTENCE, settings)
    assert view.n_tokens == 20
    formula = (20 - max_length - 1) // stride + 1
    assert view.n_windows == formula == _book_loop_count(20, max_length, stride)
    assert tokens_data.window_count_formula(20, max_length, stride).endswith(f"= {formula}")
    # targets are the inputs shifted by one token
    ids = torch.tensor(BOOK_IDS)
    for w in range(view.n_windows):
        start = w * stride
        assert view.inputs[w].tolist() == ids[start:start + max_length].tolist()
        assert view.targets[w].tolist() == ids[start + 1:start + 1 + max_length].tolist()


def test_default_text_windows_and_batches():
    view = tokens_data.build_loader_view(texts.builtin_text("paragraph"), tokens_data.TokensDataSettings())
    n = view.n_tokens
    assert view.n_windows == (n - 4 - 1) // 5 + 1
    assert view.n_batches == view.n_windows // 8
    assert view.dropped == view.n_windows - 8 * view.n_batches
    assert view.batch(0)[0].shape == (8, 4)


def test_batches_equal_the_dataloader_with_the_same_seed():
    text = texts.builtin_text("paragraph")
    settings = tokens_data.TokensDataSettings(max_length=4, stride=2, batch_size=8, shuffle=True, seed=7)
    view = tokens_data.build_loader_view(text, settings)
    loader = create_dataloader_v1(text, batch_size=8, max_length=4, stride=2, shuffle=True, seed=7)
    for k, (x, y) in enumerate(loader):
        vx, vy = view.batch(k)
        assert torch.equal(x, vx) and torch.equal(y, vy)
    assert k + 1 == view.n_batches
    unshuffled = tokens_data.build_loader_view(text, tokens_data.TokensDataSettings(max_length=4, stride=2, shuffle=False))
    assert unshuffled.batch_indices[0] == list(range(8))
    assert view.batch_indices[0] != list(range(8))
    assert view.book_first_batch is True  # the page's own check against the book's loader
    plain = tokens_data.build_loader_view(text, tokens_data.TokensDataSettings(allow_special=False))
    assert plain.book_first_batch is None  # the book's loader always reads the marker as special
    other = dataclasses.replace(view, batch_indices=view.batch_indices[1:])  # batch 1 as batch 0
    assert tokens_data.matches_book_loader(text, other) is False


@pytest.mark.parametrize("max_length, stride, batch_size, message", [
    (4, 0, 1, "stride must be at least 1"),
    (4, -3, 1, "stride must be at least 1"),
    (0, 1, 1, "max_length must be at least 1"),
    (20, 1, 1, "max_length 20 is too long for this text: it has 20 tokens"),
    (500, 1, 1, "at most 256"),
    (4, 5, 5, "batch_size 5 is larger than the number of windows \\(4\\)"),
    (4, 1, 0, "batch_size must be at least 1"),
])
def test_loader_problems_are_explained(max_length, stride, batch_size, message):
    settings = tokens_data.TokensDataSettings(max_length=max_length, stride=stride, batch_size=batch_size)
    with pytest.raises(ValueError, match=message):
        tokens_data.build_loader_view(texts.BOOK_SENTENCE, settings)


def test_input_uses_show_overlap_and_skipped_tokens():
    overlap = tokens_data.build_loader_view(texts.BOOK_SENTENCE, tokens_data.TokensDataSettings(max_length=4, stride=2, batch_size=1))
    assert overlap.input_uses()[:6].tolist() == [1, 1, 2, 2, 2, 2]
    skipped = tokens_data.build_loader_view(texts.BOOK_SENTENCE, tokens_data.TokensDataSettings(max_length=2, stride=3, batch_size=1))
    assert skipped.input_uses()[:6].tolist() == [1, 1, 0, 1, 1, 0]
    frame = tokens_data.window_frame(skipped, max_tokens=6)
    coverage = frame[frame["row"] == "used as input ×"]
    assert coverage["kind"].tolist().count("never an input") == 2
    targets = frame[frame["row"] == "window 0 target"]
    assert targets["text"].tolist() == [str(i) for i in BOOK_IDS[1:3]]
    chart = lesson_charts.window_chart(skipped).to_dict()
    assert chart["layer"][0]["mark"]["type"] == "rect"


def test_window_table_rows():
    view = tokens_data.build_loader_view(texts.BOOK_SENTENCE, tokens_data.TokensDataSettings(max_length=4, stride=5, batch_size=1))
    table = tokens_data.window_table(view)
    assert len(table) == 4
    assert table.loc[0, "input ids"] == str(BOOK_IDS[0:4])
    assert table.loc[0, "target ids"] == str(BOOK_IDS[1:5])
    assert table.loc[0, "input text"] == "Hello | , | ␣do | ␣you"


# ---------------------------------------------------------------- embeddings
def test_embedding_shapes_follow_the_book():
    view = tokens_data.build_loader_view(texts.builtin_text("paragraph"), tokens_data.TokensDataSettings())
    x, _ = view.batch(0)
    before = torch.random.get_rng_state()
    token_layer = tokens_data.seeded_embedding(50257, 256, 123)
    pos_layer = tokens_data.seeded_embedding(tokens_data.GPT2_CONTEXT, 256, 124)
    assert torch.equal(before, torch.random.get_rng_state())  # the global RNG is untouched
    steps = tokens_data.embed_batch(x, token_layer, pos_layer)
    assert tuple(steps.x.shape) == (8, 4)
    assert tuple(steps.token_embeddings.shape) == (8, 4, 256)
    assert tuple(steps.pos_embeddings.shape) == (4, 256)
    assert tuple(steps.input_embeddings.shape) == (8, 4, 256)
    assert steps.token_table_shape == (50257, 256) and steps.pos_table_shape == (1024, 256)
    assert torch.allclose(steps.input_embeddings[3, 2], token_layer.weight[x[3, 2]] + pos_layer.weight[2])
    shapes = steps.shape_rows()["shape"].tolist()
    assert shapes[0] == "(8, 4)" and shapes[2] == "(8, 4, 256)" and shapes[4] == "(4, 256)"


def test_seeded_embedding_is_reproducible_standard_normal():
    a = tokens_data.seeded_embedding(2000, 64, 5).weight
    b = tokens_data.seeded_embedding(2000, 64, 5).weight
    c = tokens_data.seeded_embedding(2000, 64, 6).weight
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert abs(a.mean().item()) < 0.02 and abs(a.std().item() - 1) < 0.02


@pytest.mark.parametrize("num, dim", [(50257, 256), (50257, 3), (50257, 1), (2049, 5), (1030, 7)])
def test_embedding_rows_are_the_whole_tables_rows(num, dim):
    """Only the rows of a batch are kept, and they are exactly the rows of the whole table."""
    full = tokens_data.seeded_embedding(num, dim, 123).weight.detach()  # (num, dim)
    ids = [0, 5, 1023, 1024, num - 1, 5, num // 2]
    layer = tokens_data.seeded_embedding_rows(num, dim, 123, ids)
    assert (layer.num_embeddings, layer.embedding_dim) == (num, dim)
    assert layer.weight_rows.shape == (len(set(ids)), dim)  # nothing else is held
    x = torch.tensor([[num - 1, 0, 5], [1024, num // 2, 1023]])  # (B, T)
    assert torch.equal(layer(x), full[x])
    with pytest.raises(KeyError):
        layer(torch.tensor([[1]]))


def test_embed_batch_with_only_the_batchs_rows_matches_the_whole_table():
    view = tokens_data.build_loader_view(texts.builtin_text("paragraph"), tokens_data.TokensDataSettings())
    x, _ = view.batch(2)
    pos_layer = tokens_data.seeded_embedding(tokens_data.GPT2_CONTEXT, 32, 124)
    whole = tokens_data.embed_batch(x, tokens_data.seeded_embedding(50257, 32, 123), pos_layer)
    rows = tokens_data.embed_batch(x, tokens_data.seeded_embedding_rows(50257, 32, 123, x.flatten().tolist()),
                                   pos_layer)
    assert torch.equal(whole.input_embeddings, rows.input_embeddings)
    assert rows.token_table_shape == (50257, 32)


# ---------------------------------------------------------------- names windows
def test_name_windows_are_padded():
    (table,) = tokens_data.name_window_frames("emma", 12)
    assert table.loc["input"].tolist()[:6] == [".", "e", "m", "m", "a", "."]
    assert table.loc["target"].tolist()[:5] == ["e", "m", "m", "a", "."]
    assert table.loc["target id"].tolist()[5:] == [str(IGNORE_INDEX)] * 7
    assert table.loc["input id"].tolist()[5:] == ["0"] * 7


def test_long_name_slides():
    tables = tokens_data.name_window_frames("christopherson", 12)
    assert len(tables) == len("christopherson") + 2 - 12
    assert tables[-1].loc["target"].tolist()[-1] == "."
    assert str(IGNORE_INDEX) not in tables[0].loc["target id"].tolist()


def _greyed(styler) -> set[tuple[int, int]]:
    """(row, column) of the cells the styler's CSS greys out."""
    css = styler.to_html()
    cells = set()
    for selectors, body in re.findall(r"([^{}]+)\{([^}]*)\}", css):
        if "#ECECEC" in body:
            cells |= {(int(r), int(c)) for r, c in re.findall(r"_row(\d+)_col(\d+)", selectors)}
    return cells


def test_padded_windows_are_one_table_one_row_a_position_greyed_only_where_padded():
    tables = tokens_data.name_window_frames("christopherson", 12)  # 4 windows, none padded
    styler = fmt.style_padded_windows(tables)
    assert styler.data.shape == (48, 6)
    assert styler.data.columns.tolist() == ["window", "t", "input", "input id", "target", "target id"]
    window_3 = styler.data[styler.data["window"] == 3]
    assert window_3["t"].tolist() == list(range(12))
    assert window_3["target"].tolist() == tables[3].loc["target"].tolist()
    assert _greyed(styler) == set()
    # ".emma." in 12: the targets after the closing "." are padding: positions 5-11, input to target id
    assert _greyed(fmt.style_padded_windows(tokens_data.name_window_frames("emma", 12))) == {
        (r, c) for r in range(5, 12) for c in range(2, 6)}


@pytest.mark.parametrize("name, message", [("", "Type a name"), ("r2d2", "'2'"), ("x" * 41, "at most 40"),
                                           ("anne-marie", "'-'")])
def test_validate_name(name, message):
    with pytest.raises(texts.TextProblem, match=message):
        tokens_data.validate_name(name)
    assert tokens_data.validate_name("  Emma ") == "emma"


# ---------------------------------------------------------------- the small LM race
def test_check_corpus_needs_a_validation_block():
    with pytest.raises(texts.TextProblem, match="needs 9"):
        small_lm.check_corpus("a" * 50, 8)
    small_lm.check_corpus("a" * 90, 8)


def test_race_uses_one_generator_and_the_same_batches(one_thread):
    race = small_lm.SmallLMRace(texts.builtin_text("pangram"), small_lm.RaceConfig(eval_every=5))
    race.advance(None, n_steps=7)
    assert race.step == 7
    # the batch generator advanced exactly once per step: all three models saw the same batches
    shadow = torch.Generator().manual_seed(race.config.seed)
    for _ in range(7):
        torch.randint(len(race.train_data) - 8, (32,), generator=shadow)
    assert torch.equal(shadow.get_state(), race.batch_generator.get_state())
    steps = sorted({row["step"] for row in race.history})
    assert steps == [0, 5]
    assert {row["model"] for row in race.history} == set(small_lm.MODEL_LABELS)
    twin = small_lm.SmallLMRace(texts.builtin_text("pangram"), small_lm.RaceConfig(eval_every=5))
    twin.advance(None, n_steps=7)
    assert twin.history == race.history


def test_untrained_races_of_the_same_settings_sample_the_same_text(one_thread):
    # the Small LM page shares untrained samples between sessions on this ground
    text, config = texts.builtin_text("pangram"), small_lm.RaceConfig(seed=7)
    first, second = small_lm.SmallLMRace(text, config), small_lm.SmallLMRace(text, config)
    for name in small_lm.MODEL_LABELS:
        assert first.generate(name, 60, "", 0.8, seed=7) == second.generate(name, 60, "", 0.8, seed=7)
    assert first.generate("attention", 60, "", 0.8, seed=8) != first.generate("attention", 60, "", 0.8,
                                                                               seed=7)
    # a text given for the untrained race is kept; once trained, the race samples itself again
    asked = []

    def given(n: int) -> str:
        asked.append(n)
        return "given" + "x" * (n - 4)

    assert first.generate("bigram", 20, untrained=given) == "given" + "x" * 16
    assert first.generate("bigram", 30, untrained=lambda n: "other") == "given" + "x" * 26
    assert asked == [small_lm.SAMPLE_CHUNK]  # whole chunks asked for, then cut
    first.advance(None, n_steps=1)
    assert not first.generate("bigram", 20, untrained=given).startswith("given")


def test_a_shorter_sample_is_the_start_of_a_longer_one(one_thread):
    # what lets the race draw whole chunks and cut: one id per character from the seeded generator
    race = small_lm.SmallLMRace(texts.builtin_text("essay"), small_lm.RaceConfig(seed=3))
    race.advance(None, n_steps=20)
    long = race.generate("attention", 250, "th", 0.9, seed=5)
    assert len(long) == 252
    for n in (10, 100, 170):
        fresh = small_lm.SmallLMRace(texts.builtin_text("essay"), small_lm.RaceConfig(seed=3))
        fresh.advance(None, n_steps=20)
        idx = fresh.tokenizer.encode_tensor("th")[None, :]
        by_hand = fresh.tokenizer.decode(models.generate(
            fresh.models["attention"], idx, n, temperature=0.9, generator=torch.Generator().manual_seed(5),
            block_size=fresh.config.block_size)[0])
        assert race.generate("attention", n, "th", 0.9, seed=5) == by_hand == long[:2 + n]


def test_an_untrained_race_adopts_new_training_settings_as_if_built_with_them(one_thread):
    # the page keeps the untrained race when only the batch size or the learning rate moves
    text = texts.builtin_text("pangram")
    wanted = small_lm.RaceConfig(batch_size=16, lr=0.003, eval_every=5)
    race = small_lm.SmallLMRace(text, small_lm.RaceConfig(eval_every=5))
    first_sample = race.generate("attention", 40, "", 1.0, seed=race.config.seed)
    assert race.adopt(wanted) and race.config == wanted
    assert race.generate("attention", 40, "", 1.0, seed=race.config.seed) == first_sample
    built = small_lm.SmallLMRace(text, wanted)
    race.advance(None, n_steps=7)
    built.advance(None, n_steps=7)
    assert race.history == built.history  # the same batches of 16, the same Adam at 0.003
    # once trained, or when the models themselves would differ, the race is rebuilt instead
    assert not race.adopt(small_lm.RaceConfig(batch_size=8, eval_every=5))
    fresh = small_lm.SmallLMRace(text, small_lm.RaceConfig())
    for other in (small_lm.RaceConfig(seed=2), small_lm.RaceConfig(n_embd=24), small_lm.RaceConfig(block_size=4),
                  small_lm.RaceConfig(head_size=8), small_lm.RaceConfig(eval_batches=2)):
        assert not fresh.adopt(other) and fresh.config == small_lm.RaceConfig()


def test_race_starts_near_uniform_and_time_budget_still_steps(one_thread):
    race = small_lm.SmallLMRace(texts.builtin_text("pangram"))
    v = race.tokenizer.vocab_size
    for losses in race.latest().values():
        assert abs(losses["val"] - math.log(v)) < 0.1
    outcome = race.advance(0.0, n_steps=50)
    assert race.step == 1 and outcome.steps == 1  # at least one step per call


def test_race_is_a_live_training_run(one_thread):
    """The live-training protocol: advance(budget_s, slot) inside a slot, done at max_steps."""
    race = small_lm.SmallLMRace(texts.builtin_text("pangram"), small_lm.RaceConfig(eval_every=5),
                                max_steps=12, steps_per_advance=5)
    assert isinstance(race, LiveTraining) and not race.done
    busy = race.advance(10.0, contextlib.nullcontext(False))  # every training slot taken
    assert busy.busy and busy.steps == 0 and race.step == 0
    first = race.advance(10.0, contextlib.nullcontext(True))
    assert first.steps == 5 and race.step == 5 and not first.finished  # steps_per_advance caps it
    while not race.done:
        race.advance(10.0)
    assert race.step == 12 and race.advance(10.0).steps == 0  # done: nothing more to train
    assert sorted({row["step"] for row in race.history}) == [0, 5, 10]
    race.max_steps = 14  # the page raised Steps: the same run goes on
    assert not race.done and race.advance(None).steps == 2 and race.done


@pytest.mark.slow
def test_attention_reaches_far_lower_loss_than_bigram(one_thread):
    """The lesson's finding: on a repeated sentence one head beats the bigram table by far."""
    race = small_lm.SmallLMRace(texts.builtin_text("pangram"), small_lm.RaceConfig(eval_every=100))
    race.advance(None, n_steps=400)
    latest = race.latest()
    bigram, nopos, attention = (latest[k]["val"] for k in ("bigram", "attention_nopos", "attention"))
    floor = race.bigram_floor()
    assert 0.55 < floor < 0.75  # what a perfect bigram table could do on this text
    assert bigram > floor - 0.05
    assert attention < 0.5 * bigram and nopos < 0.6 * bigram
    sample = race.generate("attention", 80, "the ", seed=1)
    assert sample.startswith("the ") and len(sample) == 84
    assert race.generate("attention", 80, "the ", seed=1) == sample
    probs = race.bigram_probabilities()
    assert probs.shape == (race.tokenizer.vocab_size,) * 2 and np.allclose(probs.sum(1), 1, atol=1e-5)
    assert race.embedding_table().shape == (race.tokenizer.vocab_size, 32)


def test_check_prompt():
    tokenizer = CharTokenizer.from_text("abc abc")
    assert small_lm.check_prompt("ab c", tokenizer) == "ab c"
    with pytest.raises(texts.TextProblem, match="'z'"):
        small_lm.check_prompt("abz", tokenizer)


def test_race_loss_chart_has_every_series(one_thread):
    race = small_lm.SmallLMRace(texts.builtin_text("essay"), small_lm.RaceConfig(eval_every=2))
    race.advance(None, n_steps=2)
    chart = lesson_charts.race_loss_chart(race.history_frame(), floor=race.bigram_floor()).to_dict()
    data = chart["layer"][0].get("data") or chart["data"]  # on the lines' layer, or shared by all
    values = chart["datasets"][data["name"]]
    assert {v["model"] for v in values} == set(small_lm.MODEL_LABELS.values())
    assert {v["split"] for v in values} == {"train (dashed)", "validation (solid)"}


def test_race_loss_chart_before_training_draws_points_on_a_readable_axis(one_thread):
    # one evaluation per line: a line mark draws nothing, and a step axis from 0 to 0 read 0.000000
    race = small_lm.SmallLMRace(texts.builtin_text("essay"), small_lm.RaceConfig(eval_every=50))
    chart = lesson_charts.race_loss_chart(race.history_frame(), floor=race.bigram_floor(),
                                          min_steps=50).to_dict()
    lines = chart["layer"][0]
    assert lines["mark"]["point"] is True
    x = lines["encoding"]["x"]
    assert x["scale"]["domain"] == [0, 50] and x["axis"]["format"] == ",d"
    race.advance(None, n_steps=100)  # evaluated at 0, 50, 100: lines, and the axis follows them
    chart = lesson_charts.race_loss_chart(race.history_frame(), floor=race.bigram_floor(),
                                          min_steps=50).to_dict()
    lines = chart["layer"][0]
    assert lines["mark"].get("point") in (None, False)
    assert "domain" not in lines["encoding"]["x"]["scale"]


# ---------------------------------------------------------------- cross-entropy by hand
def test_cross_entropy_by_hand_matches_the_slide():
    steps = small_lm.cross_entropy_by_hand([0.1, 0.5, 0.2, 0.1], 1)
    assert steps.by_hand == pytest.approx(1.1254029644614048, abs=1e-8)
    assert steps.torch_value == pytest.approx(1.1254, abs=1e-4)
    assert steps.difference < 1e-6
    assert sum(steps.probs) == pytest.approx(1.0)
    assert steps.p_target == max(steps.probs)


@pytest.mark.parametrize("seed", range(5))
def test_cross_entropy_by_hand_equals_torch(seed):
    gen = torch.Generator().manual_seed(seed)
    logits = (torch.randn(7, generator=gen) * 4).tolist()
    target = seed % 7
    steps = small_lm.cross_entropy_by_hand(logits, target)
    expected = F.cross_entropy(torch.tensor([logits], dtype=torch.float64), torch.tensor([target])).item()
    assert steps.by_hand == pytest.approx(expected, abs=1e-12)
    assert steps.difference < 1e-5


@pytest.mark.parametrize("text, message", [("", "Type the logits"), ("1, x", "'x' is not a number"),
                                           ("1", "2 to 20"), ("1, 99", "between"), ("1, nan", "finite")])
def test_parse_logits_errors(text, message):
    with pytest.raises(texts.TextProblem, match=message):
        small_lm.parse_logits(text)
    assert small_lm.parse_logits("[0.1, 0.5 0.2;0.1]") == [0.1, 0.5, 0.2, 0.1]


def test_cross_entropy_target_out_of_range():
    with pytest.raises(texts.TextProblem, match="between 0 and 1"):
        small_lm.cross_entropy_by_hand([0.0, 1.0], 2)


# ---------------------------------------------------------------- settings in links
def test_settings_round_trip_through_params():
    tokens = tokens_data.TokensDataSettings(max_length=6, stride=3, batch_size=4, text_choice="book", name="olivia")
    params = core_settings.to_params(tokens)
    assert core_settings.from_params(tokens_data.TokensDataSettings, params) == (tokens, [])
    lm = small_lm.SmallLMSettings(corpus="essay", ce_logits=[1.0, 2.0, 3.0], ce_target=2)
    params = core_settings.to_params(lm)
    assert core_settings.from_params(small_lm.SmallLMSettings, params) == (lm, [])
    assert all(len(v) < 40 for v in params.values())


def test_bad_link_values_fall_back_to_defaults():
    obj, errors = core_settings.from_params(tokens_data.TokensDataSettings, {"stride": "0", "max_length": "abc"})
    assert obj == tokens_data.TokensDataSettings() and len(errors) == 2
    obj, errors = core_settings.from_params(small_lm.SmallLMSettings, {"ce_logits": "[1,2]", "ce_target": "5"})
    # the target has no class among 2 logits: it gives way (its default 1 fits), the logits stay
    assert obj == small_lm.SmallLMSettings(ce_logits=[1.0, 2.0]) and "ce_target went back" in errors[-1]


def test_too_many_windows_is_refused_before_building_them():
    text = "word " * 20_000
    settings = tokens_data.TokensDataSettings(max_length=256, stride=1, batch_size=1)
    with pytest.raises(ValueError, match="keeps at most 1,000,000"):
        tokens_data.build_loader_view(text, settings)


def test_a_loader_view_is_never_empty_it_is_refused_instead():
    """The Tokens page's "Windows" metric is len(view.inputs): every view that is built has at least
    one window and one batch; settings that would give none raise the page's ValueError."""
    rng = np.random.default_rng(0)
    text = texts.builtin_text("paragraph")
    built = refused = 0
    for _ in range(60):
        settings = tokens_data.TokensDataSettings(
            max_length=int(rng.integers(1, 24)), stride=int(rng.integers(1, 24)),
            batch_size=int(rng.integers(1, 40)), shuffle=bool(rng.integers(2)))
        try:
            view = tokens_data.build_loader_view(text, settings)
        except ValueError:
            refused += 1
            continue
        built += 1
        assert view.n_windows >= 1 and view.n_batches >= 1 and view.dropped < settings.batch_size
    assert built >= 10 and refused >= 5  # both branches were exercised


def test_a_views_distinct_ids_and_their_key():
    view = tokens_data.build_loader_view(texts.builtin_text("paragraph"), tokens_data.TokensDataSettings())
    assert view.distinct_ids == tuple(sorted(set(view.token_ids)))
    assert view.distinct_ids_key == tokens_data.ids_key(tuple(sorted(set(view.token_ids))))
    assert tokens_data.ids_key((1, 2, 3)) != tokens_data.ids_key((1, 2, 4))
    assert tokens_data.ids_key((1, 2)) != tokens_data.ids_key((1, 2, 0))  # lengths count


@pytest.mark.parametrize("current, wanted, limit, expected", [
    (8, None, 40, (8, None)),   # fits: nothing changes
    (8, None, 4, (4, 8)),       # a short text: lowered, the 8 remembered
    (4, 8, 6, (6, 8)),          # the text grows a little: up to its windows, still on the way to 8
    (6, 8, 40, (8, None)),      # enough windows again: the user's 8 is back
    (4, 8, None, (4, 8)),       # the window settings are wrong: nothing moves until they are fixed
    (64, None, 1, (1, 64)),     # one window: a batch of one
])
def test_fitted_batch_size_lowers_and_comes_back(current, wanted, limit, expected):
    assert tokens_data.fitted_batch_size(current, wanted, limit) == expected


@pytest.mark.parametrize("fields, n_tokens, expected", [
    ({"max_length": 8, "stride": 2}, 203, (8, 2)),      # the text can be cut: kept as it is
    ({"max_length": 256, "stride": 1}, 203, (4, 1)),    # too long for the text: max_length goes back
    ({"max_length": 4, "stride": 1}, 400_000, (4, 5)),  # too many window ids: stride goes back
    ({"max_length": 200, "stride": 1}, 400_000, (4, 5)),  # neither alone is enough: both go back
    ({"max_length": 8, "stride": 8, "batch_size": 64}, 203, (8, 8)),  # the page lowers a batch itself
])
def test_windows_that_work_drops_only_what_the_text_refuses(fields, n_tokens, expected):
    settings = tokens_data.TokensDataSettings(**fields)
    fixed = tokens_data.windows_that_work(settings, n_tokens)
    assert (fixed.max_length, fixed.stride) == expected
    assert fixed.batch_size == settings.batch_size  # only window fields are set back


def test_a_one_token_text_is_called_one_token():
    settings = tokens_data.TokensDataSettings(max_length=4, stride=1, batch_size=1)
    with pytest.raises(ValueError, match="it has 1 token, and one window"):
        tokens_data.build_loader_view("Hello", settings)


@pytest.mark.parametrize("stride", [2, 4, 5, 6, 7])
def test_the_stride_note_says_what_the_windows_read(stride):
    """The Tokens page's note under the windows, checked against the windows themselves: with
    stride 5 and max_length 4 every token is read (the one after each window is its last target;
    the page said "a few of them are still a target"); with stride 7, two after each are not."""
    from core.data import sliding_windows

    max_length, ids = 4, list(range(60))
    inputs, targets = sliding_windows(ids, max_length, stride)
    last = int(targets.max())  # tokens up to the last window's end
    as_input = set(inputs.flatten().tolist())
    read = as_input | set(targets.flatten().tolist())
    note = tokens_data.stride_note(stride, max_length)
    never_read = [t for t in range(last + 1) if t not in read]
    only_target = [t for t in range(1, last + 1) if t not in as_input]
    if stride < max_length:
        assert "overlap" in note and len(inputs.flatten()) > len(as_input)
    elif stride == max_length:
        assert "exactly once" in note and len(inputs.flatten()) == len(as_input) and only_target == [last]
    elif never_read:
        assert f"the {stride - max_length - 1} after it" in note
        assert len(never_read) == (stride - max_length - 1) * (len(inputs) - 1)
    else:
        assert "every token is read" in note and only_target


def test_tokens_holding_part_of_a_character_are_counted():
    # GPT-2's BPE works on UTF-8 bytes: an emoji (4 bytes) or 你 (3) can be split between tokens
    from core.tokenizers import bpe_tokens

    text = "😀 héllo 你好"
    summary = tokens_data.token_summary(text)
    shown = [piece for _, piece in bpe_tokens(text)]
    assert summary.n_partial == sum("\ufffd" in piece for piece in shown) > 0
    assert summary.bpe_round_trip  # the pieces decode to the text together
    assert tokens_data.token_summary("plain words, café").n_partial == 0
    assert tokens_data.partial_note(0) == "" and "UTF-8 bytes" in tokens_data.partial_note(3)
