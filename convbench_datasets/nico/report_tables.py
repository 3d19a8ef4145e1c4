"""NICO's report table as a pandas DataFrame: :func:`nico_table`, scores per (task, metric), one column per
model (and per interaction type).
"""

from __future__ import annotations

from typing import Any

from ..report.runs import Run


NICO_KEYS = ("bleu_1", "bleu_2", "rouge_l", "distinct_1", "distinct_2", "avg_len", "bertscore_f1",
             "precision", "recall", "f1", "precision_containing", "recall_containing", "f1_containing")


def nico_table(runs: list[Run], by_interaction_type: bool = False) -> Any:
    import pandas as pd

    rows: dict[tuple[str, ...], dict[str, float]] = {}
    for run in runs:
        task = run.signature.get("task", "?")
        shots = f"{run.signature.get('shots', 0)}-shot"
        scopes = sorted(run.results.get("per_interaction_type", {}).items()) if by_interaction_type else [("all", run.results)]
        for scope, values in scopes:
            for key in NICO_KEYS:
                if key in values:
                    rows.setdefault((task, shots, scope, key), {})[run.name] = values[key]
    frame = pd.DataFrame.from_dict(rows, orient="index")
    if len(frame):
        frame.index = pd.MultiIndex.from_tuples(frame.index, names=["task", "prompt", "interaction_type", "metric"])
    return frame
