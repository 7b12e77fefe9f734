"""Tests of the walkthrough lessons (core/lessons: walkthrough, embeddings, simple_attention,
self_attention, causal_attention, multi_head): validation of every input, the book's numbers, the references
(PyTorch SDPA, the book's classes), masking orders, dropout, multi-head, scaling, charts, settings."""

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
import torch

from core import settings as core_settings
from core import viz
from core.attention import seeded
from core.lessons import causal_attention
from core.lessons import embeddings as emb
from core.lessons import multi_head
from core.lessons import self_attention
from core.lessons import simple_attention
from core.lessons import walkthrough as wt
from core.lessons.embeddings import EmbeddingError
from core.lessons.walkthrough import WalkthroughSettings
from core.viz import lessons as lesson_charts
from ui import formatting as fmt

BOOK = wt.BOOK_EMBEDDINGS


def book_frame() -> pd.DataFrame:
    return emb.embedding_frame(wt.BOOK_TOKENS, BOOK)


def rows(values, d=3):
    return [[float(v)] * d for v in values]


# ----------------------------------------------------------------------------- embeddings table
class TestValidateEmbeddingTable:
    def test_book_table_is_valid(self):
        table = emb.validate_embedding_table(book_frame())
        assert table.tokens == list(wt.BOOK_TOKENS)
        assert table.embeddings == BOOK
        assert table.shape == (6, 3) and table.warnings == []

    @pytest.mark.parametrize("bad, fragment", [
        ("abc", "“abc” is not a number"),
        ("", "empty"),
        (None, "empty"),
        (float("nan"), "empty"),
        ("nan", "NaN"),
        (float("inf"), "∞ cannot be used"),
        ("-inf", "−∞ cannot be used"),
        (1e101, "too large"),
        (True, "true/false"),
    ])
    def test_bad_cell_names_row_and_column(self, bad, fragment):
        frame = book_frame().astype({"d2": object})
        frame.loc[2, "d2"] = bad
        with pytest.raises(EmbeddingError) as info:
            emb.validate_embedding_table(frame)
        message = str(info.value)
        assert fragment in message
        assert "Row 3" in message and "starts" in message and "d2" in message

    def test_numeric_nan_from_the_editor_is_reported(self):
        frame = book_frame()
        frame.loc[0, "d1"] = np.nan  # what st.data_editor returns for a cleared cell
        with pytest.raises(EmbeddingError, match="Row 1.*d1: the cell is empty"):
            emb.validate_embedding_table(frame)

    def test_text_numbers_and_unicode_minus_are_accepted(self):
        frame = book_frame().astype({"d1": object})
        frame.loc[0, "d1"] = " −0.5 "
        frame.loc[1, "d1"] = "1e30"
        table = emb.validate_embedding_table(frame)
        assert table.embeddings[0][0] == -0.5 and table.embeddings[1][0] == 1e30

    def test_large_values_are_allowed_with_a_warning(self):
        frame = book_frame()
        frame.loc[0, "d1"] = 1e30
        table = emb.validate_embedding_table(frame)
        assert any("one-hot" in w for w in table.warnings)

    def test_many_problems_are_listed_then_counted(self):
        frame = book_frame().astype(object)
        for i in range(6):
            frame.loc[i, "d1"] = "x"
            frame.loc[i, "d2"] = "y"
        with pytest.raises(EmbeddingError, match=r"and 7 more"):
            emb.validate_embedding_table(frame)

    def test_one_token_and_one_dimension_are_fine(self):
        table = emb.validate_embedding_table(emb.embedding_frame(["solo"], [[2.0]]))
        assert table.shape == (1, 1)

    def test_sixty_four_tokens_ok_sixty_five_not(self):
        names = [f"t{i}" for i in range(65)]
        assert emb.validate_embedding_table(emb.embedding_frame(names[:64], rows(range(64)))).shape == (64, 3)
        with pytest.raises(EmbeddingError, match="65 tokens is too many"):
            emb.validate_embedding_table(emb.embedding_frame(names, rows(range(65))))

    def test_no_rows_and_no_dimensions_are_refused(self):
        with pytest.raises(EmbeddingError, match="no tokens"):
            emb.validate_embedding_table(book_frame().iloc[0:0])
        with pytest.raises(EmbeddingError, match="at least one dimension"):
            emb.validate_embedding_table(book_frame()[["token"]])
        with pytest.raises(EmbeddingError, match="too many"):
            emb.validate_embedding_table(emb.embedding_frame(["a"], [[0.0] * 65]))

    def test_missing_or_long_token_names(self):
        frame = book_frame()
        frame.loc[3, "token"] = None
        frame.loc[4, "token"] = "x" * 41
        with pytest.raises(EmbeddingError) as info:
            emb.validate_embedding_table(frame)
        assert "Row 4 has no token name" in str(info.value)
        assert "longer than 40" in str(info.value)

    def test_duplicate_names_warn_and_keep_the_table(self):
        frame = book_frame()
        frame.loc[5, "token"] = "one"
        table = emb.validate_embedding_table(frame)
        assert table.tokens.count("one") == 2
        assert any("Repeated token names" in w and "rows 5, 6" in w for w in table.warnings)

    def test_not_a_table(self):
        with pytest.raises(EmbeddingError):
            emb.validate_embedding_table([[1, 2]])
        with pytest.raises(EmbeddingError, match="token"):
            emb.validate_embedding_table(pd.DataFrame({"a": [1.0]}))


class TestParseEmbeddingsCsv:
    def test_header_and_names(self):
        table = emb.parse_embeddings_csv("token,d1,d2\nYour,0.43,0.15\njourney,0.55,0.87\n")
        assert table.tokens == ["Your", "journey"]
        assert table.embeddings == [[0.43, 0.15], [0.55, 0.87]]

    def test_round_trip_of_the_book(self):
        text = emb.embeddings_to_csv(wt.BOOK_TOKENS, BOOK)
        table = emb.parse_embeddings_csv(text)
        assert table.tokens == list(wt.BOOK_TOKENS) and table.embeddings == BOOK

    def test_tabs_semicolons_blank_lines_and_quotes(self):
        assert emb.parse_embeddings_csv("a\t1\t2\n\nb\t3\t4").embeddings == [[1, 2], [3, 4]]
        assert emb.parse_embeddings_csv("a;1;2\nb;3;4").tokens == ["a", "b"]
        assert emb.parse_embeddings_csv('"x, y",1\nz,2').tokens == ["x, y", "z"]

    def test_numbers_only_get_generated_names(self):
        table = emb.parse_embeddings_csv("1,2,3\n4,5,6")
        assert table.tokens == ["t1", "t2"] and table.embeddings == [[1, 2, 3], [4, 5, 6]]

    def test_ragged_rows_name_the_lines(self):
        with pytest.raises(EmbeddingError) as info:
            emb.parse_embeddings_csv("a,1,2\nb,3\nc,4,5,6")
        message = str(info.value)
        assert "line 1 has 3" in message and "line 2 has 2" in message and "line 3 has 4" in message

    def test_bad_cell_names_the_line(self):
        with pytest.raises(EmbeddingError, match="Line 4.*“oops” is not a number"):
            emb.parse_embeddings_csv("token,d1\na,1\n\nb,oops")

    def test_empty_huge_and_token_only(self):
        with pytest.raises(EmbeddingError, match="empty"):
            emb.parse_embeddings_csv("   \n ")
        with pytest.raises(EmbeddingError, match="too long"):
            emb.parse_embeddings_csv("a,1\n" * 60_000)
        with pytest.raises(EmbeddingError, match="at least one dimension"):
            emb.parse_embeddings_csv("a\nb")
        with pytest.raises(EmbeddingError, match="too many"):
            emb.parse_embeddings_csv("\n".join(f"t{i},1" for i in range(65)))

    def test_inf_and_nan_text(self):
        with pytest.raises(EmbeddingError, match="∞"):
            emb.parse_embeddings_csv("a,inf\nb,1")
        with pytest.raises(EmbeddingError, match="NaN"):
            emb.parse_embeddings_csv("a,nan\nb,1")

    def test_semicolons_with_decimal_commas(self):
        # a spreadsheet set to a language that writes 0,55: semicolons separate, commas are points
        table = emb.parse_embeddings_csv("token;d1;d2\njourney;0,55;−0,87\nstarts;1;2,5e-1\n")
        assert table.tokens == ["journey", "starts"]
        assert table.embeddings == [[0.55, -0.87], [1.0, 0.25]]
        assert emb.parse_embeddings_csv('"x, y";1;2\nz;0,5;1').tokens == ["x, y", "z"]
        # copied from such a spreadsheet: tabs, and the same decimal commas
        assert emb.parse_embeddings_csv("a\t0,5\t1\nb\t2\t−0,75").embeddings == [[0.5, 1], [2, -0.75]]
        # a semicolon inside a name of a comma file is part of the name
        assert emb.parse_embeddings_csv("a;b,0.1,0.2\nc,0.3,0.4").tokens == ["a;b", "c"]

    def test_a_byte_order_mark_is_not_part_of_the_first_name(self):
        # a spreadsheet's "CSV UTF-8" export starts with U+FEFF
        assert emb.parse_embeddings_csv("\ufeffa,1\nb,2").tokens == ["a", "b"]
        assert emb.parse_embeddings_csv("\ufefftoken,d1\na,1").tokens == ["a"]

    def test_each_line_has_its_own_separator(self):
        # the header written with semicolons, the rows with commas: read, not "no dimension"
        table = emb.parse_embeddings_csv("token;d1;d2\njourney,0.55,0.87\nstarts\t0.22\t0.58")
        assert table.tokens == ["journey", "starts"] and table.embeddings == [[0.55, 0.87], [0.22, 0.58]]

    @pytest.mark.parametrize("header", ["token,1,2", "token,0,1", "Name,1,2", "word;0;1"])
    def test_numbered_dimensions_in_the_header(self, header):
        table = emb.parse_embeddings_csv(f"{header}\njourney,0.55,0.87\nstarts,0.22,0.58")
        assert table.tokens == ["journey", "starts"]
        assert table.embeddings == [[0.55, 0.87], [0.22, 0.58]]

    def test_a_token_called_token_with_numbers_that_are_not_a_header_stays(self):
        table = emb.parse_embeddings_csv("token,0.5,0.25\njourney,0.55,0.87")
        assert table.tokens == ["token", "journey"]

    @pytest.mark.parametrize("text, tokens", [
        ("nan,0.1,0.2\ninf,0.3,0.4", ["nan", "inf"]),  # a first column of nan / inf words is names
        ("token,d1\nnan,0.5\n-inf,1", ["nan", "-inf"]),  # the header says the column holds names
        ("NaN,0.1", ["NaN"]),
    ])
    def test_tokens_named_nan_or_inf(self, text, tokens):
        assert emb.parse_embeddings_csv(text).tokens == tokens

    def test_nan_among_numbers_is_still_a_bad_value(self):
        with pytest.raises(EmbeddingError, match="Line 1 \\(“t1”\\), column d2: “nan” is not a number"):
            emb.parse_embeddings_csv("0.5,nan\n0.2,0.1")


class TestTableEdits:
    def test_random_is_reproducible_and_rounded(self):
        a = emb.random_embeddings(4, 5, seed=7)
        assert a == emb.random_embeddings(4, 5, seed=7) != emb.random_embeddings(4, 5, seed=8)
        assert all(0 <= v < 1 and round(v, 2) == v for row in a for v in row)
        with pytest.raises(EmbeddingError):
            emb.random_embeddings(65, 3, 0)

    def test_random_leaves_the_global_rng_alone(self):
        torch.manual_seed(0)
        expected = torch.rand(3)
        torch.manual_seed(0)
        emb.random_embeddings(6, 3, 1)
        assert torch.equal(torch.rand(3), expected)

    def test_add_and_remove_dimensions(self):
        wider = emb.add_dimension(BOOK)
        assert [row[-1] for row in wider] == [0.0] * 6 and len(wider[0]) == 4
        assert emb.remove_dimension(wider) == BOOK
        with pytest.raises(EmbeddingError, match="at least one dimension"):
            emb.remove_dimension([[1.0], [2.0]])
        with pytest.raises(EmbeddingError, match="already 64"):
            emb.add_dimension([[0.0] * 64])

    def test_resized_tokens(self):
        assert emb.resized_tokens(["a", "b"], 4) == ["a", "b", "tok3", "tok4"]
        assert emb.resized_tokens(["a", "b", "c"], 1) == ["a"]


# ----------------------------------------------------------------------------- settings
class TestSettings:
    def test_defaults_are_the_book(self):
        s = WalkthroughSettings()
        assert s.tokens == list(wt.BOOK_TOKENS) and s.embeddings == BOOK and s.query == 1
        assert s.problems() == [] and wt.settings_equal_book(s)
        assert core_settings.to_params(s) == {}

    def test_url_round_trip_of_everything(self):
        s = WalkthroughSettings(tokens=["a", "b", "c"], embeddings=[[1.0, 2.0], [3.0, 4.0], [5.0, 1e30]],
                                query=2, step="context", d_out=4, weight_seed=5, variant="v2",
                                qkv_bias=True, causal=False, dropout_p=0.35, dropout_seed=9,
                                train_mode=True, num_heads=4, same_init=True, predict=True,
                                heads_d_out=8, heads_seed=7, qk_scale=2,
                                custom_weights=[[[1.0] * 4] * 2] * 3)
        params = core_settings.to_params(s)
        back, errors = core_settings.from_params(WalkthroughSettings, params)
        assert errors == [] and back == s

    def test_big_table_fits_in_a_link(self):
        s = WalkthroughSettings(tokens=[f"t{i}" for i in range(64)],
                                embeddings=emb.random_embeddings(64, 64, 3))
        params = core_settings.to_params(s)
        assert len(params["embeddings"]) < core_settings.MAX_PARAM_CHARS
        back, errors = core_settings.from_params(WalkthroughSettings, params)
        assert errors == [] and back.embeddings == s.embeddings

    @pytest.mark.parametrize("params, fragment", [
        ({"embeddings": "[[1,2],[3]]", "tokens": '["a","b"]'}, "embeddings"),
        ({"embeddings": "[[1e400,2]]", "tokens": '["a"]'}, "embeddings"),
        ({"tokens": '["a","b"]'}, "2 token names for 6"),
        ({"custom_weights": "[[[1]],[[1,2]],[[1]]]"}, "custom_weights"),
    ])
    def test_bad_links_fall_back_to_defaults(self, params, fragment):
        obj, errors = core_settings.from_params(WalkthroughSettings, params)
        assert obj == WalkthroughSettings()
        assert any(fragment in e for e in errors)

    def test_out_of_range_values_fall_back_per_field(self):
        obj, errors = core_settings.from_params(WalkthroughSettings, {
            "dropout_p": "0.95", "step": "nope", "num_heads": "0", "query": "3"})
        assert obj.dropout_p == 0.0 and obj.step == "scores" and obj.num_heads == 2
        assert obj.query == 3 and len(errors) == 3


# ----------------------------------------------------------------------------- page 1
class TestSimpleAttention:
    def test_published_numbers_for_journey(self):
        result = simple_attention.simple_attention(torch.tensor(BOOK, dtype=torch.float64), 1)
        expected_w = [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581]
        expected_z = [0.4419, 0.6515, 0.5683]
        assert [round(v, 4) for v in result.attn_weights.tolist()] == expected_w
        assert [round(v, 4) for v in result.context_vec.tolist()] == expected_z
        assert [round(v, 4) for v in result.attn_scores.tolist()] == \
            [0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865]
        assert result.loop_vs_matmul < 1e-15 and result.row_vs_single < 1e-15
        assert torch.allclose(result.contributions.sum(dim=0), result.context_vec)

    def test_plain_normalisation_undefined_and_negative(self):
        zero = simple_attention.simple_attention(torch.tensor([[1.0, 0.0], [-1.0, 0.0]], dtype=torch.float64), 0)
        assert zero.attn_weights_plain is None and "divides by zero" in zero.plain_note
        assert torch.isfinite(zero.attn_weights).all()
        negative = simple_attention.simple_attention(torch.tensor([[1.0], [-0.5]], dtype=torch.float64), 0)
        assert negative.attn_weights_plain is not None and "negative" in negative.plain_note

    def test_huge_values_stay_finite(self):
        x = torch.tensor([[1e30, 0.0], [2e30, 0.0], [0.0, 1e30]], dtype=torch.float64)
        result = simple_attention.simple_attention(x, 0)
        assert torch.isfinite(result.attn_weights).all() and torch.isfinite(result.all_weights).all()
        assert result.attn_weights.max() == pytest.approx(1.0)
        assert simple_attention.sdpa_check_simple(x, result.all_context).agrees
        x100 = torch.full((64, 64), 1e100, dtype=torch.float64)
        assert torch.isfinite(simple_attention.simple_attention(x100, 3).all_weights).all()

    def test_one_token(self):
        result = simple_attention.simple_attention(torch.tensor([[2.0]], dtype=torch.float64), 0)
        assert result.attn_weights.tolist() == [1.0] and result.context_vec.tolist() == [2.0]

    def test_sdpa_agrees_and_detects_a_difference(self):
        x = torch.tensor(BOOK, dtype=torch.float64)
        result = simple_attention.simple_attention(x, 1)
        assert simple_attention.sdpa_check_simple(x, result.all_context).agrees
        wrong = simple_attention.sdpa_check_simple(x, result.all_context + 1e-3)
        assert not wrong.agrees and wrong.max_diff == pytest.approx(1e-3)

    def test_argmax_ties(self):
        assert wt.argmax_tokens(torch.tensor([0.2, 0.4, 0.4])) == [1, 2]


# ----------------------------------------------------------------------------- page 2
class TestProjections:
    def x(self):
        return torch.tensor(BOOK, dtype=torch.float64)

    def test_book_v1_and_v2_first_rows(self):
        for variant, seed, first in (("v1", 123, wt.BOOK_V1_FIRST_ROW), ("v2", 789, wt.BOOK_V2_FIRST_ROW)):
            s = WalkthroughSettings(variant=variant, weight_seed=seed)
            projection = self_attention.projection_for(s, 3)
            steps = self_attention.self_attention(self.x(), projection)
            assert wt.book_rows_match(steps.context_vec, [first])
            assert wt.book_reference(s, "self")[1] == [first]
            module = self_attention.projection_module(projection, False)
            assert self_attention.module_check(module, self.x(), steps.context_vec) < 1e-12
            assert wt.sdpa_check(steps).agrees

    def test_seed_leaves_global_rng_alone(self):
        torch.manual_seed(0)
        expected = torch.rand(2)
        torch.manual_seed(0)
        self_attention.seeded_projection(3, 2, "v2", 5, True)
        assert torch.equal(torch.rand(2), expected)

    def test_bias_only_for_v2(self):
        assert self_attention.projection_for(WalkthroughSettings(variant="v1", qkv_bias=True), 3).b_query is None
        p = self_attention.projection_for(WalkthroughSettings(variant="v2", qkv_bias=True), 3)
        assert p.b_query.shape == (2,)
        steps = self_attention.self_attention(self.x(), p)
        assert self_attention.module_check(self_attention.projection_module(p, True), self.x(), steps.context_vec) < 1e-12

    def test_custom_weights_used_when_they_fit(self):
        W = [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]
        s = WalkthroughSettings(custom_weights=[W, W, W])
        p = self_attention.projection_for(s, 3)
        assert p.edited and p.W_query.tolist() == W
        steps = self_attention.self_attention(self.x(), p)
        assert torch.allclose(steps.queries, self.x()[:, :2])
        s.d_out = 3
        p = self_attention.projection_for(s, 3)
        assert not p.edited and "(3, 2)" in p.note and "(3, 3)" in p.note

    def test_validate_weight_table(self):
        frame = emb.weight_frame(torch.zeros(3, 2, dtype=torch.float64))
        assert emb.validate_weight_table(frame, "W_q", (3, 2)) == [[0.0, 0.0]] * 3
        bad = frame.astype(object)
        bad.iloc[1, 1] = "x"
        with pytest.raises(EmbeddingError, match="W_q row in 2, column out 2: “x”"):
            emb.validate_weight_table(bad, "W_q", (3, 2))
        with pytest.raises(EmbeddingError, match="shape"):
            emb.validate_weight_table(frame, "W_q", (3, 3))

    def test_overflowing_scores_give_finite_weights(self):
        W = [[1e100, 1e100]] * 3
        s = WalkthroughSettings(custom_weights=[W, W, W], embeddings=[[1e100] * 3] * 6)
        steps = self_attention.self_attention(torch.tensor(s.embeddings, dtype=torch.float64), self_attention.projection_for(s, 3))
        assert torch.isfinite(steps.attn_weights).all()

    def test_overflow_to_nan_is_a_clear_error(self):
        Wq, Wk = [[1e100, 1e100]] * 3, [[1e100, -1e100]] * 3  # q·k = (+inf) + (-inf)
        s = WalkthroughSettings(custom_weights=[Wq, Wk, Wq], embeddings=[[1e100] * 3] * 6)
        with pytest.raises(ValueError, match="too large"):
            self_attention.self_attention(torch.tensor(s.embeddings, dtype=torch.float64), self_attention.projection_for(s, 3))


class TestScaling:
    def test_unscaled_softmax_slides_to_one_hot(self):
        table = self_attention.scaling_table(seed=0)
        raw = table[table["kind"] == "softmax(q·k)"].set_index("d_k")["max_weight"]
        scaled = table[table["kind"] == "softmax(q·k / √d_k)"].set_index("d_k")["max_weight"]
        assert raw[512] > 0.9 and raw[512] > raw[2] + 0.3
        assert (scaled < 0.6).all()

    def test_score_spread_grows_like_sqrt_dk(self):
        peak = self_attention.softmax_peak(256, seed=1)
        assert peak["score_std"] == pytest.approx(16, rel=0.2)
        assert peak["scaled_std"] == pytest.approx(1, rel=0.2)
        assert sum(peak["row_scaled"]) == pytest.approx(1.0)

    def test_one_draw_serves_both_softmaxes(self):
        run = self_attention.scaling_run(64, seed=2, num_sequences=8, num_tokens=5)
        assert run.queries.shape == run.keys.shape == (8, 5, 64) and run.attn_scores.shape == (8, 5, 5)
        assert torch.allclose(run.attn_scores, run.queries @ run.keys.transpose(-2, -1))
        assert torch.allclose(run.scaled, torch.softmax(run.attn_scores / 8, dim=-1))
        assert torch.equal(self_attention.scaling_run(64, seed=2, num_sequences=8, num_tokens=5).queries,
                           run.queries)  # seeded
        assert not torch.equal(self_attention.scaling_run(64, seed=3, num_sequences=8,
                                                          num_tokens=5).queries, run.queries)

    def test_slides_numbers(self):
        logits, soft, soft100 = self_attention.slide_logits()
        assert [round(v, 2) for v in soft] == [0.18, 0.25, 0.07, 0.17, 0.24, 0.09]
        assert [round(v, 2) for v in soft100] == [0.0, 0.99, 0.0, 0.0, 0.01, 0.0]


# ----------------------------------------------------------------------------- page 3
class TestCausal:
    def steps(self, **changes):
        s = WalkthroughSettings(**{"variant": "v2", "weight_seed": 123, **changes})
        x = torch.tensor(s.embeddings, dtype=torch.float64)
        p = self_attention.projection_for(s, x.shape[1])
        return s, x, p, causal_attention.causal_attention(x, p, s)

    def test_book_causal_rows_and_module(self):
        s, x, p, steps = self.steps()
        assert wt.book_rows_match(steps.context_vec, wt.BOOK_CAUSAL_ROWS)
        module = causal_attention.causal_module(p, 6, 0.0, False)
        assert self_attention.module_check(module, x, steps.context_vec, batched=True) < 1e-12
        assert wt.sdpa_check(steps).agrees

    def test_masking_orders(self):
        _, _, _, steps = self.steps()
        orders = causal_attention.masking_orders(steps.scaled_scores[0], steps.mask)
        assert orders.max_diff < 1e-12 and orders.undefined_rows == []
        assert causal_attention.rows_sum_to_one(orders.before) and causal_attention.rows_sum_to_one(orders.after_renorm)
        sums = orders.row_sums()["after_no_renorm"]
        assert all(v < 1 - 1e-6 for v in sums[:-1]) and sums[-1] == pytest.approx(1.0)
        assert not causal_attention.rows_sum_to_one(orders.after_no_renorm)

    def test_renormalising_an_underflowed_row_is_flagged_not_nan(self):
        scores = torch.tensor([[0.0, 1e4], [0.0, 0.0]], dtype=torch.float64)
        orders = causal_attention.masking_orders(scores, torch.tensor([[False, True], [False, False]]))
        assert orders.undefined_rows == [0]
        assert torch.isfinite(orders.after_renorm).all()
        assert orders.before[0].tolist() == [1.0, 0.0]

    def test_dropout_view(self):
        _, _, _, steps = self.steps(dropout_p=0.5, dropout_seed=3, train_mode=True)
        view = causal_attention.dropout_view(steps)
        assert view.active and view.scale == 2.0 and 0 < view.n_dropped < view.n_visible == 21
        kept = view.keep & ~steps.mask
        assert torch.allclose(view.dropped_weights[kept], view.weights[kept] * 2)
        assert (view.dropped_weights[~view.keep] == 0).all()
        other = causal_attention.dropout_view(self.steps(dropout_p=0.5, dropout_seed=4, train_mode=True)[3])
        assert not torch.equal(other.keep, view.keep)
        assert wt.sdpa_check(steps).agrees  # compared before dropout, and says so
        assert "before dropout" in wt.sdpa_check(steps).note

    def test_eval_mode_ignores_dropout(self):
        _, _, _, steps = self.steps(dropout_p=0.5, train_mode=False)
        view = causal_attention.dropout_view(steps)
        assert not view.active and view.n_dropped == 0
        assert torch.equal(view.dropped_weights, view.weights)

    def test_mask_off(self):
        _, _, _, steps = self.steps(causal=False)
        assert not steps.mask.any() and (steps.attn_weights[0] > 0).all()

    def test_dropout_is_the_books_nn_dropout_draw(self):
        """The page drops exactly the weights nn.Dropout drops after torch.manual_seed(seed)."""
        for p, seed in ((0.5, 3), (0.1, 0), (0.9, 123)):
            keep = causal_attention.book_dropout_keep((1, 6, 6), p, seed)
            weights = torch.rand(1, 6, 6, dtype=torch.float64) + 0.5  # (1, T, T), none zero
            with seeded(seed):
                draw = torch.nn.Dropout(p).train()(weights)
            assert torch.equal(keep, draw != 0)

    def test_the_books_class_in_training_mode_gives_the_same_numbers(self):
        s, x, p, steps = self.steps(dropout_p=0.5, dropout_seed=3, train_mode=True)
        bundle = causal_attention.causal_page(x, p, s, False)
        assert bundle.train_module_diff is not None and bundle.train_module_diff < 1e-12
        assert bundle.module_diff < 1e-12
        assert causal_attention.dropout_view(bundle.steps).n_dropped > 0
        # a different seed drops other weights, so the comparison could fail
        other = causal_attention.causal_attention(x, p, dataclasses.replace(s, dropout_seed=4))
        module = causal_attention.causal_module(p, 6, 0.5, False)
        assert causal_attention.module_check_train(module, x, other.context_vec, 3) > 1e-3
        assert causal_attention.module_check_train(module, x, other.context_vec, 4) < 1e-12

    def test_no_training_check_without_dropout_or_mask(self):
        s, x, p, _ = self.steps(dropout_p=0.5, train_mode=False)
        assert causal_attention.causal_page(x, p, s, False).train_module_diff is None
        s, x, p, _ = self.steps(dropout_p=0.5, train_mode=True, causal=False)
        bundle = causal_attention.causal_page(x, p, s, False)
        assert bundle.module_diff is None and bundle.train_module_diff is None


    @pytest.mark.parametrize("causal", [True, False])
    @pytest.mark.parametrize("train_mode, p", [(False, 0.0), (False, 0.5), (True, 0.0), (True, 0.5)])
    def test_step_words_follow_mask_and_dropout(self, causal, train_mode, p):
        s = WalkthroughSettings(causal=causal, train_mode=train_mode, dropout_p=p)
        words = [causal_attention.scores_words(causal), causal_attention.mask_words(causal),
                 causal_attention.masked_words(causal), causal_attention.weights_words(causal),
                 causal_attention.dropout_words(s), causal_attention.context_words(s)]
        said = " ".join(f"{w.title} {w.caption} {w.text}" for w in words)
        mask_claims = ("above the diagonal", "−∞", "Masked softmax", "hidden by the mask", "after masking")
        assert all((claim in said) == causal for claim in mask_claims), said
        active = train_mode and p > 0
        assert causal_attention.dropout_active(s) == active
        for claim in ("✕ = dropped", "weights after dropout", "Dropout either dropped", "dropout(A) V"):
            assert (claim in said) == (active and (causal or claim != "Dropout either dropped")), claim
        if not active:
            assert ("eval mode" if not train_mode else "p = 0") in said


# ----------------------------------------------------------------------------- page 4
class TestMultiHead:
    def test_head_choices(self):
        assert multi_head.head_choices(12) == [1, 2, 3, 4, 6, 12]
        assert multi_head.head_choices(1) == [1]
        assert multi_head.nearest_heads(12, 5) == 4 and multi_head.nearest_heads(7, 3) == 1

    def test_book_wrapper_and_the_three_classes_agree(self):
        s = WalkthroughSettings(heads_d_out=4, num_heads=2, heads_seed=123, qk_scale=1)
        x = torch.tensor(BOOK, dtype=torch.float64)
        result = multi_head.multi_head(x, s, 2)
        assert wt.book_rows_match(result.steps.context_vec, [wt.BOOK_WRAPPER_FIRST_ROW])
        assert wt.book_reference(s, "multi") is not None
        assert result.impl_diff < 1e-12 and wt.sdpa_check(result.steps).agrees
        assert result.fused_diff < 1e-12  # the fused-qkv class (course document 002) agrees too
        torch.testing.assert_close(result.fused_out, result.mha_out, rtol=0, atol=1e-12)
        assert result.module_diff < 1e-12  # the page's steps = MultiHeadAttention.forward
        assert result.steps.output.shape == (6, 4) and result.head_dim == 2
        assert result.head_diffs[0] == 0 and result.head_diffs[1] > 1e-3

    def test_same_init_gives_identical_heads(self):
        s = WalkthroughSettings(heads_d_out=6, num_heads=3, same_init=True)
        result = multi_head.multi_head(torch.tensor(BOOK, dtype=torch.float64), s, 3)
        assert result.head_diffs == [0.0, 0.0, 0.0]
        assert torch.equal(result.head_W_query[0], result.head_W_query[2])

    def test_training_mode_drops_as_the_books_class_does(self):
        for causal in (True, False):
            s = WalkthroughSettings(heads_d_out=4, num_heads=2, train_mode=True, dropout_p=0.5,
                                    dropout_seed=3, causal=causal)
            result = multi_head.multi_head(torch.tensor(BOOK, dtype=torch.float64), s, 2)
            assert result.steps.training and not result.steps.dropout_keep.all()
            assert result.train_module_diff is not None and result.train_module_diff < 1e-12
            eval_result = multi_head.multi_head(torch.tensor(BOOK, dtype=torch.float64),
                                                dataclasses.replace(s, train_mode=False), 2)
            assert eval_result.train_module_diff is None
            assert (result.steps.output - eval_result.steps.output).abs().max() > 1e-3  # dropout acts

    def test_mask_off_follows_the_setting(self):
        s = WalkthroughSettings(heads_d_out=4, num_heads=2, causal=False)
        result = multi_head.multi_head(torch.tensor(BOOK, dtype=torch.float64), s, 2)
        assert not result.steps.causal and (result.steps.attn_weights > 0).all()
        assert result.impl_diff < 1e-12  # the class comparison stays causal, as both classes are

    def test_default_heads_differ_visibly(self):
        # the lesson is about heads that differ: by default, at 2 and at 4 heads, the two most
        # alike heads still differ by at least 0.5 somewhere on the 0..1 colour scale
        x = torch.tensor(BOOK, dtype=torch.float64)
        s = WalkthroughSettings()
        assert s.heads_d_out == 4 and multi_head.head_choices(s.heads_d_out) == [1, 2, 4]
        for num_heads in (2, 4):
            result = multi_head.multi_head(x, dataclasses.replace(s, num_heads=num_heads), num_heads)
            assert multi_head.smallest_pair_difference(result.steps.attn_weights) > 0.5
            assert result.impl_diff < 1e-12 and result.module_diff < 1e-12  # scaled, still the book's classes
        # at the book's initial weights no seed gets there: the maps are nearly uniform
        book_init = dataclasses.replace(s, qk_scale=1)
        for seed in range(50):
            result = multi_head.multi_head(x, dataclasses.replace(book_init, heads_seed=seed), 2)
            assert multi_head.smallest_pair_difference(result.steps.attn_weights) < 0.15

    def test_qk_scale_multiplies_the_scores(self):
        x = torch.tensor(BOOK, dtype=torch.float64)
        s = WalkthroughSettings(qk_scale=1, qkv_bias=True)
        base = multi_head.multi_head(x, s, 2).steps
        scaled = multi_head.multi_head(x, dataclasses.replace(s, qk_scale=4), 2).steps
        assert torch.allclose(scaled.attn_scores, 16 * base.attn_scores, atol=1e-12)
        assert torch.equal(scaled.values_h, base.values_h)  # W_v is left alone

    def test_words_name_heads_and_dropout_truly(self):
        one = WalkthroughSettings(num_heads=1)
        assert multi_head.describe_heads(one, 1).startswith("1 head of head_dim 4 = d_out 4")
        assert "2 heads × head_dim 2 = d_out 4" in multi_head.describe_heads(WalkthroughSettings(), 2)
        for train_mode, p in ((False, 0.5), (True, 0.0)):
            s = WalkthroughSettings(train_mode=train_mode, dropout_p=p)
            assert "dropout" not in multi_head.describe_heads(s, 2) + multi_head.map_caption(s, 0)
        s = WalkthroughSettings(train_mode=True, dropout_p=0.5)
        assert "before dropout" in multi_head.map_caption(s, 0)
        assert "Same initial weights** is on" in multi_head.why_words(
            WalkthroughSettings(same_init=True), 2)
        assert "scale 1" in multi_head.why_words(WalkthroughSettings(qk_scale=1), 2)

    def test_heads_must_divide(self):
        with pytest.raises(ValueError, match="divisible"):
            multi_head.build_wrapper(3, 4, 3, 6, 0.0, False, 0, False)


# ----------------------------------------------------------------------------- formatting, ids
class TestFormatting:
    def test_shapes(self):
        assert wt.shape_text(torch.zeros(6, 2)) == "(6, 2)"
        assert wt.shape_text(torch.zeros(6)) == "(6,)"

    def test_numbers(self):
        assert wt.fmt_number(0.13851) == "0.1385"
        assert wt.fmt_number(1e30) == "1.00e+30"
        assert wt.fmt_number(-math.inf) == "−∞"
        assert fmt.latex_number(1e30) == r"1.00 \times 10^{30}"

    def test_latex_text_escapes(self):
        assert fmt.latex_text("a_b$") == r"a\_b\$"

    def test_worked_examples(self):
        text = fmt.dot_product_latex([0.55, 0.87, 0.66], [0.43, 0.15, 0.89], 0.9544, 2, 1)
        assert "0.55 \\cdot 0.43" in text and "0.9544" in text
        long = fmt.dot_product_latex([1.0] * 10, [1.0] * 10, 10.0, 1, 1)
        assert "6 more" in long

    def test_query_moved_text_numbers_tokens_from_one(self):
        assert wt.query_moved_text(10, 5, list(wt.BOOK_TOKENS)) == (
            "Query token x^(11) does not exist: there are 6 tokens, so the last one, "
            "“step” · x^(6), is used.")
        assert "the only one, “a” · x^(1)" in wt.query_moved_text(3, 0, ["a"])
        assert "the first one, “a” · x^(1)" in wt.query_moved_text(-1, 0, ["a", "b"])

    def test_question_id_changes_with_inputs(self):
        a = wt.question_id("top", [1, 2], 0)
        assert a == wt.question_id("top", [1, 2], 0) != wt.question_id("top", [1, 2], 1)


# ----------------------------------------------------------------------------- charts
class TestCharts:
    """The walkthrough draws with viz.heatmap and viz.grouped_bars (tested in test_viz); here: the
    options the pages use, and the lesson-specific charts of core/viz/lessons.py."""

    def test_heatmap_is_valid_vega_lite_with_values_and_special_cells(self):
        special = np.array([["", "−∞"], ["", ""]], dtype=object)
        chart = viz.heatmap([[1.0, -np.inf], [0.5, 0.25]], ["a", "b"], ["a", "b"], title="t",
                            fmt=wt.number_format([1.0], 2), special=special, highlight_row=1,
                            x_on_top=True)
        spec = chart.to_dict(validate=True)
        frame = chart.data
        assert list(frame["label"]) == ["1.00", "−∞", "0.50", "0.25"]
        assert list(frame["finite"]) == [True, False, True, True]
        assert len(spec["layer"]) == 3 and lesson_charts.values_written(chart)
        assert viz.themed(chart).to_dict()["autosize"] == {"type": "pad"}

    def test_dense_heatmap_hides_values(self):
        big = np.random.default_rng(0).random((32, 32))
        names = [f"t{i}" for i in range(32)]
        chart = viz.heatmap(big, names, names)
        assert len(chart.to_dict(validate=True)["layer"]) == 1  # no text layer
        assert not lesson_charts.values_written(chart)
        assert lesson_charts.values_written(viz.heatmap(np.eye(6), names[:6], names[:6], fmt=".4f"))

    def test_bars(self):
        chart = viz.grouped_bars({"softmax": [0.2, 0.8], "plain": [0.5, 0.5]}, ["a", "a"])
        spec = chart.to_dict(validate=True)
        assert list(chart.data["label"]) == ["a #0", "a #1", "a #0", "a #1"]
        assert spec["layer"][0]["encoding"]["xOffset"]["field"] == "kind"
        many = viz.bar_chart(np.arange(40.0), [str(i) for i in range(40)])
        assert len(many.to_dict(validate=True)["layer"]) == 1

    def test_scaling_chart(self):
        spec = lesson_charts.scaling_chart(self_attention.scaling_table(), chosen=64).to_dict(validate=True)
        assert len(spec["layer"]) == 2
        assert spec["layer"][0]["encoding"]["x"]["scale"] == {"type": "log", "base": 2}

    def test_themed_copies_leave_the_original_alone(self):
        chart = viz.heatmap(np.eye(2), ["a", "b"], ["a", "b"])
        themed = viz.themed(chart, lecture=True)
        assert themed.to_dict()["config"]["axis"]["labelFontSize"] >= viz.LECTURE_MIN_AXIS_PX
        assert "axis" not in chart.to_dict().get("config", {})


class TestCheckEmbeddings:
    """emb.check_embeddings: the verdict of validate_embedding_table, kept per content."""

    def test_same_verdict_as_the_full_check_and_copies_that_do_not_share_lists(self):
        direct = emb.validate_embedding_table(book_frame())
        first = emb.check_embeddings(wt.BOOK_TOKENS, BOOK)
        assert (first.tokens, first.embeddings, first.warnings) == (direct.tokens, direct.embeddings,
                                                                    direct.warnings)
        first.embeddings[0][0] = 99.0
        first.tokens[0] = "changed"
        again = emb.check_embeddings(wt.BOOK_TOKENS, BOOK)
        assert again.embeddings == direct.embeddings and again.tokens == direct.tokens

    def test_a_bad_table_raises_every_time_with_the_same_message(self):
        rows = [[0.1, float("nan")], [0.2, 0.3]]
        messages = []
        for _ in range(2):
            with pytest.raises(EmbeddingError) as info:
                emb.check_embeddings(["a", "b"], rows)
            messages.append(str(info.value))
        assert messages[0] == messages[1] and messages[0].startswith("Row 1")

    def test_a_change_of_one_cell_is_judged_afresh(self):
        good = emb.check_embeddings(["a", "b"], [[1.0, 2.0], [3.0, 4.0]])
        assert good.warnings == []
        huge = emb.check_embeddings(["a", "b"], [[1.0, 2.0], [3.0, 4e7]])
        assert any("Very large" in w for w in huge.warnings)
        with pytest.raises(EmbeddingError):
            emb.check_embeddings(["a", "b"], [[1.0, 2.0], [3.0]])  # ragged rows


def test_type_hints_are_worked_out_once_per_class():
    core_settings.type_hints.cache_clear()
    assert core_settings.field_type(wt.WalkthroughSettings, "query") is int
    core_settings.field_type(wt.WalkthroughSettings, "dropout_p")
    info = core_settings.type_hints.cache_info()
    assert (info.misses, info.hits) == (1, 1)
