"""NC-Bench's report tables as pandas DataFrames (percentages, as in the paper's tables).

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
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..report.html import PAPER_MARK
from ..report.runs import Run
from .judge_output import UNPARSED_LABEL
from .ncbench_action import ERROR_LABEL
from .paper_results import paper_results
from .patterns import pattern_table
from .run import JUDGE_MAX_NEW_TOKENS, run_parsing

OVERALL = "Overall"


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

    from .run import REPEAT_SANITY_WARNING

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
