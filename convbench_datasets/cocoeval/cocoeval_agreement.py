"""Judge-human agreement for CoCoEval: does the judge rank continuations the way people do?

Several annotators rate the same continuations (an instance's human or simulated 30 turns): the 1-10
consistency and collaborativeness scores and, per behaviour type, how many turns show it. The judge's
values for the same continuations come from a ``convbench run cocoeval`` folder. For each measure
(each score; each type's count, each group's and all types' total count per continuation), with k
annotators and the mean of the others ``M_-a`` for annotator ``a``:

- ``humans``: the inter-human agreement, mean over a of Spearman(annotator a, M_-a) (leave-one-out;
  the statistic :func:`~convbench_datasets.cocoeval.behavior_frequency.rater_agreement` reports);
- ``judge``: mean over a of Spearman(judge, M_-a): the judge takes each annotator's place in turn and
  is compared with exactly the reference that annotator was, so the two numbers are like for like;
- ``judge_vs_mean``: Spearman(judge, mean of all annotators), for reference (its reference is less
  noisy, so it usually reads higher than ``judge``);
- ``difference``: judge - humans. A correlation that is undefined (a constant side) is left out of its
  mean; a measure with none defined is ``None``.

Intervals are percentile-bootstrap 95% over the rated continuations, as the paper's "bootstrap over
conversations" (its appendix B.1: each rated continuation is one of its conversations);
``bootstrap_unit="source_conversation"`` resamples instead the continuations of one source meeting or
debate together (they share context). One-sided bootstrap p-values: ``p_values["humans"]`` and
``p_values["judge"]``, the share of resamples whose agreement is at most 0 (H1: positive agreement);
``p_values["difference"]``, the share whose difference is at most 0 (H1: the judge agrees with the
annotators more than a held-out annotator does; a value near 1 says it agrees less).

Example (3 annotators, 4 continuations; hand-checked in tests/cocoeval/test_cocoeval_agreement.py):
    >>> out = judge_agreement([[1, 2, 3, 4], [1, 3, 2, 4], [2, 1, 3, 4]], [1, 2, 3, 4], n_bootstrap=0)
    >>> round(out["humans"], 4), round(out["judge"], 4), out["judge_vs_mean"]
    (0.755, 0.9658, 1.0)
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..counts import MAX_RESAMPLES, check_count, check_seed
from ..errors import ConvbenchError, DataFormatError

CONTINUATIONS = {"human": "human", "simulated": "model"}  # the ratings file's word -> the records' field prefix
# what the bootstrap resamples: each rated continuation (the paper's), or a source conversation's together
BOOTSTRAP_UNITS = ("continuation", "source_conversation")
SCORE_RANGE = (1, 10)


def _ci(samples: Any) -> list[float | None]:
    from .behavior_frequency import _ci as percentile_interval  # one interval rule for every CoCoEval number

    return percentile_interval(samples)


def _number(value: Any) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def judge_agreement(humans: Sequence[Sequence[float]], judge: Sequence[float], *, groups: Sequence[str] | None = None,
                    n_bootstrap: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Leave-one-out agreement of the annotators with each other and of the judge with them (module doc).

    Args:
        humans: annotators x continuations.
        judge: the judge's value per continuation.
        groups: each continuation's source conversation: the bootstrap resamples them (default: continuations).
        n_bootstrap, seed: the percentile bootstrap (0: no intervals, no p-values).
    """
    import numpy as np

    matrix = np.asarray(humans, dtype=float)
    if matrix.ndim != 2 or matrix.shape[0] < 2 or matrix.shape[1] < 3:
        raise ValueError("judge_agreement needs an annotators x continuations matrix with at least 2 annotators "
                         "and 3 continuations")
    if len(judge) != matrix.shape[1]:
        raise ValueError(f"got {len(judge)} judge values for {matrix.shape[1]} continuations")
    return _agreements(matrix[None], np.asarray(judge, dtype=float)[None], groups, n_bootstrap, seed)[0]


def _statistics(humans: Any, judge: Any) -> tuple[Any, Any, Any, Any]:
    """Per measure: (per-annotator human LOO, per-annotator judge LOO, humans, judge) for (M, k, n), (M, n)."""
    from ..scoring.rank_correlation import loo_spearman_both, mean_finite

    human_each, judge_each = loo_spearman_both(humans, judge)
    return human_each, judge_each, mean_finite(human_each), mean_finite(judge_each)


def _agreements(humans: Any, judge: Any, groups: Sequence[str] | None, n_bootstrap: int, seed: int) -> list[dict[str, Any]]:
    """:func:`judge_agreement` for M measures at once: humans (M, k, n), judge (M, n)."""
    import numpy as np

    from ..scoring.rank_correlation import spearman_rows

    n_bootstrap, seed = check_count("n_bootstrap", n_bootstrap, most=MAX_RESAMPLES), check_seed("seed", seed)
    n = humans.shape[-1]
    if groups is not None and len(groups) != n:
        raise ValueError(f"got {len(groups)} groups for {n} continuations")
    human_each, judge_each, human, judged = _statistics(humans, judge)
    versus_mean = spearman_rows(judge, humans.mean(axis=1))
    members: dict[str, list[int]] = {}
    for i, group in enumerate(groups if groups is not None else range(n)):
        members.setdefault(str(group), []).append(i)
    clusters = list(members.values())
    choices = np.random.default_rng(seed).integers(0, len(clusters), size=(n_bootstrap, len(clusters)))
    boot = _bootstrap(humans, judge, clusters, choices)  # (resample, humans|judge, measure)
    difference = boot[:, 1] - boot[:, 0]
    results = []
    for m in range(humans.shape[0]):
        samples = {"humans": boot[:, 0, m], "judge": boot[:, 1, m], "difference": difference[:, m]}
        p_values = {}
        for name, values in samples.items():
            finite = values[np.isfinite(values)]
            p_values[name] = float((finite <= 0).mean()) if len(finite) else None
        results.append({
            "humans": _number(human[m]), "judge": _number(judged[m]), "judge_vs_mean": _number(versus_mean[m]),
            "difference": _number(judged[m] - human[m]),
            "humans_per_annotator": [_number(v) for v in human_each[m]],
            "judge_per_annotator": [_number(v) for v in judge_each[m]],
            "intervals": {name: _ci(values) for name, values in samples.items()},
            "p_values": p_values,
            "undefined_resamples": {name: int((~np.isfinite(values)).sum()) for name, values in samples.items()},
            "continuations": int(n), "annotators": int(humans.shape[1]), "conversations": len(clusters),
        })
    return results


def _bootstrap(humans: Any, judge: Any, clusters: list[list[int]], choices: Any) -> Any:
    """Agreement of humans and judge per resample of clusters: (resamples, 2, measures). Clusters differ
    in size, so each resample has its own length: one at a time, vectorised over measures."""
    import numpy as np

    boot = np.full((len(choices), 2, humans.shape[0]), np.nan)
    for b, chosen in enumerate(choices):
        rows = [i for c in chosen for i in clusters[c]]
        _, _, boot[b, 0], boot[b, 1] = _statistics(humans[:, :, rows], judge[:, rows])
    return boot


@dataclass(frozen=True)
class HumanRating:
    """One line of a human ratings file: an annotator's scores and per-type counts for one continuation."""

    instance: str
    continuation: str  # "human" or "simulated"
    annotator: str
    scores: dict[str, int]
    counts: dict[str, int]
    line: int


def read_human_ratings(path: str | os.PathLike[str], behaviours: Sequence[str], scales: Sequence[str],
                       max_count: int) -> list[HumanRating]:
    """Read a human ratings file (JSON Lines; the format is in the CoCoEvalBench card).

    Each line: ``id`` (the instance), ``continuation`` (``human`` or ``simulated``), ``annotator``, each
    of ``scales`` (integers 1-10) and ``counts`` (behaviour type -> turns showing it, 0..``max_count``;
    a type left out counts 0). Other fields are ignored. Every problem names the file, line and field.
    """
    from ..jsonfiles import read_jsonl

    ratings: list[HumanRating] = []
    seen: dict[tuple[str, str, str], int] = {}
    for lineno, record in read_jsonl(path):
        where = f"{os.fspath(path)} line {lineno}"
        texts = {}
        for name in ("id", "continuation", "annotator"):
            value = record.get(name)
            if not isinstance(value, str) or not value.strip():
                raise DataFormatError(f"{where}: field {name!r} must be a non-empty string, got {value!r}")
            texts[name] = value
        if texts["continuation"] not in CONTINUATIONS:
            raise DataFormatError(f"{where}: field 'continuation' must be one of {sorted(CONTINUATIONS)}, "
                                  f"got {texts['continuation']!r}")
        key = (texts["id"], texts["continuation"], texts["annotator"])
        if key in seen:
            raise DataFormatError(f"{where}: annotator {key[2]!r} rated the {key[1]} continuation of {key[0]!r} "
                                  f"already on line {seen[key]}")
        seen[key] = lineno
        scores = {scale: _integer(record.get(scale), scale, SCORE_RANGE, where) for scale in scales}
        counts = record.get("counts")
        if not isinstance(counts, dict):
            raise DataFormatError(f"{where}: field 'counts' must be an object (behaviour type -> number of turns), "
                                  f"got {counts!r}")
        unknown = sorted(set(counts) - set(behaviours))
        if unknown:
            raise DataFormatError(f"{where}: field 'counts' names unknown behaviour type(s) {unknown}; known: "
                                  f"{list(behaviours)}")
        found = {name: _integer(counts.get(name, 0), f"counts.{name}", (0, max_count), where) for name in behaviours}
        ratings.append(HumanRating(key[0], key[1], key[2], scores, found, lineno))
    if not ratings:
        raise DataFormatError(f"{os.fspath(path)}: no ratings (the file is empty or blank)")
    return ratings


def _integer(value: Any, name: str, bounds: tuple[int, int], where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not bounds[0] <= value <= bounds[1]:
        raise DataFormatError(f"{where}: field {name!r} must be an integer from {bounds[0]} to {bounds[1]}, "
                              f"got {value!r}")
    return value


@dataclass
class CocoevalAgreement:
    """Judge-human agreement per measure, and the rated continuations left out (with why)."""

    measures: dict[str, dict[str, Any]]
    annotators: list[str]
    continuations: int
    excluded: list[dict[str, str]] = field(default_factory=list)
    n_bootstrap: int = 1000
    seed: int = 0
    signature: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"measures": self.measures, "annotators": self.annotators, "continuations": self.continuations,
                "excluded": self.excluded, "n_bootstrap": self.n_bootstrap, "seed": self.seed,
                "signature": self.signature}

    def lines(self) -> list[str]:
        first = next(iter(self.measures.values()))
        unit = "source conversations" if self.signature.get("bootstrap_unit") == "source_conversation" else "continuations"
        out = [f"cocoeval judge-human agreement: {self.continuations} continuations, {len(self.annotators)} annotators "
               f"({', '.join(self.annotators)}); leave-one-out Spearman; bootstrap {self.n_bootstrap} resamples of "
               f"{unit} ({first['conversations']}), seed {self.seed}, 95% intervals"]
        if self.excluded:
            reasons = Counter(e["reason"] for e in self.excluded)
            out.append(f"excluded {len(self.excluded)} rated continuation(s) without a usable judge value: "
                       + "; ".join(f"{reason}: {count}" for reason, count in reasons.items()))
        out.append(f"{'measure':<28} {'humans':>22} {'judge':>22} {'judge-humans':>24} {'p(judge>humans)':>16}"
                   f" {'judge vs mean':>14}")
        for name, m in self.measures.items():
            out.append(f"{name:<28} {_with_interval(m['humans'], m['intervals']['humans']):>22} "
                       f"{_with_interval(m['judge'], m['intervals']['judge']):>22} "
                       f"{_with_interval(m['difference'], m['intervals']['difference'], '+.3f'):>24} "
                       f"{_plain(m['p_values']['difference']):>16} {_plain(m['judge_vs_mean']):>14}")
        return out


def _plain(value: float | None, form: str = ".3f") -> str:
    return "n/a" if value is None else format(value, form)


def _with_interval(value: float | None, interval: Sequence[float | None], form: str = ".3f") -> str:
    if value is None:
        return "n/a"
    if interval[0] is None or interval[1] is None:
        return format(value, form)
    return f"{format(value, form)} [{format(interval[0], form)}, {format(interval[1], form)}]"


def measure_names(groups: Mapping[str, str], scales: Sequence[str]) -> list[str]:
    """The measures, in report order: the scores, all types' total, each group's total, each type.
    ``groups``: behaviour type -> its group, in the taxonomy's order."""
    return [*scales, "all behaviours", *(f"{g} behaviours" for g in dict.fromkeys(groups.values())), *groups]


def _values(scores: Mapping[str, int], counts: Mapping[str, int], groups: Mapping[str, str],
            scales: Sequence[str]) -> list[float]:
    """One continuation's value per measure (the order of :func:`measure_names`)."""
    totals = [sum(counts[name] for name, g in groups.items() if g == group) for group in dict.fromkeys(groups.values())]
    return [*(scores[s] for s in scales), sum(counts.values()), *totals, *(counts[name] for name in groups)]


def cocoeval_agreement(humans_path: str | os.PathLike[str], run: str | os.PathLike[str], *,
                       taxonomy: str | os.PathLike[str] | None = None, n_bootstrap: int = 1000,
                       seed: int = 0, bootstrap_unit: str = "continuation") -> CocoevalAgreement:
    """Agreement of a run's judge with the human ratings in ``humans_path`` (``convbench agreement cocoeval``).

    ``bootstrap_unit``: ``continuation`` (the paper's) or ``source_conversation`` (module doc).

    Every annotator must rate every continuation the file names; every instance must be in the run.
    A rated continuation the judge has no usable value for (an error, an unusable answer, a simulation
    that did not finish) is left out of every measure and listed in ``excluded``.
    """
    import numpy as np

    from .instances import WINDOW
    from .simulation import scales

    if bootstrap_unit not in BOOTSTRAP_UNITS:
        raise ConvbenchError(f"bootstrap unit must be one of {BOOTSTRAP_UNITS}, got {bootstrap_unit!r}")
    folder, by_id, signature = _cocoeval_run(run)
    groups = _taxonomy_groups(signature, folder, taxonomy)
    scale_names = scales()
    ratings = read_human_ratings(humans_path, list(groups), scale_names, WINDOW)
    annotators, table = _complete_table(ratings, by_id, humans_path, folder)
    kept, excluded, judge_rows = [], [], []
    for instance, continuation in sorted({(i, c) for i, c, _ in table}):
        values = _judge_values(by_id[instance], CONTINUATIONS[continuation], groups, scale_names)
        if isinstance(values, str):
            excluded.append({"id": instance, "continuation": continuation, "reason": values})
            continue
        kept.append((instance, continuation))
        judge_rows.append(values)
    if len(kept) < 3:
        raise ConvbenchError(f"only {len(kept)} rated continuation(s) have a usable judge value in {folder} "
                             f"({len(excluded)} left out); agreement needs at least 3")
    humans = np.array([[_values(table[(i, c, a)].scores, table[(i, c, a)].counts, groups, scale_names) for i, c in kept]
                       for a in annotators], dtype=float)  # (annotators, continuations, measures)
    conversations = ([str(by_id[i].get("conversation_id", i)) for i, _ in kept]
                     if bootstrap_unit == "source_conversation" else None)
    found = _agreements(np.transpose(humans, (2, 0, 1)), np.array(judge_rows, dtype=float).T, conversations,
                        n_bootstrap, seed)
    measures = {}
    for name, result in zip(measure_names(groups, scale_names), found):
        result["humans_per_annotator"] = dict(zip(annotators, result["humans_per_annotator"]))
        result["judge_per_annotator"] = dict(zip(annotators, result["judge_per_annotator"]))
        measures[name] = result
    return CocoevalAgreement(measures, annotators, len(kept), excluded, n_bootstrap, seed,
                             {"run": str(folder), "judge": signature.get("judge"), "model": signature.get("model"),
                              "humans": os.fspath(humans_path), "taxonomy_groups": groups, "scales": list(scale_names),
                              "statistic": "leave-one-out Spearman; percentile bootstrap over "
                                           + ("continuations" if conversations is None else "source conversations"),
                              "bootstrap_unit": bootstrap_unit})


def _cocoeval_run(run: str | os.PathLike[str]) -> tuple[Any, dict[str, dict[str, Any]], dict[str, Any]]:
    """(folder, record by instance id, signature) of a complete CoCoEval run folder."""
    from ..engine.run_folder import check_complete, read_folder

    folder, records, results = read_folder(run)
    check_complete(records, results, folder)
    signature = results.get("signature") or {}
    if signature.get("benchmark") != "cocoeval":
        raise ConvbenchError(f"{folder} is not a CoCoEval run (its signature says benchmark "
                             f"{signature.get('benchmark')!r})")
    return folder, {r["id"]: r for r in records}, signature


def _complete_table(ratings: list[HumanRating], by_id: Mapping[str, Any], path: str | os.PathLike[str],
                    folder: Any) -> tuple[list[str], dict[tuple[str, str, str], HumanRating]]:
    """(annotators, (instance, continuation, annotator) -> rating), checked: every instance in the run,
    every annotator rating every continuation."""
    for rating in ratings:
        if rating.instance not in by_id:
            raise DataFormatError(f"{os.fspath(path)} line {rating.line}: instance {rating.instance!r} is not "
                                  f"in the run {folder}")
    annotators = sorted({r.annotator for r in ratings})
    if len(annotators) < 2:
        raise DataFormatError(f"{os.fspath(path)}: leave-one-out agreement needs at least 2 annotators, "
                              f"got {annotators}")
    table = {(r.instance, r.continuation, r.annotator): r for r in ratings}
    items = sorted({(r.instance, r.continuation) for r in ratings})
    missing = [(i, c, a) for i, c in items for a in annotators if (i, c, a) not in table]
    if missing:
        shown = "; ".join(f"{a} did not rate the {c} continuation of {i}" for i, c, a in missing[:3])
        raise DataFormatError(f"{os.fspath(path)}: every annotator must rate every continuation: {shown}"
                              + (f" (and {len(missing) - 3} more)" if len(missing) > 3 else ""))
    return annotators, table


def _judge_values(record: Mapping[str, Any], prefix: str, groups: Mapping[str, str],
                  scale_names: Sequence[str]) -> list[float] | str:
    """The judge's value per measure for one continuation of ``record``, or why it has none."""
    from .simulation import occurrences

    overall, found = record.get(f"{prefix}_overall"), record.get(f"{prefix}_behaviours")
    if overall is None or found is None:
        return _why_missing(record, prefix)
    counts = Counter(occurrences(found))
    return _values(overall, {name: counts.get(name, 0) for name in groups}, groups, scale_names)


def _taxonomy_groups(signature: Mapping[str, Any], folder: Any, taxonomy: str | os.PathLike[str] | None) -> dict[str, str]:
    """Behaviour type -> group, as the run judged them: the run's signature, else the taxonomy file
    (default the built-in one), which must name the run's types."""
    from .taxonomy import load_taxonomy

    recorded = signature.get("taxonomy_groups")
    if taxonomy is None and isinstance(recorded, dict) and recorded:
        return {str(name): str(group) for name, group in recorded.items()}
    groups = {b.name: b.group for b in load_taxonomy(taxonomy)}
    if signature.get("taxonomy") and sorted(signature["taxonomy"]) != sorted(groups):
        raise ConvbenchError(f"{folder} was judged with the behaviour types {signature['taxonomy']}, not "
                             f"{list(groups)}; give that taxonomy's file with --taxonomy")
    return groups


def _why_missing(record: Mapping[str, Any], prefix: str) -> str:
    if record.get("error"):
        return "per-row error"
    if prefix == "model" and record.get("simulation_cut_failure"):
        return "simulation reply cut at the token limit"
    if prefix == "model" and not record.get("simulation_complete", True):
        return "simulation incomplete"
    if any(u.startswith(prefix) for u in record.get("unusable_judge_answers") or []):
        return "unusable judge answer"
    return "no judge answer"
