"""A half-written or damaged run folder given to `score`, `compare` or `report`: one line naming file and line.

Before: `compare`/`report` printed json's bare "Expecting ',' delimiter: line 1 column 50 (char 49)"
(no file), `score` named only "records.jsonl" (which run?) and a damaged results.json not at all.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from convbench_datasets.cli import main
from convbench_datasets.errors import DataFormatError
from convbench_datasets.report.runs import load_runs
from convbench_datasets.nc.run import write_run

REPEAT = ["Repeat", "Partial Repeat"]


def _run(folder: Path) -> Path:
    """A three-row NC-Bench run folder as `convbench run` writes it."""
    records = [
        {"set": "basic", "id": i, "task": "t", "pattern": "Repeat Request", "response": "", "judge_output": "Repeat",
         "labels": ["Repeat"], "out_of_set": [], "unrecognised": [], "unparsed": False, "passed": True,
         "acceptable_labels": REPEAT, "label_set": [*REPEAT, "Other"]}
        for i in range(3)
    ]
    write_run(folder, records, {"benchmark": "nc", "model": f"hf:{folder.name}"}, {})
    return folder


def _cut_last_line(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-15])  # a copy or write interrupted inside the last line


def _cut_in_half(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _break_line_2(path: Path) -> None:
    lines = path.read_text().splitlines(keepends=True)
    path.write_text(lines[0] + '{"set": "basic", oops\n' + lines[2])


def _blank_line_2(path: Path) -> None:
    lines = path.read_text().splitlines(keepends=True)
    path.write_text(lines[0] + "\n" + "".join(lines[1:]))


def _not_utf8_line_3(path: Path) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + lines[1] + b'{"set": "\xff"}\n')


CUT_SHORT = r"; the file ends mid-line: was it cut short\?"
# (file, damage, expected message after the file's path): line numbers are the damaged line's; json's
# own reason is left open (.+), the column is where json stopped.
DAMAGE = [
    ("records.jsonl", _cut_last_line, r" line 3: not valid JSON \(.+ at column \d+\)" + CUT_SHORT),
    # column 18: the "o" of oops, where a property name was due
    ("records.jsonl", _break_line_2, r" line 2: not valid JSON \(Expecting property name enclosed in double quotes at column 18\)"),
    ("records.jsonl", _blank_line_2, r" line 2: blank line \(a run folder has one record per line\)"),
    ("records.jsonl", _not_utf8_line_3, r" line 3: not UTF-8 text \(invalid start byte\)"),
    ("results.json", _cut_in_half, r" line \d+: not valid JSON \(.+ at column \d+\)" + CUT_SHORT),
    ("results.json", lambda p: p.write_text("[]\n"), r": expected a JSON object, got list"),
]


@pytest.mark.parametrize("command", ["score", "compare", "report"])
@pytest.mark.parametrize("name,damage,message", DAMAGE, ids=[f"{d[0]}-{d[1].__name__}" for d in DAMAGE])
def test_damaged_run_files_are_one_line_errors(
    command: str, name: str, damage, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if command == "report":
        pytest.importorskip("matplotlib", reason="reports need the report extra")
    good, bad = _run(tmp_path / "good"), _run(tmp_path / "bad")
    damage(bad / name)
    argv = {"score": ["score", str(bad)], "compare": ["compare", str(good), str(bad)],
            "report": ["report", str(good), str(bad), "--out", str(tmp_path / "report")]}[command]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert re.fullmatch(f"convbench: error: {re.escape(str(bad / name))}{message}\n", err), err
    assert not (tmp_path / "report").exists()


def test_a_cut_results_file_says_so_in_the_library_too(tmp_path: Path) -> None:
    run = _run(tmp_path / "run")
    text = (run / "results.json").read_text()
    (run / "results.json").write_text(text[: text.index('"signature"')])  # stops after a "," and a newline
    last = text[: text.index('"signature"')].count("\n") + 1  # the line json was reading when the text ended
    with pytest.raises(DataFormatError, match=rf"results\.json line {last}: not valid JSON \(.+\){CUT_SHORT}$"):
        load_runs([run])


def test_valid_run_folders_still_load(tmp_path: Path) -> None:
    # trailing blank lines are not data: a hand-edited file keeps loading
    run = _run(tmp_path / "run")
    with open(run / "records.jsonl", "a") as f:
        f.write("\n\n")
    (loaded,) = load_runs([run])
    assert [r["id"] for r in loaded.records] == [0, 1, 2] and json.loads((run / "results.json").read_text())["n"] == 3


@pytest.mark.parametrize("command", ["compare", "report"])
def test_a_run_that_lost_rows_is_refused_naming_them(tmp_path, capsys, command):
    # write_run records the three row ids in results.json; dropping the last record (id 2) must be refused
    # by compare and report as it is by score, not scored over the two rows left.
    a, b = _run(tmp_path / "a"), _run(tmp_path / "b")
    lines = (b / "records.jsonl").read_text().splitlines(keepends=True)
    (b / "records.jsonl").write_text("".join(lines[:2]))
    args = [command, str(a), str(b)] + (["--out", str(tmp_path / "report")] if command == "report" else [])
    assert main(args) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert "records.jsonl has 2 rows, the signature declares 3" in err or "missing ids: basic" in err, err
    assert "2" in err.split("missing ids:")[-1]
