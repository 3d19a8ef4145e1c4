"""`convbench score` refuses a run folder whose records.jsonl lost rows, naming them (issue #10)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convbench_datasets.cli import main
from convbench_datasets.errors import ConvbenchError
from convbench_datasets import run_nc, run_nico, score_run
from convbench_datasets.engine.run_folder import check_complete


def _drop_line(folder: Path, index: int) -> dict:
    lines = (folder / "records.jsonl").read_text(encoding="utf-8").splitlines()
    dropped = json.loads(lines.pop(index))
    (folder / "records.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return dropped


def test_nc_score_refuses_lost_rows(nc_built: Path, tmp_path: Path, capsys) -> None:
    run_nc(model="baseline:repeat", judge="baseline:silence", out=tmp_path / "run", config="basic", limit=30,
           dataset=nc_built, cache=tmp_path / "c.sqlite", progress=False)
    assert main(["score", str(tmp_path / "run")]) == 0  # a whole folder re-scores
    capsys.readouterr()
    dropped = _drop_line(tmp_path / "run", 5)
    # before the fix: exit 0 and results over 29 rows
    assert main(["score", str(tmp_path / "run")]) == 1
    err = capsys.readouterr().err
    assert err == (f"convbench: error: {tmp_path / 'run'}: records.jsonl has 29 rows, the signature declares 30; "
                   f"missing ids: basic/{dropped['id']} (run the same `convbench run` command again to rewrite the "
                   "folder from the cache)\n")


def test_nico_score_refuses_lost_rows(nico_built: Path, tmp_path: Path) -> None:
    run_nico(task="identify_unnatural", model="baseline:silence", out=tmp_path / "run", split="train",
             dataset=nico_built, cache=tmp_path / "c.sqlite", progress=False)
    dropped = _drop_line(tmp_path / "run", -1)
    with pytest.raises(ConvbenchError, match=f"records.jsonl has 17 rows, the signature declares 18; missing ids: {dropped['id']} "):
        score_run(tmp_path / "run")


def test_cocoeval_score_refuses_lost_rows(cocoeval_built: Path, tmp_path: Path) -> None:
    from convbench_datasets.runs.api import run_cocoeval
    from tests.cocoeval.test_cocoeval_run import Scripted

    run_cocoeval(model=Scripted(), judge=Scripted(), out=tmp_path / "run", config="iq2", limit=3,
                 dataset=cocoeval_built, cache=tmp_path / "c.sqlite", n_bootstrap=10, progress=False)
    dropped = _drop_line(tmp_path / "run", 0)
    with pytest.raises(ConvbenchError, match=f"has 2 rows, the signature declares 3; missing ids: {dropped['id']} "):
        score_run(tmp_path / "run")


@pytest.mark.parametrize("benchmark", ["nc", "nico"])
def test_score_refuses_a_folder_without_results_json(benchmark: str, request, tmp_path: Path, capsys) -> None:
    # The reviewer's case (/tmp/rv/test_rvscore*.py): a folder that lost 5 rows and its results.json.
    # Before the fix `score` checked nothing (nothing declared) and wrote a fresh results.json whose
    # row_ids made the cut folder look complete: exit 0, accuracy over 25 rows.
    if benchmark == "nc":
        run_nc(model="baseline:repeat", judge="baseline:silence", out=tmp_path / "run", config="basic", limit=30,
               dataset=request.getfixturevalue("nc_built"), cache=tmp_path / "c.sqlite", progress=False)
    else:
        run_nico(task="identify_unnatural", model="baseline:silence", out=tmp_path / "run", split="train",
                 dataset=request.getfixturevalue("nico_built"), cache=tmp_path / "c.sqlite", progress=False)
    for _ in range(5):
        _drop_line(tmp_path / "run", -1)
    (tmp_path / "run" / "results.json").unlink()
    assert main(["score", str(tmp_path / "run")]) == 1
    assert capsys.readouterr().err == (f"convbench: error: {tmp_path / 'run'}: results.json is missing; rerun the "
                                       "`convbench run` command to rewrite the folder from the cache\n")
    assert not (tmp_path / "run" / "results.json").exists()


def test_check_complete_names_missing_and_unexpected_ids() -> None:
    results = {"signature": {"rows": 3}, "row_ids": ["basic/0", "basic/1", "basic/2"]}
    records = [{"set": "basic", "id": 0}, {"set": "basic", "id": 1}, {"set": "basic", "id": 2}]
    check_complete(records, results, "runs/x")
    with pytest.raises(ConvbenchError, match=r"^runs/x: missing ids: basic/2; ids the run does not declare: basic/7 "):
        check_complete(records[:2] + [{"set": "basic", "id": 7}], results, "runs/x")  # same count, other row
    many = {"signature": {"rows": 20}, "row_ids": [f"r{i}" for i in range(20)]}
    with pytest.raises(ConvbenchError, match=r"missing ids: r0, r1, r2, r3, r4, r5, r6, r7, r8, r9 and 10 more "):
        check_complete([], many, "runs/y")
    check_complete(records, {}, "runs/z")  # nothing declared (results.json gone): nothing to check against
    with pytest.raises(ConvbenchError, match="records.jsonl has 2 rows, the signature declares 3 "):
        check_complete(records[:2], {"signature": {"rows": 3}}, "runs/old")  # a run from before row_ids


@pytest.mark.parametrize("stripped", [lambda r: r.pop("signature"), lambda r: r.update(signature={})])
def test_score_refuses_a_results_json_without_its_signature(stripped, nico_built: Path, tmp_path: Path, capsys) -> None:
    # reported: a results.json stripped of its signature was re-scored with exit code 0 (no record of how the run
    # was made, so nothing to score it as)
    run_nico(model="baseline:repeat", task="open_domain", split="train", limit=3, dataset=nico_built,
             out=tmp_path / "run", cache=tmp_path / "c.sqlite", progress=False)
    path = tmp_path / "run" / "results.json"
    results = json.loads(path.read_text(encoding="utf-8"))
    stripped(results)
    path.write_text(json.dumps(results), encoding="utf-8")
    assert main(["score", str(tmp_path / "run")]) == 1
    assert capsys.readouterr().err.startswith(f"convbench: error: {path} has no signature (how the run was made: ")
