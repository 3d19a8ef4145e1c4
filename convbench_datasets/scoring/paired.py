"""Comparing two runs on the same rows: paired bootstrap and approximate randomisation.

Both tests take per-row scores of run A and run B (1/0 pass flags for NC-Bench) on the same rows, in
the same order, and test the difference of their means:

- paired bootstrap: resample rows with replacement; the 95% interval of mean(A) - mean(B), and the
  two-sided p-value ``2 * min((1 + #{diff* <= 0}), (1 + #{diff* >= 0})) / (1 + resamples)`` (capped at
  1; never 0, which a finite number of resamples cannot show);
- approximate randomisation: swap each row's A and B scores with probability 1/2; the p-value is
  ``(1 + #{|diff*| >= |diff|}) / (1 + trials)``.

Identical runs give p = 1; a run better on every row gives p near 0.

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
    }
