"""`--shard I/N` and `convbench merge` (issue #14): shards of the rows config and limit select, joined into
a run whose results are an unsharded run's; merges of shards that do not make up one run are refused."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from convbench_datasets.cli import main
from convbench_datasets.errors import ConvbenchError
from convbench_datasets import run_nc, run_nico, score_run
from convbench_datasets.runs.api import run_cocoeval
from convbench_datasets.engine.shard_rows import parse_shard, row_ids_sha256, select_shard
from convbench_datasets.runs.shards import merge_runs

# no model anywhere: the repeat baseline answers, the smoke judge labels (engine/backends/baseline.py)
NC = {"model": "baseline:repeat", "judge": "baseline:smoke-judge", "progress": False}


def _without(results: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in results.items() if k not in keys}


def _e(path: Path) -> str:
    """``path`` as a regular expression that matches it literally."""
    return re.escape(str(path))


def _records(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "records.jsonl").read_text(encoding="utf-8").splitlines()]


def test_select_shard_is_round_robin_by_position() -> None:
    rows = list(range(10))
    shards = [select_shard(rows, (i, 3)) for i in (1, 2, 3)]
    assert shards == [[0, 3, 6, 9], [1, 4, 7], [2, 5, 8]]  # row k in shard k mod 3 + 1
    assert sorted(r for shard in shards for r in shard) == rows  # every row in exactly one shard
    assert parse_shard("3/3") == (3, 3) and parse_shard(" 1 / 4 ") == (1, 4)
    for bad in ("0/3", "4/3", "1/0", "2", "a/b"):
        with pytest.raises(ConvbenchError, match="shard"):
            parse_shard(bad)


def test_three_nc_shards_merged_equal_the_unsharded_run(nc_built: Path, tmp_path: Path) -> None:
    whole = run_nc(**NC, out=tmp_path / "whole", dataset=nc_built, cache=tmp_path / "whole.sqlite")
    shards = [run_nc(**NC, out=tmp_path / f"shard{i}", dataset=nc_built, cache=tmp_path / "shards.sqlite", shard=(i, 3))
              for i in (1, 2, 3)]
    ids = whole.results["row_ids"]
    assert len(ids) == 720
    # each shard: rows k mod 3 == i - 1 of the 720; its signature is the whole run's plus `shard`
    for i, shard in enumerate(shards, start=1):
        assert shard.results["row_ids"] == ids[i - 1 :: 3] and shard.results["n"] == 240
        assert shard.results["signature"]["shard"] == {"index": i, "count": 3, "rows": 240, "by": "position",
                                                       "row_ids_sha256": row_ids_sha256(ids)}
        assert _without(shard.results["signature"], "shard") == whole.results["signature"]
        assert score_run(shard.path).results["n"] == 240  # a shard scores on its own

    merged = merge_runs([tmp_path / "shard3", tmp_path / "shard1", tmp_path / "shard2"], tmp_path / "merged")
    # the merged records are the unsharded run's (each run had its own cache, so no cache hits in either)
    assert _records(tmp_path / "merged") == _records(tmp_path / "whole")
    # results: exactly those of the unsharded run scored by `convbench score`, statistics aside
    expected = score_run(tmp_path / "whole").results
    assert _without(merged.results, "stats") == _without(expected, "stats")
    assert _without(merged.results["signature"], "scored_by") == whole.results["signature"]
    stats = merged.results["stats"]
    assert stats["model_calls"] == stats["judge_calls"] == 720  # 240 each, summed
    assert stats["merged_from"] == [str(tmp_path / f"shard{i}") for i in (1, 2, 3)]


def test_the_shard_applies_to_the_limited_rows(nc_built: Path, tmp_path: Path) -> None:
    whole = run_nc(**NC, out=tmp_path / "whole", dataset=nc_built, config="basic", limit=10,
                   cache=tmp_path / "c.sqlite")
    second = run_nc(**NC, out=tmp_path / "s2", dataset=nc_built, config="basic", limit=10, cache=tmp_path / "c.sqlite",
                    shard=(2, 4))
    assert second.results["row_ids"] == [whole.results["row_ids"][k] for k in (1, 5, 9)]
    assert second.results["signature"]["rows"] == 10 and second.results["signature"]["limit"] == 10
    from convbench_datasets.report.runs import load_runs
    from convbench_datasets.nc.report_tables import nc_paper_differences

    (run,) = load_runs([second.path])  # the report says a shard is not the whole benchmark
    assert "shard 2/4 only (--shard, 3 rows)" in nc_paper_differences(run)  # of 10 rows: positions 1, 5 and 9


@pytest.fixture
def small_shards(nc_built: Path, tmp_path: Path) -> list[Path]:
    """The three shards of a 12-row NC-Bench run."""
    folders = [tmp_path / f"s{i}" for i in (1, 2, 3)]
    for i, folder in enumerate(folders, start=1):
        run_nc(**NC, out=folder, dataset=nc_built, config="basic", limit=12, cache=tmp_path / "c.sqlite", shard=(i, 3))
    return folders


def test_a_missing_shard_is_refused(small_shards: list[Path], tmp_path: Path) -> None:
    s1, _, s3 = small_shards
    with pytest.raises(ConvbenchError, match=rf"^shard 2/3 missing \(given: 1/3 in {_e(s1)}, 3/3 in {_e(s3)}\)"):
        merge_runs([s1, s3], tmp_path / "merged")
    assert not (tmp_path / "merged").exists()


def test_a_shard_given_twice_is_refused(small_shards: list[Path], tmp_path: Path) -> None:
    s1, s2, s3 = small_shards
    copy = tmp_path / "copy-of-s1"
    shutil.copytree(s1, copy)
    with pytest.raises(ConvbenchError, match=rf"^shard 1/3 is given more than once \({_e(s1)}, {_e(copy)}\)"):
        merge_runs([s1, copy, s2, s3], tmp_path / "merged")


def test_overlapping_rows_are_refused(small_shards: list[Path], tmp_path: Path) -> None:
    s1, s2, s3 = small_shards
    # shard 2's first row replaced by shard 1's first (records and the ids results.json declares alike)
    first = _records(s1)[0]
    records = [first, *_records(s2)[1:]]
    (s2 / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    results = json.loads((s2 / "results.json").read_text(encoding="utf-8"))
    results["row_ids"][0] = f"{first['set']}/{first['id']}"
    (s2 / "results.json").write_text(json.dumps(results), encoding="utf-8")
    with pytest.raises(ConvbenchError, match=rf"^rows in more than one shard: basic/{first['id']} \({_e(s1)}, {_e(s2)}\)"):
        merge_runs([s1, s2, s3], tmp_path / "merged")


def test_shards_of_different_runs_are_refused(nc_built: Path, small_shards: list[Path], tmp_path: Path) -> None:
    s1, _, s3 = small_shards
    other = run_nc(model="baseline:silence", judge="baseline:smoke-judge", progress=False, out=tmp_path / "other",
                   dataset=nc_built, config="basic", limit=12, cache=tmp_path / "c.sqlite", shard=(2, 3))
    with pytest.raises(ConvbenchError, match=rf"^{_e(s1)} and {_e(other.path)} are not shards of one run: their signatures "
                                             "differ in model, model_identity$"):
        merge_runs([s1, other.path, s3], tmp_path / "merged")


def test_a_run_that_is_not_a_shard_is_refused(nc_built: Path, small_shards: list[Path], tmp_path: Path) -> None:
    whole = run_nc(**NC, out=tmp_path / "whole", dataset=nc_built, config="basic", limit=12, cache=tmp_path / "c.sqlite")
    with pytest.raises(ConvbenchError, match=rf"^{_e(whole.path)} is not a shard"):
        merge_runs([whole.path, *small_shards], tmp_path / "merged")


def test_merge_never_writes_into_a_users_folder(small_shards: list[Path], tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("my notes", encoding="utf-8")
    with pytest.raises(ConvbenchError, match=rf"^{_e(mine)} is not empty and is not a run folder \(no \.convbench-run\)"):
        merge_runs(small_shards, mine)
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]
    with pytest.raises(ConvbenchError, match="is one of the shards being merged"):
        merge_runs(small_shards, small_shards[0])
    # an earlier run folder is replaced
    merge_runs(small_shards, tmp_path / "merged")
    assert merge_runs(small_shards, tmp_path / "merged").results["n"] == 12


def test_cli_shard_and_merge(nc_built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    common = ["--model", "baseline:repeat", "--judge", "baseline:smoke-judge", "--dataset", str(nc_built), "--config",
              "basic", "--limit", "7", "--cache", str(tmp_path / "c.sqlite"), "--no-progress"]
    for i in (1, 2):
        assert main(["run", "nc", *common, "--shard", f"{i}/2", "--out", str(tmp_path / f"s{i}")]) == 0
    assert main(["run", "nc", *common, "--out", str(tmp_path / "whole")]) == 0
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "s2"), str(tmp_path / "s1"), "--out", str(tmp_path / "merged")]) == 0
    assert f"merged 2 shards (7 rows) into {tmp_path / 'merged'}" in capsys.readouterr().out
    merged = json.loads((tmp_path / "merged" / "results.json").read_text(encoding="utf-8"))
    whole = json.loads((tmp_path / "whole" / "results.json").read_text(encoding="utf-8"))
    assert _without(merged, "stats", "signature") == _without(whole, "stats", "signature")
    assert main(["merge", str(tmp_path / "s1"), "--out", str(tmp_path / "m2")]) == 1
    assert capsys.readouterr().err.startswith("convbench: error: shard 2/2 missing (given: 1/2 in ")
    with pytest.raises(SystemExit):
        main(["run", "nc", *common, "--shard", "3/2", "--out", str(tmp_path / "bad")])
    assert "--shard: shard 3/2: the index runs from 1 to the count" in capsys.readouterr().err


def test_nico_shards_merge_to_the_unsharded_run(nico_built: Path, tmp_path: Path) -> None:
    options = {"task": "open_domain", "model": "baseline:repeat", "split": "train", "limit": 9, "dataset": nico_built,
               "progress": False}
    run_nico(**options, out=tmp_path / "whole", cache=tmp_path / "whole.sqlite")
    for i in (1, 2):
        run_nico(**options, out=tmp_path / f"s{i}", cache=tmp_path / "shards.sqlite", shard=(i, 2))
    merged = merge_runs([tmp_path / "s1", tmp_path / "s2"], tmp_path / "merged")
    assert _records(tmp_path / "merged") == _records(tmp_path / "whole")
    assert _without(merged.results, "stats") == _without(score_run(tmp_path / "whole").results, "stats")


def test_cocoeval_shards_merge_to_the_unsharded_run(cocoeval_built: Path, tmp_path: Path) -> None:
    from tests.cocoeval.test_cocoeval_run import Scripted

    options = {"config": "qmsum_committee", "limit": 5, "dataset": cocoeval_built, "n_bootstrap": 50, "progress": False}
    run_cocoeval(model=Scripted(), judge=Scripted(), out=tmp_path / "whole", cache=tmp_path / "whole.sqlite", **options)
    for i in (1, 2):
        run_cocoeval(model=Scripted(), judge=Scripted(), out=tmp_path / f"s{i}", cache=tmp_path / "shards.sqlite",
                     shard=(i, 2), **options)
    merged = merge_runs([tmp_path / "s1", tmp_path / "s2"], tmp_path / "merged")
    assert _records(tmp_path / "merged") == _records(tmp_path / "whole")
    assert _without(merged.results, "stats") == _without(score_run(tmp_path / "whole").results, "stats")


def test_cocoeval_shards_merge_when_one_shard_compares_nothing(cocoeval_built: Path, tmp_path: Path) -> None:
    # every instance of shard 2 fails to simulate (prose, no turns): its results have no comparison, yet the
    # shards are one run's and merge; the merged run counts all 4 instances (n) and the 2 compared
    from convbench_datasets.engine import Generation
    from convbench_datasets.engine.error_rate import TooManyErrors
    from tests.cocoeval.test_cocoeval_run import Scripted
    from tests.support.cocoeval_script import is_simulation

    class Prose(Scripted):  # the same model identity, writing prose instead of turns
        def generate(self, prompts, params):  # type: ignore[no-untyped-def]
            for i, generation in super().generate(prompts, params):
                yield i, Generation("They talked." if is_simulation(prompts[i]) else generation.text)

    options = {"config": "qmsum_committee", "limit": 4, "dataset": cocoeval_built, "n_bootstrap": 10, "progress": False}
    first = run_cocoeval(model=Scripted(), judge=Scripted(), out=tmp_path / "s1", shard=(1, 2),
                         cache=tmp_path / "c1.sqlite", **options)
    # a run that compares nothing fails its check, after its folder is written: that folder is the shard merged
    with pytest.raises(TooManyErrors, match=r"0 of 2 instances compared .*measured nothing") as failed:
        run_cocoeval(model=Prose(), judge=Scripted(), out=tmp_path / "s2", shard=(2, 2),
                     cache=tmp_path / "c2.sqlite", **options)
    second = failed.value.result
    assert second.path == tmp_path / "s2" and (tmp_path / "s2" / "results.json").exists()
    assert first.results["n_compared"] == 2 and second.results["n_compared"] == 0
    merged = merge_runs([tmp_path / "s1", tmp_path / "s2"], tmp_path / "merged")
    assert (merged.results["n"], merged.results["n_compared"]) == (4, 2)


def _edit_results(folder: Path, edit: Any) -> None:
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    edit(results)
    (folder / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


def test_shards_merge_after_convbench_score_on_one_of_them(small_shards: list[Path], tmp_path: Path) -> None:
    # `convbench score` on one shard adds `scored_by` to its signature only; the shards are still one run's
    # (merge compares signatures outside `shard` and `scored_by`), and the merge equals one of unscored shards
    s1, s2, s3 = small_shards
    score_run(s2)
    signatures = [json.loads((s / "results.json").read_text(encoding="utf-8"))["signature"] for s in small_shards]
    assert ["scored_by" in signature for signature in signatures] == [False, True, False]
    merged = merge_runs([s3, s2, s1], tmp_path / "merged")
    assert merged.results["n"] == 12
    for folder in small_shards:  # the shards as `convbench run` left them: the same merged results
        _edit_results(folder, lambda results: results["signature"].pop("scored_by", None))
    again = merge_runs(small_shards, tmp_path / "again")
    assert _without(merged.results, "stats") == _without(again.results, "stats")


def test_the_merged_run_was_created_when_its_first_shard_started(small_shards: list[Path], tmp_path: Path) -> None:
    # stats.created is when a run started; the merged run's is the earliest shard's. The shards' times are set
    # by hand here, the earliest in the second shard (neither the first nor the last listed, nor the latest)
    times = ["2026-03-02T10:00:00Z", "2026-03-01T09:30:00Z", "2026-03-03T08:00:00Z"]
    for folder, created in zip(small_shards, times):
        _edit_results(folder, lambda results, created=created: results["stats"].update(created=created))
    merged = merge_runs([small_shards[2], small_shards[0], small_shards[1]], tmp_path / "merged")
    assert merged.results["stats"]["created"] == "2026-03-01T09:30:00Z"
    assert json.loads((tmp_path / "merged" / "results.json").read_text(encoding="utf-8"))["stats"]["created"] == (
        "2026-03-01T09:30:00Z")
