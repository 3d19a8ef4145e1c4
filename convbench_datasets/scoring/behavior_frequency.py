"""CoCoEval behaviour frequencies: simulated continuations against human ones, as dataset averages.

For each behaviour type, the mean number of occurrences per continuation in the simulated set
(``model_mean``) and in the human set (``human_mean``), their difference and ratio, and seeded
percentile-bootstrap 95% intervals over conversations (the same resampled conversations for both
sides, since they share contexts). Instances from one conversation are not independent, so when
``groups`` names each instance's conversation, whole conversations are resampled (a cluster
bootstrap); without it, instances are. Resamples where a statistic is undefined (a ratio or mismatch
with no human behaviour) are left out of its interval and counted in ``undefined_resamples``. Comparison is between averages, never instance by instance: one
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
from .inputs import as_row_list

METRIC = "behavior_frequency"


def _taxonomy_names() -> list[str]:
    from ..cocoeval.taxonomy import load_taxonomy

    return [b.name for b in load_taxonomy()]


def _counts(rows: Sequence[Sequence[str]], names: list[str], field: str) -> Any:
    import numpy as np

    index = {name: i for i, name in enumerate(names)}
    matrix = np.zeros((len(rows), len(names)))
    for r, row in enumerate(rows):
        found = as_row_list(row)  # a numpy array too: what Dataset.to_pandas() gives for a list column
        if found is None:
            raise TypeError(f"row {r}: field {field!r} must be a list of behaviour names, got {row!r}")
        for name in found:
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
    mismatch = _mismatch(model_mean, human_mean)
    return {
        "model_mean": dict(zip(names, map(float, model_mean))),
        "human_mean": dict(zip(names, map(float, human_mean))),
        "difference": dict(zip(names, map(float, model_mean - human_mean))),
        "ratio": {n: (float(m / h) if h else None) for n, m, h in zip(names, model_mean, human_mean)},
        "mismatch": None if math.isnan(mismatch) else mismatch,  # undefined without any human behaviour
        "n": int(model.shape[0]),
    }


def score_frequencies(
    predictions: Sequence[Sequence[str]],
    references: Sequence[Sequence[str]],
    *,
    sources: Sequence[str] | None = None,
    groups: Sequence[str] | None = None,
    behaviours: Sequence[str] | None = None,
    n_bootstrap: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """Per-type mean frequencies, differences, ratios, intervals, per-source tables and the mismatch.

    Args:
        predictions: per simulated continuation, the behaviour names detected (one per occurrence).
        references: the same for the human continuation of the same context.
        sources: the source of each context, for ``per_source`` tables.
        groups: the conversation of each context: resample conversations, not instances.
        behaviours: the type names (default: the built-in taxonomy); any other name is an error.
        n_bootstrap, seed: the percentile bootstrap over conversations (0: no intervals).
    """
    import numpy as np

    if not predictions:
        raise ValueError("no continuations to score")
    if len(predictions) != len(references):
        raise ValueError(f"got {len(predictions)} predictions but {len(references)} references")
    for name, column in (("sources", sources), ("groups", groups)):
        if column is not None and len(column) != len(predictions):
            raise ValueError(f"got {len(predictions)} predictions but {len(column)} {name}")
    if n_bootstrap < 0:
        raise ValueError(f"n_bootstrap must be 0 or more, got {n_bootstrap}")
    names = list(behaviours) if behaviours is not None else _taxonomy_names()
    model, human = _counts(predictions, names, "predictions"), _counts(references, names, "references")
    result = _tables(model, human, names)
    clusters = _clusters(groups, len(model))
    if n_bootstrap:
        result["intervals"] = _intervals(model, human, names, clusters, n_bootstrap, seed)
    if sources is not None:
        by_source: dict[str, list[int]] = {}
        for i, source in enumerate(sources):
            by_source.setdefault(source, []).append(i)
        result["per_source"] = {}
        for source, rows in by_source.items():
            table = _tables(model[rows], human[rows], names)
            if n_bootstrap:
                table["intervals"] = _intervals(model[rows], human[rows], names,
                                                _clusters([groups[i] for i in rows] if groups else None, len(rows)),
                                                n_bootstrap, seed)
            result["per_source"][source] = table
    result["signature"] = {"metric": METRIC, "convbench_version": __version__, "behaviours": names,
                           "n_bootstrap": n_bootstrap, "seed": seed,
                           "interval": "percentile bootstrap 95% over " + ("conversations" if groups else "instances")}
    return result


def _clusters(groups: Sequence[str] | None, n: int) -> list[list[int]]:
    if groups is None:
        return [[i] for i in range(n)]
    members: dict[str, list[int]] = {}
    for i, group in enumerate(groups):
        members.setdefault(group, []).append(i)
    return list(members.values())


def _intervals(model: Any, human: Any, names: list[str], clusters: list[list[int]], n_bootstrap: int,
               seed: int) -> dict[str, Any]:
    import numpy as np

    rng = np.random.default_rng(seed)
    model_means, human_means = [], []
    for _ in range(n_bootstrap):
        rows = [i for c in rng.integers(0, len(clusters), size=len(clusters)) for i in clusters[c]]
        model_means.append(model[rows].mean(axis=0))
        human_means.append(human[rows].mean(axis=0))
    m, h = np.array(model_means), np.array(human_means)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(h > 0, m / np.where(h > 0, h, 1), np.nan)
    mismatches = np.array([_mismatch(a, b) for a, b in zip(m, h)])
    return {
        "model_mean": {n: _ci(m[:, i]) for i, n in enumerate(names)},
        "human_mean": {n: _ci(h[:, i]) for i, n in enumerate(names)},
        "difference": {n: _ci(m[:, i] - h[:, i]) for i, n in enumerate(names)},
        "ratio": {n: _ci(ratios[:, i]) for i, n in enumerate(names)},
        "mismatch": _ci(mismatches),
        "undefined_resamples": {"mismatch": int(np.isnan(mismatches).sum()),
                                **{f"ratio {n}": int(np.isnan(ratios[:, i]).sum()) for i, n in enumerate(names)}},
    }


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
