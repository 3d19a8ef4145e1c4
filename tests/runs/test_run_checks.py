"""No number leaves with exit code 0 from a run that measured nothing (issue #42): too many rows in error, a
role whose answers were mostly empty, a judge whose answers could not be read, a CoCoEval run that compared no
instance. Each is checked after ``run``, ``merge`` and ``score`` alike; the folder is written first.

Reported: a judge whose every answer was unparseable gave "accuracy 0.0%" with exit code 0; shards that each
exited 1 with 74% errors merged with exit code 0, and ``score`` of such a run exited 0; one replica answering
``content: ""`` wrote 599 empty answers of 720. Expected counts are derived by hand from the fixtures (the fake
server's answers, the rows asked)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from convbench_datasets.benchmark import BenchmarkBase, Unread
from convbench_datasets.cli import main
from convbench_datasets.engine.error_rate import TooManyErrors
from convbench_datasets.engine.run_folder import RunResult
from convbench_datasets.runs.run_checks import check_run, empty_answers
from tests.support.openai_server import ServerState, openai_server


class _Bench(BenchmarkBase):
    """A benchmark whose judge left ``unread`` answers of 20 unread and which measured something unless told."""

    name, title = "toy", "Toy"

    def __init__(self, unread: int = 0, spec: str = "openai:judge", nothing: str | None = None) -> None:
        self._unread, self._spec, self._nothing = unread, spec, nothing

    def unread(self, results: dict) -> list[Unread]:
        return [Unread(self._unread, 20, "judge answers", self._spec)]

    def unmeasured(self, results: dict) -> str | None:
        return self._nothing


def _result(errors: int = 0, empty: dict | None = None, model: str = "openai:m") -> RunResult:
    records = [{"id": f"r{i}", "error": "HTTP 400" if i < errors else None} for i in range(20)]
    results = {"signature": {"model": model, "judge": "openai:judge"}, "stats": {"empty_answers": empty or {}}}
    return RunResult(Path("runs/x"), records, results, results["stats"])


def test_each_check_holds_at_its_limit_and_fails_above_it() -> None:
    # 1 of 20 rows in error is 5% (allowed); 2 is 10%
    check_run(_result(errors=1), _Bench(), max_error_rate=0.05)
    with pytest.raises(TooManyErrors, match=r"^2 of 20 rows \(10\.0%\) ended in an error, more than the 5% "
                                            r"--max-error-rate allows; first: r0: HTTP 400; the run folder runs/x"):
        check_run(_result(errors=2), _Bench(), max_error_rate=0.05)
    # 2 of 20 empty model answers is 10% (allowed); 3 is 15%
    check_run(_result(empty={"model": {"empty": 2, "of": 20}}), _Bench(), max_error_rate=0.05)
    with pytest.raises(TooManyErrors, match=r"^3 of 20 model answers \(15\.0%\) were empty, more than the 10% "
                                            r"--max-empty-rate allows") as caught:
        check_run(_result(empty={"model": {"empty": 3, "of": 20}}), _Bench(), max_error_rate=0.05)
    assert (caught.value.errors, caught.value.total, caught.value.limit) == (3, 20, 0.1)
    # 2 of 20 unread judge answers is 10% (allowed, with a warning above 2%); 3 fails
    with pytest.warns(UserWarning, match=r"^2 of 20 judge answers \(10\.0%\) could not be read$"):
        check_run(_result(), _Bench(unread=2), max_error_rate=0.05)
    with pytest.raises(TooManyErrors, match=r"^3 of 20 judge answers \(15\.0%\) could not be read, more than the 10% "
                                            r"--max-unparsed-rate allows"):
        check_run(_result(), _Bench(unread=3), max_error_rate=0.05)
    with warnings.catch_warnings():  # 0 unread: not even a warning
        warnings.simplefilter("error")
        check_run(_result(), _Bench(unread=0), max_error_rate=0.05)
    # a benchmark that measured nothing fails whatever the limits
    with pytest.raises(TooManyErrors, match=r"^0 of 20 instances compared"):
        check_run(_result(), _Bench(nothing="0 of 20 instances compared"), max_error_rate=1, max_empty_rate=1,
                  max_unparsed_rate=1)


def test_every_failed_check_is_named_and_limits_of_one_accept_them() -> None:
    run, bench = _result(errors=20, empty={"model": {"empty": 20, "of": 20}}), _Bench(unread=20)
    with pytest.raises(TooManyErrors) as caught:
        check_run(run, bench, max_error_rate=0.05)
    message = str(caught.value)
    assert message.startswith("20 of 20 rows (100.0%) ended in an error") and (caught.value.errors, caught.value.limit) == (20, 0.05)
    assert "; and 20 of 20 model answers (100.0%) were empty" in message
    assert "; and 20 of 20 judge answers (100.0%) could not be read" in message
    with pytest.warns(UserWarning, match="20 of 20 judge answers"):  # accepted, and still said
        check_run(run, bench, max_error_rate=1, max_empty_rate=1, max_unparsed_rate=1)


def test_a_baseline_role_is_never_held_to_the_empty_or_unread_limits() -> None:
    # baseline:silence answers nothing by design; a baseline judge's answers are what it is for
    check_run(_result(empty={"model": {"empty": 20, "of": 20}}, model="baseline:silence"),
              _Bench(unread=20, spec="baseline:silence"), max_error_rate=0.05)
    # a served judge's empty answers are held to it
    with pytest.raises(TooManyErrors, match=r"^20 of 20 judge answers \(100\.0%\) were empty"):
        check_run(_result(empty={"judge": {"empty": 20, "of": 20}}), _Bench(), max_error_rate=0.05)
    assert empty_answers({"stats": {}}) == {} and empty_answers({}) == {}  # a run written before the count


def _nc(url: str, out: Path, nc_built: Path, cache: Path, *extra: str, judge_url: str | None = None,
        judge: str = "openai:verdict") -> int:
    return main(["run", "nc", "--model", "openai:label", "--judge", judge, "--base-url", url,
                 "--judge-base-url", judge_url or url, "--out", str(out), "--dataset", str(nc_built), "--config", "basic",
                 "--limit", "20", "--no-progress", "--cache", str(cache), *extra])


def test_a_judge_whose_answers_cannot_be_read_fails_the_run(tmp_path: Path, nc_built: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    with openai_server(ServerState(answer=lambda body: "I cannot tell")) as (url, _):
        assert _nc(url, tmp_path / "run", nc_built, tmp_path / "c.sqlite") == 1
        err = capsys.readouterr().err
        # every one of the 20 rows' judge answers is unreadable: before, "accuracy 0.0%" with exit code 0
        assert "20 of 20 judge answers (100.0%) could not be read, more than the 10% --max-unparsed-rate allows" in err
        results = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
        assert (results["unparsed"], results["n"]) == (20, 20)  # the folder is written, then the run fails
        # re-scoring the same folder prints the same number: the same check, the same exit code
        assert main(["score", str(tmp_path / "run")]) == 1
        assert "20 of 20 judge answers (100.0%) could not be read" in capsys.readouterr().err
        assert main(["score", str(tmp_path / "run"), "--max-unparsed-rate", "1"]) == 0
        # asked to accept them, the run itself exits 0 (everything from the cache)
        assert _nc(url, tmp_path / "run2", nc_built, tmp_path / "c.sqlite", "--max-unparsed-rate", "100%") == 0


def test_a_generator_answering_empty_fails_the_run_with_the_count(tmp_path: Path, nc_built: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    with openai_server(ServerState(broken="empty")) as (empty_url, _), openai_server() as (judge_url, _):
        assert _nc(empty_url, tmp_path / "run", nc_built, tmp_path / "c.sqlite", "--max-unparsed-rate", "1",
                   judge_url=judge_url) == 1
    err = capsys.readouterr().err
    assert "20 of 20 model answers (100.0%) were empty, more than the 10% --max-empty-rate allows" in err
    stats = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))["stats"]
    # the judge answered every row (the fake server's labels are never empty)
    assert stats["empty_answers"] == {"model": {"empty": 20, "of": 20}, "judge": {"empty": 0, "of": 20}}


def test_shards_over_the_error_limit_never_merge_into_a_passing_run(tmp_path: Path, nc_built: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    # the judge refuses about a quarter of the prompts (HTTP 400 for those the fake server's `affected` picks: a
    # per-row error); each shard exits 1 with its errors, and so must their merge
    with openai_server() as (url, _):
        for i in (1, 2):
            assert _nc(url, tmp_path / f"s{i}", nc_built, tmp_path / "c.sqlite", "--shard", f"{i}/2",
                       "--max-unparsed-rate", "1", judge="openai:refuse") == 1
    failed = [sum(json.loads(line)["error"] is not None for line in (tmp_path / f"s{i}" / "records.jsonl").open())
              for i in (1, 2)]
    assert all(n > 0 for n in failed)  # each shard over 5% of its 10 rows: 1 error is 10%
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "--out", str(tmp_path / "merged"),
                 "--max-unparsed-rate", "1"]) == 1
    share = f"({100 * sum(failed) / 20:.1f}%)"
    err = capsys.readouterr().err
    assert f"{sum(failed)} of 20 rows {share} ended in an error, more than the 5% --max-error-rate allows" in err
    # merge takes no --retry-errors: the message points at the run's own command
    assert "the run's own command (`convbench run ...`) with --retry-errors asks them again, then score it" in err
    assert (tmp_path / "merged" / "records.jsonl").is_file()  # written, as a run's folder is, then refused
    assert main(["merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "--out", str(tmp_path / "merged"),
                 "--max-error-rate", "1", "--max-unparsed-rate", "1"]) == 0
    # and score of the merged run: the same check
    assert main(["score", str(tmp_path / "merged"), "--max-unparsed-rate", "1"]) == 1


def test_a_cocoeval_run_that_compares_no_instance_fails(cocoeval_built: Path, tmp_path: Path) -> None:
    from convbench_datasets import run_cocoeval
    from convbench_datasets.engine import Generation
    from tests.cocoeval.test_cocoeval_run import Scripted
    from tests.support.cocoeval_script import is_simulation

    class Prose(Scripted):  # writes prose where turns are asked for: no simulation is complete
        def generate(self, prompts, params):  # type: ignore[no-untyped-def]
            for i, generation in super().generate(prompts, params):
                yield i, Generation("They talked." if is_simulation(prompts[i]) else generation.text)

    with pytest.raises(TooManyErrors, match=r"^0 of 2 instances compared \(simulation_incomplete 2\): this run "
                                            r"measured nothing$") as caught:
        run_cocoeval(model=Prose(), judge=Scripted(), out=tmp_path / "run", config="qmsum_committee", limit=2,
                     dataset=cocoeval_built, n_bootstrap=10, progress=False, cache=tmp_path / "c.sqlite")
    assert caught.value.result.results["n_compared"] == 0 and (tmp_path / "run" / "results.json").is_file()


def test_a_sweep_dry_run_refuses_what_the_run_would() -> None:
    from convbench_datasets.errors import ConvbenchError
    from convbench_datasets.runs.sweep_file import read_sweep

    # reported: --dry-run passed an anthropic: model sent OpenAI's max_completion_tokens, which the run refuses
    sweep = {"out": "x", "benchmarks": {"nico": {"task": "open_domain"}},
             "models": [{"spec": "anthropic:claude-x", "params": {"max_completion_tokens": 16}}]}
    with pytest.raises(ConvbenchError, match=r"models\[0\]\.params: max_completion_tokens is OpenAI's name; "
                                             r"Anthropic's Messages API takes max_tokens"):
        read_sweep(sweep)


def test_a_deeply_nested_param_is_one_line_not_a_recursion_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    deep = "x=" + "[" * 50_000 + "]" * 50_000
    assert main(["run", "nico", "--model", "openai:m", "--task", "open_domain", "--out", "o", "--param", deep]) != 0
    err = capsys.readouterr().err
    assert err.strip() == "convbench: error: --param x=...: the value nests too deeply to read"
