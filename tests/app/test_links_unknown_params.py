"""AppTest: a link's unknown parameter (a misspelt setting) is named once in a warning of its own,
with a did-you-mean, instead of the page opening with the default and no word."""

from __future__ import annotations

import pytest

from core.classroom.security import escape_markdown
from tests.app.conftest import assert_no_exception, open_page
from tests.app.gpt_helpers import TINY
from ui.state import UNKNOWN_WORDS

TRAIN = "pages/7_train_gpt.py"
SAMPLE = "pages/8_sample_names.py"
NOT_A_SETTING = "(not a setting of this page"

pytestmark = pytest.mark.usefixtures("one_thread")


def unknown_warnings(at) -> list[str]:
    return [w.value for w in at.warning if w.value.startswith(UNKNOWN_WORDS)]


def opened(page: str, **query: str):
    at = open_page(page, query=query)
    assert_no_exception(at)
    return at


def test_a_misspelt_setting_in_a_train_link_is_named_with_a_did_you_mean():
    # TrainSettings has no temperature; "optimiser" is the likely slip for its "optimizer"
    at = opened(TRAIN, optimiser="sgd")
    assert unknown_warnings(at) == [UNKNOWN_WORDS + escape_markdown(
        "optimiser (not a setting of this page; did you mean optimizer?)") + "."]
    assert "sgd" not in unknown_warnings(at)[0]  # the value is never repeated
    assert "could not be used" not in " ".join(w.value for w in at.warning)  # a notice of its own
    assert "optimiser" not in at.query_params  # sync_url keeps the address bar to real settings


def test_a_misspelt_temperature_in_a_sample_link_suggests_temperature():
    at = opened(SAMPLE, tempreature="0.5")
    [warning] = unknown_warnings(at)
    assert "tempreature" in warning and "did you mean temperature?" in warning
    assert "0.5" not in warning


def test_only_the_unknown_names_are_named_and_a_link_of_known_settings_gets_no_warning():
    at = opened(TRAIN, **TINY, optimiser="sgd")
    [warning] = unknown_warnings(at)
    assert all(escape_markdown(name) not in warning for name in TINY)
    assert at.session_state["train"].d_embed == 16  # the known settings were used
    assert unknown_warnings(opened(TRAIN, **TINY)) == []


def test_lecture_mode_and_a_class_code_are_not_unknown():
    at = opened(TRAIN, lecture="1", **{"class": "ABCDEF"}, optimiser="sgd")
    [warning] = unknown_warnings(at)
    assert "optimiser" in warning and "lecture" not in warning and "class" not in warning


def test_the_warning_shows_once_not_on_every_rerun():
    at = opened(TRAIN, optimiser="sgd")
    assert len(unknown_warnings(at)) == 1
    at.run()
    assert_no_exception(at)
    assert unknown_warnings(at) == []


def test_a_name_that_looks_like_markdown_is_shown_literally():
    at = opened(TRAIN, **{"**x**": "1", "[a](http://e)": "1", "#\n# big": "1"})
    [warning] = unknown_warnings(at)
    for name in ("**x**", "[a](http://e)"):
        assert escape_markdown(name) in warning and name not in warning
    assert "](" not in warning and "\n" not in warning and "\\# \\# big" in warning


def test_a_bad_value_quoted_in_the_link_notice_is_shown_literally():
    """The notice for a value a page cannot use quotes the value: an image or link in it is text,
    never Markdown (an image would make every browser that opens the link fetch its address)."""
    at = opened(TRAIN, lr="![i](http://example.invalid/x.png)")
    [warning] = [w.value for w in at.warning if w.value.startswith("Some settings in the link")]
    assert "lr" in warning and "](" not in warning and "\\!\\[i\\]" in warning


def _in_order(block) -> list:
    """The elements of a block, depth first, in the order the page draws them."""
    found = []
    for child in block.children.values():
        found.extend(_in_order(child) if hasattr(child, "children") and child.type in (
            "vertical", "horizontal", "container", "flex_container") or child.type.endswith("block")
            else [child])
    return found


PAGES_WITH_SETTINGS = ["pages/1_simple_attention.py", "pages/4_multi_head.py", "pages/5_tokens_data.py",
                       "pages/6_small_lm.py", TRAIN, SAMPLE, "pages/9_inside_model.py", "pages/10_pitfalls.py"]


@pytest.mark.parametrize("page", PAGES_WITH_SETTINGS, ids=lambda p: p.split("_", 1)[1][:-3])
def test_a_links_notices_come_right_under_the_pages_title(page):
    """Every page puts a link's notices in one place, right under its title: some pages read their
    settings before drawing the title, and their notices came above it (Tokens, Small LM,
    Pitfalls, the walkthrough), others after their introduction."""
    at = opened(page, optimiser="sgd", seed="abc")
    elements = _in_order(at.main)
    kinds = [element.type for element in elements]
    title = kinds.index("title")
    after = [element.value for element in elements[title + 1:title + 3]]
    assert any(str(value).startswith(UNKNOWN_WORDS) for value in after), (kinds[:title + 4], after)
    refused = [w.value for w in at.warning if "could not be used" in w.value]  # pages with a seed
    assert all(value in after for value in refused), (refused, after)
    if page in (TRAIN, "pages/5_tokens_data.py"):  # one page that reads it after its title, one before
        assert refused, [w.value for w in at.warning]
