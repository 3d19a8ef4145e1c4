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
from convbench_datasets.nc.report_tables import nc_table  # noqa: E402
from convbench_datasets.report import load_runs, write_report  # noqa: E402
from convbench_datasets.report.html import markdown_table  # noqa: E402
from convbench_datasets.nc.run import write_run  # noqa: E402

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
    # The runs' own columns and rows: reference=False leaves out the paper's published columns (and the
    # patterns only they fill), which test_reference_tables.py checks.
    table = nc_table(load_runs(two_runs), reference=False)
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


def test_failure_table_is_per_set(two_runs: list[Path]) -> None:
    from convbench_datasets.nc.report_tables import nc_failures

    table = nc_failures(load_runs(two_runs))
    row = table[(table["model"] == "hf:model-b") & (table["set"] == "rag")].iloc[0]
    assert (row["pattern"], row["top_failure_label"], row["share_of_failures"]) == ("Repeat Request", "Other", 100.0)


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


PROBE = """<script>
window.addEventListener("load", () => {
  const images = [...document.images];
  const broken = images.filter(i => !i.complete || i.naturalWidth === 0).length;
  document.title = `probe|images=${images.length}|broken=${broken}|tables=${document.querySelectorAll("table").length}`;
});
</script>"""


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium package is not installed (.ci/run installs it)")
def test_page_renders_in_headless_chromium(two_runs: list[Path], tmp_path: Path) -> None:
    page = write_report(two_runs, tmp_path / "report")
    probed = page.with_name("probed.html")  # a copy with a script that reports what the browser rendered
    probed.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    shot = tmp_path / "report" / "screenshot.png"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0"]
    dom = subprocess.run([CHROMIUM, *flags, "--virtual-time-budget=5000", "--dump-dom", probed.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0
    # tables: basic and rag (paper layout), all sets, paired comparisons, per task, pooled failures, per-run failures
    assert "<title>probe|images=1|broken=0|tables=7</title>" in dom.stdout
    rendered = subprocess.run([CHROMIUM, *flags, f"--screenshot={shot}", "--window-size=1280,2000", page.as_uri()],
                              capture_output=True, text=True, timeout=120)
    assert rendered.returncode == 0 and shot.is_file() and shot.stat().st_size > 10_000
    # the page has no script of its own: any console message at all is an error of the page
    assert [line for line in (dom.stderr + rendered.stderr).splitlines() if "CONSOLE" in line and "probe" not in line] == []
    artefacts = Path(__file__).resolve().parents[2] / "test-artefacts"
    artefacts.mkdir(exist_ok=True)
    shutil.copyfile(shot, artefacts / "report-screenshot.png")


def test_mixed_and_duplicate_runs_still_report(two_runs: list[Path], tmp_path: Path) -> None:
    shorter = tmp_path / "shorter"
    write_run(shorter, _records({0: "Repeat"})[:4], {"benchmark": "nc", "model": "hf:model-a"}, {})
    page = write_report([two_runs[0], shorter, two_runs[0]], tmp_path / "report").read_text(encoding="utf-8")
    assert "not compared: the runs scored different rows" in page
    table = nc_table(load_runs([two_runs[0], shorter, two_runs[0]]), reference=False)
    assert len(set(table.columns)) == 3 and list(table.index)[-1] == ("Overall", "Overall")
    assert table.loc[("rag", "Repeat Request")].isna().sum() == 1  # the shorter run did not score rag


def test_compare_takes_nc_runs_only(two_runs: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", *map(str, two_runs), "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    assert "basic/Repeat Request" in out and "overall" in out
    nico = tmp_path / "nico"
    nico.mkdir()
    (nico / "results.json").write_text(json.dumps({"signature": {"benchmark": "nico", "model": "m"}}))
    (nico / "records.jsonl").write_text("{}\n")
    assert main(["compare", str(nico), str(two_runs[0])]) == 1
    assert "takes two NC-Bench runs; got nico and nc" in capsys.readouterr().err


def test_missing_values_read_n_a_in_tables_never_0_or_none(two_runs: list[Path], tmp_path: Path) -> None:
    # The shorter run scored no rag rows (nc_table leaves those cells NaN) and CoCoEval-style rows can
    # hold None for an interval that was not computed: both are shown as "n/a" (figures.MISSING).
    from convbench_datasets.report.figures import MISSING

    shorter = tmp_path / "shorter"
    write_run(shorter, _records({0: "Repeat"})[:4], {"benchmark": "nc", "model": "hf:short"}, {})
    write_report([two_runs[0], shorter], tmp_path / "report")
    lines = (tmp_path / "report" / "tables" / "nc_accuracy.md").read_text(encoding="utf-8").splitlines()
    # model-a scored rag Repeat Request 1/1 = 100 (test_nc_table_by_hand: one row, n=1, marked *); the
    # shorter run nothing there (n/a, no count); the paper's seven published values for rag Repeat Request
    # follow (Table 3)
    from convbench_datasets.nc.paper_results import paper_results

    published = " | ".join(f"{v:.2f}" for v in paper_results().cells["rag"]["Repeat Request"].values())
    assert f"| rag | Repeat Request | 100.00* (n=1) | {MISSING} | {published} |" in lines
    import pandas as pd

    frame = pd.DataFrame({"who": ["human"], "mean": [2.0], "low": [None], "high": [None]})
    assert markdown_table(frame).splitlines()[2] == f"| human | 2.00 | {MISSING} | {MISSING} |"
