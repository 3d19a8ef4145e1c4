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
from convbench_datasets.engine import Backend, Generation, GenerationParams
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
    assert signature["judge_template"] == "released"
    assert (signature["rules"], signature["parsing"]) == ("paper", "exact")  # the paper's setup (paper_results.yaml)
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


def test_judge_text_is_read_exactly_by_default_and_leniently_on_request(nc_built, tmp_path):
    # "repeat" (lower case) is no label to the released aggregator (case-sensitive pieces): by default no row
    # passes; the lenient reading takes it for Repeat, so the 20 basic Repeat Request rows pass.
    # read exactly, none of the judge's answers can be read: that is what this test reads them for
    exact = _run(tmp_path, nc_built, Recorder("repeat"), "exact", limit=None, max_unparsed_rate=1)
    lenient = _run(tmp_path, nc_built, Recorder("repeat"), "lenient", limit=None, parsing="lenient")
    script = _run(tmp_path, nc_built, Recorder("repeat"), "script", limit=None, rules="released_script",
                  max_unparsed_rate=1)
    assert not any(r["passed"] for r in exact.records) and not any(r["passed"] for r in script.records)
    repeat_rows = [r for r in lenient.records if r["pattern"] == "Repeat Request"]
    assert len(repeat_rows) == 20 and all(r["passed"] for r in repeat_rows) and lenient.results["passed"] == 20
    assert (exact.results["signature"]["rules"], exact.results["signature"]["parsing"]) == ("paper", "exact")
    assert (lenient.results["signature"]["rules"], lenient.results["signature"]["parsing"]) == ("paper", "lenient")
    assert (script.results["signature"]["rules"], script.results["signature"]["parsing"]) == ("released_script", "exact")
    # re-scoring keeps the run's reading
    assert score_run(exact.path, max_unparsed_rate=1).results["passed"] == 0
    assert score_run(lenient.path).results["passed"] == 20
    assert set(exact.results["per_task"]["basic"]) == {r["task"] for r in exact.records}


def test_every_combination_of_rules_and_parsing_from_the_cli(nc_built, tmp_path, capsys):
    import json

    # A judge that says "Answer" on every row: under the paper's rules the 20 rag incremental-self-correction
    # rows pass (appendix B.1, Table 3), under the released script's they fail; "answer" passes only when
    # read leniently. So per (rules, parsing) the rag Incremental/Correction cell is:
    expected = {("paper", "exact"): 100.0, ("released_script", "exact"): 0.0,
                ("paper", "lenient"): 100.0, ("released_script", "lenient"): 0.0}
    for answer in ("Answer", "answer"):
        for (rules, parsing), cell in expected.items():
            out = tmp_path / f"{answer}-{rules}-{parsing}"
            assert main(["run", "nc", "--model", "baseline:repeat", "--judge", "baseline:silence", "--config", "rag",
                         "--dataset", str(nc_built), "--out", str(out), "--cache", str(tmp_path / "c.sqlite"),
                         "--no-progress", "--rules", rules, "--parsing", parsing]) == 0
            # the judge answered empty turns: rewrite its answers, then re-score (the run's rules and parsing kept)
            lines = (out / "records.jsonl").read_text().splitlines()
            (out / "records.jsonl").write_text("".join(
                json.dumps({**json.loads(line), "judge_output": answer}) + "\n" for line in lines))
            results = score_run(out).results
            assert (results["signature"]["rules"], results["signature"]["parsing"]) == (rules, parsing)
            read = cell if answer == "Answer" or parsing == "lenient" else 0.0
            assert results["per_set_pattern"]["rag"]["Incremental/Correction"] == read, (answer, rules, parsing)
    capsys.readouterr()
    # convbench score switches either choice alone; the other stays the run's
    run = tmp_path / "Answer-paper-exact"
    assert main(["score", str(run), "--rules", "released_script"]) == 0
    results = score_run(run).results
    assert (results["signature"]["rules"], results["signature"]["parsing"]) == ("released_script", "exact")
    assert main(["score", str(run), "--parsing", "lenient"]) == 0
    results = score_run(run).results
    assert (results["signature"]["rules"], results["signature"]["parsing"]) == ("released_script", "lenient")
    assert "scored with rules released_script, lenient reading of judge answers (not the paper's setup" in \
        capsys.readouterr().out


def test_cli_prints_judge_sanity_and_warns_when_low(nc_built, tmp_path, capsys):
    # baseline:silence as judge: empty answers, so 0% of verbatim repeats are labelled Repeat.
    code = main(["run", "nc", "--model", "baseline:repeat", "--judge", "baseline:silence", "--config", "basic",
                 "--dataset", str(nc_built), "--out", str(tmp_path / "s"), "--cache", str(tmp_path / "c.sqlite"),
                 "--no-progress"])
    assert code == 0
    captured = capsys.readouterr()
    assert ("judge sanity: the judge labels the repeat baseline Repeat or Partial Repeat on 0.0% of Repeat Request "
            "rows") in captured.out
    assert "convbench: warning: the judge labels verbatim repeats Repeat or Partial Repeat on only 0.0%" in captured.err
    assert "scored with rules paper, exact reading of judge answers (the paper's setup" in captured.out


@pytest.mark.parametrize("rules", ["paper", "released_script"])
def test_old_runs_keep_the_lenient_reading_they_were_made_with(nc_built, tmp_path, capsys, rules):
    import json

    run = _run(tmp_path, nc_built, Recorder("repeat"), "old", limit=None, rules=rules, parsing="lenient")
    results_file = run.path / "results.json"
    assert json.loads(results_file.read_text())["per_pattern"]["Repeat Request"] == 100.0  # "repeat" read as Repeat
    results = json.loads(results_file.read_text())
    del results["signature"]["parsing"]  # as written before the parsing was recorded: every run was read leniently
    results_file.write_text(json.dumps(results))
    capsys.readouterr()
    assert main(["score", str(run.path)]) == 0
    lenient = json.loads(results_file.read_text())
    assert lenient["signature"]["parsing"] == "lenient" and lenient["signature"]["parsing_assumed"] is True
    assert lenient["per_pattern"]["Repeat Request"] == 100.0  # scored as it was made
    err = capsys.readouterr().err
    assert "did not record how its judge answers were read: they are re-scored with the lenient reading" in err
    # the older names of a recorded reading mean what they meant: "convbench" lenient, "released" exact
    for old, passed in (("convbench", 20), ("released", 0)):
        results = json.loads(results_file.read_text())
        results["signature"]["parsing"] = old
        results["signature"].pop("parsing_assumed", None)
        results_file.write_text(json.dumps(results))
        again = score_run(run.path, max_unparsed_rate=1).results  # read exactly, no "repeat" can be read
        assert again["signature"]["parsing"] == {"convbench": "lenient", "released": "exact"}[old]
        assert again["passed"] == passed and "parsing_assumed" not in again["signature"]
    # --parsing exact re-reads the same answers as the released aggregator (no label named), and the
    # assumption is gone from the signature; --rules alone keeps the run's reading
    results = json.loads(results_file.read_text())
    del results["signature"]["parsing"]
    results_file.write_text(json.dumps(results))
    assert main(["score", str(run.path), "--rules", rules]) == 0
    assert json.loads(results_file.read_text())["signature"]["parsing"] == "lenient"
    assert main(["score", str(run.path), "--parsing", "exact", "--max-unparsed-rate", "1"]) == 0  # as above
    exact = json.loads(results_file.read_text())
    assert exact["signature"]["parsing"] == "exact" and exact["passed"] == 0
    assert "parsing_assumed" not in exact["signature"] and exact["signature"]["rules"] == rules


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
    # 20 basic Repeat Request rows, `kept` of them still given an acceptable repeat label (half Repeat, half
    # Partial Repeat: both pass the row, appendix B.1): 18/20 = 90% is not below the threshold (no warning),
    # 17/20 = 85% is (warning). Counting only Repeat would give 9/20 or 8/20 and warn in both.
    import json

    run = _run(tmp_path, nc_built, Recorder("Repeat"), "s", limit=None)
    records = [json.loads(line) for line in (run.path / "records.jsonl").read_text().splitlines()]
    repeat_rows = [r for r in records if r["pattern"] == "Repeat Request"]
    assert len(repeat_rows) == 20
    for r in repeat_rows[: kept // 2]:
        r["judge_output"] = "Partial Repeat"
    for r in repeat_rows[kept:]:
        r["judge_output"] = "Paraphrase"
    (run.path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    capsys.readouterr()
    assert main(["score", str(run.path)]) == 0
    out = capsys.readouterr()
    share = 100.0 * kept / 20
    assert f"judge sanity: the judge labels the repeat baseline Repeat or Partial Repeat on {share:.1f}%" in out.out
    assert ("convbench: warning: the judge labels verbatim repeats" in out.err) is (kept < 18)


def test_compare_warns_when_judge_prompts_differ(nc_built, tmp_path, capsys):
    a = _run(tmp_path, nc_built, Recorder("Repeat"), "a")
    b = _run(tmp_path, nc_built, Recorder("Repeat"), "b", template="convbench")
    capsys.readouterr()
    assert main(["compare", str(a.path), str(b.path), "--resamples", "20"]) == 0
    assert "the runs differ in judge_template: 'released' vs 'builtin'" in capsys.readouterr().err
    # readings as the runs were scored: an older name is the same reading, an unrecorded one was lenient
    import json

    for value, warned in (("released", False), (None, True)):
        results = json.loads((b.path / "results.json").read_text())
        results["signature"].pop("parsing")
        if value is not None:
            results["signature"]["parsing"] = value
        (b.path / "results.json").write_text(json.dumps(results))
        assert main(["compare", str(a.path), str(b.path), "--resamples", "20"]) == 0
        err = capsys.readouterr().err
        assert ("the runs differ in parsing: 'exact' vs 'lenient'" in err) is warned, value


@pytest.mark.parametrize("parsing", ["exact", "lenient"])
def test_a_record_flags_the_labels_outside_its_rows_label_set(nc_built, tmp_path, parsing):
    # The first 20 basic rows are the Definition Request rows (the upstream file's order): label set "repair"
    # (patterns.yaml), which holds Definition but not ChoiceGiving (an "expansion" label). By hand: both labels
    # read, ChoiceGiving flagged out of set, the row passes on Definition (the "definition" rule), and the
    # run's out_of_set count is every row.
    run = _run(tmp_path, nc_built, Recorder("Definition, ChoiceGiving"), parsing, limit=20, parsing=parsing)
    assert {r["task"] for r in run.records} == {"definition request"}
    assert {(tuple(r["labels"]), tuple(r["out_of_set"]), r["passed"]) for r in run.records} == {
        (("Definition", "ChoiceGiving"), ("ChoiceGiving",), True)}
    assert run.results["out_of_set"] == 20


def test_lenient_records_fail_silence_beside_an_unrecognised_piece_as_the_tables_do(nc_built, tmp_path):
    # "Silence, because the turn is empty": Silence, and a piece that names no label. Silence is acceptable only
    # on the Sequence Closer and Sequence Abort rows (40 of basic's 180), where it must stand alone: the
    # unrecognised piece beside it counts as talk (patterns.yaml's stand_alone_labels), so they fail; Silence
    # passes nowhere else. By hand: no record passes, and the records agree with the tables row by row.
    run = _run(tmp_path, nc_built, Recorder("Silence, because the turn is empty"), "silence", limit=None,
               parsing="lenient")
    closing = [r for r in run.records if r["pattern"] in ("Sequence Closer", "Sequence Abort")]
    assert len(run.records) == 180 and len(closing) == 40
    assert all(r["labels"] == ["Silence"] and r["unrecognised"] == ["because the turn is empty"] for r in closing)
    assert [r for r in run.records if r["passed"]] == []
    assert run.results["passed"] == 0 and run.results["per_pattern"]["Sequence Closer"] == 0.0
