"""`convbench run` fails fast, in one line, when it cannot work (no server, unknown host, refused key),
keeps an echoed key out of every message and file, and resumes offline from the cache (issue #10)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from convbench_datasets.cli import main
from tests.support.network import closed_url
from tests.support.openai_server import ServerState, openai_server


def _run(url: str, nc_built: Path, tmp_path: Path, judge: str = "openai:label", *extra: str) -> list[str]:
    return [sys.executable, "-m", "convbench_datasets.cli", "run", "nc", "--config", "basic", "--limit", "20",
            "--model", "baseline:repeat", "--judge", judge, "--base-url", url, "--dataset", str(nc_built),
            "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "c.sqlite"), "--no-progress", *extra]


@pytest.mark.parametrize("url, says", [(closed_url(), "Connection refused"),
                                       ("http://nonexistent.invalid/v1", "nonexistent.invalid")],
                         ids=["refused", "unresolvable"])  # ids without the port: the same in every collection (xdist)
def test_an_unreachable_server_fails_within_seconds(url: str, says: str, nc_built: Path, tmp_path: Path) -> None:
    # Before the fix each prompt was retried with backoff (about a minute per prompt, 20 prompts).
    began = time.monotonic()
    done = subprocess.run(_run(url, nc_built, tmp_path), capture_output=True, text=True, timeout=300,
                          env={**os.environ, "OPENAI_API_KEY": "unused-key"})
    assert time.monotonic() - began < 10  # start-up and the dataset load take ~1.5 s here; the bug, about 20 minutes
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("convbench: error: connection to ") and says in lines[0]
    assert "check --base-url" in lines[0] and not (tmp_path / "run" / "results.json").exists()


def test_an_echoed_key_appears_nowhere(nc_built: Path, tmp_path: Path, capsys) -> None:
    secret = "sk-echo-me-please-90210"
    os.environ["CONVBENCH_ECHO_KEY"] = secret
    try:
        with openai_server() as (url, state):
            # the server quotes the Authorization header in its 400 errors: recorded as per-row errors, so
            # many that the run exits 1 with a message that quotes the first (--max-error-rate)
            code = main(["run", "nc", "--config", "basic", "--limit", "20", "--model", "baseline:repeat",
                         "--judge", "openai:refuse-echo", "--base-url", url, "--api-key-env", "CONVBENCH_ECHO_KEY",
                         "--dataset", str(nc_built), "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "c.sqlite"),
                         "--no-progress"])
            assert code == 1 and set(state.authorizations) == {f"Bearer {secret}"}
        records = [json.loads(line) for line in (tmp_path / "run" / "records.jsonl").read_text().splitlines()]
        assert any(r["error"] and "Authorization: [redacted]" in r["error"] for r in records)
        with openai_server(ServerState(require_key="sk-another")) as (url, _):
            # a refused key: OpenAI's "Incorrect API key provided: Bearer sk-..." echoes it
            code = main(["run", "nc", "--config", "basic", "--limit", "20", "--model", "baseline:repeat",
                         "--judge", "openai:label", "--base-url", url, "--api-key-env", "CONVBENCH_ECHO_KEY",
                         "--dataset", str(nc_built), "--out", str(tmp_path / "run2"), "--cache", str(tmp_path / "c.sqlite"),
                         "--no-progress"])
        captured = capsys.readouterr()
        assert code == 1 and "HTTP 401" in captured.err and "Incorrect API key provided: Bearer [redacted]" in captured.err
        assert "ended in an error, more than the 5% --max-error-rate allows; first: " in captured.err
    finally:
        del os.environ["CONVBENCH_ECHO_KEY"]
    assert secret not in captured.out + captured.err
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name.startswith("c.sqlite") for p in files)  # the cache (and its WAL) are among the files checked
    for path in files:
        assert secret.encode() not in path.read_bytes(), path


def test_a_finished_run_reruns_offline_from_the_cache(nc_built: Path, tmp_path: Path) -> None:
    accept = ("--max-unparsed-rate", "1")  # the fake judge's deliberate "I am not sure" answers: not what is tested
    with openai_server() as (url, state):
        first = subprocess.run(_run(url, nc_built, tmp_path, "openai:label", *accept), capture_output=True, text=True,
                               timeout=300)
        assert first.returncode == 0, first.stderr
    # the server is gone: every answer is cached, so no preflight (and no request) is made. Several times: a
    # process that exits while a background thread is still importing C extensions can crash in teardown
    # (SIGSEGV; it did one time in two when a run imported its HTTP client in the background)
    for _ in range(3):
        again = subprocess.run(_run(url, nc_built, tmp_path, "openai:label", *accept), capture_output=True, text=True,
                               timeout=300)
        assert again.returncode == 0, again.stderr
    assert state.gets == 1  # one preflight, by the first run


def test_a_model_the_server_does_not_serve_fails_in_one_line(nico_built: Path, tmp_path: Path, capsys) -> None:
    # The reviewer's case (/tmp/rv/test_rv404.py): an Ollama-like server that lists "other" and answers
    # every request for "llama3" with 404. Before the fix each row became a stored per-row error, the run
    # exited 0, and the same command reused those errors after the model was pulled.
    from convbench_datasets.engine import ResponseCache

    args = ["run", "nico", "--task", "open_domain", "--split", "train", "--model", "openai:llama3",
            "--dataset", str(nico_built), "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "c.sqlite"),
            "--no-progress"]
    with openai_server(ServerState(models=["other"], strict_models=True)) as (url, state):
        assert main([*args, "--base-url", url]) == 1
        assert state.count() == 1  # the one-token request that settled it; no row was asked
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [f"convbench: error: model 'llama3' is not served by {url}: it lists other, and refused a request "
                     f"for it (HTTP 404 from {url}/chat/completions: The model `llama3` does not exist.); check the "
                     "model name in openai:llama3"]
    assert not (tmp_path / "run" / "results.json").exists()
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        assert cache.stats()["errors"] == 0
