"""A class of N simulated students on one small server: Streamlit's own websocket protocol, no browsers.

    python benchmarks/student_sim.py [--students 60] [--trainers 6] [--duration 600]
        [--server-cores 0 | 0,1] [--browsers 2] [--curve] [--soak] [--inventory]

The entry script of the simulator; what it does, and its modules, are described in
benchmarks/classroom_sim/__init__.py. The last printed line is one JSON object.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.classroom_sim.cli import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())
