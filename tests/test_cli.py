"""`convbench` from the outside: help, list, build, and one-line errors with non-zero exit codes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from convbench_datasets.cli import main


def test_help_runs_as_a_console_script() -> None:
    result = subprocess.run([sys.executable, "-m", "convbench_datasets.cli", "--help"], capture_output=True, text=True)
    assert result.returncode == 0
    for command in ("list", "build", "run", "score", "cache", "agreement"):
        assert command in result.stdout


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "nc: NC-Bench" in out and "Apache-2.0" in out
    for line in ["basic                test: 180 rows", "rag                  test: 180 rows",
                 "complex_request      test: 360 rows", "all                  test: 720 rows"]:
        assert line in out


def test_build_prints_what_it_built(nc_sources: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["build", "nc", "--out", str(tmp_path / "nc"), "--sources", str(nc_sources), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert f"built nc into {tmp_path / 'nc'}" in out and "complex_request      test: 360 rows" in out


@pytest.mark.parametrize(
    "argv,message",
    [
        (["build", "nope", "--out", "x"], "unknown benchmark 'nope'; available: nc, nico, cocoeval"),
        (["build", "nc", "--out", "{tmp}/nc", "--sources", "{tmp}/mirror"],
         "source file nc-bench/conversation_competence.jsonl not found in the mirror: looked for {tmp}/mirror/nc-bench/conversation_competence.jsonl"),
        (["build", "nc", "--out", "{tmp}/nc", "--data-dir", "{tmp}"], "NC-Bench is built from its pinned upstream files; it takes no --data-dir"),
    ],
)
def test_errors_are_one_line(argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [a.format(tmp=tmp_path) for a in argv]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err == f"convbench: error: {message.format(tmp=tmp_path)}\n"
