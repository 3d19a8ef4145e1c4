"""CoCoEvalBench's report tables as pandas DataFrames (percentages, as in the paper's tables).

- :func:`cocoeval_table`: per behaviour type, the human mean and each model's mean with intervals, over
  all sources (the CoCoEval paper's Figure 3 data);
- :func:`cocoeval_source_table`: the same per source (its Table 11 data);
- :func:`cocoeval_ratings_table`: models as rows, then humans, mean 1-10 ratings with 95% intervals (its Table 4);
- :func:`cocoeval_paper_differences`: how a CoCoEval run's setup departs from the paper's.
"""

from __future__ import annotations

from typing import Any

from ..report.runs import Run


def cocoeval_table(runs: list[Run]) -> Any:
    """The paper's Figure 3 data: per behaviour type, the human and each run's mean occurrences per
    continuation over all sources, with 95% intervals (long format: behaviour, who, mean, low, high).
    One ``human`` entry per type when the runs report the same human numbers (they compared the same
    continuations), else one per run (``human (run)``): the human series is drawn once, not once per run."""
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
                                              "low": low, "high": high})
    return pd.DataFrame(list(rows.values()), columns=["behaviour", "who", "mean", "low", "high"])


def cocoeval_paper_differences(run: Run) -> list[str]:
    """How a CoCoEval run's setup departs from the paper's; empty when it follows it.

    The paper judges with o4-mini, simulates with its repetition countermeasure (copy the five most
    recent turns first, presence_penalty 2.0; its appendix C.2 and Table 17), bootstraps over its
    conversations (one per instance) and covers the whole test split. Runs that record none of these
    (made before they were recorded) are flagged where the setting is unknown."""
    from .run import PAPER_JUDGE, TURNS_PER_CALL
    from .simulation import COPIED_TURNS, COPY_PRESENCE_PENALTY

    signature = run.signature
    differences = []
    judge = str(signature.get("judge") or "")
    if PAPER_JUDGE not in judge.lower():
        differences.append(f"judge {judge or 'not recorded'} (paper: {PAPER_JUDGE})")
    countermeasure = signature.get("repetition_countermeasure")
    if countermeasure != {"copied_turns": COPIED_TURNS, "presence_penalty": COPY_PRESENCE_PENALTY}:
        differences.append("no repetition countermeasure (--no-repetition-countermeasure; paper: copy the last "
                           f"{COPIED_TURNS} turns first, presence_penalty {COPY_PRESENCE_PENALTY})"
                           if countermeasure is None else f"repetition countermeasure {countermeasure} (paper: "
                           f"{COPIED_TURNS} turns, presence_penalty {COPY_PRESENCE_PENALTY})")
    unit = signature.get("bootstrap_unit")
    if unit != "instance":
        differences.append(f"intervals resample {unit or 'source conversations for frequencies, instances for ratings'}"
                           " (paper: its conversations, one per instance)")
    if signature.get("turns_per_call") not in TURNS_PER_CALL:
        differences.append(f"{signature.get('turns_per_call')} turns per call (paper: {', '.join(map(str, TURNS_PER_CALL))})")
    if signature.get("split", "test") != "test":
        differences.append(f"split {signature['split']} (paper: test)")
    if signature.get("limit") is not None:
        differences.append(f"only the first {signature['limit']} rows (--limit)")
    shard = signature.get("shard")
    if isinstance(shard, dict):
        differences.append(f"shard {shard.get('index')}/{shard.get('count')} only (--shard)")
    return differences


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


def cocoeval_source_table(runs: list[Run]) -> Any:
    """The paper's Table 11 data (its Figure 3 averages over all sources: :func:`cocoeval_table`): per
    source and behaviour type, the human and each run's mean
    occurrences per continuation with 95% intervals (long format: source, behaviour, who, mean, low, high).

    Sources and types in the order the runs give them; a run that has no rows of a source has no entry
    there (a figure draws it as missing). One ``human`` entry per source when the runs agree on it,
    else one per run (``human (run)``)."""
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
                                                           "mean": table[side][name], "low": low, "high": high})
    return pd.DataFrame(list(rows.values()), columns=["source", "behaviour", "who", "mean", "low", "high"])


def cocoeval_ratings_table(runs: list[Run]) -> Any:
    """The paper's Table 4 layout: one row per run (its model), then the human row(s); per scale
    (consistency, collaborativeness: the runs' rubric scales) the mean 1-10 rating over the compared
    continuations and its 95% interval (``low``, ``high``; n/a when not computed)."""
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
    order = [r.name for r in scored] + [w for w in rows if w not in {r.name for r in scored}]  # models, then humans
    frame = pd.DataFrame([rows[w] for w in order], index=pd.Index(order, name="model"),
                         columns=[c for s in scales for c in (s, f"{s} low", f"{s} high")])
    return frame
