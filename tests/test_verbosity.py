"""-v/-q/--log-level on the command line (#24): the package's log records and warnings go through logging,
one line each; -q leaves errors only; the flags work before or after the command."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import pytest

import convbench_datasets.cli as cli
from convbench_datasets.cli import main


def _speaks(args: object) -> None:
    logger = logging.getLogger("convbench_datasets.runs.pipeline")
    logger.debug("a debug note")
    logger.info("an info note")
    warnings.warn("a library warning")
    cli.run.warn("a command warning")


@pytest.mark.parametrize(("argv", "shown"), [
    (["list"], ["warning: a library warning", "warning: a command warning"]),
    (["-v", "list"], ["info: an info note", "warning: a library warning", "warning: a command warning"]),
    (["list", "-v"], ["info: an info note", "warning: a library warning", "warning: a command warning"]),
    (["list", "-vv"], ["debug: a debug note", "info: an info note", "warning: a library warning",
                       "warning: a command warning"]),
    (["-q", "list"], []),
    (["list", "--log-level", "error"], []),
    (["-v", "list", "--log-level", "warning"], ["warning: a library warning", "warning: a command warning"]),
])
def test_verbosity_flags(argv: list[str], shown: list[str], monkeypatch: pytest.MonkeyPatch,
                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(cli.COMMANDS, "list", _speaks)
    assert main(argv) == 0
    assert capsys.readouterr().err.splitlines() == [f"convbench: {line}" for line in shown]


def test_the_logger_is_left_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    logger = logging.getLogger("convbench_datasets")
    before = (logger.level, list(logger.handlers))
    monkeypatch.setitem(cli.COMMANDS, "list", _speaks)
    assert main(["-vv", "list"]) == 0
    assert (logger.level, list(logger.handlers)) == before


def test_a_run_says_what_it_does_with_v(nico_built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "nico", "--model", "baseline:repeat", "--task", "open_domain", "--split", "train",
                 "--limit", "2", "--dataset", str(nico_built), "--out", str(tmp_path / "run"), "--cache",
                 str(tmp_path / "c.sqlite"), "--no-progress", "-v"]) == 0
    assert f"convbench: info: NICO: 2 rows into {tmp_path / 'run'} (cache {tmp_path / 'c.sqlite'})" in capsys.readouterr().err
