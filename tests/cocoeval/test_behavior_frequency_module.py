"""The behavior_frequency evaluate module: offline by path, the direct API's numbers, its example runs."""

from __future__ import annotations

import doctest
import sys
from pathlib import Path

import pytest

from convbench_datasets.cocoeval.behavior_frequency import score_frequencies

METRICS = Path(__file__).resolve().parents[2] / "metrics"


def test_module(monkeypatch: pytest.MonkeyPatch) -> None:
    evaluate = pytest.importorskip("evaluate")
    metric = evaluate.load(str(METRICS / "behavior_frequency"))
    kwargs = {"predictions": [["Repetition"], [], ["Off Topic"]], "references": [["Repetition"], ["Off Topic"], []],
              "sources": ["a", "b", "b"], "n_bootstrap": 50}
    assert metric.compute(**kwargs) == score_frequencies(**kwargs)
    monkeypatch.chdir(METRICS.parent)
    results = doctest.testmod(sys.modules[type(metric).__module__], extraglobs={"evaluate": evaluate})
    assert results.attempted >= 1 and results.failed == 0
