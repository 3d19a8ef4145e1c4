"""A run folder whose records.jsonl holds a line twice is refused by `convbench score` (and by check_complete),
never scored whole: every id is still there, so only the row count shows the extra line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convbench_datasets import run_nc, run_nico, score_run
from convbench_datasets.cli import main
from convbench_datasets.engine.run_folder import check_complete
from convbench_datasets.errors import ConvbenchError


def test_check_complete_refuses_a_duplicated_record() -> None:
    # by hand: three rows declared (signature.rows 3, three row_ids); the second record written twice gives
    # 4 records whose ids are all declared and none missing, so the count is the one thing that differs
    results = {"signature": {"rows": 3}, "row_ids": ["basic/0", "basic/1", "basic/2"]}
    records = [{"set": "basic", "id": 0}, {"set": "basic", "id": 1}, {"set": "basic", "id": 2}]
    check_complete(records, results, "runs/x")  # the whole folder passes
    doubled = records[:2] + [records[1]] + records[2:]
    with pytest.raises(ConvbenchError, match=r"^runs/x: records\.jsonl has 4 rows, the signature declares 3 "):
        check_complete(doubled, results, "runs/x")
    # a run from before row_ids: the count alone, and a duplicate must still be refused
    with pytest.raises(ConvbenchError, match=r"^runs/old: records\.jsonl has 4 rows, the signature declares 3 "):
        check_complete(doubled, {"signature": {"rows": 3}}, "runs/old")


def test_a_shard_with_a_duplicated_record_is_refused() -> None:
    # a shard's own count is signature.shard.rows (2 here, set by hand); a third line repeating the first is refused
    results = {"signature": {"rows": 10, "shard": {"index": 1, "count": 5, "rows": 2}}, "row_ids": ["a", "b"]}
    with pytest.raises(ConvbenchError, match=r"records\.jsonl has 3 rows, the signature declares 2 "):
        check_complete([{"id": "a"}, {"id": "b"}, {"id": "a"}], results, "runs/shard")


def _double_line(folder: Path, index: int) -> list[str]:
    """Write line ``index`` of records.jsonl a second time, at the end; the lines as they were."""
    lines = (folder / "records.jsonl").read_text(encoding="utf-8").splitlines()
    (folder / "records.jsonl").write_text("\n".join([*lines, lines[index]]) + "\n", encoding="utf-8")
    return lines


def test_convbench_score_refuses_a_nico_records_file_with_a_duplicated_line(nico_built: Path, tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture[str]) -> None:
    # NICO's own record checks do not look for repeated ids: the row count is what refuses this folder
    folder = tmp_path / "run"
    run_nico(task="identify_unnatural", model="baseline:silence", out=folder, split="train", dataset=nico_built,
             cache=tmp_path / "c.sqlite", progress=False)
    lines = _double_line(folder, 1)
    # 18: the rows of identify_unnatural's train split in the test build (tests/runs/test_score_rows.py says the
    # same: one line dropped leaves 17 of 18)
    assert len(lines) == 18
    before = (folder / "results.json").read_bytes()
    capsys.readouterr()
    assert main(["score", str(folder)]) == 1
    err = capsys.readouterr().err
    # by hand: 18 rows ran, one line written twice: 19 records for the 18 the signature declares, none missing
    assert err.startswith(f"convbench: error: {folder}: records.jsonl has 19 rows, the signature declares 18 "), err
    assert "missing ids" not in err
    assert (folder / "results.json").read_bytes() == before  # nothing scored, nothing rewritten
    with pytest.raises(ConvbenchError, match="records.jsonl has 19 rows, the signature declares 18 "):
        score_run(folder)


def test_convbench_score_refuses_an_nc_records_file_with_a_duplicated_line(nc_built: Path, tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    # NC-Bench's record checks name the repeated row first; either way the folder is not scored
    folder = tmp_path / "run"
    run_nc(model="baseline:repeat", judge="baseline:silence", out=folder, config="basic", limit=3,
           dataset=nc_built, cache=tmp_path / "c.sqlite", progress=False)
    lines = _double_line(folder, 1)
    assert len(lines) == 3  # limit=3
    before = (folder / "results.json").read_bytes()
    capsys.readouterr()
    assert main(["score", str(folder)]) == 1
    err = capsys.readouterr().err
    row = json.loads(lines[1])
    # by hand: line 4 repeats line 2, the row (set, id) of that line
    assert err == f"convbench: error: records.jsonl line 4: row ({row['set']!r}, {row['id']!r}) appears twice\n", err
    assert (folder / "results.json").read_bytes() == before
