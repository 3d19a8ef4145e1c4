"""Cleaning transcript turns: artefacts out, words kept, every change counted.

Text rules, applied in this order to each turn (``counts`` gets occurrences unless said otherwise):

1. ``markers``: transcription markers in braces (``{vocalsound}``, ``{disfmarker}``, ``{gap}``...) go.
2. ``unintelligible``: ICSI's ``@ @`` (a standalone run of ``@``: an unintelligible stretch) goes.
3. ``stage_directions``: bracketed audience and recording notes (``[applause]``, ``(laughter)``,
   ``[crosstalk]``, ``[inaudible]``...) go.
4. ``page_headers``: given a source's header pattern (IQ2: ``page_header_pattern``), the running headers
   of the original PDF transcripts go, except where the text quotes the motion they repeat.
5. ``whitespace``: every run of whitespace becomes one space and the turn is stripped (counted per turn
   changed; removals above leave double spaces, so most such turns count here too).
6. ``spaced_punctuation``: the space before ``, . ? ! ; : %`` (tokenised transcripts write "fine ,") goes,
   except before a digit (".22 calibre" stays).
7. ``spaced_contractions``: the space between a word and a clitic (``'s 're 've 'll 'd 'm n't``) goes
   ("date 's" -> "date's").
8. ``spaced_hyphens`` (tokenised sources only, ``tokenised=True``): a hyphen spaced between two words is
   rejoined ("Mm - hmm" -> "Mm-hmm", "twenty - first" -> "twenty-first"). The tokenised source writes a
   cut-off word the same way, so "Jus - You know" becomes "Jus-You know". IQ2 uses " - " as a dash: never there.

Turn rules (``clean_turns``): ``speaker_aliases`` (labels renamed, per meeting: a label that is another
label of the meeting plus trailing parentheses, "Hon. Bill Blair (Minister of Public Safety...)", takes the
shorter one, "Hon. Bill Blair"); ``empty_turns`` (a turn left with no letter or digit is dropped);
``merged_turns`` (two turns of one speaker that only dropped turns separated become one, joined by a
space; turns the source itself has back to back stay apart). IQ2 alone: ``speaker_labels`` (``split_inline_speakers``:
"AUDIENCE MEMBER" anywhere, and the labels ``iq2_inline_speakers.yaml`` lists per debate).

Speed: rules 6-8 run once over all of a call's turns joined by newlines, with plain string search where a
regex would try a match at every space; ``benchmarks/cocoeval_cleaning_speed.py`` checks the output
against one regex per rule per turn.

Example:
    >>> counts = Counter()
    >>> clean_text("{vocalsound} Okay , that 's  fine . [applause]", counts)
    "Okay, that's fine."
    >>> {rule: n for rule, n in sorted(counts.items()) if n}
    {'markers': 1, 'spaced_contractions': 1, 'spaced_punctuation': 2, 'stage_directions': 1, 'whitespace': 1}
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

RULES = ("speaker_labels", "markers", "unintelligible", "stage_directions", "page_headers", "whitespace",
         "spaced_punctuation", "spaced_contractions", "spaced_hyphens", "speaker_aliases", "empty_turns",
         "merged_turns")
_MARKER = re.compile(r"\{\s*[a-z_]+\s*\}", re.IGNORECASE)
_UNINTELLIGIBLE = re.compile(r"(?<!\S)@(?:\s+@)*(?!\S)")
_STAGE = re.compile(
    r"[\[(]\s*(?:applause|laughter|laughs|laughing|crosstalk|cross-talk|inaudible|unintelligible|music|"
    r"cheers|cheering|boos|booing|silence|pause|noise|coughs?|interruption|objection)\s*[.!]?\s*[\])]",
    re.IGNORECASE,
)
_PUNCTUATION = ",.?!;:%"
_SPACED_BEFORE_DIGIT = re.compile(r"\d(?<= [,.?!;:%]\d)")  # starts on a digit: digits are rare in speech
_SPACED = re.compile(r" ([,.?!;:%])(?!\d)")
_CLITIC_ALTERNATIVES = r"(?:'(?:s|re|ve|ll|d|m)|n't)"
# Only the space goes; the lookbehind comes last so that the search runs on the literal space.
_CLITIC = re.compile(rf" (?={_CLITIC_ALTERNATIVES}\b)(?<=\w )", re.IGNORECASE)
# "x 's 's": a clitic right after a joined one is not joined (the rule consumes the word character before
# the space, as one regex over each turn does); such text takes that regex instead.
_CLITIC_PAIR = re.compile(rf"'(?:s|re|ve|ll|d|m|(?<=n')t) {_CLITIC_ALTERNATIVES}\b", re.IGNORECASE)
_CLITIC_CONSUMING = re.compile(rf"(\w) ({_CLITIC_ALTERNATIVES})\b", re.IGNORECASE)
_HYPHEN = re.compile(r" - (?<=\w - )(?=\w)")
_WORD = re.compile(r"\w")
_INLINE_SPEAKER = re.compile(r"AUDIENCE MEMBER(?: \((male|female)\))?")
_TRAILING_GROUP = re.compile(r"\s*\([^()]*\)(?=\)*\s*$)")  # the innermost parenthesised group at the end


def page_header_pattern(headers: Sequence[str]) -> re.Pattern[str] | None:
    """The pattern that cuts these exact header strings out of a turn; ``None`` without headers.

    A header that is also the motion ("Smart Technology is Making Us Dumb") is left where the text quotes
    it: after a quotation mark, or followed by punctuation.
    """
    if not headers:
        return None
    alternatives = "|".join(re.escape(h) for h in sorted(headers, key=len, reverse=True))
    return re.compile(f"(?<![\"“])(?:{alternatives})(?![.,;:?!\"”])")


def split_inline_speakers(speaker: str, paragraphs: Sequence[str], counts: Counter,
                          labels: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """One IQ2 turn as ``(speaker, text)`` pieces, split where the transcript names another speaker inline.

    IQ2 keeps some audience questions inside the moderator's turn: "... please. AUDIENCE MEMBER (male)
    Just very briefly, I have—", and once a debater's reply inside another's turn: "... that proposition.
    CHRIS COX Actually, I agree—" (such labels are listed per debate in ``iq2_inline_speakers.yaml`` and
    given as ``labels``: label as written -> speaker). The label's speaker has the rest of that paragraph;
    the next paragraph is the turn's speaker again. Audience labels become IQ2's own names ("Male Audience
    Member"); paragraphs of one speaker are joined by a space. A named speaker's piece stays even with no words (IQ2 also has empty
    interjection turns): ``clean_turns`` drops it, counted, and merges what it separated; so does a turn
    with no text at all, which comes back as one empty piece.
    """
    pieces: list[tuple[str, str]] = []

    def add(who: str, text: str, named: bool) -> None:
        text = text.strip()
        if not text and not named:
            return  # nothing before a label, or an empty paragraph of the turn's speaker
        if pieces and pieces[-1][0] == who:
            pieces[-1] = (who, f"{pieces[-1][1]} {text}".strip())
        else:
            pieces.append((who, text))

    listed = labels or {}
    pattern = _inline_pattern(tuple(listed))
    for paragraph in paragraphs:
        who, start, named = speaker, 0, False
        for label in pattern.finditer(paragraph):
            counts["speaker_labels"] += 1
            add(who, paragraph[start : label.start()], named)
            if label.group(0) in listed:
                who = listed[label.group(0)]
            else:
                who = f"{label.group(1).capitalize()} Audience Member" if label.group(1) else "Audience Member"
            start, named = label.end(), True
        add(who, paragraph[start:], named)
    return pieces or [(speaker, "")]


@lru_cache(maxsize=64)
def _inline_pattern(labels: tuple[str, ...]) -> re.Pattern[str]:
    """``_INLINE_SPEAKER`` or one of ``labels`` as written (whole words, the longest first)."""
    if not labels:
        return _INLINE_SPEAKER
    listed = "|".join(re.escape(label) for label in sorted(labels, key=len, reverse=True))
    return re.compile(rf"{_INLINE_SPEAKER.pattern}|(?<!\w)(?:{listed})(?!\w)")


def clean_text(text: str, counts: Counter, *, tokenised: bool = False,
               page_headers: re.Pattern[str] | None = None) -> str:
    """One turn's text after the text rules (see the module docstring)."""
    return clean_texts([text], counts, tokenised=tokenised, page_headers=page_headers)[0]


def clean_texts(texts: Sequence[str], counts: Counter, *, tokenised: bool = False,
                page_headers: re.Pattern[str] | None = None) -> list[str]:
    """Every text after the text rules; the same as ``clean_text`` on each, faster."""
    collapsed = [_remove_and_collapse(text, counts, page_headers) for text in texts]
    if not collapsed:
        return []
    # No turn holds a newline now, so the rules below (which never match one) can run on them all at once.
    joined = "\n".join(collapsed)
    joined = _join_spaced_punctuation(joined, counts)
    if "'" in joined:
        if _CLITIC_PAIR.search(joined):
            joined, n = _CLITIC_CONSUMING.subn(r"\1\2", joined)
        else:
            joined, n = _CLITIC.subn("", joined)
        counts["spaced_contractions"] += n
    if tokenised and " - " in joined:
        joined, n = _HYPHEN.subn("-", joined)
        counts["spaced_hyphens"] += n
    return joined.split("\n")


def _remove_and_collapse(text: str, counts: Counter, page_headers: re.Pattern[str] | None) -> str:
    # each `in` test is a necessary condition for its pattern: a cheap skip, same result
    if "{" in text:
        text = _count_sub(_MARKER, " ", text, "markers", counts)
    if "@" in text:
        text = _count_sub(_UNINTELLIGIBLE, " ", text, "unintelligible", counts)
    if "[" in text or "(" in text:
        text = _count_sub(_STAGE, " ", text, "stage_directions", counts)
    if page_headers is not None:
        text = _count_sub(page_headers, " ", text, "page_headers", counts)
    # str.split() splits on what the regex \s matches; isprintable() is False for every whitespace but " "
    if text.isprintable() and "  " not in text and text[:1] != " " and text[-1:] != " ":
        return text
    collapsed = " ".join(text.split())
    if collapsed != text:
        counts["whitespace"] += 1
    return collapsed


def _count_sub(pattern: re.Pattern[str], replacement: str, text: str, rule: str, counts: Counter) -> str:
    text, n = pattern.subn(replacement, text)
    counts[rule] += n
    return text


def _join_spaced_punctuation(text: str, counts: Counter) -> str:
    """``_SPACED`` on single-spaced text, by str.replace unless a spaced mark stands before a digit.

    Removing a space before one mark never puts a space before another, so one mark at a time is the same.
    """
    if _SPACED_BEFORE_DIGIT.search(text):
        text, n = _SPACED.subn(r"\1", text)
        counts["spaced_punctuation"] += n
        return text
    for mark in _PUNCTUATION:
        n = text.count(" " + mark)
        if n:
            text = text.replace(" " + mark, mark)
            counts["spaced_punctuation"] += n
    return text


def speaker_aliases(speakers: Iterable[str]) -> dict[str, str]:
    """``{label: shorter label}`` for a meeting's labels that are another of its labels plus trailing
    parenthesised groups (innermost first: "The Chair (Hon. Anthony Rota (Nipissing, Lib.))" -> "The Chair")."""
    labels = set(speakers)
    aliases = {}
    for label in sorted(labels):
        name, target = label, None
        while (group := _TRAILING_GROUP.search(name)) is not None:
            name = (name[: group.start()] + name[group.end() :]).strip()
            if name in labels:
                target = name  # keep going: the shortest label of the person wins
        if target is not None:
            aliases[label] = target
    return aliases


def clean_turns(turns: Sequence[dict[str, Any]], counts: Counter, *, tokenised: bool = False,
                page_headers: re.Pattern[str] | None = None) -> list[dict[str, Any]]:
    """One meeting's turns after every rule: texts cleaned, speakers' aliases renamed, empty turns
    dropped, and turns of one speaker that only dropped turns separated merged (keeping the first's other
    keys, such as ``position``)."""
    texts = clean_texts([t["utterance"] for t in turns], counts, tokenised=tokenised, page_headers=page_headers)
    aliases = speaker_aliases(t["speaker"] for t in turns)
    counts["speaker_aliases"] += len(aliases)
    kept: list[dict[str, Any]] = []
    dropped = False
    for turn, text in zip(turns, texts):
        if not _WORD.search(text):
            counts["empty_turns"] += 1
            dropped = True
            continue
        speaker = aliases.get(turn["speaker"], turn["speaker"])
        if dropped and kept and kept[-1]["speaker"] == speaker:
            kept[-1]["utterance"] += " " + text
            counts["merged_turns"] += 1
        else:
            kept.append({**turn, "speaker": speaker, "utterance": text})
        dropped = False
    return kept
