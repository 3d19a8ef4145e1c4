"""--sample N (#24): a seeded sample spread over the benchmark's strata, where --limit N takes the first N
rows (NC-Bench's first 20 are all Definition Request)."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from convbench_datasets import run_nc, run_nico
from convbench_datasets.cli import main
from convbench_datasets.errors import ConvbenchError
from convbench_datasets.engine.sample import allocate, stratified_sample

NC = {"model": "baseline:repeat", "judge": "baseline:smoke-judge", "progress": False}


def test_allocation_by_hand() -> None:
    # sizes 8, 2: one each, then 2 more in proportion to the rest (7 : 1 -> 1.75 and 0.25): 1 + 1, then
    # the larger remainder (0.75, the first) gets the last: [3, 1]
    assert allocate([8, 2], 4, random.Random(0)) == [3, 1]
    # 10 rows over sizes 5, 3, 2: 1 each, 7 more in proportion to 4 : 2 : 1 -> 4, 2, 1 exactly
    assert allocate([5, 3, 2], 10, random.Random(0)) == [5, 3, 2]
    assert allocate([5, 3, 2], 6, random.Random(0)) == [3, 2, 1]  # 3 more: 12/7, 6/7, 3/7 -> 1,0,0 then .86,.71
    assert sum(allocate([1, 1, 1, 1], 2, random.Random(0))) == 2  # fewer than the strata: one each of two
    assert allocate([3, 4], 99, random.Random(0)) == [3, 4]  # more than there are: every row


def test_sample_is_stratified_seeded_and_in_order() -> None:
    rows = [{"id": i, "kind": k} for i, k in enumerate("a" * 50 + "b" * 30 + "c" * 20)]
    sample = stratified_sample(rows, 10, ("kind",), seed=3)
    assert Counter(r["kind"] for r in sample) == {"a": 5, "b": 3, "c": 2}
    assert [r["id"] for r in sample] == sorted(r["id"] for r in sample)
    assert sample == stratified_sample(rows, 10, ("kind",), seed=3)
    assert sample != stratified_sample(rows, 10, ("kind",), seed=4)


def test_a_sampled_nc_run_covers_every_pattern(nc_built: Path, tmp_path: Path) -> None:
    first = run_nc(**NC, config="basic", limit=20, dataset=nc_built, out=tmp_path / "limit", cache=tmp_path / "c.sqlite")
    assert {r["pattern"] for r in first.records} == {"Definition Request"}  # why --sample exists
    run = run_nc(**NC, config="basic", sample=20, dataset=nc_built, out=tmp_path / "sample", cache=tmp_path / "c.sqlite")
    patterns = Counter(r["pattern"] for r in run.records)
    assert run.results["n"] == 20 and len(patterns) >= 6  # the basic set's patterns, each at least once
    assert run.results["signature"]["sample"] == {"n": 20, "seed": 0, "by": ["set", "pattern"]}
    assert run.results["signature"]["limit"] is None
    # the CLI gives the same rows
    assert main(["run", "nc", "--model", "baseline:repeat", "--judge", "baseline:smoke-judge", "--config", "basic",
                 "--sample", "20", "--dataset", str(nc_built), "--out", str(tmp_path / "cli"), "--cache",
                 str(tmp_path / "c.sqlite"), "--no-progress"]) == 0
    import json

    cli = json.loads((tmp_path / "cli" / "results.json").read_text())
    assert cli["row_ids"] == run.results["row_ids"]
    with pytest.raises(ConvbenchError, match="--limit and --sample choose the rows two ways; give one"):
        run_nc(**NC, config="basic", sample=5, limit=5, dataset=nc_built, out=tmp_path / "both")
    assert not (tmp_path / "both").exists()


def test_a_sampled_nico_run_spreads_over_interaction_types(nico_built: Path, tmp_path: Path) -> None:
    run = run_nico(model="baseline:repeat", task="open_domain", split="train", sample=5, dataset=nico_built,
                   out=tmp_path / "run", cache=tmp_path / "c.sqlite", progress=False)
    # the sample's 18 train dialogues cover the five interaction types: 5 rows, one of each
    assert sorted(r["interaction_type"] for r in run.records) == ["coercion", "conflict", "conformity", "cooperation",
                                                                   "exchange"]


def test_a_sweep_block_samples_as_a_run_does(nc_built: Path, tmp_path: Path) -> None:
    from convbench_datasets.runs.sweep import run_sweep

    sweep = {"out": str(tmp_path / "sweep"), "limit": 3, "models": ["baseline:repeat"],
             "judges": ["baseline:smoke-judge"],
             "benchmarks": {"nc": {"dataset": str(nc_built), "config": "basic", "sample": 20}}}
    (cell,) = run_sweep(sweep, progress=False).cells
    assert cell.status == "ok" and "sample=20" in cell.name, cell.error
    direct = run_nc(**NC, config="basic", sample=20, dataset=nc_built, out=tmp_path / "direct", cache=tmp_path / "c.sqlite")
    import json

    results = json.loads((cell.folder / "results.json").read_text())
    assert results["row_ids"] == direct.results["row_ids"]  # the block's sample replaced the file's limit: 3
    assert run_sweep(sweep, dry_run=True).cells[0].status == "ok"  # done, with the same rows: not rerun
    sweep["benchmarks"]["nc"]["limit"] = 5
    with pytest.raises(ConvbenchError, match=r"benchmarks.nc.sample: limit and sample choose the rows two ways"):
        run_sweep(sweep, dry_run=True)
