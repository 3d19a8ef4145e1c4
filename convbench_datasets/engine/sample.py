"""A seeded sample of a run's rows, stratified so that a small run still spreads over every stratum.

``--limit N`` takes the first N rows, which in a dataset ordered by kind of row are all of one kind.
``--sample N`` takes N rows spread over the strata a benchmark names (its ``strata``: the row fields its
results are broken down by, such as a set and a pattern, an interaction type, a source):

- with N at least the number of strata, every stratum gets one row, and the rest are shared out in
  proportion to the strata's remaining sizes (largest remainders, ties to the earlier stratum);
- with fewer, N strata are drawn (seeded), one row each;
- within a stratum the rows are drawn with ``random.Random(seed)``; the sample keeps the dataset's order.

The same rows, N and seed give the same sample on every machine (Python's ``random`` is specified for a
seed). N at least the number of rows takes every row.

Example:
    >>> rows = [{"id": i, "kind": "a" if i < 8 else "b"} for i in range(10)]
    >>> [r["id"] for r in stratified_sample(rows, 4, ("kind",), seed=0)]  # 3 of the 8 a rows, 1 of the 2 b rows
    [3, 6, 7, 8]
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from typing import Any

Row = dict[str, Any]


def stratum_of(row: Row, strata: Sequence[str]) -> tuple[Hashable, ...]:
    """The stratum key of ``row``: its values of the ``strata`` fields (a missing field counts as None)."""
    return tuple(_hashable(row.get(field)) for field in strata)


def _hashable(value: Any) -> Hashable:
    return tuple(value) if isinstance(value, list) else value


def allocate(sizes: Sequence[int], n: int, rng: random.Random) -> list[int]:
    """How many rows each stratum of ``sizes`` gives to a sample of ``n`` (see the module docstring).

    Example:
        >>> allocate([8, 2], 4, random.Random(0))  # one each, then 2 more in proportion to 7 and 1
        [3, 1]
    """
    total = sum(sizes)
    if n >= total:
        return list(sizes)
    if n < len(sizes):
        chosen = set(rng.sample(range(len(sizes)), n))
        return [1 if k in chosen else 0 for k in range(len(sizes))]
    counts = [1] * len(sizes)
    left, spare = n - len(sizes), [size - 1 for size in sizes]
    pool = sum(spare)
    shares = [left * s / pool for s in spare] if pool else [0.0] * len(sizes)
    counts = [c + int(share) for c, share in zip(counts, shares)]
    order = sorted(range(len(sizes)), key=lambda k: (-(shares[k] - int(shares[k])), k))
    for k in order[: n - sum(counts)]:
        counts[k] += 1
    return counts


def stratified_sample(rows: Sequence[Row], n: int, strata: Sequence[str], seed: int = 0) -> list[Row]:
    """``n`` of ``rows``, stratified over the ``strata`` fields, in the rows' order (module docstring)."""
    groups: dict[tuple[Hashable, ...], list[int]] = {}
    for position, row in enumerate(rows):
        groups.setdefault(stratum_of(row, strata), []).append(position)
    rng = random.Random(seed)
    counts = allocate([len(members) for members in groups.values()], n, rng)
    chosen = [position for members, count in zip(groups.values(), counts) for position in rng.sample(members, count)]
    return [rows[position] for position in sorted(chosen)]


__all__ = ["stratified_sample", "allocate", "stratum_of"]
