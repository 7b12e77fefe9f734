"""Which device to train on: what this machine offers and how a request is resolved.

`available_devices()` explains, for each of "cpu", "cuda" and "mps", whether torch can use it here and
why (or why not), in words fit to show a student. `resolve_device(requested)` turns a setting such as
"auto" or "cuda" into a `torch.device`; asking for a device that is absent falls back to the CPU with a
message instead of failing, because a lesson link made on a laptop with a GPU must still open elsewhere.
"""

from __future__ import annotations

import torch

DEVICE_NAMES = ("cpu", "cuda", "mps")  # devices the app knows about, in display order
REQUEST_NAMES = ("auto",) + DEVICE_NAMES  # what a setting may ask for


def _cuda_status() -> tuple[bool, str]:
    """(available?, reason) for CUDA."""
    if torch.version.cuda is None:
        return False, "torch build has no CUDA support (CPU-only build)"
    if not torch.cuda.is_available():
        return False, "no CUDA GPU found by torch"
    return True, f"CUDA GPU: {torch.cuda.get_device_name(0)}"


def _mps_status() -> tuple[bool, str]:
    """(available?, reason) for MPS, the Apple-silicon GPU backend."""
    mps = getattr(torch.backends, "mps", None)
    if mps is None or not mps.is_built():
        return False, "torch build has no MPS (Apple GPU) support"
    if not mps.is_available():
        return False, "MPS is built into torch but not usable here (needs macOS 12.3+ on Apple silicon)"
    return True, "Apple GPU (MPS)"


def available_devices() -> dict[str, tuple[bool, str]]:
    """For "cpu", "cuda" and "mps": (available?, human-readable reason)."""
    return {
        "cpu": (True, f"CPU ({torch.get_num_threads()} torch threads)"),
        "cuda": _cuda_status(),
        "mps": _mps_status(),
    }


DEVICE_TITLES = {"cpu": "the CPU", "cuda": "the CUDA GPU", "mps": "the Apple GPU (MPS)"}


def _auto_choice(status: dict[str, tuple[bool, str]]) -> torch.device:
    """What "auto" picks: CUDA, then MPS, then the CPU."""
    for candidate in ("cuda", "mps"):
        if status[candidate][0]:
            return torch.device(candidate)
    return torch.device("cpu")


def resolve_device(requested: str | torch.device = "auto") -> tuple[torch.device, str | None]:
    """Turn a device request into a usable `torch.device`.

    "auto" picks CUDA, then MPS, then the CPU (no message: that is the normal choice). Asking for
    "cuda" or "mps" when it is absent falls back to what "auto" would pick on this machine (a link
    made on a Mac opens on a CUDA machine with the GPU, elsewhere with the CPU) and returns a
    message naming the device that is really used. "cuda:1" style indices are accepted. An unknown
    name raises ValueError.
    """
    name = str(requested).strip().lower()
    base, _, index = name.partition(":")
    if base not in REQUEST_NAMES or (index and (base != "cuda" or not index.isdigit())):
        known = ", ".join(REQUEST_NAMES)
        raise ValueError(f"unknown device {str(requested)!r}: choose one of {known}")

    status = available_devices()
    if base == "auto":
        return _auto_choice(status), None
    if base == "cpu":
        return torch.device("cpu"), None

    ok, reason = status[base]
    if not ok:
        fallback = _auto_choice(status)
        return fallback, (f"{base.upper()} was requested but is not available ({reason}); "
                          f"using {DEVICE_TITLES[fallback.type]} instead.")
    if base == "cuda" and index and int(index) >= torch.cuda.device_count():
        count = torch.cuda.device_count()
        return torch.device("cuda"), f"there is no GPU {name} ({count} found); using cuda:0."
    return torch.device(name), None
