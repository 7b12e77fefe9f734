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
import math

import streamlit as st

from core import budget, runs, train_settings, viz
from core.viz import training as training_charts
from ui import state
from ui.charts import download_buttons
from ui.live import leave_queue, live_fragment, session_owner

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
        st.error(f"Training not started: {exc}", icon="🚫")
        return None
    return run


def run_controls(book: runs.RunBook, settings: train_settings.TrainSettings, *, blocked: bool) -> None:
    """Start / pause / resume / stop / reset / break it. Each click reruns the whole page, so the
    ticking fragment starts or stops with it."""
    run = book.current
    status = run.status if run else None
    cols = st.columns([1, 1.25, 1, 1, 1.15])
    with cols[0]:
        if st.button("Start", key="train.start", type="primary", icon=":material/play_arrow:",
                     disabled=blocked, help="Start a new run: train a new model with the settings "
                     "above; earlier runs stay on the chart."):
            if start_new_run(book, settings) is not None:
                st.rerun()  # otherwise the error stays on screen
    with cols[1]:
        if status == "running":
            if st.button("Pause", key="train.pause", icon=":material/pause:"):
                runs.pause(run)
                leave_queue()
                st.rerun()
        else:
            can_resume = run is not None and status in ("idle", "paused") and not run.trainer.done
            if st.button("Resume", key="train.resume", icon=":material/resume:", disabled=not can_resume):
                if _resume(run):
                    st.rerun()
    with cols[2]:
        if st.button("Stop", key="train.stop", icon=":material/stop:",
                     disabled=status not in ("running", "paused", "idle"),
                     help="End this run where it is; its model stays available to sample and download."):
            runs.stop(run)
            leave_queue()
            st.rerun()
    with cols[3]:
        if st.button("Reset", key="train.reset", icon=":material/restart_alt:", disabled=run is None,
                     help="Forget the current run (its model and curve); the settings stay."):
            book.remove(run.run_id)
            leave_queue()
            st.rerun()
    with cols[4]:
        if st.button("Break it", key="train.break", icon=":material/heart_broken:",
                     disabled=blocked, help="Start a new run of the same model with the causal "
                     "mask off: each position can read the character it must predict."):
            broken = dataclasses.replace(settings, causal=False)
            if start_new_run(book, broken) is not None:
                st.rerun()


def _resume(run: runs.Run) -> bool:
    try:
        runs.start(run)
    except ValueError as exc:
        st.error(str(exc), icon="🚫")
        return False
    return True


def continue_controls(book: runs.RunBook) -> None:
    """For a finished, stopped or uploaded run: train some more steps."""
    run = book.current
    finished = run is not None and (run.status in ("done", "stopped")
                                    or (run.status == "paused" and run.trainer.done))
    if not finished:
        return
    left, right = st.columns([1, 2])
    with left:
        extra = st.number_input("More steps", min_value=1, max_value=budget.LIMITS.max_steps,
                                value=500, step=100, key="train.extra")
    with right:
        st.write("")
        if st.button(f"Train {int(extra):,} more steps", key="train.extend", icon=":material/fast_forward:"):
            try:
                runs.extend(run, int(extra))
                runs.start(run)
            except ValueError as exc:
                st.error(str(exc), icon="🚫")
            else:
                st.rerun()


# ----------------------------------------------------------------------------------- live panel


def live_panel(book: runs.RunBook, settings: train_settings.TrainSettings) -> None:
    """The live fragment over the current run: ticks while it trains, else draws once."""
    run = book.current
    live_fragment("train.live", run, lambda: draw_live(book, settings),
                  running=(lambda: run.active) if run is not None else False)


def draw_live(book: runs.RunBook, settings: train_settings.TrainSettings) -> None:
    """The Train page's live view: progress and metrics, the loss curve, the sampled names."""
    run = book.current
    frame = runs.loss_frame(runs.chart_runs(book, settings.overlay))
    if run is None:
        st.info("No run yet. Pick a preset or set the values above, then press **Start**. "
                "The loss curve, progress and sampled names appear here while it trains.",
                icon=":material/model_training:")
    else:
        _progress(run)
    if len(frame):
        _loss_chart(frame, run.tokenizer.vocab_size if run is not None else 27,
                    _chart_caption(book, settings))
    if run is not None:
        _samples(run)


def _loss_chart(frame, vocab_size: int, caption: str) -> None:
    """The live loss chart: a spec built once per set of runs plus this tick's rows (cheap to
    redraw twice a second), its caption, and PNG/SVG downloads made only when clicked."""
    lecture = state.lecture_mode()
    spec = training_charts.loss_chart_spec(tuple(dict.fromkeys(frame["run"])), vocab_size=vocab_size,
                                           lecture=lecture)
    # the rows travel as a named dataset, like an Altair chart's (the frontend binds those reliably)
    spec = {**spec, "data": {"name": "loss_rows"},
            "datasets": {**spec.get("datasets", {}), "loss_rows": frame}}
    st.vega_lite_chart(spec=spec, width="content")
    st.caption(caption)
    frame = frame.copy()
    download_buttons(lambda: training_charts.loss_chart(frame, vocab_size=vocab_size, lecture=lecture),
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
        cache[full_key] = (chart, viz.vega_spec(chart, lecture))
        while len(cache) > MAX_CACHED_CHARTS:
            cache.pop(next(iter(cache)))
    chart, spec = cache[full_key]
    if spec is None:  # tables inside layers: Altair serialises them (slower, same picture)
        st.altair_chart(viz.themed(chart, lecture), width="content")
    else:  # a fresh top level each time: the kept spec is never changed by a rerun
        st.vega_lite_chart(spec={**spec, "datasets": dict(spec.get("datasets", {}))}, width="content")
    st.caption(caption)
    download_buttons(lambda: chart, title=name, caption=caption, key=key, lecture=lecture)


def _fmt_seconds(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "–"
    seconds = int(round(seconds))
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


def _progress(run: runs.Run) -> None:
    status = STATUS_TEXT.get(run.status, run.status)
    text = (f"{run.label} · {status} · step {run.step:,} of {run.max_steps:,} · "
            f"{run.steps_per_s:,.1f} steps/s · {run.tokens_per_s:,.0f} tokens/s · "
            f"time left {_fmt_seconds(run.seconds_left if run.active else None)}")
    st.progress(run.progress, text=text)
    history = run.history
    smoothed = runs.smooth(history["train_loss"])
    cols = st.columns(5)
    cols[0].metric("Step", f"{run.step:,}")
    cols[1].metric("Train loss", f"{smoothed[-1]:.3f}" if len(smoothed) else "–",
                   help="Training loss per character (nats), smoothed over the recent steps.")
    cols[2].metric("Val loss", f"{run.trainer.last_val_loss:.3f}"
                   if run.trainer.last_val_loss is not None else "–",
                   help="Validation loss: mean cross-entropy per character on the held-out names, "
                        "in nats, at the last validation point.")
    cols[3].metric("Steps/s", f"{run.steps_per_s:,.1f}")
    cols[4].metric("Tokens/s", _compact(run.tokens_per_s),
                   help="Non-padding target characters per second of training.")
    if run.message:
        st.error(run.message, icon="🚫")
    if run.trainer.device_message:
        st.warning(run.trainer.device_message, icon=":material/memory:")


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
    shown = " · ".join(f"**{s.name or '(empty)'}**" + (" :gray[(in data)]" if s.label != "new" else "")
                       for s in run.samples)
    st.markdown(f"Names sampled at step {run.samples_step:,} (seed {run.settings.seed}, temperature 1): "
                f"{shown}")


# ----------------------------------------------------------------------------------- checkpoints


def checkpoint_panel(book: runs.RunBook) -> None:
    """Download the current model; upload one to continue training or to sample."""
    run = book.current
    left, right = st.columns(2)
    with left:
        st.markdown("**Download the model**")
        can_save = run is not None and run.step > 0
        st.download_button(
            "Download checkpoint (.pt)", data=(lambda: runs.run_to_checkpoint(run)) if can_save else b"",
            file_name=f"names-gpt-run{run.run_id}-step{run.step}.pt" if can_save else "names-gpt.pt",
            mime="application/octet-stream", key="train.download", on_click="ignore",
            disabled=not can_save, icon=":material/download:",
            help="Weights, settings, vocabulary and loss history; load it here again later.")
        if not can_save:
            st.caption("Train at least one step to download a checkpoint.")
    with right:
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
                                             + (" A checkpoint holds the weights but not AdamW's "
                                                "running averages, so further training starts the "
                                                "optimizer afresh: the loss can jump for a few steps."
                                                if run.trainer.config.optimizer == "adamw" else ""))
    kind, message = results[upload.file_id]
    if kind == "error":
        st.error(message, icon="🚫")
    else:
        st.success(message, icon="✅")


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
    return run


def _picker_label(run: runs.Run | None) -> str:
    if run is None:
        return "?"
    val = run.trainer.last_val_loss
    return (f"{run.label} · step {run.step:,} · {STATUS_TEXT.get(run.status, run.status)}"
            + (f" · val {val:.3f}" if val is not None else ""))


def empty_state(book: runs.RunBook, what: str) -> None:
    """No model yet: say so, and offer to train the quick demo (it opens the Train page)."""
    st.info(f"There is no trained model in this session yet, so there is nothing to {what}. "
            "Train one on the **Train the names GPT** page (the quick demo takes about 30 s), "
            "or upload a checkpoint there.", icon=":material/info:")
    if st.button("Train the quick demo now", key=f"empty.{what}.quick", type="primary",
                 icon=":material/model_training:"):
        settings = train_settings.preset_settings("quick_demo")
        state.replace_settings("train", settings)
        if start_new_run(book, settings) is not None:
            st.switch_page(TRAIN_PAGE)
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
        st.stop()
    return settings, book, run
