"""Reading a model's answer to NICO's identify-unnatural task: the dialogue sentences it names.

The rules are convbench's (the paper gives none); metrics/unnatural_sentence_prf/README.md states them
and the phrase lists live in ``answer_phrases``. tests/nico/test_identify_answer_set.py holds them to
a careful reading of 1,160 varied answers. First, an answer that is JSON (in a code fence or not) is read
as the strings it lists, never its keys (``{"unnatural_sentences": [...]}``; an empty list says "none").
Then, line by line:

1. Each run of whitespace becomes one space; Markdown emphasis and headings are removed; a line with
   nothing but punctuation or symbols (or a code fence) is skipped.
2. Formatting around the sentence is read off: a list marker at the line start (``1.``, ``2）``,
   ``（3）``, ``A.``, ``b)``, ``-``), a speaker prefix (``A：``, ``B说：``, ``CharacterB:``), an answer
   label (``不自然的句子：``, ``答：``, ``原句：``), a trailing explanation or rewrite (``（过于书面）``,
   ``—— too formal``, ``→ 有点贵啊``). A list marker followed by a space is stripped and one directly
   followed by text is kept (``3.5元太贵了吧`` is a sentence), unless the other reading is one of the
   row's gold or dialogue sentences, or matches a gold sentence better (character LCS F-measure); so
   does every other choice here, e.g. whether a trailing parenthesis is part of the sentence (kept by
   default). A line labelled as a comment or a suggested rewrite (``原因：…``, ``建议改为：…``) is
   dropped, kept whole only when it is one of the dialogue's sentences word for word.
3. A line that is one quoted sentence is that sentence; a line holding several quoted spans
   (``“甲。”和“乙。”``) names each; so does a line joining known sentences with a list separator
   (``甲；乙``, ``甲 / 乙``) where the dialogue does not write them so; otherwise the line itself is the
   sentence.
4. A piece equal to a gold sentence, or to a sentence of the dialogue (a turn, or a run of its clauses,
   when the caller passes the dialogue), is always a prediction (after ``normalise()``): a dialogue's
   own ``说明：明天休息。`` or ``都挺自然的。`` stays matchable. The bare "none" words (``无``, ``没有``)
   are the one exception for dialogue sentences: ``无`` is how models (and the 3-shot demonstrations)
   answer that there are none. Otherwise a piece that
   says the model cannot tell (``抱歉，我无法判断。``, ``I can't tell.``) is a refusal; one that says
   there are none (a bare "none" word, or a statement about the sentences, dialogue or wording:
   ``以上对话中没有不自然的句子。``, ``都符合人类说话习惯，不需要修改。``, ``No unnatural sentences.``) is a
   "none" line; a preamble or comment (``以下是不自然的句子：``, a line ending in a colon, ``注：…``,
   ``这句话过于书面。``) is ignored; everything else is a predicted sentence, and knowing the dialogue, a
   near copy (LCS F-measure of at least ``SNAP``) of a gold sentence or of a turn holding one is that
   sentence (a near copy of any other sentence matches nothing either way).
5. An answer with no predicted sentence is the empty set ("none" when a line said so; ``empty`` when
   not; ``refused`` when it refused). Beside predicted sentences, "none" lines and refusals are
   comments (``其余句子都很自然。``) and are listed as ignored, like preambles.

Before any of this, a **blank** answer (``is_blank``: no letter or number, such as ``""``, ``……``, ``。``
or an emoji) is read as nothing at all, ``blank`` and ``empty``: it is not the answer "none" (the scorer
decides what it is worth: ``unnatural_prf``'s ``blank_answer``).

Example:
    >>> read_answer("以下是不自然的句子：\\n1. A：“我认为此价格偏高，”（过于书面）").sentences
    ['我认为此价格偏高，']
    >>> read_answer("以上对话中没有不自然的句子。").none
    True
    >>> read_answer("……").blank, read_answer("……").none
    (True, False)
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

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
_TRAILING_NOTE = re.compile(r"^(?P<body>.+?)(?:[（(][^（）()]{1,40}[）)]|(?:——|--|—|\s[-–]\s|→|⇒|->|=>).+)$")
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
_EN_CONFORM = re.compile(phrases.EN_CONFORM)
_ZH_CANNOT, _ZH_APOLOGY, _ZH_AI = re.compile(phrases.ZH_CANNOT), re.compile(phrases.ZH_APOLOGY), re.compile(phrases.ZH_AI)
_ZH_REFUSAL_TOPIC = re.compile(phrases.ZH_REFUSAL_TOPIC)
_EN_CANNOT, _EN_APOLOGY, _EN_AI = re.compile(phrases.EN_CANNOT), re.compile(phrases.EN_APOLOGY), re.compile(phrases.EN_AI)
_ZH_COMMENT, _EN_COMMENT = re.compile(phrases.ZH_COMMENT), re.compile(phrases.EN_COMMENT)
_JSON_SENTENCE_KEYS, _JSON_OTHER_KEYS = re.compile(phrases.JSON_SENTENCE_KEYS), re.compile(phrases.JSON_OTHER_KEYS)
_FENCE = re.compile(r"^```[A-Za-z]*[ \t]*\n(?P<body>.*?)\n?```$", re.DOTALL)
_FENCE_LINE = re.compile(r"^```[A-Za-z]*$")
_JSON_KEY = re.compile(r'^"[^"]{1,40}"\s*:\s*')  # a key before its value, in JSON too broken to parse
# Separators a model puts between two sentences on one line ("甲；乙", "甲 / 乙"): where the dialogue has
# no such mark, the line names each side.
_LIST_SEPARATOR = re.compile(r"\s*(?:；|;|/|\||、)\s*")
SNAP = 0.8  # a line this close (character LCS F-measure) to one sentence of the dialogue is a copy of it


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
    if _EN_CONFORM.search(words) and vocabulary & phrases.EN_ALL and not vocabulary & phrases.EN_NEGATION_WORDS:
        return True  # "All sentences conform to human speech patterns."
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


def says_cannot(text: str) -> bool:
    """Whether a piece of an answer is a refusal: the model says it cannot tell (answer_phrases has the rules).

    Example:
        >>> says_cannot("抱歉，我无法判断哪些句子不自然。"), says_cannot("I can't tell."), says_cannot("我不能确定他来不来。")
        (True, True, False)
    """
    flat = normalise(text)
    if _ZH_AI.search(flat):
        return True
    if _ZH_CANNOT.search(flat) and (_ZH_APOLOGY.search(flat) or _ZH_REFUSAL_TOPIC.search(flat)
                                    or len(flat) <= phrases.REFUSAL_SHORT):
        return True
    words = _words(text)
    if _EN_AI.search(words):
        return True
    return bool(_EN_CANNOT.search(words) and (_EN_APOLOGY.search(words) or set(words.split()) & phrases.EN_REFUSAL_TOPIC
                                              or len(words.split()) <= phrases.REFUSAL_SHORT))


def _is_comment(text: str) -> bool:
    """A remark on a sentence, on its own line without a label: "这句话过于书面。", "This sentence is too formal."."""
    return bool(_ZH_COMMENT.search(normalise(text)) or _EN_COMMENT.search(_words(text)))


# Each step offers a reading without some formatting: (the stripped text or None, the choice): strip by
# default (True), keep by default (False), or COMMENT: strip, the whole line kept only as an exact quote.
COMMENT = "comment"


def _strip_marker(line: str) -> tuple[str | None, bool | str]:
    m = _MARKER.match(line)
    if not m:
        return None, False
    rest = line[m.end():]
    return rest, bool(m["bullet"] or m["space"] or not rest.strip())  # a number alone on its line is a marker


def _strip_speaker(line: str) -> tuple[str | None, bool | str]:
    m = _SPEAKER.match(line)
    return (line[m.end():], True) if m else (None, False)


def _strip_label(line: str) -> tuple[str | None, bool | str]:
    m = _LABELLED.match(line)
    if not m or not m["rest"].strip():
        return None, False
    label = normalise(m["label"])
    if _COMMENTARY_LABEL.search(label):
        return "", COMMENT  # a comment: nothing of the line is a prediction, unless it quotes the dialogue
    return (m["rest"], True) if _ANSWER_LABEL.search(label) else (None, False)


def _strip_trailing_note(line: str) -> tuple[str | None, bool | str]:
    m = _TRAILING_NOTE.match(line)
    return (m["body"], False) if m else (None, False)


_STEPS: tuple[Callable[[str], tuple[str | None, bool | str]], ...] = (
    _strip_marker, _strip_speaker, _strip_label, _strip_trailing_note,
)


def _readings(line: str) -> list[tuple[str, bool]]:
    """Every way of reading the line's formatting, the one with every default choice first: (text, whether
    the reading may only be chosen as an exact quote of a known sentence)."""
    readings = [(line, False)]
    for step in _STEPS:
        following: dict[str, bool] = {}
        for text, exact_only in readings:
            stripped, choice = step(text)
            if stripped is None:
                options = [(text, exact_only)]
            else:
                stripped = stripped.strip()
                options = ([(stripped, exact_only), (text, True)] if choice == COMMENT
                           else [(stripped, exact_only), (text, exact_only)] if choice
                           else [(text, exact_only), (stripped, exact_only)])
            for option, flag in options:
                following[option] = following.get(option, True) and flag
        readings = list(following.items())
    return readings


def _unquote(text: str) -> str | None:
    """The inside of a text that is exactly one quoted span, or None."""
    if len(text) >= 2 and _OPEN_CLOSE.get(text[0]) == text[-1] and not any(q in text[1:-1] for q in _QUOTES):
        return text[1:-1]
    return None


class _Known:
    """A row's known sentences: the gold ones, compared with each reading (character LCS F-measure,
    their bit masks built once), every form an answer may quote (gold and dialogue) for exact look-ups,
    the dialogue's turns as written, and what a near copy may be a copy of."""

    def __init__(self, gold: list[str], quotable: dict[str, str], turns: Iterable[str] = ()) -> None:
        self.exact = set(gold) | set(quotable)
        self.turns = [_WHITESPACE.sub(" ", t) for t in turns]
        self.gold = [_masks(form) for form in gold]
        # what a near copy may be a copy of, knowing the dialogue: a gold sentence, or a turn holding one
        # (a copy of any other sentence is an unmatched prediction either way)
        sentences = list(gold) if quotable else []
        holding = [form for form in dict.fromkeys(normalise(t) for t in self.turns) if any(g in form for g in sentences)]
        self.targets = [(quotable.get(form, form), _masks(form)) for form in dict.fromkeys(sentences + holding)]

    def score(self, form: str, floor: float) -> float:
        """The best LCS F-measure of ``form`` with a gold sentence, or ``floor`` when none beats it."""
        return _best_lcs_f(form, self.gold, floor)[0]

    def verbatim(self, text: str) -> bool:
        """Whether ``text``, as written, is part of a dialogue turn (its own punctuation and separators)."""
        text = text.strip().rstrip("。！？!?…；;，,、～~ ")
        return bool(text) and any(text in turn for turn in self.turns)

    def copied(self, form: str) -> str | None:
        """The gold sentence, or turn holding one, that ``form`` is a near copy of (LCS F-measure of at least
        SNAP, the best one), as the dialogue writes it; None when there is none."""
        if not self.targets:
            return None
        _, index = _best_lcs_f(form, [m for _, m in self.targets], SNAP - 1e-12)
        return None if index is None else self.targets[index][0]


def _masks(form: str) -> tuple[int, dict[str, int], int]:
    """(length, bit mask of each character's positions, all-ones of that width): for bit-parallel LCS."""
    masks: dict[str, int] = {}
    for i, ch in enumerate(form):
        masks[ch] = masks.get(ch, 0) | 1 << i
    return len(form), masks, (1 << len(form)) - 1


def _best_lcs_f(form: str, candidates: list[tuple[int, dict[str, int], int]], floor: float) -> tuple[float, int | None]:
    """The best LCS F-measure of ``form`` with a candidate and its index, or (``floor``, None) when none beats it."""
    best, index = floor, None
    counts: Counter[str] | None = None
    for k, (size, masks, width) in enumerate(candidates):
        total = len(form) + size
        if not total or 2 * min(len(form), size) / total <= best:
            continue  # its length bounds the F-measure below what we have
        if counts is None:
            counts = Counter(form)
        # so do the characters only one of them has (the set difference is cheap; the LCS uses none of them)
        alone = sum(counts[ch] for ch in counts.keys() - masks.keys())
        if 2 * (len(form) - alone) / total <= best:
            continue
        row = width  # Allison-Dix / Hyyrö bit-parallel LCS, as in scoring/lcs.py
        for match in map(masks.get, form):
            if match:
                low = row & match
                row = ((row + low) | (row - low)) & width
        if (score := 2 * (size - row.bit_count()) / total) > best:
            best, index = score, k
    return best, index


def _best_reading(readings: list[tuple[str, bool]], known: _Known) -> str:
    """The first reading that matches a known sentence best: exactly (gold or dialogue), else by the
    character LCS F-measure with a gold sentence; a tie keeps the earlier reading, the default one first.
    A reading kept only as an exact quote (a comment's label left on) never wins by the F-measure."""
    forms = [normalise(_unquote(r) or r) for r, _ in readings]
    for (reading, _), form in zip(readings, forms):
        if form in known.exact:
            return reading  # F-measure 1: no reading scores higher, and none before it did
    best, best_score = readings[0][0], 0.0
    for (reading, exact_only), form in zip(readings, forms):
        if form and not exact_only and (score := known.score(form, best_score)) > best_score:
            best, best_score = reading, score
    return best


def _pieces(line: str, known: _Known) -> list[str]:
    """What one line names: the best reading of its formatting, split into quoted spans if it has several
    (or into the known sentences it joins with a list separator)."""
    readings = _readings(line)
    best = readings[0][0]
    if known.exact and len(readings) > 1:
        best = _best_reading(readings, known)
    inner = _unquote(best)
    if inner is not None:
        return [inner.strip()]
    quoted = [next(g for g in m.groups() if g is not None).strip() for m in _QUOTED_SPAN.finditer(best)]
    spans = [s for s in quoted if normalise(s)]
    if not known.verbatim(best):  # not as the dialogue writes it: several known sentences are each named
        for parts in (spans, [(_unquote(p.strip()) or p).strip() for p in _LIST_SEPARATOR.split(best)]):
            if len(parts) > 1 and all(normalise(part) in known.exact for part in parts):
                return parts  # "“甲” “乙”", "甲；乙" (where the dialogue has no "；"): two sentences
    if normalise(best) in known.exact:
        return [best]
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
    return set(dialogue_index(turns))


def dialogue_index(turns: Iterable[str]) -> dict[str, str]:
    """``dialogue_forms`` with each form's text as the dialogue writes it (its first occurrence)."""
    quotable: dict[str, str] = {}
    for turn in turns:
        raw = _DIALOGUE_PIECE.findall(turn)
        pieces = [(f, r) for f, r in zip(map(normalise, raw), raw) if f]
        quotable.setdefault("".join(f for f, _ in pieces), turn.strip())
        if len(pieces) <= MAX_TURN_PIECES:
            for i in range(len(pieces)):
                for j in range(i + 1, len(pieces) + 1):
                    quotable.setdefault("".join(f for f, _ in pieces[i:j]), "".join(r for _, r in pieces[i:j]).strip())
        else:
            for f, r in pieces:
                quotable.setdefault(f, r.strip())
    quotable.pop("", None)
    return quotable


def is_blank(text: str | None) -> bool:
    """Whether an answer is blank: once NFKC-normalised, it holds no letter and no number (no character of
    Unicode general category L* or N*; Chinese characters are Lo), only whitespace, punctuation (P*),
    symbols and emoji (S*), separators (Z*), control and format characters (C*: zero-width joiners) or
    marks (M*: variation selectors). An answer that is JSON (``[]``, ``{}``, in a code fence or not) is
    not blank: it is read as JSON, and an empty list says "none".

    Example:
        >>> [is_blank(a) for a in ("", "……", "。", "？", "🙂", "  \\n", "——\\n***")]
        [True, True, True, True, True, True, True]
        >>> [is_blank(a) for a in ("无", "None", "3", "①", "[]")]
        [False, False, False, False, False]
    """
    text = text or ""
    if any(unicodedata.category(ch).startswith(("L", "N")) for ch in unicodedata.normalize("NFKC", text)):
        return False
    return not _answer_lines(text)[1]


@dataclass(frozen=True)
class AnswerReading:
    """How an answer was read: the predicted sentences, whether it said "none", the lines ignored,
    whether it refused (said it cannot tell, and named nothing), and whether it was blank (``is_blank``).

    An answer with no predicted sentence and no "none" line is ``empty``: blank, only preamble and
    comment lines (a cut-off ``以下是不自然的句子：``), a refusal, or nothing else readable (an empty code
    block); ``unanswered`` when it is not blank: it has text, and none of it is an answer.
    """

    sentences: list[str] = field(default_factory=list)
    none: bool = False
    ignored: list[str] = field(default_factory=list)
    refused: bool = False
    blank: bool = False

    @property
    def empty(self) -> bool:
        return not self.sentences and not self.none

    @property
    def unanswered(self) -> bool:
        return self.empty and not self.blank


def _json_strings(value: Any) -> list[str]:
    """The sentences a JSON answer lists: its strings, from the keys that name sentences when a mapping
    has some (``unnatural_sentences``, ``sentence``), else from every key but reasons, speakers, counts..."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for item in value for s in _json_strings(item)]
    if isinstance(value, dict):
        keys = [k for k in value if _JSON_SENTENCE_KEYS.search(str(k).casefold())]
        if not keys:
            keys = [k for k in value if not _JSON_OTHER_KEYS.search(str(k).casefold())]
        return [s for k in keys for s in _json_strings(value[k])]
    return []  # numbers, true/false, null


def _answer_lines(text: str) -> tuple[list[str], bool]:
    """The lines to read, and whether the answer was a JSON list of sentences (an empty one says "none").
    A JSON answer (in a code fence or not) is read as its strings, never its keys; JSON too broken to
    parse is read line by line with each ``"key":`` dropped."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced["body"].strip()
    if not body.startswith(("{", "[")):
        return text.splitlines(), False
    try:
        value = json.loads(body)
    except ValueError:
        return [_JSON_KEY.sub("", line.strip()) for line in body.splitlines()], False
    return [line for string in _json_strings(value) for line in string.splitlines()], True


def read_answer(text: str | None, known: Iterable[str] = (), dialogue: Iterable[str] = ()) -> AnswerReading:
    """Read a model's answer; ``known`` are the sentences it may quote (the row's gold sentences) and
    ``dialogue`` the dialogue's turns (or sentences), when available: a line equal to one of their
    sentences is a prediction, whatever it says, and a line that is a near copy (character LCS F-measure
    of at least ``SNAP``) of a gold sentence, or of a turn holding one, names that sentence.
    A blank answer (``is_blank``) is read as nothing: ``blank``, naming nothing, not saying "none"."""
    if is_blank(text):
        return AnswerReading(blank=True)
    turns = list(dialogue)
    gold = [k for k in dict.fromkeys(map(normalise, known)) if k]
    quotable = dialogue_index(turns)
    forms = _Known(gold, quotable, turns)
    # quoted from the dialogue, always a prediction; a bare "无" / "没有" stays the answer "none" unless gold
    protected = set(gold) | {f for f in quotable if f not in _NONE_WORDS}
    lines, from_json = _answer_lines(text or "")
    items: list[tuple[str, str]] = []  # (kind, text), kind: sentence, none, refusal, ignored
    seen: dict[str, list[str]] = {}  # a repeated line is read once
    for raw in lines:
        # one space for each run of whitespace first: every pattern then sees at most one in a row
        line = _EMPHASIS.sub("", _WHITESPACE.sub(" ", raw)).strip()
        if not normalise(line) or _FENCE_LINE.match(line):
            continue
        if line not in seen:
            seen[line] = _pieces(line, forms)
        for piece in seen[line]:
            flat = normalise(piece)
            if not flat:
                items.append(("ignored", line))
            elif flat in protected:
                items.append(("sentence", piece))
            elif says_cannot(piece):
                items.append(("refusal", piece))
            elif says_none(piece):
                items.append(("none", piece))
            elif _is_preamble(piece) or _is_comment(piece):
                items.append(("ignored", piece))
            else:  # a sentence; knowing the dialogue, a near copy of a gold sentence (or its turn) names it
                items.append(("sentence", forms.copied(flat) or piece))
    predicted = list(dict.fromkeys(t for kind, t in items if kind == "sentence"))
    said_none = not predicted and (any(kind == "none" for kind, _ in items) or from_json)
    # "none" lines and refusals beside named sentences are comments ("其余句子都很自然。"): listed as ignored
    ignored = [t for kind, t in items if kind == "ignored" or (predicted and kind in ("none", "refusal"))]
    refused = not predicted and not said_none and any(kind == "refusal" for kind, _ in items)
    return AnswerReading(predicted, said_none, ignored, refused)


def answer_lines(text: str) -> int:
    """The number of distinct non-blank lines ``read_answer`` reads (each is compared with the known sentences)."""
    return len({line for line in (_WHITESPACE.sub(" ", raw).strip() for raw in text.splitlines()) if normalise(line)})


def parse_answer(text: str | None, known: Iterable[str] = (), dialogue: Iterable[str] = ()) -> list[str]:
    """The sentences a model's answer names (empty for a "none" answer), de-duplicated, in order."""
    return read_answer(text, known, dialogue).sentences
