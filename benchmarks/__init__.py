"""Benchmarks: one script per performance target, a shared harness (`benchmarks.harness`) and the
protocol-level student simulator (`benchmarks.classroom_sim`).

A regular package, so `from benchmarks.harness import ...` works both in pytest (the repository
root is on the path) and in `python benchmarks/<script>.py` runs (each script puts the root on
`sys.path` first).
"""
