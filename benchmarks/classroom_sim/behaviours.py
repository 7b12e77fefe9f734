"""What a simulated student does: the small change it makes to a widget, which widget it picks, one
timed action, reconnecting after a dropped connection, and a whole student's walk through the pages."""

from __future__ import annotations

import asyncio
import csv
import io
import random
import re
import time

import websockets
from streamlit.proto.WidgetStates_pb2 import WidgetState

from benchmarks.classroom_sim.client import Client
from benchmarks.classroom_sim.protocol import INTERACTION_TIMEOUT_S, Disconnected, Node
from benchmarks.classroom_sim.stats import Plan, Stats
from ui.state import NUMBER_HELP  # the words that end every number box's help

# Widgets a student does not press at random: they start training (only the K trainers do that),
# throw away work, or download files (downloads never rerun the app).
AVOID = re.compile(r"^(Start|Break it|Reset|Stop|Pause|Resume|Clear|Train|Lecture mode|Download|PNG|"
                   r"SVG|Upload|Load|Apply|Save)", re.I)
TRAIN_PAGE = re.compile(r"train.*gpt|train_gpt", re.I)


def nudge_csv(text: str, rng: random.Random) -> str | None:
    """Change one number of an embeddings CSV a little (keeps its shape valid)."""
    rows = list(csv.reader(io.StringIO(text)))
    cells = [(i, j) for i, row in enumerate(rows) for j, cell in enumerate(row)
             if re.fullmatch(r"\s*-?\d+(\.\d+)?\s*", cell)]
    if not cells:
        return None
    i, j = rng.choice(cells)
    value = float(rows[i][j]) + rng.choice([-0.1, 0.1])
    rows[i][j] = f"{max(-1.0, min(1.0, value)):.2f}"
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue().rstrip("\n")


def change_for(node: Node, current: WidgetState | None, rng: random.Random) -> WidgetState | None:
    """A small change a student would make to this widget (None: nothing sensible to do)."""
    w, kind = node.widget, node.kind
    state = WidgetState(id=w.id)
    if kind == "number_input":
        value = current.double_value if current is not None else w.default
        step = w.step or 1.0
        new = value + rng.choice([-1, 1]) * step
        if (w.has_min and new < w.min) or (w.has_max and new > w.max):
            new = value - (new - value)
        if (w.has_min and new < w.min) or (w.has_max and new > w.max):
            return None
        state.double_value = round(new) if w.data_type == 0 else new  # INT inputs stay whole
    elif kind == "checkbox":
        state.bool_value = not (current.bool_value if current is not None else w.default)
    elif kind == "popover":  # open it (its controls appear), or close it again
        state.bool_value = not (current.bool_value if current is not None else w.open)
    elif kind == "slider":
        if len(w.options) or current is None or not current.double_array_value.data:
            return None
        values = list(current.double_array_value.data)
        step = w.step or 1.0
        new = values[0] + rng.choice([-1, 1]) * step
        if not w.min <= new <= w.max:
            new = values[0] - (new - values[0])
        values[0] = min(max(new, w.min), w.max)
        state.double_array_value.data.extend(values)
    elif kind in ("selectbox", "radio"):
        options = [o for o in w.options if current is None or o != current.string_value]
        if not options:
            return None
        state.string_value = rng.choice(options)
    elif kind == "button_group":
        chosen = set(current.string_array_value.data) if current is not None else set()
        options = [o.content for o in w.options if o.content not in chosen]
        if not options:
            return None
        state.string_array_value.data.append(rng.choice(options))
    elif kind == "text_input" and NUMBER_HELP in (w.help or ""):
        # a number box (ui.state.checked_number): type the number one above or below; a value out
        # of range is refused by the server with a message, as a student would see it
        text = current.string_value if current is not None else w.default
        try:
            value = float(text)
        except ValueError:
            return None
        new = value + rng.choice([-1, 1])
        state.string_value = f"{new:g}" if new != int(new) else str(int(new))
    elif kind == "text_area":
        text = current.string_value if current is not None else w.default
        new = nudge_csv(text, rng) if "csv" in w.label.lower() else None
        if new is None or new == text:
            return None
        state.string_value = new
    else:
        return None
    return state


def pick_action(client: Client, rng: random.Random) -> tuple[Node, WidgetState | None] | None:
    """A widget on the page a student would use now, weighted towards Next / Previous."""
    choices, weights = [], []
    for node in client.widgets():
        w = node.widget
        if w.disabled or node.kind in ("download_button", "file_uploader") or AVOID.search(w.label):
            continue
        if node.kind == "button":
            weight = 4.0 if re.search(r"next|previous", w.label, re.I) else 0.5
            choices.append((node, None))
            weights.append(weight)
            continue
        change = change_for(node, client.values.get(w.id), rng)
        if change is not None:
            choices.append((node, change))
            weights.append(2.0 if node.kind == "text_area" else 1.0)
    if not choices:
        return None
    return rng.choices(choices, weights)[0]



async def act(client: Client, stats: Stats, rng: random.Random, plan: Plan) -> None:
    """One action on the current page, timed; errors are recorded, not raised (except disconnect)."""
    picked = pick_action(client, rng)
    if picked is None:
        return
    node, change = picked
    try:
        if change is None:
            took = await client.click(node)
        else:
            took = await client.set_value(node, change)
        stats.interactions.append((node.kind, took))
        if node.kind == "text_area":  # an edited CSV takes effect with its Apply button
            apply = [b for b in client.widgets("button", "Apply") if not b.widget.disabled]
            if apply:
                await asyncio.sleep(rng.uniform(0.5, 2.0))
                stats.interactions.append(("button", await client.click(apply[0])))
    except asyncio.TimeoutError:
        stats.errors.append(f"{client.name}: no answer within {INTERACTION_TIMEOUT_S:.0f} s to "
                            f"{node.kind} '{node.widget.label}' on {client.page_title()}")


async def with_reconnect(client: Client, stats: Stats, plan: Plan, body) -> None:
    """Run `body(client)`; when the connection drops (a server restart), reconnect the way the
    frontend does (retry with backoff, same page, same URL query) and carry on until the deadline.
    Outside a planned restart, a drop is an error."""
    while time.monotonic() < plan.deadline:
        try:
            await body(client)
            return
        except (Disconnected, websockets.ConnectionClosed, OSError) as exc:
            t_drop = time.monotonic()
            planned = plan.soak_kill_at is not None and abs(t_drop - plan.soak_kill_at) < 60
            if not planned:
                stats.errors.append(f"{client.name}: disconnected ({type(exc).__name__})")
            await client.close()
            delay = 0.5
            while time.monotonic() < plan.deadline:
                await asyncio.sleep(delay)
                try:
                    page, query, old_id = client.url_path, client.query_string, client.session_id
                    await client.connect(page, reuse_session=True)
                    stats.reconnects.append(time.monotonic() - (plan.soak_kill_at or t_drop))
                    # what came back: the same session (a blip), or a new one whose page settings
                    # come from the link (the query string), everything else lost
                    kept = stats.soak.setdefault("_reconnected", {
                        "same_session": 0, "new_session": 0, "page_had_settings_in_link": 0,
                        "page_settings_from_link": 0})
                    if client.session_id == old_id:
                        kept["same_session"] += 1
                    else:
                        kept["new_session"] += 1
                        kept["page_had_settings_in_link"] += int(bool(query))
                        kept["page_settings_from_link"] += int(bool(query) and client.query_string == query)
                    break
                except (OSError, websockets.InvalidHandshake, websockets.ConnectionClosed,
                        asyncio.TimeoutError, Disconnected):
                    delay = min(delay * 1.5, 5.0)


async def student(i: int, base: str, stats: Stats, plan: Plan, arrival: float) -> None:
    rng = random.Random(1000 + i)
    await asyncio.sleep(arrival)
    client = Client(f"student {i}", base, stats, rng)
    try:
        t0 = time.monotonic()
        await client.connect("")
        stats.first_render.append(time.monotonic() - t0)

        async def walk(c: Client) -> None:
            while time.monotonic() < plan.deadline:
                titles = [t for t in c.pages if not TRAIN_PAGE.search(t)
                          and not (plan.skip_pages and re.search(plan.skip_pages, t, re.I))] or list(c.pages)
                await c.pause(rng.uniform(*plan.think))
                if time.monotonic() >= plan.deadline:
                    return
                title = rng.choice(titles)
                try:
                    took = await c.goto(title)
                    stats.interactions.append(("page", took))
                except asyncio.TimeoutError:
                    stats.errors.append(f"{c.name}: page {title} did not finish in time")
                for _ in range(rng.randint(2, 5)):
                    await c.pause(rng.uniform(*plan.think))
                    if time.monotonic() >= plan.deadline:
                        return
                    await act(c, stats, rng, plan)

        await with_reconnect(client, stats, plan, walk)
    except Exception as exc:  # noqa: BLE001 - a benchmark counts failures, it does not stop on them
        stats.errors.append(f"student {i}: {type(exc).__name__}: {str(exc)[:160]}")
    finally:
        await client.close()

