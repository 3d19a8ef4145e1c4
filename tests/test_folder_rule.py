"""The folder rule (issue #19): a command writes only into a folder that is missing, empty or its own kind's,
recognised by convbench's marker, never into a user's folder (one holding a results.json or report.html of
the user's included), never through a symbolic link, and a failed write leaves the folder as it was."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from convbench_datasets import run_nc, run_nico
from convbench_datasets.cli import main
from convbench_datasets.errors import ConvbenchError
from convbench_datasets.engine.run_folder import MARKER, check_run_out
from convbench_datasets.runs.shards import merge_runs

NC = {"model": "baseline:repeat", "judge": "baseline:smoke-judge", "progress": False}


def _users_results_folder(path: Path) -> dict[str, str]:
    """A folder of the user's that happens to hold files named as a run's: its content, to compare after."""
    path.mkdir(parents=True)
    files = {"results.json": '{"mine": true}\n', "records.jsonl": '{"id": 1}\n', "analysis.ipynb": "{}"}
    for name, text in files.items():
        (path / name).write_text(text, encoding="utf-8")
    return files


def _content(path: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in path.iterdir()}


def test_a_folder_with_a_users_results_json_is_no_run_folder(nc_built: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    mine = tmp_path / "mine"
    files = _users_results_folder(mine)
    with pytest.raises(ConvbenchError, match=rf"^{re.escape(str(mine))} is not empty and is not a run folder "
                                             rf"\(no {re.escape(MARKER)}\): it holds analysis.ipynb, records.jsonl, "
                                             r"results.json, and is never written into \(a run folder from a convbench "
                                             r"that wrote no marker: `touch .*` adopts it\); give another --out$"):
        run_nc(**NC, out=mine, dataset=nc_built, config="basic", limit=2, cache=tmp_path / "c.sqlite")
    assert _content(mine) == files
    # the CLI: one line, exit 1, nothing touched
    assert main(["run", "nc", "--model", "baseline:repeat", "--judge", "baseline:smoke-judge", "--dataset",
                 str(nc_built), "--limit", "2", "--cache", str(tmp_path / "c.sqlite"), "--no-progress",
                 "--out", str(mine)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("convbench: error: ") and "is not a run folder" in err and err.count("\n") == 1
    assert _content(mine) == files
    # only hidden files (a home folder) are a user's too
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / ".bashrc").write_text("x")
    with pytest.raises(ConvbenchError, match=r"it holds \.bashrc, and is never written into; give another --out$"):
        check_run_out(hidden)
    # a folder a run took is marked first, and is taken again
    run = run_nc(**NC, out=tmp_path / "run", dataset=nc_built, config="basic", limit=2, cache=tmp_path / "c.sqlite")
    assert json.loads((run.path / MARKER).read_text())["shard"] is None
    assert sorted(os.listdir(run.path)) == [MARKER, ".lock", "records.jsonl", "results.json"]
    assert run_nc(**NC, out=run.path, dataset=nc_built, config="basic", limit=3,
                  cache=tmp_path / "c.sqlite").results["n"] == 3


def test_merge_and_sweep_refuse_a_users_results_folder(nc_built: Path, tmp_path: Path) -> None:
    from convbench_datasets.runs.sweep import run_sweep

    shards = [run_nc(**NC, out=tmp_path / f"s{i}", dataset=nc_built, config="basic", limit=4,
                     cache=tmp_path / "c.sqlite", shard=(i, 2)).path for i in (1, 2)]
    mine = tmp_path / "mine"
    files = _users_results_folder(mine)
    with pytest.raises(ConvbenchError, match="is not empty and is not a run folder"):
        merge_runs(shards, mine)
    assert _content(mine) == files
    # a sweep whose cell folder is a user's: refused before any cell runs
    sweep = {"out": str(tmp_path / "sweep"), "models": ["baseline:repeat"], "judges": ["baseline:smoke-judge"],
             "benchmarks": {"nc": {"dataset": str(nc_built), "config": "basic", "limit": 2}}}
    (cell,) = run_sweep(sweep, dry_run=True).cells
    cell_files = _users_results_folder(cell.folder)
    with pytest.raises(ConvbenchError, match=rf"^the folder of cell {re.escape(cell.name)}: .* is not a run folder"):
        run_sweep(sweep, progress=False)
    assert _content(cell.folder) == cell_files
    assert not (tmp_path / "sweep" / "report").exists()


def test_a_failed_run_leaves_no_folder_behind(nc_built: Path, tmp_path: Path) -> None:
    # a judge that cannot be reached fails the run after the folder was taken (the judge is preflighted)
    closed = {"base_url": "http://127.0.0.1:9/v1", "timeout": 2}
    os.environ.setdefault("OPENAI_API_KEY", "unused")
    for out, existed in ((tmp_path / "new" / "run", False), (tmp_path / "empty", True)):
        if existed:
            out.mkdir()
        with pytest.raises(ConvbenchError):
            run_nc(model="baseline:repeat", judge="openai:judge", judge_options=closed, progress=False, out=out,
                   dataset=nc_built, config="basic", limit=2, cache=tmp_path / "c.sqlite")
        assert (out.is_dir() and os.listdir(out) == []) if existed else not out.exists(), \
            sorted(os.listdir(out)) if out.exists() else None
    # an earlier run's folder keeps its marker and its run after a failed rerun
    run = run_nc(**NC, out=tmp_path / "run", dataset=nc_built, config="basic", limit=2, cache=tmp_path / "c.sqlite")
    before = _content(run.path)
    with pytest.raises(ConvbenchError):
        run_nc(model="baseline:repeat", judge="openai:judge", judge_options=closed, progress=False, out=run.path,
               dataset=nc_built, config="basic", limit=2, cache=tmp_path / "c.sqlite")
    assert _content(run.path) == before


def test_a_killed_runs_folder_is_taken_again(nc_built: Path, tmp_path: Path) -> None:
    # killed after taking the folder, mid-way through writing records.jsonl: the marker says it is a run's
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / MARKER).write_text('{"convbench_run": 1, "shard": null}\n')
    for left in (".lock", ".records.jsonl.abcdefgh.tmp"):
        (folder / left).write_text("{")
    assert run_nc(**NC, out=folder, dataset=nc_built, config="basic", limit=2,
                  cache=tmp_path / "c.sqlite").results["n"] == 2


def test_shards_given_one_out_are_refused(nc_built: Path, tmp_path: Path) -> None:
    common = {**NC, "dataset": nc_built, "config": "basic", "limit": 6, "cache": tmp_path / "c.sqlite"}
    first = run_nc(**common, out=tmp_path / "x", shard=(1, 2))
    before = _content(first.path)
    with pytest.raises(ConvbenchError, match=r"holds shard 1/2 of a run; shard 2/2 needs a folder of its own"):
        run_nc(**common, out=tmp_path / "x", shard=(2, 2))
    with pytest.raises(ConvbenchError, match=r"holds shard 1/2 of a run; an unsharded run \(or a merge\) needs"):
        run_nc(**common, out=tmp_path / "x")
    assert _content(first.path) == before
    assert run_nc(**common, out=tmp_path / "x", shard=(1, 2)).results["n"] == 3  # the same shard resumes
    whole = run_nc(**common, out=tmp_path / "whole")
    with pytest.raises(ConvbenchError, match=r"holds an unsharded run; shard 1/2 needs a folder of its own"):
        run_nc(**common, out=whole.path, shard=(1, 2))
    # a shard folder adopted by hand (an empty marker) is still known by its results' signature
    (first.path / MARKER).write_text("")
    with pytest.raises(ConvbenchError, match=r"holds shard 1/2 of a run"):
        run_nc(**common, out=first.path, shard=(2, 2))


# --- reports ---------------------------------------------------------------------------------------------


@pytest.fixture()
def nico_run(tmp_path: Path, nico_built: Path) -> Path:
    return run_nico(model="baseline:repeat", task="open_domain", split="train", limit=2, dataset=nico_built,
                    out=tmp_path / "nico-run", cache=tmp_path / "c.sqlite", progress=False).path


def test_report_refuses_a_users_folder_and_writes_through_no_link(nico_run: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="reports need the report extra")
    from convbench_datasets.report import write_report

    mine = tmp_path / "mine"
    (mine / "tables").mkdir(parents=True)
    (mine / "report.html").write_text("my page")
    (mine / "tables" / "nico_scores.csv").write_text("my,table\n")
    with pytest.raises(ConvbenchError, match=r"output folder .*mine is not empty and is not a convbench report"):
        write_report([nico_run], mine)
    assert (mine / "report.html").read_text() == "my page"
    assert (mine / "tables" / "nico_scores.csv").read_text() == "my,table\n"
    # a folder of another kind (a build) is not a report either
    with pytest.raises(ConvbenchError, match=r"is a convbench build, not a report"):
        write_report([nico_run], _a_build(tmp_path))
    # an earlier report is replaced; a link named report.html inside it is replaced, never followed
    report = tmp_path / "report"
    page = write_report([nico_run], report)
    assert page == report.resolve() / "report.html" and (report / MARKER_BUILD).is_file()
    outside = tmp_path / "outside.html"
    outside.write_text("not yours")
    (report / "report.html").unlink()
    (report / "report.html").symlink_to(outside)
    write_report([nico_run], report)
    assert outside.read_text() == "not yours" and not (report / "report.html").is_symlink()
    # an unmarked folder holding only such a link is refused
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "report.html").symlink_to(outside)
    with pytest.raises(ConvbenchError, match="is not a convbench report"):
        write_report([nico_run], linked)
    assert outside.read_text() == "not yours"


MARKER_BUILD = ".convbench-build"


def _a_build(tmp_path: Path) -> Path:
    folder = tmp_path / "a-build"
    folder.mkdir()
    (folder / "data.parquet").write_text("")
    (folder / MARKER_BUILD).write_text(json.dumps({"benchmark": "nc", "files": ["data.parquet"]}))
    return folder


def test_a_failed_report_leaves_the_earlier_one(nico_run: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("matplotlib", reason="reports need the report extra")
    from convbench_datasets.report import html, write_report

    report = tmp_path / "report"
    write_report([nico_run], report)
    before = {p.relative_to(report).as_posix(): p.read_bytes() for p in report.rglob("*") if p.is_file()}

    def broken(runs: object, out: Path, reference: bool) -> list[str]:
        (out / "tables").mkdir(exist_ok=True)
        (out / "tables" / "half.csv").write_text("half")
        raise RuntimeError("drawing failed")

    monkeypatch.setattr(html, "section_of", lambda benchmark: broken)  # the NICO section fails half-way
    with pytest.raises(RuntimeError, match="drawing failed"):
        write_report([nico_run], report)
    after = {p.relative_to(report).as_posix(): p.read_bytes() for p in report.rglob("*") if p.is_file()}
    assert after == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".report.")] == []  # no staging left


def test_a_sweep_never_replaces_a_users_report_folder(nico_built: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="reports need the report extra")
    from convbench_datasets.runs.sweep import run_sweep

    out = tmp_path / "sweep"
    (out / "report").mkdir(parents=True)
    (out / "report" / "report.html").write_text("my page")
    sweep = {"out": str(out), "models": ["baseline:repeat"],
             "benchmarks": {"nico": {"dataset": str(nico_built), "task": "open_domain", "split": "train", "limit": 2}}}
    with pytest.raises(ConvbenchError, match=r"^the sweep's report folder: output folder .* is not a convbench report .*; give the sweep another `out`$"):
        run_sweep(sweep, progress=False)
    assert (out / "report" / "report.html").read_text() == "my page"
    assert sorted(p.name for p in out.iterdir()) == ["report"]  # no cell ran


def test_score_rewrites_results_only_in_a_run_folder_and_never_replaces_a_link(nico_run: Path, tmp_path: Path,
                                                                              capsys: pytest.CaptureFixture[str]) -> None:
    # reported: `convbench score DIR` rewrote results.json in a folder without the run marker, and replaced a
    # user's link named results.json by a file
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("records.jsonl", "results.json"):
        (copy / name).write_bytes((nico_run / name).read_bytes())
    before = (copy / "results.json").read_bytes()
    assert main(["score", str(copy)]) == 1
    assert capsys.readouterr().err.strip() == (
        f"convbench: error: {copy} is not a run folder (no {MARKER}): convbench rewrites results.json only in a folder "
        f"a run wrote (a run folder from a convbench that wrote no marker: `touch {copy / MARKER}` adopts it)")
    assert (copy / "results.json").read_bytes() == before
    kept = tmp_path / "kept-results.json"
    kept.write_bytes((nico_run / "results.json").read_bytes())
    (nico_run / "results.json").unlink()
    (nico_run / "results.json").symlink_to(kept)
    assert main(["score", str(nico_run)]) == 1
    assert "results.json is a symbolic link; convbench never writes through one, nor replaces one" in \
        capsys.readouterr().err
    assert (nico_run / "results.json").is_symlink() and kept.read_bytes() == before


@pytest.mark.parametrize("command", ["build", "report", "export"])
def test_a_dangling_out_link_is_refused_and_nothing_written_where_it_points(command: str, nico_run: Path,
                                                                           tmp_path: Path) -> None:
    # reported: build, report and metrics export wrote through a dangling --out symbolic link
    if command == "report":
        pytest.importorskip("matplotlib", reason="reports need the report extra")
    target = tmp_path / "elsewhere"
    link = tmp_path / "out"
    link.symlink_to(target)  # dangling: target does not exist
    for out in (str(link), f"{link}/"):  # a trailing slash makes lstat follow the link: refused all the same
        argv = {"build": ["build", "nico", "--out", out], "report": ["report", str(nico_run), "--out", out],
                "export": ["metrics", "export", "nico_generation", "--out", out]}[command]
        assert main(argv) == 1
        assert link.is_symlink() and not os.path.lexists(target)


def test_a_run_out_that_is_a_link_is_refused(nico_built: Path, tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "run"
    link.symlink_to(real)
    with pytest.raises(ConvbenchError, match="is a symbolic link; convbench never writes through one"):
        run_nico(model="baseline:repeat", task="open_domain", split="train", limit=2, dataset=nico_built, out=link,
                 cache=tmp_path / "c.sqlite", progress=False)
    assert not os.listdir(real)


def test_an_sft_export_never_replaces_a_link(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from convbench_datasets.cocoeval.sft import write_sft

    mine = tmp_path / "mine.jsonl"
    mine.write_text("my data\n", encoding="utf-8")
    link = tmp_path / "train.jsonl"
    link.symlink_to(mine)
    with pytest.raises(ConvbenchError, match="train.jsonl is a symbolic link; convbench never writes through one"):
        write_sft(link, [{"messages": []}], {"turns_per_call": 1})
    assert link.is_symlink() and mine.read_text(encoding="utf-8") == "my data\n"
