"""NC-Bench action accuracy: does a judge's label set for a model turn contain an acceptable action?

The pass rule is the released aggregator's: a row passes when any label is acceptable, except that
when Silence or NonVerbal is acceptable for the row and the judge gave Silence or NonVerbal, it passes
only if that is the only piece of the answer (silence mixed with talk is not silence; a piece that
names no label counts as talk, as it does in the released script). Unparsed judge answers fail and are
counted. Accuracies are percentages; the overall figure is the average of the patterns weighted by
their row counts, as in the paper's tables.

How the judge's text is read (``parsing``) is a choice of its own, recorded in the signature:

- ``exact`` (the default): the released aggregator's reading, which made the paper's tables: pieces
  cut at commas and new lines, stripped, compared case-sensitively with the label names
  (``scoring/released_rule.py``); ``answer`` or ``Pre-Closing`` names no label.
- ``lenient``: convbench's forgiving reading (``nc/judge_output.py``): case, spaces, hyphens, bullets,
  quotes and trailing punctuation ignored, blank pieces dropped. It passes rows the released script
  fails (``answer``) and fails rows it passes (``GratitudeReceipt, silence`` on a Sequence Abort row:
  ``silence`` is Silence to it, so the sole-label clause applies): its numbers are not the paper's.

Example:
    >>> out = score_actions(["Repeat", "Answer", "Silence, PreClosing", "no idea"],
    ...                     [["Repeat", "Partial Repeat"], ["Repeat", "Partial Repeat"],
    ...                      ["PreClosing", "Silence"], ["Answer"]],
    ...                     patterns=["Repeat Request", "Repeat Request", "Sequence Closer", "Inquiry"])
    >>> out["accuracy"], out["unparsed"], out["per_pattern"]["Repeat Request"]
    (25.0, 1, 50.0)
    >>> out["top_failure_label"]["Repeat Request"]
    'Answer'
    >>> [score_actions(["repeat"], [["Repeat"]], parsing=p)["passed"] for p in ("exact", "lenient")]
    [0, 1]
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from .._version import __version__
from ..errors import MetricInputError
from ..nc.judge_output import UNPARSED_LABEL, ParsedJudgement, parse_judge_output, vocabulary
from ..nc.patterns import pattern_table
from .inputs import as_row_list, check_column
from .released_rule import released_passes, released_piece_list

METRIC = "ncbench_action"
PARSINGS = ("exact", "lenient")  # how judge text is read; the first, the released aggregator's, is the default
# the names signatures and inspect scores of convbench before 0.x used: "released" was the exact reading,
# "convbench" the lenient one
LEGACY_PARSINGS = {"released": "exact", "convbench": "lenient"}
ERROR_LABEL = "(error)"  # how a row without a judgement (a failed request) is named in breakdowns
_ERRORED = ParsedJudgement("", (ERROR_LABEL,))  # never acceptable, so the row fails; not unparsed


def row_passes(labels: Sequence[str], acceptable: Sequence[str], unrecognised: Sequence[str] = ()) -> bool:
    """The released aggregator's rule on one row's canonical labels (and the pieces that named none)."""
    accepted = set(acceptable)
    alone = pattern_table().stand_alone_labels
    if accepted & alone and alone & set(labels):
        return len(set(labels)) + len(set(unrecognised)) == 1
    return any(label in accepted for label in labels)


def judgement_passes(parsed: ParsedJudgement, acceptable: Sequence[str]) -> bool:
    """Whether a parsed judge answer passes a row; unparsed answers fail."""
    return not parsed.unparsed and row_passes(parsed.labels, acceptable, parsed.unrecognised)


def _released_reading(prediction: str | None, label_set: Sequence[str] | None = None) -> ParsedJudgement:
    """The released aggregator's pieces as a judgement, for counts, agreement and the failure breakdown:
    pieces that are exactly a label name, in the judge's order, are its labels; other non-empty pieces
    (prose, misspellings) are unrecognised, so an answer naming no label exactly counts as unparsed.
    Labels outside ``label_set`` (the row's) are flagged, as the lenient reading flags them."""
    pieces = [piece for piece in released_piece_list(prediction) if piece]
    known = known_labels()
    labels = tuple(p for p in pieces if p in known)
    out_of_set = () if label_set is None else tuple(label for label in labels if label not in set(label_set))
    return ParsedJudgement(prediction or "", labels, out_of_set, unrecognised=tuple(p for p in pieces if p not in known))


def parsing_name(parsing: str) -> str:
    """``parsing`` as one of :data:`PARSINGS` (the older names ``released`` and ``convbench`` mapped); else ValueError."""
    name = LEGACY_PARSINGS.get(parsing, parsing)
    if name not in PARSINGS:
        raise ValueError(f"parsing must be one of {', '.join(PARSINGS)}, got {parsing!r}")
    return name


def judge_row(prediction: str | None, acceptable: Sequence[str], label_set: Sequence[str] | None = None,
              parsing: str = PARSINGS[0]) -> tuple[ParsedJudgement, bool]:
    """One judge answer read as ``parsing`` says, and whether it passes a row with these acceptable labels."""
    if parsing_name(parsing) == "exact":
        return _released_reading(prediction, label_set), released_passes(prediction, acceptable)
    parsed = parse_judge_output(prediction, label_set)
    return parsed, judgement_passes(parsed, acceptable)


def known_labels() -> frozenset[str]:
    """Every label a reference may name: the vocabulary plus published spellings of acceptable sets."""
    published = {label for labels in pattern_table().acceptable.values() for label in labels}
    return frozenset(vocabulary().values()) | published


def score_actions(
    predictions: Sequence[str | None],
    references: Sequence[Sequence[str]],
    *,
    patterns: Sequence[str] | None = None,
    sets: Sequence[str] | None = None,
    label_sets: Sequence[Sequence[str]] | None = None,
    return_rows: bool = False,
    errors: Sequence[bool] | None = None,
    tasks: Sequence[str] | None = None,
    parsing: str = PARSINGS[0],
) -> dict[str, Any]:
    """Score judge answers against each row's acceptable labels.

    Args:
        predictions: the judge's raw answer per row (None: no answer, which fails and counts as unparsed).
        references: the acceptable labels per row (the dataset's ``acceptable_labels``).
        patterns: the pattern per row, for ``per_pattern`` and the failure breakdown.
        sets: the set per row (basic / rag / complex_request), for ``per_set``.
        label_sets: the labels the judge was offered per row, to count out-of-set labels.
        return_rows: add per-row ``passes``, ``labels`` and ``unparsed_rows``.
        errors: per row, whether it has no judgement because a request failed for good (the runner's
            per-row errors): such a row fails, is counted in ``errors`` (not ``unparsed``) and is
            named ``(error)`` in the failure breakdown.
        tasks: the upstream task per row (27 names, e.g. ``Detail Request-All``), for ``per_task``, the
            released aggregator's own breakdown.
        parsing: ``exact`` (default: the released aggregator's reading of the raw text, case-sensitive,
            no spelling normalisation; ``scoring/released_rule.py``) or ``lenient`` (convbench's forgiving
            label matching, ``nc/judge_output.py``); see the module docstring. Recorded in ``signature``
            (``released`` and ``convbench``, the older names, are taken for ``exact`` and ``lenient``).

    Returns:
        ``accuracy`` (0-100), ``n``, ``passed``, ``unparsed``, ``unrecognised`` (answers with pieces
        that name no label), ``out_of_set``, ``signature``; with patterns: ``per_pattern``,
        ``pattern_counts``, ``failure_breakdown`` ({pattern: {label: % of failing rows}}) and
        ``top_failure_label``; with sets: ``per_set``; with both: ``per_set_pattern`` and
        ``failure_breakdown_per_set`` (the paper's tables are per set); with tasks: ``per_task``
        ({set: {task: accuracy}} when sets are given, else {task: accuracy}).
    """
    n = _check_inputs(predictions, references, patterns=patterns, sets=sets, label_sets=label_sets, tasks=tasks)
    references = [list(r) for r in references]  # numpy arrays (Dataset.to_pandas()) as lists
    if label_sets is not None:
        label_sets = [list(s) for s in label_sets]
    if errors is not None and len(errors) != n:
        raise ValueError(f"got {n} predictions but {len(errors)} errors")
    parsing = parsing_name(parsing)
    failed = [bool(e) for e in errors] if errors is not None else [False] * n
    judged = [
        (_ERRORED, False) if failed[i] else judge_row(p, references[i], None if label_sets is None else label_sets[i], parsing)
        for i, p in enumerate(predictions)
    ]
    parsed = [p for p, _ in judged]
    passes = [passed for _, passed in judged]
    result: dict[str, Any] = {
        "accuracy": _percent(sum(passes), n),
        "n": n,
        "passed": sum(passes),
        "unparsed": sum(p.unparsed for p in parsed),
        "unrecognised": sum(bool(p.unrecognised) for p in parsed),
        "out_of_set": sum(bool(p.out_of_set) for p in parsed),
        "signature": {"metric": METRIC, "convbench_version": __version__, "parsing": parsing},
    }
    if errors is not None:
        result["errors"] = sum(failed)
    if patterns is not None:
        result.update(_by_pattern(passes, parsed, patterns))
        result["accuracy"] = _weighted(result["per_pattern"], result["pattern_counts"])
    if sets is not None:
        result["per_set"] = _accuracy_by(passes, sets)
        if patterns is not None:
            groups = _indices(sets).items()
            result["per_set_pattern"] = {
                s: _accuracy_by([passes[i] for i in rows], [patterns[i] for i in rows]) for s, rows in groups
            }
            result["failure_breakdown_per_set"] = {
                s: _failures([passes[i] for i in rows], [parsed[i] for i in rows], [patterns[i] for i in rows])
                for s, rows in groups
            }
    if tasks is not None:
        result["per_task"] = _accuracy_by(passes, tasks) if sets is None else {
            s: _accuracy_by([passes[i] for i in rows], [tasks[i] for i in rows]) for s, rows in _indices(sets).items()
        }
    if return_rows:
        result["passes"] = passes
        result["labels"] = [list(p.labels) for p in parsed]
        result["unparsed_rows"] = [i for i, p in enumerate(parsed) if p.unparsed]
    return result


def _check_inputs(predictions: Sequence[Any], references: Sequence[Any], **columns: Sequence[Any] | None) -> int:
    n = check_column("predictions", predictions)
    if n == 0:
        raise ValueError("no predictions to score")
    if check_column("references", references) != n:
        raise ValueError(f"got {n} predictions but {len(references)} references")
    for name, column in columns.items():
        if column is not None and check_column(name, column) != n:
            raise ValueError(f"got {n} predictions but {len(column)} {name}")
    known = known_labels()
    for i, (prediction, reference) in enumerate(zip(predictions, references)):
        if prediction is not None and not isinstance(prediction, str):
            raise MetricInputError(f"row {i}: field 'predictions' must be the judge's text, got {type(prediction).__name__}")
        if not _check_labels(i, "references", reference, known):
            raise MetricInputError(f"row {i}: field 'references' is empty: no label could ever pass")
        for name in ("patterns", "sets", "tasks"):
            column = columns.get(name)
            if column is not None and not isinstance(column[i], str):
                raise MetricInputError(f"row {i}: field {name!r} must be a string, got {column[i]!r}")
        if columns.get("label_sets") is not None:
            _check_labels(i, "label_sets", columns["label_sets"][i], known)  # type: ignore[index]
    return n


def _check_labels(i: int, field: str, labels: Any, known: frozenset[str]) -> list[str]:
    items = as_row_list(labels)  # a numpy array too: what Dataset.to_pandas() gives for a list column
    if items is None or not all(isinstance(x, str) for x in items):
        raise MetricInputError(f"row {i}: field {field!r} must be a list of label strings, got {labels!r}")
    unknown = [label for label in items if label not in known]
    if unknown:
        raise MetricInputError(f"row {i}: field {field!r} names unknown label(s) {unknown} (labels are case-sensitive)")
    return items


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


def _failures(passes: Sequence[bool], parsed: Sequence[ParsedJudgement], patterns: Sequence[str]) -> dict[str, dict[str, float]]:
    """For each pattern, the percentage of its failing rows that carry each label."""
    breakdown: dict[str, dict[str, float]] = {}
    for pattern, rows in _indices(patterns).items():
        failing = [i for i in rows if not passes[i]]
        counts: Counter[str] = Counter()
        for i in failing:
            counts.update(parsed[i].labels or (UNPARSED_LABEL,))
        breakdown[pattern] = {label: _percent(c, len(failing)) for label, c in counts.most_common()}
    return breakdown


def _by_pattern(passes: list[bool], parsed: list[ParsedJudgement], patterns: Sequence[str]) -> dict[str, Any]:
    groups = _indices(patterns)
    breakdown = _failures(passes, parsed, patterns)
    return {
        "per_pattern": _accuracy_by(passes, patterns),
        "pattern_counts": {p: len(rows) for p, rows in groups.items()},
        "failure_breakdown": breakdown,
        "top_failure_label": {p: next(iter(b), None) for p, b in breakdown.items()},
    }
