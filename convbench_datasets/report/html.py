"""``convbench report``: one self-contained HTML page (no network: images inline), plus PNG/SVG figures
and CSV/Markdown tables, from one or more run folders.

The page holds, per benchmark present: NC-Bench's tables in the paper's layout, one per set, with the
paper's published models beside the runs (marked † and shaded; ``reference=False`` hides them) and a
note when a run's setup differs from the paper's, the repeat baseline's judge sanity (a warning below
90%), a per-pattern bar chart, per-task accuracy, the top failure labels pooled over the runs of each judge
(and reading of its answers) beside the paper's Table 5 and per run, and paired comparisons of the first run with each other one (differences
that are not significant at 5% are marked "n.s."); NICO's metric tables; CoCoEval's grouped behaviour
frequencies with interval whiskers, over all sources (the paper's Figure 3) and per source (its Table 11
as bars), the overall ratings in its Table 4 layout and the mismatch, with a note for each run whose
setup departs from the paper's; and every run's signature.
"""

from __future__ import annotations

import base64
import html
import io
import json
import os
from pathlib import Path
from typing import Any

from .._version import __version__
from ..nc.paper_results import paper_results
from ..extras import require
from ..out_folder import replaceable_entries, staged
from ..scoring.paired import compare_nc_runs
from .figures import MISSING, cocoeval_figure, cocoeval_source_figure, nc_figure
from .judges import judge_tables
from .runs import Run, load_runs
from .tables import (OVERALL, PAPER_MARK, cocoeval_paper_differences, cocoeval_ratings_table, cocoeval_source_table,
                     cocoeval_table, nc_failures,
                     nc_failure_pools, nc_judge_sanity, nc_paper_differences, nc_pooled_failures, nc_set_tables, nc_table,
                     nc_task_table, nico_table, paper_legend)

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2rem;max-width:80rem;color:#222}
table{border-collapse:collapse;margin:.5rem 0 1.5rem;font-size:.85rem}
th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:right}th{background:#f3f3f3}
td:first-child,th:first-child{text-align:left}.ns{color:#999}pre{background:#f7f7f7;padding:.5rem;font-size:.75rem}
img{max-width:100%}th.paper,td.paper{background:#eef3fb;color:#345;font-style:italic}
.warning{color:#8a1c1c;font-weight:bold}.note{color:#555}
"""


def markdown_table(frame: Any) -> str:
    flat = frame.reset_index() if frame.index.name or getattr(frame.index, "names", [None])[0] else frame
    header = [str(c) for c in flat.columns]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in flat.itertuples(index=False):
        lines.append("| " + " | ".join(_cell(v) for v in row) + " |")
    return "\n".join(lines) + "\n"


def _cell(value: Any) -> str:
    import pandas as pd

    if pd.api.types.is_scalar(value) and pd.isna(value):
        return MISSING  # None, NaN, pd.NA: not scored (an interval not computed), never 0 nor "None"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value).replace("|", "\\|")


def _html_table(frame: Any, marks: dict[tuple[Any, str], str] | None = None) -> str:
    """An HTML table; ``marks`` adds a note to a cell ((index key, column) -> "n.s."); a column whose
    header carries the published mark (†) gets class ``paper``."""
    flat = frame.reset_index() if frame.index.name or getattr(frame.index, "names", [None])[0] else frame
    paper = [str(c).endswith(PAPER_MARK) for c in flat.columns]
    head = "".join(f"<th{' class=paper' if p else ''}>{html.escape(str(c))}</th>" for c, p in zip(flat.columns, paper))
    body = []
    for key, row in zip(frame.index, flat.itertuples(index=False)):
        cells = []
        for column, value, published in zip(flat.columns, row, paper):
            mark = (marks or {}).get((key, str(column)))
            text = html.escape(_cell(value)) + (f" <span class='ns'>{mark}</span>" if mark else "")
            cells.append(f"<td{' class=ns' if mark else ' class=paper' if published else ''}>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _save_figure(fig: Any, folder: Path, name: str) -> str:
    """Write PNG and SVG files and return the PNG as a data URI for the page."""
    folder.mkdir(parents=True, exist_ok=True)
    fig.savefig(folder / f"{name}.svg", metadata={"Date": None})
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, metadata={"Software": None})
    (folder / f"{name}.png").write_bytes(buffer.getvalue())
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _save_table(frame: Any, folder: Path, name: str, legend: str | None = None) -> None:
    """CSV and Markdown; ``legend`` (what a mark in the headers means) is the Markdown's last line. The CSV
    stays plain data for other programs: its headers carry the mark and say "(paper, Table N)"."""
    folder.mkdir(parents=True, exist_ok=True)
    frame.to_csv(folder / f"{name}.csv")
    (folder / f"{name}.md").write_text(markdown_table(frame) + (f"\n{legend}\n" if legend else ""), encoding="utf-8")


def _nc_section(runs: list[Run], out: Path, reference: bool = True) -> list[str]:
    import pandas as pd

    from ..nc.run import REPEAT_PATTERN, REPEAT_SANITY_WARNING, repeat_labels

    table = nc_table(runs, reference=reference)
    legend = paper_legend() if reference else None
    _save_table(table, out / "tables", "nc_accuracy", legend)
    parts = ["<h2>NC-Bench</h2><p>Accuracy (%) per pattern; set and overall rows are row-weighted averages.</p>"]
    if reference:
        parts.append(f"<p class='note paper-setup'>{html.escape(paper_legend())}</p>")
        for run in runs:
            differences = nc_paper_differences(run)
            if differences:
                parts.append(f"<p class='warning not-comparable'>{html.escape(run.name)}: not directly comparable with "
                             f"the paper's numbers ({html.escape('; '.join(differences))}).</p>")
    sanity = nc_judge_sanity(runs)
    if len(sanity):
        _save_table(sanity, out / "tables", "nc_judge_sanity")
        parts.append(f"<h3>Judge sanity</h3><p>How often the judge labels the repeat baseline's verbatim repeats "
                     f"{repeat_labels()} on {REPEAT_PATTERN} rows (a sound judge: near 100%).</p>")
        for row in sanity.itertuples(index=False):
            if row.below_warning_level:
                parts.append(f"<p class='warning judge-sanity'>Warning: the judge {html.escape(str(row.judge))} labels "
                             f"verbatim repeats {repeat_labels()} on only {row.labelled_repeat:.1f}% of {REPEAT_PATTERN} rows "
                             f"({html.escape(row.run)}; below {REPEAT_SANITY_WARNING:.0f}%): its labels, and the "
                             f"numbers of runs it judged, may not be trustworthy.</p>")
        parts.append(_html_table(sanity))
    marks: dict[tuple[Any, str], str] = {}  # ((set, pattern), run) -> "n.s."
    comparisons = []
    base = runs[0]
    for other in runs[1:]:
        try:
            result = compare_nc_runs(other.records, base.records)
        except ValueError:
            comparisons.append({"model": other.name, "versus": base.name, "set": "", "pattern": "not compared: the runs scored different rows"})
            continue
        tests = [("Overall", "Overall", result["overall"])]
        tests += [(s, "Overall", t) for s, t in result["per_set"].items()]
        tests += [(*key.split("/", 1), t) for key, t in result["per_set_pattern"].items()]
        for set_name, pattern, t in tests:
            comparisons.append({"model": other.name, "versus": base.name, "set": set_name, "pattern": pattern,
                                "difference": t["difference"], "low": t["interval"][0], "high": t["interval"][1],
                                "p_bootstrap": t["p_bootstrap"], "p_randomization": t["p_randomization"],
                                "significant": t["significant"]})
            if not t["significant"]:
                marks[((set_name, pattern), other.name)] = "n.s."
    for set_name, frame in nc_set_tables(runs, reference=reference).items():
        _save_table(frame, out / "tables", f"nc_{set_name}", legend)
        number = f" (the paper's Table {paper_results().tables[set_name]})" if set_name in paper_results().tables else ""
        set_marks = {(pattern, name): mark for ((s, pattern), name), mark in marks.items() if s == set_name}
        parts.append(f"<h3>{html.escape(set_name)}{number}</h3>" + _html_table(frame, set_marks))
    if (OVERALL, OVERALL) in table.index:
        overall = table.loc[[(OVERALL, OVERALL)], [r.name for r in runs]]
        overall_marks = {((OVERALL, OVERALL), name): mark for (key, name), mark in marks.items() if key == (OVERALL, OVERALL)}
        parts.append("<h3>All sets</h3><p>Over every row a run scored (the paper reports no such average).</p>"
                     + _html_table(overall, overall_marks))
    if comparisons:
        frame = pd.DataFrame(comparisons)
        _save_table(frame, out / "tables", "nc_comparisons")
        parts.append(f"<h3>Paired comparisons with {html.escape(base.name)}</h3>"
                     "<p>Paired bootstrap and approximate randomisation over the same rows; "
                     "n.s. marks differences not significant at 5%.</p>" + _html_table(frame))
    figure = nc_figure(nc_table(runs, reference=False))  # the runs only: 7 more bars per pattern would hide them
    parts.append(f"<img alt='NC-Bench accuracy per pattern' src='{_save_figure(figure, out / 'figures', 'nc_patterns')}'>")
    tasks = nc_task_table(runs)
    parts.append("<h3>Accuracy per upstream task</h3><p>The released aggregator's breakdown (the paper publishes "
                 "none).</p>")
    if tasks.attrs["omitted"]:
        parts.append(f"<p class='note'>Not shown (their records carry no task): "
                     f"{html.escape(', '.join(tasks.attrs['omitted']))}.</p>")
    if len(tasks.columns):
        _save_table(tasks, out / "tables", "nc_tasks")
        parts.append(_html_table(tasks))
    pools = nc_failure_pools(runs)  # the paper pools one judge's labels: never one judge's with another's
    for number, (pool, members) in enumerate(pools, start=1):
        pooled = nc_pooled_failures(members, reference=reference)
        name = "nc_pooled_failures" if len(pools) == 1 else f"nc_pooled_failures_{number}"
        _save_table(pooled, out / "tables", name, "; ".join(
            [f"Pooled over {len(members)} run(s) with {pool}"]
            + ([f"{PAPER_MARK} the paper's Table 5: pooled over its seven models and three sets."] if legend else [])))
        parts.append(f"<h3>Top failures pooled over {len(members)} run(s), {html.escape(pool)}</h3><p>As the paper's "
                     "Table 5: per pattern, over every row of every run and set judged by this judge and read this "
                     "way, the pass rate, the label most failing rows carry and the share of failing rows that carry "
                     "it" + (f"; {PAPER_MARK} columns: the paper's Table 5, pooled over its seven models and three "
                     "sets, for the four patterns it reports" if reference else "") + ".</p>" + _html_table(pooled))
    failures = nc_failures(runs)
    _save_table(failures, out / "tables", "nc_failures")
    parts.append("<h3>Top failure label per run, set and pattern</h3><p>Share of the pattern's failing rows "
                 "that carry the label; the next labels follow.</p>" + _html_table(failures))
    for name, title, frame in judge_tables(runs, published=reference):  # runs judged by several judges
        _save_table(frame, out / "tables", name)
        parts.append(f"<h3>{html.escape(title)}</h3>" + _html_table(frame))
    return parts


def _nico_section(runs: list[Run], out: Path) -> list[str]:
    table, by_type = nico_table(runs), nico_table(runs, by_interaction_type=True)
    _save_table(table, out / "tables", "nico_scores")
    parts = ["<h2>NICO</h2><p>Scores in percent (avg_len in tokens).</p>", _html_table(table)]
    if len(by_type):
        _save_table(by_type, out / "tables", "nico_by_interaction_type")
        parts += ["<h3>By interaction type</h3>", _html_table(by_type)]
    return parts


def _cocoeval_section(runs: list[Run], out: Path) -> list[str]:
    import pandas as pd

    frame = cocoeval_table(runs)
    _save_table(frame, out / "tables", "cocoeval_frequencies")
    parts = ["<h2>CoCoEvalBench</h2>"]
    for run in runs:
        differences = cocoeval_paper_differences(run)
        if differences:
            parts.append(f"<p class='warning not-paper-setup'>{html.escape(run.name)}: not the paper's setup "
                         f"({html.escape('; '.join(differences))}).</p>")
    if len(frame):
        figure = _save_figure(cocoeval_figure(frame), out / "figures", "cocoeval_behaviours")
        parts.append(f"<h3>All sources (the paper's Figure 3)</h3><img alt='Behaviour frequencies' src='{figure}'>")
    by_source = cocoeval_source_table(runs)
    if len(by_source):
        _save_table(by_source, out / "tables", "cocoeval_frequencies_per_source")
        figure = _save_figure(cocoeval_source_figure(by_source), out / "figures", "cocoeval_behaviours_per_source")
        parts.append(f"<h3>Per source (the paper's Table 11, as bars)</h3><img alt='Behaviour frequencies per source' "
                     f"src='{figure}'>")
    ratings = cocoeval_ratings_table(runs)
    if len(ratings):
        _save_table(ratings, out / "tables", "cocoeval_ratings")
        parts += ["<h3>Overall ratings (1-10; the paper's Table 4 layout)</h3><p>Mean judge rating over the compared "
                  "continuations, with percentile-bootstrap 95% intervals (low, high).</p>", _html_table(ratings)]
    rows = []
    for run in runs:
        if "mismatch" in run.results:
            rows.append({"who": run.name, "scale": "mismatch (%, convbench's)", "mean": run.results["mismatch"],
                         "low": run.results.get("intervals", {}).get("mismatch", [None, None])[0],
                         "high": run.results.get("intervals", {}).get("mismatch", [None, None])[1]})
            # the noise floor beside it: what a simulator identical to the humans would score (older runs: n/a)
            rows.append({"who": run.name, "scale": "mismatch noise floor (%, two halves of its human data)",
                         "mean": run.results.get("mismatch_floor"), "low": None, "high": None})
    overall = pd.DataFrame(rows, columns=["who", "scale", "mean", "low", "high"]).drop_duplicates()
    _save_table(overall, out / "tables", "cocoeval_overall")
    parts += ["<h3>Mismatch</h3>", _html_table(overall), _cocoeval_mismatch_note(runs),
              "<h3>Frequencies</h3>", _html_table(frame)]
    return parts


def _cocoeval_mismatch_note(runs: list[Run]) -> str:
    """What the mismatch is (convbench's, with a noise floor) and each run's cut simulation replies."""
    cuts = "; ".join(f"{html.escape(r.name)}: {r.results.get('simulation_cut_replies', 0)} cut replies, "
                     f"{r.results.get('excluded', {}).get('simulation_cut', 0)} instances excluded" for r in runs)
    return ("<p>The mismatch is convbench's addition, not a statistic of the CoCoEval paper: total absolute "
            "difference of the per-type means over the total human mean. Sampling noise keeps it above 0 even "
            "for a simulator identical to the humans; the floor row estimates that level from two halves of the "
            "human data. Simulation replies cut at the token limit (asked again once with twice the limit; a "
            f"second cut excludes the instance): {cuts}.</p>")


def errors_note(runs: list[Run]) -> str:
    """Each run's per-row errors (requests that failed for good): counted apart, and failures in the scores."""
    counts = "; ".join(f"{html.escape(r.name)}: {r.results.get('errors', 0)} of {r.results.get('n', len(r.records))} rows"
                       for r in runs)
    return (f"<p class='errors'>Per-row errors (requests refused or without a usable answer; they count as "
            f"failures, or for CoCoEval as excluded instances): {counts}.</p>")


SECTIONS = {"nc": _nc_section, "nico": _nico_section, "cocoeval": _cocoeval_section}


def _results_section(runs: list[Run], out: Path) -> list[str]:
    """A benchmark without a section of its own (one an installed package registers): each run's numeric
    top-level results, one column per run, named after the benchmark (``tables/<benchmark>_results``)."""
    import pandas as pd

    name = runs[0].benchmark
    rows: dict[str, dict[str, Any]] = {}
    for run in runs:
        for key, value in run.results.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                rows.setdefault(key, {})[run.name] = value
    table = pd.DataFrame.from_dict(rows, orient="index").rename_axis("result")
    _save_table(table, out / "tables", f"{name}_results")
    return [f"<h2>{html.escape(name)}</h2><p>The runs' numeric results, as each run's results.json holds them.</p>",
            _html_table(table)]


def write_report(paths: list[str | os.PathLike[str]], out: str | os.PathLike[str], reference: bool = True) -> Path:
    """Write ``report.html`` (self-contained), ``figures/`` and ``tables/`` into ``out``; returns the page.

    ``reference`` (default) shows the NC-Bench paper's published results beside the runs, marked;
    ``reference=False`` (``convbench report --no-reference``) leaves them out.

    ``out`` must be missing, empty or an earlier report (its ``.convbench-build`` marker lists the files
    it wrote); anything else is refused before any work, untouched. The report is written into a staging
    folder beside ``out`` and swapped in whole, so a report that fails leaves the earlier one as it was
    and no file is ever written through a symbolic link (see :func:`convbench_datasets.out_folder.staged`).
    """
    require("convbench report", "matplotlib", "pandas")  # one line naming the extra, before any work
    replaceable_entries(Path(out).resolve(), kind="report")  # a user's folder: refused before any work
    runs = load_runs(paths)
    with staged(out, "convbench report", kind="report") as folder:
        _write_page(runs, folder, reference)
    return Path(out).resolve() / "report.html"


def _write_page(runs: list[Run], folder: Path, reference: bool) -> None:
    parts = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>convbench report</title>"
             f"<style>{_STYLE}</style></head><body><h1>convbench report</h1>"
             f"<p>{len(runs)} run(s); made by convbench {html.escape(__version__)}.</p>"]
    for benchmark, section in SECTIONS.items():
        chosen = [r for r in runs if r.benchmark == benchmark]
        if chosen:
            parts += section(chosen, folder, reference) if benchmark == "nc" else section(chosen, folder)
            parts.append(errors_note(chosen))
    for benchmark in dict.fromkeys(r.benchmark for r in runs if r.benchmark not in SECTIONS):
        chosen = [r for r in runs if r.benchmark == benchmark]
        parts += _results_section(chosen, folder)
        parts.append(errors_note(chosen))
    parts.append("<h2>Signatures</h2>")
    for run in runs:
        signature = json.dumps(run.signature, indent=2, ensure_ascii=False)
        parts.append(f"<h3>{html.escape(run.name)}</h3><pre>{html.escape(signature, quote=False)}</pre>")
    parts.append("</body></html>")
    (folder / "report.html").write_text("\n".join(parts), encoding="utf-8")
