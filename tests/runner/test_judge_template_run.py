"""`run_nc` with the released judge prompt (the default), convbench's wording, and the released rule.

A recording judge keeps the exact messages it was sent, so the test compares them with the released
pipeline's rendering (itself checked byte for byte against the released function in
tests/nc/test_released_prompt.py) and with convbench's wording.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from convbench_datasets.cli import main
from convbench_datasets.nc.judge_prompt import judge_messages
from convbench_datasets.nc.released_prompt import released_prompt
from convbench_datasets.runner import Backend, Generation, GenerationParams, run_nc, score_run


class Recorder(Backend):
    """A judge that answers a fixed text and remembers every prompt."""

    kind = "stub"

    def __init__(self, answer: str) -> None:
        self.model, self.answer, self.prompts, self.calls = f"recorder-{answer}", answer, [], 0

    def generate(self, prompts: Sequence[list[dict]], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
        for i, messages in enumerate(prompts):
            self.calls += 1
            self.prompts.append(messages)
            yield i, Generation(self.answer)


def _run(tmp_path: Path, nc_built: Path, judge: Backend, name: str, limit: int | None = 25, **kwargs):
    return run_nc(model="baseline:repeat", judge=judge, out=tmp_path / name, config="basic", limit=limit,
                  dataset=nc_built, cache=tmp_path / "cache.sqlite", progress=False, **kwargs)


def test_default_run_sends_the_released_prompt(nc_built, nc_sources, nc_rows, tmp_path, monkeypatch):
    monkeypatch.setenv("CONVBENCH_SOURCES", str(nc_sources))
    judge = Recorder("Repeat")
    run = _run(tmp_path, nc_built, judge, "released")
    rows = nc_rows["basic"][:25]
    expected = [released_prompt(nc_sources).render(row, record["response"]) for row, record in zip(rows, run.records)]
    assert judge.prompts == expected
    signature = run.results["signature"]
    assert signature["judge_template"] == "released" and signature["parsing"] == "convbench"
    assert signature["judge_template_sha256"] == released_prompt(nc_sources).sha256
    assert signature["fill_request_details"] is False

    own = Recorder("Repeat")
    mine = _run(tmp_path, nc_built, own, "convbench", template="convbench")
    assert own.prompts == [judge_messages(row, r["response"], template="convbench") for row, r in zip(rows, mine.records)]
    assert mine.results["signature"]["judge_template"] == "builtin"
    assert mine.results["signature"]["judge_template_sha256"] != signature["judge_template_sha256"]


def test_released_template_refuses_whole_response_judging(nc_built, tmp_path):
    with pytest.raises(Exception, match="first line only"):
        _run(tmp_path, nc_built, Recorder("Repeat"), "x", first_line_only=False)


def test_released_rules_read_judge_text_as_the_aggregator_does(nc_built, tmp_path):
    # "repeat" (lower case) is Repeat to convbench's lenient reading and no label to the released rule.
    lenient = _run(tmp_path, nc_built, Recorder("repeat"), "paper", limit=None)
    exact = _run(tmp_path, nc_built, Recorder("repeat"), "released", limit=None, rules="released_script")
    repeat_rows = [r for r in lenient.records if r["pattern"] == "Repeat Request"]
    assert repeat_rows and all(r["passed"] for r in repeat_rows)
    assert not any(r["passed"] for r in exact.records)
    assert exact.results["signature"]["parsing"] == "released"
    # re-scoring keeps the run's reading
    assert score_run(exact.path).results["passed"] == 0
    assert score_run(lenient.path).results["passed"] == lenient.results["passed"] > 0
    assert set(exact.results["per_task"]["basic"]) == {r["task"] for r in exact.records}


def test_cli_prints_judge_sanity_and_warns_when_low(nc_built, tmp_path, capsys):
    # baseline:silence as judge: empty answers, so 0% of verbatim repeats are labelled Repeat.
    code = main(["run", "nc", "--model", "baseline:repeat", "--judge", "baseline:silence", "--config", "basic",
                 "--dataset", str(nc_built), "--out", str(tmp_path / "s"), "--cache", str(tmp_path / "c.sqlite"),
                 "--no-progress"])
    assert code == 0
    captured = capsys.readouterr()
    assert "judge sanity: the judge labels the repeat baseline Repeat on 0.0% of Repeat Request rows" in captured.out
    assert "convbench: warning: the judge labels verbatim repeats Repeat on only 0.0%" in captured.err
