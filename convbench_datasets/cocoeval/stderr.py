"""Bootstrap standard errors of CoCoEval's frequencies, mismatch and ratings, for inspect's ``<key>_stderr``
keys: the standard deviation (Bessel's correction) over the same resamples of instances (or of whole
source conversations) as ``score_frequencies`` and ``mean_with_interval`` draw with that seed; None with
fewer than two units."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..scoring.resample import replicate_stderr, resample_counts
from .behavior_frequency import _cluster_totals, _clusters, _counts, _mismatches, resampled_means


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
