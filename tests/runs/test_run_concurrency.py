"""`--concurrency` is the run's total of requests in flight (issue #20): a pipelined run's generator and
judges share it (engine/backends/slots.py, engine/session.py), a backend's own concurrency caps it within
the total, and a stage run alone keeps its backend's concurrency.

The numbers in flight are the test server's own count (tests/support/openai_server.py: ``state.peak``, the
most chat requests it was answering at once, ``state.peaks`` per model). Every server answer takes 200 ms
(model ``delay``), so the first requests of a stage are all in flight together: the peak reaches the limit.
Before the limit was the run's, the pipelined runs below had up to twice the limit in flight (each stage
``concurrency`` workers of its own)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from convbench_datasets.cli import main
from convbench_datasets.errors import ConvbenchError
from convbench_datasets.engine.backends import GenerationParams
from convbench_datasets.engine.cache import ResponseCache
from convbench_datasets.engine.backends import ModelRole
from convbench_datasets.engine.session import Session
from convbench_datasets.runs.sweep import run_sweep
from convbench_datasets.runs.sweep_file import read_sweep
from tests.support.openai_server import ServerState, openai_server

GEN, JUDGE = "delay:gen", "delay:judge"  # one server, two models (both answer as `label` does, after the delay)
PROMPTS = [[{"role": "user", "content": f"question {i}"}] for i in range(24)]
PARAMS = GenerationParams(max_new_tokens=8)


def _judge_prompt(index: int, generation) -> list[dict]:
    return [{"role": "user", "content": f"judge answer {index}: {generation.text}"}]


def _pipelined(tmp_path: Path, url: str, *, concurrency: int | None, model: dict | None = None,
               judge: dict | None = None) -> tuple:
    with ResponseCache(tmp_path / "c.sqlite") as store, \
            Session(store, ModelRole(f"openai:{GEN}", base_url=url, **(model or {})),
                    [ModelRole(f"openai:{JUDGE}", base_url=url, **(judge or {}))], progress=False,
                    concurrency=concurrency) as session:
        return session.generate_then_judge(PROMPTS, PARAMS, _judge_prompt, PARAMS)


def _overlapped(state: ServerState) -> bool:
    """Whether the judge's first request came before generation's last (the stages ran side by side)."""
    models = [model for model, _ in state.requests]
    return models.index(JUDGE) < len(models) - 1 - models[::-1].index(GEN)


def test_a_pipelined_run_has_at_most_concurrency_requests_in_flight(tmp_path: Path) -> None:
    with openai_server(ServerState(delay_seconds=0.2)) as (url, state):
        generated, (judged,) = _pipelined(tmp_path, url, concurrency=4)
    assert generated.errors == judged.errors == 0 and state.count(GEN) == state.count(JUDGE) == 24
    assert _overlapped(state)  # pipelined: the judge's requests shared the 4 slots with generation's
    assert state.peak == 4


def test_without_a_total_the_largest_backend_concurrency_is_the_total(tmp_path: Path) -> None:
    # the Python API with each backend's own concurrency (3 and 5) and no run-wide number: at most 5 in all
    with openai_server(ServerState(delay_seconds=0.2)) as (url, state):
        _pipelined(tmp_path, url, concurrency=None, model={"concurrency": 3}, judge={"concurrency": 5})
    assert _overlapped(state)
    assert state.peaks[GEN] <= 3 and state.peaks[JUDGE] <= 5 and state.peak <= 5


def test_a_judges_own_concurrency_caps_it_within_the_total(tmp_path: Path) -> None:
    # total 6: the generator has no concurrency of its own, so it is lent 6; the judge's own 2 caps it
    with openai_server(ServerState(delay_seconds=0.2)) as (url, state):
        _pipelined(tmp_path, url, concurrency=6, judge={"concurrency": 2})
    assert _overlapped(state)
    assert state.peaks[GEN] == 6 and state.peaks[JUDGE] <= 2 and state.peak <= 6


def test_a_stage_run_alone_keeps_its_backends_concurrency(tmp_path: Path) -> None:
    # not pipelined (one stage): 5 in flight, as before the limit was the run's
    with openai_server(ServerState(delay_seconds=0.2)) as (url, state), ResponseCache(tmp_path / "c.sqlite") as store, \
            Session(store, ModelRole(f"openai:{GEN}", base_url=url, concurrency=5), progress=False) as session:
        result = session.ask(session.generator, PROMPTS[:20], PARAMS, "generate")
    assert result.errors == 0 and state.count(GEN) == 20
    assert state.peak == 5


def _nc_args(nc_built: Path, tmp_path: Path, url: str, name: str, *more: str) -> list[str]:
    return ["run", "nc", "--config", "basic", "--limit", "12", "--model", f"openai:{GEN}", "--judge", f"openai:{JUDGE}",
            "--base-url", url, "--api-key-env", "NO_SUCH_KEY_VAR", "--dataset", str(nc_built),
            "--out", str(tmp_path / name), "--cache", str(tmp_path / "c.sqlite"), "--no-progress", *more]


def test_convbench_run_concurrency_is_the_total(nc_built: Path, tmp_path: Path) -> None:
    with openai_server(ServerState(delay_seconds=0.2)) as (url, state):
        # the fake judge's deliberate "I am not sure" answers are accepted: the requests in flight are tested
        assert main(_nc_args(nc_built, tmp_path, url, "run", "--concurrency", "3", "--max-error-rate", "1",
                             "--max-unparsed-rate", "1")) == 0
    assert state.count(GEN) == state.count(JUDGE) == 12 and _overlapped(state)
    assert state.peak == 3


def test_a_sweep_files_concurrency_is_each_cells_total(nc_built: Path, tmp_path: Path) -> None:
    with openai_server(ServerState(delay_seconds=0.2)) as (url, state):
        sweep = {"out": str(tmp_path / "sweep"), "cache": str(tmp_path / "c.sqlite"), "limit": 12,
                 "max_error_rate": 1, "concurrency": 2, "base_url": url, "api_key_env": "NO_SUCH_KEY_VAR",
                 "max_unparsed_rate": 1,  # the fake judge's deliberate "I am not sure" answers: not what is tested
                 "models": [f"openai:{GEN}"], "judges": [f"openai:{JUDGE}"],
                 "benchmarks": {"nc": {"dataset": str(nc_built), "config": "basic"}}}
        path = tmp_path / "sweep.yaml"
        path.write_text(yaml.safe_dump(sweep), encoding="utf-8")
        assert [cell.concurrency for cell in read_sweep(path).cells] == [2]
        result = run_sweep(path, progress=False)
    assert [cell.status for cell in result.cells] == ["ok"]
    assert state.count(GEN) == state.count(JUDGE) == 12 and _overlapped(state)
    assert state.peak == 2


def test_a_benchmark_block_cannot_set_concurrency(tmp_path: Path) -> None:
    with pytest.raises(ConvbenchError, match=r"nc\.concurrency: .*`concurrency` is a top-level key"):
        read_sweep({"out": str(tmp_path), "models": ["baseline:repeat"], "benchmarks": {"nc": {"concurrency": 2}}})
