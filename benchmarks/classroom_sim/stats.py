"""What the simulated clients measure (shared by all of them) and the plan every student follows."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Stats:
    """Everything the clients measure, shared by all of them (one asyncio thread: no locks)."""

    interactions: list = field(default_factory=list)   # (kind, seconds) full reruns a student caused
    ticks: list = field(default_factory=list)          # seconds per fragment tick (send -> finish)
    first_render: list = field(default_factory=list)   # connect -> first page finished
    errors: list = field(default_factory=list)         # strings
    app_errors: list = field(default_factory=list)     # st.error boxes seen (clear messages, not bugs)
    early: int = 0                                     # runs ended early for a newer rerun
    reconnects: list = field(default_factory=list)     # seconds from the disconnect to a served page
    trainer_steps: dict = field(default_factory=dict)  # student -> [(t, cumulative steps)]
    run_seconds: list = field(default_factory=list)    # Start click -> the last step on screen, per finished run
    soak: dict = field(default_factory=dict)
    lesson: int = 0  # which class (--classes): trainers are told apart per class


@dataclass
class Plan:
    """When the students come and go, how long they think, and when a soak run kills the server."""

    seconds: float          # how long each student stays
    think: tuple            # pause between actions (uniform in [min, max] s)
    deadline: float         # monotonic time every student leaves by
    soak_kill_at: float | None = None
    skip_pages: str = ""    # regex of page titles the students never open (to find a page's cost)
    preset: str = ""        # the preset button a trainer presses before each Start ("": the page's own settings)
