"""Finding the unnatural sentences of a dialogue: precision, recall and F1 against the annotated ones.

A model's answer is read by ``unnatural_answer.read_answer`` (convbench's rules, stated there and in
the metric card): one sentence per line, list numbering, speaker prefixes, labels, preambles, notes,
reasons and suggested rewrites and quotes read off, several quoted sentences on a line each a
prediction, a JSON answer read as its strings (never its keys), an answer saying there are none
(``无``, ``以上对话中没有不自然的句子。``, ``都符合人类说话习惯``, ``No unnatural sentences.``...) the
empty set, and a refusal (``抱歉，我无法判断。``, ``I can't tell.``) no answer. Sentences match after
removing whitespace, punctuation and symbols, and a prediction that is a stretch of the dialogue (a
turn, or a run of its clauses) matches a gold sentence it contains (the model quoted the turn around an
unnatural clause); ``match="fuzzy"`` instead matches by character-level LCS F-measure of at least
``threshold``, one gold sentence per prediction.

Per dialogue: both sets empty gives P = R = 1; exactly one empty gives P = R = 0; otherwise
P = predictions that match a gold sentence / predictions and R = gold sentences matched / gold. P and R
are averaged over dialogues and F1 is the harmonic mean of those averages, over all dialogues and over
those that contain unnatural sentences (``*_containing``), in percent; ``*_containing`` is None when no
dialogue contains any (there is nothing to average, and 0 would read as a failing model). A model that
always answers "none" scores exactly the share of dialogues without unnatural sentences, and 0 on the
others.

An answer with no predicted sentence that does not say "none" either is **no answer** and scores
P = R = 0 on every dialogue, counted in ``unanswered``: a blank answer (``is_blank``: no letter or
number, so ``""``, ``……``, ``。``, ``？`` or an emoji; ``blank_answers``), a refusal (``refusals``), an
answer with text of which nothing could be read (only preamble or comment lines: a cut-off
``以下是不自然的句子：``; ``empty_answers``). ``blank_answer="none"`` reads a blank answer as the answer
"none" instead (P = R = 1 on a clean dialogue: an always-blank model then scores the share of clean
dialogues, 47.5 on NICO's test set); the signature records the choice. The paper is silent on blank
answers (its all-"none" models wrote "no unnatural sentence").

``dialogues`` (optional, one list of the dialogue's turns or sentences per row) lets the reader know
what the model may quote: a line equal (after normalise()) to a dialogue sentence, or to a run of its
clauses, is always a predicted sentence, even one that sounds like "none" or a preamble; a line that is
a near copy of one (a character dropped, changed or added: LCS F-measure of at least ``SNAP``, 0.8)
names it; and a quoted stretch of the dialogue matches the gold sentences inside it. ``convbench run
nico`` always passes the dialogue; without it, only exact quotes of gold sentences match.

Reading an answer compares each line's readings with the known sentences, and matching compares
sentences pairwise, so rows are capped before any work: an answer, a row's gold sentences together, or
its dialogue together, longer than ``max_chars`` characters (default ``MAX_TEXT_CHARS``, 20,000); more
than ``max_sentences`` (default ``MAX_SENTENCES``, 200) distinct gold sentences or dialogue turns (and,
for fuzzy matching, predicted sentences); an answer with more than ``max_lines`` (default
``MAX_ANSWER_LINES``, 200) distinct non-blank lines, or a line longer than ``max_line_chars``
(default ``MAX_LINE_CHARS``, 2,000). Each refusal is an error naming the row, the field and the limit.
A NICO dialogue has a few dozen sentences and an answer a few lines.

Example:
    >>> out = score_unnatural(["A：我吃饭了已经。\\n\\n无", "无"], [["我吃饭了已经。"], []])
    >>> out["precision"], out["recall"], out["f1"], out["f1_containing"]
    (100.0, 100.0, 100.0, 100.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from .._version import __version__
from ..errors import MetricInputError
from ..scoring.inputs import MAX_TEXT_CHARS, as_row_list, check_column, check_length, check_max_chars, check_text
from ..scoring.lcs import lcs_length
from .unnatural_answer import answer_lines, dialogue_forms, normalise, parse_answer, read_answer

__all__ = ["BLANK_ANSWERS", "MAX_ANSWER_LINES", "MAX_FUZZY_SENTENCES", "MAX_LINE_CHARS", "MAX_SENTENCES",
           "MAX_TEXT_CHARS", "answer_limit_error", "normalise", "parse_answer", "score_unnatural"]

METRIC = "unnatural_sentence_prf"
BLANK_ANSWERS = ("unanswered", "none")  # what a blank answer is: no answer (scored 0), or the answer "none"
# Each answer line is read against every gold and dialogue sentence, and fuzzy matching compares every
# predicted sentence with every gold one: these bound the pairs per row (tests/nico/test_unnatural_prf.py
# reads a row at the limits).
MAX_SENTENCES = MAX_FUZZY_SENTENCES = 200  # distinct gold sentences, dialogue turns, fuzzy predictions
MAX_ANSWER_LINES = 200  # distinct non-blank lines of one answer
MAX_LINE_CHARS = 2_000  # characters in one answer line


def _matches(predicted: list[str], gold: list[str], match: str, threshold: float,
             quotable: set[str] = frozenset()) -> tuple[int, int]:  # type: ignore[assignment]
    """(predictions that match a gold sentence, gold sentences matched). Exact: equal after normalise(), or
    the prediction is a stretch of the dialogue (a turn, a run of its clauses: ``quotable``) that contains
    the gold sentence. Fuzzy: LCS F-measure of at least ``threshold``, one gold sentence per prediction."""
    pred, ref = list(dict.fromkeys(map(normalise, predicted))), list(dict.fromkeys(map(normalise, gold)))
    if match == "exact":
        def hit(p: str, g: str) -> bool:
            return p == g or (p in quotable and g in p)

        return sum(any(hit(p, g) for g in ref) for p in pred), sum(any(hit(p, g) for p in pred) for g in ref)
    unused, matched = list(ref), 0
    for p in pred:
        best, best_score = None, 0.0
        for g in unused:
            lcs = lcs_length(p, g)
            score = 2 * lcs / (len(p) + len(g)) if p and g else 0.0
            if score > best_score:
                best, best_score = g, score
        if best is not None and best_score >= threshold:
            unused.remove(best)
            matched += 1
    return matched, matched


def _prf(precisions: list[float], recalls: list[float]) -> tuple[float | None, float | None, float | None]:
    if not precisions:
        return None, None, None  # no dialogue to average over: undefined, not 0
    p, r = sum(precisions) / len(precisions), sum(recalls) / len(recalls)
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return 100.0 * p, 100.0 * r, 100.0 * f1


def score_unnatural(
    predictions: Sequence[str],
    references: Sequence[Sequence[str]],
    *,
    dialogues: Sequence[Sequence[str] | None] | None = None,
    match: Literal["exact", "fuzzy"] = "exact",
    threshold: float = 0.8,
    blank_answer: Literal["unanswered", "none"] = "unanswered",
    return_rows: bool = False,
    max_chars: int | None = MAX_TEXT_CHARS,
    max_sentences: int | None = MAX_SENTENCES,
    max_lines: int | None = MAX_ANSWER_LINES,
    max_line_chars: int | None = MAX_LINE_CHARS,
) -> dict[str, Any]:
    """Macro P/R/F1 (0-100) of model answers against each dialogue's gold unnatural sentences.

    Args:
        predictions: the model's answer per dialogue (a string; a missing answer is an error, not "none").
        references: the gold unnatural sentences per dialogue, a list of strings (possibly empty).
        dialogues: optional, per dialogue its turns (or sentences), a list of strings, or None where
            unknown: a line quoting one of them is always a predicted sentence.
        match: ``exact`` (after normalise()) or ``fuzzy`` (LCS F-measure of at least ``threshold``).
        threshold: for fuzzy matching, a number in [0, 1].
        blank_answer: what a blank answer (no letter or number) is: ``unanswered`` (no answer, P = R = 0)
            or ``none`` (the answer "none": P = R = 1 on a dialogue without unnatural sentences).
        return_rows: add per-dialogue ``rows`` (predicted sentences, P, R, whether "none", empty, refused,
            blank, unanswered).
        max_chars: refuse an answer, or a row's gold sentences or dialogue together, longer than this.
        max_sentences: refuse a row with more distinct gold sentences or dialogue turns (fuzzy matching:
            or predicted sentences) than this.
        max_lines, max_line_chars: refuse an answer with more distinct non-blank lines, or a longer line.
        Each limit: None lifts it; none changes a score, so none is in the signature.
    """
    n = check_column("predictions", predictions)
    if not n:
        raise ValueError("no predictions to score")
    if check_column("references", references) != n:
        raise ValueError(f"got {n} predictions but {len(references)} references")
    if match not in ("exact", "fuzzy"):
        raise ValueError(f"match must be 'exact' or 'fuzzy', got {match!r}")
    if blank_answer not in BLANK_ANSWERS:
        raise MetricInputError(f"blank_answer must be 'unanswered' or 'none', got {blank_answer!r}")
    if dialogues is not None and check_column("dialogues", dialogues) != n:
        raise ValueError(f"got {n} predictions but {len(dialogues)} dialogues")
    _check_options(threshold, max_chars, max_sentences, max_lines, max_line_chars)
    turns: list[list[str]] = []
    for i, (answer, gold) in enumerate(zip(predictions, references)):  # every row, before any work
        check_text(i, "predictions", answer, max_chars=max_chars)
        _check_answer(i, answer, max_lines, max_line_chars)
        _check_gold(i, gold, max_chars, max_sentences)
        turns.append(_check_dialogue(i, None if dialogues is None else dialogues[i], max_chars, max_sentences))
    rows = []
    for i, (answer, gold) in enumerate(zip(predictions, references)):
        gold_set = list(dict.fromkeys(s for s in gold if normalise(s)))
        # gold (and the dialogue) decide ambiguous formatting ("3.5元…" vs "3. 5元…")
        reading = read_answer(answer, gold_set, turns[i])
        predicted = reading.sentences
        if match == "fuzzy":
            _check_sentence_count(i, predicted, gold_set, max_sentences)
        # a refusal, only preamble or comment lines, or (by default) a blank answer: no answer, not "none"
        unanswered = reading.unanswered or (reading.blank and blank_answer == "unanswered")
        if unanswered:
            p = r = 0.0
        elif not predicted and not gold_set:
            p = r = 1.0
        elif not predicted or not gold_set:
            p = r = 0.0
        else:
            hits, covered = _matches(predicted, gold_set, match, threshold, dialogue_forms(turns[i]))
            p, r = hits / len(set(map(normalise, predicted))), covered / len(set(map(normalise, gold_set)))
        rows.append({"predicted": predicted, "none": reading.none, "ignored": reading.ignored,
                     "empty": reading.unanswered and not reading.refused, "refused": reading.refused,
                     "blank": reading.blank, "unanswered": unanswered,
                     "precision": p, "recall": r, "contains": bool(gold_set)})
    precision, recall, f1 = _prf([x["precision"] for x in rows], [x["recall"] for x in rows])
    containing = [x for x in rows if x["contains"]]
    p_c, r_c, f1_c = _prf([x["precision"] for x in containing], [x["recall"] for x in containing])
    result: dict[str, Any] = {
        "precision": precision, "recall": recall, "f1": f1,
        "precision_containing": p_c, "recall_containing": r_c, "f1_containing": f1_c,
        "n": len(rows), "n_containing": len(containing),
        "none_answers": sum(x["none"] for x in rows), "ignored_lines": sum(len(x["ignored"]) for x in rows),
        "empty_answers": sum(x["empty"] for x in rows), "refusals": sum(x["refused"] for x in rows),
        "blank_answers": sum(x["blank"] for x in rows), "unanswered": sum(x["unanswered"] for x in rows),
        # answers read knowing the dialogue can score differently: the signature says whether they were
        "signature": {"metric": METRIC, "convbench_version": __version__, "match": match,
                      **({"threshold": threshold} if match == "fuzzy" else {}), "dialogues": any(turns),
                      "blank_answer": blank_answer},
    }
    if not containing:
        result["notes"] = ["no dialogue contains unnatural sentences: the *_containing scores are undefined (None)"]
    if return_rows:
        result["rows"] = rows
    return result


def _check_limit(name: str, value: Any) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise MetricInputError(f"{name} must be a positive whole number or None, got {value!r}")


def _check_options(threshold: Any, max_chars: int | None, max_sentences: int | None, max_lines: int | None,
                   max_line_chars: int | None) -> None:
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
        # NaN fails 0 <= x <= 1 too: every comparison with it is false, so it would silently match nothing
        raise MetricInputError(f"threshold must be a number in [0, 1], got {threshold!r}")
    check_max_chars(max_chars)
    for name, value in (("max_sentences", max_sentences), ("max_lines", max_lines), ("max_line_chars", max_line_chars)):
        _check_limit(name, value)


def _over(row: int, field: str, what: str, limit: int, option: str) -> MetricInputError:
    return MetricInputError(f"row {row}: field {field!r} {what}, over the limit of {limit:,} "
                            f"(pass a larger {option}, or {option}=None, to score it anyway)")


def _answer_limit(answer: str, max_lines: int | None, max_line_chars: int | None) -> tuple[str, int, str] | None:
    """(what is over, the limit, the option) for an answer over the per-answer limits, or None."""
    if max_lines is not None and (count := answer_lines(answer)) > max_lines:
        return f"has {count:,} distinct lines", max_lines, "max_lines"
    if max_line_chars is not None:
        for number, line in enumerate(answer.splitlines(), start=1):
            if len(line) > max_line_chars:
                return f"line {number} is {len(line):,} characters long", max_line_chars, "max_line_chars"
    return None


def answer_limit_error(answer: str) -> str | None:
    """Why an answer is over the default per-answer limits (lines, line length), or None: the runner
    records this as the row's error rather than failing the whole run.

    Example:
        >>> answer_limit_error("好" * 2_001)
        'line 1 is 2,001 characters long, over the limit of 2,000'
    """
    over = _answer_limit(answer, MAX_ANSWER_LINES, MAX_LINE_CHARS)
    return None if over is None else f"{over[0]}, over the limit of {over[1]:,}"


def _check_answer(row: int, answer: str, max_lines: int | None, max_line_chars: int | None) -> None:
    over = _answer_limit(answer, max_lines, max_line_chars)
    if over is not None:
        raise _over(row, "predictions", *over)


def _check_gold(row: int, gold: Any, max_chars: int | None, max_sentences: int | None) -> None:
    sentences = as_row_list(gold)  # a numpy array too: what Dataset.to_pandas() gives for a list column
    if sentences is None:
        raise MetricInputError(f"row {row}: field 'references' must be a list of sentences, got {type(gold).__name__}")
    for j, sentence in enumerate(sentences):
        if not isinstance(sentence, str):
            raise MetricInputError(
                f"row {row}: field 'references' item {j} must be a sentence (string), got {type(sentence).__name__}"
            )
    check_length(row, "references", sum(map(len, sentences)), max_chars)
    count = len({f for f in map(normalise, sentences) if f})
    if max_sentences is not None and count > max_sentences:
        raise _over(row, "references", f"has {count:,} distinct sentences", max_sentences, "max_sentences")


def _check_dialogue(row: int, dialogue: Any, max_chars: int | None, max_sentences: int | None) -> list[str]:
    """One row's dialogue turns (none when not given)."""
    if dialogue is None:
        return []
    turns = as_row_list(dialogue)
    if turns is None:
        raise MetricInputError(f"row {row}: field 'dialogues' must be a list of turns or sentences, "
                               f"got {type(dialogue).__name__}")
    for j, turn in enumerate(turns):
        if not isinstance(turn, str):
            raise MetricInputError(f"row {row}: field 'dialogues' item {j} must be a string, got {type(turn).__name__}")
    check_length(row, "dialogues", sum(map(len, turns)), max_chars)
    if max_sentences is not None and (count := len(set(turns))) > max_sentences:
        raise _over(row, "dialogues", f"has {count:,} distinct turns", max_sentences, "max_sentences")
    return turns


def _check_sentence_count(row: int, predicted: list[str], gold: list[str], max_sentences: int | None) -> None:
    if max_sentences is None:
        return
    for field, sentences in (("predictions", predicted), ("references", gold)):
        count = len(set(map(normalise, sentences)))
        if count > max_sentences:
            raise MetricInputError(
                f"row {row}: field {field!r} has {count:,} distinct sentences, over the fuzzy-matching limit of "
                f"{max_sentences:,} (pass a larger max_sentences, or max_sentences=None, to score it anyway)"
            )
