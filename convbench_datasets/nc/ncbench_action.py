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
  (``released_rule.py``); ``answer`` or ``Pre-Closing`` names no label.
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

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache, reduce
from operator import itemgetter, or_
from typing import Any, NamedTuple

import numpy as np

from .._version import __version__
from ..class_labels import names_or_ids
from ..errors import MetricInputError
from .judge_output import UNPARSED_LABEL, ParsedJudgement, parse_judge_output
from .judge_reading import (  # noqa: F401  (LEGACY_PARSINGS, judge_row, judgement_passes, row_passes: importable from here too)
    LEGACY_PARSINGS,
    PARSINGS,
    judge_row,
    judgement_passes,
    known_labels,
    parsing_name,
    row_passes,
)
from .patterns import pattern_table
from ..scoring.inputs import as_row_list, check_column
from .released_rule import released_passes, released_piece_list

METRIC = "ncbench_action"
ERROR_LABEL = "(error)"  # how a row without a judgement (a failed request) is named in breakdowns
_ERRORED = ParsedJudgement("", (ERROR_LABEL,))  # never acceptable, so the row fails; not unparsed


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
        patterns: the pattern per row, for ``per_pattern`` and the failure breakdown. For ``patterns``,
            ``sets`` and ``tasks`` a class id (what a ``datasets`` column of the build holds) counts as
            its name.
        sets: the set per row (basic / rag / complex_request), for ``per_set``.
        label_sets: the labels the judge was offered per row, to count out-of-set labels.
        return_rows: add per-row ``passes``, ``labels`` and ``unparsed_rows``.
        errors: per row, whether it has no judgement because a request failed for good (the runner's
            per-row errors): such a row fails, is counted in ``errors`` (not ``unparsed``) and is
            named ``(error)`` in the failure breakdown.
        tasks: the upstream task per row (27 names, e.g. ``Detail Request-All``), for ``per_task``, the
            released aggregator's own breakdown.
        parsing: ``exact`` (default: the released aggregator's reading of the raw text, case-sensitive,
            no spelling normalisation; ``released_rule.py``) or ``lenient`` (convbench's forgiving
            label matching, ``nc/judge_output.py``); see the module docstring. Recorded in ``signature``
            (``released`` and ``convbench``, the older names, are taken for ``exact`` and ``lenient``).

    Returns:
        ``accuracy`` (0-100), ``n``, ``passed``, ``unparsed``, ``unrecognised`` (answers with pieces
        that name no label), ``out_of_set``, ``signature``; with patterns: ``per_pattern``,
        ``pattern_counts``, ``failure_breakdown`` ({pattern: {label: % of failing rows}}) and
        ``top_failure_label``; with sets: ``per_set``; with both: ``per_set_pattern`` and
        ``failure_breakdown_per_set`` (the paper's tables are per set); with tasks: ``per_task``
        ({set: {task: accuracy}} when sets are given, else {task: accuracy}).

    Judges repeat themselves, so each distinct answer is read (and each distinct value checked) once;
    labels become bits of an integer and every column integer codes, so that the pass rule and the
    tables run over all rows at once with numpy: one pass over the rows, whatever their number.
    """
    # a loaded dataset's columns hold class ids (see ..class_labels): read them as the names they stand for
    table = pattern_table()
    patterns, sets, tasks = (names_or_ids(column, names) for column, names in
                             ((patterns, table.all_patterns), (sets, table.sets), (tasks, table.all_tasks)))
    columns = {"patterns": patterns, "sets": sets, "label_sets": label_sets, "tasks": tasks}
    n = _check_lengths(predictions, references, columns)
    coded = _coded_columns(predictions, references, columns)
    if errors is not None and len(errors) != n:
        raise ValueError(f"got {n} predictions but {len(errors)} errors")
    parsing = parsing_name(parsing)
    failed = np.array([bool(e) for e in errors], dtype=bool) if errors is not None else np.zeros(n, dtype=bool)
    rows = _judge_rows(coded, failed, parsing)
    passes = rows.passes
    result: dict[str, Any] = {
        "accuracy": _percent(int(passes.sum()), n),
        "n": n,
        "passed": int(passes.sum()),
        "unparsed": int(rows.unparsed.sum()),
        "unrecognised": int(rows.unrecognised.sum()),
        "out_of_set": rows.out_of_set,
        "signature": {"metric": METRIC, "convbench_version": __version__, "parsing": parsing},
    }
    if errors is not None:
        result["errors"] = int(failed.sum())
    if patterns is not None:
        by_pattern = _Groups.of(coded["patterns"])
        result.update(_by_pattern(passes, rows, by_pattern))
        result["accuracy"] = _weighted(result["per_pattern"], result["pattern_counts"])
    if sets is not None:
        result["per_set"] = _Groups.of(coded["sets"]).accuracy(passes)
        if patterns is not None:
            pairs = _Groups.pairs(coded["sets"], coded["patterns"])
            result["per_set_pattern"] = pairs.nested(pairs.accuracy(passes))
            result["failure_breakdown_per_set"] = pairs.nested(pairs.failures(passes, rows))
    if tasks is not None:
        if sets is None:
            result["per_task"] = _Groups.of(coded["tasks"]).accuracy(passes)
        else:
            pairs = _Groups.pairs(coded["sets"], coded["tasks"])
            result["per_task"] = pairs.nested(pairs.accuracy(passes))
    if return_rows:
        result["passes"] = passes.tolist()
        result["labels"] = [list(rows.labels[j]) for j in rows.judgements.tolist()]
        result["unparsed_rows"] = np.flatnonzero(rows.unparsed).tolist()
    return result


# ---- reading the columns: each row's value as an integer code, every distinct value checked once ----

def _check_lengths(predictions: Any, references: Any, columns: dict[str, Any]) -> int:
    n = check_column("predictions", predictions)
    if n == 0:
        raise ValueError("no predictions to score")
    if check_column("references", references) != n:
        raise ValueError(f"got {n} predictions but {len(references)} references")
    for name, column in columns.items():
        if column is not None and check_column(name, column) != n:
            raise ValueError(f"got {n} predictions but {len(column)} {name}")
    return n


@dataclass(frozen=True)
class _Coded:
    """A column as integer codes (``codes[row]``), numbered in the order the values first appear."""

    codes: Any  # numpy array of intp, one per row
    values: list[Any]  # the distinct values; for label columns, tuples


def _codes(values: Iterable[Hashable], n: int) -> _Coded:
    # map(dict.setdefault) numbers each row by the first row holding its value, at C speed; the first
    # rows, in order, then give the dense numbering
    first_rows: dict[Hashable, int] = {}
    firsts = np.fromiter(map(first_rows.setdefault, values, range(n)), dtype=np.intp, count=n)
    dense = np.empty(n, dtype=np.intp)
    dense[np.fromiter(first_rows.values(), dtype=np.intp, count=len(first_rows))] = np.arange(len(first_rows))
    return _Coded(dense[firsts], list(first_rows))


def _joint_codes(columns: dict[str, Any], n: int) -> dict[str, _Coded]:
    """Columns that go together (pattern, set, task) coded in one pass over their combinations."""
    combos = _codes(zip(*columns.values()), n)
    coded = {}
    for k, name in enumerate(columns):
        column = _codes((combo[k] for combo in combos.values), len(combos.values))  # first appearances stay in order
        coded[name] = _Coded(column.codes[combos.codes], column.values)
    return coded


_SEQUENCE_ROWS = (list, tuple, np.ndarray)  # rows that tuple() reads as as_row_list does (others: row by row)
_NOT_A_LIST = object()  # stands for a label row that is no list: never a label, so its check fails


def _label_keys(column: Any) -> Iterable[tuple[Any, ...]]:
    if all(issubclass(kind, _SEQUENCE_ROWS) for kind in set(map(type, column))):
        return map(tuple, column)
    return (tuple(items) if (items := as_row_list(row)) is not None else (_NOT_A_LIST,) for row in column)


def _coded_columns(predictions: Any, references: Any, columns: dict[str, Any]) -> dict[str, _Coded]:
    """Every column coded and checked, each distinct value once; on any problem the row-by-row check
    names the first bad row and field, as it always has."""
    n = len(predictions)
    grouping = {name: columns[name] for name in ("patterns", "sets", "tasks") if columns[name] is not None}
    try:
        coded = {"predictions": _codes(predictions, n), "references": _codes(_label_keys(references), n),
                 **(_joint_codes(grouping, n) if grouping else {})}
        if columns["label_sets"] is not None:
            coded["label_sets"] = _codes(_label_keys(columns["label_sets"]), n)
    except TypeError:  # an unhashable value: neither text nor a label
        coded = {}
    if not coded or not _values_fine(coded, grouping):
        _check_rows(predictions, references, **columns)
        raise MetricInputError("the inputs are not judge answers and label lists")  # not reached: the rows named it
    return coded


def _values_fine(coded: dict[str, _Coded], grouping: dict[str, Any]) -> bool:
    return (all(v is None or isinstance(v, str) for v in coded["predictions"].values)
            and all(isinstance(v, str) for name in grouping for v in coded[name].values)
            and _labels_fine(coded["references"].values, empty=False)
            and ("label_sets" not in coded or _labels_fine(coded["label_sets"].values, empty=True)))


def _labels_fine(rows: list[tuple[Any, ...]], *, empty: bool) -> bool:
    known = known_labels()
    return all((empty or row) and all(isinstance(x, str) and x in known for x in row) for row in rows)


def _check_rows(predictions: Sequence[Any], references: Sequence[Any], **columns: Sequence[Any] | None) -> None:
    """The first bad row's error, in row order (the slow path, taken only when a check failed)."""
    known = known_labels()
    for i, (prediction, reference) in enumerate(zip(predictions, references)):
        if prediction is not None and not isinstance(prediction, str):
            raise MetricInputError(f"row {i}: field 'predictions' must be the judge's text, "
                                   f"got {type(prediction).__name__}")
        if not _check_labels(i, "references", reference, known):
            raise MetricInputError(f"row {i}: field 'references' is empty: no label could ever pass")
        for name in ("patterns", "sets", "tasks"):
            column = columns.get(name)
            if column is not None and not isinstance(column[i], str):
                raise MetricInputError(f"row {i}: field {name!r} must be a string, got {column[i]!r}")
        if columns.get("label_sets") is not None:
            _check_labels(i, "label_sets", columns["label_sets"][i], known)  # type: ignore[index]


# ---- judging: each distinct answer read once, then the rule over every row at once ----

class _Reading(NamedTuple):  # a tuple: made once per distinct answer, cheaply
    """One distinct judge answer as the pass rule and the tables need it."""

    labels: tuple[str, ...]  # in the judge's order
    unparsed: bool
    unrecognised: bool
    alone: bool  # gives Silence or NonVerbal
    only: bool  # is a single piece (the sole-label clause)
    bits: int  # its labels as bits of _label_bits()


@lru_cache(maxsize=1)
def _label_bits() -> dict[str, int]:
    """A bit for each known label: acceptable labels are known labels, so an answer's labels meet a row's
    acceptable ones exactly when their bits do."""
    return {label: 1 << i for i, label in enumerate(sorted(known_labels()))}


def _bits(labels: Iterable[str]) -> int:
    return reduce(or_, map(_label_bits().__getitem__, labels), 0)


def _reader(parsing: str) -> Callable[[str | None], _Reading]:
    """How one distinct answer is read: the released pieces (exact) or convbench's parse (lenient), with
    what the pass rule looks at. For the exact reading every piece counts in "the only piece", for the
    lenient one every label and unrecognised piece (``row_passes``)."""
    sole, is_known, bit = pattern_table().stand_alone_labels, known_labels().__contains__, _label_bits().__getitem__

    def exact(answer: str | None) -> _Reading:
        pieces = released_piece_list(answer)
        labels = tuple(filter(is_known, pieces))  # each once, so their bits add up
        named = len(pieces) - ("" in pieces)  # pieces that are not blank: those not labels are unrecognised
        return _Reading(labels, not labels, named > len(labels), not sole.isdisjoint(labels), len(pieces) == 1,
                        sum(map(bit, labels)))

    def lenient(answer: str | None) -> _Reading:
        parsed = parse_judge_output(answer)
        only = len(set(parsed.labels)) + len(set(parsed.unrecognised)) == 1
        return _Reading(parsed.labels, parsed.unparsed, bool(parsed.unrecognised), not sole.isdisjoint(parsed.labels),
                        only, _bits(parsed.labels))

    return exact if parsing == "exact" else lenient


@dataclass(frozen=True)
class _Rows:
    """Per row: pass, judgement code (``labels[code]``; errored rows share the last), the flags; the
    number of rows with labels outside their label set."""

    passes: Any
    judgements: Any
    labels: list[tuple[str, ...]]
    unparsed: Any
    unrecognised: Any
    out_of_set: int


_ERRORED_READING = _Reading(_ERRORED.labels, False, False, False, False, 0)  # never passes, not unparsed


def _judge_rows(coded: dict[str, _Coded], failed: Any, parsing: str) -> _Rows:
    answers, accepted = coded["predictions"], coded["references"]
    readings = [*map(_reader(parsing), answers.values), _ERRORED_READING]
    judgements = np.where(failed, len(readings) - 1, answers.codes)
    bits = _spread([r.bits for r in readings], judgements, _bit_type())
    sole = pattern_table().stand_alone_labels
    sole_acceptable = [not sole.isdisjoint(labels) for labels in accepted.values]
    passes = _pass_rule(alone=_spread([r.alone for r in readings], judgements),
                        sole_acceptable=_spread(sole_acceptable, accepted.codes),
                        only=_spread([r.only for r in readings], judgements),
                        hits=(bits & _label_bits_per_row(accepted)) != 0)
    out_of_set = 0
    if "label_sets" in coded:
        out_of_set = int(((bits & ~_label_bits_per_row(coded["label_sets"])) != 0).sum())
    return _Rows(passes, judgements, [r.labels for r in readings], _spread([r.unparsed for r in readings], judgements),
                 _spread([r.unrecognised for r in readings], judgements), out_of_set)


def _spread(values: list[Any], codes: Any, dtype: Any = bool) -> Any:
    """A value per distinct entry, spread to every row through the rows' codes."""
    return np.array(values, dtype=dtype)[codes]


def _bit_type() -> Any:
    return np.uint64 if len(_label_bits()) <= 64 else object  # object: Python ints, of any width


def _label_bits_per_row(column: _Coded) -> Any:
    return _spread([_bits(labels) for labels in column.values], column.codes, _bit_type())


def _pass_rule(alone: Any, sole_acceptable: Any, only: Any, hits: Any) -> Any:
    """The released pass rule (``released_passes``, ``row_passes``) over every row at once: where Silence
    or NonVerbal is acceptable and given, it must be the only piece; elsewhere any acceptable label passes."""
    return np.where(alone & sole_acceptable, only, hits)


# ---- tables: counts per group from the codes ----

@dataclass(frozen=True)
class _Groups:
    """Rows grouped by one column or a pair of columns: each row's group, the groups' names (a value,
    or an (outer, inner) pair), numbered in the order they first appear, as the tables list them."""

    codes: Any
    names: list[Any]

    @classmethod
    def of(cls, column: _Coded) -> _Groups:
        return cls(column.codes, column.values)

    @classmethod
    def pairs(cls, outer: _Coded, inner: _Coded) -> _Groups:
        keys, first, inverse = np.unique(outer.codes * len(inner.values) + inner.codes, return_index=True,
                                         return_inverse=True)
        order = np.argsort(first, kind="stable")
        rank = np.empty(len(keys), dtype=np.intp)
        rank[order] = np.arange(len(keys))
        names = [(outer.values[o], inner.values[i])
                 for o, i in (divmod(key, len(inner.values)) for key in keys[order].tolist())]
        return cls(rank[inverse.reshape(-1)], names)

    def counts(self, rows: Any = None) -> list[int]:
        codes = self.codes if rows is None else self.codes[rows]
        return np.bincount(codes, minlength=len(self.names)).tolist()

    def accuracy(self, passes: Any) -> dict[Any, float]:
        return {name: _percent(p, t) for name, p, t in zip(self.names, self.counts(passes), self.counts())}

    def failures(self, passes: Any, rows: _Rows) -> dict[Any, dict[str, float]]:
        """For each group, the percentage of its failing rows that carry each label, most common first
        (ties in the order the labels first appear among the failing rows)."""
        failing = ~passes
        judgements = rows.judgements[failing]
        n_judgements = len(rows.labels)
        keys, first, counts = np.unique(self.codes[failing] * n_judgements + judgements, return_index=True,
                                        return_counts=True)
        found: list[dict[str, int]] = [{} for _ in self.names]
        order = np.argsort(first, kind="stable")
        for key, count in zip(keys[order].tolist(), counts[order].tolist()):
            group, judgement = divmod(key, n_judgements)
            labels = found[group]
            for label in rows.labels[judgement] or (UNPARSED_LABEL,):
                labels[label] = labels.get(label, 0) + count
        return {name: {label: _percent(c, n_failing) for label, c in _most_common(labels)}
                for name, labels, n_failing in zip(self.names, found, self.counts(failing))}

    def nested(self, values: dict[tuple[Any, Any], Any]) -> dict[Any, dict[Any, Any]]:
        table: dict[Any, dict[Any, Any]] = {}
        for (outer, inner), value in values.items():
            table.setdefault(outer, {})[inner] = value
        return table


def _check_labels(i: int, field: str, labels: Any, known: frozenset[str]) -> list[str]:
    items = as_row_list(labels)  # a numpy array too: what Dataset.to_pandas() gives for a list column
    if items is None or not all(isinstance(x, str) for x in items):
        raise MetricInputError(f"row {i}: field {field!r} must be a list of label strings, got {labels!r}")
    unknown = [label for label in items if label not in known]
    if unknown:
        raise MetricInputError(f"row {i}: field {field!r} names unknown label(s) {unknown} (labels are case-sensitive)")
    return items


def _most_common(counts: dict[str, int]) -> list[tuple[str, int]]:
    return sorted(counts.items(), key=itemgetter(1), reverse=True)  # ties in first-seen order, as Counter's


def _percent(passed: int, n: int) -> float:
    return 100.0 * passed / n if n else 0.0


def _weighted(accuracies: dict[str, float], counts: dict[str, int]) -> float:
    total = sum(counts.values())
    return sum(accuracies[k] * counts[k] for k in accuracies) / total if total else 0.0


def _by_pattern(passes: Any, rows: _Rows, groups: _Groups) -> dict[str, Any]:
    breakdown = groups.failures(passes, rows)
    return {
        "per_pattern": groups.accuracy(passes),
        "pattern_counts": dict(zip(groups.names, groups.counts())),
        "failure_breakdown": breakdown,
        "top_failure_label": {p: next(iter(b), None) for p, b in breakdown.items()},
    }
