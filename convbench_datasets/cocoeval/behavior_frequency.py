"""CoCoEval behaviour frequencies: simulated continuations against human ones, as dataset averages.

For each behaviour type, the mean number of occurrences per continuation in the simulated set
(``model_mean``) and in the human set (``human_mean``), their difference and ratio, and seeded
percentile-bootstrap 95% intervals (the same resampled contexts for both sides, since they share
them). By default instances are resampled: the CoCoEval paper's intervals are over its 300
conversations, one per instance. When ``groups`` names each instance's source conversation (the meeting
or debate it was cut from), whole source conversations are resampled instead (a cluster bootstrap, for
instances of one meeting that are not independent); the runner's ``bootstrap_unit`` picks one scheme
for every interval of a run. Resamples where a statistic is undefined (a ratio or mismatch
with no human behaviour) are left out of its interval and counted in ``undefined_resamples``. Comparison is between averages, never instance by instance: one
human continuation per context is an unbiased estimate of the human distribution only on average.

The summary number, ``mismatch`` (convbench's addition, not a statistic of the paper), is the total
absolute difference of the per-type means over the total human mean, in percent: 0 when the model
reproduces every type's human frequency, 100 when it produces none of the behaviours (or misplaces as
many occurrences as humans produce). Sampling noise alone keeps it above 0 even for a simulator that
behaves exactly like the humans, so ``mismatch_floor`` estimates that noise level from the human data
(see :func:`mismatch_floor`); read a mismatch against it.

The bootstrap draws, for each of ``n_bootstrap`` resamples, as many conversations with replacement as
there are, all resamples in one ``(n_bootstrap, conversations)`` matrix from one generator, and
computes every resample's means as a matrix product and the intervals of every statistic in one
percentile call. The draws are those the former one-resample-at-a-time loop made with the same seed;
only floating-point rounding may differ.

Example (two conversations; hand-checked: Repetition 1.5 vs 0.5, Off Topic 0 vs 1):
    >>> out = score_frequencies([["Repetition", "Repetition"], ["Repetition"]],
    ...                         [["Repetition"], ["Off Topic", "Off Topic"]],
    ...                         behaviours=["Repetition", "Off Topic"], n_bootstrap=0)
    >>> out["model_mean"], out["human_mean"], out["mismatch"]
    ({'Repetition': 1.5, 'Off Topic': 0.0}, {'Repetition': 0.5, 'Off Topic': 1.0}, 133.33333333333334)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from .._version import __version__
from ..class_labels import names_or_ids
from ..counts import MAX_RESAMPLES, check_count, check_seed
from ..scoring.inputs import as_row_list
from ..scoring.resample import bootstrap_draws, draw_counts, resampled_means
from .settings import SETTINGS

METRIC = "behavior_frequency"
# what the bootstrap resamples, without and with ``groups`` (the signature's words)
INTERVAL_UNITS = {False: "instances", True: "source conversations"}


def _taxonomy() -> dict[str, str]:
    """Built-in behaviour name -> its group (inconsistent or uncollaborative)."""
    from .taxonomy import load_taxonomy

    return {b.name: b.group for b in load_taxonomy()}


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


def _tables(model: Any, human: Any, names: list[str], grouping: tuple[list[str], Any] | None) -> dict[str, Any]:
    model_mean, human_mean = model.mean(axis=0), human.mean(axis=0)
    mismatch = _mismatch(model_mean, human_mean)
    table = {
        "model_mean": dict(zip(names, map(float, model_mean))),
        "human_mean": dict(zip(names, map(float, human_mean))),
        "difference": dict(zip(names, map(float, model_mean - human_mean))),
        "ratio": {n: (float(m / h) if h else None) for n, m, h in zip(names, model_mean, human_mean)},
        "mismatch": None if math.isnan(mismatch) else mismatch,  # undefined without any human behaviour
        "n": int(model.shape[0]),
    }
    if grouping is not None:
        group_names, member = grouping
        model_group, human_group = model_mean @ member, human_mean @ member
        table["by_group"] = {g: {"model_mean": float(m), "human_mean": float(h), "difference": float(m - h)}
                             for g, m, h in zip(group_names, model_group, human_group)}
    return table


def _grouping(names: list[str], behaviour_groups: Mapping[str, str] | None) -> tuple[list[str], Any] | None:
    """(group names, types x groups 0/1 matrix): per-group totals are per-type means summed over members."""
    import numpy as np

    if behaviour_groups is None:
        return None
    missing = [n for n in names if n not in behaviour_groups]
    if missing:
        raise ValueError(f"behaviour_groups: no group for behaviour(s) {missing}")
    group_names = list(dict.fromkeys(behaviour_groups[n] for n in names))
    member = np.array([[behaviour_groups[n] == g for g in group_names] for n in names], dtype=float)
    return group_names, member


def score_frequencies(
    predictions: Sequence[Sequence[str]],
    references: Sequence[Sequence[str]],
    *,
    sources: Sequence[str] | None = None,
    groups: Sequence[str] | None = None,
    behaviours: Sequence[str] | None = None,
    behaviour_groups: Mapping[str, str] | None = None,
    n_bootstrap: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """Per-type mean frequencies, differences, ratios, intervals, per-source tables, the mismatch and its floor.

    Args:
        predictions: per simulated continuation, the behaviour names detected (one per occurrence).
        references: the same for the human continuation of the same context.
        sources: the source of each context, for ``per_source`` tables (a class id, what the ``source``
            column of a loaded dataset holds, counts as its name).
        groups: the source conversation of each context: resample whole source conversations, not
            instances (default: instances, as the paper); the mismatch floor then splits by them too.
        behaviours: the type names (default: the built-in taxonomy); any other name is an error.
        behaviour_groups: type name -> group, for ``by_group`` totals (default with the built-in
            taxonomy: its groups; with your ``behaviours``: none unless given).
        n_bootstrap, seed: the percentile bootstrap (0: no intervals); the seed also draws the splits
            of ``mismatch_floor``.
    """
    if not predictions:
        raise ValueError("no continuations to score")
    if len(predictions) != len(references):
        raise ValueError(f"got {len(predictions)} predictions but {len(references)} references")
    sources = names_or_ids(sources, tuple(SETTINGS))  # a loaded dataset's class ids read as source names
    for name, column in (("sources", sources), ("groups", groups)):
        if column is not None and len(column) != len(predictions):
            raise ValueError(f"got {len(predictions)} predictions but {len(column)} {name}")
    n_bootstrap, seed = check_count("n_bootstrap", n_bootstrap, most=MAX_RESAMPLES), check_seed("seed", seed)
    if behaviours is None:
        built_in = _taxonomy()
        names, behaviour_groups = list(built_in), behaviour_groups if behaviour_groups is not None else built_in
    else:
        names = list(behaviours)
    grouping = _grouping(names, behaviour_groups)
    model, human = _counts(predictions, names, "predictions"), _counts(references, names, "references")
    everything = object()  # the key of the whole set among the sources' row sets
    row_sets: dict[Any, list[int]] = {everything: list(range(len(model)))}
    if sources is not None:
        for i, source in enumerate(sources):
            row_sets.setdefault(source, []).append(i)
    tables = {}
    for source, rows in row_sets.items():
        table = _tables(model[rows], human[rows], names, grouping)
        clusters = _clusters([groups[i] for i in rows] if groups is not None else None, len(rows))
        table["mismatch_floor"] = mismatch_floor(human[rows], clusters, seed=seed)
        if n_bootstrap:
            table["intervals"] = _intervals(model[rows], human[rows], names, clusters, n_bootstrap, seed, grouping)
        tables[source] = table
    result = tables.pop(everything)
    if sources is not None:
        result["per_source"] = tables
    result["signature"] = {"metric": METRIC, "convbench_version": __version__, "behaviours": names,
                           "behaviour_groups": dict(zip(names, (behaviour_groups[n] for n in names))) if grouping else None,
                           "n_bootstrap": n_bootstrap, "seed": seed,
                           "interval": "percentile bootstrap 95% over " + INTERVAL_UNITS[groups is not None],
                           "mismatch_floor": f"split-half, {FLOOR_SPLITS} splits, scaled to n vs n"}
    return result


def _clusters(groups: Sequence[str] | None, n: int) -> list[list[int]]:
    if groups is None:
        return [[i] for i in range(n)]
    members: dict[str, list[int]] = {}
    for i, group in enumerate(groups):
        members.setdefault(group, []).append(i)
    return list(members.values())


def _cluster_totals(matrix: Any, clusters: list[list[int]]) -> tuple[Any, Any]:
    """(clusters x types sums, cluster sizes): a resample's mean is its clusters' sums over their sizes."""
    import numpy as np

    sizes = np.fromiter(map(len, clusters), dtype=float, count=len(clusters))
    if (sizes == 1).all():  # instances, the default unit: each cluster's sum is its row (no call per cluster)
        return matrix[[rows[0] for rows in clusters]].reshape(len(clusters), matrix.shape[1]), sizes
    sums = np.array([matrix[rows].sum(axis=0) for rows in clusters]).reshape(len(clusters), matrix.shape[1])
    return sums, sizes


def _mismatches(m: Any, h: Any) -> Any:
    """Row-wise :func:`_mismatch` (NaN where a row has no human behaviour)."""
    import numpy as np

    totals = h.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(totals > 0, 100.0 * np.abs(m - h).sum(axis=1) / np.where(totals > 0, totals, 1), np.nan)


def _intervals(model: Any, human: Any, names: list[str], clusters: list[list[int]], n_bootstrap: int,
               seed: int, grouping: tuple[list[str], Any] | None = None) -> dict[str, Any]:
    import numpy as np

    times = draw_counts(bootstrap_draws(np.random.default_rng(seed), n_bootstrap, len(clusters)))
    (model_sums, sizes), (human_sums, _) = _cluster_totals(model, clusters), _cluster_totals(human, clusters)
    both = resampled_means(times, np.hstack([model_sums, human_sums]), sizes)  # one product for both sides
    m, h = both[:, : model.shape[1]], both[:, model.shape[1] :]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(h > 0, m / np.where(h > 0, h, 1), np.nan)
    mismatches = _mismatches(m, h)
    statistics = [m, h, m - h, ratios, mismatches[:, None]]
    if grouping is not None:
        mg, hg = m @ grouping[1], h @ grouping[1]
        statistics += [mg, hg, mg - hg]
    bounds = iter(_cis(np.hstack(statistics)))  # every statistic's interval at once, in the order stacked
    intervals = {key: {n: next(bounds) for n in names} for key in ("model_mean", "human_mean", "difference", "ratio")}
    intervals["mismatch"] = next(bounds)
    intervals["undefined_resamples"] = {"mismatch": int(np.isnan(mismatches).sum()),
                                        **{f"ratio {n}": int(np.isnan(ratios[:, i]).sum()) for i, n in enumerate(names)}}
    if grouping is not None:
        per_group = {key: [next(bounds) for _ in grouping[0]] for key in ("model_mean", "human_mean", "difference")}
        intervals["by_group"] = {g: {key: per_group[key][j] for key in per_group} for j, g in enumerate(grouping[0])}
    return intervals


def _cis(samples: Any) -> list[list[float | None]]:
    """:func:`_ci` of each column, the same values: the columns without an undefined resample in one
    percentile call (a call per column, 47 with the taxonomy's groups, was a third of the bootstrap)."""
    import numpy as np

    finite = np.isfinite(samples).all(axis=0)
    together = iter(np.percentile(samples[:, finite], [2.5, 97.5], axis=0).T.tolist()) if finite.any() else iter(())
    return [next(together) if ok else _ci(samples[:, j]) for j, ok in enumerate(finite.tolist())]


FLOOR_SPLITS = 200  # random halvings averaged by mismatch_floor


def split_half_mismatch(human: Any, clusters: list[list[int]], orders: Any) -> Any:
    """Per row of ``orders`` (a permutation of the clusters), the mismatch between the first half of the
    clusters and the rest, both taken from the human data, scaled to two sets of the data's full size.

    The mismatch's denominator is the human total of all the data. The scale factor
    ``sqrt((2 / n) / (1 / n_a + 1 / n_b))`` carries the noise between halves of n_a and n_b instances to
    the noise between two sets of n (a model's n continuations against the n human ones): the spread of
    a difference of means grows with ``sqrt(1 / n_a + 1 / n_b)``.
    """
    import numpy as np

    sums, sizes = _cluster_totals(human, clusters)
    half = len(clusters) // 2
    first = np.zeros(orders.shape)
    np.put_along_axis(first, orders[:, :half], 1.0, axis=1)
    second = 1.0 - first
    n_a, n_b = first @ sizes, second @ sizes
    mean_a, mean_b = (first @ sums) / n_a[:, None], (second @ sums) / n_b[:, None]
    total = float(human.mean(axis=0).sum())
    if not total:
        return np.full(len(orders), np.nan)
    n = float(sizes.sum())
    return 100.0 * np.abs(mean_a - mean_b).sum(axis=1) / total * np.sqrt((2 / n) / (1 / n_a + 1 / n_b))


def mismatch_floor(human: Any, clusters: list[list[int]], splits: int = FLOOR_SPLITS, seed: int = 0) -> float | None:
    """The mismatch a simulator behaving exactly like the humans would get from sampling noise alone.

    Estimated without a model: the human data's conversations are split at random into two halves
    ``splits`` times, the mismatch between the halves is scaled to two sets of the data's size (see
    :func:`split_half_mismatch`) and averaged. Model and human continuations share their contexts while
    two halves do not, so where contexts explain much of the counts this errs high (a conservative
    floor). None with fewer than two conversations or no human behaviour.
    """
    import numpy as np

    if len(clusters) < 2:
        return None
    rng = np.random.default_rng([seed, 1])  # its own stream: the floor does not shift the bootstrap's draws
    orders = rng.permuted(np.tile(np.arange(len(clusters)), (splits, 1)), axis=1)
    values = split_half_mismatch(human, clusters, orders)
    return None if np.isnan(values).all() else float(values.mean())


def mean_with_interval(scores: Sequence[float], n_bootstrap: int = 1000, seed: int = 0,
                       groups: Sequence[str] | None = None) -> dict[str, Any]:
    """Mean of 1-10 overall scores (consistency, collaborativeness) with a percentile-bootstrap 95%
    interval: over the scores' instances, or with ``groups`` (each score's source conversation) over
    whole source conversations, as :func:`score_frequencies` resamples."""
    import numpy as np

    values = np.asarray(scores, dtype=float)
    if not len(values):
        raise ValueError("no scores")
    if groups is not None and len(groups) != len(values):
        raise ValueError(f"got {len(values)} scores but {len(groups)} groups")
    interval: list[float | None] = [None, None]
    if n_bootstrap:
        clusters = _clusters(groups, len(values))
        times = draw_counts(bootstrap_draws(np.random.default_rng(seed), n_bootstrap, len(clusters)))
        interval = _ci(resampled_means(times, *_cluster_totals(values[:, None], clusters))[:, 0])
    return {"mean": float(values.mean()), "interval": interval, "n": int(len(values))}


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rank correlation (Pearson's r of average ranks); NaN when either side is constant."""
    from ..scoring.rank_correlation import spearman_rows

    if len(a) != len(b):
        raise ValueError(f"spearman needs two sequences of one length, got {len(a)} and {len(b)}")
    return float(spearman_rows(a, b))


def rater_agreement(scores: Sequence[Sequence[float]], n_bootstrap: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Average leave-one-out Spearman of raters x items scores, with a one-sided bootstrap test.

    For each rater, Spearman between their scores and the mean of the other raters' scores; the
    statistic is the average over raters. The p-value is the share of bootstrap resamples of items
    whose statistic is at most 0 (H0: no positive agreement).
    """
    import numpy as np

    from ..scoring.rank_correlation import loo_spearman, mean_finite

    matrix = np.asarray(scores, dtype=float)
    if matrix.ndim != 2 or matrix.shape[0] < 2 or matrix.shape[1] < 3:
        raise ValueError("rater_agreement needs a raters x items matrix with at least 2 raters and 3 items")
    value = float(mean_finite(loo_spearman(matrix)))
    rng = np.random.default_rng(seed)
    samples = rng.integers(0, matrix.shape[1], size=(n_bootstrap, matrix.shape[1]))
    boot = mean_finite(loo_spearman(np.moveaxis(matrix[:, samples], 1, 0)))  # all resamples at once: (B, raters, items)
    finite = boot[np.isfinite(boot)]
    p_value = float((finite <= 0).mean()) if len(finite) else None
    return {"loo_spearman": value, "interval": _ci(boot), "p_value": p_value, "raters": int(matrix.shape[0]),
            "items": int(matrix.shape[1])}
