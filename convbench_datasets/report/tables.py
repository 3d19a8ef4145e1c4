"""Report tables as pandas DataFrames (percentages, as in the papers' tables).

- :func:`nc_table`: NC-Bench, the paper's layout: one row per (set, pattern) plus each set's overall
  and each run's overall (row-weighted over the rows that run scored), one column per run;
- :func:`nc_failures`: for each model and pattern, the top failure label and its share of failing rows;
- :func:`nico_table`: NICO scores per (task, metric), one column per model (and per interaction type);
- :func:`cocoeval_table`: per behaviour type, the human mean and each model's mean with intervals.
"""

from __future__ import annotations

from typing import Any

from ..nc.patterns import pattern_table
from .runs import Run

OVERALL = "Overall"


def nc_table(runs: list[Run]) -> Any:
    import pandas as pd

    table = pattern_table()
    rows: dict[tuple[str, str], dict[str, float]] = {}
    for run in runs:
        per = run.results.get("per_set_pattern", {})
        for set_name in table.sets:
            if set_name not in per:
                continue
            for pattern in table.patterns(set_name):
                if pattern in per[set_name]:
                    rows.setdefault((set_name, pattern), {})[run.name] = per[set_name][pattern]
            rows.setdefault((set_name, OVERALL), {})[run.name] = run.results["per_set"][set_name]
        rows.setdefault((OVERALL, OVERALL), {})[run.name] = run.results["accuracy"]
    order = [(s, p) for s in table.sets for p in [*table.patterns(s), OVERALL]] + [(OVERALL, OVERALL)]
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame = frame.reindex([key for key in order if key in rows])  # the paper's order, whatever the runs cover
    frame.index = pd.MultiIndex.from_tuples(frame.index, names=["set", "pattern"])
    return frame[[r.name for r in runs]]


def nc_failures(runs: list[Run]) -> Any:
    import pandas as pd

    rows = []
    for run in runs:
        for set_name, breakdown in run.results.get("failure_breakdown_per_set", {}).items():
            for pattern, shares in breakdown.items():
                if shares:
                    label, share = next(iter(shares.items()))
                    rows.append({"model": run.name, "set": set_name, "pattern": pattern, "top_failure_label": label,
                                 "share_of_failures": share,
                                 "others": ", ".join(f"{k} {v:.0f}%" for k, v in list(shares.items())[1:4])})
    return pd.DataFrame(rows, columns=["model", "set", "pattern", "top_failure_label", "share_of_failures", "others"])


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


def cocoeval_table(runs: list[Run]) -> Any:
    import pandas as pd

    rows = []
    several = len([r for r in runs if "model_mean" in r.results]) > 1
    for run in runs:
        results = run.results
        if "model_mean" not in results:
            continue
        intervals = results.get("intervals", {})
        human = f"human ({run.name})" if several else "human"  # each run's compared contexts have their own
        for name in results["model_mean"]:
            for side, who in (("human_mean", human), ("model_mean", run.name)):
                low, high = intervals.get(side, {}).get(name, [None, None])
                rows.append({"behaviour": name, "who": who, "mean": results[side][name], "low": low, "high": high})
    return pd.DataFrame(rows, columns=["behaviour", "who", "mean", "low", "high"])
