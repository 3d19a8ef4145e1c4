"""Reading a model's answer to NICO's identify-unnatural task: the dialogue sentences it names.

The rules are convbench's (the paper gives none); metrics/unnatural_sentence_prf/README.md states them
and the phrase lists live in ``answer_phrases``. Line by line:

1. Each run of whitespace becomes one space; Markdown emphasis and headings are removed; a line with
   nothing but punctuation or symbols is skipped.
2. Formatting around the sentence is read off: a list marker at the line start (``1.``, ``2）``,
   ``（3）``, ``A.``, ``b)``, ``-``), a speaker prefix (``A：``, ``B说：``, ``CharacterB:``), an answer
   label (``不自然的句子：``, ``答：``), a trailing explanation (``（过于书面）``, ``—— too formal``). A
   list marker followed by a space is stripped and one directly followed by text is kept
   (``3.5元太贵了吧`` is a sentence), unless the other reading is one of the row's gold or dialogue
   sentences, or matches a gold sentence better (character LCS F-measure); so does every other choice
   here, e.g. whether a trailing parenthesis is part of the sentence (kept by default).
3. A line that is one quoted sentence is that sentence; a line holding several quoted spans
   (``“甲。”和“乙。”``) names each; otherwise the line itself is the sentence.
4. A piece equal to a gold sentence, or to a sentence of the dialogue (a turn, or a run of its clauses,
   when the caller passes the dialogue), is always a prediction (after ``normalise()``): a dialogue's
   own ``说明：明天休息。`` or ``都挺自然的。`` stays matchable. The bare "none" words (``无``, ``没有``)
   are the one exception for dialogue sentences: the prompt asks for ``无``. Otherwise a piece that
   says there are none (a bare "none" word, or a statement about the sentences, dialogue or wording:
   ``以上对话中没有不自然的句子。``, ``No unnatural sentences.``) is a "none" line, and a preamble or
   comment (``以下是不自然的句子：``, a line ending in a colon, ``注：…``) is ignored; everything else
   is a predicted sentence.
5. An answer with no predicted sentence is the empty set ("none" when a line said so; ``empty`` when
   not). Beside predicted sentences, "none" lines are comments (``其余句子都很自然。``) and are listed as
   ignored, like preambles.

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

# Dropped by normalise(): whitespace aside, punctuation (P*), symbols (S*: "～", "~", "♪", emoji) and
# format characters (Cf: zero-width spaces), so "好的～" and "好的。" compare equal.
_DROPPED_CATEGORIES = ("P", "S", "Cf")
_OPEN_CLOSE = {"“": "”", "「": "」", "『": "』", '"': '"', "‘": "’"}
_QUOTES = "\"'“”‘’「」『』《》`"
# the opening quote is excluded inside too: "“" * 20,000 would otherwise scan to the end from each one
_QUOTED_SPAN = re.compile("|".join(f"{re.escape(o)}([^{re.escape(o + c)}]*){re.escape(c)}"
                                   for o, c in _OPEN_CLOSE.items()))
_WHITESPACE = re.compile(r"\s+")
_EMPHASIS = re.compile(r"\*\*|__|^#{1,6}\s+")
# Numbers and letters, half- or full-width: "1.", "2、", "3)", "4）", "（5）", "(6)", "A.", "b)", "（c）".
_MARKER = re.compile(
    r"^(?:(?P<bullet>[-*•·●◦▪>]|[①-⑳])|(?P<number>\(?\d{1,3}[.)）、．:：]|[（(](?:\d{1,3}|[a-z])[）)]|[a-z][.)）．]"
    r"|[一二三四五六七八九十]{1,3}、))(?P<space>\s*)", re.IGNORECASE
)
# "A：", "B说：", "CharacterB:": one optional 说, no two adjacent optional runs of whitespace
_SPEAKER = re.compile(
    r"^(?:(?:character|speaker|说话人|角色|用户)\s*[ab甲乙12]|[ab甲乙])\s*(?:说\s*)?[:：]\s*", re.IGNORECASE
)
_LABELLED = re.compile(r"^(?P<label>[^:：“”\"「」]{1,24})[:：]\s*(?P<rest>.*)$")
# The body keeps any space before the note (readings are stripped): a "\s*" between a lazy body and the
# note would try every split of a run of spaces, quadratic in its length.
_TRAILING_NOTE = re.compile(r"^(?P<body>.+?)(?:[（(][^（）()]{1,40}[）)]|(?:——|--|—|\s[-–]\s).+)$")
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
_ZH_SUBJECT = re.compile(phrases.ZH_SUBJECT)
_ZH_NEGATIVE = [re.compile(p) for p in phrases.ZH_NEGATIVE]
_ZH_SHORT_NEGATIVE = re.compile(phrases.ZH_SHORT_NEGATIVE)
_EN_NEGATIVE = [re.compile(p) for p in phrases.EN_NEGATIVE]
_EN_NONE_LINE = re.compile(phrases.EN_NONE_LINE)
_ZH_PREAMBLE = [re.compile(p) for p in phrases.ZH_PREAMBLE]
_EN_PREAMBLE = [re.compile(p) for p in phrases.EN_PREAMBLE]
_LABELS = frozenset(normalise(w) for w in phrases.LABELS)


def _clauses(text: str) -> str:
    """``normalise()`` with each run of punctuation kept as one "|": the form Chinese "none" patterns read."""
    out: list[str] = []
    for ch in unicodedata.normalize("NFKC", text).casefold():
        category = unicodedata.category(ch)
        if category.startswith("P"):
            if out and out[-1] != "|":
                out.append("|")
        elif not ch.isspace() and not category.startswith(("S", "Cf")):
            out.append(ch)
    return "".join(out)


def says_none(text: str) -> bool:
    """Whether a piece of an answer says that nothing is unnatural, in Chinese or English.

    Besides a bare "none" word, the piece must be about the task (name sentences, the dialogue or its
    wording) and say none of it is unnatural, or all of it natural; answer_phrases has the lists.

    Example:
        >>> says_none("没有发现不自然的句子。"), says_none("No unnatural sentences."), says_none("没问题，晚上就发你。")
        (True, True, False)
        >>> says_none("无论如何，这个计划需要调整。"), says_none("没人觉得生硬。"), says_none("It feels natural.")
        (False, False, False)
    """
    flat = normalise(text)
    if flat in _NONE_WORDS:
        return True
    clauses = _clauses(text)
    if _ZH_SUBJECT.search(clauses) and any(p.search(clauses) for p in _ZH_NEGATIVE):
        return True
    if len(flat) <= phrases.ZH_SHORT and _ZH_SHORT_NEGATIVE.search(clauses):
        return True  # "都挺自然的。"
    words = _words(text)
    if _EN_NONE_LINE.search(words):
        return True
    vocabulary = set(words.split())
    if vocabulary & phrases.EN_SUBJECTS and any(p.search(words) for p in _EN_NEGATIVE):
        return True
    # "All sentences sound natural.", "The dialogue sounds natural throughout." (sets: linear, where a
    # regex excluding "not" around "natural" backtracked quadratically)
    return bool(vocabulary & phrases.EN_NATURAL and not vocabulary & phrases.EN_NEGATION_WORDS
                and (vocabulary & phrases.EN_WHOLE or vocabulary & phrases.EN_SUBJECTS and vocabulary & phrases.EN_ALL))


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


class _Known:
    """A row's known sentences: the gold ones, compared with each reading (character LCS F-measure,
    their bit masks built once), and every form an answer may quote (gold and dialogue) for exact look-ups."""

    def __init__(self, gold: list[str], quotable: set[str]) -> None:
        self.exact = set(gold) | quotable
        self.gold = []  # (length, masks of each character, all-ones of that width)
        for form in gold:
            masks: dict[str, int] = {}
            for i, ch in enumerate(form):
                masks[ch] = masks.get(ch, 0) | 1 << i
            self.gold.append((len(form), masks, (1 << len(form)) - 1))

    def score(self, form: str, floor: float) -> float:
        """The best LCS F-measure of ``form`` with a gold sentence, or ``floor`` when none beats it."""
        best = floor
        for size, masks, width in self.gold:
            total = len(form) + size
            if 2 * min(len(form), size) / total <= best:
                continue  # its length bounds the F-measure below what we have
            row = width  # Allison-Dix / Hyyrö bit-parallel LCS, as in scoring/lcs.py
            for match in map(masks.get, form):
                if match:
                    low = row & match
                    row = ((row + low) | (row - low)) & width
            best = max(best, 2 * (size - row.bit_count()) / total)
        return best


def _best_reading(readings: list[str], known: _Known) -> str:
    """The first reading that matches a known sentence best: exactly (gold or dialogue), else by the
    character LCS F-measure with a gold sentence; a tie keeps the earlier reading, the default one first."""
    forms = [normalise(_unquote(r) or r) for r in readings]
    for reading, form in zip(readings, forms):
        if form in known.exact:
            return reading  # F-measure 1: no reading scores higher, and none before it did
    best, best_score = readings[0], 0.0
    for reading, form in zip(readings, forms):
        if form and (score := known.score(form, best_score)) > best_score:
            best, best_score = reading, score
    return best


def _pieces(line: str, known: _Known) -> list[str]:
    """What one line names: the best reading of its formatting, split into quoted spans if it has several."""
    readings = _readings(line)
    best = readings[0]
    if known.exact and len(readings) > 1:
        best = _best_reading(readings, known)
    inner = _unquote(best)
    if inner is not None:
        return [inner.strip()]
    if normalise(best) in known.exact:
        return [best]
    quoted = (next(g for g in m.groups() if g is not None) for m in _QUOTED_SPAN.finditer(best))
    spans = [s.strip() for s in quoted if normalise(s)]
    return spans or [best.strip(_QUOTES).strip()]


# A dialogue turn in sentences and clauses: each piece ends at a run of these marks.
_DIALOGUE_PIECE = re.compile(r"[^。！？!?…；;，,、：:～~\n]+[。！？!?…；;，,、：:～~\n]*")
MAX_TURN_PIECES = 12  # beyond this many pieces, a turn's runs of consecutive pieces are not all listed


def dialogue_forms(turns: Iterable[str]) -> set[str]:
    """The ``normalise()``d sentences an answer may quote from a dialogue: each turn, and each run of
    consecutive pieces of it (a piece ends at sentence or clause punctuation).

    Example:
        >>> sorted(dialogue_forms(["我认为此价格偏高，两百八行不行？"]), key=len)
        ['两百八行不行', '我认为此价格偏高', '我认为此价格偏高两百八行不行']
    """
    quotable: set[str] = set()
    for turn in turns:
        pieces = [f for f in map(normalise, _DIALOGUE_PIECE.findall(turn)) if f]
        quotable.add("".join(pieces))
        if len(pieces) <= MAX_TURN_PIECES:
            quotable.update("".join(pieces[i:j]) for i in range(len(pieces)) for j in range(i + 1, len(pieces) + 1))
        else:
            quotable.update(pieces)
    quotable.discard("")
    return quotable


@dataclass(frozen=True)
class AnswerReading:
    """How an answer was read: the predicted sentences, whether it said "none", the lines ignored.

    An answer with no predicted sentence and no "none" line is ``empty``: blank, or only preamble and
    comment lines (a cut-off ``以下是不自然的句子：``); ``unanswered`` when it is not blank.
    """

    sentences: list[str] = field(default_factory=list)
    none: bool = False
    ignored: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.sentences and not self.none

    @property
    def unanswered(self) -> bool:
        return self.empty and bool(self.ignored)


def read_answer(text: str | None, known: Iterable[str] = (), dialogue: Iterable[str] = ()) -> AnswerReading:
    """Read a model's answer; ``known`` are the sentences it may quote (the row's gold sentences) and
    ``dialogue`` the dialogue's turns (or sentences), when available: a line equal to one of their
    sentences is a prediction, whatever it says."""
    gold = [k for k in dict.fromkeys(map(normalise, known)) if k]
    quotable = dialogue_forms(dialogue)
    forms = _Known(gold, quotable)
    # quoted from the dialogue, always a prediction; a bare "无" / "没有" stays the prompt's "none" unless gold
    protected = set(gold) | {f for f in quotable if f not in _NONE_WORDS}
    items: list[tuple[str, str]] = []  # (kind, text), kind: sentence, none, ignored
    seen: dict[str, list[str]] = {}  # a repeated line is read once
    for raw in (text or "").splitlines():
        # one space for each run of whitespace first: every pattern then sees at most one in a row
        line = _EMPHASIS.sub("", _WHITESPACE.sub(" ", raw)).strip()
        if not normalise(line):
            continue
        if line not in seen:
            seen[line] = _pieces(line, forms)
        for piece in seen[line]:
            flat = normalise(piece)
            if not flat:
                items.append(("ignored", line))
            elif flat in protected:
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


def answer_lines(text: str) -> int:
    """The number of distinct non-blank lines ``read_answer`` reads (each is compared with the known sentences)."""
    return len({line for line in (_WHITESPACE.sub(" ", raw).strip() for raw in text.splitlines()) if normalise(line)})


def parse_answer(text: str | None, known: Iterable[str] = (), dialogue: Iterable[str] = ()) -> list[str]:
    """The sentences a model's answer names (empty for a "none" answer), de-duplicated, in order."""
    return read_answer(text, known, dialogue).sentences
