"""CoCoEval's bootstrap intervals (issue #23): convbench's beside the same bootstrap written as plain vectorised numpy.

Both run in one process, interleaved round after round, on the same data (300 instances of the 10-type
taxonomy with its two groups, as the test split of the six sources) with the same seed, at 1,000 and
10,000 resamples. The reference draws the resamples, takes every resample's means as one matrix
product, stacks every statistic (per-type means, differences, ratios, the mismatch, the group totals)
as columns of one matrix and calls ``numpy.nanpercentile`` once: what a numpy user would write, and a
floor for convbench's ``_intervals``, which must give identical intervals (checked, exactly) within
1.2x of its time. Verdicts go by CPU time (wall time beside it).

Usage: python benchmarks/behavior_frequency_bootstrap.py [--resamples 1000 10000] [--instances 300] [--repeat 15]
"""

from __future__ import annotations

import argparse
import warnings
from typing import Any

import numpy as np

from convbench_datasets.cocoeval.taxonomy import load_taxonomy
from convbench_datasets.cocoeval.behavior_frequency import _clusters, _grouping, _intervals

from timing import interleaved, verdict  # benchmarks/timing.py (this folder is on sys.path when a script runs)

TARGET = 1.2  # convbench's time over the reference's, at most


def _data(instances: int, types: int, seed: int = 0) -> tuple[Any, Any]:
    rng = np.random.default_rng(seed)
    rates = rng.uniform(0.05, 2.0, size=types)  # occurrences per continuation, as a judge might find them
    return (rng.poisson(rates, size=(instances, types)).astype(float),
            rng.poisson(rates[::-1], size=(instances, types)).astype(float))


def numpy_bootstrap(model: Any, human: Any, resamples: int, seed: int, member: Any) -> list[list[float | None]]:
    """Every statistic's 95% percentile interval over instance resamples (NaN resamples left out), in one
    nanpercentile call."""
    n = len(model)
    draws = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    offsets = draws + n * np.arange(resamples)[:, None]  # how often each resample drew each instance
    times = np.bincount(offsets.ravel(), minlength=draws.size).reshape(draws.shape).astype(float)
    both = (times @ np.hstack([model, human])) / times.sum(axis=1)[:, None]
    m, h = both[:, : model.shape[1]], both[:, model.shape[1]:]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(h > 0, m / np.where(h > 0, h, 1), np.nan)
        totals = h.sum(axis=1)
        mismatch = np.where(totals > 0, 100.0 * np.abs(m - h).sum(axis=1) / np.where(totals > 0, totals, 1), np.nan)
    stacked = np.hstack([m, h, m - h, ratio, mismatch[:, None], m @ member, h @ member, m @ member - h @ member])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a column without any defined resample: NaN, as None below
        bounds = np.nanpercentile(stacked, [2.5, 97.5], axis=0).T
    return [[None, None] if np.isnan(low) else [float(low), float(high)] for low, high in bounds]


def flatten(intervals: dict[str, Any], names: list[str], groups: list[str]) -> list[list[float | None]]:
    """convbench's intervals in the reference's column order."""
    out = [intervals[key][n] for key in ("model_mean", "human_mean", "difference", "ratio") for n in names]
    out.append(intervals["mismatch"])
    return out + [intervals["by_group"][g][key] for key in ("model_mean", "human_mean", "difference") for g in groups]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--instances", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=15, help="interleaved rounds")
    args = parser.parse_args()

    taxonomy = load_taxonomy()
    names = [b.name for b in taxonomy]
    groups, member = _grouping(names, {b.name: b.group for b in taxonomy})
    model, human = _data(args.instances, len(names))
    clusters = _clusters(None, len(model))  # instances, the paper's unit
    for resamples in args.resamples:
        timings, results = interleaved({
            "numpy": lambda: numpy_bootstrap(model, human, resamples, 0, member),
            "convbench": lambda: _intervals(model, human, names, clusters, resamples, 0, (groups, member)),
        }, args.repeat)
        assert flatten(results["convbench"], names, groups) == results["numpy"], "the intervals differ"
        ours, reference = timings["convbench"], timings["numpy"]
        ratio = ours.cpu / reference.cpu
        print(f"{args.instances} instances, {len(names)} types, {resamples:,} resamples, {args.repeat} rounds; "
              f"{len(results['numpy'])} intervals identical")
        print(f"  vectorised numpy (reference) {reference.cpu * 1e3:8.1f} ms CPU {reference.wall * 1e3:8.1f} ms wall")
        print(f"  convbench _intervals         {ours.cpu * 1e3:8.1f} ms CPU {ours.wall * 1e3:8.1f} ms wall")
        print(f"  convbench / numpy: {ratio:.2f}x CPU ({ours.wall / reference.wall:.2f}x wall); target <= {TARGET}x: "
              f"{verdict(ratio, TARGET, at_most=True)}")


if __name__ == "__main__":
    main()
