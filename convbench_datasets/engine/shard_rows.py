"""Which rows a shard of a run holds (``--shard I/N``) and what its signature records of them.

The rule (round robin by position) and the merge of shards are described in :mod:`.shards`; the
pipeline selects a shard's rows with this module, and merging re-scores with the pipeline.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any, TypeVar

from ..errors import ConvbenchError
from .run_folder import row_id

SHARD_BY = "position"
_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")
_Row = TypeVar("_Row")


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/N"`` as ``(I, N)``, checked (1 <= I <= N).

    Example:
        >>> parse_shard("2/3")
        (2, 3)
    """
    match = _SHARD.match(text)
    if match is None:
        raise ConvbenchError(f"--shard must be I/N (shard I of N, counted from 1; e.g. 1/4), got {text!r}")
    return check_shard((int(match[1]), int(match[2])))


def check_shard(shard: Any) -> tuple[int, int]:
    """``shard`` as an ``(index, count)`` pair of ints with 1 <= index <= count, or a one-line error."""
    if (not isinstance(shard, (tuple, list)) or len(shard) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in shard)):
        raise ConvbenchError(f"shard must be (index, count), e.g. (1, 4), got {shard!r}")
    index, count = shard
    if count < 1 or not 1 <= index <= count:
        raise ConvbenchError(f"shard {index}/{count}: the index runs from 1 to the count (1/{max(count, 1)} to "
                             f"{max(count, 1)}/{max(count, 1)})")
    return index, count


def select_shard(rows: Sequence[_Row], shard: tuple[int, int] | None) -> list[_Row]:
    """The rows of shard ``shard`` (all of them for None): positions ``index - 1``, ``index - 1 + count``...

    Example:
        >>> select_shard(list("abcdefg"), (2, 3))
        ['b', 'e']
    """
    if shard is None:
        return list(rows)
    index, count = check_shard(shard)
    return list(rows[index - 1 :: count])


def shard_signature(selected: Sequence[Any], shard: tuple[int, int] | None, fingerprint: str) -> dict[str, Any]:
    """The signature fields of a run over ``selected`` (every row config and limit select) when it runs
    shard ``shard`` of them: ``rows``, ``dataset_fingerprint`` (``fingerprint``: the selection's) and
    ``shard``; ``{}`` without a shard. The caller updates its signature with them."""
    if shard is None:
        return {}
    index, count = check_shard(shard)
    return {"rows": len(selected), "dataset_fingerprint": fingerprint,
            "shard": {"index": index, "count": count, "rows": len(select_shard(selected, shard)), "by": SHARD_BY,
                      "row_ids_sha256": row_ids_sha256([row_id(r) for r in selected])}}


def row_ids_sha256(ids: Sequence[str]) -> str:
    """A hash of row ids in order (what a shard records of the whole run's rows)."""
    return hashlib.sha256(json.dumps(list(ids), ensure_ascii=False).encode("utf-8")).hexdigest()
