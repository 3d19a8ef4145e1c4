"""NC-Bench action accuracy: does a judge's label set for a model turn contain an acceptable action?

The pass rule is the released aggregator's: a row passes when any parsed label is acceptable, except
that when Silence or NonVerbal is acceptable for the row and the judge gave Silence or NonVerbal, it
passes only if that is the only label (silence mixed with talk is not silence). Unparsed judge
answers fail and are counted. Accuracies are percentages; the overall figure is the average of the
patterns weighted by their row counts, as in the paper's tables.

Example:
    >>> out = score_actions(["Repeat", "Answer", "Silence, PreClosing", "no idea"],
    ...                     [["Repeat", "Partial Repeat"], ["Repeat", "Partial Repeat"],
    ...                      ["PreClosing", "Silence"], ["Answer"]],
    ...                     patterns=["Repeat Request", "Repeat Request", "Sequence Closer", "Inquiry"])
    >>> out["accuracy"], out["unparsed"], out["per_pattern"]["Repeat Request"]
    (25.0, 1, 50.0)
    >>> out["top_failure_label"]["Repeat Request"]
    'Answer'
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from ..nc.judge_output import ParsedJudgement, parse_judge_output

SILENT = frozenset({"Silence", "NonVerbal"})
UNPARSED = "(unparsed)"


def row_passes(labels: Sequence[str], acceptable: Sequence[str]) -> bool:
    """The released aggregator's rule on one row's (canonical, de-duplicated) labels."""
    accepted = set(acceptable)
    if accepted & SILENT and SILENT & set(labels):
        return len(set(labels)) == 1
    return any(label in accepted for label in labels)


def score_actions(
    predictions: Sequence[str | None],
    references: Sequence[Sequence[str]],
    *,
    patterns: Sequence[str] | None = None,
    sets: Sequence[str] | None = None,
    label_sets: Sequence[Sequence[str]] | None = None,
    return_rows: bool = False,
) -> dict[str, Any]:
    """Score judge answers against each row's acceptable labels.

    Args:
        predictions: the judge's raw answer per row.
        references: the acceptable labels per row (the dataset's ``acceptable_labels``).
        patterns: the pattern per row, for ``per_pattern`` and the failure breakdown.
        sets: the set per row (basic / rag / complex_request), for ``per_set``.
        label_sets: the labels the judge was offered per row, to count out-of-set labels.
        return_rows: add per-row ``passes``, ``labels`` and ``unparsed_rows``.

    Returns:
        ``accuracy`` (0-100), ``n``, ``passed``, ``unparsed``, ``out_of_set``; with patterns:
        ``per_pattern``, ``pattern_counts``, ``failure_breakdown`` ({pattern: {label: % of failing
        rows}}) and ``top_failure_label``; with sets: ``per_set``; with both: ``per_set_pattern``.
    """
    n = _check_inputs(predictions, references, patterns=patterns, sets=sets, label_sets=label_sets)
    parsed = [
        parse_judge_output(p, None if label_sets is None else label_sets[i]) for i, p in enumerate(predictions)
    ]
    passes = [not p.unparsed and row_passes(p.labels, references[i]) for i, p in enumerate(parsed)]
    result: dict[str, Any] = {
        "accuracy": _percent(sum(passes), n),
        "n": n,
        "passed": sum(passes),
        "unparsed": sum(p.unparsed for p in parsed),
        "out_of_set": sum(bool(p.out_of_set) for p in parsed),
    }
    if patterns is not None:
        result.update(_by_pattern(passes, parsed, patterns))
        result["accuracy"] = _weighted(result["per_pattern"], result["pattern_counts"])
    if sets is not None:
        result["per_set"] = _accuracy_by(passes, sets)
        if patterns is not None:
            result["per_set_pattern"] = {
                s: _accuracy_by([passes[i] for i in rows], [patterns[i] for i in rows])
                for s, rows in _indices(sets).items()
            }
    if return_rows:
        result["passes"] = passes
        result["labels"] = [list(p.labels) for p in parsed]
        result["unparsed_rows"] = [i for i, p in enumerate(parsed) if p.unparsed]
    return result


def _check_inputs(predictions: Sequence[Any], references: Sequence[Any], **columns: Sequence[Any] | None) -> int:
    n = len(predictions)
    if len(references) != n:
        raise ValueError(f"got {n} predictions but {len(references)} references")
    for name, column in columns.items():
        if column is not None and len(column) != n:
            raise ValueError(f"got {n} predictions but {len(column)} {name}")
    for i, (prediction, reference) in enumerate(zip(predictions, references)):
        if prediction is not None and not isinstance(prediction, str):
            raise TypeError(f"row {i}: field 'predictions' must be the judge's text, got {type(prediction).__name__}")
        if isinstance(reference, str) or not all(isinstance(label, str) for label in reference):
            raise TypeError(f"row {i}: field 'references' must be a list of label strings, got {reference!r}")
        if not reference:
            raise ValueError(f"row {i}: field 'references' is empty: no label could ever pass")
    return n


def _percent(passed: int, n: int) -> float:
    return 100.0 * passed / n if n else 0.0


def _indices(keys: Sequence[str]) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = defaultdict(list)
    for i, key in enumerate(keys):
        groups[key].append(i)
    return dict(groups)


def _accuracy_by(passes: Sequence[bool], keys: Sequence[str]) -> dict[str, float]:
    return {key: _percent(sum(passes[i] for i in rows), len(rows)) for key, rows in _indices(keys).items()}


def _weighted(accuracies: dict[str, float], counts: dict[str, int]) -> float:
    total = sum(counts.values())
    return sum(accuracies[k] * counts[k] for k in accuracies) / total if total else 0.0


def _by_pattern(passes: list[bool], parsed: list[ParsedJudgement], patterns: Sequence[str]) -> dict[str, Any]:
    groups = _indices(patterns)
    breakdown: dict[str, dict[str, float]] = {}
    for pattern, rows in groups.items():
        failing = [i for i in rows if not passes[i]]
        counts: Counter[str] = Counter()
        for i in failing:
            counts.update(parsed[i].labels or (UNPARSED,))
        breakdown[pattern] = {label: _percent(c, len(failing)) for label, c in counts.most_common()}
    return {
        "per_pattern": _accuracy_by(passes, patterns),
        "pattern_counts": {p: len(rows) for p, rows in groups.items()},
        "failure_breakdown": breakdown,
        "top_failure_label": {p: next(iter(b), None) for p, b in breakdown.items()},
    }
