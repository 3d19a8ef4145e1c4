"""`convbench sweep FILE.yaml` (issue #14, Sweeps): models x benchmarks x settings from one file, every
problem found before a cell runs, resumable, a failing cell recorded while the others go on, one report.

No network: baseline models, the NC-Bench smoke judge (`baseline:smoke-judge`), NC-Bench built from the
mirror (`nc_built`) and NICO's bundled sample (`nico_built`, whose test split is empty for some tasks:
the cells use `split: train`, as tests/nico/test_nico_run.py does)."""

from __future__ import annotations

import importlib.util
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from convbench_datasets import run_nc, run_nico
from convbench_datasets.cli import main
from convbench_datasets.errors import ConvbenchError
from convbench_datasets.registry import get_benchmark
from convbench_datasets.engine.backends import ModelRole
from convbench_datasets.runs.sweep import run_sweep
from convbench_datasets.runs.sweep_file import read_sweep
from tests.support.network import closed_port, closed_url


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
    # with ":" as "-", then every key the cell's block writes, key=value by key, the dataset as its folder's
    # name (fixed ones too: a name never depends on the other cells); NICO takes no judge, so it ignores the
    # default one (and the default judges are not the block's own: not in the name).
    nc, nico = "config=basic,dataset=nc", "dataset=nico"
    assert [cell.name for cell in result.cells] == [
        f"nc/baseline-repeat/{nc},rules=paper", f"nc/baseline-silence/{nc},rules=paper",
        f"nc/baseline-repeat/{nc},rules=released_script", f"nc/baseline-silence/{nc},rules=released_script",
        f"nico/baseline-repeat/{nico},shots=0,split=train,task=open_domain",
        f"nico/baseline-silence/{nico},shots=0,split=train,task=open_domain",
        f"nico/baseline-repeat/{nico},shots=3,split=train,task=open_domain",
        f"nico/baseline-silence/{nico},shots=3,split=train,task=open_domain",
        f"nico/baseline-repeat/{nico},shots=0,split=train,task=identify_unnatural",
        f"nico/baseline-silence/{nico},shots=0,split=train,task=identify_unnatural",
        f"nico/baseline-repeat/{nico},shots=3,split=train,task=identify_unnatural",
        f"nico/baseline-silence/{nico},shots=3,split=train,task=identify_unnatural",
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
    assert out[2].split() == ["nc/baseline-repeat/config=basic,dataset=nc,rules=paper", "baseline:repeat",
                              "config=basic", "rules=paper",
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
    assert cell.name == "nc/baseline-repeat/all_lines=true,dataset=nc,judge_template=convbench"  # as written
    sweep["benchmarks"]["nc"] = {}
    sweep["judges"] = "baseline:smoke-judge"
    assert [cell.name for cell in read_sweep(sweep).cells] == ["nc/baseline-repeat/run"]  # a block that sets nothing


def test_a_list_of_blocks_is_several_grids(nico_built: Path, tmp_path: Path) -> None:
    sweep = {"out": str(tmp_path / "o"), "models": ["baseline:silence"], "benchmarks": {"nico": [
        {"dataset": str(nico_built), "task": "open_domain", "shots": [0, 3]},
        {"dataset": str(nico_built), "task": "identify_unnatural", "split": "train"}]}}
    # each cell's name is what its own block writes: split is in the second block's names only
    assert [cell.name for cell in read_sweep(sweep).cells] == [
        "nico/baseline-silence/dataset=nico,shots=0,task=open_domain",
        "nico/baseline-silence/dataset=nico,shots=3,task=open_domain",
        "nico/baseline-silence/dataset=nico,split=train,task=identify_unnatural"]


def test_two_cells_in_one_folder_are_refused(nico_built: Path, tmp_path: Path) -> None:
    models = [{"spec": "openai:m", "base_url": "http://a:8000/v1"}, {"spec": "openai:m", "base_url": "http://b:8000/v1"}]
    sweep = {"out": str(tmp_path / "o"), "models": models,
             "benchmarks": {"nico": {"dataset": str(nico_built), "task": "open_domain"}}}
    with pytest.raises(ConvbenchError, match=r"two cells would share the folder nico/openai-m/dataset=nico,task=open_domain"):
        read_sweep(sweep)
    models[1]["name"] = "m-on-b"
    assert [cell.name for cell in read_sweep(sweep).cells] == ["nico/openai-m/dataset=nico,task=open_domain",
                                                               "nico/m-on-b/dataset=nico,task=open_domain"]


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
        "limt: unknown key; the keys of a sweep file: out, cache, sources, limit, retry_errors, max_error_rate, "
        "max_empty_rate, max_unparsed_rate, models, judges, benchmarks, base_url, concurrency, timeout, stall_timeout, "
        "api_key_env, device, dtype, batch_size, batch_order",
        "models[1]: unknown baseline 'nope'; choose one of silence, repeat, smoke-judge, cocoeval-sim, cocoeval-judge",
        "models[2].model_id: applies to openai: and anthropic: models only, not hf:x",
        "benchmarks.nc.max_new_tokens: expected a whole number of at least 1, got '12'",  # a string: never coerced
        # a combination only the benchmark's plan refuses: both keys named
        "benchmarks.nc.judge_template, benchmarks.nc.fill_request_details: --fill-request-details applies to the "
        "released judge prompt only (convbench's wording always names the request details)",
        "benchmarks.nc.config[1]: unknown NC-Bench config 'bogus'; choose one of basic, rag, complex_request, all",
        "benchmarks.nico[0].shots[1]: expected one of 0, 3, got 5",
        "benchmarks.nico[1].judges: NICO takes no judge",
        "benchmarks.nico[1].cache: not a setting here: `cache` is a top-level key (one response cache for every cell)",
        "benchmarks.nico[1].tsak: NICO takes no setting 'tsak' (its settings: task, shots, split, max_new_tokens, "
        "tokenizer, bleu_level, bleu_ngrams, rouge_l_f, bertscore, bertscore_model, bertscore_layer, blank_answer)",
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


@pytest.mark.parametrize("where", ["nico/baseline-silence/dataset=nico,limit=2,split=train,task=open_domain", "report"])
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


def test_a_silent_model_on_identify_unnatural_scores_as_its_blank_answers_are_read(nico_built: Path,
                                                                                    tmp_path: Path) -> None:
    # values derived by hand (tests/nico/test_nico_run.py): the silent model's blank answers are no answer, F1 0
    # with 18 unanswered; read as "none" (blank_answer: none), F1 100 on the 11 of the sample's 18 train
    # dialogues without an unnatural sentence and 0 on the others
    sweep = {"out": str(tmp_path / "sweep"), "models": ["baseline:silence"],
             "benchmarks": {"nico": {"dataset": str(nico_built), "task": "identify_unnatural", "split": "train",
                                     "blank_answer": ["unanswered", "none"]}}}
    cells = run_sweep(sweep, progress=False).cells
    results = {cell.settings["blank_answer"]: json.loads((cell.folder / "results.json").read_text(encoding="utf-8"))
               for cell in cells}
    assert {cell.status for cell in cells} == {"ok"} and sorted(results) == ["none", "unanswered"]
    assert (results["unanswered"]["f1"], results["unanswered"]["unanswered"]) == (0.0, 18)
    assert results["none"]["f1"] == pytest.approx(100 * 11 / 18) and results["none"]["unanswered"] == 0


def test_a_rerun_skips_finished_cells_and_runs_changed_and_failed_ones(nc_built: Path, nico_built: Path,
                                                                      tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    down = {"spec": "openai:down", "base_url": closed_url(), "name": "down", "timeout": 2}
    sweep = _sweep(tmp_path, nc_built, nico_built, models=["baseline:repeat", down])
    first = run_sweep(sweep, progress=False)
    assert [cell.status for cell in first.cells] == ["ok", "failed"] * 4
    # the same file again: every ok cell is skipped (not run), the failed ones run (and fail) again
    second = run_sweep(sweep, progress=False)
    assert [cell.ran for cell in second.cells] == [False, True] * 4
    assert [cell.status for cell in second.cells] == ["ok", "failed"] * 4
    # a setting written in NICO's block: only NICO's cells of the model that works run again, into folders
    # named after the new setting; NC-Bench's are skipped
    sweep["models"] = ["baseline:repeat"]
    sweep["benchmarks"]["nico"]["max_new_tokens"] = 64
    third = run_sweep(sweep, progress=False)
    nc, nico = "nc/baseline-repeat/config=basic,dataset=nc", "nico/baseline-repeat/dataset=nico,max_new_tokens=64"
    assert [(cell.name, cell.ran) for cell in third.cells] == [
        (f"{nc},rules=paper", False), (f"{nc},rules=released_script", False),
        (f"{nico},split=train,task=open_domain", True), (f"{nico},split=train,task=identify_unnatural", True)]
    signature = json.loads((third.cells[2].folder / "results.json").read_text())["signature"]
    assert signature["generation"]["max_new_tokens"] == 64  # the folder holds the new run
    # the failing model's cells and the NICO cells without max_new_tokens left the file: kept in sweep.json as
    # retired, their records whole, and their folders left as they were
    state = _state(tmp_path)
    old_nico = [c.name for c in first.cells if c.model == "baseline:repeat" and c.benchmark == "nico"]
    assert sorted((r["folder"], r["status"]) for r in state["retired"]) == sorted(
        [(c.name, "failed") for c in first.cells if c.model == "openai:down"] + [(name, "ok") for name in old_nico])
    assert all((tmp_path / "sweep" / name / "results.json").is_file() for name in old_nico)
    # a change that is not the block's (the top-level limit): the same folders, every cell runs again into its own
    sweep["limit"] = 2
    fourth = run_sweep(sweep, progress=False)
    assert [(cell.name, cell.ran) for cell in fourth.cells] == [(cell.name, True) for cell in third.cells]
    assert json.loads((fourth.cells[0].folder / "results.json").read_text())["signature"]["rows"] == 2
    # and once more: nothing runs
    assert not any(cell.ran for cell in run_sweep(sweep, progress=False).cells)
    # --rerun runs every cell
    assert all(cell.ran for cell in run_sweep(sweep, rerun=True, progress=False).cells)


def test_a_failing_cell_is_recorded_and_the_others_go_on(nc_built: Path, nico_built: Path, tmp_path: Path,
                                                         monkeypatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    port = closed_port()
    down = {"spec": "openai:down", "base_url": f"http://127.0.0.1:{port}/v1", "name": "down", "timeout": 2}
    path = _write(tmp_path, _sweep(tmp_path, nc_built, nico_built, models=[down, "baseline:repeat"]))
    began = time.monotonic()
    assert main(["sweep", str(path), "--no-progress"]) == 1
    assert time.monotonic() - began < 20  # a refused connection fails the cell at once (no retries with backoff)
    captured = capsys.readouterr()
    state = _state(tmp_path)
    nc, nico = "config=basic,dataset=nc,rules=", "dataset=nico,split=train,task="
    assert [(r["folder"], r["status"]) for r in state["cells"]] == [
        (f"nc/down/{nc}paper", "failed"), (f"nc/baseline-repeat/{nc}paper", "ok"),
        (f"nc/down/{nc}released_script", "failed"), (f"nc/baseline-repeat/{nc}released_script", "ok"),
        (f"nico/down/{nico}open_domain", "failed"), (f"nico/baseline-repeat/{nico}open_domain", "ok"),
        (f"nico/down/{nico}identify_unnatural", "failed"), (f"nico/baseline-repeat/{nico}identify_unnatural", "ok")]
    error = state["cells"][0]["error"]
    assert f"127.0.0.1:{port}" in error and "Connection refused" in error
    assert not (tmp_path / "sweep" / "nc" / "down" / f"{nc}paper" / "results.json").exists()
    # stderr: a line per cell starting and finished, then the one-line error; stdout: the table
    assert f"[1/8] nc/down/{nc}paper: running" in captured.err
    assert f"[2/8] nc/baseline-repeat/{nc}paper: ok in" in captured.err
    assert captured.err.strip().splitlines()[-1] == (
        f"convbench: error: 4 of 8 cells failed (errors above and in {tmp_path / 'sweep' / 'sweep.json'}); run the "
        "sweep again to retry them")
    table = captured.out.splitlines()
    assert table[0].split() == ["cell", "status", "result", "or", "error"]
    assert table[1].split()[:3] == [f"nc/down/{nc}paper", "failed", "connection"]
    assert table[2].split()[:3] == [f"nc/baseline-repeat/{nc}paper", "ok", "accuracy"]
    assert f"8 cells: 4 ok, 4 failed; {tmp_path / 'sweep' / 'sweep.json'}" in table


def test_an_unexpected_error_fails_its_cell_and_ctrl_c_stops_the_sweep_after_saving(
        nico_built: Path, tmp_path: Path, monkeypatch) -> None:
    sweep = {"out": str(tmp_path / "sweep"), "cache": str(tmp_path / "c.sqlite"), "limit": 2,
             "models": ["baseline:repeat", "baseline:silence", "openai:never-asked"],
             "benchmarks": {"nico": {"dataset": str(nico_built), "task": "open_domain", "split": "train"}}}
    import convbench_datasets.runs.sweep as sweeps

    real = sweeps.run_config

    def flaky(config: Any, bench: Any) -> Any:
        if config.model.spec == "baseline:silence":
            raise TypeError("a bug")
        if config.model.spec == "openai:never-asked":
            raise KeyboardInterrupt
        return real(config, bench)

    monkeypatch.setattr(sweeps, "run_config", flaky)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(sweep, progress=False)
    state = _state(tmp_path)
    assert [(r["status"], r["error"]) for r in state["cells"]] == [
        ("ok", None), ("failed", "TypeError: a bug"), ("interrupted", "interrupted (Ctrl-C)")]
    monkeypatch.setattr(sweeps, "run_config", lambda config, bench: real(config, bench)
                        if config.model.spec.startswith("baseline:") else pytest.fail("not reached"))
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

    def run(config: Any, bench: Any) -> None:
        raise Seen(config)

    import convbench_datasets.runs.sweep as sweeps

    monkeypatch.setattr(sweeps, "run_config", run)
    sweep = {"out": str(tmp_path / "o"), "models": [{"spec": "openai:m", "base_url": "http://model:8000/v1"}],
             "judges": ["openai:judge", {"spec": "openai:m", "base_url": "http://model:8000/v1"}],
             "benchmarks": {"nc": {"dataset": str(nc_built), "limit": 2}}}
    with pytest.raises(Seen) as caught:
        run_sweep(sweep, progress=False)
    (config,) = caught.value.args
    assert config.model == ModelRole("openai:m", base_url="http://model:8000/v1")
    own, shared = config.judges
    assert own == ModelRole("openai:judge")  # the backend's defaults: not the model's server
    assert shared == config.model  # the model itself: one role, shared


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


# -- folder names stay put; flag spellings; checks before any model call (review of issue #14) -----------------


def test_adding_cells_never_renames_or_reruns_a_finished_one(nico_built: Path, tmp_path: Path) -> None:
    # a cell's folder is named after its own block only: a block added beside it, or a limit added to that
    # other block, leaves its name, and so its finished results, alone (before: the name listed the settings
    # that differ between the benchmark's cells, so the first cell was renamed to task=open_domain and ran again)
    first = {"dataset": str(nico_built), "task": "open_domain", "split": "train"}
    sweep = {"out": str(tmp_path / "sweep"), "cache": str(tmp_path / "c.sqlite"), "limit": 2,
             "models": ["baseline:silence"], "benchmarks": {"nico": dict(first)}}
    name = "nico/baseline-silence/dataset=nico,split=train,task=open_domain"
    (cell,) = run_sweep(sweep, progress=False).cells
    assert (cell.name, cell.status, cell.ran) == (name, "ok", True)
    sweep["benchmarks"]["nico"] = [dict(first), {"dataset": str(nico_built), "task": "identify_unnatural", "split": "train"}]
    cells = run_sweep(sweep, progress=False).cells
    assert [(c.name, c.ran) for c in cells] == [
        (name, False), ("nico/baseline-silence/dataset=nico,split=train,task=identify_unnatural", True)]
    sweep["benchmarks"]["nico"][1]["limit"] = 1
    cells = run_sweep(sweep, progress=False).cells
    assert [(c.name, c.ran) for c in cells] == [
        (name, False), ("nico/baseline-silence/dataset=nico,limit=1,split=train,task=identify_unnatural", True)]
    state = _state(tmp_path)
    assert [r["folder"] for r in state["retired"]] == ["nico/baseline-silence/dataset=nico,split=train,task=identify_unnatural"]
    assert sorted(p.name for p in (tmp_path / "sweep" / "nico" / "baseline-silence").iterdir()) == [
        "dataset=nico,limit=1,split=train,task=identify_unnatural", "dataset=nico,split=train,task=identify_unnatural",
        "dataset=nico,split=train,task=open_domain"]


def test_a_flag_that_sets_two_keywords_sets_both_by_either_spelling(nico_built: Path, tmp_path: Path) -> None:
    # --bertscore MODEL is bertscore=True, bertscore_model=MODEL; by its keyword, bertscore_model: MODEL turns
    # BERTScore on too (before: the flag's spelling passed the name as `bertscore`, and the keyword alone
    # left BERTScore off while naming the folder after it)
    def cells(block: dict[str, Any]) -> list[Any]:
        sweep = {"out": str(tmp_path / "o"), "models": ["baseline:silence"],
                 "benchmarks": {"nico": {"dataset": str(nico_built), "task": "open_domain", **block}}}
        return read_sweep(sweep).cells

    for key in ("bertscore", "bertscore_model"):
        (cell,) = cells({key: "my-encoder"})
        assert cell.settings == {"task": "open_domain", "bertscore": True, "bertscore_model": "my-encoder"}, key
        assert cell.name == f"nico/baseline-silence/{key}=my-encoder,dataset=nico,task=open_domain"
    with pytest.raises(ConvbenchError, match=r"^sweep: benchmarks.nico.bertscore: expected MODEL \(a string\), got "
                                             r"True: bertscore is --bertscore MODEL, which sets bertscore_model, "
                                             r"bertscore \(leave the key out to leave it off\)$"):
        cells({"bertscore": True})
    with pytest.raises(ConvbenchError, match=r"benchmarks.nico.bertscore_model: sets bertscore_model, as "
                                             r"benchmarks.nico.bertscore does: keep one of them"):
        cells({"bertscore": "a", "bertscore_model": "b"})
    # the plan itself refuses a model name where it takes true or false
    from convbench_datasets.nico.run import NICOPlan

    with pytest.raises(ConvbenchError, match=r"^bertscore must be True or False, got 'my-encoder'; to name the "
                                             r"BERTScore model give bertscore=True and bertscore_model='my-encoder'"):
        NICOPlan(task="open_domain", bertscore="my-encoder")  # type: ignore[arg-type]


def test_a_bad_tokenizer_is_found_before_anything_runs_and_a_bad_split_before_any_model_call(
        nico_built: Path, tmp_path: Path, monkeypatch) -> None:
    sweep = {"out": str(tmp_path / "sweep"), "models": ["baseline:silence"],
             "benchmarks": {"nico": {"dataset": str(nico_built), "task": "open_domain", "split": "train",
                                     "tokenizer": ["char", "bogus"]}}}
    with pytest.raises(ConvbenchError, match=r"^sweep: benchmarks.nico.tokenizer\[1\]: unknown NICO tokenizer 'bogus'; "
                                             r"choose one of jieba, char, 13a$"):
        run_sweep(sweep, dry_run=True)
    # a split is known only by reading the build: the cell fails on it, before its model is asked anything
    # (a server that cannot be reached would fail it with "Connection refused")
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    down = {"spec": "openai:down", "base_url": closed_url(), "timeout": 2}
    sweep["models"], sweep["limit"] = [down], 2
    sweep["benchmarks"]["nico"].update(tokenizer="char", split="bogus")
    (cell,) = run_sweep(sweep, progress=False).cells
    assert cell.status == "failed" and cell.error.startswith("NICO open_domain: no examples in split 'bogus' of the build at")


def test_a_folder_a_killed_run_left_is_taken_and_a_users_is_not(nico_built: Path, tmp_path: Path) -> None:
    # a run killed after taking its folder (the marker is written first) and records.jsonl, before results.json,
    # mid-way through an atomic write, holding its lock
    sweep = {"out": str(tmp_path / "sweep"), "models": ["baseline:silence"],
             "benchmarks": {"nico": {"dataset": str(nico_built), "task": "open_domain", "split": "train", "limit": 2}}}
    folder = tmp_path / "sweep" / "nico" / "baseline-silence" / "dataset=nico,limit=2,split=train,task=open_domain"
    folder.mkdir(parents=True)
    (folder / ".convbench-run").write_text('{"convbench_run": 1, "shard": null}\n', encoding="utf-8")
    (folder / "records.jsonl").write_text('{"id": "a"}\n{"id": "b"}\n', encoding="utf-8")
    for left in (".lock", ".results.json.k2x_9q0a.tmp", ".records.jsonl.abcdefgh.tmp"):
        (folder / left).write_text("{", encoding="utf-8")
    (cell,) = run_sweep(sweep, progress=False).cells
    assert cell.status == "ok" and json.loads((folder / "results.json").read_text())["n"] == 2
    # the same files without the marker are a user's: whatever they are named, they refuse the folder
    from convbench_datasets.engine.run_folder import check_run_out

    for name, text in (("records.jsonl", '{"id": "a"}\n'), (".lock", ""), (".results.json.k2x_9q0a.tmp", "{"),
                       ("results.json", "{}"), ("notes.txt", "mine")):
        mine = tmp_path / "mine" / name
        mine.parent.mkdir(exist_ok=True)
        mine.write_text(text, encoding="utf-8")
        with pytest.raises(ConvbenchError, match=rf"is not empty and is not a run folder \(no \.convbench-run\): it "
                                                 rf"holds {re.escape(name)}, and is never written into"):
            check_run_out(mine.parent)
        mine.unlink()
    check_run_out(tmp_path / "mine")  # empty: taken


def _rewrite_reversed(parquet: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(parquet)
    pq.write_table(pa.Table.from_pylist(table.to_pylist()[::-1], schema=table.schema), parquet)


def test_a_done_cell_runs_again_when_its_dataset_changed_in_place_or_convbench_did(nico_built: Path,
                                                                                  tmp_path: Path) -> None:
    # the definition names the dataset by its path; a build rewritten there (here: its rows reversed) is
    # noticed by the fingerprint of the rows the cell reads, as a run now would sign them
    import shutil

    data = tmp_path / "nico"
    shutil.copytree(nico_built, data)
    lines: list[str] = []
    sweep = {"out": str(tmp_path / "sweep"), "cache": str(tmp_path / "c.sqlite"), "limit": 2,
             "models": ["baseline:repeat"],
             "benchmarks": {"nico": {"dataset": str(data), "task": "open_domain", "split": "train"}}}
    (cell,) = run_sweep(sweep, progress=False, echo=lines.append).cells
    before = json.loads((cell.folder / "results.json").read_text())["signature"]["dataset_fingerprint"]
    (cell,) = run_sweep(sweep, progress=False, echo=lines.append).cells
    assert not cell.ran and lines[-1] == f"[1/1] {cell.name}: done before (same definition), skipped"
    _rewrite_reversed(data / "open_domain" / "train-00000-of-00001.parquet")
    direct = run_nico(model="baseline:repeat", task="open_domain", split="train", limit=2, dataset=data,
                      out=tmp_path / "direct", cache=tmp_path / "c.sqlite", progress=False)
    now = direct.results["signature"]["dataset_fingerprint"]
    assert now != before
    lines.clear()
    (cell,) = run_sweep(sweep, progress=False, echo=lines.append).cells
    assert cell.ran and cell.status == "ok"
    assert lines[0] == (f"[1/1] {cell.name}: running again: the rows it reads changed since it ran (dataset "
                        f"fingerprint {now}, its results' {before}; answers come from the cache)")
    results = json.loads((cell.folder / "results.json").read_text())
    assert _scores(results) == _scores(direct.results)
    assert results["stats"]["model_calls"] == 0  # the reversed rows' first two were answered by the direct run
    # results made by another convbench version run again (prompts and scoring may have changed)
    results["signature"]["convbench_version"] = "0.0.1"
    (cell.folder / "results.json").write_text(json.dumps(results), encoding="utf-8")
    lines.clear()
    (cell,) = run_sweep(sweep, progress=False, echo=lines.append).cells
    assert cell.ran and lines[0].startswith(f"[1/1] {cell.name}: running again: its results were made by convbench "
                                            "0.0.1, this is ")
    assert not run_sweep(sweep, progress=False).cells[0].ran


def test_values_a_folder_name_cannot_keep_end_in_a_hash_of_the_value(nico_built: Path, tmp_path: Path) -> None:
    # before: both splits slugged to "empty" (a collision); now each is the first 8 hex digits of its sha256
    # (printf '训练' | sha256sum), a value only partly kept ("Qwen/x") keeps what it can
    sweep = {"out": str(tmp_path / "o"), "models": ["baseline:silence"],
             "benchmarks": {"nico": {"dataset": str(nico_built), "task": "open_domain", "split": ["训练", "测试"],
                                     "bertscore": "Qwen/x"}}}
    assert [cell.name for cell in read_sweep(sweep).cells] == [
        "nico/baseline-silence/bertscore=Qwen-x-d7e28bc5,dataset=nico,split=a29c0de1,task=open_domain",
        "nico/baseline-silence/bertscore=Qwen-x-d7e28bc5,dataset=nico,split=6aa8f49c,task=open_domain"]


def test_zero_and_false_are_two_values_and_paths_may_start_with_a_tilde(nico_built: Path, tmp_path: Path,
                                                                       monkeypatch) -> None:
    sweep = {"out": str(tmp_path / "o"), "models": ["baseline:silence"],
             "benchmarks": {"nico": {"dataset": str(nico_built), "task": "open_domain", "shots": [0, False]}}}
    # false is not a repeat of 0 (it was, as False == 0): it is a value of its own, and not a whole number
    with pytest.raises(ConvbenchError, match=r"^sweep: benchmarks.nico.shots\[1\]: expected a whole number, got False$"):
        read_sweep(sweep)
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "builds").mkdir()
    import shutil

    shutil.copytree(nico_built, tmp_path / "builds" / "nico")
    sweep.update(out="~/o", cache="~/c.sqlite", sources="~/mirror")
    sweep["benchmarks"]["nico"].update(dataset="~/builds/nico", shots=0)
    read = read_sweep(sweep)
    assert (read.out, read.cache, read.sources) == (tmp_path / "o", str(tmp_path / "c.sqlite"), str(tmp_path / "mirror"))
    assert read.cells[0].dataset == str(tmp_path / "builds" / "nico")


def test_a_dataset_may_be_a_name_datasets_finds_but_not_a_missing_path(nico_built: Path, tmp_path: Path) -> None:
    # as `convbench run --dataset`: a name (an installed convbench/nico, a Hub id) is read through `datasets`
    def read(dataset: str) -> Any:
        return read_sweep({"out": str(tmp_path / "o"), "models": ["baseline:silence"],
                           "benchmarks": {"nico": {"dataset": dataset, "task": "open_domain"}}})

    (cell,) = read("convbench/nico").cells
    assert cell.dataset == "convbench/nico"
    assert cell.name == "nico/baseline-silence/dataset=convbench-nico-39fe0614,task=open_domain"
    (tmp_path / "a-file").write_text("")
    for path, why in ((str(tmp_path / "missing"), "no such folder"), ("./missing", "no such folder"),
                      (str(tmp_path / "a-file"), "not a folder")):
        with pytest.raises(ConvbenchError, match=rf"^sweep: benchmarks.nico.dataset: expected a folder from `convbench "
                                                 rf"build`, got '{path}' \({why}"):
            read(path)
