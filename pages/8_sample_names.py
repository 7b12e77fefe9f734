"""Sample names from the session's trained GPT: temperature, top-k, prefix, seed; each name
labelled new / training split / validation split; what the model weighed at every step of one."""

import dataclasses

import streamlit as st

from core import runs
from core.classroom import questions
from core.viz import names_model as names_charts
from core.lessons import sample_names as lesson
from core.models import generate
from core.sampling import label_shares, next_char_distributions, sample_names
from core.settings import count
from ui import class_polls, training
from ui.code import show_code
from ui.layout import friendly_errors
from ui.page_end import end_page
from ui.state import bound, lecture_mode, page_title, refusals_below, set_field, spec_widget, sync_url

PREFIX = "sample"
LAST_KEY = "sample.last_valid"  # the last SampleResult that could be drawn, kept through bad input

page_title("Sample names")
st.markdown(
    "The model writes a name one character at a time: it reads “.” (start), turns its scores for "
    "the 27 characters into probabilities, draws one, appends it, and repeats until it draws “.” "
    "again. **Temperature** divides the scores before the softmax (below 1: safer, more common "
    "names; above 1: wilder ones); **top-k** keeps only the k most likely characters.")

settings, book, run = training.model_page(PREFIX, lesson.SampleSettings, "sample")

with refusals_below():  # refusals under the row, at full width: in a column they pushed the others down
    for col, field in zip(st.columns(5, vertical_alignment="bottom"),  # in line when a label wraps
                          ("n", "temperature", "top_k", "prefix", "seed")):
        with col:  # each control from its field's declaration in SampleSettings (label, bounds, step)
            spec_widget(settings, field, prefix=PREFIX)


def _sampled(run: runs.Run, settings: lesson.SampleSettings) -> lesson.SampleResult:
    """The names for (run, its step, the settings), kept in the session: other reruns are free.
    One result is kept; it is also what the page falls back to when new settings are refused."""
    last = st.session_state.get(LAST_KEY)
    wanted = (run.run_id, run.step, settings.n, settings.temperature, settings.top_k,
              settings.prefix.strip().lower(), settings.seed)
    if last is not None and last.key == wanted:
        return last
    result = lesson.sample_result(run, settings)
    st.session_state[LAST_KEY] = result
    return result


def _link(settings: lesson.SampleSettings, result: lesson.SampleResult | None,
          refused: bool) -> lesson.SampleSettings:
    """What the address bar holds. While the model refuses the settings (a prefix it cannot read),
    a link with them would reopen the error on every reload or share, so it holds the last draw's
    settings (with the name and step in view) or, with no draw yet, the settings less the prefix."""
    if not refused:
        return settings
    if result is None:
        return dataclasses.replace(settings, prefix=lesson.SampleSettings().prefix)
    return dataclasses.replace(result.settings, chosen=settings.chosen, step=settings.step)


ROWS_SHOWN = 20  # the table is as tall as this many names (the default draw), then it scrolls
# The table grid sizes its font and rows in rem, and lecture mode's root font is 20 px, not 16
# (ui.layout.LECTURE_CSS); the heights and widths given to it are px, so they grow as much.
LECTURE_TABLE_SCALE = 20 / 16
# room for the shares chart as drawn (names_model.shares_chart: 280 px of bars, the labels beside
# them, and each bar's "85% (17)"; 400 and 490 px measured in Chromium), so it is never squeezed
SHARES_CHART_PX = {False: 440, True: 530}


def _table_px(px: float, lecture: bool) -> int:
    return round(px * (LECTURE_TABLE_SCALE if lecture else 1))


def table_height(rows: int, lecture: bool) -> int:
    """The header and up to ROWS_SHOWN rows (35 px each at a 16 px root font): a default draw shows
    every name without scrolling inside the table."""
    return _table_px(38 + 35 * max(1, min(rows, ROWS_SHOWN)), lecture)


def text_width(values, px_per_char: float, lecture: bool) -> int:
    """A column as wide as its longest text (the grid sizes a column by its first rows only, so a
    long name further down was cut): `px_per_char` at the grid's 14 px font, plus the padding."""
    longest = max((len(str(v)) for v in values), default=0)
    return _table_px(max(64, px_per_char * longest + 24), lecture)


def _corrected(field: str, value: int, notice: str) -> None:
    """A name or step this draw does not have (from a link, a lesson, or fewer names asked for):
    show `value` instead and say so, rather than quietly showing something else."""
    set_field(PREFIX, field, value)  # a locked field keeps the lesson's value (and so its notice)
    st.warning(notice, icon=":material/warning:")


result, refused = None, True
with friendly_errors("the sampled names"):
    result, refused = _sampled(run, settings), False
if result is None:
    result = st.session_state.get(LAST_KEY)
    if result is None:  # nothing drawn yet: the error above is all there is to show
        sync_url(_link(settings, None, refused))
        end_page()
    # every figure, number and name below is this earlier draw; the caption says which
    st.caption(f"Showing the last names that could be sampled: {result.describe()}.")
    drawn_by = book.get(result.key[0])  # the model that drew them, for the step-by-step below
    if drawn_by is None or drawn_by.step != result.key[1]:
        drawn_by = None  # let go, or trained since: its weights are no longer those of the draw
    run = drawn_by
samples = list(result.samples)

if not class_polls.ask(questions.novel_name()):  # in a class: the labels wait for the poll
    sync_url(_link(settings, result, refused))
    end_page()
shares = label_shares(samples)
m1, m2, m3, m4 = st.columns(4)
m1.metric("Names", len(samples))
m2.metric("New", f"{shares['new']:.0%}",
          help="Not in the names data at all: the model invented them. An empty draw (the model wrote "
               "“.” at once) is no name and is not counted as new.")
# short labels: four metrics share a row, and in lecture mode longer ones were cut ("In the valid…")
m3.metric("Training split", f"{shares['train']:.0%}", help="Names the model trained on.")
m4.metric("Validation split", f"{shares['val']:.0%}",
          help="Real names in the held-out validation split: the model never saw them in training, "
               "it generalised to them.")

# The table as wide as its columns, the chart beside it as wide as it is drawn; where both do not
# fit in a row (1024 px) the chart goes below the table. (Two fifths of the row for the table cut
# longer names, "maliqhelyal", and in lecture mode "axadeem"; half of it shrank the chart's text.)
table, lecture = lesson.samples_table(samples), lecture_mode()
widths = {"name": text_width(table["name"], 8, lecture), "length": _table_px(60, lecture),
          "where": text_width(table["where"], 6.5, lecture)}
with st.container(horizontal=True, gap="medium"):
    st.dataframe(table, hide_index=True, height=table_height(len(table), lecture),
                 width=sum(widths.values()) + _table_px(2 if len(table) <= ROWS_SHOWN else 14, lecture),
                 column_config={"name": st.column_config.TextColumn("name", width=widths["name"]),
                                "length": st.column_config.NumberColumn("length", width=widths["length"]),
                                "where": st.column_config.TextColumn("where", width=widths["where"])})
    with st.container(width=SHARES_CHART_PX[lecture]):
        training.show_cached_chart(
            lambda: names_charts.shares_chart(samples, lecture=lecture), result.key,
            name="Sampled names: new or from the data", key="sample.shares",
            caption=f"Where {len(samples)} sampled names stand against the data: {result.describe()}.")

# ------------------------------------------------------------------ one name, step by step
st.subheader("What the model weighed, step by step")
if run is None:  # the earlier draw's model has changed since: its probabilities cannot be shown
    st.info("The model that drew these names has trained on (or was let go) since, so what it "
            "weighed for them cannot be shown. Correct the setting above to sample from the "
            "current model.", icon=":material/info:")
    sync_url(_link(settings, result, refused))
    end_page()
names = [s.name for s in samples]
chosen, notice = lesson.name_in_range(settings.chosen, names)
if notice:
    _corrected("chosen", chosen, notice)
# to_widget: a locked out-of-range value (set_field leaves it) shows as the name actually taken apart
labels = [f"{name or '(empty)'} ({lesson.LABEL_TITLES[s.label]})" for name, s in zip(names, samples)]
chosen = lesson.name_in_range(
    bound(st.selectbox, "Name to take apart", settings, "chosen", prefix=PREFIX,
          options=list(range(1, len(names) + 1)), to_widget=lambda i: lesson.name_in_range(i, names)[0],
          format_func=lambda i: labels[i - 1], renew_with=labels),  # a new draw: a new box (bound)
    names)[0]
name = names[chosen - 1]  # counted from 1
with friendly_errors("the next-character probabilities"):
    steps = lesson.name_steps(run, name, result.settings.prefix)
    step, notice = lesson.step_in_range(settings.step, name)
    if notice:
        _corrected("step", step, notice)
    if len(name) >= 1:  # an empty name has step 0 only: no slider to move
        step = lesson.step_in_range(
            bound(st.slider, "Step", settings, "step", prefix=PREFIX, min_value=0, max_value=len(name),
                  to_widget=lambda t: lesson.step_in_range(t, name)[0],
                  help="Step t: the model has read “.” and the first t letters and weighs the next one."),
            name)[0]
    training.show_cached_chart(
        lambda: names_charts.step_bars_chart(steps, step, lecture=lecture_mode()),
        (run.run_id, run.step, name, step, steps.given), name="Next-character probabilities at one step",
        key="sample.bars",
        caption=(f"Probability of each next character after “{steps.contexts[step]}” "
                 f"(highlighted: the one that came{', given by the prefix' if steps.was_given(step) else ''}). "
                 f"{run.label}, step {run.step:,}; the distribution before temperature and top-k."))
    given = (f" The first {count(steps.given, 'letter')} came from the prefix “{result.settings.prefix}”, "
             "not from the model: their rows say “(prefix)”." if steps.given else "")
    training.show_cached_chart(
        lambda: names_charts.steps_heatmap(steps, lecture=lecture_mode()),
        (run.run_id, run.step, name, steps.given),
        name="Next-character probabilities at every step", key="sample.heat",
        caption=(f"Every step of “{name}” at once: one row per step (what was read → what came), "
                 f"colour = probability of each next character (0 to 1).{given}"))
    st.dataframe(lesson.steps_table(steps).style.format({"p(next)": "{:.3f}"}), hide_index=True)
    st.caption("Probabilities are the model's own (temperature 1, all 27 characters); sampling with "
               "another temperature or top-k reshapes them before each draw.")

show_code([generate, lesson.sample_result, lesson.sample_for_page, sample_names, label_shares, lesson.name_steps,
           next_char_distributions])
# a refused setting stays in its box to be corrected, but the link keeps the names shown
sync_url(_link(settings, result, refused))
