"""Paired tests of two NC-Bench runs on the same rows (``convbench compare``, the report's comparisons):
the statistics are :func:`convbench_datasets.scoring.paired.paired_test`'s; this module pairs NC-Bench's
rows (by set and id) and groups them by pattern and set."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..scoring.paired import paired_test


def compare_nc_runs(records_a: Sequence[dict[str, Any]], records_b: Sequence[dict[str, Any]], *,
                    n_resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Paired tests of two NC-Bench runs (accuracy differences in points): overall, per pattern (pooled
    over sets), per set, and per set and pattern (keys ``"set/pattern"``)."""
    by_key_b = {(r["set"], r["id"]): r for r in records_b}
    keys = [(r["set"], r["id"]) for r in records_a]
    if set(keys) != set(by_key_b) or len(keys) != len(records_b):
        raise ValueError("the two runs did not score the same rows; compare runs of the same config and limit")
    pairs = [(r, by_key_b[(r["set"], r["id"])]) for r in records_a]

    def test(rows: list[tuple[dict, dict]]) -> dict[str, Any]:
        out = paired_test([float(a["passed"]) for a, _ in rows], [float(b["passed"]) for _, b in rows],
                          n_resamples=n_resamples, seed=seed)
        for key in ("mean_a", "mean_b", "difference"):
            out[key] *= 100.0
        out["interval"] = [100.0 * v for v in out["interval"]]
        return out

    patterns: dict[str, list[tuple[dict, dict]]] = {}
    sets: dict[str, list[tuple[dict, dict]]] = {}
    set_patterns: dict[tuple[str, str], list[tuple[dict, dict]]] = {}
    for a, b in pairs:
        patterns.setdefault(a["pattern"], []).append((a, b))
        sets.setdefault(a["set"], []).append((a, b))
        set_patterns.setdefault((a["set"], a["pattern"]), []).append((a, b))
    return {
        "overall": test(pairs),
        "per_pattern": {p: test(rows) for p, rows in patterns.items()},
        "per_set": {s: test(rows) for s, rows in sets.items()},
        "per_set_pattern": {f"{s}/{p}": test(rows) for (s, p), rows in set_patterns.items()},
    }
