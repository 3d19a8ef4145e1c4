"""Spearman's rank correlation and its leave-one-out form for several raters, vectorised over leading axes.

Every function works along the last axis (the items) and broadcasts over any leading axes, so that a
bootstrap evaluates all its resamples (or all measures) in one numpy call instead of a Python loop.

Example (ties share the mean of their positions: ranks of [1, 1, 2] are [1.5, 1.5, 3]):
    >>> average_ranks([1, 1, 2]).tolist()
    [1.5, 1.5, 3.0]
    >>> round(float(spearman_rows([1, 1, 2], [1, 2, 3])), 6)  # sqrt(3) / 2
    0.866025
    >>> loo_spearman([[1, 2, 3, 4], [1, 3, 2, 4], [2, 1, 3, 4]]).round(4).tolist()  # vs the mean of the others
    [1.0, 0.6325, 0.6325]
"""

from __future__ import annotations

from typing import Any


def average_ranks(values: Any) -> Any:
    """Ranks 1..n along the last axis; tied values share the mean of the positions they span."""
    import numpy as np

    a = np.asarray(values, dtype=float)
    n = a.shape[-1]
    order = np.argsort(a, axis=-1)  # any order among tied values: they get one shared rank
    ordered = np.take_along_axis(a, order, axis=-1)
    position = np.broadcast_to(np.arange(n), a.shape)
    changes = ordered[..., 1:] != ordered[..., :-1]
    starts_block = np.concatenate([np.ones(a.shape[:-1] + (1,), bool), changes], axis=-1)
    ends_block = np.concatenate([changes, np.ones(a.shape[:-1] + (1,), bool)], axis=-1)
    # each sorted position's tie block runs from the last block start at or before it to the next block end
    first = np.maximum.accumulate(np.where(starts_block, position, 0), axis=-1)
    last = np.flip(np.minimum.accumulate(np.flip(np.where(ends_block, position, n), axis=-1), axis=-1), axis=-1)
    ranks = np.empty_like(a)
    np.put_along_axis(ranks, order, (first + last) / 2 + 1, axis=-1)
    return ranks


def _pearson(ra: Any, rb: Any) -> Any:
    import numpy as np

    ra = ra - ra.mean(axis=-1, keepdims=True)
    rb = rb - rb.mean(axis=-1, keepdims=True)
    denominator = np.sqrt((ra * ra).sum(axis=-1) * (rb * rb).sum(axis=-1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, (ra * rb).sum(axis=-1) / np.where(denominator > 0, denominator, 1), np.nan)


def spearman_rows(a: Any, b: Any) -> Any:
    """Spearman's rho along the last axis (Pearson's r of average ranks); NaN where a side is constant."""
    return _pearson(average_ranks(a), average_ranks(b))


def _others_ranks(ratings: Any) -> tuple[Any, Any]:
    """(ratings as floats, ranks of the mean of the other raters' rows): (..., raters, items) each."""
    import numpy as np

    matrix = np.asarray(ratings, dtype=float)
    k = matrix.shape[-2]
    if k < 2:
        raise ValueError(f"leave-one-out agreement needs at least 2 raters, got {k}")
    return matrix, average_ranks((matrix.sum(axis=-2, keepdims=True) - matrix) / (k - 1))


def loo_spearman(ratings: Any, against: Any = None) -> Any:
    """Per rater r, Spearman between ``against`` (default: rater r's own row) and the mean of the
    other raters' rows. ``ratings``: (..., raters, items); ``against``: (..., items). Returns (..., raters).

    With ``against`` a judge's values, the judge takes each rater's place in turn and is compared with
    exactly the reference that rater was compared with.
    """
    import numpy as np

    matrix, others = _others_ranks(ratings)
    subject = average_ranks(matrix) if against is None else np.expand_dims(average_ranks(against), -2)
    return _pearson(subject, others)


def loo_spearman_both(ratings: Any, against: Any) -> tuple[Any, Any]:
    """``(loo_spearman(ratings), loo_spearman(ratings, against))``, ranking the leave-one-out means once."""
    import numpy as np

    matrix, others = _others_ranks(ratings)
    return _pearson(average_ranks(matrix), others), _pearson(np.expand_dims(average_ranks(against), -2), others)


def mean_finite(values: Any) -> Any:
    """Mean over the last axis of the finite values (raters whose correlation is undefined are left
    out); NaN where none is finite."""
    import numpy as np

    v = np.asarray(values, dtype=float)
    finite = np.isfinite(v)
    count = finite.sum(axis=-1)
    total = np.where(finite, v, 0.0).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(count > 0, total / np.where(count > 0, count, 1), np.nan)
