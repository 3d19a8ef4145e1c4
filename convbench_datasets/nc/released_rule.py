"""The released NC-Bench aggregator's pass rule, applied to raw judge text exactly as it applies it.

No spelling is normalised and nothing is parsed beyond what the released script does: the judge's text
is cut at new lines and commas; only pieces that are empty *before* stripping are dropped (so a piece of
spaces survives as an empty label); pieces are stripped and deduplicated; a row passes when one of them
is, case-sensitively, an acceptable label. Where Silence or NonVerbal is acceptable and the judge gave
one of them, the row passes only if that is the sole piece. This is the default reading
(``parsing="exact"``, ``--parsing exact``), with either list of acceptable labels (``--rules``);
``parsing="lenient"`` is convbench's forgiving one: see ``ncbench_action.py``.

Example:
    >>> sorted(released_pieces("Answer, Repeat\\n"))
    ['Answer', 'Repeat']
    >>> released_passes("answer", ["Answer"]), released_passes("Answer", ["Answer"])
    (False, True)
    >>> released_passes("Silence, ", ["Silence"])  # the trailing space is a second (empty) piece
    False
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .patterns import pattern_table


def released_piece_list(judge_output: Any) -> list[str]:
    """The stripped pieces the released aggregator compares with the acceptable labels, in the judge's
    order, each once. A judge output that is not text (a missing answer) counts as the empty string."""
    text = judge_output if isinstance(judge_output, str) else ""
    return list(dict.fromkeys([piece.strip() for piece in text.replace("\n", ",").split(",") if piece]))


def released_pieces(judge_output: Any) -> frozenset[str]:
    """The set of pieces (see :func:`released_piece_list`) the released rule decides on."""
    return frozenset(released_piece_list(judge_output))


def released_passes(judge_output: Any, acceptable: Iterable[str]) -> bool:
    """Whether the released aggregator scores this judge output as a pass for these acceptable labels."""
    acceptable = frozenset(acceptable)
    pieces = released_pieces(judge_output)
    sole = pattern_table().stand_alone_labels
    if acceptable & sole and pieces & sole:
        return len(pieces) == 1
    return bool(pieces & acceptable)
