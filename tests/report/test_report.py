"""Report tables from a hand-made fixture of two NC-Bench runs, and the self-contained page."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("matplotlib", reason="reports need the report extra")

from convbench_datasets.cli import main  # noqa: E402
from convbench_datasets.report import load_runs, nc_table, write_report  # noqa: E402
from convbench_datasets.report.html import markdown_table  # noqa: E402
from convbench_datasets.runner.nc_run import write_run  # noqa: E402

REPEAT = ["Repeat", "Partial Repeat"]
ANSWER = ["Answer", "NonAnswer"]


def _records(answers: dict[int, str]) -> list[dict]:
    # rows 0-3: basic Repeat Request; rows 4-5: basic Inquiry; row 6: rag Repeat Request.
    layout = [("basic", "Repeat Request", REPEAT)] * 4 + [("basic", "Inquiry", ANSWER)] * 2 + [("rag", "Repeat Request", REPEAT)]
    out = []
    for i, (set_name, pattern, acceptable) in enumerate(layout):
        label = answers.get(i, "Other")
        out.append({"set": set_name, "id": i, "task": "t", "pattern": pattern, "response": "", "judge_output": label,
                    "labels": [label], "out_of_set": [], "unrecognised": [], "unparsed": False,
                    "passed": label in acceptable, "acceptable_labels": acceptable, "label_set": [*acceptable, "Other"],
                    "model_cache_hit": False, "judge_cache_hit": False, "completion_tokens": 0})
    return out


@pytest.fixture()
def two_runs(tmp_path: Path) -> list[Path]:
    # model-a passes rows 0, 1, 2, 4, 6; model-b passes rows 0 and 4.
    folders = []
    for name, answers in (("model-a", {0: "Repeat", 1: "Repeat", 2: "Partial Repeat", 4: "Answer", 6: "Repeat"}),
                          ("model-b", {0: "Repeat", 4: "Answer"})):
        folder = tmp_path / name
        write_run(folder, _records(answers), {"benchmark": "nc", "model": f"hf:{name}"}, {})
        folders.append(folder)
    return folders


def test_nc_table_by_hand(two_runs: list[Path]) -> None:
    table = nc_table(load_runs(two_runs))
    # Rows in the paper's pattern order (Inquiry before Repeat Request).
    # model-a: basic Repeat 3/4 = 75, Inquiry 1/2 = 50, basic overall 4/6 = 66.67, rag Repeat 1/1 = 100,
    #          overall 5/7 = 71.43.  model-b: 25, 50, 33.33, 0, 2/7 = 28.57.
    expected = {("basic", "Inquiry"): (50.0, 50.0), ("basic", "Repeat Request"): (75.0, 25.0),
                ("basic", "Overall"): (400 / 6, 200 / 6), ("rag", "Repeat Request"): (100.0, 0.0),
                ("rag", "Overall"): (100.0, 0.0), ("Overall", "Overall"): (500 / 7, 200 / 7)}
    assert list(table.index) == list(expected)
    for key, (a, b) in expected.items():
        assert table.loc[key, "hf:model-a"] == pytest.approx(a) and table.loc[key, "hf:model-b"] == pytest.approx(b)
    assert markdown_table(table).splitlines()[:3] == [
        "| set | pattern | hf:model-a | hf:model-b |", "|---|---|---|---|", "| basic | Inquiry | 50.00 | 50.00 |"]


def test_report_files_and_self_contained_page(two_runs: list[Path], tmp_path: Path) -> None:
    assert main(["report", *map(str, two_runs), "--out", str(tmp_path / "report")]) == 0
    page = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)=['"]?https?:""", page)  # no network
    assert page.count("data:image/png;base64,") == 1 and "n.s." in page  # 7 rows: nothing is significant
    assert '"model": "hf:model-a"' in page  # signatures
    for name in ("figures/nc_patterns.png", "figures/nc_patterns.svg", "tables/nc_accuracy.csv",
                 "tables/nc_accuracy.md", "tables/nc_comparisons.csv", "tables/nc_failures.md"):
        assert (tmp_path / "report" / name).is_file(), name
    again = tmp_path / "again"
    write_report(two_runs, again)
    assert (again / "tables" / "nc_accuracy.csv").read_bytes() == (tmp_path / "report" / "tables" / "nc_accuracy.csv").read_bytes()


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium package is not installed (.ci/run installs it)")
def test_page_renders_in_headless_chromium(two_runs: list[Path], tmp_path: Path) -> None:
    page = write_report(two_runs, tmp_path / "report")
    shot = tmp_path / "report" / "screenshot.png"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([CHROMIUM, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0 and "<table>" in dom.stdout and "data:image/png;base64," in dom.stdout
    rendered = subprocess.run([CHROMIUM, *flags, "--enable-logging=stderr", "--v=0", f"--screenshot={shot}",
                               "--window-size=1280,2000", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert rendered.returncode == 0 and shot.is_file() and shot.stat().st_size > 10_000
    console_errors = [line for line in rendered.stderr.splitlines() if "CONSOLE" in line and "ERROR" in line.upper()]
    assert console_errors == []
    artefacts = Path(__file__).resolve().parents[2] / "test-artefacts"
    artefacts.mkdir(exist_ok=True)
    shutil.copyfile(shot, artefacts / "report-screenshot.png")
