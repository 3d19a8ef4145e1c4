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
from convbench_datasets.runner import Backend, Generation, GenerationParams
from convbench_datasets import run_nc, score_run


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


def test_old_released_script_runs_keep_their_lenient_reading_and_score_can_switch_rules(nc_built, tmp_path, capsys):
    import json

    run = _run(tmp_path, nc_built, Recorder("repeat"), "old", limit=None, rules="released_script")
    results_file = run.path / "results.json"
    results = json.loads(results_file.read_text())
    del results["signature"]["parsing"]  # as written before the parsing was recorded: convbench's reading
    results_file.write_text(json.dumps(results))
    lenient = score_run(run.path)
    assert lenient.results["signature"]["parsing"] == "convbench"
    assert lenient.results["per_pattern"]["Repeat Request"] == 100.0  # "repeat" read as Repeat
    # --rules released_script re-reads the same answers exactly as the released aggregator: no label named
    assert main(["score", str(run.path), "--rules", "released_script"]) == 0
    exact = json.loads(results_file.read_text())
    assert exact["signature"]["parsing"] == "released" and exact["passed"] == 0
    assert main(["score", str(run.path), "--rules", "paper"]) == 0
    assert json.loads(results_file.read_text())["per_pattern"]["Repeat Request"] == 100.0


def test_fill_request_details_reaches_the_prompt_and_the_signature(nc_built, nc_sources, nc_rows, tmp_path, monkeypatch):
    monkeypatch.setenv("CONVBENCH_SOURCES", str(nc_sources))
    judge = Recorder("DetailRequestGrounded")
    run = run_nc(model="baseline:repeat", judge=judge, out=tmp_path / "filled", config="complex_request", limit=None,
                 dataset=nc_built, cache=tmp_path / "c.sqlite", progress=False, fill_request_details=True)
    assert run.results["signature"]["fill_request_details"] is True
    rows = nc_rows["complex_request"]
    expected = [released_prompt(nc_sources).render(row, r["response"], fill_request_details=True)
                for row, r in zip(rows, run.records)]
    assert judge.prompts == expected
    assert any(row["request_details"] and row["request_details"] in p[1]["content"] for row, p in zip(rows, judge.prompts))


def test_fill_request_details_with_convbench_wording_fails_before_generation(nc_built, tmp_path):
    generator = Recorder("Sure.")
    with pytest.raises(Exception, match="released judge prompt only"):
        run_nc(model=generator, judge=Recorder("Repeat"), out=tmp_path / "x", config="basic", limit=2,
               dataset=nc_built, cache=tmp_path / "c.sqlite", progress=False, template="convbench",
               fill_request_details=True)
    assert generator.calls == 0


@pytest.mark.parametrize("kept", [17, 18])
def test_score_prints_judge_sanity_and_warns_below_90(nc_built, tmp_path, capsys, kept):
    # 20 basic Repeat Request rows, `kept` of them still labelled Repeat: 18/20 = 90% is not below the
    # threshold (no warning), 17/20 = 85% is (warning).
    import json

    run = _run(tmp_path, nc_built, Recorder("Repeat"), "s", limit=None)
    records = [json.loads(line) for line in (run.path / "records.jsonl").read_text().splitlines()]
    repeat_rows = [r for r in records if r["pattern"] == "Repeat Request"]
    assert len(repeat_rows) == 20
    for r in repeat_rows[kept:]:
        r["judge_output"] = "Paraphrase"
    (run.path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    capsys.readouterr()
    assert main(["score", str(run.path)]) == 0
    out = capsys.readouterr()
    share = 100.0 * kept / 20
    assert f"judge sanity: the judge labels the repeat baseline Repeat on {share:.1f}%" in out.out
    assert ("convbench: warning: the judge labels verbatim repeats" in out.err) is (kept < 18)


def test_compare_warns_when_judge_prompts_differ(nc_built, tmp_path, capsys):
    a = _run(tmp_path, nc_built, Recorder("Repeat"), "a")
    b = _run(tmp_path, nc_built, Recorder("Repeat"), "b", template="convbench")
    capsys.readouterr()
    assert main(["compare", str(a.path), str(b.path), "--resamples", "20"]) == 0
    assert "the runs differ in judge_template: 'released' vs 'builtin'" in capsys.readouterr().err
