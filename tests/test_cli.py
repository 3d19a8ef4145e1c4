"""`convbench` from the outside: help, list, build, and one-line errors with non-zero exit codes."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from convbench_datasets.cli import _parser, main


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


def _command_paths(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """The top parser and every subcommand (and sub-subcommand), found by walking argparse itself so
    that a command added later is checked too."""
    found = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _command_paths(sub, (*path, name))
    return found


def _flat(text: str) -> str:
    return "".join(text.split())  # argparse wraps lines (and may break at hyphens) to the terminal width


@pytest.mark.parametrize("path,parser", _command_paths(_parser()), ids=lambda p: " ".join(p) if isinstance(p, tuple) else "")
def test_full_help_of_every_command_is_sane(path: tuple[str, ...], parser: argparse.ArgumentParser,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([*path, "--help"])
    assert exit_.value.code == 0
    out, err = capsys.readouterr()
    assert err == "" and "Traceback" not in out
    # "%(" or "%%" in the output is a format left unexpanded; the dict is what `% agreement` once produced
    assert "%(" not in out and "%%" not in out and "'option_strings'" not in out
    assert out.startswith(f"usage: {' '.join(['convbench', *path])} ")
    # every text the code gives appears as written: the description, and each argument's help
    # (argparse %-formats help strings, so a literal % is written %% in the source)
    texts = [parser.description or ""] + [a.help.replace("%%", "%") for a in parser._actions if a.help]
    texts += [c.help.replace("%%", "%") for a in parser._actions if isinstance(a, argparse._SubParsersAction)
              for c in a._choices_actions]
    for text in texts:
        assert _flat(text) in _flat(out), text
    if path:  # a subcommand says what it does at the top of its own help
        assert parser.description


def test_help_shows_percent_agreement_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    # the agreement command's summary, as written in cli/results.py; argparse read its "% a" as a format before
    for argv in (["--help"], ["agreement", "--help"]):
        with pytest.raises(SystemExit):
            main(argv)
        assert _flat("Cohen's kappa and % agreement of two raters' NC-Bench labels") in _flat(capsys.readouterr().out)


@pytest.mark.parametrize("argv", [["list"], ["--help"]])
def test_a_closed_pipe_ends_quietly(argv: list[str]) -> None:
    # `convbench list | head -1`: the reader leaves before convbench writes. A pipe whose read end is
    # closed before the command starts makes every write fail, deterministically.
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run([sys.executable, "-m", "convbench_datasets.cli", *argv], stdout=write_end,
                                stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert result.stderr == "" and result.returncode == 0


def test_warnings_reach_the_cli_user_as_one_line(tmp_path: Path) -> None:
    # Building NICO without --data-dir warns (nico/builder.py SAMPLE_WARNING); the CLI shows the message
    # only, never Python's "file.py:LINE: UserWarning" header and the source line under it.
    from convbench_datasets.nico.builder import SAMPLE_WARNING

    result = subprocess.run([sys.executable, "-m", "convbench_datasets.cli", "build", "nico", "--out",
                             str(tmp_path / "nico"), "--no-progress"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stderr == f"convbench: warning: {SAMPLE_WARNING}\n"


def test_library_log_warnings_are_one_line_too(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import logging

    from convbench_datasets import cli

    def noisy(args: argparse.Namespace) -> None:
        logging.getLogger("convbench_datasets.engine").warning("judge %s answered nothing", "x")
        logging.getLogger("convbench_datasets.engine").info("not shown: below WARNING")

    monkeypatch.setitem(cli.COMMANDS, "list", noisy)
    assert main(["list"]) == 0
    assert capsys.readouterr().err == "convbench: warning: judge x answered nothing\n"
    assert not logging.getLogger("convbench_datasets").handlers  # main() leaves logging as it found it
