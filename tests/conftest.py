"""Shared test setup: the repo root on sys.path, a fixed thread count, no network for core tests."""

import os

os.environ.setdefault("ATTENTION_LAB_TORCH_THREADS", "2")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch is imported (see streamlit_app.py)
os.environ.setdefault("GOMP_SPINCOUNT", "30000")
