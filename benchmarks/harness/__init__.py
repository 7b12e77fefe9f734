"""The pieces every benchmark (and the browser tests) share: a real `streamlit run` server,
measurements of processes read from Linux /proc, percentiles, and the headless-Chromium settings.

    from benchmarks.harness import StreamlitServer, cpu_seconds, load_average, percentile

Only the standard library is imported here; Playwright and Streamlit's AppTest are imported by
the functions that use them, so a bare torch machine can still run the training benchmarks.
"""

from benchmarks.harness.apptest import open_app_test
from benchmarks.harness.browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    IDLE,
    open_app,
    open_page_url,
    wait_idle,
)
from benchmarks.harness.cpu_share import CpuShare, check_share
from benchmarks.harness.measure import (
    RssWatch,
    cpu_seconds,
    descendants,
    load_average,
    peak_rss_bytes,
    percentile,
    rss_bytes,
)
from benchmarks.harness.server import ROOT, StreamlitServer, free_port, wait_healthy

__all__ = [
    "CHROMIUM", "CHROMIUM_ARGS", "CpuShare", "IDLE", "ROOT", "RssWatch", "StreamlitServer", "check_share", "cpu_seconds",
    "descendants", "free_port", "load_average", "open_app", "open_app_test", "open_page_url",
    "peak_rss_bytes", "percentile", "rss_bytes", "wait_healthy", "wait_idle",
]
