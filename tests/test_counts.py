"""Count arguments are bounded everywhere (issue 19): resamples, seeds, limits, concurrency, batch sizes, token
limits and repairs refuse floats, NaN, bools, strings, nested lists and out-of-range values, naming the argument,
before any work (n_bootstrap=10**9 ran for 79 s)."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import pytest

from convbench_datasets.cli import main
from convbench_datasets.counts import MAX_RESAMPLES, CountError, check_count, check_seconds, check_seed
from convbench_datasets.errors import ConvbenchError
from convbench_datasets.registry import get_benchmark
from convbench_datasets.runs.sweep_file import read_sweep

NOT_COUNTS = [2.5, 3.0, math.nan, math.inf, True, False, "3", None, [3], [[1, 2]], {"n": 1}]


@pytest.mark.parametrize("value", NOT_COUNTS)
def test_a_count_is_a_whole_number(value: Any) -> None:
    with pytest.raises(CountError, match=r"^n_bootstrap must be a whole number, got "):
        check_count("n_bootstrap", value)
    assert isinstance(CountError("x"), (ConvbenchError, TypeError, ValueError))


def test_bounds_and_numpy_integers() -> None:
    assert check_count("n", np.int64(7), least=1, most=10) == 7 and type(check_count("n", np.int32(7))) is int
    with pytest.raises(CountError, match=r"^seed must be at least 0, got -1$"):
        check_seed("seed", -1)
    with pytest.raises(CountError, match=r"^n must be at most 10, got 11$"):
        check_count("n", 11, most=10)
    for bad in (math.nan, math.inf, 0, -1, True, "5"):
        with pytest.raises(CountError, match=r"^timeout must be a finite number of seconds, more than 0"):
            check_seconds("timeout", bad)


def _quick(call: Any, match: str) -> None:
    started = time.perf_counter()
    with pytest.raises(CountError, match=match):
        call()
    assert time.perf_counter() - started < 2  # refused before any resample is drawn


@pytest.mark.parametrize("value", [10**9, -1, 2.5, math.nan, True, [[1]]])
def test_every_bootstrap_refuses_a_bad_count_by_name(value: Any) -> None:
    from convbench_datasets.nc.agreement import agreement
    from convbench_datasets.cocoeval.behavior_frequency import score_frequencies
    from convbench_datasets.cocoeval.cocoeval_agreement import judge_agreement
    from convbench_datasets.scoring.paired import paired_test

    labels = [["Repeat"], ["Other"], ["Repeat"]]
    _quick(lambda: agreement(labels, labels, n_bootstrap=value), r"^n_bootstrap must be ")
    _quick(lambda: score_frequencies([["Repetition"]] * 3, [[]] * 3, n_bootstrap=value), r"^n_bootstrap must be ")
    _quick(lambda: judge_agreement([[1, 2, 3], [1, 3, 2]], [1, 2, 3], n_bootstrap=value), r"^n_bootstrap must be ")
    _quick(lambda: paired_test([1.0, 0.0], [0.0, 0.0], n_resamples=value), r"^n_resamples must be ")


@pytest.mark.parametrize("seed", [-1, 1.5, math.nan, True, 2**64, "0"])
def test_every_bootstrap_refuses_a_bad_seed_by_name(seed: Any) -> None:
    from convbench_datasets.nc.agreement import agreement
    from convbench_datasets.scoring.paired import paired_test

    _quick(lambda: agreement([["Repeat"]] * 3, [["Repeat"]] * 3, n_bootstrap=10, seed=seed), r"^seed must be ")
    _quick(lambda: paired_test([1.0, 0.0], [0.0, 0.0], seed=seed), r"^seed must be ")


def test_the_evaluate_metric_refuses_a_huge_bootstrap() -> None:
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "metrics" / "behavior_frequency" / "behavior_frequency.py"
    if not path.is_file():
        pytest.skip("metrics/ not beside the tests")
    from convbench_datasets.cocoeval.behavior_frequency import score_frequencies

    _quick(lambda: score_frequencies([["Repetition"]], [[]], n_bootstrap=10**9), r"^n_bootstrap must be at most 10,000")


@pytest.mark.parametrize("name, settings, says", [
    ("nc", {"max_new_tokens": 2.5}, r"^max_new_tokens must be a whole number, got 2.5"),
    ("nc", {"judge_max_new_tokens": True}, r"^judge_max_new_tokens must be a whole number, got True"),
    ("nico", {"task": "open_domain", "shots": 3.0}, r"^shots must be a whole number, got 3.0"),
    ("nico", {"task": "open_domain", "max_new_tokens": 10**9}, r"^max_new_tokens must be at most 1,000,000"),
    ("cocoeval", {"turns_per_call": 5.0}, r"^turns_per_call must be a whole number, got 5.0"),
    ("cocoeval", {"n_bootstrap": 10**9}, r"^n_bootstrap \(--bootstrap\) must be at most 10,000, got 1,000,000,000$"),
    ("cocoeval", {"max_repairs": 10**9}, r"^max_repairs must be at most 100"),
    ("cocoeval", {"seed": -5}, r"^seed must be at least 0, got -5$"),
])
def test_run_settings_are_counted(name: str, settings: dict[str, Any], says: str) -> None:
    with pytest.raises(CountError, match=says):
        get_benchmark(name).plan(settings, dataset=None, sources=None)


@pytest.mark.parametrize("limit, says", [(2.5, "a whole number, got 2.5"), (True, "a whole number, got True"),
                                         (math.nan, "a whole number, got nan")])
def test_a_run_limit_is_counted(limit: Any, says: str, tmp_path: Any) -> None:
    from convbench_datasets import run_nico

    with pytest.raises(CountError, match=f"^--limit must be {says}"):
        run_nico(task="open_domain", model="baseline:repeat", out=tmp_path / "run", limit=limit, progress=False)
    assert not (tmp_path / "run").exists()


def test_backends_count_their_options() -> None:
    from convbench_datasets.engine.backends import backend_from_spec

    url = "http://127.0.0.1:1/v1"
    for value, says in ((True, "a whole number"), (2.0, "a whole number"), (10**6, "at most 1,024")):
        with pytest.raises(CountError, match=rf"^concurrency \(--concurrency\) must be {says}"):
            backend_from_spec("openai:m", base_url=url, concurrency=value)
    with pytest.raises(CountError, match=r"^timeout \(--timeout\) must be a finite number of seconds"):
        backend_from_spec("openai:m", base_url=url, timeout=math.nan)
    with pytest.raises(CountError, match=r"^batch_size \(--batch-size\) must be a whole number, got 0.5"):
        backend_from_spec("hf:unused", batch_size=0.5)  # refused before torch or a model loads


@pytest.mark.parametrize("argv, says", [
    (["agreement", "a.jsonl", "b.jsonl", "--bootstrap", "1000000000"], "argument --bootstrap: must be at most 10,000"),
    (["agreement", "a.jsonl", "b.jsonl", "--seed", "-1"], "argument --seed: must be at least 0, got -1"),
    (["agreement", "a.jsonl", "b.jsonl", "--bootstrap", "1e3"], "argument --bootstrap: must be a whole number, got '1e3'"),
    (["compare", "a", "b", "--resamples", "0"], "argument --resamples: must be at least 1, got 0"),
])
def test_cli_count_flags_are_bounded(argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2 and says in capsys.readouterr().err


def test_sweep_files_count_backend_options_and_settings() -> None:
    sweep = {"out": "x", "models": [{"spec": "openai:m", "concurrency": 10**6, "timeout": math.nan}],
             "benchmarks": {"cocoeval": {"n_bootstrap": 10**9}}, "judges": ["openai:j"], "batch_size": 2.0}
    with pytest.raises(ConvbenchError) as err:
        read_sweep(sweep)
    message = str(err.value)
    assert "models[0].concurrency: must be at most 1,024, got 1,000,000" in message
    assert "models[0].timeout: must be a finite number of seconds, more than 0, got nan" in message
    assert "batch_size: must be a whole number, got 2.0 (float)" in message
    assert (f"benchmarks.cocoeval.n_bootstrap: n_bootstrap (--bootstrap) must be at most {MAX_RESAMPLES:,}, got "
            "1,000,000,000") in message  # the plan's check, under the key path


@pytest.mark.parametrize("limit, says", [(0, "must be at least 1, got 0"), (2.0, "must be a whole number, got 2.0"),
                                         (True, "must be a whole number, got True")])
def test_a_sweep_limit_is_counted_as_a_runs(limit: Any, says: str) -> None:
    with pytest.raises(ConvbenchError, match=rf"^sweep: limit: {says}"):
        read_sweep({"out": "x", "models": ["baseline:repeat"], "limit": limit,
                    "benchmarks": {"nico": {"task": "open_domain"}}})
