"""CoCoEval in reports: the all-sources figure (the paper's Figure 3), the per-source figure (its Table 11
as bars), the ratings table (its Table 4 layout) and the note on runs that depart from the paper's setup,
from hand-made run folders scored by the runner's own scoring."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("matplotlib", reason="reports need the report extra")

from convbench_datasets.cocoeval.report_figures import cocoeval_figure, cocoeval_source_figure  # noqa: E402
from convbench_datasets.cocoeval.report_tables import (  # noqa: E402
    cocoeval_paper_differences,
    cocoeval_ratings_table,
    cocoeval_source_table,
    cocoeval_table,
)
from convbench_datasets.report import load_runs, write_report  # noqa: E402
from convbench_datasets.report.figures import MISSING  # noqa: E402
from convbench_datasets.cocoeval.run import score_records  # noqa: E402
from convbench_datasets.engine.run_folder import write_folder  # noqa: E402

NAMES = ["Repetition", "Off Topic"]
# per instance: source, human judge answer (Repetition turns, Off Topic turns, consistency, collaborativeness)
HUMAN = {"i1": ("s1", [1, 2], [], 6, 5), "i2": ("s1", [], [3], 4, 3), "i3": ("s2", [1], [1, 2], 5, 5)}


PAPER_SETUP = {"judge": "openai:o4-mini", "repetition_countermeasure": {"copied_turns": 5, "presence_penalty": 2.0},
               "bootstrap_unit": "instance", "turns_per_call": 5, "split": "test", "limit": None}


def _run(folder: Path, model: str, answers: dict[str, tuple], n_bootstrap: int = 0, **signature) -> Path:
    """A run folder of the instances in ``answers`` (model: Repetition turns, Off Topic turns, two ratings)."""
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
    results = score_records(records, NAMES, n_bootstrap, 0)
    results["signature"] = {"benchmark": "cocoeval", "model": model, "rows": len(records), "taxonomy": NAMES,
                            **PAPER_SETUP, **signature}
    write_folder(folder, records, results)
    return folder


@pytest.fixture()
def runs(tmp_path: Path) -> list[Path]:
    # run a: all three instances; run b: only source s1 (i1, i2); run c: the same instances as a; run d:
    # c scored with a bootstrap (so with intervals, its humans' too)
    a = _run(tmp_path / "a", "stub:a", {"i1": ([1], [], 8, 7), "i2": ([], [], 8, 9), "i3": ([1, 2, 3], [], 7, 8)})
    b = _run(tmp_path / "b", "stub:b", {"i1": ([], [2], 3, 4), "i2": ([1, 2, 3, 4], [], 5, 6)})
    c = _run(tmp_path / "c", "stub:c", {i: ([], [], 9, 9) for i in HUMAN})
    d = _run(tmp_path / "d", "stub:d", {i: ([], [], 9, 9) for i in HUMAN}, n_bootstrap=50)
    return [a, b, c, d]


def test_per_source_table_and_figure_panels(runs: list[Path]) -> None:
    # Means by hand. s1 humans: Repetition (2 + 0) / 2 = 1, Off Topic (0 + 1) / 2 = 0.5 (the same for a and
    # b: one "human"); a: 0.5, 0; b: (0 + 4) / 2 = 2, (1 + 0) / 2 = 0.5. s2 humans: 1, 2; a: 3, 0; b: no rows.
    frame = cocoeval_source_table(load_runs(runs[:2]))
    cells = {(r.source, r.behaviour, r.who): r.mean for r in frame.itertuples()}
    assert cells == {("s1", "Repetition", "human"): 1.0, ("s1", "Off Topic", "human"): 0.5,
                     ("s1", "Repetition", "stub:a"): 0.5, ("s1", "Off Topic", "stub:a"): 0.0,
                     ("s1", "Repetition", "stub:b"): 2.0, ("s1", "Off Topic", "stub:b"): 0.5,
                     ("s2", "Repetition", "human"): 1.0, ("s2", "Off Topic", "human"): 2.0,
                     ("s2", "Repetition", "stub:a"): 3.0, ("s2", "Off Topic", "stub:a"): 0.0}
    fig = cocoeval_source_figure(frame)
    # one panel per source, titled by it; the legend names human then each model
    assert [ax.get_title() for ax in fig.axes] == ["s1", "s2"]
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["human", "stub:a", "stub:b"]
    for ax, widths, missing in ((fig.axes[0], [0.0, 0.5, 0.5, 0.5, 1.0, 2.0], 0), (fig.axes[1], [0.0, 1.0, 2.0, 3.0], 2)):
        # s1: 2 types x 3 bars; s2: b has no rows there: its 2 bars are missing, labelled n/a, not 0
        assert sorted(p.get_width() for p in ax.patches) == widths
        assert sum(t.get_text().strip() == MISSING for t in ax.texts) == missing
    # the behaviour axis is shared, first type on top in every panel
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == NAMES and fig.axes[1].yaxis_inverted()


def test_ratings_table_in_the_papers_table_4_layout(runs: list[Path]) -> None:
    # a and c compared the same instances: one human row. Human consistency (6 + 4 + 5) / 3 = 5,
    # collaborativeness (5 + 3 + 5) / 3 = 13/3; a: (8 + 8 + 7) / 3 = 23/3 and (7 + 9 + 8) / 3 = 8; c: 9, 9.
    table = cocoeval_ratings_table(load_runs([runs[0], runs[2]]))
    assert list(table.index) == ["stub:a", "stub:c", "human"] and table.index.name == "model"
    assert list(table.columns) == ["consistency", "consistency low", "consistency high",
                                   "collaborativeness", "collaborativeness low", "collaborativeness high"]
    assert table.loc["stub:a", "consistency"] == pytest.approx(23 / 3) and table.loc["stub:a", "collaborativeness"] == 8
    assert table.loc["human", "consistency"] == 5 and table.loc["human", "collaborativeness"] == pytest.approx(13 / 3)
    assert table.loc["stub:a"].isna().sum() == 4  # scored without a bootstrap: intervals n/a, not 0
    # b compared only i1 and i2, so its humans are other numbers ((6 + 4) / 2 = 5, (5 + 3) / 2 = 4): one row each
    table = cocoeval_ratings_table(load_runs(runs[:2]))
    assert list(table.index) == ["stub:a", "stub:b", "human (stub:a)", "human (stub:b)"]
    assert table.loc["human (stub:b)", "collaborativeness"] == 4 and table.loc["stub:b", "consistency"] == 4
    # d reports intervals (c does not): the humans' numbers differ as shown, so they are not merged
    table = cocoeval_ratings_table(load_runs(runs[2:]))
    assert list(table.index) == ["stub:c", "stub:d", "human (stub:c)", "human (stub:d)"]
    assert table.loc["stub:d", "consistency low"] == table.loc["stub:d", "consistency high"] == 9  # constant ratings
    low, high = table.loc["human (stub:d)", ["consistency low", "consistency high"]]
    assert 4 <= low <= 5 <= high <= 6


def test_report_page_and_files(runs: list[Path], tmp_path: Path) -> None:
    page = write_report(runs, tmp_path / "report").read_text(encoding="utf-8")
    assert "All sources (the paper's Figure 3)" in page and "Per source (the paper's Table 11, as bars)" in page
    assert "(1-10; the paper's Table 4 layout)" in page
    assert "not the paper's setup" not in page  # every run has the paper's setup
    assert (tmp_path / "report" / "figures" / "cocoeval_behaviours_per_source.png").stat().st_size > 0
    lines = (tmp_path / "report" / "tables" / "cocoeval_ratings.md").read_text(encoding="utf-8").splitlines()
    assert lines[0] == ("| model | consistency | consistency low | consistency high | collaborativeness | "
                        "collaborativeness low | collaborativeness high | n |")
    # stub:a compared its 3 instances (none excluded): n = 3, under 10, so each mean is marked *
    assert lines[2] == f"| stub:a | 7.67* | {MISSING} | {MISSING} | 8.00* | {MISSING} | {MISSING} | 3 |"


def test_the_human_series_is_drawn_once(runs: list[Path]) -> None:
    # a and c compared the same instances, so their humans are one series (before: "human (stub:a)" and
    # "human (stub:c)"). By hand, over i1..i3: human Repetition (2 + 0 + 1) / 3 = 1, Off Topic (0 + 1 + 2) / 3 = 1;
    # a: Repetition (1 + 0 + 3) / 3 = 4/3, Off Topic 0; c: 0, 0.
    frame = cocoeval_table(load_runs([runs[0], runs[2]]))
    cells = {(r.behaviour, r.who): r.mean for r in frame.itertuples()}
    assert cells == {("Repetition", "human"): 1.0, ("Repetition", "stub:a"): pytest.approx(4 / 3),
                     ("Repetition", "stub:c"): 0.0, ("Off Topic", "human"): 1.0, ("Off Topic", "stub:a"): 0.0,
                     ("Off Topic", "stub:c"): 0.0}
    fig = cocoeval_figure(frame)
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["human", "stub:a", "stub:c"]
    assert "Figure 3" in fig.axes[0].get_title() and "all sources" in fig.axes[0].get_title()
    # b compared only i1 and i2: other humans, so one series each
    whos = list(dict.fromkeys(cocoeval_table(load_runs(runs[:2]))["who"]))
    assert whos == ["human (stub:a)", "stub:a", "human (stub:b)", "stub:b"]


def test_the_per_source_figure_is_named_as_the_papers_table_11() -> None:
    import pandas as pd

    frame = pd.DataFrame([{"source": "s1", "behaviour": "Repetition", "who": "human", "mean": 1.0, "low": None,
                           "high": None}])
    title = cocoeval_source_figure(frame)._suptitle.get_text()
    assert "Table 11" in title and "Figure 3" not in title


def test_runs_that_depart_from_the_papers_setup_are_flagged(tmp_path: Path) -> None:
    answers = {i: ([], [], 9, 9) for i in HUMAN}
    paper = _run(tmp_path / "paper", "stub:paper", answers)
    ablation = _run(tmp_path / "ablation", "stub:ablation", answers, repetition_countermeasure=None,
                    bootstrap_unit="source_conversation", judge="openai:gpt-4.1")
    loaded = load_runs([paper, ablation])
    assert cocoeval_paper_differences(loaded[0]) == []
    assert cocoeval_paper_differences(loaded[1]) == [
        "judge openai:gpt-4.1 (paper: o4-mini)",
        "no repetition countermeasure (--no-repetition-countermeasure; paper: copy the last 5 turns first, "
        "presence_penalty 2.0)",
        "intervals resample source_conversation (paper: its conversations, one per instance)"]
    page = write_report([paper, ablation], tmp_path / "report").read_text(encoding="utf-8")
    assert "stub:ablation: not the paper's setup (judge openai:gpt-4.1" in page
    assert "stub:paper: not the paper" not in page
