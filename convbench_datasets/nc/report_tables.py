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
- :func:`paper_n_legend`: the rows behind the published cells (the paper's Table 1).

``nc_table``, ``nc_set_tables`` and ``nc_task_table`` take ``with_n=True`` for each run's row counts beside
its values (``"<run> n"`` columns, counted in the run's records); ``nc_failures`` has ``failing_rows``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..report.html import PAPER_MARK
from ..report.runs import Run
from .judge_output import UNPARSED_LABEL
from .ncbench_action import ERROR_LABEL
from .paper_results import paper_results
from .run import run_parsing
from .patterns import pattern_table

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
    """How ``run``'s setup departs from the paper's, one line each (:func:`convbench_datasets.departures.run_departures`
    with NC-Bench's declared settings); empty when its numbers are comparable.

    The judge must be the paper's (its name in the judge spec, any provider); each setting the paper's value
    (:class:`.run.NCSettings`: the released judge prompt, greedy decoding with the paper's token limit, the
    released pipeline's judge limit, the released aggregator's exact reading, the paper's acceptable labels on
    every task the run scored, no filled request details); every row; no request parameter of the user's.
    """
    from ..departures import run_departures
    from .run import BENCHMARK

    return run_departures(BENCHMARK, run.signature, run.records)


def paper_n_legend(set_name: str | None = None) -> str:
    """The legend line on the rows behind the published (†) cells: each is a model's accuracy over every
    row of the paper's set (its Table 1, whose counts ``patterns.yaml``'s ``rows`` repeat: 20 per upstream
    task), so 20 rows per pattern except complex_request's patterns that pool two or three tasks (40 or 60).
    ``set_name``: that set's counts only (a per-set table)."""
    table = pattern_table()
    published = paper_results()
    parts = []
    for name in [set_name] if set_name is not None else [s for s in table.sets if s in published.cells]:
        by_n: dict[int, list[str]] = {}
        for pattern, n in table.pattern_counts(name).items():
            by_n.setdefault(n, []).append(pattern)
        usual = max(by_n, key=lambda n: (len(by_n[n]), -n))
        others = "; ".join(f"{', '.join(patterns)}: n={n}" for n, patterns in sorted(by_n.items()) if n != usual)
        parts.append(f"{name}: n={usual} per pattern{f' ({others})' if others else ''}, Overall n={table.rows(name)}")
    return (f"{PAPER_MARK} cells: each published model's accuracy over every row of the paper's set (its Table 1, "
            f"20 rows per upstream task): {'; '.join(parts)}.")


def _nc_counts(run: Run) -> dict[tuple[str, str], int]:
    """Rows per (set, pattern), per (set, ``Overall``) and (``Overall``, ``Overall``), counted in the run's
    records: ``results.json`` holds the accuracies of these cells (``per_set_pattern``, ``per_set``,
    ``accuracy``) but no count per set and pattern (its ``pattern_counts`` pool the sets)."""
    counts: Counter[tuple[str, str]] = Counter()
    for record in run.records:
        counts[(record.get("set"), record.get("pattern"))] += 1
        counts[(record.get("set"), OVERALL)] += 1
    counts[(OVERALL, OVERALL)] = len(run.records)
    return dict(counts)


def _nc_frames(runs: list[Run], reference: bool) -> tuple[Any, Any]:
    """:func:`nc_table`'s frame and the runs' row counts (same index, the runs' columns; ``<NA>``: no rows)."""
    import pandas as pd

    table = pattern_table()
    rows: dict[tuple[str, str], dict[str, float]] = {}
    counted: dict[tuple[str, str], dict[str, int]] = {}
    for run in runs:
        per = run.results.get("per_set_pattern", {})
        counts = _nc_counts(run)

        def put(key: tuple[str, str], value: float, run: Run = run,
                counts: dict[tuple[str, str], int] = counts) -> None:
            rows.setdefault(key, {})[run.name] = value
            if key in counts:  # a cell with no record behind it (an inconsistent folder) gets no count
                counted.setdefault(key, {})[run.name] = counts[key]

        for set_name in table.sets:
            if set_name not in per:
                continue
            for pattern in table.patterns(set_name):
                if pattern in per[set_name]:
                    put((set_name, pattern), per[set_name][pattern])
            put((set_name, OVERALL), run.results["per_set"][set_name])
        put((OVERALL, OVERALL), run.results["accuracy"])
    columns = [r.name for r in runs]
    if reference:
        published = paper_results()
        for set_name in [s for s in table.sets if (s, OVERALL) in rows and s in published.cells]:
            for pattern, values in [*published.cells[set_name].items(), (OVERALL, published.overall(set_name))]:
                rows.setdefault((set_name, pattern), {}).update(
                    {published_column(model): value for model, value in values.items()})
        columns += [published_column(model) for model in published.models]
    order = [(s, p) for s in table.sets for p in [*table.patterns(s), OVERALL]] + [(OVERALL, OVERALL)]
    index = [key for key in order if key in rows]  # the paper's order
    frame = pd.DataFrame.from_dict(rows, orient="index", dtype=float).reindex(index=index, columns=columns)
    counts = pd.DataFrame.from_dict(counted, orient="index").reindex(index=index, columns=[r.name for r in runs])
    for each in (frame, counts):
        each.index = pd.MultiIndex.from_tuples(index, names=["set", "pattern"])
    return frame, counts.astype("Int64")


def nc_table(runs: list[Run], reference: bool = True, with_n: bool = False) -> Any:
    """One row per (set, pattern), each set's overall after its patterns, the overall over all sets last.

    With ``reference`` (default) the paper's seven models follow the runs as columns headed
    ``Model (paper)†`` and every pattern of each set a run covers is a row (the runs' missing cells
    are NaN); the paper reports no overall over all sets (NaN there). Without it, only the runs'
    columns and the rows they scored.

    ``with_n=True`` adds after each run's column its row counts, ``"<run> n"`` (nullable integers, counted
    in the run's records: the rows each cell is computed from; ``<NA>`` where the run scored none); the
    published columns have none (:func:`paper_n_legend` says theirs). The values stay floats either way.
    """
    from ..report.cells import with_counts

    frame, counts = _nc_frames(runs, reference)
    return with_counts(frame, counts) if with_n else frame


def _nc_set_frames(runs: list[Run], reference: bool) -> dict[str, tuple[Any, Any]]:
    """Set -> (:func:`nc_set_tables`'s frame, the runs' row counts)."""
    combined, counts = _nc_frames(runs, reference)
    tables = {}
    for set_name in dict.fromkeys(s for s, _ in combined.index):
        if set_name == OVERALL:
            continue
        frame, set_counts = combined.loc[set_name].copy(), counts.loc[set_name].copy()
        frame.index.name = set_counts.index.name = "pattern"
        if reference:
            frame = frame.rename(columns={published_column(m): published_column(m, set_name)
                                          for m in paper_results().models})
        tables[set_name] = (frame, set_counts)
    return tables


def nc_set_tables(runs: list[Run], reference: bool = True, with_n: bool = False) -> dict[str, Any]:
    """Set -> the paper's table for that set: patterns as rows (the paper's order), ``Overall`` last,
    the runs as columns, then (with ``reference``) the published models headed ``Model (paper, Table N)†``.
    ``with_n=True``: each run's column followed by its row counts ``"<run> n"``, as :func:`nc_table`."""
    from ..report.cells import with_counts

    return {s: with_counts(frame, counts) if with_n else frame
            for s, (frame, counts) in _nc_set_frames(runs, reference).items()}


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


def _nc_task_frames(runs: list[Run]) -> tuple[Any, Any]:
    """:func:`nc_task_table`'s frame and the runs' row counts per (set, task), counted in the records
    (``results.json``'s ``per_task`` holds accuracies only); none for a run whose records lack a task."""
    import pandas as pd

    table = pattern_table()
    rows: dict[tuple[str, str], dict[str, float]] = {}
    counted: dict[tuple[str, str], dict[str, int]] = {}
    included, omitted = [], []
    for run in runs:
        per_task = _run_per_task(run)
        if per_task is None:
            omitted.append(run.name)
            continue
        included.append(run.name)
        counts = Counter((r.get("set"), r.get("task")) for r in run.records
                         ) if all(isinstance(r.get("task"), str) for r in run.records) else Counter()
        for set_name, tasks in per_task.items():
            for task, value in tasks.items():
                rows.setdefault((set_name, task), {})[run.name] = value
                if counts[(set_name, task)]:
                    counted.setdefault((set_name, task), {})[run.name] = counts[(set_name, task)]
    known = [(e.set, e.task) for e in table.tasks]
    others = sorted(key for key in rows if key not in set(known))  # tasks patterns.yaml does not name, last
    index = [k for k in known if k in rows] + others
    frame = pd.DataFrame.from_dict(rows, orient="index", dtype=float).reindex(index=index, columns=included)
    counts_frame = pd.DataFrame.from_dict(counted, orient="index").reindex(index=index, columns=included)
    for each in (frame, counts_frame):
        each.index = pd.MultiIndex.from_tuples(index, names=["set", "task"])
    frame.attrs["omitted"] = omitted
    return frame, counts_frame.astype("Int64")


def nc_task_table(runs: list[Run], with_n: bool = False) -> Any:
    """Accuracy (%) per (set, upstream task), one column per run, tasks in ``patterns.yaml`` order (the
    released aggregator's breakdown; the paper publishes none). Runs with neither ``per_task`` nor a
    task in every record are left out; ``frame.attrs["omitted"]`` names them. ``with_n=True``: each run's
    column followed by its row counts ``"<run> n"`` (counted in its records), as :func:`nc_table`."""
    from ..report.cells import with_counts

    frame, counts = _nc_task_frames(runs)
    if not with_n:
        return frame
    counted = with_counts(frame, counts)
    counted.attrs["omitted"] = frame.attrs["omitted"]
    return counted


def nc_failures(runs: list[Run]) -> Any:
    """Per run, set and pattern with failing rows: the label most of them carry (``top_failure_label``), its
    ``share_of_failures`` (%), ``failing_rows`` (the rows that share is computed from, counted in the run's
    records) and the next labels (``others``)."""
    import pandas as pd

    rows = []
    for run in runs:
        failing = Counter((r.get("set"), r.get("pattern")) for r in run.records if not r.get("passed"))
        for set_name, breakdown in run.results.get("failure_breakdown_per_set", {}).items():
            for pattern, shares in breakdown.items():
                if shares:
                    label, share = next(iter(shares.items()))
                    rows.append({"model": run.name, "set": set_name, "pattern": pattern, "top_failure_label": label,
                                 "share_of_failures": share, "failing_rows": failing[(set_name, pattern)] or None,
                                 "others": ", ".join(f"{k} {v:.0f}%" for k, v in list(shares.items())[1:4])})
    frame = pd.DataFrame(rows, columns=["model", "set", "pattern", "top_failure_label", "share_of_failures",
                                        "failing_rows", "others"])
    frame["failing_rows"] = frame["failing_rows"].astype("Int64")
    return frame


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
