"""Finding the unnatural sentences of a dialogue: precision, recall and F1 against the annotated ones.

A model's answer is read as one sentence per line (blank lines and new lines separate), with speaker
prefixes (``CharacterA:``, ``A：``, ``甲：``...), list numbering and quotes stripped; an answer that says
there are none (``无``, ``没有``, ``没有不自然的句子``, ``none``...) is the empty set. Sentences match
after removing whitespace and punctuation (``match="fuzzy"``: character-level LCS F-measure of at
least ``threshold``, one gold sentence per prediction).

Per dialogue: both sets empty gives P = R = 1; exactly one empty gives P = R = 0; otherwise
P = matched / predicted and R = matched / gold. P and R are averaged over dialogues and F1 is the
harmonic mean of those averages, over all dialogues and over those that contain unnatural sentences
(``*_containing``), in percent. A model that always answers "none" scores exactly the share of
dialogues without unnatural sentences, and 0 on the others.

Example:
    >>> out = score_unnatural(["A：我吃饭了已经。\\n\\n无", "无"], [["我吃饭了已经。"], []])
    >>> out["precision"], out["recall"], out["f1"], out["f1_containing"]
    (100.0, 100.0, 100.0, 100.0)
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any, Literal

from .._version import __version__
from .lcs import lcs_length

METRIC = "unnatural_sentence_prf"
# Ways of saying "there are none"; compared after normalise() (punctuation and spaces removed).
NONE_ANSWERS = (
    "无", "没有", "没有了", "无不自然的句子", "没有不自然的句子", "没有不自然句子", "不存在", "不存在不自然的句子",
    "都很自然", "所有句子都很自然", "none", "nothing", "no", "noneofthem", "thereisnone", "therearenone", "n/a", "na",
)
_SPEAKER = re.compile(r"^\s*(?:character\s*[ab]|角色\s*[ab甲乙]|说话人\s*[ab甲乙]|[ab甲乙])\s*[:：]\s*", re.IGNORECASE)
_NUMBERING = re.compile(r"^\s*(?:[-*•·]|\(?\d+[.)、．]|（\d+）)\s*")
_QUOTES = "\"'“”‘’「」『』《》`"


def normalise(sentence: str) -> str:
    """Casefolded, without whitespace or punctuation: the form sentences are compared in."""
    return "".join(
        ch for ch in unicodedata.normalize("NFKC", sentence).casefold()
        if not ch.isspace() and not unicodedata.category(ch).startswith("P")
    )


_NONE = {normalise(x) for x in NONE_ANSWERS}


def parse_answer(text: str | None) -> list[str]:
    """The sentences a model's answer names (empty for a "none" answer), de-duplicated, in order."""
    sentences: list[str] = []
    for line in (text or "").splitlines():
        line = _NUMBERING.sub("", line.strip())
        line = _SPEAKER.sub("", line).strip().strip(_QUOTES).strip()
        if line and normalise(line) and normalise(line) not in _NONE and line not in sentences:
            sentences.append(line)
    return sentences


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


def _prf(precisions: list[float], recalls: list[float]) -> tuple[float, float, float]:
    if not precisions:
        return 0.0, 0.0, 0.0
    p, r = sum(precisions) / len(precisions), sum(recalls) / len(recalls)
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return 100.0 * p, 100.0 * r, 100.0 * f1


def score_unnatural(
    predictions: Sequence[str | None],
    references: Sequence[Sequence[str]],
    *,
    match: Literal["exact", "fuzzy"] = "exact",
    threshold: float = 0.8,
    return_rows: bool = False,
) -> dict[str, Any]:
    """Macro P/R/F1 (0-100) of model answers against each dialogue's gold unnatural sentences."""
    if not predictions:
        raise ValueError("no predictions to score")
    if len(predictions) != len(references):
        raise ValueError(f"got {len(predictions)} predictions but {len(references)} references")
    if match not in ("exact", "fuzzy"):
        raise ValueError(f"match must be 'exact' or 'fuzzy', got {match!r}")
    rows = []
    for i, (answer, gold) in enumerate(zip(predictions, references)):
        if answer is not None and not isinstance(answer, str):
            raise TypeError(f"row {i}: field 'predictions' must be the model's text, got {type(answer).__name__}")
        if isinstance(gold, str) or not all(isinstance(s, str) for s in gold):
            raise TypeError(f"row {i}: field 'references' must be a list of sentences, got {gold!r}")
        predicted = parse_answer(answer)
        gold_set = list(dict.fromkeys(s for s in gold if normalise(s)))
        if not predicted and not gold_set:
            p = r = 1.0
        elif not predicted or not gold_set:
            p = r = 0.0
        else:
            matched = _matches(predicted, gold_set, match, threshold)
            p, r = matched / len(set(map(normalise, predicted))), matched / len(set(map(normalise, gold_set)))
        rows.append({"predicted": predicted, "precision": p, "recall": r, "contains": bool(gold_set)})
    precision, recall, f1 = _prf([x["precision"] for x in rows], [x["recall"] for x in rows])
    containing = [x for x in rows if x["contains"]]
    p_c, r_c, f1_c = _prf([x["precision"] for x in containing], [x["recall"] for x in containing])
    result: dict[str, Any] = {
        "precision": precision, "recall": recall, "f1": f1,
        "precision_containing": p_c, "recall_containing": r_c, "f1_containing": f1_c,
        "n": len(rows), "n_containing": len(containing),
        "signature": {"metric": METRIC, "convbench_version": __version__, "match": match,
                      **({"threshold": threshold} if match == "fuzzy" else {})},
    }
    if return_rows:
        result["rows"] = rows
    return result
