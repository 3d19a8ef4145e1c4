"""NICO's report table as a pandas DataFrame: :func:`nico_table`, scores per (task, metric), one column per
model (and per interaction type); ``with_n=True`` adds the rows behind each score.
"""

from __future__ import annotations

from typing import Any

from ..report.runs import Run


NICO_KEYS = ("bleu_1", "bleu_2", "rouge_l", "distinct_1", "distinct_2", "avg_len", "bertscore_f1",
             "precision", "recall", "f1", "precision_containing", "recall_containing", "f1_containing")


def _nico_count(run: Run, scope: str, values: dict[str, Any], key: str) -> int | None:
    """The rows a NICO score is computed from: ``n`` of its results (``n_containing`` for the
    ``*_containing`` scores, over the dialogues that contain an unnatural sentence), else counted in the
    run's records (all of them, or those of the interaction type); None where neither says."""
    if key.endswith("_containing"):
        return values.get("n_containing")
    if isinstance(values.get("n"), int):
        return int(values["n"])
    if scope == "all":
        return len(run.records)
    return sum(r.get("interaction_type") == scope for r in run.records) or None


def _nico_frames(runs: list[Run], by_interaction_type: bool = False) -> tuple[Any, Any]:
    """:func:`nico_table`'s frame and the rows behind each score (same index, the runs' columns)."""
    import pandas as pd

    rows: dict[tuple[str, ...], dict[str, float]] = {}
    counted: dict[tuple[str, ...], dict[str, int]] = {}
    for run in runs:
        task = run.signature.get("task", "?")
        shots = f"{run.signature.get('shots', 0)}-shot"
        scopes = sorted(run.results.get("per_interaction_type", {}).items()) if by_interaction_type else [("all", run.results)]
        for scope, values in scopes:
            for key in NICO_KEYS:
                if key in values:
                    rows.setdefault((task, shots, scope, key), {})[run.name] = values[key]
                    n = _nico_count(run, scope, values, key)
                    if n is not None:
                        counted.setdefault((task, shots, scope, key), {})[run.name] = n
    frame = pd.DataFrame.from_dict(rows, orient="index")
    columns = list(frame.columns)
    counts = pd.DataFrame.from_dict(counted, orient="index").reindex(index=frame.index, columns=columns).astype("Int64")
    if len(frame):
        index = pd.MultiIndex.from_tuples(list(frame.index), names=["task", "prompt", "interaction_type", "metric"])
        frame.index = counts.index = index
    return frame, counts


def nico_table(runs: list[Run], by_interaction_type: bool = False, with_n: bool = False) -> Any:
    """Per (task, prompt, interaction type, metric) one row, per run one column: its scores (percent;
    ``avg_len`` in tokens), over all rows (``interaction_type`` ``all``) or, ``by_interaction_type``, per type.

    ``with_n=True`` adds after each run's column its row counts ``"<run> n"`` (nullable integers): the rows
    each score is computed from, the run's results' ``n`` (``n_containing`` for the ``*_containing``
    scores; for a run whose results lack it, its records counted). The scores stay floats either way.
    """
    from ..report.cells import with_counts

    frame, counts = _nico_frames(runs, by_interaction_type)
    return with_counts(frame, counts) if with_n and len(frame) else frame


def nico_paper_differences(run: Run) -> list[str]:
    """How a NICO run's setup departs from the paper's (or, where the paper is silent, convbench's default: the
    token unit, the token limit), one line each (:func:`convbench_datasets.departures.run_departures` with
    :class:`.run.NICOSettings`); empty when it follows it."""
    from ..departures import run_departures
    from .run import BENCHMARK

    return run_departures(BENCHMARK, run.signature, run.records)
