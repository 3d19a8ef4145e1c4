"""`convbench sweep FILE.yaml` (issue #14, Sweeps): models x benchmarks x settings from one file, every
problem found before a cell runs, resumable, a failing cell recorded while the others go on, one report.

No network: baseline models, the NC-Bench smoke judge (`baseline:smoke-judge`), NC-Bench built from the
mirror (`nc_built`) and NICO's bundled sample (`nico_built`, whose test split is empty for some tasks:
the cells use `split: train`, as tests/runner/test_nico_run.py does)."""

from __future__ import annotations

import importlib.util
import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from convbench_datasets import run_nc, run_nico
from convbench_datasets.cli import main
from convbench_datasets.errors import ConvbenchError
from convbench_datasets.registry import get_benchmark
from convbench_datasets.runner.sweep import run_sweep
from convbench_datasets.runner.sweep_file import read_sweep


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _sweep(tmp_path: Path, nc_built: Path, nico_built: Path, *, models: list[Any] | None = None,
           nc: dict[str, Any] | None = None, nico: dict[str, Any] | None = None) -> dict[str, Any]:
    """A sweep of NC-Bench (3 basic rows, smoke judge) and NICO (3 train examples) on the test builds."""
    return {
        "out": str(tmp_path / "sweep"),
        "cache": str(tmp_path / "responses.sqlite"),
        "limit": 3,
        "models": models or ["baseline:repeat", "baseline:silence"],
        "judges": ["baseline:smoke-judge"],
        "benchmarks": {
            "nc": {"dataset": str(nc_built), "config": "basic", "rules": ["paper", "released_script"], **(nc or {})},
            "nico": {"dataset": str(nico_built), "split": "train", "task": ["open_domain", "identify_unnatural"],
                     **(nico or {})},
        },
    }


def _write(tmp_path: Path, sweep: dict[str, Any]) -> Path:
    import yaml

    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep, sort_keys=False), encoding="utf-8")
    return path


def _state(tmp_path: Path) -> dict[str, Any]:
    return json.loads((tmp_path / "sweep" / "sweep.json").read_text(encoding="utf-8"))


def _scores(results: dict[str, Any]) -> dict[str, Any]:
    """Results without ``stats`` (timings and call counts: the cache answers a second run)."""
    return {key: value for key, value in results.items() if key != "stats"}


# -- the grid ---------------------------------------------------------------------------------------------------


def test_the_grid_expands_into_cells_with_folder_names_derived_by_hand(nc_built: Path, nico_built: Path,
                                                                      tmp_path: Path) -> None:
    sweep = _sweep(tmp_path, nc_built, nico_built, nico={"shots": [0, 3]})
    result = run_sweep(_write(tmp_path, sweep), dry_run=True, progress=False)
    # NC-Bench: 2 rules x 2 models = 4 cells; NICO: 2 tasks x 2 shots x 2 models = 8; 12 in all, in the file's
    # order (benchmark, then the grid with its first key slowest, then models). Folder names: the model spec
    # with ":" as "-", then the settings written as lists, key=value by key; config and split are fixed and
    # left out; NICO takes no judge, so it ignores the default one.
    assert [cell.name for cell in result.cells] == [
        "nc/baseline-repeat/rules=paper", "nc/baseline-silence/rules=paper",
        "nc/baseline-repeat/rules=released_script", "nc/baseline-silence/rules=released_script",
        "nico/baseline-repeat/shots=0,task=open_domain", "nico/baseline-silence/shots=0,task=open_domain",
        "nico/baseline-repeat/shots=3,task=open_domain", "nico/baseline-silence/shots=3,task=open_domain",
        "nico/baseline-repeat/shots=0,task=identify_unnatural", "nico/baseline-silence/shots=0,task=identify_unnatural",
        "nico/baseline-repeat/shots=3,task=identify_unnatural", "nico/baseline-silence/shots=3,task=identify_unnatural",
    ]
    first, last = result.cells[0], result.cells[-1]
    assert (first.settings, first.judges) == ({"config": "basic", "rules": "paper"}, ["baseline:smoke-judge"])
    assert (last.settings, last.judges) == ({"split": "train", "task": "identify_unnatural", "shots": 3}, [])
    assert {cell.status for cell in result.cells} == {"to run"}
    assert not (tmp_path / "sweep").exists()  # a dry run writes nothing


def test_a_dry_run_lists_the_cells(nc_built: Path, nico_built: Path, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, _sweep(tmp_path, nc_built, nico_built))
    assert main(["sweep", str(path), "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"8 cells (2 models x 4 benchmark settings) into {tmp_path / 'sweep'}; dry run: nothing run"
    assert out[1].split() == ["folder", "model", "settings", "judges", "limit", "state"]
    assert out[2].split() == ["nc/baseline-repeat/rules=paper", "baseline:repeat", "config=basic", "rules=paper",
                              "baseline:smoke-judge", "3", "to", "run"]
    assert out[-1] == "8 to run, 0 done before (same definition)"
    assert not (tmp_path / "sweep").exists()


def test_settings_go_by_run_keyword_or_flag_spelling(nc_built: Path, tmp_path: Path) -> None:
    # judge_template is --judge-template's spelling of the keyword template; all_lines: true is --all-lines,
    # which sets first_line_only=False (the convbench template judges whole responses)
    sweep = {"out": str(tmp_path / "o"), "models": ["baseline:repeat"], "judges": "baseline:smoke-judge",
             "benchmarks": {"nc": {"dataset": str(nc_built), "judge_template": "convbench", "all_lines": True}}}
    (cell,) = read_sweep(sweep).cells
    assert cell.settings == {"template": "convbench", "first_line_only": False}
    assert cell.name == "nc/baseline-repeat/run"  # nothing varies: the settings folder is "run"


def test_a_list_of_blocks_is_several_grids(nico_built: Path, tmp_path: Path) -> None:
    sweep = {"out": str(tmp_path / "o"), "models": ["baseline:silence"], "benchmarks": {"nico": [
        {"dataset": str(nico_built), "task": "open_domain", "shots": [0, 3]},
        {"dataset": str(nico_built), "task": "identify_unnatural", "split": "train"}]}}
    # task differs between the blocks, shots is a list, split is set by one block only: all three name folders
    assert [cell.name for cell in read_sweep(sweep).cells] == [
        "nico/baseline-silence/shots=0,task=open_domain", "nico/baseline-silence/shots=3,task=open_domain",
        "nico/baseline-silence/split=train,task=identify_unnatural"]


def test_two_cells_in_one_folder_are_refused(nico_built: Path, tmp_path: Path) -> None:
    models = [{"spec": "openai:m", "base_url": "http://a:8000/v1"}, {"spec": "openai:m", "base_url": "http://b:8000/v1"}]
    sweep = {"out": str(tmp_path / "o"), "models": models,
             "benchmarks": {"nico": {"dataset": str(nico_built), "task": "open_domain"}}}
    with pytest.raises(ConvbenchError, match=r"two cells would share the folder nico/openai-m/run"):
        read_sweep(sweep)
    models[1]["name"] = "m-on-b"
    assert [cell.name for cell in read_sweep(sweep).cells] == ["nico/openai-m/run", "nico/m-on-b/run"]


# -- checking the file ------------------------------------------------------------------------------------------


def test_every_problem_is_found_before_anything_runs_each_under_its_key_path(nc_built: Path, tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(f"""\
out: {tmp_path / 'out'}
limt: 3
models:
  - baseline:repeat
  - baseline:nope
  - {{spec: "hf:x", model_id: y}}
judges: [baseline:smoke-judge, baseline:silence]
benchmarks:
  nc: {{dataset: {nc_built}, config: [basic, bogus], judge_template: convbench, fill_request_details: true,
       max_new_tokens: "12"}}
  nico: [{{task: open_domain, shots: [0, 5]}}, {{task: identify_unnatural, tsak: x, cache: c, judges: baseline:silence}}]
  cocoeval: {{turns_per_call: [5, 7]}}
  foo: {{}}
""", encoding="utf-8")
    with pytest.raises(ConvbenchError) as caught:
        run_sweep(path, progress=False)
    lines = str(caught.value).splitlines()
    assert lines[0] == f"{path}: 13 problems:"
    assert [line.strip() for line in lines[1:]] == [
        "limt: unknown key; the keys of a sweep file: out, cache, sources, limit, retry_errors, models, judges, "
        "benchmarks, base_url, concurrency, timeout, api_key_env, device, dtype, batch_size",
        "models[1]: unknown baseline 'nope'; choose one of silence, repeat, smoke-judge",
        "models[2].model_id: applies to openai: models only, not hf:x",
        "benchmarks.nc.max_new_tokens: expected a whole number of at least 1, got '12'",  # a string: never coerced
        # a combination only the benchmark's plan refuses: both keys named
        "benchmarks.nc.judge_template, benchmarks.nc.fill_request_details: --fill-request-details applies to the "
        "released judge prompt only (convbench's wording always names the request details)",
        "benchmarks.nc.config[1]: unknown NC-Bench config 'bogus'; choose one of basic, rag, complex_request, all",
        "benchmarks.nico[0].shots[1]: expected one of 0, 3, got 5",
        "benchmarks.nico[1].judges: NICO takes no judge",
        "benchmarks.nico[1].cache: not a setting here: `cache` is a top-level key (one response cache for every cell)",
        "benchmarks.nico[1].tsak: NICO takes no setting 'tsak' (its settings: task, shots, split, max_new_tokens, "
        "tokenizer, bertscore, bertscore_model, bertscore_layer)",
        "judges: lists 2 judges, but CoCoEvalBench takes one judge: give it its own in benchmarks.cocoeval.judges",
        "benchmarks.cocoeval.turns_per_call[1]: expected one of 1, 5, 30, got 7",
        "benchmarks.foo: unknown benchmark; available: nc, nico, cocoeval",
    ]
    assert not (tmp_path / "out").exists()


def test_a_benchmark_that_needs_a_judge_says_so(nc_built: Path, tmp_path: Path) -> None:
    sweep = {"out": str(tmp_path / "o"), "models": ["baseline:repeat"], "benchmarks": {"nc": {"dataset": str(nc_built)}}}
    with pytest.raises(ConvbenchError, match=r"^sweep: benchmarks.nc: NC-Bench needs a judge: give `judges` at the "
                                             r"top level or in benchmarks.nc$"):
        read_sweep(sweep)


def test_a_key_given_twice_is_an_error_not_the_last_one_kept(tmp_path: Path) -> None:
    path = tmp_path / "twice.yaml"
    path.write_text("out: a\nmodels: [baseline:repeat]\nbenchmarks:\n  nico: {task: open_domain}\nout: b\n")
    with pytest.raises(ConvbenchError, match=r"twice.yaml: not valid YAML \(.*key 'out' appears twice in one mapping "
                                             r"\(first on line 1\).*line 5"):
        run_sweep(path, dry_run=True)


def test_a_sweep_json_convbench_did_not_write_is_refused(nico_built: Path, tmp_path: Path) -> None:
    sweep = {"out": str(tmp_path / "sweep"), "models": ["baseline:silence"],
             "benchmarks": {"nico": {"dataset": str(nico_built), "task": "open_domain", "split": "train", "limit": 2}}}
    (tmp_path / "sweep").mkdir()
    (tmp_path / "sweep" / "sweep.json").write_text('{"my": "notes"}\n')
    with pytest.raises(ConvbenchError, match=r"sweep.json was not written by convbench sweep \(it has no "
                                             r"'convbench_sweep' key\) and is never replaced"):
        run_sweep(sweep, progress=False)
    assert (tmp_path / "sweep" / "sweep.json").read_text() == '{"my": "notes"}\n'
    assert sorted(p.name for p in (tmp_path / "sweep").iterdir()) == ["sweep.json"]


@pytest.mark.parametrize("where", ["nico/baseline-silence/run", "report"])
def test_a_folder_of_the_users_inside_out_is_refused(where: str, nico_built: Path, tmp_path: Path) -> None:
    sweep = {"out": str(tmp_path / "sweep"), "models": ["baseline:silence"],
             "benchmarks": {"nico": {"dataset": str(nico_built), "task": "open_domain", "split": "train", "limit": 2}}}
    mine = tmp_path / "sweep" / where / "notes.txt"
    mine.parent.mkdir(parents=True)
    mine.write_text("mine")
    with pytest.raises(ConvbenchError, match="give the sweep another `out`"):
        run_sweep(sweep, progress=False)
    assert mine.read_text() == "mine" and not (tmp_path / "sweep" / "sweep.json").exists()


# -- running ----------------------------------------------------------------------------------------------------


def test_each_cell_equals_a_direct_run_with_the_same_settings(nc_built: Path, nico_built: Path, tmp_path: Path) -> None:
    sweep = _sweep(tmp_path, nc_built, nico_built)
    result = run_sweep(_write(tmp_path, sweep), progress=False)
    assert [cell.status for cell in result.cells] == ["ok"] * 8 and result.exit_code == 0
    direct = tmp_path / "direct"
    for cell in result.cells:
        model = cell.model
        if cell.benchmark == "nc":
            run = run_nc(model=model, judge="baseline:smoke-judge", out=direct / cell.name, config="basic",
                         rules=cell.settings["rules"], limit=3, dataset=nc_built, cache=tmp_path / "direct.sqlite",
                         progress=False)
        else:
            run = run_nico(model=model, task=cell.settings["task"], split="train", out=direct / cell.name, limit=3,
                           dataset=nico_built, cache=tmp_path / "direct.sqlite", progress=False)
        swept = json.loads((cell.folder / "results.json").read_text(encoding="utf-8"))
        assert _scores(swept) == _scores(run.results), cell.name
        assert cell.headline == get_benchmark(cell.benchmark).summary(run.results)[0]
    records = _state(tmp_path)["cells"]
    assert [r["folder"] for r in records] == [cell.name for cell in result.cells]
    assert records[0]["status"] == "ok" and records[0]["error"] is None and records[0]["settings"] == {
        "config": "basic", "rules": "paper"} and records[0]["judges"] == ["baseline:smoke-judge"]
    assert len(records[0]["hash"]) == 64 and records[0]["seconds"] >= 0


def test_a_silent_model_on_identify_unnatural_scores_the_clean_share(nico_built: Path, tmp_path: Path) -> None:
    # a value derived by hand: 11 of the sample's 18 train dialogues have no unnatural sentence, so the silent
    # model ("none found") gets F1 100 on them and 0 on the others (tests/runner/test_nico_run.py)
    sweep = {"out": str(tmp_path / "sweep"), "models": ["baseline:silence"],
             "benchmarks": {"nico": {"dataset": str(nico_built), "task": "identify_unnatural", "split": "train"}}}
    (cell,) = run_sweep(sweep, progress=False).cells
    results = json.loads((cell.folder / "results.json").read_text(encoding="utf-8"))
    assert cell.status == "ok" and results["f1"] == pytest.approx(100 * 11 / 18)


def test_a_rerun_skips_finished_cells_and_runs_changed_and_failed_ones(nc_built: Path, nico_built: Path,
                                                                      tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    down = {"spec": "openai:down", "base_url": f"http://127.0.0.1:{_closed_port()}/v1", "name": "down", "timeout": 2}
    sweep = _sweep(tmp_path, nc_built, nico_built, models=["baseline:repeat", down])
    first = run_sweep(sweep, progress=False)
    assert [cell.status for cell in first.cells] == ["ok", "failed"] * 4
    # the same file again: every ok cell is skipped (not run), the failed ones run (and fail) again
    second = run_sweep(sweep, progress=False)
    assert [cell.ran for cell in second.cells] == [False, True] * 4
    assert [cell.status for cell in second.cells] == ["ok", "failed"] * 4
    # a setting of NICO changed: only NICO's cells of the model that works run again; NC-Bench's are skipped
    sweep["models"] = ["baseline:repeat"]
    sweep["benchmarks"]["nico"]["max_new_tokens"] = 64
    third = run_sweep(sweep, progress=False)
    assert [(cell.name, cell.ran) for cell in third.cells] == [
        ("nc/baseline-repeat/rules=paper", False), ("nc/baseline-repeat/rules=released_script", False),
        ("nico/baseline-repeat/task=open_domain", True), ("nico/baseline-repeat/task=identify_unnatural", True)]
    signature = json.loads((third.cells[2].folder / "results.json").read_text())["signature"]
    assert signature["generation"]["max_new_tokens"] == 64  # the folder holds the new run
    # the failing model's cells left the file: kept in sweep.json as retired, their records whole
    state = _state(tmp_path)
    assert sorted(r["folder"] for r in state["retired"]) == sorted(c.name for c in first.cells if c.model == "openai:down")
    assert {r["status"] for r in state["retired"]} == {"failed"}
    # and once more: nothing runs
    assert not any(cell.ran for cell in run_sweep(sweep, progress=False).cells)
    # --rerun runs every cell
    assert all(cell.ran for cell in run_sweep(sweep, rerun=True, progress=False).cells)


def test_a_failing_cell_is_recorded_and_the_others_go_on(nc_built: Path, nico_built: Path, tmp_path: Path,
                                                         monkeypatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    port = _closed_port()
    down = {"spec": "openai:down", "base_url": f"http://127.0.0.1:{port}/v1", "name": "down", "timeout": 2}
    path = _write(tmp_path, _sweep(tmp_path, nc_built, nico_built, models=[down, "baseline:repeat"]))
    began = time.monotonic()
    assert main(["sweep", str(path), "--no-progress"]) == 1
    assert time.monotonic() - began < 20  # a refused connection fails the cell at once (no retries with backoff)
    captured = capsys.readouterr()
    state = _state(tmp_path)
    assert [(r["folder"], r["status"]) for r in state["cells"]] == [
        ("nc/down/rules=paper", "failed"), ("nc/baseline-repeat/rules=paper", "ok"),
        ("nc/down/rules=released_script", "failed"), ("nc/baseline-repeat/rules=released_script", "ok"),
        ("nico/down/task=open_domain", "failed"), ("nico/baseline-repeat/task=open_domain", "ok"),
        ("nico/down/task=identify_unnatural", "failed"), ("nico/baseline-repeat/task=identify_unnatural", "ok")]
    error = state["cells"][0]["error"]
    assert f"127.0.0.1:{port}" in error and "Connection refused" in error
    assert not (tmp_path / "sweep" / "nc" / "down" / "rules=paper" / "results.json").exists()
    # stderr: a line per cell starting and finished, then the one-line error; stdout: the table
    assert "[1/8] nc/down/rules=paper: running" in captured.err and "[2/8] nc/baseline-repeat/rules=paper: ok in" in captured.err
    assert captured.err.strip().splitlines()[-1] == (
        f"convbench: error: 4 of 8 cells failed (errors above and in {tmp_path / 'sweep' / 'sweep.json'}); run the "
        "sweep again to retry them")
    table = captured.out.splitlines()
    assert table[0].split() == ["cell", "status", "result", "or", "error"]
    assert table[1].split()[:3] == ["nc/down/rules=paper", "failed", "connection"]
    assert table[2].split()[:3] == ["nc/baseline-repeat/rules=paper", "ok", "accuracy"]
    assert f"8 cells: 4 ok, 4 failed; {tmp_path / 'sweep' / 'sweep.json'}" in table


def test_an_unexpected_error_fails_its_cell_and_ctrl_c_stops_the_sweep_after_saving(
        nico_built: Path, tmp_path: Path, monkeypatch) -> None:
    sweep = {"out": str(tmp_path / "sweep"), "cache": str(tmp_path / "c.sqlite"), "limit": 2,
             "models": ["baseline:repeat", "baseline:silence", "openai:never-asked"],
             "benchmarks": {"nico": {"dataset": str(nico_built), "task": "open_domain", "split": "train"}}}
    bench = get_benchmark("nico")
    real = bench.run

    def flaky(**kwargs: Any) -> Any:
        if kwargs["model"] == "baseline:silence":
            raise TypeError("a bug")
        if kwargs["model"] == "openai:never-asked":
            raise KeyboardInterrupt
        return real(**kwargs)

    monkeypatch.setattr(bench, "run", flaky)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(sweep, progress=False)
    state = _state(tmp_path)
    assert [(r["status"], r["error"]) for r in state["cells"]] == [
        ("ok", None), ("failed", "TypeError: a bug"), ("interrupted", "interrupted (Ctrl-C)")]
    monkeypatch.setattr(bench, "run", lambda **kwargs: real(**kwargs) if kwargs["model"].startswith("baseline:") else
                        pytest.fail("not reached"))
    sweep["models"] = sweep["models"][:2]
    again = run_sweep(sweep, progress=False)
    assert [(cell.status, cell.ran) for cell in again.cells] == [("ok", False), ("ok", True)]


def test_one_report_over_every_ok_cell(nc_built: Path, nico_built: Path, tmp_path: Path) -> None:
    result = run_sweep(_sweep(tmp_path, nc_built, nico_built), progress=False)
    if importlib.util.find_spec("matplotlib") is None:
        assert result.report is None and "pip install 'convbench[report]'" in result.report_note
        pytest.skip("the report extra (matplotlib) is not installed")
    assert result.report == tmp_path / "sweep" / "report" / "report.html"
    page = result.report.read_text(encoding="utf-8")
    assert page.count("<h3>baseline:") == 8  # each of the 8 runs' signature, under its name
    assert _state(tmp_path)["report"] == str(result.report)
    assert result.lines()[-1] == f"report: {result.report}"


def test_a_judge_gets_its_own_options_never_the_models(nc_built: Path, tmp_path: Path, monkeypatch) -> None:
    # the runner lends a judge without options the model's (convbench run: --base-url serves both); in a sweep
    # the models vary, so a judge's options are its own (here none: the backend's defaults), unless the judge
    # is the model itself with the same options, which the runner then shares
    class Seen(BaseException):  # not an Exception: the sweep lets it through, as it does Ctrl-C
        pass

    def run(**kwargs: Any) -> None:
        raise Seen(kwargs)

    monkeypatch.setattr(get_benchmark("nc"), "run", run)
    sweep = {"out": str(tmp_path / "o"), "models": [{"spec": "openai:m", "base_url": "http://model:8000/v1"}],
             "judges": ["openai:judge", {"spec": "openai:m", "base_url": "http://model:8000/v1"}],
             "benchmarks": {"nc": {"dataset": str(nc_built), "limit": 2}}}
    with pytest.raises(Seen) as caught:
        run_sweep(sweep, progress=False)
    (kwargs,) = caught.value.args
    assert kwargs["backend_options"] == {"base_url": "http://model:8000/v1"}
    assert kwargs["judge"] == ["openai:judge", "openai:m"]
    own, shared = kwargs["judge_options"]
    assert shared is None and own == dict.fromkeys(("base_url", "concurrency", "timeout", "api_key_env", "device",
                                                    "dtype", "batch_size", "model_id"))


def test_a_second_sweep_into_the_same_out_fails_at_once(nico_built: Path, tmp_path: Path) -> None:
    fcntl = pytest.importorskip("fcntl")  # no lock without it (Windows)

    sweep = {"out": str(tmp_path / "sweep"), "models": ["baseline:silence"],
             "benchmarks": {"nico": {"dataset": str(nico_built), "task": "open_domain", "split": "train", "limit": 2}}}
    (tmp_path / "sweep").mkdir()
    with open(tmp_path / "sweep" / ".sweep.lock", "a") as held:  # what a running sweep holds
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(ConvbenchError, match=r"another convbench sweep is running into .*sweep$"):
            run_sweep(sweep, progress=False)
    assert run_sweep(sweep, progress=False).exit_code == 0
