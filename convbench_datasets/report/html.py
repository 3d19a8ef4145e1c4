"""``convbench report``: one self-contained HTML page (no network: images inline), plus PNG/SVG figures
and CSV/Markdown tables, from one or more run folders.

The page holds, per benchmark present: NC-Bench's table in the paper's layout, a per-pattern bar chart
and the top failure labels, and paired comparisons of the first run with each other one (differences
that are not significant at 5% are marked "n.s."); NICO's metric tables; CoCoEval's grouped behaviour
frequencies with interval whiskers and the overall ratings; and every run's signature.
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
from ..scoring.paired import compare_nc_runs
from .figures import MISSING, cocoeval_figure, nc_figure
from .runs import Run, load_runs
from .tables import cocoeval_table, nc_failures, nc_table, nico_table

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2rem;max-width:80rem;color:#222}
table{border-collapse:collapse;margin:.5rem 0 1.5rem;font-size:.85rem}
th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:right}th{background:#f3f3f3}
td:first-child,th:first-child{text-align:left}.ns{color:#999}pre{background:#f7f7f7;padding:.5rem;font-size:.75rem}
img{max-width:100%}
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
    flat = frame.reset_index() if frame.index.name or getattr(frame.index, "names", [None])[0] else frame
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in flat.columns)
    body = []
    for key, row in zip(frame.index, flat.itertuples(index=False)):
        cells = []
        for column, value in zip(flat.columns, row):
            mark = (marks or {}).get((key, str(column)))
            text = html.escape(_cell(value)) + (f" <span class='ns'>{mark}</span>" if mark else "")
            cells.append(f"<td{' class=ns' if mark else ''}>{text}</td>")
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


def _save_table(frame: Any, folder: Path, name: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    frame.to_csv(folder / f"{name}.csv")
    (folder / f"{name}.md").write_text(markdown_table(frame), encoding="utf-8")


def _nc_section(runs: list[Run], out: Path) -> list[str]:
    import pandas as pd

    table = nc_table(runs)
    _save_table(table, out / "tables", "nc_accuracy")
    parts = ["<h2>NC-Bench</h2><p>Accuracy (%) per pattern; set and overall rows are row-weighted averages.</p>"]
    marks: dict[tuple[Any, str], str] = {}
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
        for set_name, pattern in table.index:
            if set_name == "Overall":
                test = result["overall"]
            elif pattern == "Overall":
                test = result["per_set"].get(set_name)
            else:
                test = result["per_set_pattern"].get(f"{set_name}/{pattern}")
            if test is not None and not test["significant"]:
                marks[((set_name, pattern), other.name)] = "n.s."
    parts.append(_html_table(table, marks))
    if comparisons:
        frame = pd.DataFrame(comparisons)
        _save_table(frame, out / "tables", "nc_comparisons")
        parts.append(f"<h3>Paired comparisons with {html.escape(base.name)}</h3>"
                     "<p>Paired bootstrap and approximate randomisation over the same rows; "
                     "n.s. marks differences not significant at 5%.</p>" + _html_table(frame))
    parts.append(f"<img alt='NC-Bench accuracy per pattern' src='{_save_figure(nc_figure(table), out / 'figures', 'nc_patterns')}'>")
    failures = nc_failures(runs)
    _save_table(failures, out / "tables", "nc_failures")
    parts.append("<h3>Top failure label per set and pattern</h3><p>Share of the pattern's failing rows "
                 "that carry the label; the next labels follow.</p>" + _html_table(failures))
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
    if len(frame):
        parts.append(f"<img alt='Behaviour frequencies' src='{_save_figure(cocoeval_figure(frame), out / 'figures', 'cocoeval_behaviours')}'>")
    rows = []
    for run in runs:
        for side, who in (("model", run.name), ("human", "human")):
            for scale, value in run.results.get("overall", {}).get(side, {}).items():
                rows.append({"who": who, "scale": scale, "mean": value["mean"], "low": value["interval"][0],
                             "high": value["interval"][1]})
        if "mismatch" in run.results:
            rows.append({"who": run.name, "scale": "mismatch (%)", "mean": run.results["mismatch"],
                         "low": run.results.get("intervals", {}).get("mismatch", [None, None])[0],
                         "high": run.results.get("intervals", {}).get("mismatch", [None, None])[1]})
    overall = pd.DataFrame(rows, columns=["who", "scale", "mean", "low", "high"]).drop_duplicates()
    _save_table(overall, out / "tables", "cocoeval_overall")
    parts += ["<h3>Overall ratings (1-10) and mismatch</h3>", _html_table(overall), "<h3>Frequencies</h3>", _html_table(frame)]
    return parts


def errors_note(runs: list[Run]) -> str:
    """Each run's per-row errors (requests that failed for good): counted apart, and failures in the scores."""
    counts = "; ".join(f"{html.escape(r.name)}: {r.results.get('errors', 0)} of {r.results.get('n', len(r.records))} rows"
                       for r in runs)
    return (f"<p class='errors'>Per-row errors (requests refused or without a usable answer; they count as "
            f"failures, or for CoCoEval as excluded instances): {counts}.</p>")


SECTIONS = {"nc": _nc_section, "nico": _nico_section, "cocoeval": _cocoeval_section}


def write_report(paths: list[str | os.PathLike[str]], out: str | os.PathLike[str]) -> Path:
    """Write ``report.html`` (self-contained), ``figures/`` and ``tables/`` into ``out``; returns the page."""
    runs = load_runs(paths)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    parts = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>convbench report</title>"
             f"<style>{_STYLE}</style></head><body><h1>convbench report</h1>"
             f"<p>{len(runs)} run(s); made by convbench {html.escape(__version__)}.</p>"]
    for benchmark, section in SECTIONS.items():
        chosen = [r for r in runs if r.benchmark == benchmark]
        if chosen:
            parts += section(chosen, folder)
            parts.append(errors_note(chosen))
    parts.append("<h2>Signatures</h2>")
    for run in runs:
        signature = json.dumps(run.signature, indent=2, ensure_ascii=False)
        parts.append(f"<h3>{html.escape(run.name)}</h3><pre>{html.escape(signature, quote=False)}</pre>")
    parts.append("</body></html>")
    page = folder / "report.html"
    page.write_text("\n".join(parts), encoding="utf-8")
    return page
