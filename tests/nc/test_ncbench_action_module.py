"""The evaluate module loads offline by path and gives the direct API's numbers; its examples run."""

from __future__ import annotations

import doctest
import os
from pathlib import Path

import pytest

from convbench_datasets.nc.ncbench_action import score_actions

MODULE = Path(__file__).resolve().parents[2] / "metrics" / "ncbench_action"


@pytest.fixture(scope="module")
def metric():
    evaluate = pytest.importorskip("evaluate")
    assert os.environ.get("HF_EVALUATE_OFFLINE") == "1"
    return evaluate.load(str(MODULE))


def test_same_numbers_as_the_direct_api(metric) -> None:
    predictions = ["Repeat", "Paraphrase, Answer", "", "Silence", "Silence, PreClosing"]
    references = [["Repeat"], ["Repeat"], ["Repeat"], ["Silence", "PreClosing"], ["Silence", "PreClosing"]]
    patterns = ["Repeat Request"] * 3 + ["Sequence Closer"] * 2
    sets = ["basic", "rag", "rag", "basic", "rag"]
    direct = score_actions(predictions, references, patterns=patterns, sets=sets)
    via_evaluate = metric.compute(predictions=predictions, references=references, patterns=patterns, sets=sets)
    assert via_evaluate == direct
    assert direct["accuracy"] == 40.0 and direct["unparsed"] == 1


@pytest.mark.parametrize("parsing", ["exact", "lenient"])
def test_the_reading_reaches_the_module(metric, parsing: str) -> None:
    # "repeat" names no label to the exact reading (the default, the released aggregator's), Repeat to the
    # lenient one: 0 of 1 and 1 of 1
    out = metric.compute(predictions=["repeat"], references=[["Repeat"]], parsing=parsing)
    assert out == score_actions(["repeat"], [["Repeat"]], parsing=parsing)
    assert (out["passed"], out["signature"]["parsing"]) == ({"exact": 0, "lenient": 1}[parsing], parsing)
    assert metric.compute(predictions=["repeat"], references=[["Repeat"]])["signature"]["parsing"] == "exact"


def test_module_docstring_examples_run(metric, monkeypatch: pytest.MonkeyPatch) -> None:
    import evaluate

    monkeypatch.chdir(MODULE.parents[1])  # the example loads "metrics/ncbench_action"
    module = type(metric).__module__
    import sys

    results = doctest.testmod(sys.modules[module], extraglobs={"evaluate": evaluate}, verbose=False)
    assert results.attempted >= 1 and results.failed == 0


def test_compute_skips_the_arrow_copy_and_gives_what_it_gave(metric, monkeypatch: pytest.MonkeyPatch) -> None:
    # evaluate's own route (add_batch, then compute on what it wrote to Arrow and read back) is the
    # reference; compute(predictions=..., references=...) in one process gives the same without the copy
    predictions = ["Repeat", "Paraphrase, Answer", "", None, "Silence, PreClosing"]
    references = [["Repeat"], ["Repeat"], ["Repeat"], ["Repeat"], ["Silence", "PreClosing"]]
    columns = {"patterns": ["Repeat Request"] * 4 + ["Sequence Closer"], "sets": ["basic", "rag", "rag", "rag", "basic"]}
    metric.add_batch(predictions=predictions, references=references)
    via_arrow = metric.compute(**columns)
    monkeypatch.setattr(metric, "add_batch", lambda **_: pytest.fail("compute copied its inputs to Arrow"))
    assert metric.compute(predictions=predictions, references=references, **columns) == via_arrow
    assert via_arrow["accuracy"] == 20.0 and via_arrow["unparsed"] == 2  # only row 0 passes; "" and None name no label
