"""Timing for the benchmark scripts: medians of repeated runs (these machines are noisy).

:func:`interleaved` runs the sides of a comparison in turn, round after round, in one process, so that
load from other processes slows them alike, and keeps each side's wall time and the CPU time of this
process (``time.process_time``) plus that of the child processes it waited for (a side that runs a
fresh Python). Verdicts go by CPU time: on a loaded machine the wall clock also counts time spent
waiting for a core.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def median_time(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """(median seconds over ``repeat`` calls of ``fn``, the last call's result)."""
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def cpu_seconds() -> float:
    """CPU seconds of this process and of the children it has waited for."""
    times = os.times()
    return time.process_time() + times.children_user + times.children_system


@dataclass(frozen=True)
class Timing:
    """Median seconds of one side: wall clock and CPU (:func:`cpu_seconds`)."""

    wall: float
    cpu: float


def interleaved(fns: dict[str, Callable[[], Any]], repeat: int) -> tuple[dict[str, Timing], dict[str, Any]]:
    """Each function once per round for ``repeat`` rounds; (median timings, last results) by name."""
    walls: dict[str, list[float]] = {name: [] for name in fns}
    cpus: dict[str, list[float]] = {name: [] for name in fns}
    results: dict[str, Any] = {}
    for _ in range(repeat):
        for name, fn in fns.items():
            wall, cpu = time.perf_counter(), cpu_seconds()
            results[name] = fn()
            cpus[name].append(cpu_seconds() - cpu)
            walls[name].append(time.perf_counter() - wall)
    timings = {name: Timing(statistics.median(walls[name]), statistics.median(cpus[name])) for name in fns}
    return timings, results


def verdict(value: float, target: float, *, at_most: bool = False) -> str:
    """"target met" when ``value`` reaches ``target`` (at least it; with ``at_most``, at most it)."""
    met = value <= target if at_most else value >= target
    return "target met" if met else "target missed"
