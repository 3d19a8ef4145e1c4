"""inspect_ai finds convbench's tasks by name (entry points); what import-inspect refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("inspect_ai", reason="inspect_ai is not installed (pip install -e \".[inspect]\")")
# inspect's retry set-up calls tenacity with a parameter tenacity deprecates, once per model call
pytestmark = pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated:DeprecationWarning")

from convbench_datasets.cli import main  # noqa: E402
from convbench_datasets.integrations.inspect import nc  # noqa: E402
from tests.integrations.inspect_support import inspect_model, run_inspect  # noqa: E402
from tests.support.processes import run_python  # noqa: E402


@pytest.mark.slow
def test_inspect_finds_the_tasks_by_name_through_the_entry_points(nc_built: Path, nico_built: Path,
                                                                  tmp_path: Path) -> None:
    # A fresh interpreter: the names resolve only through the entry points pyproject.toml declares
    # (inspect eval convbench/nc ... resolves them the same way).
    done = run_python(f"""
        import sys
        from inspect_ai import eval
        from inspect_ai.model import ModelOutput, ModelUsage, get_model

        def answer(text):
            def output(messages, tools, tool_choice, config):
                result = ModelOutput.from_content("mockllm/model", text)
                result.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
                return result
            return get_model("mockllm/model", custom_outputs=output, memoize=False)

        assert "convbench_datasets.integrations.inspect" not in sys.modules
        for name, args in [("convbench/nc", {{"config": "rag", "dataset": {str(nc_built)!r}}}),
                           ("convbench_datasets/nc", {{"config": "basic", "dataset": {str(nc_built)!r}}}),
                           ("convbench/nico", {{"task": "open_domain", "split": "train", "dataset": {str(nico_built)!r}}})]:
            (log,) = eval(name, task_args=args, model=answer("Sure."), model_roles={{"grader": answer("Answer")}},
                          limit=2, log_dir={str(tmp_path)!r}, display="none")
            print(name, log.eval.task, log.status, sorted(log.results.scores[0].metrics)[0], len(log.samples))
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "convbench/nc convbench/nc success accuracy 2",
        "convbench_datasets/nc convbench/nc success accuracy 2",
        "convbench/nico convbench/nico success avg_len 2",
    ]


def test_import_inspect_refuses_what_it_cannot_import(nc_built: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import match

    model = inspect_model(lambda messages: "Sure.")
    foreign = run_inspect(Task(dataset=[Sample(input="Hi", target="Sure.")], scorer=match()), model, tmp_path / "logs")
    good = run_inspect(nc(config="basic", dataset=str(nc_built)), model, tmp_path / "logs",
                       grader=inspect_model(lambda messages: "Answer", "mockllm/judge"), limit=3)
    (unfinished,) = eval(nc(config="basic", dataset=str(nc_built)), model=model, limit=1, log_dir=str(tmp_path / "logs"),
                         display="none")  # no judge: the eval fails
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    (busy / "results.json").write_text("{}")  # a results.json of the user's makes no run folder (#19)
    cases = [
        ([foreign.location], "not a log of a convbench task (its eval metadata has no 'convbench' entry; its task: 'task')"),
        ([good.location, "--epoch", "2"], "no samples of epoch 2 (the log holds epochs [1])"),
        ([unfinished.location], "the evaluation ended with status 'error', so rows are missing"),
        ([str(tmp_path / "missing.eval")], "no such inspect log file"),
        ([str(busy / "notes.txt")], "cannot read it as an inspect log"),
    ]
    for argv, message in cases:
        assert main(["import-inspect", *argv, "--out", str(tmp_path / "run")]) == 1
        err = capsys.readouterr().err
        assert err.startswith("convbench: error: ") and message in err and err.count("\n") == 1, err
    assert main(["import-inspect", good.location, "--out", str(busy)]) == 1
    assert "is not empty and is not a run folder (no .convbench-run)" in capsys.readouterr().err
    assert (busy / "notes.txt").read_text() == "mine" and not (busy / "records.jsonl").exists()
    assert (busy / "results.json").read_text() == "{}"
    # an earlier run folder is replaced
    assert main(["import-inspect", good.location, "--out", str(tmp_path / "run")]) == 0
    assert main(["import-inspect", good.location, "--out", str(tmp_path / "run")]) == 0
    assert len((tmp_path / "run" / "records.jsonl").read_text().splitlines()) == 3
