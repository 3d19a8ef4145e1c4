"""CoCoEval behaviour frequencies: simulated continuations against human ones, as dataset averages.

For each behaviour type, the mean number of occurrences per continuation in the simulated set
(``model_mean``) and in the human set (``human_mean``), their difference and ratio, and seeded
percentile-bootstrap 95% intervals over conversations (the same resampled conversations for both
sides, since they share contexts). Comparison is between averages, never instance by instance: one
human continuation per context is an unbiased estimate of the human distribution only on average.

The summary number, ``mismatch``, is the total absolute difference of the per-type means over the
total human mean, in percent: 0 when the model reproduces every type's human frequency, 100 when it
produces none of the behaviours (or misplaces as many occurrences as humans produce).

Example (two conversations; hand-checked: Repetition 1.5 vs 0.5, Off Topic 0 vs 1):
    >>> out = score_frequencies([["Repetition", "Repetition"], ["Repetition"]],
    ...                         [["Repetition"], ["Off Topic", "Off Topic"]],
    ...                         behaviours=["Repetition", "Off Topic"], n_bootstrap=0)
    >>> out["model_mean"], out["human_mean"], out["mismatch"]
    ({'Repetition': 1.5, 'Off Topic': 0.0}, {'Repetition': 0.5, 'Off Topic': 1.0}, 133.33333333333334)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .._version import __version__

METRIC = "behavior_frequency"


def _taxonomy_names() -> list[str]:
    from ..cocoeval.taxonomy import load_taxonomy

    return [b.name for b in load_taxonomy()]


def _counts(rows: Sequence[Sequence[str]], names: list[str], field: str) -> Any:
    import numpy as np

    index = {name: i for i, name in enumerate(names)}
    matrix = np.zeros((len(rows), len(names)))
    for r, row in enumerate(rows):
        if isinstance(row, str) or not isinstance(row, Sequence):
            raise TypeError(f"row {r}: field {field!r} must be a list of behaviour names, got {row!r}")
        for name in row:
            if name not in index:
                raise ValueError(f"row {r}: field {field!r} names unknown behaviour {name!r}; known: {names}")
            matrix[r, index[name]] += 1
    return matrix


def _mismatch(model: Any, human: Any) -> float:
    total = float(human.sum())
    return 100.0 * float(abs(model - human).sum()) / total if total else math.nan


def _ci(samples: Any) -> list[float | None]:
    import numpy as np

    finite = samples[np.isfinite(samples)]
    if not len(finite):
        return [None, None]
    low, high = np.percentile(finite, [2.5, 97.5])
    return [float(low), float(high)]


def _tables(model: Any, human: Any, names: list[str]) -> dict[str, Any]:
    model_mean, human_mean = model.mean(axis=0), human.mean(axis=0)
    return {
        "model_mean": dict(zip(names, map(float, model_mean))),
        "human_mean": dict(zip(names, map(float, human_mean))),
        "difference": dict(zip(names, map(float, model_mean - human_mean))),
        "ratio": {n: (float(m / h) if h else None) for n, m, h in zip(names, model_mean, human_mean)},
        "mismatch": _mismatch(model_mean, human_mean),
        "n": int(model.shape[0]),
    }


def score_frequencies(
    predictions: Sequence[Sequence[str]],
    references: Sequence[Sequence[str]],
    *,
    sources: Sequence[str] | None = None,
    behaviours: Sequence[str] | None = None,
    n_bootstrap: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """Per-type mean frequencies, differences, ratios, intervals, per-source tables and the mismatch.

    Args:
        predictions: per simulated continuation, the behaviour names detected (one per occurrence).
        references: the same for the human continuation of the same context.
        sources: the source of each context, for ``per_source`` tables.
        behaviours: the type names (default: the built-in taxonomy); any other name is an error.
        n_bootstrap, seed: the percentile bootstrap over conversations (0: no intervals).
    """
    import numpy as np

    if not predictions:
        raise ValueError("no continuations to score")
    if len(predictions) != len(references):
        raise ValueError(f"got {len(predictions)} predictions but {len(references)} references")
    if sources is not None and len(sources) != len(predictions):
        raise ValueError(f"got {len(predictions)} predictions but {len(sources)} sources")
    if n_bootstrap < 0:
        raise ValueError(f"n_bootstrap must be 0 or more, got {n_bootstrap}")
    names = list(behaviours) if behaviours is not None else _taxonomy_names()
    model, human = _counts(predictions, names, "predictions"), _counts(references, names, "references")
    result = _tables(model, human, names)
    if n_bootstrap:
        rng = np.random.default_rng(seed)
        picks = rng.integers(0, len(model), size=(n_bootstrap, len(model)))
        model_means, human_means = model[picks].mean(axis=1), human[picks].mean(axis=1)
        mismatches = np.array([_mismatch(m, h) for m, h in zip(model_means, human_means)])
        result["intervals"] = {
            "model_mean": {n: _ci(model_means[:, i]) for i, n in enumerate(names)},
            "human_mean": {n: _ci(human_means[:, i]) for i, n in enumerate(names)},
            "difference": {n: _ci(model_means[:, i] - human_means[:, i]) for i, n in enumerate(names)},
            "mismatch": _ci(mismatches),
        }
    if sources is not None:
        groups: dict[str, list[int]] = {}
        for i, source in enumerate(sources):
            groups.setdefault(source, []).append(i)
        result["per_source"] = {s: _tables(model[rows], human[rows], names) for s, rows in groups.items()}
    result["signature"] = {"metric": METRIC, "convbench_version": __version__, "behaviours": names,
                           "n_bootstrap": n_bootstrap, "seed": seed, "interval": "percentile bootstrap 95%"}
    return result


def mean_with_interval(scores: Sequence[float], n_bootstrap: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Mean of 1-10 overall scores (consistency, collaborativeness) with a bootstrap 95% interval."""
    import numpy as np

    values = np.asarray(scores, dtype=float)
    if not len(values):
        raise ValueError("no scores")
    rng = np.random.default_rng(seed)
    boot = values[rng.integers(0, len(values), size=(n_bootstrap, len(values)))].mean(axis=1) if n_bootstrap else np.array([])
    return {"mean": float(values.mean()), "interval": _ci(boot) if n_bootstrap else [None, None], "n": int(len(values))}


def _ranks(values: Any) -> Any:
    """Average ranks (ties share the mean of their positions), as Spearman's rho needs."""
    import numpy as np

    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(1, len(values) + 1)
    for value in np.unique(values):
        tied = values == value
        ranks[tied] = ranks[tied].mean()
    return ranks


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rank correlation (Pearson's r of average ranks); NaN when either side is constant."""
    import numpy as np

    ra, rb = _ranks(np.asarray(a, dtype=float)), _ranks(np.asarray(b, dtype=float))
    if ra.std() == 0 or rb.std() == 0:
        return math.nan
    return float(np.corrcoef(ra, rb)[0, 1])


def rater_agreement(scores: Sequence[Sequence[float]], n_bootstrap: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Average leave-one-out Spearman of raters x items scores, with a one-sided bootstrap test.

    For each rater, Spearman between their scores and the mean of the other raters' scores; the
    statistic is the average over raters. The p-value is the share of bootstrap resamples of items
    whose statistic is at most 0 (H0: no positive agreement).
    """
    import numpy as np

    matrix = np.asarray(scores, dtype=float)
    if matrix.ndim != 2 or matrix.shape[0] < 2 or matrix.shape[1] < 3:
        raise ValueError("rater_agreement needs a raters x items matrix with at least 2 raters and 3 items")

    def statistic(m: Any) -> float:
        values = [spearman(m[r], np.delete(m, r, axis=0).mean(axis=0)) for r in range(m.shape[0])]
        finite = [v for v in values if not math.isnan(v)]
        return float(np.mean(finite)) if finite else math.nan

    value = statistic(matrix)
    rng = np.random.default_rng(seed)
    boot = np.array([statistic(matrix[:, rng.integers(0, matrix.shape[1], matrix.shape[1])]) for _ in range(n_bootstrap)])
    finite = boot[np.isfinite(boot)]
    p_value = float((finite <= 0).mean()) if len(finite) else None
    return {"loo_spearman": value, "interval": _ci(boot), "p_value": p_value, "raters": int(matrix.shape[0]),
            "items": int(matrix.shape[1])}
