"""What makes a finished sweep cell run again (issue #19): its definition's hash, which holds what decides
its answers (models, judges, settings, rows) and leaves out what only changes how fast they come
(concurrency, timeouts, the servers of a model named by `model_id`, the order of replicas).

No network: baseline models and the NC-Bench smoke judge, and the OpenAI-compatible test server on
127.0.0.1 (tests/support/openai_server.py) for the server options; NC-Bench built from the mirror."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from convbench_datasets.runs.sweep import run_sweep
from convbench_datasets.runs.sweep_file import read_sweep
from tests.support.openai_server import ServerState, openai_server


def _signature(cell: Any) -> dict[str, Any]:
    return json.loads((cell.folder / "results.json").read_text(encoding="utf-8"))["signature"]


def test_a_changed_top_level_judge_runs_a_finished_cell_again(nc_built: Path, tmp_path: Path) -> None:
    # The top-level judges are not in a cell's folder name (only a block's own are), and the results' rows,
    # version and fingerprint stay the same: only the definition's hash tells that the cell's results are
    # another judge's (a done-check that ignored the hash kept the smoke judge's results)
    sweep = {"out": str(tmp_path / "sweep"), "cache": str(tmp_path / "c.sqlite"), "limit": 3,
             "models": ["baseline:repeat"], "judges": ["baseline:smoke-judge"],
             "benchmarks": {"nc": {"dataset": str(nc_built), "config": "basic"}}}
    (first,) = run_sweep(sweep, progress=False).cells
    assert first.ran and _signature(first)["judge"] == "baseline:smoke-judge"
    sweep["judges"] = ["baseline:silence"]
    (second,) = run_sweep(sweep, progress=False).cells
    assert second.name == first.name and second.ran and second.status == "ok"
    assert _signature(second)["judge"] == "baseline:silence"  # the folder holds the new judge's run
    (third,) = run_sweep(sweep, progress=False).cells
    assert not third.ran


def _digest(sweep: dict[str, Any]) -> str:
    (cell,) = read_sweep(sweep).cells
    return cell.digest()


def test_the_hash_leaves_out_throughput_settings_and_keeps_what_decides_answers(nc_built: Path, tmp_path: Path) -> None:
    base = {"out": str(tmp_path / "o"), "concurrency": 4,
            "models": [{"spec": "openai:m", "model_id": "m-v1", "base_url": "http://a:8000/v1"}],
            "judges": [{"spec": "openai:j", "base_url": "http://j:8000/v1", "timeout": 30}],
            "benchmarks": {"nc": {"dataset": str(nc_built), "config": "basic"}}}
    digest = _digest(base)

    def changed(edit: Any) -> str:
        sweep = copy.deepcopy(base)
        edit(sweep)
        return _digest(sweep)

    model = lambda s: s["models"][0]  # noqa: E731
    judge = lambda s: s["judges"][0]  # noqa: E731
    same = {  # only how fast answers come: the same hash
        "top-level concurrency": lambda s: s.update(concurrency=64),
        "top-level timeout and key variable": lambda s: s.update(timeout=600, api_key_env="MY_KEY"),
        "the model's concurrency": lambda s: model(s).update(concurrency=256),
        # with a model_id the cache keys answers on the id: any server, or list of replicas, answers for it
        "the model's server, with a model_id": lambda s: model(s).update(base_url="http://b:8000/v1"),
        "replicas of the model, with a model_id": lambda s: model(s).update(base_url=["http://a:8000/v1", "http://b:8000/v1"]),
        "the judge's concurrency and timeout": lambda s: judge(s).update(concurrency=32, timeout=5),
        # one URL as the backend reads it: a trailing slash is the same server
        "the judge's URL with a trailing slash": lambda s: judge(s).update(base_url="http://j:8000/v1/"),
        # options an openai backend does not take (hf's) change nothing it answers
        "an hf option on openai models": lambda s: s.update(dtype="bfloat16", device="cuda", batch_size=8),
    }
    for what, edit in same.items():
        assert changed(edit) == digest, what
    other = {  # what decides the answers: another hash
        "another judge": lambda s: s.update(judges=[{"spec": "openai:j2", "base_url": "http://j:8000/v1"}]),
        # without a model_id the judge's one URL is its identity (the cache's too): another server
        "the judge's server": lambda s: judge(s).update(base_url="http://k:8000/v1"),
        "the model's model_id": lambda s: model(s).update(model_id="m-v2"),
        "another model": lambda s: model(s).update(spec="openai:m2"),
        "a setting": lambda s: s["benchmarks"]["nc"].update(rules="released_script"),
        "the limit": lambda s: s.update(limit=5),
        "retry_errors": lambda s: s.update(retry_errors=True),
    }
    for what, edit in other.items():
        assert changed(edit) != digest, what


def test_replicas_without_a_model_id_count_as_the_cache_counts_them(nc_built: Path, tmp_path: Path) -> None:
    # the openai backend keys several replicas' answers on kind and model alone, whichever answers and in
    # whatever order they are listed (engine/backends/openai_compat.py, identity); so does the hash
    def digest(base_url: Any, dtype: str | None = None) -> str:
        model: dict[str, Any] = {"spec": "openai:m", "base_url": base_url}
        if dtype is not None:
            model["dtype"] = dtype
        return _digest({"out": str(tmp_path / "o"), "models": [model],
                        "benchmarks": {"nico": {"task": "open_domain"}}})

    replicas = digest(["http://a:8000/v1", "http://b:8000/v1"])
    assert digest(["http://b:8000/v1", "http://a:8000/v1"]) == replicas
    assert digest("http://a:8000/v1,http://b:8000/v1,http://c:8000/v1") == replicas
    # one server is the model's identity, as in the cache
    assert digest("http://a:8000/v1") != replicas
    assert digest("http://a:8000/v1") != digest("http://b:8000/v1")
    # a baseline ignores every backend option
    baseline = {"out": str(tmp_path / "o"), "models": ["baseline:silence"], "benchmarks": {"nico": {"task": "open_domain"}}}
    assert _digest({**baseline, "base_url": "http://a:8000/v1", "dtype": "float16"}) == _digest(baseline)
    # an hf model's dtype decides its answers (its cache identity holds it); its device and batch size do not
    hf = {"out": str(tmp_path / "o"), "models": ["hf:some/model"], "benchmarks": {"nico": {"task": "open_domain"}}}
    assert _digest({**hf, "device": "cuda", "batch_size": 32}) == _digest(hf)
    assert _digest({**hf, "dtype": "bfloat16"}) != _digest(hf)


def test_changed_concurrency_keeps_a_finished_cell_and_a_changed_judge_runs_it_again(
        nc_built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    with openai_server(ServerState()) as (url, state), openai_server(ServerState()) as (replica, other):
        sweep = {"out": str(tmp_path / "sweep"), "cache": str(tmp_path / "c.sqlite"), "limit": 3, "concurrency": 2,
                 "max_unparsed_rate": 1,  # the fake judge's deliberate "I am not sure" answers: not what is tested
                 "models": [{"spec": "openai:echo", "name": "echo", "model_id": "echo-v1", "base_url": url}],
                 "judges": [{"spec": "openai:label", "base_url": url}],
                 "benchmarks": {"nc": {"dataset": str(nc_built), "config": "basic"}}}
        (first,) = run_sweep(sweep, progress=False).cells
        assert first.status == "ok" and first.ran
        asked = state.count()
        assert asked == 6  # 3 answers, 3 judgements
        # faster: more requests at once, a longer timeout, a replica for the model (named by its model_id),
        # the judge's URL with a trailing slash: the finished cell is skipped, nothing is asked
        sweep.update(concurrency=16, timeout=300)
        sweep["models"][0]["base_url"] = [url, replica]
        sweep["judges"][0].update(base_url=url + "/", concurrency=8)
        lines: list[str] = []
        (second,) = run_sweep(sweep, progress=False, echo=lines.append).cells
        assert (second.name, second.status, second.ran) == (first.name, "ok", False)
        assert lines == [f"[1/1] {first.name}: done before (same definition), skipped"]
        assert state.count() == asked and other.count() == 0
        # another judge: the cell runs again (its answers come from the cache; the new judge is asked)
        sweep["judges"] = ["baseline:smoke-judge"]
        (third,) = run_sweep(sweep, progress=False).cells
        assert (third.name, third.status, third.ran) == (first.name, "ok", True)
        assert _signature(third)["judge"] == "baseline:smoke-judge"
        assert state.count() == asked and other.count() == 0  # the model's answers: all from the cache
