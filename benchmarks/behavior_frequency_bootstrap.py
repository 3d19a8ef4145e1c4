"""Time CoCoEval's cluster bootstrap: the former one-resample-at-a-time loop against the vectorised one.

Both run in the same process on the same data (300 instances of the 10-type taxonomy, three instances
per conversation, as the test split of the six sources) with the same seed, so they draw the same
conversations; the script checks that their intervals agree, then prints each one's median time and
the ratio. The loop is the bootstrap as convbench computed it before (a Python loop per resample,
concatenating the drawn conversations' rows); it lives here only as the reference.
Ratios are what matter: these machines are noisy.

Usage: python benchmarks/behavior_frequency_bootstrap.py [--resamples 10000] [--instances 300] [--repeat 3]
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from convbench_datasets.cocoeval.taxonomy import load_taxonomy
from convbench_datasets.scoring.behavior_frequency import _clusters, _intervals

from timing import median_time  # benchmarks/timing.py (this folder is on sys.path when a script runs)


def _data(instances: int, types: int, seed: int = 0) -> tuple[Any, Any, list[str]]:
    rng = np.random.default_rng(seed)
    rates = rng.uniform(0.05, 2.0, size=types)  # occurrences per continuation, as a judge might find them
    model = rng.poisson(rates, size=(instances, types)).astype(float)
    human = rng.poisson(rates[::-1], size=(instances, types)).astype(float)
    return model, human, [f"c{i // 3}" for i in range(instances)]


def _loop(model: Any, human: Any, clusters: list[list[int]], resamples: int, seed: int) -> dict[str, list[float]]:
    """The reference: each resample drawn, its rows gathered and averaged in Python."""
    rng = np.random.default_rng(seed)
    model_means, human_means = [], []
    for _ in range(resamples):
        rows = [i for c in rng.integers(0, len(clusters), size=len(clusters)) for i in clusters[c]]
        model_means.append(model[rows].mean(axis=0))
        human_means.append(human[rows].mean(axis=0))
    m, h = np.array(model_means), np.array(human_means)
    mismatches = np.array([100 * abs(a - b).sum() / b.sum() if b.sum() else np.nan for a, b in zip(m, h)])
    return {"model_mean": list(np.percentile(m, [2.5, 97.5], axis=0).T.ravel()),
            "mismatch": list(np.percentile(mismatches[np.isfinite(mismatches)], [2.5, 97.5]))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--instances", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    names = [b.name for b in load_taxonomy()]
    model, human, groups = _data(args.instances, len(names))
    clusters = _clusters(groups, len(model))
    loop_s, reference = median_time(lambda: _loop(model, human, clusters, args.resamples, seed=0), args.repeat)
    vector_s, vectorised = median_time(lambda: _intervals(model, human, names, clusters, args.resamples, 0), args.repeat)
    flat = [bound for name in names for bound in vectorised["model_mean"][name]]
    assert np.allclose(flat, reference["model_mean"]), "the two bootstraps disagree"
    assert np.allclose(vectorised["mismatch"], reference["mismatch"]), "the two bootstraps disagree on the mismatch"

    print(f"{args.instances} instances, {len(clusters)} conversations, {len(names)} types, {args.resamples} resamples; "
          f"intervals agree")
    print(f"{'bootstrap':<34}{'seconds':>10}{'vs loop':>10}")
    for label, seconds in (("loop per resample (reference)", loop_s), ("vectorised (convbench)", vector_s)):
        print(f"{label:<34}{seconds:>10.3f}{seconds / loop_s:>10.3f}")
    print(f"speed-up: {loop_s / vector_s:.1f}x")


if __name__ == "__main__":
    main()
