"""A run killed part-way (SIGKILL) resumes with exactly the missing model calls and the same results."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from convbench_datasets.engine import ResponseCache
from tests.support.openai_server import ServerState, openai_server

pytestmark = pytest.mark.slow  # whole runs from the shell against a slow server, killed part-way and resumed


def _command(url: str, nc_built: Path, out: Path, cache: Path) -> list[str]:
    return [sys.executable, "-m", "convbench_datasets.cli", "run", "nc", "--config", "basic",
            "--model", "openai:delay", "--judge", "openai:delay", "--base-url", url, "--concurrency", "1",
            "--dataset", str(nc_built), "--out", str(out), "--cache", str(cache), "--no-progress",
            "--max-unparsed-rate", "1"]  # the fake judge's deliberate "I am not sure" answers: not what is tested


def _results(out: Path) -> dict:
    results = json.loads((out / "results.json").read_text())
    results.pop("stats")
    return results


def test_killed_run_resumes_exactly(nc_built: Path, tmp_path: Path) -> None:
    env = {**os.environ, "OPENAI_API_KEY": "unused"}
    with openai_server(ServerState(delay_seconds=0.01)) as (url, state):
        cache, out = tmp_path / "cache.sqlite", tmp_path / "run"
        process = subprocess.Popen(_command(url, nc_built, out, cache), env=env)
        deadline = time.monotonic() + 120
        while state.count() < 120 and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert process.poll() is None, "the run finished before it could be killed"
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        with ResponseCache(cache) as store:
            answered = store.stats()["entries"]
        before = state.count()
        assert 0 < answered < 360 and not (out / "results.json").exists()

        rerun = subprocess.run(_command(url, nc_built, out, cache), env=env, capture_output=True, text=True)
        assert rerun.returncode == 0, rerun.stderr
        assert state.count() - before == 360 - answered  # 180 generations + 180 judgements in all

        reference = tmp_path / "reference"
        fresh = subprocess.run(_command(url, nc_built, reference, tmp_path / "fresh.sqlite"), env=env,
                               capture_output=True, text=True)
        assert fresh.returncode == 0, fresh.stderr
    assert _results(out) == _results(reference)
    assert (out / "records.jsonl").read_text().count("\n") == 180


def test_interrupted_run_keeps_what_arrived(nc_built: Path, tmp_path: Path) -> None:
    env = {**os.environ, "OPENAI_API_KEY": "unused"}
    with openai_server(ServerState(delay_seconds=0.05)) as (url, state):
        cache, out = tmp_path / "cache.sqlite", tmp_path / "run"
        process = subprocess.Popen(_command(url, nc_built, out, cache) + ["--concurrency", "4"], env=env)
        deadline = time.monotonic() + 120
        while state.count() < 40 and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 130
        with ResponseCache(cache) as store:
            answered = store.stats()["entries"]
        before = state.count()
        rerun = subprocess.run(_command(url, nc_built, out, cache), env=env, capture_output=True, text=True)
        assert rerun.returncode == 0, rerun.stderr
        assert state.count() - before == 360 - answered and answered > 0
