"""Real browsers alongside the simulated class: headless Chromium tabs measuring click-to-render."""

from __future__ import annotations

import asyncio

from benchmarks.harness import CHROMIUM, CHROMIUM_ARGS


async def browsers(base: str, count: int, stats: dict, seconds: float) -> None:
    """Real Chromium tabs walking the attention pages (classroom_load's student)."""
    if count <= 0:
        return
    from playwright.async_api import async_playwright

    from benchmarks import classroom_load

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        tasks = [asyncio.create_task(classroom_load.student(1000 + b, browser, base, False, seconds,
                                                            (2.0, 6.0), stats)) for b in range(count)]
        await asyncio.gather(*tasks)
        await browser.close()
