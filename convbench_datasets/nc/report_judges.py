"""NC-Bench runs with several judges (``convbench run nc --judge A --judge B``): their tables.

- :func:`judge_agreement_table`: the paper's Table 7 layout: one row per (run, judge pair), Cohen's
  kappa and percent agreement at the label level and at the pass/fail level, with the rows compared
  and the bootstrap 95% intervals; ``published=True`` adds the paper's own Table 7 rows, marked;
- :func:`per_judge_table`: one row per (run, judge): overall accuracy and per set, unparsed, errors
  (``with_n=True``: with the rows behind each accuracy, :func:`per_judge_counts`);
- :func:`judge_tables`: both, named and titled for the report; empty when no run has several judges.

Runs with one judge have neither ``per_judge`` nor ``judge_agreement`` in their results and are left out.
"""

from __future__ import annotations

from typing import Any

from ..report.runs import Run

PUBLISHED_RUN = "NC-Bench paper, Table 7 (published)"
_STATS = (("label_kappa", "label κ"), ("label_percent", "label %"), ("pass_kappa", "pass/fail κ"),
          ("pass_percent", "pass/fail %"))


def _interval(entry: dict[str, Any], key: str) -> str | None:
    low, high = (entry.get("intervals") or {}).get(key) or (None, None)
    if low is None or high is None:
        return None
    form = ".3f" if key.endswith("kappa") else ".1f"
    return f"[{low:{form}}, {high:{form}}]"


def judge_agreement_table(runs: list[Run], published: bool = False) -> Any:
    """Per (run, pair): rows compared, kappa and % agreement at label and pass/fail level (percent 0-100)."""
    import pandas as pd

    rows: list[dict[str, Any]] = []
    for run in runs:
        for pair, entry in (run.results.get("judge_agreement") or {}).items():
            row: dict[str, Any] = {"run": run.name, "pair": pair, "rows": entry.get("n")}
            row.update({column: entry.get(key) for key, column in _STATS})
            row.update({f"{column} 95% CI": _interval(entry, key) for key, column in _STATS})
            rows.append(row)
    if published and rows:
        from .paper_results import paper_results

        for pair, entry in paper_results().judge_agreement.items():
            rows.append({"run": PUBLISHED_RUN, "pair": pair, "rows": None,
                         **{column: entry.get(key) for key, column in _STATS}})
    columns = ["run", "pair", "rows", *(c for _, c in _STATS), *(f"{c} 95% CI" for _, c in _STATS)]
    return pd.DataFrame(rows, columns=columns).set_index(["run", "pair"])


def per_judge_counts(runs: list[Run]) -> Any:
    """The rows behind :func:`per_judge_table`'s accuracies: per (run, judge), ``Overall`` the run's rows and
    per set its rows in that set (every judge judged every row), counted in the run's records."""
    import pandas as pd
    from collections import Counter

    rows: list[dict[str, Any]] = []
    for run in runs:
        per_set = Counter(r.get("set") for r in run.records)
        for name in run.results.get("per_judge") or {}:
            rows.append({"run": run.name, "judge": name, "Overall": len(run.records), **per_set})
    if not rows:
        return pd.DataFrame(columns=["run", "judge", "Overall"]).set_index(["run", "judge"])
    return pd.DataFrame(rows).set_index(["run", "judge"]).astype("Int64")


def per_judge_table(runs: list[Run], with_n: bool = False) -> Any:
    """Per (run, judge): accuracy overall and per set (percent), unparsed answers and per-row errors.
    ``with_n=True``: each accuracy column followed by its row counts ``"<column> n"`` (:func:`per_judge_counts`)."""
    import pandas as pd

    if with_n:
        from ..report.cells import with_counts

        return with_counts(per_judge_table(runs), per_judge_counts(runs))

    rows: list[dict[str, Any]] = []
    for run in runs:
        for position, (name, scores) in enumerate((run.results.get("per_judge") or {}).items()):
            rows.append({"run": run.name, "judge": name, "primary": position == 0, "Overall": scores.get("accuracy"),
                         **scores.get("per_set", {}), "unparsed": scores.get("unparsed"), "errors": scores.get("errors")})
    frame = pd.DataFrame(rows)
    if not len(frame):
        return pd.DataFrame(columns=["run", "judge", "primary", "Overall", "unparsed", "errors"]).set_index(["run", "judge"])
    counts = ["unparsed", "errors"]
    frame = frame[[c for c in frame.columns if c not in counts] + counts]
    return frame.set_index(["run", "judge"])


def judge_tables(runs: list[Run], published: bool = False) -> list[tuple[str, str, Any]]:
    """``(file name, title, frame)`` for the report; empty when no run was judged by several judges.
    ``published`` adds the paper's Table 7 rows to the agreement table."""
    agreement = judge_agreement_table(runs, published=published)
    if not len(agreement):
        return []
    return [
        ("nc_judge_agreement", "Judge agreement (the paper's Table 7 layout): Cohen's κ and % agreement, "
                               "label level (first label) and pass/fail level", agreement),
        ("nc_per_judge", "Accuracy (%) per judge (the first judge is primary: the tables above are its)",
         per_judge_table(runs)),
    ]
