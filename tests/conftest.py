"""Shared test setup: the repo root on sys.path, a fixed thread count, no network for core tests."""

import os

os.environ.setdefault("ATTENTION_LAB_TORCH_THREADS", "2")
