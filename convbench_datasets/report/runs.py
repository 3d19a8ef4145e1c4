"""Loading run folders for reports: their results, records, benchmark and a display name."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConvbenchError
from ..runner.run_folder import check_complete, read_folder


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
