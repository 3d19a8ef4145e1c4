"""Cleaning transcript turns: markers out, words kept, every change counted.

Rules, applied in this order to each turn:

1. ``markers``: transcription markers in braces (``{vocalsound}``, ``{disfmarker}``, ``{gap}``,
   ``{pause}``...) are removed.
2. ``stage_directions``: bracketed audience and recording notes (``[applause]``, ``(laughter)``,
   ``[crosstalk]``, ``[inaudible]``...) are removed.
3. ``spaced_punctuation``: a space before ``, . ? ! ; : %`` (tokenised transcripts write "fine ,") is
   removed, except before a digit (".22 calibre" stays).
4. ``spaced_contractions``: a space before a clitic (``'s 're 've 'll 'd 'm n't``) is removed ("date 's").
5. ``whitespace``: runs of whitespace become one space; the turn is stripped (counted per turn changed;
   the other rules count occurrences).
6. ``empty_turns``: a turn left with no letter or digit is dropped.

Known and left alone: IQ2's transcripts carry a few page headers of the original PDF mid-sentence.

Example:
    >>> counts = Counter()
    >>> clean_text("{vocalsound} Okay , that's  fine . [applause]", counts)
    "Okay, that's fine."
    >>> dict(sorted(counts.items()))
    {'markers': 1, 'spaced_contractions': 0, 'spaced_punctuation': 2, 'stage_directions': 1, 'whitespace': 1}
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

RULES = ("markers", "stage_directions", "spaced_punctuation", "spaced_contractions", "whitespace", "empty_turns")
_MARKER = re.compile(r"\{\s*[a-z_]+\s*\}", re.IGNORECASE)
_STAGE = re.compile(
    r"[\[(]\s*(?:applause|laughter|laughs|laughing|crosstalk|cross-talk|inaudible|unintelligible|music|"
    r"cheers|cheering|boos|booing|silence|pause|noise|coughs?|interruption|objection)\s*[.!]?\s*[\])]",
    re.IGNORECASE,
)
_SPACED = re.compile(r"\s+([,.?!;:%])(?!\d)")
_CLITIC = re.compile(r"(\w)\s+('(?:s|re|ve|ll|d|m)|n't)\b", re.IGNORECASE)
_SPACES = re.compile(r"\s{2,}")
_WORD = re.compile(r"\w")


def clean_text(text: str, counts: Counter) -> str:
    for rule, pattern, replacement in (("markers", _MARKER, " "), ("stage_directions", _STAGE, " "),
                                       ("spaced_punctuation", _SPACED, r"\1"), ("spaced_contractions", _CLITIC, r"\1\2")):
        text, n = pattern.subn(replacement, text)
        counts[rule] += n
    collapsed = _SPACES.sub(" ", text).strip()
    if collapsed != text:
        counts["whitespace"] += 1
    return collapsed


def clean_turns(turns: Sequence[dict[str, Any]], counts: Counter) -> list[dict[str, Any]]:
    """Cleaned turns (``utterance`` rewritten), empty ones dropped; other keys are kept."""
    kept = []
    for turn in turns:
        text = clean_text(turn["utterance"], counts)
        if not _WORD.search(text):
            counts["empty_turns"] += 1
            continue
        kept.append({**turn, "utterance": text})
    return kept
