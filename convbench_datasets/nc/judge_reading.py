"""How one NC-Bench judge answer is read, and whether it passes its row: the per-answer half of the scoring.

``judge_row`` is what a run applies to each judge answer as it arrives; :mod:`.ncbench_action` applies
the same reading and rule to whole columns at once (with numpy) and makes the tables. This half imports
no numpy, so ``convbench run nc`` needs numpy only once it scores (see :mod:`.ncbench_action` for the
rule and the two readings).

Example:
    >>> judge_row("Repeat", ["Repeat", "Partial Repeat"])[1], judge_row("repeat", ["Repeat"], parsing="lenient")[1]
    (True, True)
    >>> parsing_name("released")
    'exact'
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from .judge_output import ParsedJudgement, parse_judge_output, vocabulary
from .patterns import pattern_table
from .released_rule import released_passes, released_piece_list

PARSINGS = ("exact", "lenient")  # how judge text is read; the first, the released aggregator's, is the default
# the names signatures and inspect scores of convbench before 0.x used: "released" was the exact reading,
# "convbench" the lenient one
LEGACY_PARSINGS = {"released": "exact", "convbench": "lenient"}


def row_passes(labels: Sequence[str], acceptable: Sequence[str], unrecognised: Sequence[str] = ()) -> bool:
    """The released aggregator's rule on one row's canonical labels (and the pieces that named none)."""
    accepted = set(acceptable)
    alone = pattern_table().stand_alone_labels
    if accepted & alone and alone & set(labels):
        return len(set(labels)) + len(set(unrecognised)) == 1
    return any(label in accepted for label in labels)


def judgement_passes(parsed: ParsedJudgement, acceptable: Sequence[str]) -> bool:
    """Whether a parsed judge answer passes a row; unparsed answers fail."""
    return not parsed.unparsed and row_passes(parsed.labels, acceptable, parsed.unrecognised)


def _released_reading(prediction: str | None, label_set: Sequence[str] | None = None) -> ParsedJudgement:
    """The released aggregator's pieces as a judgement, for counts, agreement and the failure breakdown:
    pieces that are exactly a label name, in the judge's order, are its labels; other non-empty pieces
    (prose, misspellings) are unrecognised, so an answer naming no label exactly counts as unparsed.
    Labels outside ``label_set`` (the row's) are flagged, as the lenient reading flags them."""
    labels, unrecognised = _released_labels(released_piece_list(prediction))
    out_of_set = () if label_set is None else tuple(label for label in labels if label not in set(label_set))
    return ParsedJudgement(prediction or "", labels, out_of_set, unrecognised=unrecognised)


def _released_labels(pieces: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(labels, unrecognised) of the released pieces: the exact label names, the other non-empty pieces."""
    known = known_labels()
    return tuple([p for p in pieces if p in known]), tuple([p for p in pieces if p and p not in known])


def parsing_name(parsing: str) -> str:
    """``parsing`` as one of :data:`PARSINGS` (the older names ``released`` and ``convbench`` mapped); else ValueError."""
    name = LEGACY_PARSINGS.get(parsing, parsing)
    if name not in PARSINGS:
        raise ValueError(f"parsing must be one of {', '.join(PARSINGS)}, got {parsing!r}")
    return name


def judge_row(prediction: str | None, acceptable: Sequence[str], label_set: Sequence[str] | None = None,
              parsing: str = PARSINGS[0]) -> tuple[ParsedJudgement, bool]:
    """One judge answer read as ``parsing`` says, and whether it passes a row with these acceptable labels."""
    if parsing_name(parsing) == "exact":
        return _released_reading(prediction, label_set), released_passes(prediction, acceptable)
    parsed = parse_judge_output(prediction, label_set)
    return parsed, judgement_passes(parsed, acceptable)


@lru_cache(maxsize=1)
def known_labels() -> frozenset[str]:
    """Every label a reference may name: the vocabulary plus published spellings of acceptable sets."""
    published = {label for labels in pattern_table().acceptable.values() for label in labels}
    return frozenset(vocabulary().values()) | published
