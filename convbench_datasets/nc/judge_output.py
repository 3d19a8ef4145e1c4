"""Reading a judge's answer: comma/newline separated labels, forgiving of spelling, strict about meaning.

Pieces are matched to the label vocabulary (``labels.yaml``) ignoring case, spaces, hyphens and
underscores, list bullets, quotes, bold marks, trailing punctuation and a trailing parenthesis, plus
a few aliases. A recognised label outside the row's label set is kept and flagged; a piece that is no
label is kept as unrecognised; an answer with no label at all is ``unparsed`` (it fails, and is
counted, never dropped).

Example:
    >>> p = parse_judge_output("pre-closing, Gratitude Receipt\\n- acknowledgement.", ["PreClosing", "Acknowledgment"])
    >>> p.labels, p.out_of_set, p.unparsed
    (('PreClosing', 'GratitudeReceipt', 'Acknowledgment'), ('GratitudeReceipt',), False)
    >>> parse_judge_output("I think the agent is being polite.").unparsed
    True
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from .._resources import read_yaml

UNPARSED_LABEL = "(unparsed)"  # how an answer with no label is named in breakdowns and agreement tables
_SEPARATORS = re.compile(r"[,\n]")
_BULLET = re.compile(r"^(?:[-*\u2022]|\d+[.)]|labels?\s*:)\s*", re.IGNORECASE)
_TRAILING_NOTE = re.compile(r"\s*\([^()]*\)$")
_EDGE_MARKS = " \t\"'`*_[]{}.;:!?"


@dataclass(frozen=True)
class ParsedJudgement:
    """A judge answer read into canonical labels (de-duplicated, in the order given)."""

    raw: str
    labels: tuple[str, ...]
    out_of_set: tuple[str, ...] = ()
    unrecognised: tuple[str, ...] = ()

    @property
    def unparsed(self) -> bool:
        return not self.labels


def _key(text: str) -> str:
    return re.sub(r"[\s_\-]+", "", text).lower()


@lru_cache(maxsize=1)
def vocabulary() -> dict[str, str]:
    """Normalised spelling -> canonical label, for every label and alias in ``labels.yaml``."""
    table: dict[str, str] = {}
    for name, spec in read_yaml(__package__, "labels.yaml")["labels"].items():
        for spelling in [name, *(spec.get("aliases") or [])]:
            table[_key(spelling)] = name
    return table


@lru_cache(maxsize=1 << 14)
def canonical_label(piece: str) -> str | None:
    """The label a piece of judge output names, or None (cached: judges repeat themselves)."""
    text = _BULLET.sub("", piece.strip()).strip(_EDGE_MARKS)
    for candidate in (text, _TRAILING_NOTE.sub("", text).strip(_EDGE_MARKS)):
        label = vocabulary().get(_key(candidate))
        if label is not None:
            return label
    return None


def parse_judge_output(text: str | None, label_set: Iterable[str] | None = None) -> ParsedJudgement:
    """Parse one judge answer; ``label_set`` (the row's) only decides what is flagged out of set."""
    raw = "" if text is None else text
    labels: list[str] = []
    unrecognised: list[str] = []
    for piece in _SEPARATORS.split(raw):
        if not piece.strip():
            continue
        label = canonical_label(piece)
        if label is None:
            unrecognised.append(piece.strip())
        elif label not in labels:
            labels.append(label)
    allowed = None if label_set is None else set(label_set)
    out_of_set = () if allowed is None else tuple(label for label in labels if label not in allowed)
    return ParsedJudgement(raw, tuple(labels), out_of_set, tuple(unrecognised))
