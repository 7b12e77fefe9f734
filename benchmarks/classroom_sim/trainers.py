"""A simulated trainer: opens the Train page, presses Start, watches the live fragment tick; in a
soak run it downloads its checkpoint before the server is killed and uploads it after the restart."""

from __future__ import annotations

import asyncio
import random
import re
import time

from benchmarks.classroom_sim.behaviours import TRAIN_PAGE, change_for, with_reconnect
from benchmarks.classroom_sim.client import Client
from benchmarks.classroom_sim.stats import Plan, Stats

STEP_TEXT = re.compile(r"step ([\d,]+) of ([\d,]+)")


def train_progress(client: Client) -> tuple[int, int] | None:
    for text in client.texts("progress"):
        m = STEP_TEXT.search(text)
        if m:
            return int(m[1].replace(",", "")), int(m[2].replace(",", ""))
    return None


async def trainer(i: int, base: str, stats: Stats, plan: Plan, arrival: float) -> None:
    """Open the Train page, press Start, watch the run tick; start another when it finishes."""
    rng = random.Random(2000 + i)
    await asyncio.sleep(arrival)
    client = Client(f"trainer {i}" + (f" (class {stats.lesson + 1})" if stats.lesson else ""), base, stats, rng)
    record = stats.trainer_steps.setdefault(client.name, [])
    done_before = 0  # steps of this trainer's finished runs
    last_step = 0
    soak = stats.soak.setdefault(client.name, {})
    try:
        t0 = time.monotonic()
        await client.connect("")
        stats.first_render.append(time.monotonic() - t0)
        title = next(t for t in client.pages if TRAIN_PAGE.search(t))

        started = None  # when this trainer's current run was started (monotonic)

        async def start_run(c: Client) -> None:
            nonlocal started
            if plan.preset:
                preset = c.widgets("button", re.compile("^" + re.escape(plan.preset)))
                if not preset:
                    raise RuntimeError(f"no {plan.preset!r} preset button on the Train page")
                stats.interactions.append(("preset", await c.click(preset[0])))
            start = c.widgets("button", re.compile(r"^Start$"))
            if not start:
                raise RuntimeError("no Start button on the Train page")
            started = time.monotonic()
            took = await c.click(start[0])
            stats.interactions.append(("start", took))

        async def watch(c: Client) -> None:
            nonlocal done_before, last_step, started
            if c.page_title() != title:
                took = await c.goto(title)
                stats.interactions.append(("page", took))
            if train_progress(c) is None or not c.auto:
                if soak.get("checkpoint") and not soak.get("restored"):
                    await restore(c)
                resume = [b for b in c.widgets("button", re.compile(r"^Resume$")) if not b.widget.disabled]
                if resume:  # the uploaded run goes on from its step
                    stats.interactions.append(("resume", await c.click(resume[0])))
                    if soak.get("restored") and "step_after_resume" not in soak:
                        soak["step_after_resume"] = (train_progress(c) or (None, None))[0]
                else:
                    await start_run(c)
            while time.monotonic() < plan.deadline:
                await c.pause(1.0)
                progress = train_progress(c)
                if progress is None:
                    continue
                step, total = progress
                if step < last_step:  # a new run (or a restart): count what the old one did
                    done_before += last_step
                last_step = step
                record.append((time.monotonic(), done_before + step))
                if plan.soak_kill_at and not soak.get("checkpoint") and \
                        plan.soak_kill_at - 25 < time.monotonic() < plan.soak_kill_at - 2 and step > 0:
                    await save_checkpoint(c, step)
                if step >= total and started is not None:
                    stats.run_seconds.append(time.monotonic() - started)
                    started = None
                if step >= total and not c.auto:  # finished: another run with a new seed
                    await c.pause(rng.uniform(*plan.think))
                    seed = c.widgets("text_input", "Seed")
                    if seed:
                        change = change_for(seed[0], c.values.get(seed[0].widget.id), rng)
                        if change is not None:
                            stats.interactions.append(("text_input", await c.set_value(seed[0], change)))
                    await start_run(c)

        async def save_checkpoint(c: Client, step: int) -> None:
            button = c.widgets("download_button", "checkpoint")
            if button and button[0].widget.disabled:
                # the button is drawn by the whole page, not by the ticking fragment: it still
                # shows the state of the page's last full run (step 0). A student reruns the page
                # (R, or any widget) and it is enabled.
                stats.interactions.append(("rerun", await c.rerun()))
                button = c.widgets("download_button", "checkpoint")
            if not button or button[0].widget.disabled:
                soak["no_download_because"] = "no enabled download button"
                return
            try:
                data = await c.download(button[0])
            except Exception as exc:  # noqa: BLE001
                stats.errors.append(f"{c.name}: checkpoint download failed: {exc}")
                return
            soak["checkpoint"], soak["step_shown_before_download"] = data, step
            soak["bytes"] = len(data)
            soak.pop("no_download_because", None)

        async def restore(c: Client) -> None:
            """After the restart: the run is gone; upload the checkpoint and check the step."""
            soak["lost_run_step"] = last_step
            uploader = c.widgets("file_uploader", "checkpoint")
            if not uploader:
                stats.errors.append(f"{c.name}: no checkpoint uploader after the restart")
                return
            try:
                await c.upload(uploader[0], "names-gpt.pt", soak["checkpoint"])
            except Exception as exc:  # noqa: BLE001
                stats.errors.append(f"{c.name}: checkpoint upload failed: {type(exc).__name__}: {exc}")
                return
            # the page drew its run controls before the upload panel added the run: one more
            # rerun and Resume knows about it
            stats.interactions.append(("rerun", await c.rerun()))
            soak["restored"] = True
            soak["upload_s"] = round(time.monotonic() - plan.soak_kill_at, 1)
            soak["upload_message"] = next((t for t in c.texts("alert") if "Loaded" in t), "")[:200]

        await with_reconnect(client, stats, plan, watch)
    except Exception as exc:  # noqa: BLE001
        stats.errors.append(f"trainer {i}: {type(exc).__name__}: {str(exc)[:160]}")
    finally:
        await client.close()
