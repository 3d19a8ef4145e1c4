"""Optional dependencies (#24): a missing one is one line naming the extra that installs it, before any work."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from convbench_datasets.cli import main
from convbench_datasets.extras import MissingExtra, extra_for, install_hint, require


def test_extras_are_read_from_the_package_metadata() -> None:
    # pyproject.toml: matplotlib and pandas in `report`, bert-score in `bertscore`, rjieba in `fast`,
    # inspect-ai in `inspect`, lm-eval in `lm-eval`; pytest only in `test`; numpy is a core dependency
    assert [extra_for(m) for m in ("matplotlib", "pandas", "bert_score", "rjieba", "inspect_ai", "lm_eval",
                                   "matplotlib.figure")] == ["report", "report", "bertscore", "fast", "inspect",
                                                             "lm-eval", "report"]
    assert extra_for("pytest") == "test" and extra_for("numpy") is None
    assert install_hint("matplotlib") == "pip install 'convbench[report]'"
    assert install_hint("somethingelse") == "pip install somethingelse"


def test_require_names_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    with pytest.raises(MissingExtra, match=r"^convbench report needs matplotlib, which is not installed: "
                                           r"pip install 'convbench\[report\]'$"):
        require("convbench report", "pandas", "matplotlib")
    require("convbench report", "pandas")


def test_report_without_the_extra_is_one_line_and_writes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"  # never read: the extra is checked first
    run.mkdir()
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main(["report", str(run), "--out", str(tmp_path / "report")]) == 1
    assert capsys.readouterr().err == ("convbench: error: convbench report needs matplotlib, which is not installed: "
                                       "pip install 'convbench[report]'\n")
    assert not (tmp_path / "report").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_an_optional_import_that_fails_in_any_command_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    # the CLI's last resort: a ModuleNotFoundError anywhere becomes one line with the extra's install command
    import convbench_datasets.cli as cli

    def needs_pandas(args: object) -> None:
        raise ModuleNotFoundError("No module named 'pandas'", name="pandas")

    monkeypatch.setitem(cli.COMMANDS, "list", needs_pandas)
    assert main(["list"]) == 1
    assert capsys.readouterr().err == "convbench: error: pandas is not installed: pip install 'convbench[report]'\n"
