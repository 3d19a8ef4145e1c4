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
setup departs from the paper's. Each cell of a run gives the rows it is computed from (``45.00 (n=20)``,
``*`` under 10 rows: :mod:`.cells`), and a run of part of the rows (``--sample``, ``--limit``, ``--shard``)
says so in its header and in a line at the top of the page.
"""

from __future__ import annotations

import base64
import html
import io
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .._version import __version__
from ..extras import require
from ..out_folder import replaceable_entries, staged
from .cells import as_count, count_legend, counted_text, is_small, with_counts
from .figures import MISSING
from .runs import Run, load_runs, partial_note

PAPER_MARK = "†"  # marks a published column (a paper's numbers, not re-run here) in every table format

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2rem;max-width:80rem;color:#222}
table{border-collapse:collapse;margin:.5rem 0 1.5rem;font-size:.85rem}
th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:right}th{background:#f3f3f3}
td:first-child,th:first-child{text-align:left}.ns{color:#999}pre{background:#f7f7f7;padding:.5rem;font-size:.75rem}
img{max-width:100%}th.paper,td.paper{background:#eef3fb;color:#345;font-style:italic}
.warning{color:#8a1c1c;font-weight:bold}.note{color:#555}
td.small-n{background:#fff4e0}span.n{color:#777;font-size:.75rem}.partial-run{color:#8a5a00}
"""


Counts = Any  # a DataFrame of row counts (wide tables) or {value column: count column} (long tables)


def _flat(frame: Any) -> Any:
    return frame.reset_index() if frame.index.name or getattr(frame.index, "names", [None])[0] else frame


def _count_grid(frame: Any, flat: Any, counts: Counts | None) -> list[list[tuple[int | None, bool]]]:
    """Per cell of ``flat`` (``frame`` with its index as columns): (its row count or None, whether to show
    it as ``(n=N)``). ``counts``: a DataFrame with ``frame``'s index and some of its columns (wide tables:
    shown), or ``{value column: count column}`` of the frame's own columns (long tables: the count is in
    its column, the value gets the mark only)."""
    columns = list(flat.columns)
    grid: list[list[tuple[int | None, bool]]] = [[(None, False)] * len(columns) for _ in range(len(flat))]
    if counts is None:
        return grid
    if isinstance(counts, Mapping):
        sources = {j: (flat[counts[c]].tolist(), False) for j, c in enumerate(columns) if c in counts}
    else:
        aligned = counts.reindex(index=frame.index)
        sources = {j: (aligned[c].tolist(), True) for j, c in enumerate(columns) if c in aligned.columns}
    for j, (values, shown) in sources.items():
        for i, value in enumerate(values):
            grid[i][j] = (as_count(value), shown)
    return grid


def _header(column: Any, headers: Mapping[Any, str] | None) -> str:
    return str((headers or {}).get(column, column))


def markdown_table(frame: Any, counts: Counts | None = None, headers: Mapping[Any, str] | None = None) -> str:
    """A Markdown table; ``counts`` (see :func:`save_table`) writes a run's cell as ``45.00 (n=20)``, marked
    ``*`` under 10 rows; ``headers`` renames columns (a run's label)."""
    flat = _flat(frame)
    header = [_header(c, headers) for c in flat.columns]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row, row_counts in zip(flat.itertuples(index=False), _count_grid(frame, flat, counts)):
        lines.append("| " + " | ".join(counted_text(_cell(v), n, shown) if not _missing(v) else _cell(v)
                                       for v, (n, shown) in zip(row, row_counts)) + " |")
    return "\n".join(lines) + "\n"


def _missing(value: Any) -> bool:
    import pandas as pd

    return bool(pd.api.types.is_scalar(value) and pd.isna(value))


def _cell(value: Any) -> str:
    import pandas as pd

    if pd.api.types.is_scalar(value) and pd.isna(value):
        return MISSING  # None, NaN, pd.NA: not scored (an interval not computed), never 0 nor "None"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value).replace("|", "\\|")


def html_table(frame: Any, marks: dict[tuple[Any, str], str] | None = None, counts: Counts | None = None,
               headers: Mapping[Any, str] | None = None) -> str:
    """An HTML table; ``marks`` adds a note to a cell ((index key, column) -> "n.s."); a column whose
    header carries the published mark (†) gets class ``paper``. ``counts`` (see :func:`save_table`) shows
    a run's cell as ``45.00 (n=20)``, one under 10 rows marked ``*`` with class ``small-n``, and a legend
    line after the table; ``headers`` renames columns (a run's label)."""
    flat = _flat(frame)
    paper = [str(c).endswith(PAPER_MARK) for c in flat.columns]
    head = "".join(f"<th{' class=paper' if p else ''}>{html.escape(_header(c, headers))}</th>"
                   for c, p in zip(flat.columns, paper))
    body = []
    grid = _count_grid(frame, flat, counts)
    for key, row, row_counts in zip(frame.index, flat.itertuples(index=False), grid):
        cells = []
        for column, value, published, (n, shown) in zip(flat.columns, row, paper, row_counts):
            mark = (marks or {}).get((key, str(column)))
            n = None if _missing(value) else n
            text = html.escape(counted_text(_cell(value), n, show_n=False))
            if n is not None and shown:
                text += f" <span class=n>(n={n})</span>"
            text += f" <span class='ns'>{mark}</span>" if mark else ""
            classes = ["ns"] if mark else ["paper"] if published else []
            classes += ["small-n"] if is_small(n) else []
            cells.append(f"<td{_classes(classes)}>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    counted = [n for row in grid for n, _ in row if n is not None]
    legend = _legend(counts, counted)
    if legend:
        table += f"<p class='note n-legend'>{html.escape(legend)}</p>"
    return table


def _legend(counts: Counts | None, counted: list[int]) -> str | None:
    if not counted:
        return None
    return count_legend(any(map(is_small, counted)), dict(counts) if isinstance(counts, Mapping) else None)


def _classes(classes: list[str]) -> str:
    return "" if not classes else f" class={classes[0]}" if len(classes) == 1 else f" class='{' '.join(classes)}'"


def save_figure(fig: Any, folder: Path, name: str) -> str:
    """Write PNG and SVG files and return the PNG as a data URI for the page."""
    folder.mkdir(parents=True, exist_ok=True)
    fig.savefig(folder / f"{name}.svg", metadata={"Date": None})
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, metadata={"Software": None})
    (folder / f"{name}.png").write_bytes(buffer.getvalue())
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def save_table(frame: Any, folder: Path, name: str, legend: str | None = None, *, counts: Counts | None = None,
               headers: Mapping[Any, str] | None = None) -> None:
    """CSV and Markdown; ``legend`` (what a mark in the headers means) is the Markdown's last line. The CSV
    stays plain data for other programs: its headers carry the mark and say "(paper, Table N)".

    ``counts``, the rows each cell of a run is computed from: a DataFrame with the frame's index and the
    runs' columns (a wide table): the Markdown shows ``45.00 (n=20)`` (``25.00* (n=4)`` under 10 rows, with
    a legend line), the CSV has a count column ``"<run> n"`` after each run's column; or ``{value column:
    count column}`` for a long table that holds its counts (``n``): the Markdown marks a value under 10 rows.
    ``headers`` renames columns in both files (a run's label: ``hf:m (sample of 40)``)."""
    folder.mkdir(parents=True, exist_ok=True)
    csv = frame if counts is None or isinstance(counts, Mapping) else with_counts(frame, counts)
    renamed = {**(headers or {}), **{f"{c} n": f"{h} n" for c, h in (headers or {}).items()}}
    csv.rename(columns=renamed).to_csv(folder / f"{name}.csv")
    lines = [legend] if legend else []
    if counts is not None:
        flat = _flat(frame)
        counted = [n for row in _count_grid(frame, flat, counts) for n, _ in row if n is not None]
        explained = _legend(counts, counted)
        if explained:
            lines.insert(0, explained)
    legends = "".join(f"\n{line}\n" for line in lines)
    (folder / f"{name}.md").write_text(markdown_table(frame, counts, headers) + legends, encoding="utf-8")


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
    for run in runs:  # a run of part of the rows: said before any number (its headers say it too)
        note = partial_note(run)
        if note:
            parts.append(f"<p class='partial-run'>{html.escape(note)}</p>")
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
