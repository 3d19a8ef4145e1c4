"""No wrong number leaves with exit code 0 (issue #19): a run where more than ``--max-error-rate`` of its rows
(default 5%) ended in an error writes its folder (every row accounted for), then fails with the count and
share of errored rows and how to retry; the Python API raises ``TooManyErrors`` (a ConvbenchError carrying
the run) after writing the folder; a sweep cell over the limit is a failed cell.

The errored rows are those the test server's ``refuse`` mode refuses (HTTP 400): ``affected`` picks them
from each prompt, so their count is derived from the rows themselves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convbench_datasets import run_nc
from convbench_datasets.cli import main
from convbench_datasets.errors import ConvbenchError
from convbench_datasets.engine.error_rate import TooManyErrors
from convbench_datasets.runs.sweep import run_sweep
from tests.support.openai_server import affected, openai_server

LIMIT = 30


def _refused(nc_built: Path) -> list[str]:
    """``set/id`` of the first LIMIT basic rows the ``refuse`` generator is refused for, in order."""
    import datasets

    from convbench_datasets.class_labels import named_rows  # set, task and pattern as names, as a run reads them

    rows = named_rows(datasets.load_dataset(str(nc_built), "basic", split="test"))[:LIMIT]
    return [f"{r['set']}/{r['id']}" for r in rows if affected(r["messages"])]


def _cli(url: str, nc_built: Path, tmp_path: Path, *extra: str) -> list[str]:
    return ["run", "nc", "--config", "basic", "--limit", str(LIMIT), "--model", "openai:refuse", "--judge",
            "baseline:smoke-judge", "--base-url", url, "--dataset", str(nc_built), "--out", str(tmp_path / "run"),
            "--cache", str(tmp_path / "c.sqlite"), "--no-progress", *extra]


def test_a_run_with_too_many_errored_rows_is_written_and_exits_1(nc_built: Path, tmp_path: Path, capsys) -> None:
    refused = _refused(nc_built)
    k = len(refused)
    assert LIMIT * 0.05 < k < LIMIT  # more than 5%: the default fails it
    with openai_server() as (url, state):
        assert main(_cli(url, nc_built, tmp_path)) == 1
        out, err = capsys.readouterr()
        results = json.loads((tmp_path / "run" / "results.json").read_text())
        assert results["errors"] == k and results["n"] == LIMIT  # the folder is written, every row in it
        assert f"errors: {k})" in out and f"wrote {tmp_path / 'run'}/records.jsonl" in out  # the summary first
        line = err.strip().splitlines()[-1]
        assert line.startswith(f"convbench: error: {k} of {LIMIT} rows ({100 * k / LIMIT:.1f}%) ended in an error, "
                               f"more than the 5% --max-error-rate allows; first: {refused[0]}: model: refused for "
                               f"this row: HTTP 400 from {url}/chat/completions: maximum context length exceeded; ")
        assert line.endswith(f"the run folder {tmp_path / 'run'} is written with them: once the cause is fixed, the "
                             "same command with --retry-errors asks them again (a higher --max-error-rate accepts them)")
        asked = state.count()
        # exactly the errored share is allowed (k of 30 is not more than k/30); a share or percentage below fails
        assert main(_cli(url, nc_built, tmp_path, "--max-error-rate", str(k / LIMIT))) == 0
        assert main(_cli(url, nc_built, tmp_path, "--max-error-rate", f"{100 * (k - 1) / LIMIT}%")) == 1
        assert main(_cli(url, nc_built, tmp_path, "--max-error-rate", "1")) == 0
        assert state.count() == asked  # every rerun records the errors from the cache, asking nothing
        # --retry-errors asks exactly the errored prompts again (this server refuses them again)
        assert main(_cli(url, nc_built, tmp_path, "--retry-errors")) == 1
        assert state.count() == asked + k


def test_the_python_api_raises_after_writing_the_folder(nc_built: Path, tmp_path: Path) -> None:
    k = len(_refused(nc_built))
    with openai_server() as (url, state):
        def run(**kwargs):
            return run_nc(model="openai:refuse", judge="baseline:smoke-judge", out=tmp_path / "run", config="basic",
                          limit=LIMIT, dataset=nc_built, cache=tmp_path / "c.sqlite",
                          backend_options={"base_url": url}, progress=False, **kwargs)

        with pytest.raises(TooManyErrors) as caught:
            run()
        assert isinstance(caught.value, ConvbenchError)
        assert (caught.value.errors, caught.value.total, caught.value.limit) == (k, LIMIT, 0.05)
        written = caught.value.result
        assert written.path == tmp_path / "run" and written.results["errors"] == k
        assert json.loads((tmp_path / "run" / "results.json").read_text())["errors"] == k
        accepted = run(max_error_rate=1)  # the same run, its errors accepted: the same numbers, no exception

        def scores(results: dict) -> dict:
            return {key: value for key, value in results.items() if key != "stats"}

        assert scores(accepted.results) == scores(written.results)
    for bad in (1.5, -0.1, True, "5%"):
        with pytest.raises(ConvbenchError, match=r"^max_error_rate must be a share of rows from 0 to 1 \(0.05 is 5%\), "):
            run_nc(model="baseline:repeat", judge="baseline:smoke-judge", out=tmp_path / "never", max_error_rate=bad)
    assert not (tmp_path / "never").exists()  # refused before anything ran


def test_a_run_without_errors_passes_a_zero_limit(nc_built: Path, tmp_path: Path) -> None:
    run = run_nc(model="baseline:repeat", judge="baseline:smoke-judge", out=tmp_path / "run", config="basic", limit=5,
                 dataset=nc_built, cache=tmp_path / "c.sqlite", progress=False, max_error_rate=0)
    assert run.results["errors"] == 0


def test_bad_cli_values_are_refused(tmp_path: Path, capsys) -> None:
    for bad in ("2", "-1", "150%", "lots"):
        with pytest.raises(SystemExit):
            main(["run", "nc", "--model", "baseline:repeat", "--judge", "baseline:smoke-judge", "--out",
                  str(tmp_path / "run"), "--max-error-rate", bad])
    assert "argument --max-error-rate: the value must be a share of rows from 0 to 1" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_a_sweep_cell_over_the_limit_fails_and_the_top_level_key_moves_it(nc_built: Path, tmp_path: Path) -> None:
    import yaml

    k = len(_refused(nc_built))

    def sweep(**top) -> Path:
        path = tmp_path / "sweep.yaml"
        path.write_text(yaml.safe_dump({
            "out": str(tmp_path / "sweep"), "cache": str(tmp_path / "c.sqlite"), "limit": LIMIT, **top,
            "models": [{"spec": "openai:refuse", "base_url": url}], "judges": ["baseline:smoke-judge"],
            "benchmarks": {"nc": {"dataset": str(nc_built), "config": "basic"}}}), encoding="utf-8")
        return path

    with openai_server() as (url, state):
        failed = run_sweep(sweep(), progress=False)
        (cell,) = failed.cells
        assert cell.status == "failed" and cell.error.startswith(
            f"{k} of {LIMIT} rows ({100 * k / LIMIT:.1f}%) ended in an error, more than the 5% --max-error-rate allows")
        assert json.loads((cell.folder / "results.json").read_text())["errors"] == k  # written all the same
        accepted = run_sweep(sweep(max_error_rate=0.5), progress=False)
        assert [c.status for c in accepted.cells] == ["ok"]
    with pytest.raises(ConvbenchError, match=r"max_error_rate: expected a share of rows from 0 to 1 \(0.05 is 5%\), "
                                             r"got 5"):
        run_sweep(sweep(max_error_rate=5), dry_run=True, progress=False)
