"""Timing for the benchmark scripts: the median of repeated runs (these machines are noisy)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def median_time(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """(median seconds over ``repeat`` calls of ``fn``, the last call's result)."""
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result
