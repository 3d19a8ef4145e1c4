"""Finding the unnatural sentences of a dialogue: precision, recall and F1 against the annotated ones.

A model's answer is read by ``unnatural_answer.read_answer`` (convbench's rules, stated there and in
the metric card): one sentence per line, list numbering, speaker prefixes, labels, preambles and
quotes read off, several quoted sentences on a line each a prediction, and an answer saying there are
none (``无``, ``以上对话中没有不自然的句子。``, ``No unnatural sentences.``...) the empty set.
Sentences match after removing whitespace, punctuation and symbols (``match="fuzzy"``: character-level
LCS F-measure of at least ``threshold``, one gold sentence per prediction).

Per dialogue: both sets empty gives P = R = 1; exactly one empty gives P = R = 0; otherwise
P = matched / predicted and R = matched / gold. P and R are averaged over dialogues and F1 is the
harmonic mean of those averages, over all dialogues and over those that contain unnatural sentences
(``*_containing``), in percent; ``*_containing`` is None when no dialogue contains any (there is nothing
to average, and 0 would read as a failing model). A model that always answers "none" scores exactly
the share of dialogues without unnatural sentences, and 0 on the others.

Matching is quadratic, so rows are capped before any work: an answer, or a row's gold sentences
together, longer than ``max_chars`` characters (default ``MAX_TEXT_CHARS``, 20,000) are refused, and
fuzzy matching refuses a row with more than ``max_sentences`` (default ``MAX_FUZZY_SENTENCES``, 200)
distinct predicted or gold sentences. A NICO dialogue has a few dozen sentences.

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
from .inputs import MAX_TEXT_CHARS, as_row_list, check_column, check_length, check_max_chars, check_text
from .lcs import lcs_length
from .unnatural_answer import normalise, parse_answer, read_answer

__all__ = ["MAX_FUZZY_SENTENCES", "MAX_TEXT_CHARS", "normalise", "parse_answer", "score_unnatural"]

METRIC = "unnatural_sentence_prf"
# Fuzzy matching compares every predicted sentence with every gold one; this bounds the pairs per row.
MAX_FUZZY_SENTENCES = 200


def _matches(predicted: list[str], gold: list[str], match: str, threshold: float) -> int:
    pred, ref = list(dict.fromkeys(map(normalise, predicted))), list(dict.fromkeys(map(normalise, gold)))
    if match == "exact":
        return len(set(pred) & set(ref))
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
    return matched


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
    match: Literal["exact", "fuzzy"] = "exact",
    threshold: float = 0.8,
    return_rows: bool = False,
    max_chars: int | None = MAX_TEXT_CHARS,
    max_sentences: int | None = MAX_FUZZY_SENTENCES,
) -> dict[str, Any]:
    """Macro P/R/F1 (0-100) of model answers against each dialogue's gold unnatural sentences.

    Args:
        predictions: the model's answer per dialogue (a string; a missing answer is an error, not "none").
        references: the gold unnatural sentences per dialogue, a list of strings (possibly empty).
        match: ``exact`` (after normalise()) or ``fuzzy`` (LCS F-measure of at least ``threshold``).
        threshold: for fuzzy matching, a number in [0, 1].
        return_rows: add per-dialogue ``rows`` (predicted sentences, P, R).
        max_chars: refuse an answer, or a row's gold sentences together, longer than this (None: no limit).
        max_sentences: fuzzy matching refuses a row with more distinct sentences on either side (None: no limit).
    """
    n = check_column("predictions", predictions)
    if not n:
        raise ValueError("no predictions to score")
    if check_column("references", references) != n:
        raise ValueError(f"got {n} predictions but {len(references)} references")
    if match not in ("exact", "fuzzy"):
        raise ValueError(f"match must be 'exact' or 'fuzzy', got {match!r}")
    _check_options(threshold, max_chars, max_sentences)
    for i, (answer, gold) in enumerate(zip(predictions, references)):  # every row, before any work
        check_text(i, "predictions", answer, max_chars=max_chars)
        _check_gold(i, gold, max_chars)
    rows = []
    for i, (answer, gold) in enumerate(zip(predictions, references)):
        gold_set = list(dict.fromkeys(s for s in gold if normalise(s)))
        reading = read_answer(answer, gold_set)  # gold decides ambiguous formatting ("3.5元…" vs "3. 5元…")
        predicted = reading.sentences
        if match == "fuzzy":
            _check_sentence_count(i, predicted, gold_set, max_sentences)
        if not predicted and not gold_set:
            p = r = 1.0
        elif not predicted or not gold_set:
            p = r = 0.0
        else:
            matched = _matches(predicted, gold_set, match, threshold)
            p, r = matched / len(set(map(normalise, predicted))), matched / len(set(map(normalise, gold_set)))
        rows.append({"predicted": predicted, "none": reading.none, "ignored": reading.ignored,
                     "precision": p, "recall": r, "contains": bool(gold_set)})
    precision, recall, f1 = _prf([x["precision"] for x in rows], [x["recall"] for x in rows])
    containing = [x for x in rows if x["contains"]]
    p_c, r_c, f1_c = _prf([x["precision"] for x in containing], [x["recall"] for x in containing])
    result: dict[str, Any] = {
        "precision": precision, "recall": recall, "f1": f1,
        "precision_containing": p_c, "recall_containing": r_c, "f1_containing": f1_c,
        "n": len(rows), "n_containing": len(containing),
        "none_answers": sum(x["none"] for x in rows), "ignored_lines": sum(len(x["ignored"]) for x in rows),
        "signature": {"metric": METRIC, "convbench_version": __version__, "match": match,
                      **({"threshold": threshold} if match == "fuzzy" else {})},
    }
    if not containing:
        result["notes"] = ["no dialogue contains unnatural sentences: the *_containing scores are undefined (None)"]
    if return_rows:
        result["rows"] = rows
    return result


def _check_options(threshold: Any, max_chars: int | None, max_sentences: int | None) -> None:
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
        # NaN fails 0 <= x <= 1 too: every comparison with it is false, so it would silently match nothing
        raise MetricInputError(f"threshold must be a number in [0, 1], got {threshold!r}")
    check_max_chars(max_chars)
    if max_sentences is not None and (isinstance(max_sentences, bool) or not isinstance(max_sentences, int)
                                      or max_sentences < 1):
        raise MetricInputError(f"max_sentences must be a positive whole number or None, got {max_sentences!r}")


def _check_gold(row: int, gold: Any, max_chars: int | None) -> None:
    sentences = as_row_list(gold)  # a numpy array too: what Dataset.to_pandas() gives for a list column
    if sentences is None:
        raise MetricInputError(f"row {row}: field 'references' must be a list of sentences, got {type(gold).__name__}")
    for j, sentence in enumerate(sentences):
        if not isinstance(sentence, str):
            raise MetricInputError(
                f"row {row}: field 'references' item {j} must be a sentence (string), got {type(sentence).__name__}"
            )
    check_length(row, "references", sum(map(len, sentences)), max_chars)


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
