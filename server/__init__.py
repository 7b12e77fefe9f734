"""Server operations: what one Streamlit process does for a whole class, beside the pages.

* `runtime`: the one place that reaches into Streamlit's runtime (its Runtime instance, its session
  manager, the sessions it holds). Streamlit keeps these internal, so every access says what it
  gives back when they are missing: no runtime (a test, a script) or an internal that moved.
* `housekeeping`: gives back the memory of students who have left (reaping expired sessions,
  emptying the shared caches, malloc tuning, gc.freeze); started once by streamlit_app.py.
* `memory_probe`: a diagnostic that benchmarks/student_sim.py switches on: where the memory is.

Layering: `server` imports `core` and Streamlit, never `ui` or `pages`; `runtime` imports neither
of its siblings, `memory_probe` imports `runtime`, `housekeeping` imports both.
"""
