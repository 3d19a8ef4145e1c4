"""Loading run folders for reports: their results, records, benchmark and a display name."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConvbenchError
from ..engine.run_folder import check_complete, read_folder


@dataclass
class Run:
    name: str
    path: Path
    benchmark: str
    results: dict[str, Any]
    records: list[dict[str, Any]]

    @property
    def signature(self) -> dict[str, Any]:
        return self.results.get("signature", {})

    @property
    def label(self) -> str:
        """The run's column header in the report's tables: its name, with the part of the rows it scored
        when it scored part (``hf:m (sample of 40)``, ``(first 40 rows)``, ``(shard 1/4)``; see
        :func:`partial_scope`)."""
        scope = partial_scope(self.signature)
        return f"{self.name} ({', '.join(scope)})" if scope else self.name


def partial_scope(signature: dict[str, Any]) -> list[str]:
    """What part of the benchmark's rows a run scored, short (for headers), in the order the runner selects
    them (``--limit``'s first N, then ``--sample``, then ``--shard``); empty for a run of every row.

    Example:
        >>> partial_scope({"limit": None, "sample": {"n": 40, "seed": 0, "by": ["set", "pattern"]}})
        ['sample of 40']
        >>> partial_scope({"limit": 100, "shard": {"index": 1, "count": 4, "rows": 25}})
        ['first 100 rows', 'shard 1/4']
    """
    scope = []
    if signature.get("limit") is not None:
        scope.append(f"first {signature['limit']} rows")
    sample = signature.get("sample")
    if isinstance(sample, dict):
        scope.append(f"sample of {sample.get('n')}")
    shard = signature.get("shard")
    if isinstance(shard, dict):
        scope.append(f"shard {shard.get('index')}/{shard.get('count')}")
    return scope


def partial_note(run: Run) -> str | None:
    """One sentence on the part of the rows ``run`` scored (the page's summary), or None for a run of every row."""
    from ..departures import row_departures

    parts = row_departures(run.signature)
    if not parts:
        return None
    return (f"{run.name}: {'; '.join(parts)}, {len(run.records)} rows in all: its cells cover part of the benchmark's "
            "rows (each cell's n says how many).")


def load_runs(paths: list[str | os.PathLike[str]]) -> list[Run]:
    """Runs named by their model spec (plus the folder name when two runs share a model)."""
    runs = []
    for path in map(Path, paths):
        results_path, records_path = path / "results.json", path / "records.jsonl"
        if not results_path.is_file() or not records_path.is_file():
            raise ConvbenchError(f"{path} is not a run folder (results.json and records.jsonl are needed)")
        _, records, results = read_folder(path)  # the runner's reader: bad JSON is an error naming file and line
        check_complete(records, results, path)  # a folder that lost rows would compare unlike with unlike
        signature = results.get("signature", {})
        runs.append(Run(signature.get("model", path.name), path, signature.get("benchmark", "nc"), results, records))
    names = [r.name for r in runs]
    for run in runs:
        if names.count(run.name) > 1:
            run.name = f"{run.name} ({run.path.name})"
    seen: dict[str, int] = {}
    for index, run in enumerate(runs, start=1):  # still equal (same folder name twice): number them
        if [r.name for r in runs].count(run.name) > 1:
            seen[run.name] = seen.get(run.name, 0) + 1
            run.name = f"{run.name} #{seen[run.name]}"
    return runs
