"""``convbench report``: one self-contained HTML page (no network: images inline), plus PNG/SVG figures
and CSV/Markdown tables, from one or more run folders.

The page holds, per benchmark present, the section its package's ``report`` module writes (a benchmark
without one: a table of its runs' numeric results), then every run's signature. convbench's sections:
NC-Bench's tables in the paper's layout, one per set, with the
paper's published models beside the runs (marked † and shaded; ``reference=False`` hides them) and a
note when a run's setup differs from the paper's, the repeat baseline's judge sanity (a warning below
90%), a per-pattern bar chart, per-task accuracy, the top failure labels pooled over the runs of each judge
(and reading of its answers) beside the paper's Table 5 and per run, and paired comparisons of the first run with each other one (differences
that are not significant at 5% are marked "n.s."); NICO's metric tables; CoCoEval's grouped behaviour
frequencies with interval whiskers, over all sources (the paper's Figure 3) and per source (its Table 11
as bars), the overall ratings in its Table 4 layout and the mismatch, with a note for each run whose
setup departs from the paper's.
"""

from __future__ import annotations

import base64
import html
import io
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._version import __version__
from ..extras import require
from ..out_folder import replaceable_entries, staged
from .figures import MISSING
from .runs import Run, load_runs

PAPER_MARK = "†"  # marks a published column (a paper's numbers, not re-run here) in every table format

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


def html_table(frame: Any, marks: dict[tuple[Any, str], str] | None = None) -> str:
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


def save_figure(fig: Any, folder: Path, name: str) -> str:
    """Write PNG and SVG files and return the PNG as a data URI for the page."""
    folder.mkdir(parents=True, exist_ok=True)
    fig.savefig(folder / f"{name}.svg", metadata={"Date": None})
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, metadata={"Software": None})
    (folder / f"{name}.png").write_bytes(buffer.getvalue())
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def save_table(frame: Any, folder: Path, name: str, legend: str | None = None) -> None:
    """CSV and Markdown; ``legend`` (what a mark in the headers means) is the Markdown's last line. The CSV
    stays plain data for other programs: its headers carry the mark and say "(paper, Table N)"."""
    folder.mkdir(parents=True, exist_ok=True)
    frame.to_csv(folder / f"{name}.csv")
    (folder / f"{name}.md").write_text(markdown_table(frame) + (f"\n{legend}\n" if legend else ""), encoding="utf-8")


def errors_note(runs: list[Run]) -> str:
    """Each run's per-row errors (requests that failed for good): counted apart, and failures in the scores."""
    counts = "; ".join(f"{html.escape(r.name)}: {r.results.get('errors', 0)} of {r.results.get('n', len(r.records))} rows"
                       for r in runs)
    return (f"<p class='errors'>Per-row errors (requests refused or without a usable answer; they count as "
            f"failures, or for CoCoEval as excluded instances): {counts}.</p>")


def section_of(benchmark: str) -> Callable[[list[Run], Path, bool], list[str]]:
    """The page section of ``benchmark``: ``section(runs, out, reference)`` in its package's ``report``
    module (``convbench_datasets/nc/report.py``), else :func:`results_section`."""
    import importlib
    import importlib.util

    from ..registry import registered

    package = registered().get(benchmark)
    if package is not None and importlib.util.find_spec(f"{package}.report") is not None:
        return importlib.import_module(f"{package}.report").section  # type: ignore[no-any-return]
    return results_section


def results_section(runs: list[Run], out: Path, reference: bool = True) -> list[str]:
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
    save_table(table, out / "tables", f"{name}_results")
    return [f"<h2>{html.escape(name)}</h2><p>The runs' numeric results, as each run's results.json holds them.</p>",
            html_table(table)]


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
    from ..registry import registered

    order = list(registered())  # the registry's order, then benchmarks it no longer knows
    for benchmark in sorted(dict.fromkeys(r.benchmark for r in runs), key=lambda b: order.index(b) if b in order else len(order)):
        chosen = [r for r in runs if r.benchmark == benchmark]
        parts += section_of(benchmark)(chosen, folder, reference)
        parts.append(errors_note(chosen))
    parts.append("<h2>Signatures</h2>")
    for run in runs:
        signature = json.dumps(run.signature, indent=2, ensure_ascii=False)
        parts.append(f"<h3>{html.escape(run.name)}</h3><pre>{html.escape(signature, quote=False)}</pre>")
    parts.append("</body></html>")
    (folder / "report.html").write_text("\n".join(parts), encoding="utf-8")
