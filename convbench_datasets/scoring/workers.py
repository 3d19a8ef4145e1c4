"""How many worker processes a CPU-bound scoring call should start.

A forked worker only pays off when it gets enough work to cover its start and the transfer of its
results, and when a core is free to run it: on a busy machine a second process only competes with
the first. ``benchmarks/nico_generation_speed.py --workers`` measures both effects.
"""

from __future__ import annotations

import os


def usable_cores() -> int:
    """CPUs this process may run on (its affinity mask where the platform has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def idle_cores() -> int:
    """Usable CPUs not already busy: the usable count less the 1-minute load average of everything
    else (the caller is counted as one running task; at least 1)."""
    cores = usable_cores()
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # Windows: no load average
        return cores
    others = max(0.0, load - 1.0)
    return max(1, min(cores, int(cores - others + 0.5)))


def pick_workers(items: int, min_items_per_worker: int) -> int:
    """Workers for ``items`` units of work: one per ``min_items_per_worker`` items, at most one per idle
    core, at least 1 (1 means: do it in this process)."""
    return max(1, min(idle_cores(), items // min_items_per_worker))
