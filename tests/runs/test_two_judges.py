"""Two judges in one NC-Bench run (``--judge A --judge B``): per-judge results and their agreement.

A tagging generator answers each row with a marker naming the row; two scripted judges read the
marker from the judge prompt and answer a fixed text per row, so every number below is known by hand.
The first ten rows of ``basic`` are all Definition Request rows (acceptable label: Definition).

    row  judge A               judge B          A first   B first     A pass  B pass
    0-2  Definition            Definition       Def       Def         P       P
    3    Definition            Example          Def       Ex          P       F
    4    Example               Example          Ex        Ex          F       F
    5    Repeat                Paraphrase       Rep       Para        F       F
    6    Paraphrase            Paraphrase       Para      Para        F       F
    7    Definition            I am not sure    Def       (unparsed)  P       F
    8    Example, Definition   Example          Ex        Ex          P       F
    9    Other                 NonAnswer        Other     NonAnswer   F       F

Accuracy: A passes 6 of 10 (60.0%), B 3 of 10 (30.0%, one unparsed answer).
Label level (first label): agreement on rows 0, 1, 2, 4, 6, 8: p_o = 6/10 = 0.6 (60.0%).
  A's marginals: Def 5, Ex 2, Rep 1, Para 1, Other 1; B's: Def 3, Ex 3, Para 2, unparsed 1, NonAnswer 1.
  p_e = .5*.3 (Def) + .2*.3 (Ex) + .1*.2 (Para) = .15 + .06 + .02 = 0.23 (the other categories: one side 0).
  kappa = (0.6 - 0.23) / (1 - 0.23) = 0.37 / 0.77 = 0.480519...
Pass/fail level: agreement on rows 0, 1, 2 (both pass) and 4, 5, 6, 9 (both fail): p_o = 7/10 = 0.7 (70.0%).
  A passes 6, fails 4; B passes 3, fails 7: p_e = .6*.3 + .4*.7 = .18 + .28 = 0.46.
  kappa = (0.7 - 0.46) / (1 - 0.46) = 0.24 / 0.54 = 0.444444...
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from convbench_datasets.cli import main
from convbench_datasets.engine import Backend, Generation, GenerationParams
from convbench_datasets import run_nc, score_run
from tests.runs.test_pipeline import RECORD_KEYS

ANSWERS_A = ["Definition", "Definition", "Definition", "Definition", "Example", "Repeat", "Paraphrase",
             "Definition", "Example, Definition", "Other"]
ANSWERS_B = ["Definition", "Definition", "Definition", "Example", "Example", "Paraphrase", "Paraphrase",
             "I am not sure", "Example", "NonAnswer"]
LABEL_KAPPA, PASS_KAPPA = 0.37 / 0.77, 0.24 / 0.54
ENTRY_KEYS = {"judge", "judge_output", "labels", "out_of_set", "unrecognised", "unparsed", "passed", "judge_cache_hit",
              "judge_finish_reason", "error"}


class Tagger(Backend):
    """A generator whose answer for row i is the marker ``ROW<i>END`` (rows told apart by their messages)."""

    kind, model = "stub", "tagger"

    def __init__(self, rows: Sequence[dict]) -> None:
        self.index = {json.dumps(r["messages"]): i for i, r in enumerate(rows)}
        self.calls = 0

    def generate(self, prompts: Sequence[list[dict]], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
        for i, messages in enumerate(prompts):
            self.calls += 1
            yield i, Generation(f"ROW{self.index[json.dumps(messages)]}END")


class ScriptedJudge(Backend):
    """A judge answering ``answers[i]`` for the row whose marker is in the prompt; ``errors`` rows fail for good."""

    kind = "stub"

    def __init__(self, name: str, answers: Sequence[str], errors: Sequence[int] = ()) -> None:
        self.model, self.answers, self.errors, self.calls, self.closed = name, list(answers), set(errors), 0, False

    def generate(self, prompts: Sequence[list[dict]], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
        for i, messages in enumerate(prompts):
            self.calls += 1
            row = int(re.search(r"ROW(\d+)END", messages[-1]["content"]).group(1))
            if row in self.errors:
                yield i, Generation("", error="HTTP 400: refused", permanent=True)
            else:
                yield i, Generation(self.answers[row])

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def rows(nc_rows) -> list[dict]:
    rows = nc_rows["basic"][:10]
    assert all(r["acceptable_labels"] == ["Definition"] for r in rows)  # the table above relies on it
    return rows


def _run(tmp_path: Path, nc_built: Path, rows: list[dict], judges, name: str = "run", **kwargs):
    return run_nc(model=Tagger(rows), judge=judges, out=tmp_path / name, config="basic", limit=10, dataset=nc_built,
                  cache=tmp_path / "cache.sqlite", progress=False, **kwargs)


def _check_hand_computed(results: dict) -> None:
    assert results["accuracy"] == 60.0  # the primary judge's, as with one judge
    per = results["per_judge"]
    assert list(per) == ["stub:judge-a", "stub:judge-b"]  # the primary first
    assert per["stub:judge-a"]["accuracy"] == 60.0 and per["stub:judge-b"]["accuracy"] == 30.0
    assert per["stub:judge-a"]["per_set"] == {"basic": 60.0} and per["stub:judge-b"]["per_set"] == {"basic": 30.0}
    assert per["stub:judge-b"]["per_set_pattern"] == {"basic": {"Definition Request": 30.0}}
    assert per["stub:judge-a"]["unparsed"] == 0 and per["stub:judge-b"]["unparsed"] == 1
    assert per["stub:judge-a"]["errors"] == per["stub:judge-b"]["errors"] == 0
    pair = results["judge_agreement"]["stub:judge-a vs. stub:judge-b"]
    assert pair["n"] == 10 and pair["label_mode"] == "first"
    assert pair["label_kappa"] == pytest.approx(LABEL_KAPPA) and pair["label_percent"] == pytest.approx(60.0)
    assert pair["pass_kappa"] == pytest.approx(PASS_KAPPA) and pair["pass_percent"] == pytest.approx(70.0)
    for key in ("label_kappa", "label_percent", "pass_kappa", "pass_percent"):
        low, high = pair["intervals"][key]
        assert low <= pair[key] <= high


def test_two_judges_give_per_judge_accuracy_and_kappa(nc_built, rows, tmp_path):
    a, b = ScriptedJudge("judge-a", ANSWERS_A), ScriptedJudge("judge-b", ANSWERS_B)
    run = _run(tmp_path, nc_built, rows, [a, b])
    assert a.calls == b.calls == 10 and not a.closed and not b.closed  # objects passed in are the caller's: left open
    _check_hand_computed(run.results)
    # the records: the primary judge's fields as with one judge, the other judge under "judges"
    assert all(set(r) == RECORD_KEYS | {"judges"} for r in run.records)
    assert [r["judge_output"] for r in run.records] == ANSWERS_A
    assert [r["passed"] for r in run.records] == [True] * 4 + [False] * 3 + [True, True, False]
    entries = [r["judges"] for r in run.records]
    assert all(len(e) == 1 and set(e[0]) == ENTRY_KEYS for e in entries)
    assert [e[0]["judge_output"] for e in entries] == ANSWERS_B
    assert [e[0]["judge"] for e in entries] == ["stub:judge-b"] * 10
    assert [e[0]["passed"] for e in entries] == [True] * 3 + [False] * 7
    assert entries[7][0]["unparsed"] and entries[8][0]["labels"] == ["Example"]
    assert run.records[8]["labels"][0] == "Example"  # A's first label: the label level compares first labels
    signature = run.results["signature"]
    assert signature["judge"] == "stub:judge-a" and signature["judges"] == ["stub:judge-a", "stub:judge-b"]
    assert signature["judge_identities"] == [{"kind": "stub", "model": "judge-a"}, {"kind": "stub", "model": "judge-b"}]
    assert run.stats["judge_calls"] == 20 and run.stats["judge_calls_per_judge"] == {"stub:judge-a": 10, "stub:judge-b": 10}
    on_disk = json.loads((run.path / "results.json").read_text())
    assert on_disk["judge_agreement"] == run.results["judge_agreement"]


def test_second_run_answers_both_judges_from_the_cache(nc_built, rows, tmp_path):
    _run(tmp_path, nc_built, rows, [ScriptedJudge("judge-a", ANSWERS_A), ScriptedJudge("judge-b", ANSWERS_B)], "first")
    a, b = ScriptedJudge("judge-a", ANSWERS_A), ScriptedJudge("judge-b", ANSWERS_B)
    again = _run(tmp_path, nc_built, rows, [a, b], "again")
    assert a.calls == b.calls == 0
    assert again.stats["model_calls"] == 0 and again.stats["judge_calls"] == 0
    assert again.stats["judge_cache_hits"] == 20
    assert all(r["judge_cache_hit"] and r["judges"][0]["judge_cache_hit"] for r in again.records)
    _check_hand_computed(again.results)


def test_score_run_rescores_every_judge_from_records(nc_built, rows, tmp_path):
    run = _run(tmp_path, nc_built, rows, [ScriptedJudge("judge-a", ANSWERS_A), ScriptedJudge("judge-b", ANSWERS_B)])
    # the second judge's verdicts are derived again from its raw answer: spoil them in the file
    lines = [json.loads(line) for line in (run.path / "records.jsonl").read_text().splitlines()]
    for record in lines:
        record["judges"][0].update(passed=True, labels=["Definition"])
    (run.path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    rescored = score_run(run.path)
    for key in ("per_judge", "judge_agreement", "accuracy"):
        assert rescored.results[key] == run.results[key]
    _check_hand_computed(rescored.results)
    # a record that lost its second judge is refused, naming the line
    lines[3].pop("judges")
    (run.path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    with pytest.raises(Exception, match="records.jsonl line 4: field 'judges' must list the 1 further judge"):
        score_run(run.path)


def test_an_error_of_the_second_judge_is_its_own_and_leaves_the_agreement(nc_built, rows, tmp_path):
    # B's unparsed row 7 is 1 of the 9 answers left beside its error (11.1%): accepted, the error is what is tested
    accept = {"max_unparsed_rate": 1}
    judges = [ScriptedJudge("judge-a", ANSWERS_A), ScriptedJudge("judge-b", ANSWERS_B, errors=[9])]
    run = _run(tmp_path, nc_built, rows, judges, **accept)
    assert run.results["errors"] == 0 and run.records[9]["error"] is None  # the primary judge answered row 9
    assert run.records[9]["judges"][0]["error"] == "judge: HTTP 400: refused"
    assert run.results["per_judge"]["stub:judge-b"]["errors"] == 1
    pair = run.results["judge_agreement"]["stub:judge-a vs. stub:judge-b"]
    assert pair["n"] == 9 and pair["excluded_errors"] == 1
    # rows 0-8 only: pass/fail agreement 6 of 9 (rows 0, 1, 2, 4, 5, 6)
    assert pair["pass_percent"] == pytest.approx(100 * 6 / 9)
    b = ScriptedJudge("judge-b", ANSWERS_B, errors=[9])
    again = _run(tmp_path, nc_built, rows, [ScriptedJudge("judge-a", ANSWERS_A), b], "again", **accept)
    assert b.calls == 0 and again.records[9]["judges"][0]["error"] == "judge: HTTP 400: refused"  # the error is cached


def test_cli_with_judge_twice_prints_each_judge_and_the_kappas(nc_built, tmp_path, capsys):
    # baseline:repeat as generator; two scriptable judges stand behind one local OpenAI-compatible server
    from tests.support.openai_server import openai_server

    with openai_server() as (url, _state):
        code = main(["run", "nc", "--config", "basic", "--limit", "12", "--model", "baseline:repeat",
                     "--judge", "openai:label", "--judge", "openai:echo", "--judge-base-url", url,
                     "--api-key-env", "NO_SUCH_KEY_VAR", "--dataset", str(nc_built), "--out", str(tmp_path / "run"),
                     "--cache", str(tmp_path / "c.sqlite"), "--no-progress",
                     "--max-unparsed-rate", "1"])  # the judges' unreadable answers (echo's: all) are not tested
    out = capsys.readouterr().out
    assert code == 0, out
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert list(results["per_judge"]) == ["openai:label", "openai:echo"]
    assert results["signature"]["judges"] == ["openai:label", "openai:echo"]
    assert results["signature"]["judge_identities"][1] == {"kind": "openai", "model": "echo", "base_url": url}
    pair = results["judge_agreement"]["openai:label vs. openai:echo"]
    assert "per judge (the first is the primary judge" in out
    assert "  openai:echo" in out and f"accuracy {results['per_judge']['openai:echo']['accuracy']:5.1f}%" in out
    assert "judge agreement openai:label vs. openai:echo (12 rows): label kappa" in out
    assert f"({pair['pass_percent']:.1f}%)" in out


def test_cli_pairs_judge_base_urls_by_position(nc_built, tmp_path, capsys):
    from tests.support.openai_server import openai_server

    with openai_server() as (url_1, state_1), openai_server() as (url_2, state_2):
        code = main(["run", "nc", "--config", "basic", "--limit", "5", "--model", "baseline:repeat",
                     "--judge", "openai:label", "--judge", "openai:label", "--judge-base-url", url_1,
                     "--judge-base-url", url_2, "--api-key-env", "NO_SUCH_KEY_VAR", "--dataset", str(nc_built),
                     "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "c.sqlite"), "--no-progress",
                     "--max-unparsed-rate", "1"])  # the fake judge's deliberate "I am not sure": not what is tested
    assert code == 0 and state_1.count() == 5 and state_2.count() == 5  # each judge asked its own server
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert [i["base_url"] for i in results["signature"]["judge_identities"]] == [url_1, url_2]
    assert list(results["per_judge"]) == ["openai:label #1", "openai:label #2"]  # one spec twice: numbered
    # the same deterministic server twice: full agreement
    assert results["judge_agreement"]["openai:label #1 vs. openai:label #2"]["pass_percent"] == 100.0
    code = main(["run", "nc", "--model", "baseline:repeat", "--judge", "openai:a", "--judge", "openai:b",
                 "--judge-base-url", "http://127.0.0.1:9/v1", "--judge-base-url", "http://127.0.0.1:9/v1",
                 "--judge-base-url", "http://127.0.0.1:9/v1", "--dataset", str(nc_built), "--out", str(tmp_path / "r"),
                 "--cache", str(tmp_path / "c.sqlite"), "--no-progress"])
    assert code == 1
    assert "--judge-base-url is given 3 times for 2 --judge" in capsys.readouterr().err


def test_one_judge_writes_no_new_keys(nc_built, rows, tmp_path):
    single = _run(tmp_path, nc_built, rows, ScriptedJudge("judge-a", ANSWERS_A), "single")
    listed = _run(tmp_path, nc_built, rows, [ScriptedJudge("judge-a", ANSWERS_A)], "listed")
    for run in (single, listed):
        assert all(set(r) == RECORD_KEYS for r in run.records)
        assert "per_judge" not in run.results and "judge_agreement" not in run.results
        assert "judges" not in run.results["signature"] and "judge_identities" not in run.results["signature"]
        assert "judge_calls_per_judge" not in run.stats
        assert run.results["accuracy"] == 60.0
    assert "per_judge" not in score_run(single.path).results


def test_report_shows_the_table_7_layout(nc_built, rows, tmp_path):
    pytest.importorskip("pandas")
    pytest.importorskip("matplotlib")
    from convbench_datasets.report import write_report
    from convbench_datasets.nc.report_judges import judge_agreement_table, per_judge_table
    from convbench_datasets.report.runs import load_runs

    two = _run(tmp_path, nc_built, rows, [ScriptedJudge("judge-a", ANSWERS_A), ScriptedJudge("judge-b", ANSWERS_B)])
    one = _run(tmp_path, nc_built, rows, ScriptedJudge("judge-a", ANSWERS_A), "one")
    runs = load_runs([two.path, one.path])
    table = judge_agreement_table(runs)
    assert list(table.index) == [("stub:tagger (run)", "stub:judge-a vs. stub:judge-b")]  # the one-judge run has no row
    row = table.iloc[0]
    assert row["label κ"] == pytest.approx(LABEL_KAPPA) and row["label %"] == pytest.approx(60.0)
    assert row["pass/fail κ"] == pytest.approx(PASS_KAPPA) and row["pass/fail %"] == pytest.approx(70.0)
    assert row["rows"] == 10
    published = judge_agreement_table(runs, published=True)
    assert published.loc[("NC-Bench paper, Table 7 (published)", "Mistral vs. Llama"), "label κ"] == 0.806
    judges = per_judge_table(runs)
    assert judges.loc[("stub:tagger (run)", "stub:judge-b"), "Overall"] == 30.0
    assert judges.loc[("stub:tagger (run)", "stub:judge-a"), "primary"]
    page = write_report([two.path, one.path], tmp_path / "report").read_text()
    assert "Judge agreement (the paper&#x27;s Table 7 layout)" in page and "stub:judge-a vs. stub:judge-b" in page
    saved = (tmp_path / "report" / "tables" / "nc_judge_agreement.csv").read_text()
    assert "Mistral vs. Llama" in saved and "Mistral vs. Llama" in page  # the paper's Table 7 beside the run's pair
    assert "Mistral vs. Llama" not in write_report([two.path], tmp_path / "bare", reference=False).read_text()
    plain = write_report([one.path], tmp_path / "plain").read_text()
    assert "Judge agreement" not in plain


def test_each_judge_gets_its_own_sanity_check_and_warning(nc_built: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    # the repeat baseline's verbatim repeats: the smoke judge labels them Repeat (100%), a judge that answers
    # nothing labels none (0%): the second judge is warned about by name, the primary's check stays the run's
    from convbench_datasets.cli import main

    argv = ["run", "nc", "--model", "baseline:repeat", "--judge", "baseline:smoke-judge", "--judge", "baseline:silence",
            "--config", "basic", "--dataset", str(nc_built), "--out", str(tmp_path / "run"),
            "--cache", str(tmp_path / "c.sqlite"), "--no-progress"]
    assert main(argv) == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    sanity = {name: judge["judge_sanity"]["labelled_repeat"] for name, judge in results["per_judge"].items()}
    assert sanity == {"baseline:smoke-judge": 100.0, "baseline:silence": 0.0}
    assert results["judge_sanity"]["labelled_repeat"] == 100.0
    err = capsys.readouterr().err
    assert "judge baseline:silence labels verbatim repeats Repeat or Partial Repeat on only 0.0%" in err
    assert "baseline:smoke-judge labels" not in err
