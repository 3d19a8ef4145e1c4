"""Comparing two runs on the same rows: paired bootstrap and approximate randomisation.

Both tests take per-row scores of run A and run B (1/0 pass flags for NC-Bench) on the same rows, in
the same order, and test the difference of their means:

- paired bootstrap: resample rows with replacement; the 95% interval of mean(A) - mean(B), and the
  two-sided p-value ``2 * min((1 + #{diff* <= 0}), (1 + #{diff* >= 0})) / (1 + resamples)`` (capped at
  1; never 0, which a finite number of resamples cannot show);
- approximate randomisation: swap each row's A and B scores with probability 1/2; the p-value is
  ``(1 + #{|diff*| >= |diff|}) / (1 + trials)``.

Identical runs give p = 1; a run better on every row gives p near 0.

Several comparisons at once (overall, per set, per pattern: ``convbench compare`` prints 33) need their
p-values adjusted for the family, or some are "significant" by chance: :func:`adjust` gives Holm's
(family-wise error, the default) or Benjamini-Hochberg's (false discovery rate) adjusted p-values.

Example:
    >>> out = paired_test([1, 1, 0, 1], [1, 1, 0, 1], n_resamples=200)
    >>> out["difference"], out["p_bootstrap"], out["p_randomization"]
    (0.0, 1.0, 1.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..counts import MAX_RESAMPLES, check_count, check_seed

SIGNIFICANCE = 0.05


def paired_test(a: Sequence[float], b: Sequence[float], *, n_resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    import numpy as np

    n_resamples = check_count("n_resamples", n_resamples, least=1, most=MAX_RESAMPLES)
    seed = check_seed("seed", seed)

    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape or x.ndim != 1 or not len(x):
        raise ValueError(f"paired scores need the same non-zero number of rows, got {len(x)} and {len(y)}")
    diff = x - y
    observed = float(diff.mean())
    rng = np.random.default_rng(seed)
    boot = diff[rng.integers(0, len(diff), size=(n_resamples, len(diff)))].mean(axis=1)
    tail = min(int((boot <= 0).sum()), int((boot >= 0).sum()))
    p_boot = 1.0 if np.all(diff == 0) else min(1.0, 2 * (1 + tail) / (1 + n_resamples))
    signs = rng.choice([-1.0, 1.0], size=(n_resamples, len(diff)))
    permuted = np.abs((signs * diff).mean(axis=1))
    p_ar = float((1 + (permuted >= abs(observed) - 1e-12).sum()) / (1 + n_resamples))
    low, high = np.percentile(boot, [2.5, 97.5])
    return {
        "n": int(len(diff)), "mean_a": float(x.mean()), "mean_b": float(y.mean()), "difference": observed,
        "interval": [float(low), float(high)], "p_bootstrap": p_boot, "p_randomization": p_ar,
        "significant": bool(max(p_boot, p_ar) < SIGNIFICANCE), "n_resamples": n_resamples, "seed": seed,
        "identical": bool(np.all(diff == 0)),  # every row scored alike: nothing to test
    }


CORRECTIONS = ("holm", "bh", "none")  # convbench compare --correction: Holm (default), Benjamini-Hochberg, none


def adjust(pvalues: Sequence[float], method: str = "holm") -> list[float]:
    """The p-values of a family of tests adjusted by ``method``: ``holm`` (step-down: the i-th smallest times
    m - i + 1, made non-decreasing), ``bh`` (Benjamini-Hochberg step-up: the i-th smallest times m / i, made
    non-increasing from the largest), ``none``; each capped at 1, in the order given.

    Example (by hand: sorted 0.005, 0.01, 0.03, 0.04; Holm x4, x3, x2, x1 = 0.02, 0.03, 0.06, 0.04 -> 0.06;
    BH x4/1, x4/2, x4/3, x4/4 = 0.02, 0.02, 0.04, 0.04):
        >>> [round(p, 4) for p in adjust([0.01, 0.04, 0.03, 0.005], "holm")]
        [0.03, 0.06, 0.06, 0.02]
        >>> [round(p, 4) for p in adjust([0.01, 0.04, 0.03, 0.005], "bh")]
        [0.02, 0.04, 0.04, 0.02]
    """
    if method not in CORRECTIONS:
        raise ValueError(f"correction must be one of {', '.join(CORRECTIONS)}, got {method!r}")
    m = len(pvalues)
    if method == "none" or not m:
        return [min(1.0, float(p)) for p in pvalues]
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    if method == "holm":
        running = 0.0
        for rank, i in enumerate(order):
            running = max(running, (m - rank) * float(pvalues[i]))
            adjusted[i] = min(1.0, running)
    else:
        running = 1.0
        for rank in range(m - 1, -1, -1):
            i = order[rank]
            running = min(running, m * float(pvalues[i]) / (rank + 1))
            adjusted[i] = min(1.0, running)
    return adjusted


def adjust_family(tests: Sequence[dict[str, Any]], method: str = "holm") -> None:
    """Add ``p_adjusted`` (of the larger of a test's two p-values, the one :func:`paired_test`'s significance
    reads) and ``correction`` to each of ``tests``, and make ``significant`` read the adjusted value."""
    adjusted = adjust([max(t["p_bootstrap"], t["p_randomization"]) for t in tests], method)
    for test, p in zip(tests, adjusted):
        test.update(p_adjusted=p, correction=method, significant=bool(p < SIGNIFICANCE))
