"""lm-eval from the shell (the documented commands), the task folder in the wheel, and convbench staying
free of lm_eval (these last tests run without the extra too)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

import convbench_datasets
from convbench_datasets.cli import main
from convbench_datasets.integrations.lm_eval import tasks_path
from tests.support.processes import run_python

PACKAGE = Path(convbench_datasets.__file__).resolve().parent
TASKS = sorted(
    [f"convbench_nico_{task}{suffix}.yaml" for task in ("open_domain", "dialog_completion", "rewrite_unnatural",
                                                         "identify_unnatural") for suffix in ("", "_3shot")]
    + [f"convbench_nc{config}.yaml" for config in ("", "_basic", "_rag", "_complex_request")])


def test_lm_eval_path_prints_the_task_folder(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lm-eval-path"]) == 0
    printed = capsys.readouterr().out
    assert printed == f"{tasks_path()}\n"
    assert sorted(p.name for p in Path(printed.strip()).glob("convbench_*.yaml")) == TASKS
    # each task file includes its benchmark's config, in the benchmark's folder, beside that config's utils.py
    for task in TASKS:
        include = yaml.safe_load((Path(printed.strip()) / task).read_text(encoding="utf-8"))["include"]
        config = (Path(printed.strip()) / include).resolve()
        benchmark = "nc" if task.startswith("convbench_nc") else "nico"
        assert config.parent == PACKAGE / benchmark / "lm_eval" and (config.parent / "utils.py").is_file(), task


def test_importing_convbench_does_not_import_lm_eval() -> None:
    done = run_python("""
        import sys
        import convbench_datasets, convbench_datasets.cli, convbench_datasets.engine, convbench_datasets.scoring
        import convbench_datasets.integrations.lm_eval
        import convbench_datasets.nico.lm_eval.task, convbench_datasets.nc.lm_eval.dataset, convbench_datasets.nc.lm_eval.samples
        convbench_datasets.cli._parser()
        print(sorted(m for m in sys.modules if m.split(".")[0] == "lm_eval"))
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.slow
def test_the_wheel_ships_the_task_folder(built_wheel: Path) -> None:
    names = set(zipfile.ZipFile(built_wheel).namelist())
    folder = "convbench_datasets/integrations/lm_eval/tasks/"
    assert {folder + name for name in TASKS} <= names
    assert {"convbench_datasets/nc/lm_eval/_nc_yaml", "convbench_datasets/nc/lm_eval/utils.py",
            "convbench_datasets/nico/lm_eval/_nico_generation_yaml", "convbench_datasets/nico/lm_eval/_nico_identify_yaml",
            "convbench_datasets/nico/lm_eval/utils.py"} <= names


@pytest.mark.slow
def test_the_documented_lm_eval_command_reports_convbench_scores(nico_built: Path, tmp_path: Path) -> None:
    # `lm_eval --include_path $(convbench lm-eval-path) --tasks convbench_nico_open_domain`, offline, with
    # lm-eval's dummy model (it answers "lol"); the numbers are convbench's for those answers
    pytest.importorskip("lm_eval", reason="lm-eval is not installed (pip install -e \".[lm-eval]\")")
    from tests.integrations.lm_eval_support import ScriptedBackend

    from convbench_datasets import run_nico

    lm_eval_cli, convbench_cli = Path(sys.executable).with_name("lm_eval"), Path(sys.executable).with_name("convbench")
    if not (lm_eval_cli.is_file() and convbench_cli.is_file()):
        pytest.skip("the lm_eval and convbench commands are not installed beside this interpreter")
    metadata = json.dumps({"convbench_dataset": str(nico_built), "convbench_split": "train"})
    command = (f"{lm_eval_cli} --model dummy --include_path $({convbench_cli} lm-eval-path) "
               f"--tasks convbench_nico_open_domain --metadata '{metadata}' --output_path {tmp_path / 'out'} --log_samples")
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=600, env=dict(os.environ))
    assert done.returncode == 0, done.stderr[-3000:]
    (results_file,) = (tmp_path / "out").glob("*/results_*.json")
    reported = json.loads(results_file.read_text(encoding="utf-8"))["results"]["convbench_nico_open_domain"]
    run = run_nico(task="open_domain", model=ScriptedBackend(lambda messages: "lol"), out=tmp_path / "run", split="train",
                   dataset=nico_built, cache=tmp_path / "c.sqlite", progress=False)
    keys = ("bleu_1", "bleu_2", "rouge_l", "distinct_1", "distinct_2", "avg_len")
    assert {key: reported[f"{key},none"] for key in keys} == {key: run.results[key] for key in keys}
    # "lol" is 3 characters (NICO's default token unit) and the same every time
    assert run.results["avg_len"] == 3.0 and run.results["distinct_1"] == pytest.approx(100 * 2 / 3)  # l, o of l o l
    assert "|convbench_nico_open_domain|" in done.stdout  # lm-eval's own table shows them


def test_score_from_lm_eval_needs_no_lm_eval(nc_built: Path, tmp_path: Path) -> None:
    # lm-eval makes the samples here; the scoring step runs in an interpreter where lm_eval cannot be imported
    pytest.importorskip("lm_eval", reason="lm-eval is not installed (pip install -e \".[lm-eval]\")")
    from tests.integrations.lm_eval_support import ScriptedLM, run_lm_eval, samples_file

    run_lm_eval(["convbench_nc_basic"], ScriptedLM(lambda messages: ""), metadata={"convbench_dataset": str(nc_built)},
                limit=5, out=tmp_path / "out")
    samples = samples_file(tmp_path / "out", "convbench_nc_basic")
    done = run_python(f"""
        import sys
        sys.modules["lm_eval"] = None  # as if not installed
        from convbench_datasets.cli import main
        sys.exit(main(["score", "--from-lm-eval", {str(samples)!r}, "--judge", "baseline:smoke-judge", "--out",
                       {str(tmp_path / "run")!r}, "--dataset", {str(nc_built)!r}, "--no-progress",
                       "--max-empty-rate", "1"]))  # every answer is empty, on purpose (below)
    """)
    assert done.returncode == 0, done.stderr
    results = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    # every answer is empty: the smoke judge says Silence, which passes only where silence is acceptable
    assert results["n"] == 5 and results["signature"]["limit"] == 5
    assert [r["labels"] for r in map(json.loads, (tmp_path / "run" / "records.jsonl").read_text().splitlines())] == [["Silence"]] * 5


@pytest.mark.slow
def test_a_missing_chat_template_flag_is_one_line_from_the_shell(nc_built: Path, tmp_path: Path) -> None:
    # lm-eval's command line prints the traceback of any error a task raises; convbench's usage errors end
    # it with one line instead (#24). lm-eval's own `dummy` model: nothing is asked of it before the error.
    # The session's build as the dataset (--metadata), so that the command does not build NC-Bench again.
    pytest.importorskip("lm_eval", reason="lm-eval is not installed (pip install -e \".[lm-eval]\")")
    env = {**os.environ, "CONVBENCH_CACHE": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "HF_HOME": str(tmp_path / "hf")}
    command = [str(Path(sys.executable).with_name("lm_eval")), "--model", "dummy", "--tasks", "convbench_nc_basic",
               "--include_path", str(tasks_path()), "--metadata", json.dumps({"convbench_dataset": str(nc_built)}),
               "--limit", "2", "--log_samples", "--output_path", str(tmp_path / "out")]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "lm_eval: error: convbench_nc_basic: NC-Bench rows are chat transcripts; run lm_eval with "
        "--apply_chat_template (a chat model, or an API chat model)")


def test_usage_errors_stay_exceptions_in_python(monkeypatch: pytest.MonkeyPatch) -> None:
    from convbench_datasets.integrations.lm_eval._usage import LmEvalUsageError, usage_error

    monkeypatch.setattr(sys, "argv", ["pytest"])
    error = usage_error("a message")
    assert isinstance(error, LmEvalUsageError) and str(error) == "a message"
    monkeypatch.setattr(sys, "argv", ["/venv/bin/lm_eval", "--tasks", "x"])
    error = usage_error("a message")
    assert isinstance(error, SystemExit) and error.code == "lm_eval: error: a message"
