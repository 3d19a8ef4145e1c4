"""Reports show n: each cell of a run carries the rows it is computed from (``45.00 (n=20)`` in the page and
the Markdown tables, a ``"<run> n"`` column in the CSV files and with ``with_n=True``), a cell over fewer than
10 rows is marked ``*`` (class ``small-n`` in the page) with a legend line, a run of part of the rows
(``--sample``, ``--limit``, ``--shard``) says so in its header and in a line at the top of the page, and the
legend says how many rows the paper's published cells are over. Every expected value is derived by hand
from the fixtures (see the comments)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("matplotlib", reason="reports need the report extra")
pd = pytest.importorskip("pandas")

from convbench_datasets.cocoeval.report_tables import (  # noqa: E402
    cocoeval_ratings_table,
    cocoeval_source_table,
    cocoeval_table,
)
from convbench_datasets.cocoeval.run import score_records  # noqa: E402
from convbench_datasets.nc.paper_results import paper_results  # noqa: E402
from convbench_datasets.nc.patterns import pattern_table  # noqa: E402
from convbench_datasets.nc.report_tables import nc_set_tables, nc_table, nc_task_table, paper_n_legend  # noqa: E402
from convbench_datasets.nc.run import write_run  # noqa: E402
from convbench_datasets.nico.report_tables import nico_table  # noqa: E402
from convbench_datasets.report import load_runs, write_report  # noqa: E402
from convbench_datasets.report.figures import MISSING  # noqa: E402
from convbench_datasets.report.runs import Run, partial_note  # noqa: E402
from convbench_datasets.engine.run_folder import write_folder  # noqa: E402

MARK = "\u2020"
REPEAT = ["Repeat", "Partial Repeat"]
ANSWER = ["Answer", "NonAnswer"]
SAMPLE = {"n": 4, "seed": 0, "by": ["set", "pattern"]}
# rows 0-11: basic repeat request (pattern Repeat Request), rows 12-13: basic inquiry (pattern Inquiry)
LAYOUT = [("repeat request", "Repeat Request", REPEAT)] * 12 + [("inquiry", "Inquiry", ANSWER)] * 2


def _nc_records(passes: dict[int, bool]) -> list[dict]:
    """NC records of the rows in ``passes`` (row id -> passed), judged Repeat/Answer when passing, else Other."""
    out = []
    for i, passed in passes.items():
        task, pattern, acceptable = LAYOUT[i]
        label = acceptable[0] if passed else "Other"
        out.append({"set": "basic", "id": i, "task": task, "pattern": pattern, "response": "", "judge_output": label,
                    "labels": [label], "out_of_set": [], "unrecognised": [], "unparsed": False, "passed": passed,
                    "acceptable_labels": acceptable, "label_set": [*acceptable, "Other"],
                    "model_cache_hit": False, "judge_cache_hit": False, "completion_tokens": 0})
    return out


@pytest.fixture()
def nc_runs(tmp_path: Path) -> list[Path]:
    # hf:full scored all 14 rows: Repeat Request rows 0-8 pass, 9-11 fail (9/12 = 75%, n=12, not marked);
    #   Inquiry row 12 passes, 13 fails (1/2 = 50%, n=2, marked); basic overall 10/14 = 71.43% (n=14).
    # hf:sampled, a --sample of 4 (its signature's sample), scored rows 0, 1, 2 and 12: Repeat Request rows 0
    #   and 1 pass, 2 fails (2/3 = 66.67%, n=3); Inquiry row 12 passes (1/1 = 100%, n=1); overall 3/4 = 75% (n=4).
    full = tmp_path / "full"
    write_run(full, _nc_records({i: i < 9 or i == 12 for i in range(14)}), {"benchmark": "nc", "model": "hf:full"}, {})
    sampled = tmp_path / "sampled"
    write_run(sampled, _nc_records({0: True, 1: True, 2: False, 12: True}),
              {"benchmark": "nc", "model": "hf:sampled", "sample": SAMPLE, "rows": 4}, {})
    return [full, sampled]


def test_nc_tables_give_each_cell_its_rows_on_request(nc_runs: list[Path]) -> None:
    runs = load_runs(nc_runs)
    plain = nc_table(runs, reference=False)
    assert list(plain.columns) == ["hf:full", "hf:sampled"]  # without with_n: the values only, as before
    table = nc_table(runs, reference=False, with_n=True)
    assert list(table.columns) == ["hf:full", "hf:full n", "hf:sampled", "hf:sampled n"]
    assert str(table["hf:full n"].dtype) == "Int64" and table["hf:full"].dtype == float  # values stay numbers
    by_hand = {("basic", "Inquiry"): (50.0, 2, 100.0, 1), ("basic", "Repeat Request"): (75.0, 12, 200 / 3, 3),
               ("basic", "Overall"): (1000 / 14, 14, 75.0, 4), ("Overall", "Overall"): (1000 / 14, 14, 75.0, 4)}
    assert list(table.index) == list(by_hand)
    for key, (full, full_n, sampled, sampled_n) in by_hand.items():
        row = table.loc[key]
        assert (row["hf:full"], row["hf:sampled"]) == (pytest.approx(full), pytest.approx(sampled)), key
        assert (row["hf:full n"], row["hf:sampled n"]) == (full_n, sampled_n), key
    # with the paper's columns: they get no count column (the legend says theirs); a pattern no run scored
    # has no count (<NA>)
    referenced = nc_set_tables(runs, with_n=True)["basic"]
    assert list(referenced.columns)[:4] == ["hf:full", "hf:full n", "hf:sampled", "hf:sampled n"]
    assert not any(str(c).endswith(" n") for c in list(referenced.columns)[4:])
    assert referenced.loc["Repeat Request", "hf:sampled n"] == 3 and pd.isna(referenced.loc["Sequence Abort", "hf:full n"])
    # per task: the same rows (one task per pattern here)
    tasks = nc_task_table(runs, with_n=True)
    assert tasks.loc[("basic", "repeat request"), "hf:full n"] == 12 and tasks.loc[("basic", "inquiry"), "hf:sampled n"] == 1
    assert list(nc_task_table(runs).columns) == ["hf:full", "hf:sampled"]


def test_nc_report_shows_n_marks_small_cells_and_names_the_sample(nc_runs: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "report"
    page = write_report(nc_runs, out).read_text(encoding="utf-8")
    md = (out / "tables" / "nc_basic.md").read_text(encoding="utf-8").splitlines()
    published = [f"{m} (paper, Table 2){MARK}" for m in paper_results().models]
    assert md[0] == "| pattern | hf:full | hf:sampled (sample of 4) | " + " | ".join(published) + " |"
    patterns = pattern_table().patterns("basic")
    # Repeat Request: 75.00 over 12 rows (not marked), 66.67 over 3 (marked); then Table 2's published row
    assert md[2 + patterns.index("Repeat Request")] == (
        "| Repeat Request | 75.00 (n=12) | 66.67* (n=3) | 5.00 | 30.00 | 30.00 | 25.00 | 75.00 | 60.00 | 25.00 |")
    assert md[2 + patterns.index("Inquiry")].startswith("| Inquiry | 50.00* (n=2) | 100.00* (n=1) | 100.00 |")
    assert md[2 + len(patterns)].startswith("| Overall | 71.43 (n=14) | 75.00* (n=4) | 81.67 |")
    legend = "\n".join(md[2 + len(patterns) + 1:])
    assert "* marks a cell computed from fewer than 10 rows" in legend
    assert "basic: n=20 per pattern, Overall n=180." in legend  # the paper's Table 1: 9 patterns x 20 rows
    # the CSV: numbers and counts in columns of their own, the sample in the header
    csv = pd.read_csv(out / "tables" / "nc_basic.csv", index_col=0)
    assert list(csv.columns)[:4] == ["hf:full", "hf:full n", "hf:sampled (sample of 4)", "hf:sampled (sample of 4) n"]
    assert csv.loc["Repeat Request", "hf:sampled (sample of 4)"] == pytest.approx(200 / 3)
    assert csv.loc["Repeat Request", "hf:sampled (sample of 4) n"] == 3
    # the page: the header, a line at the top, counts in the cells, the small ones classed and explained
    assert "<th>hf:sampled (sample of 4)</th>" in page
    top = page.index("<h2>")
    assert ("<p class='partial-run'>hf:sampled: a sample of 4 rows (--sample, seed 0, spread over set and pattern), "
            "4 rows in all: its cells cover part of the benchmark&#x27;s rows") in page[:top]
    assert "hf:full:" not in page[:top]  # a run of every row gets no such line
    assert "<td>75.00 <span class=n>(n=12)</span></td>" in page
    assert "<td class=small-n>50.00* <span class=n>(n=2)</span></td>" in page
    assert "td.small-n{" in page and "<p class='note n-legend'>" in page
    assert "basic: n=20 per pattern, Overall n=180" in page
    # the per-task table and the paired comparisons carry counts too (12 Repeat Request rows of hf:full;
    # the two runs scored different rows, so they are not compared)
    assert "| basic | repeat request | 75.00 (n=12) | 66.67* (n=3) |" in (out / "tables" / "nc_tasks.md").read_text()
    assert "hf:sampled (sample of 4) n" in (out / "tables" / "nc_tasks.csv").read_text()


def test_partial_runs_are_named_in_their_header(tmp_path: Path) -> None:
    def run(**signature: object) -> Run:
        return Run("hf:m", tmp_path, "nc", {"signature": {"limit": None, **signature}}, [{}] * 5)

    assert run().label == "hf:m" and partial_note(run()) is None
    assert run(limit=40).label == "hf:m (first 40 rows)"
    assert run(sample=SAMPLE).label == "hf:m (sample of 4)"
    assert run(shard={"index": 2, "count": 4, "rows": 5}).label == "hf:m (shard 2/4)"
    # the runner's order: the first N, then a sample of them, then a shard
    both = run(limit=100, sample=SAMPLE, shard={"index": 1, "count": 2, "rows": 5})
    assert both.label == "hf:m (first 100 rows, sample of 4, shard 1/2)"
    assert partial_note(both) == (
        "hf:m: only the first 100 rows (--limit); a sample of 4 rows (--sample, seed 0, spread over set and "
        "pattern); shard 1/2 only (--shard, 5 rows), 5 rows in all: its cells cover part of the benchmark's rows "
        "(each cell's n says how many).")


def test_the_legend_states_the_rows_behind_the_published_cells() -> None:
    # The paper's Table 1, by hand: basic and rag 20 rows per pattern (9 patterns, 180 rows); complex_request
    # Preliminary 40, Recommendation 60, Detail Request 60, Expansion 40, Repeat Request 40, the other six 20
    # (360 rows). patterns.yaml's rows (20 per upstream task) must add up to it.
    table1 = {"basic": dict.fromkeys(pattern_table().patterns("basic"), 20),
              "rag": dict.fromkeys(pattern_table().patterns("rag"), 20),
              "complex_request": {**dict.fromkeys(pattern_table().patterns("complex_request"), 20), "Preliminary": 40,
                                  "Recommendation": 60, "Detail Request": 60, "Expansion": 40, "Repeat Request": 40}}
    for set_name, counts in table1.items():
        assert pattern_table().pattern_counts(set_name) == counts
        # each published cell is a whole number of its rows (values rounded to 2 decimals in the paper)
        for pattern, values in paper_results().cells[set_name].items():
            for value in values.values():
                rows = value * counts[pattern] / 100
                assert abs(rows - round(rows)) < 0.01, (set_name, pattern, value)
    assert sum(table1["complex_request"].values()) == 360
    assert paper_n_legend("complex_request").endswith(
        "complex_request: n=20 per pattern (Preliminary, Expansion, Repeat Request: n=40; Recommendation, "
        "Detail Request: n=60), Overall n=360.")
    assert "basic: n=20 per pattern, Overall n=180; rag: n=20 per pattern, Overall n=180; complex_request" in paper_n_legend()


# ---- NICO: counts from the results' n (per interaction type too), else from the records ----

def _nico_run(folder: Path, model: str, types: list[str], results: dict, **signature: object) -> Path:
    records = [{"id": i, "dialogue_id": i, "interaction_type": kind, "response": "", "turn": "", "reference": "",
                "cache_hit": False, "error": None} for i, kind in enumerate(types)]
    write_folder(folder, records, {**results, "signature": {"benchmark": "nico", "model": model, "task": "open_domain",
                                                            "shots": 0, **signature}})
    return folder


def test_nico_scores_carry_their_rows(tmp_path: Path) -> None:
    # full: 12 rows (9 of type A, 3 of type B); its results give n = 12 and each type's n (9, 3).
    # old: 3 rows of type A, --limit 3; its results (written before n was recorded) give none: counted in the
    # records (3 rows, all A).
    full = _nico_run(tmp_path / "full", "hf:full", ["A"] * 9 + ["B"] * 3,
                     {"bleu_1": 30.0, "n": 12, "errors": 0,
                      "per_interaction_type": {"A": {"bleu_1": 35.0, "n": 9}, "B": {"bleu_1": 15.0, "n": 3}}})
    old = _nico_run(tmp_path / "old", "hf:old", ["A"] * 3,
                    {"bleu_1": 20.0, "errors": 0, "per_interaction_type": {"A": {"bleu_1": 20.0}}}, limit=3)
    runs = load_runs([full, old])
    table = nico_table(runs, with_n=True)
    key = ("open_domain", "0-shot", "all", "bleu_1")
    assert list(table.columns) == ["hf:full", "hf:full n", "hf:old", "hf:old n"]
    assert list(table.loc[key]) == [30.0, 12, 20.0, 3]
    by_type = nico_table(runs, by_interaction_type=True, with_n=True)
    assert list(by_type.loc[("open_domain", "0-shot", "A", "bleu_1")]) == [35.0, 9, 20.0, 3]
    assert by_type.loc[("open_domain", "0-shot", "B", "bleu_1"), "hf:full n"] == 3
    assert list(nico_table(runs).columns) == ["hf:full", "hf:old"]
    out = tmp_path / "report"
    page = write_report([full, old], out).read_text(encoding="utf-8")
    md = (out / "tables" / "nico_scores.md").read_text(encoding="utf-8").splitlines()
    assert md[0] == "| task | prompt | interaction_type | metric | hf:full | hf:old (first 3 rows) |"
    assert md[2] == "| open_domain | 0-shot | all | bleu_1 | 30.00 (n=12) | 20.00* (n=3) |"
    assert md[-1].startswith("n: the rows each cell of a run is computed from") and "fewer than 10 rows" in md[-1]
    typed = (out / "tables" / "nico_by_interaction_type.md").read_text(encoding="utf-8")
    assert "| open_domain | 0-shot | B | bleu_1 | 15.00* (n=3) | n/a |" in typed  # old has no B rows: no count
    assert "<p class='partial-run'>hf:old: only the first 3 rows (--limit), 3 rows in all" in page
    assert "hf:old (first 3 rows) n" in (out / "tables" / "nico_scores.csv").read_text(encoding="utf-8")


# ---- CoCoEval: the compared instances behind each mean ----

NAMES = ["Repetition", "Off Topic"]
HUMAN = {"i1": ("s1", [1, 2], [], 6, 5), "i2": ("s1", [], [3], 4, 3), "i3": ("s2", [1], [1, 2], 5, 5)}


def _cocoeval_run(folder: Path, model: str, answers: dict[str, tuple], **signature: object) -> Path:
    records = []
    for instance, (rep, off, consistency, collaborativeness) in answers.items():
        source, h_rep, h_off, h_con, h_col = HUMAN[instance]
        records.append({"id": instance, "source": source, "conversation_id": instance, "simulated": [],
                        "simulation_complete": True, "simulation_problems": [], "simulation_persisting_problems": 0,
                        "error": None, "excluded": None, "unusable_judge_answers": [],
                        "human_behaviours": {"Repetition": h_rep, "Off Topic": h_off},
                        "human_overall": {"consistency": h_con, "collaborativeness": h_col},
                        "model_behaviours": {"Repetition": rep, "Off Topic": off},
                        "model_overall": {"consistency": consistency, "collaborativeness": collaborativeness}})
    results = score_records(records, NAMES, 0, 0)
    results["signature"] = {"benchmark": "cocoeval", "model": model, "rows": len(records), "taxonomy": NAMES,
                            "judge": "openai:o4-mini", "limit": None, **signature}
    write_folder(folder, records, results)
    return folder


def test_cocoeval_means_carry_their_instances(tmp_path: Path) -> None:
    # a: i1, i2 (source s1) and i3 (s2), 3 instances compared; b (--limit 2): i1 and i2, both s1.
    # Means by hand: a's s2 Repetition 3 (i3: three turns) over 1 instance; b's s1 Repetition (0 + 4) / 2 = 2.
    a = _cocoeval_run(tmp_path / "a", "stub:a", {"i1": ([1], [], 8, 7), "i2": ([], [], 8, 9), "i3": ([1, 2, 3], [], 7, 8)})
    b = _cocoeval_run(tmp_path / "b", "stub:b", {"i1": ([], [2], 3, 4), "i2": ([1, 2, 3, 4], [], 5, 6)}, limit=2)
    runs = load_runs([a, b])
    assert list(cocoeval_table(runs).columns) == ["behaviour", "who", "mean", "low", "high"]  # as before
    overall = cocoeval_table(runs, with_n=True)
    n = {(r.behaviour, r.who): r.n for r in overall.itertuples()}
    # a and b compared other instances, so each has its own humans, over the same instances as its model
    assert n[("Repetition", "stub:a")] == n[("Repetition", "human (stub:a)")] == 3
    assert n[("Repetition", "stub:b")] == n[("Repetition", "human (stub:b)")] == 2
    per_source = cocoeval_source_table(runs, with_n=True)
    cells = {(r.source, r.behaviour, r.who): (r.mean, r.n) for r in per_source.itertuples()}
    assert cells[("s2", "Repetition", "stub:a")] == (3.0, 1) and cells[("s1", "Repetition", "stub:b")] == (2.0, 2)
    ratings = cocoeval_ratings_table(runs, with_n=True)
    assert list(ratings.columns)[-1] == "n" and list(ratings["n"]) == [3, 2, 3, 2]  # a, b, human (a), human (b)
    assert "n" not in cocoeval_ratings_table(runs).columns
    out = tmp_path / "report"
    page = write_report([a, b], out).read_text(encoding="utf-8")
    lines = (out / "tables" / "cocoeval_frequencies_per_source.md").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "| source | behaviour | who | mean | low | high | n |"
    # 1 and 2 instances: under 10, marked; b named with its limit
    assert f"| s2 | Repetition | stub:a | 3.00* | {MISSING} | {MISSING} | 1 |" in lines
    assert f"| s1 | Repetition | stub:b (first 2 rows) | 2.00* | {MISSING} | {MISSING} | 2 |" in lines
    assert lines[-1] == ("* marks a cell computed from fewer than 10 rows, where one row more or less moves it a lot: "
                         "read it with care (rows: mean from n).")
    assert "<p class='partial-run'>stub:b: only the first 2 rows (--limit), 2 rows in all" in page
    # the page shows the all-sources table: a's Repetition (1 + 0 + 3) / 3 = 1.33 over its 3 instances
    assert "<td>Repetition</td><td>stub:a</td><td class=small-n>1.33*</td>" in page
    csv = pd.read_csv(out / "tables" / "cocoeval_frequencies.csv", index_col=0)
    assert list(csv.columns) == ["behaviour", "who", "mean", "low", "high", "n"]
