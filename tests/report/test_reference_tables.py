"""The paper's published results beside the user's runs (issue #11, section 3): per-set tables in the
paper's layout with marked published columns, --no-reference, the per-task table, Table 5's failure
analysis pooled over runs, and the repeat baseline's judge sanity. Every expected number below is
derived by hand from the fixture (see the comments); published numbers come from paper_results()."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

pytest.importorskip("matplotlib", reason="reports need the report extra")

from convbench_datasets.cli import main  # noqa: E402
from convbench_datasets.nc.paper_results import paper_results  # noqa: E402
from convbench_datasets.nc.patterns import pattern_table  # noqa: E402
from convbench_datasets.nc.report_tables import (  # noqa: E402
    nc_judge_sanity,
    nc_paper_differences,
    nc_pooled_failures,
    nc_set_tables,
    nc_table,
    nc_task_table,
)
from convbench_datasets.report import load_runs, write_report  # noqa: E402
from convbench_datasets.nc.run import REPEAT_SANITY_WARNING, write_run  # noqa: E402

MARK = "\u2020"
REPEAT = ["Repeat", "Partial Repeat"]
ANSWER = ["Answer", "NonAnswer"]
DETAIL = ["DetailRequestGrounded"]
# rows 0-3 basic Repeat Request, 4-5 basic Inquiry, 6-7 complex_request Detail Request-All,
# 8-9 complex_request Detail Request-Partial (both tasks report under the pattern Detail Request)
LAYOUT = ([("basic", "repeat request", "Repeat Request", REPEAT)] * 4 + [("basic", "inquiry", "Inquiry", ANSWER)] * 2
          + [("complex_request", "Detail Request-All", "Detail Request", DETAIL)] * 2
          + [("complex_request", "Detail Request-Partial", "Detail Request", DETAIL)] * 2)
# model-a passes rows 0, 1 (Repeat, Partial Repeat), 4, 6, 7, 8: 6 of 10.
ANSWERS_A = ["Repeat", "Partial Repeat", "Paraphrase", "Paraphrase, Example", "Answer", "Other",
             "DetailRequestGrounded", "DetailRequestGrounded", "DetailRequestGrounded", "Answer"]
# model-b passes rows 0, 4, 5, 8, 9: 5 of 10; row 3 is an empty (unparsed) judge answer.
ANSWERS_B = ["Repeat", "Paraphrase", "Other", "", "Answer", "Answer", "Answer", "Other",
             "DetailRequestGrounded", "DetailRequestGrounded"]
PAPER_SIGNATURE = {"judge": "openai:mistralai/Mistral-Large-Instruct-2411", "judge_template": "released",
                   "generation": {"max_new_tokens": 1024, "temperature": 0.0}, "rules": "paper", "parsing": "exact"}
OTHER_SIGNATURE = {"judge": "openai:gpt-4o", "judge_template": "builtin",
                   "generation": {"max_new_tokens": 1024, "temperature": 0.0}, "rules": "paper", "parsing": "exact"}


def _records(answers: list[str], layout: list[tuple[str, str, str, list[str]]] = LAYOUT) -> list[dict]:
    out = []
    for i, ((set_name, task, pattern, acceptable), answer) in enumerate(zip(layout, answers)):
        labels = [piece.strip() for piece in answer.split(",") if piece.strip()]
        out.append({"set": set_name, "id": i, "task": task, "pattern": pattern, "response": "", "judge_output": answer,
                    "labels": labels, "out_of_set": [], "unrecognised": [], "unparsed": not labels,
                    "passed": any(label in acceptable for label in labels), "acceptable_labels": acceptable,
                    "label_set": sorted({*acceptable, "Answer", "Other", "Paraphrase", "Example"}),
                    "model_cache_hit": False, "judge_cache_hit": False, "completion_tokens": 0})
    return out


def _write(folder: Path, model: str, answers: list[str], extra: dict) -> Path:
    write_run(folder, _records(answers), {"benchmark": "nc", "model": model, **extra}, {})
    return folder


@pytest.fixture()
def two_runs(tmp_path: Path) -> list[Path]:
    return [_write(tmp_path / "a", "hf:model-a", ANSWERS_A, PAPER_SIGNATURE),
            _write(tmp_path / "b", "hf:model-b", ANSWERS_B, OTHER_SIGNATURE)]


def _published(model: str, set_name: str) -> str:
    return f"{model} (paper, Table {paper_results().tables[set_name]}){MARK}"


def test_set_tables_hold_runs_then_marked_published_columns(two_runs: list[Path]) -> None:
    tables = nc_set_tables(load_runs(two_runs))
    published = paper_results()
    assert list(tables) == ["basic", "complex_request"]  # no run scored rag: no rag table
    # By hand. basic: model-a Repeat Request 2/4 = 50, Inquiry 1/2 = 50, overall 3/6 = 50;
    #                 model-b Repeat Request 1/4 = 25, Inquiry 2/2 = 100, overall 3/6 = 50.
    # complex_request: model-a Detail Request 3/4 = 75 (= overall); model-b 2/4 = 50 (= overall).
    by_hand = {"basic": {"Repeat Request": (50.0, 25.0), "Inquiry": (50.0, 100.0), "Overall": (50.0, 50.0)},
               "complex_request": {"Detail Request": (75.0, 50.0), "Overall": (75.0, 50.0)}}
    for set_name, frame in tables.items():
        # the paper's layout: every pattern of the set in patterns.yaml's (the paper's) order, overall last
        assert list(frame.index) == [*pattern_table().patterns(set_name), "Overall"]
        assert list(frame.columns) == ["hf:model-a", "hf:model-b", *(_published(m, set_name) for m in published.models)]
        for pattern in frame.index:
            a, b = by_hand[set_name].get(pattern, (math.nan, math.nan))  # patterns no run scored: NaN
            assert frame.loc[pattern, "hf:model-a"] == pytest.approx(a, nan_ok=True)
            assert frame.loc[pattern, "hf:model-b"] == pytest.approx(b, nan_ok=True)
            for model in published.models:  # the published cells, exactly as the data file has them
                expected = published.overall(set_name)[model] if pattern == "Overall" else published.cells[set_name][pattern][model]
                assert frame.loc[pattern, _published(model, set_name)] == expected
    assert tables["complex_request"].loc["Repeat Request", "Qwen-7B (paper, Table 4)" + MARK] == 35.0  # Table 4, by eye


def test_nc_table_reference_kwarg(two_runs: list[Path]) -> None:
    runs = load_runs(two_runs)
    with_reference = nc_table(runs)
    assert list(with_reference.columns)[2:] == [f"{m} (paper){MARK}" for m in paper_results().models]
    assert with_reference.loc[("basic", "Repeat Request"), f"Granite-8B (paper){MARK}"] == 30.0  # Table 2
    assert with_reference.loc[("Overall", "Overall")].iloc[2:].isna().all()  # the paper has no all-sets average
    bare = nc_table(runs, reference=False)
    assert list(bare.columns) == ["hf:model-a", "hf:model-b"]
    # only what the runs scored; overall by hand: model-a 6/10 = 60, model-b 5/10 = 50
    assert list(bare.index) == [("basic", "Inquiry"), ("basic", "Repeat Request"), ("basic", "Overall"),
                                ("complex_request", "Detail Request"), ("complex_request", "Overall"), ("Overall", "Overall")]
    assert list(bare.loc[("Overall", "Overall")]) == [60.0, 50.0]
    assert all(MARK not in str(c) for c in nc_set_tables(runs, reference=False)["basic"].columns)


def test_report_marks_published_columns_and_says_what_is_comparable(two_runs: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "report"
    assert main(["report", *map(str, two_runs), "--out", str(out)]) == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    assert f"<th class=paper>Qwen-7B (paper, Table 2){MARK}</th>" in page  # a distinct class for published columns
    assert "judge Mistral-Large-Instruct-2411, the released judge prompt, greedy decoding, 1024 new tokens" in page
    # model-a has the paper's judge, prompt and decoding; model-b neither judge nor prompt
    assert "hf:model-a: not directly comparable" not in page
    assert ("hf:model-b: not directly comparable with the paper's numbers (judge openai:gpt-4o (paper: "
            "Mistral-Large-Instruct-2411); judge prompt builtin (paper: released))") in page
    assert nc_paper_differences(load_runs(two_runs)[0]) == []
    md = (out / "tables" / "nc_basic.md").read_text(encoding="utf-8").splitlines()
    assert md[0] == ("| pattern | hf:model-a | hf:model-b | "
                     + " | ".join(_published(m, "basic") for m in paper_results().models) + " |")
    # Repeat Request by hand: 50 and 25, each over the 4 Repeat Request rows (rows 0-3: n=4, under 10: *);
    # then Table 2's row
    assert md[2 + pattern_table().patterns("basic").index("Repeat Request")] == (
        "| Repeat Request | 50.00* (n=4) | 25.00* (n=4) | 5.00 | 30.00 | 30.00 | 25.00 | 75.00 | 60.00 | 25.00 |")
    # the legend lines: the counts and the * mark, what † means, then the rows behind the † cells: the paper's
    # Table 1 has 20 rows for each of basic's 9 patterns, 9 x 20 = 180 in all
    assert md[-5].startswith("n: the rows each cell of a run is computed from") and "* marks" in md[-5]
    assert md[-3].startswith(f"{MARK} published in the NC-Bench paper")
    assert md[-1].endswith("basic: n=20 per pattern, Overall n=180.")
    assert f"Haiku-4.5 (paper, Table 4){MARK}" in (out / "tables" / "nc_complex_request.csv").read_text(encoding="utf-8")


def test_no_reference_hides_the_published_results(two_runs: list[Path], tmp_path: Path) -> None:
    for out in (tmp_path / "cli", tmp_path / "python"):
        if out.name == "cli":
            assert main(["report", *map(str, two_runs), "--out", str(out), "--no-reference"]) == 0
        else:
            write_report(two_runs, out, reference=False)
        page = (out / "report.html").read_text(encoding="utf-8")
        assert MARK not in page and "(paper" not in page and "class=paper" not in page
        assert "not directly comparable" not in page
        for name in ("nc_basic", "nc_accuracy", "nc_pooled_failures_1", "nc_pooled_failures_2"):  # two judges: two pools
            for ext in ("md", "csv"):
                assert MARK not in (out / "tables" / f"{name}.{ext}").read_text(encoding="utf-8"), (name, ext)


def test_per_task_table_from_results_and_from_records(two_runs: list[Path], tmp_path: Path) -> None:
    # By hand: model-a inquiry 1/2 = 50, repeat request 2/4 = 50, Detail Request-All 2/2 = 100,
    # -Partial 1/2 = 50; model-b 100, 25, 0, 100. Tasks in patterns.yaml order.
    expected = {("basic", "inquiry"): (50.0, 100.0), ("basic", "repeat request"): (50.0, 25.0),
                ("complex_request", "Detail Request-All"): (100.0, 0.0),
                ("complex_request", "Detail Request-Partial"): (50.0, 100.0)}
    results_b = json.loads((two_runs[1] / "results.json").read_text())
    assert "per_task" in results_b
    del results_b["per_task"]  # an older run: the report computes it from the records' task and passed
    (two_runs[1] / "results.json").write_text(json.dumps(results_b))
    no_task = tmp_path / "no-task"
    write_run(no_task, [{k: v for k, v in r.items() if k != "task"} for r in _records(ANSWERS_A)],
              {"benchmark": "nc", "model": "hf:old"}, {})
    frame = nc_task_table(load_runs([*two_runs, no_task]))
    assert list(frame.index) == list(expected) and list(frame.columns) == ["hf:model-a", "hf:model-b"]
    for key, (a, b) in expected.items():
        assert (frame.loc[key, "hf:model-a"], frame.loc[key, "hf:model-b"]) == (a, b)
    assert frame.attrs["omitted"] == ["hf:old"]
    page = write_report([*two_runs, no_task], tmp_path / "report").read_text(encoding="utf-8")
    assert "Detail Request-Partial" in page and "Not shown (their records carry no task): hf:old." in page
    assert (tmp_path / "report" / "tables" / "nc_tasks.csv").is_file()


def test_failures_pooled_over_runs_beside_table_5(tmp_path: Path) -> None:
    # Both runs judged by the paper's judge and read exactly. By hand, over both runs and all sets:
    # Repeat Request: 8 rows, passed a:2 + b:1 = 3 -> 37.5%; failing 5 carry Paraphrase (a row 2, a row 3,
    #   b row 1), Example (a row 3), Other (b row 2), (unparsed) (b row 3): Paraphrase 3/5 = 60%.
    # Detail Request: 8 rows, passed a:3 + b:2 = 5 -> 62.5%; failing 3: Answer (a row 9, b row 6), Other
    #   (b row 7): Answer 2/3 = 66.67%.
    # Inquiry: 4 rows, passed a:1 + b:2 = 3 -> 75%; failing 1: Other 1/1 = 100%.
    # Sorted by pass rate, lowest first, as Table 5.
    two_runs = [_write(tmp_path / "a", "hf:model-a", ANSWERS_A, PAPER_SIGNATURE),
                _write(tmp_path / "b", "hf:model-b", ANSWERS_B, PAPER_SIGNATURE)]
    frame = nc_pooled_failures(load_runs(two_runs))
    assert list(frame.index) == ["Repeat Request", "Detail Request", "Inquiry"]
    assert list(frame["rows"]) == [8, 8, 4] and list(frame["passed"]) == [3, 5, 3]
    assert list(frame["pass_rate"]) == [37.5, 62.5, 75.0]
    assert list(frame["top_failure_label"]) == ["Paraphrase", "Answer", "Other"]
    assert list(frame["share_of_failures"]) == pytest.approx([60.0, 200 / 3, 100.0])
    table5 = paper_results().top_failures["Repeat Request"]  # the paper's Table 5 beside it: 21.2, Paraphrase, 71
    paper = [f"{c} (paper, Table 5){MARK}" for c in ("pass_rate", "top_failure_label", "share_of_failures")]
    assert list(frame.loc["Repeat Request", paper]) == [table5["pass"], table5["label"], table5["share"]]
    assert frame.loc["Inquiry", paper].isna().all()  # Table 5 reports four patterns, not Inquiry
    assert list(nc_pooled_failures(load_runs(two_runs), reference=False).columns) == list(frame.columns)[:5]
    write_report(two_runs, tmp_path / "report")
    lines = (tmp_path / "report" / "tables" / "nc_pooled_failures.md").read_text(encoding="utf-8").splitlines()
    assert "| Repeat Request | 8 | 3 | 37.50 | Paraphrase | 60.00 | 21.20 | Paraphrase | 71.00 |" in lines


def test_failures_are_pooled_only_over_runs_of_one_judge_and_reading(two_runs: list[Path], tmp_path: Path) -> None:
    # model-a: the paper's judge; model-b: gpt-4o; model-a again, read leniently: three pools of one run each.
    # Each pool's Repeat Request row by hand, from its own run only: model-a 2 of 4 pass (50%), failing rows
    # Paraphrase (rows 2, 3) and Example (row 3): Paraphrase 2/2 = 100%; model-b 1 of 4 (25%), failing
    # Paraphrase, Other, (unparsed): 1/3 each, the alphabetically first wins the tie: (unparsed).
    lenient = _write(tmp_path / "lenient", "hf:model-a", ANSWERS_A, {**PAPER_SIGNATURE, "parsing": "lenient"})
    runs = load_runs([*two_runs, lenient])
    from convbench_datasets.nc.report_tables import nc_failure_pools

    pools = nc_failure_pools(runs)
    assert [name for name, _ in pools] == [
        "judge openai:mistralai/Mistral-Large-Instruct-2411, rules paper, exact reading",
        "judge openai:gpt-4o, rules paper, exact reading",
        "judge openai:mistralai/Mistral-Large-Instruct-2411, rules paper, lenient reading"]
    assert [[r.path for r in members] for _, members in pools] == [[two_runs[0]], [two_runs[1]], [lenient]]
    with pytest.raises(ValueError, match="pools runs of one judge and reading; these runs have 3"):
        nc_pooled_failures(runs)
    page = write_report([*two_runs, lenient], tmp_path / "report").read_text(encoding="utf-8")
    tables = tmp_path / "report" / "tables"
    assert not (tables / "nc_pooled_failures.md").exists()
    expected = {1: "| Repeat Request | 4 | 2 | 50.00 | Paraphrase | 100.00 |",
                2: "| Repeat Request | 4 | 1 | 25.00 | (unparsed) | 33.33 |",
                3: "| Repeat Request | 4 | 2 | 50.00 | Paraphrase | 100.00 |"}
    for number, row in expected.items():
        lines = (tables / f"nc_pooled_failures_{number}.md").read_text(encoding="utf-8").splitlines()
        assert any(line.startswith(row) for line in lines), (number, lines)
        assert lines[-1].startswith(f"Pooled over 1 run(s) with {pools[number - 1][0]}")
    assert "Top failures pooled over 1 run(s), judge openai:gpt-4o, rules paper, exact reading" in page


@pytest.mark.parametrize(("repeats", "warned"), [(18, False), (17, True)])
def test_judge_sanity_shown_with_a_warning_below_90(repeats: int, warned: bool, tmp_path: Path) -> None:
    # the repeat baseline on 20 Repeat Request rows; the judge calls `repeats` of them Repeat:
    # 18/20 = 90.0% (at the warning level: no warning), 17/20 = 85.0% (below: warning)
    assert REPEAT_SANITY_WARNING == 90.0
    layout = [("basic", "repeat request", "Repeat Request", REPEAT)] * 20
    folder = tmp_path / "repeat"
    write_run(folder, _records(["Repeat"] * repeats + ["Paraphrase"] * (20 - repeats), layout),
              {"benchmark": "nc", "model": "baseline:repeat", **PAPER_SIGNATURE}, {})
    sanity = nc_judge_sanity(load_runs([folder]))
    assert list(sanity["labelled_repeat"]) == [100.0 * repeats / 20]
    assert list(sanity["below_warning_level"]) == [warned]
    page = write_report([folder], tmp_path / "report").read_text(encoding="utf-8")
    assert "<h3>Judge sanity</h3>" in page and f"<td>{100.0 * repeats / 20:.2f}</td>" in page
    assert ("class='warning judge-sanity'" in page) is warned
    if warned:
        assert "labels verbatim repeats Repeat or Partial Repeat on only 85.0% of Repeat Request rows" in page


def test_paper_differences_name_partial_runs_other_rules_and_filled_details(tmp_path):
    from convbench_datasets.report.runs import Run
    from convbench_datasets.nc.report_tables import nc_paper_differences

    # the paper's setup (paper_results.yaml: rules paper, exact reading; the released judge limit, 128)
    paper_like = {"judge": "openai:mistralai/Mistral-Large-Instruct-2411", "judge_template": "released",
                  "generation": {"max_new_tokens": 1024, "temperature": 0.0}, "rules": "paper", "parsing": "exact",
                  "judge_generation": {"max_new_tokens": 128, "temperature": 0.0},
                  "limit": None, "fill_request_details": False}
    rag = [{"set": "rag", "task": "incremental-self-correction"}, {"set": "rag", "task": "inquiry"}]
    run = Run("m", tmp_path, "nc", {"signature": paper_like}, rag)
    assert nc_paper_differences(run) == []
    old_name = Run("m", tmp_path, "nc", {"signature": {**paper_like, "parsing": "released"}}, rag)
    assert nc_paper_differences(old_name) == []  # "released" was the exact reading's name
    lenient = "lenient reading of judge answers (paper: the released aggregator's exact reading)"
    for change, expected in [
        ({"limit": 3}, "only the first 3 rows (--limit)"),
        ({"sample": {"n": 40, "seed": 1, "by": ["set", "pattern"]}}, "a sample of 40 rows (--sample, seed 1, spread over set and pattern)"),
        ({"parsing": "lenient"}, lenient),
        ({"parsing": "convbench"}, lenient),  # the lenient reading's older name
        ({"rules": "released_script"}, "rules released_script: rag incremental-self-correction rejects Answer "
                                       "(paper: paper, its appendix B.1 and Table 3)"),
        ({"fill_request_details": True}, "request details filled in the judge prompt (the released pipeline leaves "
                                         "them empty)"),
        ({"judge_generation": {"max_new_tokens": 256, "temperature": 0.0}},
         "judge limit 256 new tokens (released pipeline: 128)"),
        ({"generation": {"max_new_tokens": 64, "temperature": 0.0}}, "64 new tokens (paper: 1024)"),
        # a request parameter the user sent, to either role (recorded in its identity)
        ({"model_identity": {"kind": "openai", "model": "m", "params": {"temperature": 0.7}}},
         "generator request parameters temperature=0.7 (--param; paper: none)"),
        ({"judge_identity": {"kind": "openai", "model": "j", "params": {"presence_penalty": None}}},
         "judge request parameters presence_penalty=null (--judge-param; paper: none)"),
    ]:
        other = Run("m", tmp_path, "nc", {"signature": {**paper_like, **change}}, rag)
        assert nc_paper_differences(other) == [expected], change
    # a run whose signature does not record its reading was read leniently: flagged, and said so
    unrecorded = Run("m", tmp_path, "nc", {"signature": {k: v for k, v in paper_like.items() if k != "parsing"}}, rag)
    assert nc_paper_differences(unrecorded) == [
        "lenient reading of judge answers (not recorded by the run: read so before convbench recorded it) "
        "(paper: the released aggregator's exact reading)"]
    # the released script's rules differ from the paper's on one rag task only: a run that did not score it
    # has the paper's numbers
    basic = Run("m", tmp_path, "nc", {"signature": {**paper_like, "rules": "released_script"}},
                [{"set": "basic", "task": "inquiry"}])
    assert nc_paper_differences(basic) == []
