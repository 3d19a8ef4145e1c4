"""Every row accounted for (issue #10): a prompt the server refuses for good, or answers with nothing
usable, becomes that row's recorded error; the run completes, counts it, and reruns do not ask it again
unless --retry-errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convbench_datasets.cli import main
from convbench_datasets.engine import ResponseCache
from convbench_datasets import run_nc
from convbench_datasets.engine.backends.openai_compat import OpenAICompatBackend, RetryPolicy
from tests.support.openai_server import affected, openai_server

FAST = RetryPolicy(max_retries=1, base_delay=0.01, max_delay=0.02)


def _rows(nc_built: Path, n: int) -> list[dict]:
    import datasets

    from convbench_datasets.class_labels import named_rows  # set, task and pattern as names, as a run reads them

    return named_rows(datasets.load_dataset(str(nc_built), "basic", split="test"))[:n]


def _cli(url: str, nc_built: Path, tmp_path: Path, model: str, judge: str, *extra: str) -> list[str]:
    return ["run", "nc", "--config", "basic", "--limit", "30", "--model", model, "--judge", judge, "--base-url", url,
            "--dataset", str(nc_built), "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "c.sqlite"),
            "--no-progress", "--max-error-rate", "1",  # any share of errors: these tests count them
            "--max-unparsed-rate", "1", *extra]  # the fake judge answers "I am not sure" on ~1 row in 6


def test_refused_generations_are_row_errors_and_not_asked_again(nc_built: Path, tmp_path: Path, capsys) -> None:
    # The server refuses (HTTP 400) the generation prompts that `affected` picks; before the fix every
    # rerun exited 1 with RunIncomplete and no results were written.
    refused = [(r["set"], r["id"]) for r in _rows(nc_built, 30) if affected(r["messages"])]
    assert 0 < len(refused) < 30
    with openai_server() as (url, state):
        assert main(_cli(url, nc_built, tmp_path, "openai:refuse", "openai:label")) == 0
        asked = state.count()
        assert asked == 30 + (30 - len(refused))  # rows without a response are not sent to the judge
        records = [json.loads(line) for line in (tmp_path / "run" / "records.jsonl").read_text().splitlines()]
        results = json.loads((tmp_path / "run" / "results.json").read_text())
        assert len(records) == 30
        errors = [r for r in records if r["error"] is not None]
        assert [(r["set"], r["id"]) for r in errors] == refused
        for r in errors:
            assert r["error"].startswith(f"model: refused for this row: HTTP 400 from {url}/chat/completions: maximum context")
            assert not r["passed"] and not r["unparsed"] and r["judge_cache_hit"] is None and r["response"] == ""
        # failures for accuracy, counted apart from unparsed judge answers
        assert results["errors"] == len(refused) and results["n"] == 30
        assert results["passed"] == sum(r["passed"] for r in records)
        assert results["unparsed"] == sum(r["judge_output"] == "I am not sure" for r in records if r["error"] is None)
        assert f"errors: {len(refused)})" in capsys.readouterr().out

        # the same command again: the errors are recorded from the cache, nothing is asked
        assert main(_cli(url, nc_built, tmp_path, "openai:refuse", "openai:label")) == 0
        assert state.count() == asked
        again = [json.loads(line) for line in (tmp_path / "run" / "records.jsonl").read_text().splitlines()]
        assert [r["error"] for r in again] == [r["error"] for r in records]
        assert all(r["model_cache_hit"] for r in again)

        # --retry-errors asks exactly the refused prompts again (the server refuses them again)
        assert main(_cli(url, nc_built, tmp_path, "openai:refuse", "openai:label", "--retry-errors")) == 0
        assert state.count() == asked + len(refused)
        retried = [json.loads(line) for line in (tmp_path / "run" / "records.jsonl").read_text().splitlines()]
        assert [r["model_cache_hit"] for r in retried] == [r["error"] is None for r in retried]
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        stats = cache.stats()
    assert stats["errors"] == len(refused) and stats["entries"] == 2 * (30 - len(refused))  # errors are not answers


def test_judge_content_filter_counts_as_a_failure(nc_built: Path, tmp_path: Path) -> None:
    with openai_server() as (url, state):
        run = run_nc(model="baseline:repeat", judge="openai:filtered", out=tmp_path / "run", config="basic", limit=30,
                     dataset=nc_built, cache=tmp_path / "c.sqlite", judge_options={"base_url": url}, progress=False,
                     max_error_rate=1,
                     max_unparsed_rate=1)  # the fake judge answers "I am not sure" on ~1 row in 6 (openai_server.py)
    errors = [r for r in run.records if r["error"] is not None]
    assert errors and run.results["errors"] == len(errors) == 30 - sum(r["judge_finish_reason"] == "stop" for r in run.records)
    assert all(r["error"].startswith("judge: refused for this row: content filter") and not r["passed"] for r in errors)
    assert all(r["judge_cache_hit"] is False for r in run.records)
    # the failure breakdown names them, apart from unparsed answers (ncbench_action's ERROR_LABEL)
    shares = [share for pattern in run.results["failure_breakdown"].values() for label, share in pattern.items()
              if label == "(error)"]
    assert shares


def test_a_null_reply_is_never_cached_as_an_empty_turn(nc_built: Path, tmp_path: Path) -> None:
    with openai_server() as (url, state):
        generator = OpenAICompatBackend("null", base_url=url, retry=FAST)
        run = run_nc(model=generator, judge="baseline:silence", out=tmp_path / "run", config="basic", limit=30,
                     dataset=nc_built, cache=tmp_path / "c.sqlite", progress=False, max_error_rate=1)
    nulls = [r for r in run.records if r["error"] is not None]
    assert [(r["set"], r["id"]) for r in nulls] == [(r["set"], r["id"]) for r in _rows(nc_built, 30) if affected(r["messages"])]
    assert all("gave up after 2 attempts: reply has message.content null" in r["error"] for r in nulls)
    assert {r["finish_reason"] for r in run.records if r["error"] is None} == {"stop"}
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        stats = cache.stats()
    # before the fix, each null became an empty answer, cached (30 generator entries) and judged as Silence
    assert {m["backend"]: m["entries"] for m in stats["models"]}["openai"] == 30 - len(nulls)
    assert stats["errors"] == len(nulls)


def test_transient_failures_still_leave_the_run_incomplete(nc_built: Path, tmp_path: Path) -> None:
    from convbench_datasets.engine import RunIncomplete

    with openai_server() as (url, state):
        broken = OpenAICompatBackend("malformed-always", base_url=url, retry=FAST)
        with pytest.raises(RunIncomplete):
            run_nc(model=broken, judge="baseline:silence", out=tmp_path / "run", config="basic", limit=3,
                   dataset=nc_built, cache=tmp_path / "c.sqlite", progress=False)
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        assert cache.stats()["errors"] == 0  # not a row's error: a rerun asks again
    assert not (tmp_path / "run" / "results.json").exists()


def test_nico_identify_errors_score_as_failures(nico_built: Path, tmp_path: Path) -> None:
    from convbench_datasets import run_nico

    with openai_server() as (url, state):
        run = run_nico(task="identify_unnatural", model="openai:refuse", out=tmp_path / "run", split="train",
                       dataset=nico_built, cache=tmp_path / "c.sqlite", backend_options={"base_url": url},
                       progress=False, max_error_rate=1)
    errors = [r for r in run.records if r["error"] is not None]
    assert errors and run.results["errors"] == len(errors) < len(run.records)
    # an error row scores P = R = 0, even for a dialogue without unnatural sentences (where an empty
    # answer, read as "none", would score 1); the overall figure is the macro average of the rows
    assert all(r["precision"] == 0.0 and r["recall"] == 0.0 for r in errors)
    assert any(not r["gold"] for r in errors)
    assert run.results["precision"] == pytest.approx(100 * sum(r["precision"] for r in run.records) / len(run.records))
    # re-scoring applies the same rule (and now the same error check: this run's errors are deliberate)
    assert main(["score", str(tmp_path / "run"), "--max-error-rate", "1"]) == 0
    rescored = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    assert rescored["precision"] == run.results["precision"] and rescored["errors"] == len(errors)


def test_nico_generation_errors_are_empty_turns(nico_built: Path, tmp_path: Path) -> None:
    from convbench_datasets import run_nico

    with openai_server() as (url, state):
        run = run_nico(task="open_domain", model="openai:refuse", out=tmp_path / "run", split="train",
                       dataset=nico_built, cache=tmp_path / "c.sqlite", backend_options={"base_url": url},
                       progress=False, max_error_rate=1)
    errors = [r for r in run.records if r["error"] is not None]
    assert errors and run.results["errors"] == len(errors)
    assert all(r["turn"] == "" and r["error"].startswith("refused for this row: HTTP 400") for r in errors)


def test_the_report_shows_each_runs_errors(nc_built: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="reports need the report extra")
    from convbench_datasets.report import write_report

    with openai_server() as (url, state):
        run = run_nc(model="openai:refuse", judge="baseline:silence", out=tmp_path / "run", config="basic", limit=30,
                     dataset=nc_built, cache=tmp_path / "c.sqlite", backend_options={"base_url": url}, progress=False,
                     max_error_rate=1)
    expected = sum(affected(r["messages"]) for r in _rows(nc_built, 30))
    assert run.results["errors"] == expected > 0
    page = write_report([tmp_path / "run"], tmp_path / "report").read_text(encoding="utf-8")
    assert f"openai:refuse: {expected} of 30 rows" in page


def test_a_build_never_keeps_a_hole_where_a_summary_belongs(tmp_path: Path) -> None:
    # The summarizer goes through the same stage: a refused row keeps its extractive summary (never ""),
    # counted; more than --max-error-rate of them stop the build with nothing half-replaced (issue #19)
    from convbench_datasets.cocoeval.builder import abstractive_summaries
    from convbench_datasets.engine.error_rate import TooManyErrors

    rows = [{"id": f"qmsum/m{i}/30", "metadata": {"setting": "a meeting"}, "summary": "extractive"} for i in range(16)]
    earlier = [[{"speaker": "A", "utterance": f"point number {i}"}] for i in range(16)]
    with openai_server() as (url, state):
        with pytest.raises(TooManyErrors, match=(
                r"^cocoeval: \d+ of 16 prompts of the summarizer openai:refuse \(\d+\.\d%\) ended in an error, more than "
                r"the 5% --max-error-rate allows; first: row qmsum/m\d+/30: refused for this row: HTTP 400")):
            abstractive_summaries(rows, earlier, "openai:refuse", {"base_url": url}, progress=False,
                                  cache=tmp_path / "c.sqlite")
        assert all(row["summary"] == "extractive" for row in rows)  # nothing half-replaced
        with pytest.warns(UserWarning, match=r"prompts of the summarizer openai:refuse ended in an error"):
            record = abstractive_summaries(rows, earlier, "openai:refuse", {"base_url": url}, progress=False,
                                           cache=tmp_path / "c.sqlite", max_error_rate=1)
    refused = [row for row in rows if row["summary"] == "extractive"]
    assert refused and len(record.errors) == len(refused) < 16 and all(row["summary"] for row in rows)
