"""Cut-short spellings of the key flags (``--api``, ``--api-k``, ``--api-key-e``... followed by a key) are refused
before argparse reads them: argparse's "unrecognized arguments" error would print the key that follows."""

from __future__ import annotations

from pathlib import Path

import pytest

from convbench_datasets.cli import main

KEY = "sk-proj-Wq7YcU1fFbEcFfG"  # a key as a user pastes it (made up)
# by hand: every prefix of --api-key-env from --api on (and --api-key itself), as a user cuts it short; none is a flag
PREFIXES = ["--api", "--api-", "--api-k", "--api-ke", "--api-key", "--api-key-", "--api-key-e", "--api-key-en",
            "--API", "--api_k"]


def _stderr(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int | str | None, str]:
    """The exit code of ``convbench argv`` (argparse exits instead of returning) and what it printed."""
    try:
        code: int | str | None = main(argv)
    except SystemExit as stop:
        code = stop.code
    captured = capsys.readouterr()
    return code, captured.err + captured.out


@pytest.mark.parametrize("prefix", PREFIXES)
def test_a_cut_short_key_flag_never_prints_the_key(prefix: str, capsys: pytest.CaptureFixture[str]) -> None:
    run = ["run", "nc", "--model", "openai:m", "--judge", "baseline:smoke-judge", "--out", "x"]
    for argv in ([*run, prefix, KEY], [*run, f"{prefix}={KEY}"], [prefix, KEY, *run]):
        code, err = _stderr(argv, capsys)
        assert code not in (0, None) and KEY not in err, (argv, err)
        # the refusal names the flag as typed and where the key belongs instead (cli/__init__.py's message)
        assert f"there is no {prefix} flag" in err and "--api-key-env NAME" in err, (argv, err)


@pytest.mark.parametrize("prefix", ["--api", "--api-k", "--api-key-e"])
def test_other_commands_refuse_a_cut_short_key_flag_too(prefix: str, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["score", "some-run", prefix, KEY], ["list", prefix, KEY]):
        code, err = _stderr(argv, capsys)
        assert code not in (0, None) and KEY not in err and f"there is no {prefix} flag" in err, (argv, err)


def test_the_real_flag_is_not_refused_as_a_key_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # --api-key-env names a variable: never taken for a key flag (its value here is no variable name, so the run
    # still fails, on that, without printing the value)
    code, err = _stderr(["run", "nc", "--model", "openai:m", "--judge", "baseline:smoke-judge", "--out",
                         str(tmp_path / "run"), "--api-key-env", KEY], capsys)
    assert code == 1 and "there is no" not in err and KEY not in err, err
