"""Which split a dialogue belongs to: the release's split when it has one, else a seeded assignment.

The seeded assignment sorts dialogues by id, shuffles them with ``random.Random(seed)`` and takes 5%
for test, 5% for validation and the rest for train (rounded), which gives NICO's 3,600 / 200 / 200
on its 4,000 dialogues. A mix of dialogues with and without a split is refused: half a release split
would silently change the other half.

Example:
    >>> sizes = assign_splits([{"id": f"d{i}", "split": None} for i in range(4000)])
    >>> [sum(1 for s in sizes.values() if s == name) for name in ("train", "validation", "test")]
    [3600, 200, 200]
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from ..errors import DataFormatError

HELD_OUT_SHARE = 0.05  # each of validation and test
SPLIT_SEED = 0


def assign_splits(dialogues: Sequence[dict[str, Any]], seed: int = SPLIT_SEED) -> dict[str, str]:
    """Dialogue id -> split."""
    given = [d for d in dialogues if d["split"] is not None]
    if given and len(given) != len(dialogues):
        missing = next(d["id"] for d in dialogues if d["split"] is None)
        raise DataFormatError(
            f"{len(given)} of {len(dialogues)} dialogues have a split and the others do not (e.g. {missing!r}); "
            "give every dialogue a split, or none"
        )
    if given:
        return {d["id"]: d["split"] for d in dialogues}
    ids = sorted(d["id"] for d in dialogues)
    random.Random(seed).shuffle(ids)
    n_held = round(len(ids) * HELD_OUT_SHARE)
    test, validation = ids[:n_held], ids[n_held : 2 * n_held]
    split = {i: "train" for i in ids}
    split.update({i: "validation" for i in validation})
    split.update({i: "test" for i in test})
    return split
