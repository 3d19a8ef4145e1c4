"""Report tables as pandas DataFrames (percentages, as in the papers' tables).

- :func:`nc_table`: NC-Bench, the paper's layout: one row per (set, pattern) plus each set's overall
  and each run's overall (row-weighted over the rows that run scored), one column per run, then
  the paper's published models as marked columns (``reference=False`` hides them);
- :func:`nc_set_tables`: the same per set, the layout of the paper's Tables 2-4 (patterns as rows, overall
  last), published columns headed ``Model (paper, Table N)†``;
- :func:`nc_task_table`: accuracy per upstream task (27 names, e.g. ``Detail Request-All``) per set;
- :func:`nc_failures`: for each model and pattern, the top failure label and its share of failing rows;
- :func:`nc_failure_pools`: the runs grouped by judge and reading, the groups Table 5's analysis may pool;
- :func:`nc_pooled_failures`: Table 5's analysis pooled over the runs of one such group, beside the paper's Table 5;
- :func:`nc_judge_sanity`: the repeat baseline's ``labelled_repeat`` per run that has it;
- :func:`nc_paper_differences`: how a run's setup differs from the paper's (then not directly comparable);
- :func:`nico_table`: NICO scores per (task, metric), one column per model (and per interaction type);
- :func:`cocoeval_table`: per behaviour type, the human mean and each model's mean with intervals, over
  all sources (the CoCoEval paper's Figure 3 data);
- :func:`cocoeval_source_table`: the same per source (its Table 11 data);
- :func:`cocoeval_ratings_table`: models as rows, then humans, mean 1-10 ratings with 95% intervals (its Table 4);
- :func:`cocoeval_paper_differences`: how a CoCoEval run's setup departs from the paper's.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..nc.judge_output import UNPARSED_LABEL
from ..nc.paper_results import paper_results
from ..nc.patterns import pattern_table
from ..nc.run import JUDGE_MAX_NEW_TOKENS, run_parsing
from ..scoring.ncbench_action import ERROR_LABEL
from .runs import Run

OVERALL = "Overall"
PAPER_MARK = "†"  # marks a published column (the paper's numbers, not re-run here) in every table format


def published_column(model: str, set_name: str | None = None) -> str:
    """The header of a published column: ``Qwen-7B (paper)†``, or with a set ``Qwen-7B (paper, Table 4)†``."""
    where = "paper" if set_name is None else f"paper, Table {paper_results().tables[set_name]}"
    return f"{model} ({where}){PAPER_MARK}"


def paper_legend() -> str:
    """The legend line for tables with published columns: what the mark means and the paper's setup."""
    setup = paper_results().setup
    return (f"{PAPER_MARK} published in the NC-Bench paper (Moore, An, Ahmed and Gala, 2026), not re-run here; "
            f"its setup: judge {setup['judge']}, the {setup['judge_template']} judge prompt, {setup['decoding']} "
            f"decoding, {setup['max_new_tokens']} new tokens, the {setup['rules']} rules' acceptable labels and the "
            f"released aggregator's {setup['parsing']} reading of the judge's answers. Runs judged or scored "
            f"otherwise are not directly comparable.")


def nc_paper_differences(run: Run) -> list[str]:
    """How ``run``'s signature differs from the paper's setup; empty when its numbers are comparable.

    The judge must be the paper's (its name in the judge spec, any provider), the judge prompt the
    released one (``judge_template`` "released"; runs that do not record it used convbench's wording),
    the decoding, when recorded, greedy with the paper's token limit, the judge's greedy with the released
    pipeline's limit; the judge's answers read as the released aggregator reads them (``parsing`` exact;
    runs that do not record it were read leniently), and the paper's acceptable labels on every task the
    run scored (``rules released_script`` differs on one rag task only); every row, no filled request details.
    """
    setup, signature = paper_results().setup, run.signature
    differences = []
    judge = str(signature.get("judge") or "")
    if setup["judge"].lower() not in judge.lower():
        differences.append(f"judge {judge or 'not recorded'} (paper: {setup['judge']})")
    template = signature.get("judge_template")
    if template != setup["judge_template"]:
        differences.append(f"judge prompt {template or 'not recorded'} (paper: {setup['judge_template']})")
    generation = signature.get("generation") or {}
    if generation.get("temperature", 0) not in (0, 0.0):
        differences.append(f"temperature {generation['temperature']} (paper: {setup['decoding']})")
    if generation.get("max_new_tokens", setup["max_new_tokens"]) != setup["max_new_tokens"]:
        differences.append(f"{generation['max_new_tokens']} new tokens (paper: {setup['max_new_tokens']})")
    if signature.get("limit") is not None:
        differences.append(f"only the first {signature['limit']} rows (--limit): cells cover part of each pattern")
    shard = signature.get("shard")
    if isinstance(shard, dict):
        differences.append(f"shard {shard.get('index')}/{shard.get('count')} only (--shard): `convbench merge` its shards "
                           "for the whole run")
    judge_generation = signature.get("judge_generation") or {}
    if judge_generation.get("temperature", 0) not in (0, 0.0) or \
            judge_generation.get("max_new_tokens", JUDGE_MAX_NEW_TOKENS) != JUDGE_MAX_NEW_TOKENS:
        differences.append(f"judge decoding temperature {judge_generation.get('temperature', 0)}, "
                           f"{judge_generation.get('max_new_tokens')} new tokens (released pipeline: greedy, "
                           f"{JUDGE_MAX_NEW_TOKENS})")
    parsing = run_parsing(signature)
    if parsing != setup["parsing"]:
        assumed = " (not recorded by the run: read so before convbench recorded it)" \
            if "parsing" not in signature or signature.get("parsing_assumed") else ""
        differences.append(f"{parsing} reading of judge answers{assumed} (paper: the released aggregator's "
                           f"{setup['parsing']} reading)")
    differences += _rule_differences(run, setup["rules"])
    if signature.get("fill_request_details"):
        differences.append("request details filled in the judge prompt (the released pipeline leaves them empty)")
    return differences


def _rule_differences(run: Run, paper_rules: str) -> list[str]:
    """The run's ``rules`` where they change the acceptable labels of a task it scored (from the pattern table)."""
    rules = run.signature.get("rules", paper_rules)
    if rules == paper_rules:
        return []
    table = pattern_table()
    if rules not in table.rule_variants:
        return [f"rules {rules} (paper: {paper_rules})"]
    scored = {(r.get("set"), r.get("task")) for r in run.records}
    changes = []
    for set_name, task in table.rule_variants[rules]:
        if run.records and (set_name, task) not in scored:
            continue  # a task the run did not score is scored alike under both
        ours, paper = (table.acceptable_labels(set_name, task, r) for r in (rules, paper_rules))  # type: ignore[arg-type]
        change = [f"rejects {', '.join(x for x in paper if x not in ours)}" if set(paper) - set(ours) else "",
                  f"accepts {', '.join(x for x in ours if x not in paper)}" if set(ours) - set(paper) else ""]
        changes.append(f"{set_name} {task} {' and '.join(c for c in change if c)}")
    if not changes:
        return []
    return [f"rules {rules}: {'; '.join(changes)} (paper: {paper_rules}, its appendix B.1 and Table 3)"]


def nc_table(runs: list[Run], reference: bool = True) -> Any:
    """One row per (set, pattern), each set's overall after its patterns, the overall over all sets last.

    With ``reference`` (default) the paper's seven models follow the runs as columns headed
    ``Model (paper)†`` and every pattern of each set a run covers is a row (the runs' missing cells
    are NaN); the paper reports no overall over all sets (NaN there). Without it, only the runs'
    columns and the rows they scored.
    """
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
    columns = [r.name for r in runs]
    if reference:
        published = paper_results()
        for set_name in [s for s in table.sets if (s, OVERALL) in rows and s in published.cells]:
            for pattern, values in [*published.cells[set_name].items(), (OVERALL, published.overall(set_name))]:
                rows.setdefault((set_name, pattern), {}).update(
                    {published_column(model): value for model, value in values.items()})
        columns += [published_column(model) for model in published.models]
    order = [(s, p) for s in table.sets for p in [*table.patterns(s), OVERALL]] + [(OVERALL, OVERALL)]
    frame = pd.DataFrame.from_dict(rows, orient="index", dtype=float)
    frame = frame.reindex(index=[key for key in order if key in rows], columns=columns)  # the paper's order
    frame.index = pd.MultiIndex.from_tuples(frame.index, names=["set", "pattern"])
    return frame


def nc_set_tables(runs: list[Run], reference: bool = True) -> dict[str, Any]:
    """Set -> the paper's table for that set: patterns as rows (the paper's order), ``Overall`` last,
    the runs as columns, then (with ``reference``) the published models headed ``Model (paper, Table N)†``."""
    combined = nc_table(runs, reference=reference)
    tables = {}
    for set_name in dict.fromkeys(s for s, _ in combined.index):
        if set_name == OVERALL:
            continue
        frame = combined.loc[set_name].copy()
        frame.index.name = "pattern"
        if reference:
            frame = frame.rename(columns={published_column(m): published_column(m, set_name)
                                          for m in paper_results().models})
        tables[set_name] = frame
    return tables


def _run_per_task(run: Run) -> dict[str, dict[str, float]] | None:
    """``results["per_task"]`` ({set: {task: accuracy}}), else computed from the records' ``task`` and
    ``passed``; None when some record has no task (older runs)."""
    per_task = run.results.get("per_task")
    if isinstance(per_task, dict) and all(isinstance(v, dict) for v in per_task.values()):
        return per_task
    if not run.records or not all(isinstance(r.get("task"), str) for r in run.records):
        return None
    counts: dict[str, dict[str, list[int]]] = {}
    for record in run.records:
        tally = counts.setdefault(record["set"], {}).setdefault(record["task"], [0, 0])
        tally[0] += bool(record["passed"])
        tally[1] += 1
    return {s: {t: 100.0 * p / n for t, (p, n) in tasks.items()} for s, tasks in counts.items()}


def nc_task_table(runs: list[Run]) -> Any:
    """Accuracy (%) per (set, upstream task), one column per run, tasks in ``patterns.yaml`` order (the
    released aggregator's breakdown; the paper publishes none). Runs with neither ``per_task`` nor a
    task in every record are left out; ``frame.attrs["omitted"]`` names them."""
    import pandas as pd

    table = pattern_table()
    rows: dict[tuple[str, str], dict[str, float]] = {}
    included, omitted = [], []
    for run in runs:
        per_task = _run_per_task(run)
        if per_task is None:
            omitted.append(run.name)
            continue
        included.append(run.name)
        for set_name, tasks in per_task.items():
            for task, value in tasks.items():
                rows.setdefault((set_name, task), {})[run.name] = value
    known = [(e.set, e.task) for e in table.tasks]
    others = sorted(key for key in rows if key not in set(known))  # tasks patterns.yaml does not name, last
    frame = pd.DataFrame.from_dict(rows, orient="index", dtype=float)
    frame = frame.reindex(index=[k for k in known if k in rows] + others, columns=included)
    frame.index = pd.MultiIndex.from_tuples(list(frame.index), names=["set", "task"])
    frame.attrs["omitted"] = omitted
    return frame


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


def failure_pool(run: Run) -> tuple[str, str, str]:
    """What decides a run's failure labels: its (primary) judge, its rules and its reading of the judge's answers."""
    signature = run.signature
    return str(signature.get("judge") or "not recorded"), str(signature.get("rules", "paper")), run_parsing(signature)


def nc_failure_pools(runs: list[Run]) -> list[tuple[str, list[Run]]]:
    """The runs grouped by :func:`failure_pool`, in the order first seen, each with its name (``judge J, rules R,
    P reading``): the paper pools Table 5 over the runs of one judge; pooling labels of other judges, or of
    the same judge read otherwise, would count different things as one."""
    groups: dict[tuple[str, str, str], list[Run]] = {}
    for run in runs:
        groups.setdefault(failure_pool(run), []).append(run)
    return [(f"judge {judge}, rules {rules}, {parsing} reading", members) for (judge, rules, parsing), members in groups.items()]


def nc_pooled_failures(runs: list[Run], reference: bool = True) -> Any:
    """Table 5's failure analysis pooled over every row of every run (all sets), one row per pattern.

    The runs must share a judge, rules and reading (:func:`nc_failure_pools` groups them); others are an error.

    ``rows``, ``passed`` and ``pass_rate`` (%) pool the runs' records; ``top_failure_label`` is the label
    most failing rows carry (a row with no label counts as ``(unparsed)``, one whose request failed as
    ``(error)``; ties go to the alphabetically first) and ``share_of_failures`` the percentage of failing
    rows that carry it. Patterns are sorted by pass rate, lowest first, as in Table 5. With ``reference``
    the paper's Table 5 values follow, marked, for the four patterns it reports (NaN for the others).
    """
    import pandas as pd

    pools = nc_failure_pools(runs)
    if len(pools) > 1:
        raise ValueError(f"Table 5's failure analysis pools runs of one judge and reading; these runs have "
                         f"{len(pools)}: {'; '.join(name for name, _ in pools)} (nc_failure_pools groups them)")
    table = pattern_table()
    order = list(dict.fromkeys(p for s in table.sets for p in table.patterns(s)))
    tallies: dict[str, dict[str, Any]] = {}
    for run in runs:
        for record in run.records:
            tally = tallies.setdefault(record["pattern"], {"rows": 0, "passed": 0, "labels": Counter()})
            tally["rows"] += 1
            if record["passed"]:
                tally["passed"] += 1
                continue
            fallback = ERROR_LABEL if record.get("error") is not None else UNPARSED_LABEL
            tally["labels"].update(dict.fromkeys(record.get("labels") or [fallback], 1))  # a row counts once per label
    rows = []
    for pattern, tally in tallies.items():
        failing = tally["rows"] - tally["passed"]
        top = min(tally["labels"].items(), key=lambda item: (-item[1], item[0]), default=None)
        rows.append({"pattern": pattern, "rows": tally["rows"], "passed": tally["passed"],
                     "pass_rate": 100.0 * tally["passed"] / tally["rows"],
                     "top_failure_label": top[0] if top else None,
                     "share_of_failures": 100.0 * top[1] / failing if top else None})
    rank = {p: i for i, p in enumerate(order)}
    rows.sort(key=lambda r: (r["pass_rate"], rank.get(r["pattern"], len(rank)), r["pattern"]))
    columns = ["pattern", "rows", "passed", "pass_rate", "top_failure_label", "share_of_failures"]
    frame = pd.DataFrame(rows, columns=columns).set_index("pattern")
    if reference:
        published = paper_results().top_failures
        for key, name in (("pass", "pass_rate"), ("label", "top_failure_label"), ("share", "share_of_failures")):
            frame[f"{name} (paper, Table 5){PAPER_MARK}"] = [
                published[p][key] if p in published else None for p in frame.index]
    return frame


def nc_judge_sanity(runs: list[Run]) -> Any:
    """Per run that has ``judge_sanity.labelled_repeat`` (the repeat baseline's runs): how often its judge
    gave a verbatim repeat a label acceptable on Repeat Request rows (Repeat or Partial Repeat) there, and
    whether that is below ``REPEAT_SANITY_WARNING`` (a sound judge: near 100%)."""
    import pandas as pd

    from ..nc.run import REPEAT_SANITY_WARNING

    rows = []
    for run in runs:
        sanity = run.results.get("judge_sanity") or {}
        if sanity.get("labelled_repeat") is None:
            continue
        value = float(sanity["labelled_repeat"])
        rows.append({"run": run.name, "judge": run.signature.get("judge"),
                     "repeat_request_rows": sanity.get("repeat_request_rows"), "labelled_repeat": value,
                     "below_warning_level": value < REPEAT_SANITY_WARNING})
    return pd.DataFrame(rows, columns=["run", "judge", "repeat_request_rows", "labelled_repeat", "below_warning_level"])


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
    from ..cocoeval.run import PAPER_JUDGE, TURNS_PER_CALL
    from ..cocoeval.simulation import COPIED_TURNS, COPY_PRESENCE_PENALTY

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
