"""Bootstrap standard errors of convbench's corpus metrics, for the harnesses' ``<metric>_stderr`` keys.

NICO's BLEU is a corpus statistic (summed matches over summed n-grams), its identification F1 the
harmonic mean of two averages, CoCoEval's mismatch a ratio of summed differences: a standard error of
per-sample values would be wrong for them. Each standard error here is the standard deviation (with
Bessel's correction) of the statistic over ``n_bootstrap`` resamples of the units (NICO: the
prediction-reference pairs or dialogues; CoCoEval: the instances, or whole source conversations), each
resample recomputed from the resampled per-unit statistics exactly as the metric computes it from all
of them. The draws are CoCoEval's (``behavior_frequency.bootstrap_draws`` from
``numpy.random.default_rng(seed)``): the same seed and units in the same order give the same numbers,
and CoCoEval's are drawn as the run folder's intervals are. A resample where a statistic is undefined
(no dialogue with unnatural sentences drawn, no human behaviour) is left out of its standard error;
one with fewer than two defined resamples, or of fewer than two units (one unit has no spread to
estimate: every resample is that unit), is None.

Example (ROUGE-L of two pairs, 100 and 0: resample means spread about 50 / sqrt(2)):
    >>> from convbench_datasets.scoring.nico_generation import pair_statistics
    >>> stats = pair_statistics(["我 很 好", "你"], ["我 很 好", "他"], tokenizer="char")
    >>> round(generation_stderr(stats, n_bootstrap=2000)["rouge_l_stderr"])
    35
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..counts import MAX_RESAMPLES, check_count, check_seed
from .behavior_frequency import (
    _cluster_totals,
    _clusters,
    _counts,
    _mismatches,
    bootstrap_draws,
    draw_counts,
    resampled_means,
)
from .nico_generation import MAX_ORDER, PairStats, bleu_from_sums

N_BOOTSTRAP, SEED = 1000, 0  # NICO's defaults in the harnesses (CoCoEval's tasks take their own)


def resample_counts(n_units: int, n_bootstrap: int = N_BOOTSTRAP, seed: int = SEED) -> Any:
    """How often each of ``n_bootstrap`` resamples (rows) drew each of ``n_units`` units (columns), drawn
    with replacement as CoCoEval's intervals draw them."""
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


def _weighted_means(times: Any, values: Any) -> Any:
    """Per resample, the mean of each column of ``values`` (units x k) over the drawn units."""
    import numpy as np

    values = np.asarray(values, dtype=float).reshape(times.shape[1], -1)
    return resampled_means(times, values, np.ones(times.shape[1]))


def generation_stderr(stats: Sequence[PairStats], n_bootstrap: int = N_BOOTSTRAP, seed: int = SEED,
                      bertscore_f1: Sequence[float] | None = None) -> dict[str, float | None]:
    """``<key>_stderr`` of ``score_generation``'s BLEU-1/2 (corpus BLEU of each resample's summed
    statistics), ROUGE-L, Distinct-1/2 (per-response, the default level), ``avg_len`` and, given each
    pair's BERTScore F1 (0-1), ``bertscore_f1``; percentages as the metrics (``avg_len`` in tokens)."""
    import numpy as np

    if not stats:
        raise ValueError("no pairs to resample")
    times = resample_counts(len(stats), n_bootstrap, seed)
    sums = times @ np.array([[*s.correct, *s.total, len(s.hyp), s.ref_len] for s in stats], dtype=float)
    sums = np.rint(sums).astype(np.int64).tolist()  # counts times integers: exact
    bleu = np.array([bleu_from_sums(row[:MAX_ORDER], row[MAX_ORDER:2 * MAX_ORDER], row[-2], row[-1]) for row in sums])
    per_pair = [[100.0 * s.rouge_l, *(100.0 * d for d in s.distinct), len(s.hyp)] for s in stats]
    keys = ["bleu_1", "bleu_2", "rouge_l", "distinct_1", "distinct_2", "avg_len"]
    columns = [bleu, _weighted_means(times, per_pair)]
    if bertscore_f1 is not None:
        if len(bertscore_f1) != len(stats):
            raise ValueError(f"got {len(stats)} pairs but {len(bertscore_f1)} BERTScore F1 values")
        columns.append(_weighted_means(times, 100.0 * np.asarray(bertscore_f1, dtype=float)))
        keys.append("bertscore_f1")
    return dict(zip((f"{key}_stderr" for key in keys), replicate_stderr(np.hstack(columns), len(stats))))


def identify_stderr(rows: Sequence[Mapping[str, Any]], n_bootstrap: int = N_BOOTSTRAP,
                    seed: int = SEED) -> dict[str, float | None]:
    """``<key>_stderr`` of ``score_unnatural``'s macro P/R/F1 and ``*_containing`` (percent), from its rows
    (each with ``precision`` and ``recall`` in 0-1 and ``contains``): per resample the averages over the
    drawn dialogues (``*_containing``: over those drawn with gold sentences) and F1 as their harmonic mean."""
    import numpy as np

    if not rows:
        raise ValueError("no rows to resample")
    times = resample_counts(len(rows), n_bootstrap, seed)
    values = np.array([[r["precision"], r["recall"]] for r in rows], dtype=float)
    contains = np.array([bool(r["contains"]) for r in rows], dtype=float)
    columns = []
    for weights in (times, times * contains):  # all dialogues; those containing unnatural sentences
        drawn = weights.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            p, r = ((weights @ values) / drawn[:, None]).T  # NaN where no such dialogue was drawn
            f1 = np.where(p + r > 0, 2 * p * r / np.where(p + r > 0, p + r, 1), np.where(np.isnan(p), np.nan, 0.0))
        columns += [100.0 * p, 100.0 * r, 100.0 * f1]
    keys = ("precision", "recall", "f1", "precision_containing", "recall_containing", "f1_containing")
    return dict(zip((f"{key}_stderr" for key in keys), replicate_stderr(np.column_stack(columns), len(rows))))


def frequency_stderr(predictions: Sequence[Sequence[str]], references: Sequence[Sequence[str]],
                     behaviours: Sequence[str], ratings: Mapping[str, Sequence[float]], n_bootstrap: int, seed: int,
                     groups: Sequence[str] | None = None) -> dict[str, Any]:
    """Standard errors of CoCoEval's per-type mean frequencies (``predictions``, ``references``: per instance
    the behaviour names found, as ``score_frequencies`` takes them), its ``mismatch`` and the mean of each
    ``ratings`` column (one number per instance), over the resamples ``score_frequencies`` and
    ``mean_with_interval`` draw with this seed: of instances, or with ``groups`` (each instance's source
    conversation) of whole source conversations. ``{"model": {type: x}, "human": {type: x}, "mismatch": x,
    "ratings": {name: x}}``."""
    import numpy as np

    names = list(behaviours)
    model, human = _counts(predictions, names, "predictions"), _counts(references, names, "references")
    clusters = _clusters(groups, len(model))
    times = resample_counts(len(clusters), n_bootstrap, seed)
    scales = list(ratings)
    rated = (np.column_stack([np.asarray(ratings[n], dtype=float) for n in scales]) if scales
             else np.zeros((len(model), 0)))
    means = resampled_means(times, *_cluster_totals(np.hstack([model, human, rated]), clusters))
    k = len(names)
    mismatch = _mismatches(means[:, :k], means[:, k : 2 * k])
    errors = replicate_stderr(np.hstack([means, mismatch[:, None]]), len(clusters))
    return {"model": dict(zip(names, errors[:k])), "human": dict(zip(names, errors[k : 2 * k])),
            "ratings": dict(zip(scales, errors[2 * k : -1])), "mismatch": errors[-1]}
