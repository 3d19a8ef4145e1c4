"""The NICO evaluate modules load offline by path, give the direct API's numbers, and their examples run."""

from __future__ import annotations

import doctest
import sys
from pathlib import Path

import pytest

from convbench_datasets.nico.nico_generation import score_generation
from convbench_datasets.nico.unnatural_prf import score_unnatural

METRICS = Path(__file__).resolve().parents[2] / "metrics"


@pytest.mark.parametrize(
    "name,direct,kwargs",
    [
        ("nico_generation", score_generation,
         {"predictions": ["好啊，我同意！", "明天见"], "references": ["行，我同意。", "明天见吧"]}),
        ("unnatural_sentence_prf", score_unnatural,
         {"predictions": ["A：我对于此事表示赞同。", "无"], "references": [["我对于此事表示赞同。"], ["你好。"]]}),
        # the dialogue and the per-answer limits reach the scorer through the module too
        ("unnatural_sentence_prf", score_unnatural,
         {"predictions": ["我对于此事表示赞同。\n说明：明天休息。"], "references": [["我对于此事表示赞同。"]],
          "dialogues": [["我对于此事表示赞同。", "说明：明天休息。"]], "max_lines": 10, "max_line_chars": 50}),
        # blank answers, under either reading: the module passes blank_answer on
        ("unnatural_sentence_prf", score_unnatural, {"predictions": ["……", "", "无"], "references": [[], [], []]}),
        ("unnatural_sentence_prf", score_unnatural,
         {"predictions": ["……", "", "无"], "references": [[], [], []], "blank_answer": "none"}),
    ],
)
def test_module_matches_direct_api_and_examples_run(name: str, direct, kwargs: dict, monkeypatch) -> None:
    evaluate = pytest.importorskip("evaluate")
    metric = evaluate.load(str(METRICS / name))
    assert metric.compute(**kwargs) == direct(**kwargs)
    monkeypatch.chdir(METRICS.parent)
    results = doctest.testmod(sys.modules[type(metric).__module__], extraglobs={"evaluate": evaluate})
    assert results.attempted >= 1 and results.failed == 0
