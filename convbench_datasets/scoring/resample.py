"""Bootstrap resampling shared by the benchmarks' intervals and standard errors: which units each resample
draws (seeded, with replacement), how often, the means of the drawn units, and the standard error of a
statistic over its resamples.

The draws are ``numpy.random.default_rng(seed).integers``: the same seed and number of units give the same
resamples wherever they are drawn, so a harness's standard error and a run folder's interval of one metric
come from the same resamples.

Example (two units, values 100 and 0: resample means spread about 50 / sqrt(2)):
    >>> import numpy as np
    >>> times = resample_counts(2, n_bootstrap=2000, seed=0)
    >>> round(replicate_stderr(resampled_means(times, np.array([[100.0], [0.0]]), np.ones(2)))[0])
    35
"""

from __future__ import annotations

from typing import Any

from ..counts import MAX_RESAMPLES, check_count, check_seed


def bootstrap_draws(rng: Any, n_bootstrap: int, n_clusters: int) -> Any:
    """The cluster indices of every resample, one row per resample (``n_bootstrap`` x ``n_clusters``)."""
    return rng.integers(0, n_clusters, size=(n_bootstrap, n_clusters))


def draw_counts(draws: Any) -> Any:
    """How often each resample (row) drew each cluster (column), as floats for the matrix products."""
    import numpy as np

    n_resamples, n_clusters = draws.shape
    offsets = draws + n_clusters * np.arange(n_resamples)[:, None]  # one bincount over all resamples
    return np.bincount(offsets.ravel(), minlength=n_resamples * n_clusters).reshape(n_resamples, n_clusters).astype(float)


def resampled_means(times: Any, sums: Any, sizes: Any) -> Any:
    """Per resample, the per-type means of the rows of the clusters drawn ``times`` (resamples x types)."""
    return (times @ sums) / (times @ sizes)[:, None]


def resample_counts(n_units: int, n_bootstrap: int, seed: int) -> Any:
    """How often each of ``n_bootstrap`` resamples (rows) drew each of ``n_units`` units (columns), drawn
    with replacement (the draws of every interval and standard error)."""
    import numpy as np

    n_bootstrap, seed = check_count("n_bootstrap", n_bootstrap, most=MAX_RESAMPLES), check_seed("seed", seed)
    return draw_counts(bootstrap_draws(np.random.default_rng(seed), n_bootstrap, n_units))


def replicate_stderr(replicates: Any, units: int = 2) -> list[float | None]:
    """Per column of ``replicates`` (resamples x statistics), the standard deviation (ddof 1) of its finite
    values: None where fewer than two are finite, and every one None when the resamples were drawn from
    fewer than two ``units``."""
    import numpy as np

    out: list[float | None] = []
    for column in np.asarray(replicates, dtype=float).T:
        finite = column[np.isfinite(column)]
        out.append(float(finite.std(ddof=1)) if len(finite) > 1 and units > 1 else None)
    return out


def weighted_means(times: Any, values: Any) -> Any:
    """Per resample, the mean of each column of ``values`` (units x k) over the drawn units."""
    import numpy as np

    values = np.asarray(values, dtype=float).reshape(times.shape[1], -1)
    return resampled_means(times, values, np.ones(times.shape[1]))
