"""`convbench report` reads each run's records.jsonl once (issue #23): every table, figure and comparison
works from the records loaded then, none decodes the file again."""

from __future__ import annotations

import builtins
import io
import os
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("matplotlib", reason="reports need the report extra")

from convbench_datasets.nc.run import write_run  # noqa: E402
from convbench_datasets.report import write_report  # noqa: E402
from tests.report.test_cocoeval_report import HUMAN, _run as cocoeval_run  # noqa: E402
from tests.report.test_report import _records as nc_records  # noqa: E402


def test_each_run_folder_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folders = []
    for name, answers in (("a", {0: "Repeat", 4: "Answer"}), ("b", {1: "Repeat"}), ("c", {})):
        write_run(tmp_path / name, nc_records(answers), {"benchmark": "nc", "model": f"hf:{name}"}, {})
        folders.append(tmp_path / name)
    folders.append(cocoeval_run(tmp_path / "d", "stub:d", {i: ([1], [], 8, 7) for i in HUMAN}, n_bootstrap=20))
    folders.append(cocoeval_run(tmp_path / "e", "stub:e", {i: ([], [2], 5, 5) for i in HUMAN}))

    opened: Counter[str] = Counter()

    def counting(opener):  # every way Python opens a file by name: open(), Path.open/read_*, os.open
        def wrapped(file, *args, **kwargs):
            if isinstance(file, (str, os.PathLike)) and os.fspath(file).endswith("records.jsonl"):
                opened[os.path.basename(os.path.dirname(os.fspath(file)))] += 1
            return opener(file, *args, **kwargs)
        return wrapped

    for module, name in ((builtins, "open"), (io, "open"), (os, "open")):
        monkeypatch.setattr(module, name, counting(getattr(module, name)))
    page = write_report(folders, tmp_path / "report")
    monkeypatch.undo()
    assert page.is_file() and "CoCoEvalBench" in page.read_text(encoding="utf-8")
    assert opened == {"a": 1, "b": 1, "c": 1, "d": 1, "e": 1}
