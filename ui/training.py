"""Live training in Streamlit: the session's runs, the run controls and the ticking fragment.

A `core.runs.RunBook` lives in `st.session_state` (never in a module global), so every session has
its own runs and they are freed when the session ends. Nothing trains on its own in the
background: while the current run is "running", the live fragment (`ui.live.live_fragment`) trains
one short slice per tick (inside a global training slot) and `draw_live` redraws the curve from the
run's history.
A rerun, a widget change or a page switch therefore never loses a run: between ticks it simply
waits in session state, and the next tick (or the next visit to the Train page) carries on.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math

import streamlit as st
from streamlit import dataframe_util

from core import budget, runs, train_settings, viz
from core.settings import count
from core.viz import training as training_charts
from ui import state
from ui.charts import download_buttons, draw_chart
from ui.live import history_lock, leave_queue, live_fragment, session_owner
from ui.page_end import end_page

RUNBOOK_KEY = "gpt.runbook"
TRAIN_PAGE = "pages/7_train_gpt.py"
UPLOAD_KEY = "gpt.upload"
STATUS_TEXT = {
    "idle": "ready to train",
    "running": "training",
    "paused": "paused",
    "stopped": "stopped",
    "done": "finished",
    "error": "stopped on an error",
}


def runbook() -> runs.RunBook:
    """This session's runs (created on first use)."""
    if RUNBOOK_KEY not in st.session_state:
        st.session_state[RUNBOOK_KEY] = runs.RunBook(owner=session_owner())
    return st.session_state[RUNBOOK_KEY]


# ----------------------------------------------------------------------------------- controls


def start_new_run(book: runs.RunBook, settings: train_settings.TrainSettings) -> runs.Run | None:
    """Create a run from `settings` and start it; show why not if it cannot run."""
    try:
        run = book.create(settings)
        runs.start(run)
    except ValueError as exc:
        st.error(f"Training not started: {exc}", icon=":material/block:")
        return None
    if book.dropped:  # kept for the run after the click's st.rerun, which would wipe it here
        st.session_state[DROPPED_KEY] = dropped_words(book)
    return run


DROPPED_KEY = "train.dropped_notice"  # what the last new run let go, shown once after its rerun


def dropped_words(book: runs.RunBook) -> str:
    """What the last new run cost: the trained runs a session's limit let go."""
    return (f"A session keeps {runs.MAX_RUNS} runs, so {', '.join(book.dropped)} "
            f"{'was' if len(book.dropped) == 1 else 'were'} let go (runs that never trained go "
            "first). Download a run's checkpoint (.pt) to keep it.")


PRESET_HELP = {
    "lecture": "Lecture 7's values: SGD at lr 0.01, batch 32, 1,000 steps, dropout 0.1 (converges "
               "slowly, about 2.3 nats/char).",
    "quick_demo": "Two layers of width 64, Muon + AdamW with warm-up and cosine decay, names packed "
                  "into rows, validated on a running average of the weights: a good model (validation "
                  "≈ 1.91 nats/char).",
    "better": "The quick demo's recipe at width 96, trained longer with a slower average of the "
              "weights, ending with its best validation point: about 1.88 nats/char (picked on the "
              "validation split and read there, so a little optimistic).",
    "best": "Width 128 with four heads and strong weight decay, trained longest: about 1.87 nats/char.",
    "class_demo": "For a server a class shares: one layer of width 32 and 400 steps at a higher "
                  "learning rate, a step about a third of the quick demo's. About 2.05 nats/char: "
                  "names that read like names. In a class of 60 on one core with six training, a "
                  "run took about 2 minutes (the quick demo about an hour; docs/HOSTING.md).",
    "gpu": "A larger model with big packed batches, bf16, CUDA graphs and a running average of the "
           "weights: about 1.87 nats/char.",
}
PRESET_NAMES = {"lecture": "Lecture 7", "quick_demo": "Quick demo", "better": "Better", "best": "Best",
                "class_demo": "Class demo", "gpu": "GPU"}


def presets_shown() -> list[str]:
    """The Train page's preset buttons, in order: the class demo only where a class shares the
    server (core.budget), the GPU preset only where a CUDA GPU is (the class challenge's box says
    which of these fit its limits)."""
    from core.device import available_devices

    return ((["class_demo"] if budget.LIMITS.hosted else []) + ["lecture", "quick_demo", "better", "best"]
            + (["gpu"] if available_devices()["cuda"][0] else []))


def preset_button(name: str, device: str) -> tuple[str, str, bool]:
    """(button title, help, disabled) of a preset: its measured wall time on this kind of device
    and where that figure comes from (core.train_settings.PRESET_SECONDS); disabled, with the
    reason in its help, where the preset is larger than this server allows (a hosted class).

    A hosted server's title has no time: there training gets a share of one core, divided among
    everyone training (core.budget), so a run takes many times the machine's figure (a class of 60
    on one core with 6 training: about 20 steps a minute each, docs/HOSTING.md); the help says so."""
    title, help_text = PRESET_NAMES[name], PRESET_HELP[name]
    measured = train_settings.preset_seconds(name, device)
    if measured is not None:
        seconds, where = measured
        help_text = f"{help_text} Measured: {seconds:.0f} s from Start to the last step, {where}."
        if budget.LIMITS.hosted:
            help_text += (" This server is shared by a class: training gets part of it, divided "
                          "among everyone training, so here it takes longer (the progress line "
                          "shows the time left).")
        else:
            title = f"{title} (~{_fmt_duration(seconds)})"
    too_large = train_settings.preset_size_problems(name, device)
    if too_large:
        help_text = (f"**Not on this server:** {' '.join(too_large)} Run the app on your own machine "
                     f"for this preset. {help_text}")
    return title, help_text, bool(too_large)


def _fmt_duration(seconds: float) -> str:
    """30 -> "30 s", 200 -> "3½ min": how long a preset takes, rounded for a button."""
    if seconds < 90:
        return f"{max(5, round(seconds / 5) * 5):.0f} s"
    halves = round(seconds / 30)
    return f"{halves // 2}{'½' if halves % 2 else ''} min"


def settings_summary(settings: train_settings.TrainSettings, n_params: int | None,
                     shown: runs.Run | None = None) -> str:
    """One line: the preset the settings match and the main numbers (shown beside the presets).
    With a run `shown` below that was trained with other settings, the line says it is about the
    next run: "Preset: quick demo" over a run of custom settings read as a contradiction."""
    matched = train_settings.matching_preset(settings)
    name = train_settings.PRESET_TITLES[matched] if matched else "custom"
    preset = (f"Next run: **{name}**" if shown is not None and shown.settings != settings
              else f"Preset: **{name}**")
    parts = [f"{count(settings.n_layer, 'layer')} × {count(settings.n_head, 'head')}, width {settings.d_embed}"]
    if n_params is not None:
        parts.append(f"{n_params:,} parameters")
    parts.append(f"{settings.max_steps:,} steps")
    return preset + " · " + " · ".join(parts)


def run_state(run: runs.Run | None) -> str:
    """What the controls offer: "none" (no run), "running", "paused" (can resume) or "ended"
    (stopped, finished, failed or out of steps: it can only train N more steps)."""
    if run is None:
        return "none"
    if run.status == "running":
        return "running"
    if run.status in ("paused", "idle") and not run.trainer.done:
        return "paused"
    return "ended"


def run_controls(book: runs.RunBook, settings: train_settings.TrainSettings, *, blocked: bool) -> None:
    """The current run's controls, only those that apply to its state, each saying what it does:

    * running: Pause, Stop here;
    * paused:  Resume (from this step), Stop here;
    * ended (stopped, finished, failed): Train N more steps (with the box for N);
    * always: Start (named "New run" once there is a run: "Start" beside a finished run read as
      "start this one again"), Break it (a new run with the mask off).
    Forgetting runs is below the chart (`forget_run_buttons`), away from the buttons of a lecture.

    Each click reruns the whole page, so the ticking fragment starts or stops with it."""
    run = book.current
    state_now = run_state(run)
    dropped = st.session_state.pop(DROPPED_KEY, None)
    if dropped:
        st.info(dropped, icon=":material/info:")
    if not blocked:
        _warn_before_letting_go(book)
    # a refused "More steps" is said under the buttons, not in its 150 px (state.refusals_below)
    with state.refusals_below(), st.container(horizontal=True, vertical_alignment="bottom"):
        if state_now == "running":
            if st.button("Pause", key="train.pause", icon=":material/pause:", type="primary",
                         help="Pause here; Resume carries on from this step."):
                runs.pause(run)
                leave_queue()
                st.rerun()
            _stop_button(run)
        elif state_now == "paused":
            if st.button("Resume", key="train.resume", type="primary", icon=":material/play_arrow:",
                         help=f"Carry on training this run from step {run.step:,} to step "
                              f"{run.max_steps:,}."):
                if _resume(run):
                    st.rerun()
            _stop_button(run)
        elif state_now == "ended":
            _more_steps(run)
        first = state_now == "none"  # the first run is "Start"; beside a run (ended too) it is "New run"
        if st.button("Start" if first else "New run", key="train.start",
                     type="primary" if first else "secondary",
                     icon=":material/play_arrow:" if first else ":material/add:", disabled=blocked,
                     help="Start a new run: train a new model with the settings above; earlier "
                          "runs stay on the chart (a run in progress is paused)."):
            if start_new_run(book, settings) is not None:
                st.rerun()  # otherwise the error stays on screen
        if st.button("Break it", key="train.break", icon=":material/heart_broken:",
                     disabled=blocked, help="Start a new run of the same model with the causal "
                     "mask off: each position can read the character it must predict."):
            broken = dataclasses.replace(settings, causal=False)
            if start_new_run(book, broken) is not None:
                st.rerun()


def _warn_before_letting_go(book: runs.RunBook) -> None:
    """When the next new run would let a trained run go: say so before the click, with that run's
    checkpoint to download (the Download button under the chart is the current run's only)."""
    going = book.next_to_go()
    if going is None:
        return
    with st.container(horizontal=True, vertical_alignment="center"):
        st.caption(f"A session keeps {runs.MAX_RUNS} runs: a new run lets {going.label} go. "
                   "Download it first to keep its model.")
        if going.step > 0:
            st.download_button(f"Download {going.label} (.pt)", data=lambda: runs.run_to_checkpoint(going),
                               file_name=f"names-gpt-run{going.run_id}-step{going.step}.pt",
                               mime="application/octet-stream", key="train.download_going",
                               on_click="ignore", icon=":material/download:", type="tertiary")


def forget_run_buttons(book: runs.RunBook) -> None:
    """Forget the current run; clear the earlier ones (beside the chart's overlay switch)."""
    run = book.current
    if run is not None and st.button("Forget this run", key="train.reset", icon=":material/delete:",
                                     type="tertiary", help="Forget the current run (its model and "
                                                           "curve); the settings stay."):
        book.remove(run.run_id)
        leave_queue()
        st.rerun()
    if len(book.runs) > 1 and st.button("Clear earlier runs", key="train.clear_runs", type="tertiary",
                                        icon=":material/delete_sweep:"):
        book.clear_others()
        st.rerun()
    if book.forgotten:
        gone = ", ".join(r.label for r in book.forgotten)
        if st.button(f"Undo: bring back {gone}", key="train.undo_forget", type="tertiary",
                     icon=":material/undo:", help="Forgotten runs come back with their models and "
                                                  "curves, until the next new run."):
            book.undo_forget()
            st.rerun()


def _stop_button(run: runs.Run) -> None:
    if st.button("Stop here", key="train.stop", icon=":material/stop:",
                 help="End this run at this step. Its model stays: sample it, download it, or "
                      "train it N more steps."):
        runs.stop(run)
        leave_queue()
        st.rerun()


def _resume(run: runs.Run) -> bool:
    try:
        runs.start(run)
    except ValueError as exc:
        st.error(str(exc), icon=":material/block:")
        return False
    return True


def _more_steps(run: runs.Run) -> None:
    """For a stopped, finished, uploaded or diverged run: train N more steps (N refused unless in
    range); after a diverged loss, with a learning rate to choose (half the run's, to start with)."""
    extra = state.checked_number("More steps", key="train.extra", kind=int,
                                 rules={"min": 1, "max": budget.LIMITS.max_steps}, value=500,
                                 width=150)
    lr = None
    if run.status == "error":
        rules = train_settings.widget_spec("lr")
        lr = state.checked_number("Learning rate from here", key=f"train.extra_lr.{run.run_id}", kind=float,
                                  rules=rules, value=max(rules["min"], run.trainer.config.lr / 2), width=150,
                                  help="The loss diverged: train on from the last good step, with a "
                                       "smaller peak learning rate. If it diverges again at once, the "
                                       "weights had already blown up: start a new run with a smaller one.")
    if st.button(f"Train {int(extra):,} more steps", key="train.extend", type="primary",
                 icon=":material/fast_forward:",
                 help=f"Carry on from step {run.step:,} to step {run.step + int(extra):,}."):
        try:
            runs.extend(run, int(extra), lr=lr)
            runs.start(run)
        except ValueError as exc:
            st.error(str(exc), icon=":material/block:")
        else:
            st.rerun()


# ----------------------------------------------------------------------------------- live panel


def live_panel(book: runs.RunBook, settings: train_settings.TrainSettings) -> None:
    """The live fragment over the current run: ticks while it trains, else draws once."""
    run = book.current
    background = run is not None and budget.background_training(run.trainer.device.type)
    live_fragment("train.live", run, lambda: draw_live(book, settings),
                  running=(lambda: run.active) if run is not None else False, background=background,
                  on_error=(lambda message: runs.halt(run, message)) if run is not None else None)


def draw_live(book: runs.RunBook, settings: train_settings.TrainSettings) -> None:
    """The Train page's live view: the progress line, the loss curve right under it (so both fit
    the first screen with the controls), then the metrics, the sampled names and the download."""
    run = book.current
    frame, arrow = _loss_rows(runs.chart_runs(book, settings.overlay))
    if run is None:
        st.info("No run yet. Pick a preset (or open **All settings**), then press **Start**. "
                "The loss curve, progress and sampled names appear here while it trains.",
                icon=":material/model_training:")
    else:
        _progress(run)
    if len(frame):
        _loss_chart(frame, arrow, run.tokenizer.vocab_size if run is not None else 27,
                    _chart_caption(book, settings))
    if run is not None:
        _metrics(run)
        _samples(run)
    download_checkpoint(run)


LOSS_ROWS_KEY = "train.loss_rows"  # session state: the chart's last rows, their Arrow bytes and what they were made from


def _loss_rows(shown: list[runs.Run]):
    """The chart's rows for the runs `shown` and their Arrow bytes, the same until one run moves on.

    A trainer's page ticks every second, but with other runs sharing the server it trains a slice
    only every 10 s or so; the ticks between redraw the same rows, so the rows and their Arrow
    bytes are made once per change, not once per tick. The runs' own tables (runs.run_frame, a new
    DataFrame whenever a run moves on) are held here, so their ids name them exactly."""
    # a GPU run trains in a worker meanwhile (ui.live): its lists are copied under its lock
    parts = [runs.run_frame(r, lock=history_lock()) for r in shown]
    made_from = tuple((r.run_id, r.label, id(part)) for r, part in zip(shown, parts))
    kept = st.session_state.get(LOSS_ROWS_KEY)
    if kept is None or kept[0] != made_from:
        frame = runs.loss_frame(shown, frames=parts)
        kept = st.session_state[LOSS_ROWS_KEY] = (made_from, parts, frame,
                                                  dataframe_util.convert_anything_to_arrow_bytes(frame))
    return kept[2], kept[3]


@functools.lru_cache(maxsize=32)
def _inline_arrow(name: str, values_json: str) -> bytes:
    """A spec's inline table (the ln V rule's one row) as Arrow bytes, made once per content
    (Altair names it by a hash of its values). Streamlit turns a list of rows into a DataFrame and
    then Arrow on every draw; six trainers' pages tick twice a second (py-spy: a tenth of the live
    ticks' time in a class)."""
    return dataframe_util.convert_anything_to_arrow_bytes(json.loads(values_json))


def _loss_chart(frame, arrow: bytes, vocab_size: int, caption: str) -> None:
    """The live loss chart: a spec built once per set of runs plus this tick's rows (cheap to
    redraw twice a second), its caption, and PNG/SVG downloads made only when clicked."""
    lecture = state.lecture_mode()
    spec = viz.fit_to_column(training_charts.loss_chart_spec(
        tuple(dict.fromkeys(frame["run"])), vocab_size=vocab_size, lecture=lecture))
    # the rows travel as a named dataset, like an Altair chart's (the frontend binds those reliably)
    datasets = {name: _inline_arrow(name, json.dumps(values)) if isinstance(values, list) else values
                for name, values in spec.get("datasets", {}).items()}
    spec = {**spec, "data": {"name": "loss_rows"}, "datasets": {**datasets, "loss_rows": arrow}}
    st.vega_lite_chart(spec={**spec, "description": viz.description("Names GPT: loss", caption)},
                       width=viz.drawn_width(spec))
    st.caption(caption)
    # the chart is built from this tick's rows only when the Download menu is open
    download_buttons(lambda: training_charts.loss_chart(frame.copy(), vocab_size=vocab_size, lecture=lecture),
                     title="Names GPT: loss", caption=caption, key="train.loss", lecture=lecture)


CHART_CACHE = "gpt.chart_specs"  # session cache of validated chart specs (bounded)
MAX_CACHED_CHARTS = 24


def show_cached_chart(build, cache_key: tuple, *, name: str, caption: str, key: str) -> None:
    """Like ui.charts.show_chart, but the chart is built and validated once per `cache_key`.

    Building a chart and its spec takes 20-90 ms; the Sample and Inside pages draw up to six charts
    that only change when the model, the name or a setting does, so their specs
    (`core.viz.vega_spec`) are kept per session (at most MAX_CACHED_CHARTS) and re-sent as they are.
    `name` is the figure's human title (and its downloaded file's name).
    """
    lecture = state.lecture_mode()
    cache = st.session_state.setdefault(CHART_CACHE, {})
    full_key = (key, cache_key, lecture)
    if full_key not in cache:
        chart = build()
        cache[full_key] = (chart, viz.fit_to_column(viz.vega_spec(chart, lecture)))
        while len(cache) > MAX_CACHED_CHARTS:
            cache.pop(next(iter(cache)))
    chart, spec = cache[full_key]
    if spec is not None:  # a fresh top level each time: the kept spec is never changed by a rerun
        spec = {**spec, "datasets": dict(spec.get("datasets", {}))}
    draw_chart(chart, spec, lecture=lecture, description=viz.description(name, caption))
    st.caption(caption)
    download_buttons(lambda: chart, title=name, caption=caption, key=key, lecture=lecture)


def _fmt_seconds(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "–"
    seconds = int(round(seconds))
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


def _time_words(run: runs.Run) -> str:
    """"time left 25 s" while it trains; once it has stopped, how long it trained ("trained for
    1 min 02 s": a dash for "time left" said nothing); "time left –" before it has a pace."""
    elapsed = run.history["elapsed"][-1] if run.history["elapsed"] else None
    if run.active or elapsed is None:
        return f"time left {_fmt_seconds(run.seconds_left if run.active else None)}"
    return f"trained for {_fmt_seconds(elapsed)}"


def _sharing_words(run: runs.Run) -> str:
    """' · sharing the server with N other runs' while other sessions train too (each gets a fair
    turn, core.budget.TrainingSlots), and ' · the class's pages come first' while training gives way
    to a busy server (core.budget.ServerLoad): a slower steps/s is explained where it is shown."""
    if not run.active:
        return ""
    others = budget.SLOTS.sharing(session_owner())
    words = f" · sharing the server with {others} other run{'s' if others > 1 else ''}" if others else ""
    slowed = budget.SLOTS.giving_way()
    if slowed is not None:  # the class's clicks come first (core.budget.ServerLoad)
        words += f" · the class's pages come first: training has {slowed:.0%} of the server"
    return words


def _progress(run: runs.Run) -> None:
    status = STATUS_TEXT.get(run.status, run.status)
    text = (f"{run.label} · {status} · step {run.step:,} of {run.max_steps:,} · "
            f"{run.steps_per_s:,.1f} steps/s · {run.tokens_per_s:,.0f} tokens/s · " + _time_words(run))
    st.progress(run.progress, text=text + _sharing_words(run))
    if run.message:
        st.error(run.message, icon=":material/block:")
    weights_caption(run)
    if run.trainer.device_message:
        st.warning(run.trainer.device_message, icon=":material/memory:")


def _metrics(run: runs.Run) -> None:
    smoothed = runs.last_smoothed(run.history["train_loss"])  # the newest steps only: O(1) a tick
    cols = st.columns(5)
    cols[0].metric("Step", f"{run.step:,}")
    cols[1].metric("Train loss", f"{smoothed:.3f}" if smoothed is not None else "–",
                   help="Training loss per character (nats), smoothed over the recent steps.")
    cols[2].metric("Val loss", f"{run.trainer.last_val_loss:.3f}"
                   if run.trainer.last_val_loss is not None else "–",
                   help="Validation loss: mean cross-entropy per character on the held-out names, "
                        "in nats, at the last validation point.")
    cols[3].metric("Steps/s", f"{run.steps_per_s:,.1f}")
    cols[4].metric("Tokens/s", _compact(run.tokens_per_s),
                   help="Non-padding target characters per second of training.")


def _compact(value: float) -> str:
    """12,345 -> "12.3k": fits a metric on a projector."""
    return f"{value / 1000:,.1f}k" if value >= 10_000 else f"{value:,.0f}"


def _chart_caption(book: runs.RunBook, settings: train_settings.TrainSettings) -> str:
    shown = runs.chart_runs(book, settings.overlay)
    described = "; ".join(f"{r.label}: {runs.run_summary(r)}" for r in shown)
    return ("Cross-entropy per character (nats). Faint: each step's training batch; solid: its "
            "smoothed trend; dashed with dots: the validation split (10% of the names, never "
            f"trained on). Grey rule: a uniform guess. Runs: {described}.")


def _samples(run: runs.Run) -> None:
    if not run.samples:
        return
    shown = " · ".join(f"**{s.name or '(empty)'}**" + (" :gray[(in data)]" if s.label in ("train", "val") else "")
                       for s in run.samples)
    st.markdown(f"Names sampled at step {run.samples_step:,} (seed {run.settings.seed}, temperature 1): "
                f"{shown}")


# ----------------------------------------------------------------------------------- checkpoints


def download_checkpoint(run: runs.Run | None) -> None:
    """The current model as a .pt file. Drawn inside the live fragment (draw_live), so while a run
    trains the button is redrawn every tick and always offers the model as it is now."""
    can_save = run is not None and run.step > 0
    st.download_button(
        "Download checkpoint (.pt)", data=(lambda: runs.run_to_checkpoint(run)) if can_save else b"",
        file_name=f"names-gpt-run{run.run_id}-step{run.step}.pt" if can_save else "names-gpt.pt",
        mime="application/octet-stream", key="train.download", on_click="ignore",
        disabled=not can_save, icon=":material/download:",
        help="Weights, settings, vocabulary and loss history of the model as it is now; load it "
             "here again later (Checkpoints, below).")


def checkpoint_panel(book: runs.RunBook) -> None:
    """Upload a checkpoint to continue training or to sample (its download sits under the chart)."""
    st.caption("**Download checkpoint**, under the loss curve, saves the current model at its "
               "latest step.")
    upload_panel(book)


def upload_panel(book: runs.RunBook) -> None:
    """File uploader for a checkpoint; errors are clear and never touch the current model."""
    max_mb = math.ceil(runs.UPLOAD_MAX_BYTES / 1e6)
    upload = st.file_uploader("Upload a checkpoint (.pt) to continue training or to sample",
                              type=["pt"], key=UPLOAD_KEY, max_upload_size=max_mb + 1,
                              help=f"A file downloaded from this page (at most {max_mb} MB). "
                                   "It is read safely: only tensors and plain values, no code.")
    if upload is None:
        return
    results = st.session_state.setdefault("gpt.upload_results", {})
    if upload.file_id not in results:
        for old_id in list(results)[:-4]:  # keep the outcome of the last few files only
            del results[old_id]
        same = book.same_upload(runs.checkpoint_digest(upload.getvalue()))
        if same is not None:  # the same file again: that run, not a second copy of it
            book.bring_forward(same.run_id)
            leave_queue()
            results[upload.file_id] = ("ok", f"{upload.name} is already loaded as run {same.label} "
                                             f"(step {same.step:,}, not trained since): nothing was "
                                             "added. It is the run this page drives now.")
            st.rerun()  # once: the controls above were drawn for the old current run
        try:
            run = runs.run_from_checkpoint(upload.getvalue(), upload.name)
        except ValueError as exc:  # CheckpointError is a ValueError
            results[upload.file_id] = ("error", f"Checkpoint not loaded: {exc}. "
                                                "Your current model is unchanged.")
        else:
            book.add(run)
            leave_queue()
            results[upload.file_id] = ("ok", f"Loaded {upload.name} as run {run.label} "
                                             f"(step {run.step:,}). Resume or add steps to train it "
                                             "further, or open the Sample page."
                                             + (" The file holds no training history, so its steps "
                                                "count from 0 and its loss curve starts empty."
                                                if not run.history["steps"] else "")
                                             + (" " + dropped_words(book) if book.dropped else "")
                                             + (" A checkpoint holds the weights but not the "
                                                "optimizer's running averages (AdamW's moments, Muon's "
                                                "momentum), so further training starts the optimizer "
                                                "afresh: the loss can jump for a few steps."
                                                if run.trainer.config.optimizer in ("adamw", "muon") else ""))
            st.rerun()  # once: the controls above were drawn for the old current run
    kind, message = results[upload.file_id]
    if kind == "error":
        st.error(message, icon=":material/block:")
    else:
        st.success(message, icon=":material/check_circle:")


# ----------------------------------------------------------------------------------- other pages


def model_picker(book: runs.RunBook, key: str) -> runs.Run | None:
    """Select box of the session's trained runs (newest first); None when there is none."""
    runs = book.trained()
    if not runs:
        return None
    ids = [r.run_id for r in runs]
    seen_key = f"{key}.seen_current"  # a new current run (trained or uploaded) becomes the pick
    if st.session_state.get(key) not in ids or st.session_state.get(seen_key) != book.current_id:
        st.session_state[key] = book.current_id if book.current_id in ids else ids[0]
    st.session_state[seen_key] = book.current_id
    chosen = st.selectbox("Model", ids, key=key,
                          format_func=lambda i: _picker_label(book.get(i)),
                          help="Any run of this session (or an uploaded checkpoint).")
    run = book.get(chosen)
    if run.active:
        st.caption(f"{run.label} is still training (step {run.step:,} of {run.max_steps:,}); it carries on "
                   "when you go back to the Train page. What you see here is the model as it is now.")
    weights_caption(run)
    return run


def weights_caption(run: runs.Run) -> None:
    """A caption when the model holds the weights of an earlier step (restore_best kept the best)."""
    note = runs.weights_note(run)
    if note:
        st.caption(note)


def _picker_label(run: runs.Run | None) -> str:
    if run is None:
        return "?"
    val, weights_step = run.trainer.weights_val_loss, run.trainer.weights_step
    kept = f" (weights of step {weights_step:,})" if weights_step is not None else ""
    return (f"{run.label} · step {run.step:,} · {STATUS_TEXT.get(run.status, run.status)}"
            + (f" · val {val:.3f}{kept}" if val is not None else ""))


def empty_state(book: runs.RunBook, what: str) -> None:
    """No model yet: say so, and offer to train the quick demo (it opens the Train page)."""
    measured = train_settings.preset_seconds("quick_demo", "auto")
    takes = f" (the quick demo takes about {_fmt_duration(measured[0])})" if measured else ""
    st.info(f"There is no trained model in this session yet, so there is nothing to {what}. "
            f"Train one on the **Train the names GPT** page{takes}, "
            "or upload a checkpoint there.", icon=":material/info:")
    if st.button("Train the quick demo now", key=f"empty.{what}.quick", type="primary",
                 icon=":material/model_training:"):
        settings = train_settings.preset_settings("quick_demo")
        state.replace_settings("train", settings)
        if start_new_run(book, settings) is not None:
            state.switch_page(TRAIN_PAGE)
    st.page_link(TRAIN_PAGE, label="Open the Train page", icon=":material/arrow_forward:")


def model_page(prefix: str, settings_cls: type, what: str):
    """Common start of the pages that use a trained model (Sample, Inside the model).

    Loads the page's settings and lesson panel, lets the student pick a model of this session;
    with no model yet it shows the empty state, keeps the link in sync and stops the page.
    Returns (settings, book, run).
    """
    from ui.layout import lesson_panel

    settings = state.page_settings(prefix, settings_cls)
    settings = lesson_panel(prefix, settings_cls, prefix, settings)
    book = runbook()
    run = model_picker(book, key=f"{prefix}.model")
    if run is None:
        empty_state(book, what)
        state.sync_url(settings)
        end_page()
    return settings, book, run
