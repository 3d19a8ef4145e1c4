"""Reading a model's answer to NICO's identify-unnatural task: the dialogue sentences it names.

The rules are convbench's (the paper gives none); metrics/unnatural_sentence_prf/README.md states them
and the phrase lists live in ``answer_phrases``. Line by line:

1. Markdown emphasis and headings are removed; a line with nothing but punctuation or symbols is skipped.
2. Formatting around the sentence is read off: a list marker at the line start (``1.``, ``（2）``,
   ``-``), a speaker prefix (``A：``, ``CharacterB:``), an answer label (``不自然的句子：``, ``答：``),
   a trailing explanation (``（过于书面）``, ``—— too formal``). A list number followed by a space is
   stripped and one directly followed by text is kept (``3.5元太贵了吧`` is a sentence), unless the
   other reading matches one of the row's gold sentences better (character LCS F-measure); so does
   every other choice here, e.g. whether a trailing parenthesis is part of the sentence.
3. A line that is one quoted sentence is that sentence; a line holding several quoted spans
   (``“甲。”和“乙。”``) names each; otherwise the line itself is the sentence.
4. A piece equal to a gold sentence (after ``normalise()``) is always a prediction: a dialogue's own
   ``没有。`` stays matchable. Otherwise a piece that says there are none (``无``, ``以上对话中没有不自然的
   句子。``, ``No unnatural sentences.``) is a "none" line, and a preamble or comment
   (``以下是不自然的句子：``, ``注：…``) is ignored; everything else is a predicted sentence.
5. An answer with no predicted sentence is the empty set ("none" when a line said so). Beside predicted
   sentences, "none" lines are comments (``其余句子都很自然。``) and are listed as ignored.

Example:
    >>> read_answer("以下是不自然的句子：\\n1. A：“我认为此价格偏高，”（过于书面）").sentences
    ['我认为此价格偏高，']
    >>> read_answer("以上对话中没有不自然的句子。").none
    True
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from . import answer_phrases as phrases
from .lcs import lcs_length

# Dropped by normalise(): whitespace aside, punctuation (P*), symbols (S*: "～", "~", "♪", emoji) and
# format characters (Cf: zero-width spaces), so "好的～" and "好的。" compare equal.
_DROPPED_CATEGORIES = ("P", "S", "Cf")
_OPEN_CLOSE = {"“": "”", "「": "」", "『": "』", '"': '"', "‘": "’"}
_QUOTES = "\"'“”‘’「」『』《》`"
_QUOTED_SPAN = re.compile("|".join(f"{re.escape(o)}([^{re.escape(c)}]*){re.escape(c)}"
                                   for o, c in _OPEN_CLOSE.items()))
_EMPHASIS = re.compile(r"\*\*|__|^#{1,6}\s+")
_MARKER = re.compile(
    r"^(?:(?P<bullet>[-*•·●◦▪>]|[①-⑳])|(?P<number>\(?\d{1,3}[.)、．:：]|（\d{1,3}）|[一二三四五六七八九十]{1,3}、))(?P<space>\s*)"
)
_SPEAKER = re.compile(
    r"^(?:(?:character|speaker|说话人|角色|用户)\s*[ab甲乙12]|[ab甲乙])\s*说?\s*[:：]\s*", re.IGNORECASE
)
_LABELLED = re.compile(r"^(?P<label>[^:：“”\"「」]{1,24})[:：]\s*(?P<rest>.*)$")
_TRAILING_NOTE = re.compile(r"^(?P<body>.+?)\s*(?:[（(][^（）()]{1,40}[）)]|(?:——|--|—|\s[-–]\s).+)\s*$")
_ANSWER_LABEL = re.compile(phrases.ANSWER_LABEL)
_COMMENTARY_LABEL = re.compile(phrases.COMMENTARY_LABEL)


def normalise(sentence: str) -> str:
    """Casefolded, without whitespace, punctuation or symbols: the form sentences are compared in."""
    return "".join(
        ch for ch in unicodedata.normalize("NFKC", sentence).casefold()
        if not ch.isspace() and not unicodedata.category(ch).startswith(_DROPPED_CATEGORIES)
    )


def _words(text: str) -> str:
    """Lower-case words separated by single spaces, "n't" spelled " not": the form English patterns read."""
    text = re.sub(r"n[’']t\b", " not", unicodedata.normalize("NFKC", text).casefold())
    return " ".join(re.findall(r"\w+", text))


_NONE_WORDS = frozenset(normalise(w) for w in phrases.NONE_WORDS)
_ZH_NEGATIVE = [re.compile(p) for p in phrases.ZH_NEGATIVE]
_EN_NEGATIVE = [re.compile(p) for p in phrases.EN_NEGATIVE]
_ZH_PREAMBLE = [re.compile(p) for p in phrases.ZH_PREAMBLE]
_EN_PREAMBLE = [re.compile(p) for p in phrases.EN_PREAMBLE]
_LABELS = frozenset(normalise(w) for w in phrases.LABELS)


def says_none(text: str) -> bool:
    """Whether a piece of an answer says that nothing is unnatural, in Chinese or English.

    Example:
        >>> says_none("没有发现不自然的句子。"), says_none("No unnatural sentences."), says_none("没问题，晚上就发你。")
        (True, True, False)
    """
    flat = normalise(text)
    if flat in _NONE_WORDS:
        return True
    words = _words(text)
    return any(p.search(flat) for p in _ZH_NEGATIVE) or any(p.search(words) for p in _EN_NEGATIVE)


def _is_preamble(text: str) -> bool:
    if text.rstrip().endswith((":", "：")):
        return True
    flat, words = normalise(text), _words(text)
    return flat in _LABELS or any(p.search(flat) for p in _ZH_PREAMBLE) or any(p.search(words) for p in _EN_PREAMBLE)


# Each step offers a reading without some formatting: (the stripped text or None, strip by default).
def _strip_marker(line: str) -> tuple[str | None, bool]:
    m = _MARKER.match(line)
    if not m:
        return None, False
    rest = line[m.end():]
    return rest, bool(m["bullet"] or m["space"] or not rest.strip())  # a number alone on its line is a marker


def _strip_speaker(line: str) -> tuple[str | None, bool]:
    m = _SPEAKER.match(line)
    return (line[m.end():], True) if m else (None, False)


def _strip_label(line: str) -> tuple[str | None, bool]:
    m = _LABELLED.match(line)
    if not m or not m["rest"].strip():
        return None, False
    label = normalise(m["label"])
    if _COMMENTARY_LABEL.search(label):
        return "", True  # a comment: nothing of the line is a prediction
    return (m["rest"], True) if _ANSWER_LABEL.search(label) else (None, False)


def _strip_trailing_note(line: str) -> tuple[str | None, bool]:
    m = _TRAILING_NOTE.match(line)
    return (m["body"], False) if m else (None, False)


_STEPS: tuple[Callable[[str], tuple[str | None, bool]], ...] = (
    _strip_marker, _strip_speaker, _strip_label, _strip_trailing_note,
)


def _readings(line: str) -> list[str]:
    """Every way of reading the line's formatting, the one with every default choice first."""
    readings = [line]
    for step in _STEPS:
        following: list[str] = []
        for text in readings:
            stripped, default = step(text)
            if stripped is None:
                following.append(text)
            else:
                stripped = stripped.strip()
                following.extend([stripped, text] if default else [text, stripped])
        readings = list(dict.fromkeys(following))
    return readings


def _unquote(text: str) -> str | None:
    """The inside of a text that is exactly one quoted span, or None."""
    if len(text) >= 2 and _OPEN_CLOSE.get(text[0]) == text[-1] and not any(q in text[1:-1] for q in _QUOTES):
        return text[1:-1]
    return None


def _similarity(text: str, known: list[str]) -> float:
    flat = normalise(_unquote(text) or text)
    if not flat:
        return 0.0
    return max((2 * lcs_length(flat, k) / (len(flat) + len(k)) for k in known), default=0.0)


def _pieces(line: str, known: list[str]) -> list[str]:
    """What one line names: the best reading of its formatting, split into quoted spans if it has several."""
    readings = _readings(line)
    best = readings[0]
    if known and len(readings) > 1:
        scores = [_similarity(r, known) for r in readings]
        best = readings[scores.index(max(scores))]  # the first best: a tie keeps the default reading
    inner = _unquote(best)
    if inner is not None:
        return [inner.strip()]
    if normalise(best) in known:
        return [best]
    quoted = (next(g for g in m.groups() if g is not None) for m in _QUOTED_SPAN.finditer(best))
    spans = [s.strip() for s in quoted if normalise(s)]
    return spans or [best.strip(_QUOTES).strip()]


@dataclass(frozen=True)
class AnswerReading:
    """How an answer was read: the predicted sentences, whether it said "none", the lines ignored."""

    sentences: list[str] = field(default_factory=list)
    none: bool = False
    ignored: list[str] = field(default_factory=list)


def read_answer(text: str | None, known: Iterable[str] = ()) -> AnswerReading:
    """Read a model's answer; ``known`` are the sentences it may quote (the row's gold sentences)."""
    known_forms = [k for k in dict.fromkeys(map(normalise, known)) if k]
    known_set = set(known_forms)
    items: list[tuple[str, str]] = []  # (kind, text), kind: sentence, none, ignored
    seen: dict[str, list[str]] = {}  # a repeated line is read once
    for raw in (text or "").splitlines():
        line = _EMPHASIS.sub("", raw).strip()
        if not normalise(line):
            continue
        if line not in seen:
            seen[line] = _pieces(line, known_forms)
        for piece in seen[line]:
            flat = normalise(piece)
            if not flat:
                items.append(("ignored", line))
            elif flat in known_set:
                items.append(("sentence", piece))
            elif says_none(piece):
                items.append(("none", piece))
            elif _is_preamble(piece):
                items.append(("ignored", piece))
            else:
                items.append(("sentence", piece))
    predicted = list(dict.fromkeys(t for kind, t in items if kind == "sentence"))
    # "none" lines beside named sentences are comments ("其余句子都很自然。"): listed as ignored
    ignored = [t for kind, t in items if kind == "ignored" or (predicted and kind == "none")]
    return AnswerReading(predicted, not predicted and any(kind == "none" for kind, _ in items), ignored)


def parse_answer(text: str | None, known: Iterable[str] = ()) -> list[str]:
    """The sentences a model's answer names (empty for a "none" answer), de-duplicated, in order."""
    return read_answer(text, known).sentences
