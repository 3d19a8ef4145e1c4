"""Bootstrap standard errors of NICO's corpus metrics, for the harnesses' ``<metric>_stderr`` keys.

NICO's BLEU is a corpus statistic (summed matches over summed n-grams) and its identification F1 the
harmonic mean of two averages: a standard error of per-sample values would be wrong for them. Each
standard error here is the standard deviation (with Bessel's correction) of the statistic over
``n_bootstrap`` resamples of the prediction-reference pairs (or dialogues), each resample recomputed from
the resampled per-pair statistics exactly as the metric computes it from all of them
(:mod:`..scoring.resample` draws them). A resample where a statistic is undefined (no dialogue with
unnatural sentences drawn) is left out of its standard error; one with fewer than two defined resamples,
or of fewer than two pairs (one pair has no spread to estimate), is None.

Example (ROUGE-L of two pairs, 100 and 0: resample means spread about 50 / sqrt(2)):
    >>> from convbench_datasets.nico.nico_generation import pair_statistics
    >>> stats = pair_statistics(["我 很 好", "你"], ["我 很 好", "他"], tokenizer="char")
    >>> round(generation_stderr(stats, n_bootstrap=2000)["rouge_l_stderr"])
    35
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..scoring.resample import replicate_stderr, resample_counts, weighted_means
from ..scoring.lcs import lcs_f
from .nico_generation import MAX_ORDER, PairStats, bleu_from_sums

N_BOOTSTRAP, SEED = 1000, 0  # NICO's resamples and seed in the harnesses


def generation_stderr(stats: Sequence[PairStats], n_bootstrap: int = N_BOOTSTRAP, seed: int = SEED,
                      bertscore_f1: Sequence[float] | None = None) -> dict[str, float | None]:
    """``<key>_stderr`` of ``score_generation``'s BLEU-1/2 with its default readings (corpus BLEU of each
    resample's summed statistics, cumulative BLEU-2), ROUGE-L (F1), Distinct-1/2 (per-response, the default
    level), ``avg_len`` and, given each pair's BERTScore F1 (0-1), ``bertscore_f1``; percentages as the
    metrics (``avg_len`` in tokens)."""
    import numpy as np

    if not stats:
        raise ValueError("no pairs to resample")
    times = resample_counts(len(stats), n_bootstrap, seed)
    sums = times @ np.array([[*s.correct, *s.total, len(s.hyp), s.ref_len] for s in stats], dtype=float)
    sums = np.rint(sums).astype(np.int64).tolist()  # counts times integers: exact
    bleu = np.array([bleu_from_sums(row[:MAX_ORDER], row[MAX_ORDER:2 * MAX_ORDER], row[-2], row[-1]) for row in sums])
    per_pair = [[100.0 * lcs_f(s.lcs, len(s.hyp), s.ref_len), *(100.0 * d for d in s.distinct), len(s.hyp)]
                for s in stats]
    keys = ["bleu_1", "bleu_2", "rouge_l", "distinct_1", "distinct_2", "avg_len"]
    columns = [bleu, weighted_means(times, per_pair)]
    if bertscore_f1 is not None:
        if len(bertscore_f1) != len(stats):
            raise ValueError(f"got {len(stats)} pairs but {len(bertscore_f1)} BERTScore F1 values")
        columns.append(weighted_means(times, 100.0 * np.asarray(bertscore_f1, dtype=float)))
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
