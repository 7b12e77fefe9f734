"""'Show the code' is literally true: every function a page shows the source of ran in that run.

Each case opens a page (one case per walkthrough step, plus training mode with dropout, plus the
small LM before and while training, plus pages 7-9 and every pitfall of page 10), clears every
cache first (Streamlit's and the lru_caches of core/ and ui/), and runs the page under a profiler
hook that records every Python function called in the script thread. The test fails if a function
(or, for a class, its `__init__` / `forward`) whose source the run put on screen
(`ui.code.show_code`, or `ui.code.note_shown` for a page that lays out source its own way) never
ran: the page would show code that did not compute the numbers beside it. A live-training page
computes its curves over the runs of the training, so its training case profiles Start and every
run until the training finishes.
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from benchmarks.harness.apptest import entry_point_every_run
from core import pitfalls as pf, settings as core_settings
from core.lessons import walkthrough as wt
from core.lessons.small_lm import SmallLMSettings
from tests.app.conftest import ENTRY, ROOT, assert_no_exception
from ui import code as ui_code

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: a second thread only waits (tests/conftest.py)

CLASS_METHODS = ("__init__", "forward")  # what "this class ran" means
LESSON_PAGES = {f"pages/{name}.py" for name in ("1_simple_attention", "2_self_attention",
                                                "3_causal_attention", "4_multi_head",
                                                "5_tokens_data", "6_small_lm")}


def _walk(page: str, **fields) -> tuple[str, dict[str, str]]:
    return page, core_settings.to_params(wt.WalkthroughSettings(**fields))


def _cases() -> list:
    cases = []
    for step in wt.SIMPLE_STEPS:
        cases.append(pytest.param(*_walk("pages/1_simple_attention.py", step=step), None,
                                  id=f"1-{step}"))
    for step in wt.SELF_STEPS:
        cases.append(pytest.param(*_walk("pages/2_self_attention.py", sa_step=step), None,
                                  id=f"2-{step}"))
    for variant in ("v1", "v2"):  # the two book classes build the weights differently
        cases.append(pytest.param(*_walk("pages/2_self_attention.py", sa_step="weights",
                                         variant=variant, weight_seed=789), None,
                                  id=f"2-weights-{variant}"))
    for step in wt.CAUSAL_STEPS:
        cases.append(pytest.param(*_walk("pages/3_causal_attention.py", causal_step=step), None,
                                  id=f"3-{step}"))
        # training mode with dropout: the dropout draw and the book's class in train mode
        cases.append(pytest.param(*_walk("pages/3_causal_attention.py", causal_step=step,
                                         train_mode=True, dropout_p=0.5, dropout_seed=3), None,
                                  id=f"3-{step}-train"))
    for step in wt.MULTI_STEPS:
        cases.append(pytest.param(*_walk("pages/4_multi_head.py", mh_step=step), None,
                                  id=f"4-{step}"))
    cases.append(pytest.param(*_walk("pages/4_multi_head.py", mh_step="heads", train_mode=True,
                                     dropout_p=0.5), None, id="4-heads-train"))
    cases.append(pytest.param("pages/5_tokens_data.py", {}, None, id="5"))
    small = core_settings.to_params(SmallLMSettings(max_steps=60))
    cases.append(pytest.param("pages/6_small_lm.py", small, None, id="6-before-training"))
    # a live run: its curves are computed over the runs of the training, so the profiled action
    # is Start and every run until the race finishes (60 steps: one evaluation at step 50)
    cases.append(pytest.param("pages/6_small_lm.py", small, "small_lm.start", id="6-training"))
    # every pitfall (the overview shows no code); the race before training and while it trains
    for key in pf.PITFALLS:
        cases.append(pytest.param("pages/10_pitfalls.py", {"pitfall": key, "optim_steps": "10"}, None,
                                  id=f"10-{key}"))
    cases.append(pytest.param("pages/10_pitfalls.py", {"pitfall": "sgd", "optim_steps": "10"},
                              "pitfalls.race_start", id="10-sgd-training"))
    # the names GPT before anything trained (tests/app/test_gpt_pages_show_code.py: after training)
    cases.append(pytest.param("pages/7_train_gpt.py", {}, None, id="7"))
    for page in ("pages/8_sample_names.py", "pages/9_inside_model.py"):
        cases.append(pytest.param(page, {}, None, id=page.split("/")[1].split("_")[0]))
    return cases


def _clear_caches() -> None:
    """A cold run: nothing the pages or core/ cached may stand in for a computation."""
    st.cache_data.clear()
    st.cache_resource.clear()
    for name, module in list(sys.modules.items()):
        if not (name.startswith("core.") or name.startswith("ui.")):
            continue
        for value in list(vars(module).values()):
            for fn in (value, *(vars(value).values() if inspect.isclass(value) else ())):
                if callable(getattr(fn, "cache_clear", None)) and isinstance(
                        fn, functools._lru_cache_wrapper):
                    fn.cache_clear()


def _profiled(action) -> tuple[set, list]:
    """Run `action()` (an AppTest run) recording every Python code object called, and the
    functions the run passed to show_code."""
    called: set = set()

    def profile(frame, event, arg):
        if event == "call":
            called.add(frame.f_code)

    with ui_code.recording() as shown:
        threading.setprofile(profile)  # the script runs in a thread AppTest starts
        sys.setprofile(profile)
        try:
            action()
        finally:
            sys.setprofile(None)
            threading.setprofile(None)
    return called, shown


def _codes(obj) -> list:
    """The code objects that must have run for `obj` to count as run."""
    if inspect.isclass(obj):
        methods = [vars(obj)[m] for m in CLASS_METHODS if inspect.isfunction(vars(obj).get(m))]
        if not methods:
            methods = [v for v in vars(obj).values() if inspect.isfunction(v)]
        return [inspect.unwrap(m).__code__ for m in methods]
    fn = inspect.unwrap(obj)
    fn = getattr(fn, "__func__", fn)  # bound methods
    return [fn.__code__]


@pytest.mark.parametrize("page, query, click", _cases())
def test_every_function_in_a_code_view_ran(page, query, click):
    entry_point_every_run()  # the page runs under the entry point, as on a server (also when run alone)
    at = AppTest.from_file(ENTRY, default_timeout=180)
    at.query_params.update(query)
    at.run()
    at.switch_page(str(ROOT / page))
    if click:
        at.run()
        assert_no_exception(at)
    _clear_caches()

    def action() -> None:
        if not click:
            at.run()
            return
        at.button(key=click).click().run()
        pause = click.replace("start", "pause")  # a page with a Pause button trains live:
        for _ in range(200):  # run it until its training has finished (Pause greys out)
            if not any(b.key == pause and not b.disabled for b in at.button):
                break
            at.run()
        assert not any(b.key == pause and not b.disabled for b in at.button), "still training"

    called, shown = _profiled(action)
    assert_no_exception(at)
    if page in LESSON_PAGES:  # every step of these lessons has a code view
        assert shown, "the page showed no code at all"
    not_run = [f"{getattr(f, '__module__', '')}.{getattr(f, '__qualname__', f)}" for f in shown
               if not all(code in called for code in _codes(f))]
    assert not not_run, f"shown in a code view but never ran: {not_run}"
