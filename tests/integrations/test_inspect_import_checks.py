"""import-inspect reads only the log of convbench's own task, as inspect wrote it (issue 19): a log of another task
(even one carrying convbench's metadata) or one whose metadata names another benchmark is refused, naming the log
and the task it holds; a server URL with user-info never reaches the run folder; the epoch is counted."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("inspect_ai", reason="inspect_ai is not installed (pip install -e \".[inspect]\")")
pytestmark = pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated:DeprecationWarning")

from inspect_ai.log import EvalLog, write_eval_log  # noqa: E402

from convbench_datasets.cli import main  # noqa: E402
from convbench_datasets.counts import CountError  # noqa: E402
from convbench_datasets.errors import ConvbenchError  # noqa: E402
from convbench_datasets.integrations.inspect import nc, nico
from convbench_datasets.runs.api import import_inspect_log# noqa: E402
from tests.integrations.inspect_support import inspect_model, run_inspect  # noqa: E402

KEY = "sk-proj-inspect-5150"


@pytest.fixture(scope="module")
def nico_log(nico_built: Path, tmp_path_factory: pytest.TempPathFactory) -> EvalLog:
    tmp = tmp_path_factory.mktemp("nico-inspect")
    return run_inspect(nico(task="open_domain", dataset=str(nico_built), split="train"),
                       inspect_model(lambda messages: "好啊"), tmp / "logs")


def _saved(log: EvalLog, path: Path) -> str:
    write_eval_log(log, str(path))
    return str(path)


def test_a_log_whose_metadata_names_another_benchmark_is_refused(nico_log: EvalLog, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    edited = nico_log.model_copy(deep=True)
    edited.eval.metadata["convbench"]["benchmark"] = "nc"  # a nico log read as nc
    path = _saved(edited, tmp_path / "edited.eval")
    assert main(["import-inspect", path, "--out", str(tmp_path / "run")]) == 1
    err = capsys.readouterr().err
    assert err == (f"convbench: error: {path}: a log of task 'nico', but its convbench metadata names 'nc': the log "
                   "was edited or mixed up; import the log of the task as inspect wrote it\n")
    assert not (tmp_path / "run").exists()


def test_a_task_that_is_not_convbenchs_is_refused_even_with_its_metadata(nc_built: Path, tmp_path: Path) -> None:
    from inspect_ai import Task
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import match

    borrowed = run_inspect(nc(config="basic", dataset=str(nc_built)), inspect_model(lambda m: "Sure."), tmp_path / "a",
                           grader=inspect_model(lambda m: "Answer", "mockllm/judge"), limit=2).eval.metadata
    foreign = run_inspect(Task(dataset=[Sample(input="Hi", target="Sure.")], scorer=match(), metadata=borrowed,
                               name="my_eval"), inspect_model(lambda m: "Sure."), tmp_path / "b")
    with pytest.raises(ConvbenchError, match=rf"^{foreign.location}: a log of task 'my_eval', not of convbench's nc task "
                                             r"\(convbench/nc\): import-inspect reads logs of"):
        import_inspect_log(foreign.location, tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_user_info_in_the_logs_server_url_never_reaches_the_run_folder(nico_log: EvalLog, tmp_path: Path) -> None:
    edited = nico_log.model_copy(deep=True)
    edited.eval.model_base_url = f"http://user:{KEY}@llm.example/v1?key={KEY}"
    result = import_inspect_log(_saved(edited, tmp_path / "url.eval"), tmp_path / "run")
    assert result.results["signature"]["model_identity"]["base_url"] == "http://llm.example/v1"
    assert all(KEY not in path.read_text() for path in (tmp_path / "run").iterdir() if path.is_file())


@pytest.mark.parametrize("epoch", [1.0, True, 0])
def test_the_epoch_is_a_count(epoch: object, nico_log: EvalLog, tmp_path: Path) -> None:
    with pytest.raises(CountError, match=r"^epoch \(--epoch\) must be "):
        import_inspect_log(nico_log, tmp_path / "run", epoch=epoch)  # type: ignore[arg-type]
