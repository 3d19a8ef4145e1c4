"""Agreement between two raters (two judges, or a judge and people) on the same NC-Bench rows.

Cohen's kappa and percent agreement at two levels, each with a seeded percentile bootstrap 95%
interval over rows:
- label level: each rater's *first* label per row (``label_mode="first"``, a single category, as kappa
  needs), or the whole label *set* (``label_mode="set"``: two rows agree when the sets are equal);
  an unparsed answer is its own category;
- pass/fail level: whether each rater's labels pass the row (the NC-Bench rule).

Example (the two-rater yes/no table used to teach kappa: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no):
    >>> a = ["yes"] * 25 + ["no"] * 25
    >>> b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    >>> round(cohen_kappa(a, b), 6)
    0.4
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from ..counts import MAX_RESAMPLES, check_count, check_seed
from ..errors import DataFormatError
from ..jsonfiles import read_jsonl
from .judge_output import UNPARSED_LABEL

LabelMode = Literal["first", "set"]


@dataclass(frozen=True)
class Interval:
    value: float
    low: float
    high: float


@dataclass(frozen=True)
class AgreementResult:
    n: int
    label_mode: str
    label_kappa: Interval
    label_agreement: Interval  # percent
    pass_kappa: Interval | None
    pass_agreement: Interval | None  # percent
    n_bootstrap: int
    seed: int

    def to_dict(self) -> dict[str, Any]:
        """Plain values; undefined statistics (NaN) become None, so the dict is valid JSON."""
        return _nan_to_none(asdict(self))

    def lines(self) -> list[str]:
        out = [f"rows: {self.n}   bootstrap: {self.n_bootstrap} resamples, seed {self.seed}, 95% intervals"]
        rows = [(f"labels ({self.label_mode} label)", self.label_kappa, self.label_agreement)]
        if self.pass_kappa is not None and self.pass_agreement is not None:
            rows.append(("pass/fail", self.pass_kappa, self.pass_agreement))
        for name, kappa, agree in rows:
            out.append(
                f"{name:<20} kappa {kappa.value:.3f} [{kappa.low:.3f}, {kappa.high:.3f}]   "
                f"agreement {agree.value:.1f}% [{agree.low:.1f}, {agree.high:.1f}]"
            )
        return out


def _nan_to_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _nan_to_none(v) for k, v in value.items()}
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's kappa of two raters' categories; NaN when chance agreement is 1 (one shared category)."""
    codes_a, codes_b, k = _encode(a, b)
    return _kappa_counts(_confusion(codes_a, codes_b, k))


def agreement(
    labels_a: Sequence[Sequence[str]],
    labels_b: Sequence[Sequence[str]],
    passes_a: Sequence[bool] | None = None,
    passes_b: Sequence[bool] | None = None,
    *,
    label_mode: LabelMode = "first",
    n_bootstrap: int = 1000,
    seed: int = 0,
) -> AgreementResult:
    """Kappa and percent agreement with bootstrap intervals, at label and (given passes) pass/fail level."""
    if len(labels_a) != len(labels_b):
        raise ValueError(f"rater A has {len(labels_a)} rows, rater B {len(labels_b)}")
    if label_mode not in ("first", "set"):
        raise ValueError(f"label_mode must be 'first' or 'set', got {label_mode!r}")
    n_bootstrap, seed = check_count("n_bootstrap", n_bootstrap, most=MAX_RESAMPLES), check_seed("seed", seed)
    if not labels_a:
        raise ValueError("no rows to compare: agreement over zero rows is undefined")
    if (passes_a is None) != (passes_b is None):
        raise ValueError("give both raters' passes or neither")
    for rater, passes in (("A", passes_a), ("B", passes_b)):
        if passes is None:
            continue
        if len(passes) != len(labels_a):
            raise ValueError(f"rater {rater} has {len(passes)} passes for {len(labels_a)} rows")
        for i, value in enumerate(passes):
            if not isinstance(value, bool):
                raise TypeError(f"row {i}: rater {rater}'s pass must be True or False, got {value!r}")
    import numpy as np

    rng = np.random.default_rng(seed)
    n = len(labels_a)
    samples = rng.integers(0, n, size=(n_bootstrap, n)) if n else np.zeros((0, 0), dtype=int)
    cat_a = [_category(x, label_mode) for x in labels_a]
    cat_b = [_category(x, label_mode) for x in labels_b]
    label_kappa, label_agree = _with_intervals(cat_a, cat_b, samples)
    pass_kappa = pass_agree = None
    if passes_a is not None and passes_b is not None:
        pass_kappa, pass_agree = _with_intervals(list(passes_a), list(passes_b), samples)
    return AgreementResult(n, label_mode, label_kappa, label_agree, pass_kappa, pass_agree, n_bootstrap, seed)


def _category(labels: Sequence[str], mode: str) -> Hashable:
    if not labels:
        return UNPARSED_LABEL
    return labels[0] if mode == "first" else frozenset(labels)


def _encode(a: Sequence[Hashable], b: Sequence[Hashable]) -> tuple[Any, Any, int]:
    import numpy as np

    if len(a) != len(b):
        raise ValueError(f"rater A has {len(a)} rows, rater B {len(b)}")
    index: dict[Hashable, int] = {}
    codes = [index.setdefault(x, len(index)) for x in [*a, *b]]
    return np.array(codes[: len(a)], dtype=int), np.array(codes[len(a) :], dtype=int), max(len(index), 1)


def _confusion(codes_a: Any, codes_b: Any, k: int) -> Any:
    import numpy as np

    return np.bincount(codes_a * k + codes_b, minlength=k * k).reshape(k, k)


def _kappa_counts(table: Any) -> float:
    total = table.sum()
    if total == 0:
        return math.nan
    observed = table.trace() / total
    chance = float((table.sum(axis=1) * table.sum(axis=0)).sum()) / total**2
    return math.nan if chance == 1.0 else float((observed - chance) / (1.0 - chance))


def _with_intervals(a: Sequence[Hashable], b: Sequence[Hashable], samples: Any) -> tuple[Interval, Interval]:
    import numpy as np

    codes_a, codes_b, k = _encode(a, b)
    kappa = _kappa_counts(_confusion(codes_a, codes_b, k))
    agree = 100.0 * float(np.mean(codes_a == codes_b)) if len(codes_a) else math.nan
    boot_kappa = np.array([_kappa_counts(_confusion(codes_a[s], codes_b[s], k)) for s in samples])
    boot_agree = 100.0 * (codes_a[samples] == codes_b[samples]).mean(axis=1) if len(samples) else np.array([])
    return _interval(kappa, boot_kappa), _interval(agree, boot_agree)


def _interval(value: float, boot: Any) -> Interval:
    import numpy as np

    finite = boot[np.isfinite(boot)]
    if not len(finite):
        return Interval(value, math.nan, math.nan)
    low, high = np.percentile(finite, [2.5, 97.5])
    return Interval(value, float(low), float(high))


def read_ratings(path: str | os.PathLike[str], rules: str = "paper") -> dict[tuple[str, Any], tuple[list[str], bool | None]]:
    """Read one rater's JSON Lines: key (set, id) -> (labels, passed).

    Each line needs ``id`` (a string or an integer; and ``set``, a string, where ids repeat across sets)
    and either ``labels`` (a list of label names, canonicalised like judge output) or ``judge_output``
    (raw text, parsed here). The verdict is ``passed`` (a boolean) when given, else computed from
    ``acceptable_labels``, else from the pattern table via ``set`` and ``task``; else unknown. Every
    problem names the file, line and field; an empty file is an error.
    """
    ratings: dict[tuple[str, Any], tuple[list[str], bool | None]] = {}
    for lineno, record in read_jsonl(path):
        where = f"{os.fspath(path)} line {lineno}"
        key = (_field(record, "set", where, default=""), _field(record, "id", where))
        if key in ratings:
            raise DataFormatError(f"{where}: row {key} appears twice")
        ratings[key] = _rating(record, where, rules)
    if not ratings:
        raise DataFormatError(f"{os.fspath(path)}: no ratings (the file is empty or blank)")
    return ratings


def _field(record: dict[str, Any], name: str, where: str, default: str | None = None) -> str | int:
    """A row key part: ``set`` a string, ``id`` a string or an integer (never coerced: 1 and "1" differ)."""
    if name not in record:
        if default is None:
            raise DataFormatError(f"{where}: field {name!r} is missing")
        return default
    value = record[name]
    allowed = (str,) if name == "set" else (str, int)
    if not isinstance(value, allowed) or isinstance(value, bool):
        kinds = "a string" if name == "set" else "a string or an integer"
        raise DataFormatError(f"{where}: field {name!r} must be {kinds}, got {json.dumps(value)}")
    return value


def _rating(record: dict[str, Any], where: str, rules: str) -> tuple[list[str], bool | None]:
    from .judge_output import canonical_label, parse_judge_output
    from .patterns import pattern_table
    from .ncbench_action import judgement_passes

    if "labels" in record:
        raw = record["labels"]
        if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
            raise DataFormatError(f"{where}: field 'labels' must be a list of strings, got {raw!r}")
        labels = [canonical_label(x) for x in raw]
        if None in labels:
            raise DataFormatError(f"{where}: field 'labels' has unknown label {raw[labels.index(None)]!r}")
        parsed = parse_judge_output(", ".join(dict.fromkeys(labels)))  # type: ignore[arg-type]
    elif isinstance(record.get("judge_output"), str):
        parsed = parse_judge_output(record["judge_output"])
    else:
        raise DataFormatError(f"{where}: needs field 'labels' (a list) or 'judge_output' (text)")
    passed = record.get("passed")
    if passed is not None and not isinstance(passed, bool):
        raise DataFormatError(f"{where}: field 'passed' must be true or false, got {passed!r}")
    if passed is None and "acceptable_labels" in record:
        acceptable = record["acceptable_labels"]
        if not isinstance(acceptable, list) or not all(isinstance(x, str) for x in acceptable):
            raise DataFormatError(f"{where}: field 'acceptable_labels' must be a list of strings, got {acceptable!r}")
        passed = judgement_passes(parsed, acceptable)
    elif passed is None and "set" in record and "task" in record:
        try:
            acceptable = pattern_table().acceptable_labels(record["set"], record["task"], rules)  # type: ignore[arg-type]
        except KeyError as err:
            raise DataFormatError(f"{where}: field 'task': {err.args[0]}") from None
        passed = judgement_passes(parsed, acceptable)
    return list(parsed.labels), passed


def agreement_files(
    path_a: str | os.PathLike[str],
    path_b: str | os.PathLike[str],
    *,
    label_mode: LabelMode = "first",
    n_bootstrap: int = 1000,
    seed: int = 0,
    rules: str = "paper",
) -> AgreementResult:
    """:func:`agreement` on two raters' files; every row must be rated by both.

    The pass/fail level is computed when every row of both files has a verdict, skipped when none
    has; a mix is an error naming the first row without one.
    """
    a, b = read_ratings(path_a, rules), read_ratings(path_b, rules)
    files = f"A: {os.fspath(path_a)}, B: {os.fspath(path_b)}"
    if not set(a) & set(b):  # most likely ids of another kind or another numbering: show some of each
        first_a, first_b = sorted(a, key=str)[:3], sorted(b, key=str)[:3]
        raise DataFormatError(
            f"the raters have no rows in common ({files}; rows match by (set, id)): A has {first_a}, B has {first_b} (first 3 each)"
        )
    if set(a) != set(b):
        only_a, only_b = sorted(set(a) - set(b), key=str)[:5], sorted(set(b) - set(a), key=str)[:5]
        raise DataFormatError(f"the raters rated different rows ({files}): only in A {only_a}, only in B {only_b} (first 5 each)")
    keys = sorted(a, key=str)
    unknown = [(rater, k) for rater, ratings in (("A", a), ("B", b)) for k in keys if ratings[k][1] is None]
    passes_known = not unknown
    if unknown and len(unknown) < 2 * len(keys):
        rater, key = unknown[0]
        raise DataFormatError(
            f"rater {rater}, row {key}: no verdict (give 'passed', 'acceptable_labels' or 'set' + 'task' on every row)"
        )
    return agreement(
        [a[k][0] for k in keys],
        [b[k][0] for k in keys],
        [bool(a[k][1]) for k in keys] if passes_known else None,
        [bool(b[k][1]) for k in keys] if passes_known else None,
        label_mode=label_mode,
        n_bootstrap=n_bootstrap,
        seed=seed,
    )
