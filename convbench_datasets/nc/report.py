"""NC-Bench's section of ``convbench report``: the tables in the paper's layout with its published
models beside the runs, the judge sanity, paired comparisons, the per-pattern figure, failures.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from .report_figures import nc_figure
from ..report.html import html_table, save_figure, save_table
from ..report.runs import Run
from .compare import compare_nc_runs
from .paper_results import paper_results
from .report_judges import judge_tables, per_judge_counts
from .report_tables import (OVERALL, PAPER_MARK, _nc_frames, _nc_set_frames, _nc_task_frames, nc_failure_pools,
                            nc_failures, nc_judge_sanity, nc_paper_differences, nc_pooled_failures, paper_legend,
                            paper_n_legend)


def section(runs: list[Run], out: Path, reference: bool = True) -> list[str]:
    """NC-Bench's part of the page; its tables and figures go to ``out``."""
    import pandas as pd

    from .run import REPEAT_PATTERN, REPEAT_SANITY_WARNING, repeat_labels

    table, counts = _nc_frames(runs, reference)  # each run's cells and the rows each is computed from
    headers = {r.name: r.label for r in runs}  # a run of part of the rows says so in its header
    legend = paper_legend() if reference else None
    save_table(table, out / "tables", "nc_accuracy", legend and f"{legend}\n\n{paper_n_legend()}", counts=counts,
               headers=headers)
    parts = ["<h2>NC-Bench</h2><p>Accuracy (%) per pattern; set and overall rows are row-weighted averages; each "
             "run's cell gives the rows it is computed from (n=N).</p>"]
    if reference:
        parts.append(f"<p class='note paper-setup'>{html.escape(paper_legend())}</p>")
        parts.append(f"<p class='note paper-n'>{html.escape(paper_n_legend())}</p>")
        for run in runs:
            differences = nc_paper_differences(run)
            if differences:
                parts.append(f"<p class='warning not-comparable'>{html.escape(run.name)}: not directly comparable with "
                             f"the paper's numbers ({html.escape('; '.join(differences))}).</p>")
    sanity = nc_judge_sanity(runs)
    if len(sanity):
        save_table(sanity, out / "tables", "nc_judge_sanity")
        parts.append(f"<h3>Judge sanity</h3><p>How often the judge labels the repeat baseline's verbatim repeats "
                     f"{repeat_labels()} on {REPEAT_PATTERN} rows (a sound judge: near 100%).</p>")
        for row in sanity.itertuples(index=False):
            if row.below_warning_level:
                parts.append(f"<p class='warning judge-sanity'>Warning: the judge {html.escape(str(row.judge))} labels "
                             f"verbatim repeats {repeat_labels()} on only {row.labelled_repeat:.1f}% of {REPEAT_PATTERN} rows "
                             f"({html.escape(row.run)}; below {REPEAT_SANITY_WARNING:.0f}%): its labels, and the "
                             f"numbers of runs it judged, may not be trustworthy.</p>")
        parts.append(html_table(sanity))
    marks: dict[tuple[Any, str], str] = {}  # ((set, pattern), run) -> "n.s."
    comparisons = []
    base = runs[0]
    for other in runs[1:]:
        try:
            result = compare_nc_runs(other.records, base.records)
        except ValueError:
            comparisons.append({"model": other.label, "versus": base.label, "set": "",
                                "pattern": "not compared: the runs scored different rows"})
            continue
        tests = [("Overall", "Overall", result["overall"])]
        tests += [(s, "Overall", t) for s, t in result["per_set"].items()]
        tests += [(*key.split("/", 1), t) for key, t in result["per_set_pattern"].items()]
        for set_name, pattern, t in tests:
            comparisons.append({"model": other.label, "versus": base.label, "set": set_name, "pattern": pattern,
                                "n": t["n"], "difference": t["difference"], "low": t["interval"][0],
                                "high": t["interval"][1],
                                "p_bootstrap": t["p_bootstrap"], "p_randomization": t["p_randomization"],
                                "significant": t["significant"]})
            if not t["significant"]:
                marks[((set_name, pattern), other.name)] = "n.s."
    for set_name, (frame, set_counts) in _nc_set_frames(runs, reference).items():
        published = set_name in paper_results().cells
        set_legend = legend and (f"{legend}\n\n{paper_n_legend(set_name)}" if published else legend)
        save_table(frame, out / "tables", f"nc_{set_name}", set_legend, counts=set_counts, headers=headers)
        number = f" (the paper's Table {paper_results().tables[set_name]})" if set_name in paper_results().tables else ""
        set_marks = {(pattern, name): mark for ((s, pattern), name), mark in marks.items() if s == set_name}
        parts.append(f"<h3>{html.escape(set_name)}{number}</h3>" + html_table(frame, set_marks, set_counts, headers))
    if (OVERALL, OVERALL) in table.index:
        overall = table.loc[[(OVERALL, OVERALL)], [r.name for r in runs]]
        overall_marks = {((OVERALL, OVERALL), name): mark for (key, name), mark in marks.items() if key == (OVERALL, OVERALL)}
        parts.append("<h3>All sets</h3><p>Over every row a run scored (the paper reports no such average).</p>"
                     + html_table(overall, overall_marks, counts.loc[[(OVERALL, OVERALL)]], headers))
    if comparisons:
        frame = pd.DataFrame(comparisons)
        if "n" in frame:
            frame["n"] = frame["n"].astype("Int64")  # rows compared: a count, not a float
        save_table(frame, out / "tables", "nc_comparisons", counts={"difference": "n"})
        parts.append(f"<h3>Paired comparisons with {html.escape(base.name)}</h3>"
                     "<p>Paired bootstrap and approximate randomisation over the same rows; "
                     "n.s. marks differences not significant at 5%; n: the rows compared.</p>"
                     + html_table(frame, counts={"difference": "n"}))
    # the runs only (7 more bars per pattern would hide them), named as in the tables
    figure = nc_figure(_nc_frames(runs, reference=False)[0].rename(columns=headers))
    parts.append(f"<img alt='NC-Bench accuracy per pattern' src='{save_figure(figure, out / 'figures', 'nc_patterns')}'>")
    tasks, task_counts = _nc_task_frames(runs)
    parts.append("<h3>Accuracy per upstream task</h3><p>The released aggregator's breakdown (the paper publishes "
                 "none).</p>")
    if tasks.attrs["omitted"]:
        parts.append(f"<p class='note'>Not shown (their records carry no task): "
                     f"{html.escape(', '.join(tasks.attrs['omitted']))}.</p>")
    if len(tasks.columns):
        save_table(tasks, out / "tables", "nc_tasks", counts=task_counts, headers=headers)
        parts.append(html_table(tasks, counts=task_counts, headers=headers))
    pools = nc_failure_pools(runs)  # the paper pools one judge's labels: never one judge's with another's
    for number, (pool, members) in enumerate(pools, start=1):
        pooled = nc_pooled_failures(members, reference=reference)
        name = "nc_pooled_failures" if len(pools) == 1 else f"nc_pooled_failures_{number}"
        save_table(pooled, out / "tables", name, "; ".join(
            [f"Pooled over {len(members)} run(s) with {pool}"]
            + ([f"{PAPER_MARK} the paper's Table 5: pooled over its seven models and three sets."] if legend else [])))
        parts.append(f"<h3>Top failures pooled over {len(members)} run(s), {html.escape(pool)}</h3><p>As the paper's "
                     "Table 5: per pattern, over every row of every run and set judged by this judge and read this "
                     "way, the pass rate, the label most failing rows carry and the share of failing rows that carry "
                     "it" + (f"; {PAPER_MARK} columns: the paper's Table 5, pooled over its seven models and three "
                     "sets, for the four patterns it reports" if reference else "") + ".</p>" + html_table(pooled))
    failures = nc_failures(runs)
    failures["model"] = failures["model"].map(lambda name: headers.get(name, name))
    shares = {"share_of_failures": "failing_rows"}  # a share of few failing rows is marked
    save_table(failures, out / "tables", "nc_failures", counts=shares)
    parts.append("<h3>Top failure label per run, set and pattern</h3><p>Share of the pattern's failing rows "
                 "(failing_rows) that carry the label; the next labels follow.</p>"
                 + html_table(failures, counts=shares))
    for name, title, frame in judge_tables(runs, published=reference):  # runs judged by several judges
        judge_counts = per_judge_counts(runs) if name == "nc_per_judge" else None  # rows behind each accuracy
        save_table(frame, out / "tables", name, counts=judge_counts)
        parts.append(f"<h3>{html.escape(title)}</h3>" + html_table(frame, counts=judge_counts))
    return parts
