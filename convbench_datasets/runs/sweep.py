"""``convbench sweep FILE.yaml``: run models x benchmarks x settings from one file, resumably, then one report.

:func:`run_sweep` reads and checks the whole file first (:mod:`.sweep_file`: nothing runs if any part
of it is wrong), then runs its cells one after another, each through its benchmark's run function into
``out/<benchmark>/<model>/<settings>/`` (a run folder like ``convbench run`` writes). After each cell
``out/sweep.json`` records it (atomically): benchmark, model, settings, judges, folder, status
(``ok``, ``failed``, ``interrupted``), error, seconds and the sha256 of the cell's definition. A cell
that fails (a server that cannot be reached, rows left without an answer, any error) is recorded and
the sweep goes on; Ctrl-C stops it, after saving ``sweep.json``.

Run again, the same file skips every cell recorded ``ok`` with the same definition (its folder still
holding its results) whose results a run now would sign the same way: made by this convbench version,
over the same rows (the fingerprint of the rows it would read now, so that a dataset rebuilt in place
is noticed). A failed or interrupted cell runs again, as does one whose definition changed or whose
results are out of date (its line says why), and a cell interrupted half way resumes through the
response cache. ``rerun=True`` runs every cell. A cell's folder depends on its own definition only
(see :mod:`.sweep_file`), so a cell added to the file never renames another.

At the end one report over every ok cell goes to ``out/report/`` (``convbench report``'s page; skipped,
with a note, without the report extra). Nothing of a user's is replaced: ``out`` may be any folder,
a cell folder must be missing, empty or a run folder, ``out/report`` missing, empty or a report, and a
``sweep.json`` that convbench did not write (no ``convbench_sweep`` key) is refused.

Example (a dry run: the file is checked and its cells listed; nothing runs):
    >>> import tempfile
    >>> from convbench_datasets.registry import run_benchmarks
    >>> name = next(b.name for b in run_benchmarks() if b.judges == (0, 0))  # a benchmark that takes no judge
    >>> plan = run_sweep({"out": tempfile.mkdtemp(), "models": ["baseline:repeat", "baseline:silence"],
    ...                   "benchmarks": {name: {"task": "open_domain", "shots": [0, 3]}}}, dry_run=True)
    >>> [cell.name.split("/", 1)[1] for cell in plan.cells]
    ['baseline-repeat/shots=0,task=open_domain', 'baseline-silence/shots=0,task=open_domain', 'baseline-repeat/shots=3,task=open_domain', 'baseline-silence/shots=3,task=open_domain']
    >>> {cell.status for cell in plan.cells}
    {'to run'}
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._version import __version__
from ..errors import ConvbenchError
from ..out_folder import replaceable_entries
from ..engine.run_folder import check_run_out, hold_lock, write_atomic
from ..engine.sample import stratified_sample
from ..engine.backends import make_role
from .pipeline import run_config
from .run_config import Rows, RunConfig, bench_settings
from .sweep_file import CellDefinition, SweepFile, read_sweep

MARKER = "convbench_sweep"  # the key that makes a sweep.json convbench's own (its value: the format version)
FORMAT = 1
STATE = "sweep.json"
REPORT = "report"
HEADLINE_CHARS = 100  # of a cell's headline in the summary table (its results hold everything)

logger = logging.getLogger(__name__)


@dataclass
class Cell:
    """One cell of a sweep and how it went."""

    name: str  # its folder under the sweep's ``out``: benchmark/model/settings
    folder: Path
    benchmark: str
    model: str  # the model's spec
    judges: list[str]  # the judges' specs
    settings: dict[str, Any]  # the benchmark's run keywords
    limit: int | None
    dataset: str | None  # the build it reads (None: the benchmark's default)
    digest: str  # sha256 of its definition
    status: str = "to run"  # to run, ok, failed, interrupted
    error: str | None = None
    seconds: float | None = None
    headline: str | None = None  # the first line of its benchmark's summary (ok cells)
    ran: bool = False  # run by this call (False: done before and skipped, or a dry run)
    note: str | None = None  # why a cell done before runs again (its results are out of date), or a caveat

    def record(self) -> dict[str, Any]:
        """Its entry in ``sweep.json``."""
        return {"folder": self.name, "benchmark": self.benchmark, "model": self.model, "judges": self.judges,
                "settings": self.settings, "limit": self.limit, "dataset": self.dataset, "status": self.status, "error": self.error, "seconds": self.seconds,
                "headline": self.headline, "hash": self.digest}


@dataclass
class SweepResult:
    """What :func:`run_sweep` did: every cell in the file's order, and the report (None: not written,
    ``report_note`` says why)."""

    out: Path
    cells: list[Cell]
    shape: str
    dry_run: bool = False
    report: Path | None = None
    report_note: str | None = None
    report_failed: bool = False
    retired: list[dict[str, Any]] = field(default_factory=list)  # sweep.json's cells no longer in the file

    @property
    def failed(self) -> list[Cell]:
        return [cell for cell in self.cells if cell.status in ("failed", "interrupted")]

    @property
    def exit_code(self) -> int:
        """1 when a cell failed or the report could not be written, else 0."""
        return 1 if self.failed or self.report_failed else 0

    def lines(self) -> list[str]:
        """The table a terminal shows: one line per cell (folder, status, headline or error), then totals."""
        if self.dry_run:
            return self._plan_lines()
        rows = []
        for cell in self.cells:
            status = cell.status if cell.ran or cell.status != "ok" else "ok (done before)"
            text = cell.error if cell.status != "ok" else cell.headline or ""
            rows.append((cell.name, status, _cut(text or "")))
        lines = _table(("cell", "status", "result or error"), rows)
        ok = [cell for cell in self.cells if cell.status == "ok"]
        before = sum(not cell.ran for cell in ok)
        lines.append(f"{len(self.cells)} cells: {len(ok)} ok" + (f" ({before} done before)" if before else "")
                     + (f", {len(self.failed)} failed" if self.failed else "") + f"; {self.out / STATE}")
        lines.append(f"report: {self.report}" if self.report else f"report: none ({self.report_note})")
        return lines

    def _plan_lines(self) -> list[str]:
        rows = [(cell.name, cell.model, _settings_text(cell.settings), ", ".join(cell.judges) or "-",
                 "all" if cell.limit is None else str(cell.limit),
                 cell.status + (f" ({cell.note})" if cell.note else "")) for cell in self.cells]
        waiting = sum(cell.status == "to run" for cell in self.cells)
        return [f"{len(self.cells)} cells ({self.shape}) into {self.out}; dry run: nothing run",
                *_table(("folder", "model", "settings", "judges", "limit", "state"), rows),
                f"{waiting} to run, {len(self.cells) - waiting} done before (same definition)"]


def run_sweep(source: str | os.PathLike[str] | Mapping[str, Any], *, dry_run: bool = False, rerun: bool = False,
              progress: bool = True, echo: Callable[[str], None] | None = None) -> SweepResult:
    """Run the cells of a sweep file (a YAML path, or its content as a mapping); see the module docstring.

    Args:
        dry_run: check the file and list its cells (``status``: ``to run`` or ``ok``, done before) without
            running any.
        rerun: run every cell, including those done before with the same definition.
        progress: the runs' progress bars; and, when ``echo`` is None, a line per cell on stderr.
        echo: where the line per cell (starting, finished) goes (``convbench sweep``: stderr, always).

    Raises ConvbenchError for a problem in the file (all of them, each under its key path), a foreign
    ``sweep.json`` or a folder that is not convbench's, before any cell runs; a failing cell does not
    raise (see ``SweepResult.failed`` and ``exit_code``).
    """
    sweep = read_sweep(source)
    if echo is None:
        echo = _stderr if progress else _silent
    result = _prepare(sweep, rerun, dry_run)  # refuses a foreign sweep.json or folder before anything is written
    if dry_run:
        return result
    out = sweep.out
    out.mkdir(parents=True, exist_ok=True)
    with _sweep_lock(out):
        result = _prepare(sweep, rerun, dry_run)  # again, now that no other sweep can write there
        cells = result.cells
        definitions = {cell.name: definition for cell, definition in zip(cells, sweep.cells)}
        for number, cell in enumerate(cells, start=1):
            where = f"[{number}/{len(cells)}] {cell.name}"
            if cell.status == "ok":
                echo(f"{where}: done before (same definition), skipped" + (f"; {cell.note}" if cell.note else ""))
                continue
            echo(f"{where}: running" + (f" again: {cell.note}" if cell.note else ""))
            _run_cell(cell, definitions[cell.name], sweep, progress, result)
            echo(f"{where}: {cell.status} in {cell.seconds:.1f} s" + (f": {cell.error}" if cell.error else ""))
        _save(result, sweep)
        _report(result)
        _save(result, sweep)
    return result


def _prepare(sweep: SweepFile, rerun: bool, dry_run: bool) -> SweepResult:
    """The sweep's cells, each ``ok`` (done before) or ``to run``, after checking ``out`` is convbench's to
    write; the records of ``sweep.json`` whose cells left the file are kept as ``retired``."""
    state = _read_state(sweep.out)
    _check_out(sweep.out, sweep.cells)
    cells = _cells(sweep, state, rerun)
    kept = {cell.name for cell in cells}
    retired = [record for record in [*state.get("retired", []), *state.get("cells", [])]
               if isinstance(record, dict) and record.get("folder") not in kept]
    return SweepResult(sweep.out, cells, sweep.shape, dry_run=dry_run, retired=_latest(retired))


def _run_cell(cell: Cell, definition: CellDefinition, sweep: SweepFile, progress: bool, result: SweepResult) -> None:
    """Run one cell and record it (``sweep.json`` saved after); a failure is the cell's, Ctrl-C the sweep's."""
    from ..registry import get_benchmark

    bench = get_benchmark(cell.benchmark)
    began = time.monotonic()
    cell.ran, cell.error, cell.headline = True, None, None
    try:
        settings = dict(definition.settings)
        sample = settings.pop("sample", None)  # a block's sample is the run's rows, not a benchmark setting
        # a judge with the model's spec and options is the model's role itself: the run shares it (one local model)
        config = RunConfig(benchmark=bench.name, model=make_role(definition.model.spec, definition.model.options),
                           out=os.fspath(cell.folder), settings=bench_settings(bench, settings),
                           judges=tuple(make_role(j.spec, j.options) for j in definition.judges),
                           rows=Rows(limit=definition.limit, sample=sample), cache=sweep.cache, dataset=definition.dataset,
                           sources=sweep.sources, progress=progress, retry_errors=definition.retry_errors,
                           max_error_rate=definition.max_error_rate, max_empty_rate=definition.max_empty_rate,
                           max_unparsed_rate=definition.max_unparsed_rate, concurrency=definition.concurrency)
        run = run_config(config, bench)
        cell.status, cell.headline = "ok", _headline(bench, run.results)
        for line in bench.warnings(run.results):
            warnings.warn(f"{cell.name}: {line}", stacklevel=2)
    except KeyboardInterrupt:
        cell.status, cell.error = "interrupted", "interrupted (Ctrl-C)"
        cell.seconds = round(time.monotonic() - began, 3)
        _save(result, sweep)
        raise
    except ConvbenchError as err:
        cell.status, cell.error = "failed", str(err)
    except Exception as err:  # a bug or an unexpected condition: the cell's, not the sweep's
        logger.debug("cell %s failed", cell.name, exc_info=True)
        cell.status, cell.error = "failed", f"{type(err).__name__}: {err}"
    cell.seconds = round(time.monotonic() - began, 3)
    _save(result, sweep)


def _cells(sweep: SweepFile, state: dict[str, Any], rerun: bool) -> list[Cell]:
    """The file's cells, each ``ok`` (done before: recorded ok with the same definition, its results
    still there and up to date, see :func:`_out_of_date`) or ``to run``."""
    from ..registry import get_benchmark

    previous = {record.get("folder"): record for record in state.get("cells", []) if isinstance(record, dict)}
    fingerprints: dict[str, tuple[str | None, str | None]] = {}  # cells that read the same rows read them once
    cells = []
    for definition in sweep.cells:
        cell = Cell(definition.name, sweep.out / definition.name, definition.benchmark, definition.model.spec,
                    [judge.spec for judge in definition.judges], definition.settings, definition.limit,
                    definition.dataset, definition.digest())
        record = previous.get(cell.name, {})
        if not rerun and record.get("status") == "ok" and record.get("hash") == cell.digest:
            results = _results(cell.folder)
            signature = results.get("signature") if results is not None else None
            if isinstance(signature, dict) and signature.get("benchmark") == cell.benchmark:
                stale, caveat = _out_of_date(definition, signature, sweep, fingerprints)
                if stale is None:
                    cell.status, cell.seconds, cell.note = "ok", record.get("seconds"), caveat
                    cell.headline = _headline(get_benchmark(cell.benchmark), results)  # type: ignore[arg-type]
                else:
                    cell.note = stale
        cells.append(cell)
    return cells


def _out_of_date(definition: CellDefinition, signature: dict[str, Any], sweep: SweepFile,
                 fingerprints: dict[str, tuple[str | None, str | None]]) -> tuple[str | None, str | None]:
    """(why a done cell's results are not what a run now would give, or None; a caveat, or None).

    What every benchmark's signature holds and is cheap to compare: the convbench version (prompts and
    scoring may have changed with it) and the fingerprint of the rows the cell reads (limit applied, as
    :func:`.pipeline.common_signature` takes it): its definition names the dataset by path, and a
    dataset rebuilt in place keeps the path. Rows that cannot be read now are not compared (a caveat):
    the cell's results stand until they can be."""
    from ..registry import get_benchmark
    from ..engine.run_folder import dataset_fingerprint

    if signature.get("convbench_version") != __version__:
        return (f"its results were made by convbench {signature.get('convbench_version')}, this is {__version__} "
                "(answers come from the cache)"), None
    key = json.dumps([definition.benchmark, definition.settings, definition.dataset, definition.limit],
                     sort_keys=True, default=str)
    if key not in fingerprints:
        try:
            settings = dict(definition.settings)
            sample = settings.pop("sample", None)  # the run's keyword (engine/sample.py), not the plan's
            bench = get_benchmark(definition.benchmark)
            rows = bench.plan(settings, dataset=definition.dataset, sources=sweep.sources).rows()
            if definition.limit is not None:
                rows = rows[:definition.limit]
            if sample is not None:
                rows = stratified_sample(rows, sample, getattr(bench, "strata", ()))
            fingerprints[key] = (dataset_fingerprint(rows), None)
        except Exception as err:  # noqa: BLE001 (not compared; running it would fail the same way)
            logger.debug("rows of %s not read", definition.name, exc_info=True)
            fingerprints[key] = (None, f"its rows could not be read to compare with its results ({err})")
    fingerprint, caveat = fingerprints[key]
    if fingerprint is not None and fingerprint != signature.get("dataset_fingerprint"):
        return (f"the rows it reads changed since it ran (dataset fingerprint {fingerprint}, its results' "
                f"{signature.get('dataset_fingerprint')}; answers come from the cache)"), None
    return None, caveat


def _results(folder: Path) -> dict[str, Any] | None:
    """A run folder's results, or None when they are missing or unreadable (the cell then runs again)."""
    from ..jsonfiles import read_json

    if not (folder / "results.json").is_file() or not (folder / "records.jsonl").is_file():
        return None
    try:
        return read_json(folder / "results.json")
    except ConvbenchError:
        return None


def _headline(bench: Any, results: dict[str, Any]) -> str | None:
    try:
        lines = bench.summary(results)
    except Exception:  # noqa: BLE001 (a summary of an older run that lacks a field: no headline, not an error)
        return None
    return lines[0] if lines else None


def _read_state(out: Path) -> dict[str, Any]:
    """``out/sweep.json`` (empty when there is none); one convbench did not write is refused."""
    from ..jsonfiles import read_json

    path = out / STATE
    if not path.exists():
        return {}
    if not path.is_file():
        raise ConvbenchError(f"{path} exists and is not a file; give the sweep another `out`")
    try:
        state = read_json(path)
    except ConvbenchError as err:
        raise ConvbenchError(f"{err}; it is not a sweep record convbench wrote: give the sweep another `out`") from None
    if MARKER not in state:
        raise ConvbenchError(f"{path} was not written by convbench sweep (it has no {MARKER!r} key) and is never "
                             "replaced: give the sweep another `out`")
    if state[MARKER] != FORMAT:
        raise ConvbenchError(f"{path} is a sweep record of format {state[MARKER]!r}; this convbench reads format "
                             f"{FORMAT}: give the sweep another `out`")
    return state


def _check_out(out: Path, cells: list[CellDefinition]) -> None:
    """Refuse to write into anything of a user's: ``out`` must be a folder (or missing), every cell folder
    missing, empty or a run folder, and ``out/report`` missing, empty or a convbench report."""
    if out.exists() and not out.is_dir():
        raise ConvbenchError(f"{out} exists and is not a folder; give the sweep another `out`")
    for cell in cells:
        try:
            check_run_out(out / cell.name)
        except ConvbenchError as err:
            reason = str(err).removesuffix("; give another --out")
            raise ConvbenchError(f"the folder of cell {cell.name}: {reason}; give the sweep another `out`") from None
    try:
        replaceable_entries((out / REPORT).resolve(), kind="report")
    except ConvbenchError as err:
        reason = str(err).removesuffix("; choose another --out")
        raise ConvbenchError(f"the sweep's report folder: {reason}; give the sweep another `out`") from None


def _save(result: SweepResult, sweep: SweepFile) -> None:
    """Write ``sweep.json`` atomically (a reader, or a crash, never leaves half a file)."""
    state = {MARKER: FORMAT, "convbench_version": __version__, "file": sweep.label,
             "updated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
             "cells": [cell.record() for cell in result.cells], "retired": result.retired,
             "report": None if result.report is None else str(result.report), "report_note": result.report_note}
    write_atomic(result.out / STATE, json.dumps(state, indent=2, ensure_ascii=False) + "\n")


def _report(result: SweepResult) -> None:
    """``convbench report`` over every ok cell, into ``out/report/``; a note instead when there is none
    or the report extra is missing."""
    import importlib.util

    ok = [cell.folder for cell in result.cells if cell.status == "ok"]
    if not ok:
        result.report_note = "no cell finished"
        return
    missing = [name for name in ("matplotlib", "pandas") if importlib.util.find_spec(name) is None]
    command = f"convbench report {' '.join(str(folder) for folder in ok[:2])}{' ...' if len(ok) > 2 else ''}"
    if missing:
        result.report_note = (f"the report extra is missing ({', '.join(missing)}): pip install 'convbench[report]', "
                              f"then rerun the sweep (nothing runs again) or run {command} --out {result.out / REPORT}")
        return
    try:
        from ..report import write_report

        result.report = write_report(ok, result.out / REPORT)
    except ImportError as err:
        result.report_note = f"the report extra is missing ({err}): pip install 'convbench[report]'"
    except Exception as err:  # the cells are done and recorded: the report's failure is said, not raised
        logger.debug("the sweep's report failed", exc_info=True)
        result.report_note = f"the report failed: {err if isinstance(err, ConvbenchError) else f'{type(err).__name__}: {err}'}"
        result.report_failed = True


def _sweep_lock(out: Path) -> Any:
    """One sweep at a time into ``out`` (a second fails at once)."""
    return hold_lock(out / ".sweep.lock", f"another convbench sweep is running into {out}")


def _latest(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per folder, the last one given."""
    return list({record.get("folder"): record for record in records}.values())


def _settings_text(settings: Mapping[str, Any]) -> str:
    return " ".join(f"{key}={value}" for key, value in settings.items()) or "-"


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= HEADLINE_CHARS else text[:HEADLINE_CHARS - 3] + "..."


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[k]) for row in [header, *rows]) for k in range(len(header))]
    return ["  ".join(value.ljust(width) for value, width in zip(row, widths)).rstrip() for row in [header, *rows]]


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _silent(line: str) -> None:
    pass


__all__ = ["run_sweep", "SweepResult", "Cell"]
