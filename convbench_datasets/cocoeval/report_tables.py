"""CoCoEvalBench's report tables as pandas DataFrames (percentages, as in the paper's tables).

- :func:`cocoeval_table`: per behaviour type, the human mean and each model's mean with intervals, over
  all sources (the CoCoEval paper's Figure 3 data);
- :func:`cocoeval_source_table`: the same per source (its Table 11 data);
- :func:`cocoeval_ratings_table`: models as rows, then humans, mean 1-10 ratings with 95% intervals (its Table 4);
- :func:`cocoeval_paper_differences`: how a CoCoEval run's setup departs from the paper's.

Each table takes ``with_n=True`` for an ``n`` column: the compared instances each mean is computed from
(the results' ``n_compared``, a source's ``n``; for a run whose results lack them, its kept records counted).
"""

from __future__ import annotations

from typing import Any

from ..report.runs import Run


def _compared(run: Run, source: str | None = None) -> int:
    """The instances a run compared (all sources, or ``source``'s): what its means are computed from. The
    results' ``n_compared`` (a source's ``n``), else its records not excluded counted."""
    if source is None and isinstance(run.results.get("n_compared"), int):
        return int(run.results["n_compared"])
    if source is not None and isinstance((run.results.get("per_source") or {}).get(source, {}).get("n"), int):
        return int(run.results["per_source"][source]["n"])
    return sum(r.get("excluded") is None and (source is None or r.get("source") == source) for r in run.records)


def cocoeval_table(runs: list[Run], with_n: bool = False) -> Any:
    """The paper's Figure 3 data: per behaviour type, the human and each run's mean occurrences per
    continuation over all sources, with 95% intervals (long format: behaviour, who, mean, low, high).
    One ``human`` entry per type when the runs report the same human numbers (they compared the same
    continuations), else one per run (``human (run)``): the human series is drawn once, not once per run.
    ``with_n=True`` adds ``n``: the compared instances behind each mean."""
    import pandas as pd

    scored = [r for r in runs if "model_mean" in r.results]
    human = _human_label(scored, lambda run: {"all": (run.results["human_mean"],
                                                      run.results.get("intervals", {}).get("human_mean"))})
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for run in scored:
        results = run.results
        intervals = results.get("intervals", {})
        for name in results["model_mean"]:
            for side, who in (("human_mean", human(run)), ("model_mean", run.name)):
                low, high = intervals.get(side, {}).get(name, [None, None])
                rows.setdefault((name, who), {"behaviour": name, "who": who, "mean": results[side][name],
                                              "low": low, "high": high, "n": _compared(run)})
    return _long(rows, ["behaviour", "who", "mean", "low", "high"], with_n)


def _long(rows: dict[Any, dict[str, Any]], columns: list[str], with_n: bool) -> Any:
    import pandas as pd

    frame = pd.DataFrame(list(rows.values()), columns=[*columns, "n"])
    frame["n"] = frame["n"].astype("Int64")
    return frame if with_n else frame.drop(columns="n")


def cocoeval_paper_differences(run: Run) -> list[str]:
    """How a CoCoEval run's setup departs from the paper's, one line each
    (:func:`convbench_datasets.departures.run_departures` with :class:`.run.CoCoEvalSettings`); empty when it
    follows it: the paper's judge (o4-mini), its repetition countermeasure, intervals over its conversations,
    the whole test split of all six sources (300 instances, summaries by o4-mini), no request parameter of the
    user's. A setting a run does not record (made before it was) counts as the paper's, except the
    countermeasure and the bootstrap unit, whose earlier default was not the paper's."""
    from ..departures import run_departures
    from .run import BENCHMARK

    return run_departures(BENCHMARK, run.signature, run.records)


def _human_label(runs: list[Run], values: Any) -> Any:
    """``run -> "human"`` when every run that has a part (a source, the ratings) reports the same human
    numbers for it, else ``run -> "human (run name)"``: runs that compared other contexts have other humans."""
    seen: dict[Any, Any] = {}
    shared = True
    for run in runs:
        for key, value in values(run).items():
            if key in seen and seen[key] != value:
                shared = False
            seen.setdefault(key, value)
    return lambda run: "human" if shared else f"human ({run.name})"


def cocoeval_source_table(runs: list[Run], with_n: bool = False) -> Any:
    """The paper's Table 11 data (its Figure 3 averages over all sources: :func:`cocoeval_table`): per
    source and behaviour type, the human and each run's mean
    occurrences per continuation with 95% intervals (long format: source, behaviour, who, mean, low, high).

    Sources and types in the order the runs give them; a run that has no rows of a source has no entry
    there (a figure draws it as missing). One ``human`` entry per source when the runs agree on it,
    else one per run (``human (run)``). ``with_n=True`` adds ``n``: the source's compared instances
    behind each mean."""
    import pandas as pd

    scored = [r for r in runs if r.results.get("per_source")]
    human = _human_label(scored, lambda run: {s: (t.get("human_mean"), t.get("intervals", {}).get("human_mean"))
                                              for s, t in run.results["per_source"].items()})
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    for run in scored:
        for source, table in run.results["per_source"].items():
            intervals = table.get("intervals", {})
            for name in table["model_mean"]:
                for side, who in (("human_mean", human(run)), ("model_mean", run.name)):
                    low, high = intervals.get(side, {}).get(name, [None, None])
                    rows.setdefault((source, name, who), {"source": source, "behaviour": name, "who": who,
                                                           "mean": table[side][name], "low": low, "high": high,
                                                           "n": _compared(run, source)})
    return _long(rows, ["source", "behaviour", "who", "mean", "low", "high"], with_n)


def cocoeval_ratings_table(runs: list[Run], with_n: bool = False) -> Any:
    """The paper's Table 4 layout: one row per run (its model), then the human row(s); per scale
    (consistency, collaborativeness: the runs' rubric scales) the mean 1-10 rating over the compared
    continuations and its 95% interval (``low``, ``high``; n/a when not computed). ``with_n=True`` adds
    ``n`` last: the compared continuations behind each row's means."""
    import pandas as pd

    scored = [r for r in runs if r.results.get("overall")]
    human = _human_label(scored, lambda run: {"overall": run.results["overall"].get("human")})
    scales = list(dict.fromkeys(scale for r in scored for side in ("model", "human")
                                for scale in r.results["overall"].get(side, {})))
    rows: dict[str, dict[str, Any]] = {}
    for run in scored:
        for side, who in (("model", run.name), ("human", human(run))):
            ratings = run.results["overall"].get(side, {})
            row = rows.setdefault(who, {})
            for scale in scales:
                value = ratings.get(scale) or {}
                low, high = value.get("interval") or [None, None]
                row.update({scale: value.get("mean"), f"{scale} low": low, f"{scale} high": high})
            row.setdefault("n", _compared(run))
    order = [r.name for r in scored] + [w for w in rows if w not in {r.name for r in scored}]  # models, then humans
    frame = pd.DataFrame([rows[w] for w in order], index=pd.Index(order, name="model"),
                         columns=[c for s in scales for c in (s, f"{s} low", f"{s} high")] + ["n"])
    frame["n"] = frame["n"].astype("Int64")
    return frame if with_n else frame.drop(columns="n")
