"""Where a server's memory is: a diagnostic that benchmarks/student_sim.py switches on.

With ATTENTION_LAB_MEMORY_PROBE set to a file path, server/housekeeping.py appends one JSON line
to it every REAP_S seconds: the resident size, glibc's own account (bytes malloc hands out, free bytes it
keeps in its arenas, mmapped blocks), how many sessions Streamlit holds, the objects the garbage
collector tracks, the entries of the app's caches, and, when the server runs with
PYTHONTRACEMALLOC, the Python allocations by file. It separates "Python objects still alive"
(tracemalloc, gc) from "memory freed but kept by the allocator" (glibc's free bytes), which need
different fixes. Off by default: gc.get_objects() over a full server takes a fraction of a second.

With nobody connected it also says who still holds page objects (`holders`: one referrer chain
per type, up to a module, a frame or a class) and which tracked objects sit in address regions
that were not in use at the first report (`new_regions`: what keeps Python's arenas after a
class). Under tracemalloc the object walks are skipped, and the snapshot is dumped next to the
report whenever at most one session is held, for benchmarks/memory_diff.py.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import gc
import json
import os
import sys
import time
import tracemalloc
import warnings

from server import runtime

PROBE_ENV = "ATTENTION_LAB_MEMORY_PROBE"


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
        "keepcost")]


def probe_path() -> str | None:
    return os.environ.get(PROBE_ENV) or None


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return round(int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20, 1)


def _malloc(libc: ctypes.CDLL | None) -> dict:
    if libc is None or not hasattr(libc, "mallinfo2"):
        return {}
    libc.mallinfo2.restype = _Mallinfo2
    info = libc.mallinfo2()
    mb = lambda v: round(v / 2**20, 1)  # noqa: E731
    return {"malloc_in_use_mb": mb(info.uordblks), "malloc_free_kept_mb": mb(info.fordblks),
            "malloc_arena_mb": mb(info.arena), "malloc_mmap_mb": mb(info.hblkhd)}


def _mappings() -> dict:
    """Resident MB by kind of mapping (/proc/self/smaps): shared-library and other file pages, the
    main heap, glibc's thread arenas (64 MiB aligned), and other anonymous blocks (Python's object
    arenas, which glibc does not account for; large blocks glibc mmapped; thread stacks)."""
    kinds: collections.Counter = collections.Counter()
    try:
        with open("/proc/self/smaps") as f:
            kind = "other"
            for line in f:
                head = line.split()
                if len(head) >= 5 and "-" in head[0] and not head[0].endswith(":"):
                    start, end = (int(x, 16) for x in head[0].split("-"))
                    size, path = end - start, (head[5] if len(head) > 5 else "")
                    if path == "[heap]":
                        kind = "heap"
                    elif path.startswith("/"):
                        kind = "file"
                    elif path:
                        kind = "other"
                    elif start % (64 * 2**20) == 0:  # glibc aligns each thread arena to its 64 MiB
                        kind = "thread_arena"
                    else:
                        kind = "anon_other"
                elif head and head[0] == "Rss:":
                    kinds[kind] += int(head[1])
    except OSError:
        return {}
    out = {"rss_by_mapping_mb": {k: round(v / 1024, 1) for k, v in kinds.most_common()}}
    out.update(_pymalloc())
    return out


def _pymalloc() -> dict:
    """Python's small-object allocator: arenas held and bytes in use (sys._debugmallocstats, which
    only prints to the C stderr, read back through a temporary file)."""
    import re
    import tempfile

    try:
        with tempfile.TemporaryFile("w+") as tmp:
            saved = os.dup(2)
            try:
                sys.stderr.flush()
                os.dup2(tmp.fileno(), 2)
                sys._debugmallocstats()
            finally:
                os.dup2(saved, 2)
                os.close(saved)
            tmp.seek(0)
            text = tmp.read()
    except (OSError, AttributeError):
        return {}
    found = {}
    for key, pattern in (("pymalloc_arenas", r"# arenas allocated current\s*=\s*([\d,]+)"),
                         ("pymalloc_in_use_mb", r"# bytes in allocated blocks\s*=\s*([\d,]+)"),
                         ("pymalloc_arena_mb", r"Total\s*=\s*([\d,]+)")):
        m = re.search(pattern, text)
        if m:
            value = int(m.group(1).replace(",", ""))
            found[key] = value if key == "pymalloc_arenas" else round(value / 2**20, 1)
    return found


_SKIP = (type, type(os), type(len), type(_rss_mb))  # classes, modules, functions: shared, not state


def deep_size(obj, seen: set[int]) -> int:
    """Bytes reachable from `obj` (tensor and array data included), counting each object once."""
    import numpy as np
    import torch

    total, stack = 0, [obj]
    while stack:
        o = stack.pop()
        if id(o) in seen or isinstance(o, _SKIP):
            continue
        seen.add(id(o))
        if isinstance(o, torch.Tensor):
            storage = o.untyped_storage()
            if storage.data_ptr() not in seen:
                seen.add(storage.data_ptr())
                total += storage.nbytes()
            continue
        if isinstance(o, np.ndarray):
            total += o.nbytes if o.base is None else 0
            stack.append(o.base)
            continue
        total += sys.getsizeof(o, 0)
        stack.extend(gc.get_referents(o))
    return total


def _session_state_sizes() -> dict:
    """Per session_state key (summed over the sessions held): the memory a session keeps."""
    manager = runtime.session_manager()
    if manager is None:
        return {}
    by_key: collections.Counter = collections.Counter()
    try:
        for info in manager.list_sessions():
            state = info.session.session_state
            seen: set[int] = set()
            for store in (state._old_state, state._new_session_state):
                for key, value in list(store.items()):
                    name = key.split("-", 2)[-1] if key.startswith("$$") else key
                    by_key[name[:40]] += deep_size(value, seen)
    except Exception as exc:  # noqa: BLE001 - a diagnostic
        return {"session_state_error": f"{type(exc).__name__}: {exc}"}
    return {"session_state_mb": round(sum(by_key.values()) / 2**20, 1),
            "session_state_top_mb": [(k, round(v / 2**20, 2)) for k, v in by_key.most_common(12)]}


def _objects() -> dict:
    counts: collections.Counter = collections.Counter()
    for obj in gc.get_objects():
        counts[type(obj).__name__] += 1
    wanted = ("AppSession", "SessionState", "Tensor", "Parameter", "DataFrame", "ndarray", "Module",
              "Trainer", "LiveRun", "ForwardMsg")
    return {"gc_objects": sum(counts.values()),
            "gc_types": {name: counts[name] for name in wanted if counts[name]},
            "gc_top": counts.most_common(8)}


def _tensor_holders() -> dict:
    """Who holds the live tensors: the class owning the dict or list a tensor sits in (bytes).

    Reading `__dict__` makes Python 3.11 build the instance dicts it otherwise keeps implicit, so
    after the first report the collector counts ~17k more dicts: not a finding about the app."""
    import torch

    objects = gc.get_objects()
    owner: dict[int, str] = {}
    for o in objects:
        d = getattr(type(o), "__dictoffset__", 0) and getattr(o, "__dict__", None)
        if isinstance(d, dict):
            owner[id(d)] = type(o).__qualname__
            for name in ("_parameters", "_buffers"):  # nn.Module keeps its tensors in these dicts
                inner = d.get(name)
                if isinstance(inner, dict):
                    owner[id(inner)] = type(o).__qualname__
    held: collections.Counter = collections.Counter()
    seen: set[int] = set()
    for o in objects:
        for r in gc.get_referents(o):
            if isinstance(r, torch.Tensor) and id(r) not in seen:
                seen.add(id(r))
                where = owner.get(id(o), type(o).__qualname__)
                held[where] += r.untyped_storage().nbytes()
    return {"tensor_holders_mb": [(k, round(v / 2**20, 2)) for k, v in held.most_common(10)]}


def _caches() -> dict:
    """Entries held by each st.cache_data / st.cache_resource function of the app."""
    out = {}
    try:
        from streamlit.runtime.caching import cache_data_api, cache_resource_api

        for api, kind in ((cache_data_api._data_caches, "data"),
                          (cache_resource_api._resource_caches, "resource")):
            with api._caches_lock:
                caches = [c for by in api._function_caches.values() for c in by.values()]
            for cache in caches:
                name = getattr(cache, "display_name", None) or getattr(cache, "key", "?")
                store = getattr(cache, "_mem_cache", None)
                if store is None:
                    store = getattr(getattr(cache, "storage", None), "_mem_cache", None)
                if store is None:
                    continue
                values = list(store.values())
                seen: set[int] = set()
                size = sum(deep_size(v, seen) for v in values)
                out[f"{kind}:{name}"] = [len(values), round(size / 2**20, 2)]
    except Exception as exc:  # noqa: BLE001 - a diagnostic
        out["error"] = f"{type(exc).__name__}: {exc}"
    return out


def _traced(snapshot: tracemalloc.Snapshot) -> dict:
    stats = snapshot.statistics("filename")
    current, peak = tracemalloc.get_traced_memory()
    top = [(str(s.traceback[0].filename).split("site-packages/")[-1].split("attention-lab/")[-1],
            round(s.size / 2**20, 2)) for s in stats[:15]]
    return {"traced_mb": round(current / 2**20, 1), "traced_peak_mb": round(peak / 2**20, 1),
            "traced_top_mb": top}


_first_regions: set[int] = set()  # regions in use at the first report (before a class)


def new_regions(top: int = 15) -> dict:
    """Python's small objects by 1 MiB of address space (an arena of Python's allocator, roughly).
    The first call remembers the regions in use; later calls say which objects the collector
    tracks (containers, functions, instances: a sample, not strings or numbers) sit in regions
    that were not in use then. After a class has left, those are what keeps its arenas."""
    regions: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
    for obj in gc.get_objects():
        if sys.getsizeof(obj, 0) <= 512:  # larger ones come from malloc, not from the arenas
            regions[id(obj) >> 20][type(obj).__qualname__] += 1
    if not _first_regions:
        _first_regions.update(regions)
        return {"regions": len(regions)}
    new = [kinds for key, kinds in regions.items() if key not in _first_regions]
    kinds_total: collections.Counter = collections.Counter()
    for kinds in new:
        kinds_total.update(kinds)
    return {"regions": len(regions), "new_regions": len(new), "new_region_objects": sum(kinds_total.values()),
            "new_region_types": kinds_total.most_common(top)}


def _describe(holder, child) -> str:
    """One link of a chain: the holder's type, and where the child sits in it when that is cheap."""
    import types

    if isinstance(holder, types.FrameType):
        return f"frame {holder.f_code.co_name} ({holder.f_code.co_filename.rsplit('/', 2)[-1]}:{holder.f_lineno})"
    if isinstance(holder, types.ModuleType):
        return f"module {holder.__name__}"
    if isinstance(holder, dict):
        key = next((k for k, v in holder.items() if v is child), None)
        return f"dict[{str(key)[:40]!r}]" if key is not None else "dict"
    return type(holder).__qualname__


def _chain(obj, depth: int, skip: set[int]) -> str:
    """Referrers from `obj` up: each step takes a holder that is not the probe's own list, preferring
    objects over containers, and stops at a module, a frame or a class."""
    import types

    chain, current, seen = [], obj, set(skip)
    for _ in range(depth):
        seen.add(id(current))
        raw = gc.get_referrers(current)
        refs = [r for r in raw if id(r) not in seen and r is not chain and r is not raw]
        raw.clear()  # the probe's own lists must not show up as holders one step up
        # an end (a module: a globals dict is also every function's) first, then an owner object
        refs.sort(key=lambda r: 0 if isinstance(r, (types.ModuleType, types.FrameType, type))
                  else 2 if isinstance(r, (list, tuple, dict, set)) else 1)
        holder = refs[0] if refs else None
        refs.clear()
        if holder is None:
            chain.append("(nothing: garbage, or held from C)")
            break
        chain.append(_describe(holder, current))
        if isinstance(holder, (types.ModuleType, types.FrameType, type)):
            break
        current = holder
    return " <- ".join(chain)


def holders(type_names: tuple[str, ...] = ("DataFrame", "Chart", "LayerChart", "Trainer", "NamesData",
                                            "AppSession", "ScriptRunContext", "SessionState", "WidgetMetadata",
                                            "ButtonSerde", "SparseList"),
            per_type: int = 2, depth: int = 8) -> dict:
    """For objects of these types still alive, one chain of referrers each, up to a module, a thread's
    frame or a class: who keeps them when no session should. Meant for a server nobody is on."""
    objects = gc.get_objects()
    found: dict[str, list] = {}
    for name in type_names:
        alive = [o for o in objects if type(o).__name__ == name]
        found[name] = [len(alive)]
        sample = alive[:per_type]
        for i in range(len(sample)):  # by index: a for-loop over the list would hold it from C
            found[name].append(_chain(sample[i], depth, {id(objects), id(alive), id(sample)}))
        del sample
        del alive
    del objects
    return {"holders": found}


@contextlib.contextmanager
def _everything_visible():
    """gc.get_objects() leaves out what housekeeping froze (gc.freeze): unfreeze for the walks,
    freeze again after them (which also freezes what was young: a probe run's cost)."""
    frozen = gc.get_freeze_count()
    if frozen:
        gc.unfreeze()
    try:
        yield
    finally:
        if frozen:
            gc.freeze()


def report(libc: ctypes.CDLL | None, label: str = "", snapshot: tracemalloc.Snapshot | None = None) -> dict:
    with warnings.catch_warnings():  # touching every object wakes some deprecated module attributes
        warnings.simplefilter("ignore")
        return _report(libc, label, snapshot)


def _report(libc: ctypes.CDLL | None, label: str, snapshot: tracemalloc.Snapshot | None) -> dict:
    t0 = time.perf_counter()
    out = {"t": round(time.time(), 1), "label": label, "rss_mb": _rss_mb(), **_malloc(libc), **_mappings(),
           **runtime.session_counts()}
    if snapshot is None:
        # walks over every object; skipped under tracemalloc, where each of their allocations is
        # traced too and one report took over a minute (the server stalls meanwhile)
        out["gc_frozen"] = gc.get_freeze_count()
        with _everything_visible():
            out.update({**_objects(), "caches": _caches(), **_session_state_sizes(), **_tensor_holders()})
            if out.get("sessions_held") in (0, 1):  # before and after a class
                out.update(new_regions())
            if out.get("sessions_held") == 0:
                out.update(holders())
    else:
        out.update(_traced(snapshot))
    out["threads"] = len(sys._current_frames())
    if libc is not None:  # how much of the resident size glibc can give back right now
        gc.collect()
        t_trim = time.perf_counter()
        libc.malloc_trim(0)
        out["trim_s"] = round(time.perf_counter() - t_trim, 4)
        out["rss_after_trim_mb"] = _rss_mb()
        out.update({f"{k}_after_trim": v for k, v in _malloc(libc).items()})
    out["probe_s"] = round(time.perf_counter() - t0, 2)
    return out


def write(libc: ctypes.CDLL | None, label: str = "") -> None:
    path = probe_path()
    if not path:
        return
    snapshot = tracemalloc.take_snapshot() if tracemalloc.is_tracing() else None
    line = report(libc, label, snapshot)
    with open(path, "a") as f:
        f.write(json.dumps(line, default=str) + "\n")
    held = line.get("sessions_held", 2)
    if snapshot is not None and (held <= 1 or held >= _busy_sessions()):
        # before, during (a busy class) and after: `python -m benchmarks.memory_diff BEFORE AFTER`
        # says which allocation sites hold more live blocks in the second than in the first
        snapshot.dump(f"{path}.{int(line['t'])}.s{held}.snap")


def _busy_sessions() -> int:
    """ATTENTION_LAB_MEMORY_PROBE_BUSY: also dump a snapshot whenever this many sessions are held."""
    try:
        return int(os.environ.get("ATTENTION_LAB_MEMORY_PROBE_BUSY", "") or 10**9)
    except ValueError:
        return 10**9
