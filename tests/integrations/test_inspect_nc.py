"""NC-Bench under inspect_ai: the task, its scorer and metric, and the import of its log, offline.

The equality tests serve the same scripted answers to an inspect eval (mockllm) and to ``run_nc``
(a Backend): every number inspect reports must be the one convbench computes for those answers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("inspect_ai", reason="inspect_ai is not installed (pip install -e \".[inspect]\")")
# inspect's retry set-up calls tenacity with a parameter tenacity deprecates, once per model call
pytestmark = pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated:DeprecationWarning")

from inspect_ai.log import EvalLog  # noqa: E402

from convbench_datasets.cli import main  # noqa: E402
from convbench_datasets.errors import ConvbenchError  # noqa: E402
from convbench_datasets.engine.error_rate import TooManyErrors  # noqa: E402
from convbench_datasets.integrations.inspect import nc
from convbench_datasets.runs.api import import_inspect_log# noqa: E402
from convbench_datasets.integrations.inspect._common import NO_OUTPUT  # noqa: E402
from convbench_datasets import run_nc  # noqa: E402
from convbench_datasets.engine.backends import Generation  # noqa: E402
from convbench_datasets.engine.backends.openai_compat import OpenAICompatBackend, RetryPolicy  # noqa: E402
from tests.integrations.inspect_support import ScriptedBackend, inspect_model, pick, reported, run_inspect  # noqa: E402
from tests.support.openai_server import affected, label_for, openai_server  # noqa: E402
from tests.support.scripted import nc_turn  # noqa: E402

# Model turns: the previous AGENT turn again (a repeat), or canned turns, one of them two lines long.
TURNS = ["REPEAT", "Sure, here it is.", "Could you say that again?", "Okay.\nAnything else?"]
# Judge answers covering exact labels, spellings only the lenient reading accepts ("answer", "pre-closing"),
# Silence mixed with another label, two labels on two lines, and prose that names no label.
JUDGE_ANSWERS = ["Repeat", "Answer", "answer", "Definition", "Silence, Other", "PreClosing, Acknowledgment",
                 "pre-closing", "Paraphrase\nExample", "I cannot tell.", "Other", "Example", "DetailRequest"]
LIMIT = 60  # rows of the basic config for the tests beyond the full comparison (ids 0-59: the first 60)
FAST = RetryPolicy(max_retries=1, base_delay=0.01, max_delay=0.02)


def model_turn(messages: list[dict[str, str]]) -> str:
    return nc_turn(messages, TURNS)


def judge_answer(messages: list[dict[str, str]]) -> str:
    return pick(messages[-1]["content"], JUDGE_ANSWERS)


@pytest.fixture(scope="module")
def both_all(nc_built: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[EvalLog, Any]:
    """The ``all`` config (720 rows) through inspect and through ``convbench run``, same answers."""
    tmp = tmp_path_factory.mktemp("nc-inspect")
    log = run_inspect(nc(config="all", dataset=str(nc_built)), inspect_model(model_turn), tmp / "logs",
                      grader=inspect_model(judge_answer, "mockllm/judge"))
    run = run_nc(model=ScriptedBackend(model_turn), judge=ScriptedBackend(judge_answer, "judge"), out=tmp / "run",
                 config="all", dataset=nc_built, cache=tmp / "c.sqlite", progress=False,
                 max_unparsed_rate=1)  # the script's judge answers some prose on purpose (compared, not a failed run)
    return log, run


def test_inspect_reports_convbench_numbers(both_all: tuple[EvalLog, Any]) -> None:
    log, run = both_all
    metrics = reported(log)
    # Expected values: convbench's own run of the same answers (score_actions in run_nc), read back exactly.
    assert metrics["accuracy"] == run.results["accuracy"]
    assert metrics["unparsed"] == run.results["unparsed"] > 0  # "I cannot tell." names no label
    for set_name, accuracy in run.results["per_set"].items():
        assert metrics[set_name] == accuracy
    cells = {f"{s}/{p}": acc for s, patterns in run.results["per_set_pattern"].items() for p, acc in patterns.items()}
    assert {name: metrics[name] for name in cells} == cells
    assert set(metrics) == {"accuracy", "accuracy_stderr", "unparsed", "n", "errors", *run.results["per_set"], *cells}
    assert len(log.samples) == metrics["n"] == run.results["n"] == 720
    assert metrics["errors"] == run.results["errors"] == 0
    # The script is no constant: some rows pass and some fail, in every set.
    assert 0 < run.results["accuracy"] < 100 and all(0 < a < 100 for a in run.results["per_set"].values())


def test_overall_is_the_mean_over_rows(both_all: tuple[EvalLog, Any]) -> None:
    # convbench's overall is the row-weighted average of the patterns: the plain mean of the rows'
    # pass/fail, which is what inspect's own accuracy() would report (as a fraction).
    log, run = both_all
    passes = [sample.scores["ncbench_judge"].value == "C" for sample in log.samples]
    assert 100 * sum(passes) / len(passes) == pytest.approx(run.results["accuracy"], rel=1e-12)
    assert sum(passes) == run.results["passed"]


def test_a_score_explains_the_judge_answer_and_labels(both_all: tuple[EvalLog, Any]) -> None:
    log, _ = both_all
    explained = {s.id: s.scores["ncbench_judge"] for s in log.samples}
    two_lines = next(score for score in explained.values() if score.metadata["judge_output"] == "Paraphrase\nExample")
    assert two_lines.explanation.splitlines()[:2] == ["judge answer: 'Paraphrase\\nExample'", "labels: Paraphrase, Example"]
    prose = next(score for score in explained.values() if score.metadata["judge_output"] == "I cannot tell.")
    assert "labels: (unparsed: no label)" in prose.explanation and prose.value == "I"
    assert "pieces naming no label: 'I cannot tell.'" in prose.explanation


def test_import_gives_the_run_convbench_writes(both_all: tuple[EvalLog, Any], tmp_path: Path) -> None:
    log, run = both_all
    imported = import_inspect_log(log.location, tmp_path / "imported",
                                  max_unparsed_rate=1)  # the script's prose judge answers, as in both_all's run
    for key in ("accuracy", "per_set", "per_pattern", "per_set_pattern", "per_task", "failure_breakdown",
                "unparsed", "n", "passed", "errors", "row_ids"):
        assert imported.results[key] == run.results[key], key
    fields = ("set", "id", "task", "pattern", "response", "judge_output", "labels", "passed", "acceptable_labels", "error")
    assert [{f: r[f] for f in fields} for r in imported.records] == [{f: r[f] for f in fields} for r in run.records]
    signature, theirs = imported.results["signature"], run.results["signature"]
    for key in ("benchmark", "config", "rows", "dataset_fingerprint", "judge_template", "judge_template_sha256",
                "rules", "parsing", "first_line_only", "fill_request_details", "generation", "judge_generation"):
        assert signature[key] == theirs[key], key
    assert signature["model"] == "mockllm/model" and signature["judge"] == "mockllm/judge"
    assert signature["harness"]["name"] == "inspect_ai" and signature["harness"]["epoch"] == 1
    assert signature["limit"] is None and signature["limit"] == theirs["limit"]  # every row of the config


def test_imported_run_scores_reports_and_compares(both_all: tuple[EvalLog, Any], tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from convbench_datasets.nc.report_tables import nc_table
    from convbench_datasets.report import load_runs

    log, run = both_all
    out = tmp_path / "imported"
    # --max-unparsed-rate 1: the script's judge answers some prose on purpose, as in both_all's run
    assert main(["import-inspect", log.location, "--out", str(out), "--max-unparsed-rate", "1"]) == 0
    assert capsys.readouterr().out.startswith(f"accuracy {run.results['accuracy']:.1f}% over 720 rows")
    assert main(["score", str(out), "--max-unparsed-rate", "1"]) == 0
    assert json.loads((out / "results.json").read_text())["accuracy"] == run.results["accuracy"]
    table = nc_table(load_runs([out]))  # the paper's published columns beside the imported run
    assert "mockllm/model" in table.columns and any("(paper)" in str(c) for c in table.columns)
    # the same answers, imported and run by convbench: no difference on any row
    assert main(["compare", str(out), str(run.path), "--resamples", "50"]) == 0
    printed = capsys.readouterr().out
    # every row scored alike: each comparison says so rather than print a difference of 0 and p 1.000
    assert "(accuracy points, 720 rows; p-values Holm-adjusted over the " in printed
    assert "overall                  n 720  identical" in printed and "p(bootstrap)" not in printed


@pytest.mark.parametrize(("rules", "parsing"), [("released_script", "exact"), ("paper", "lenient"),
                                               ("released_script", "lenient")])
def test_other_rules_and_readings_match_convbench(nc_built: Path, tmp_path: Path, rules: str, parsing: str) -> None:
    # the default (paper, exact) is both_all's; each other combination gives inspect convbench's numbers too
    log = run_inspect(nc(config="basic", rules=rules, parsing=parsing, dataset=str(nc_built)), inspect_model(model_turn),
                      tmp_path / "logs", grader=inspect_model(judge_answer, "mockllm/judge"), limit=LIMIT)
    # max_unparsed_rate=1 here and below: the script's judge answers some prose on purpose (compared, not failed)
    run = run_nc(model=ScriptedBackend(model_turn), judge=ScriptedBackend(judge_answer, "judge"), out=tmp_path / "run",
                 config="basic", rules=rules, parsing=parsing, limit=LIMIT, dataset=nc_built,
                 cache=tmp_path / "c.sqlite", progress=False, max_unparsed_rate=1)
    exact = run_nc(model=ScriptedBackend(model_turn), judge=ScriptedBackend(judge_answer, "judge"),
                   out=tmp_path / "exact", config="basic", rules=rules, limit=LIMIT, dataset=nc_built,
                   cache=tmp_path / "c.sqlite", progress=False, max_unparsed_rate=1)
    metrics = reported(log)
    assert metrics["accuracy"] == run.results["accuracy"] and metrics["unparsed"] == run.results["unparsed"]
    assert metrics["basic"] == run.results["per_set"]["basic"]
    # the lenient reading passes "answer" and "pre-closing" where the released aggregator's exact one fails them
    assert (run.results["accuracy"] > exact.results["accuracy"]) is (parsing == "lenient")
    imported = import_inspect_log(log, tmp_path / "imported", max_unparsed_rate=1).results
    assert (imported["signature"]["rules"], imported["signature"]["parsing"]) == (rules, parsing)
    assert imported["accuracy"] == run.results["accuracy"]


def test_convbench_judge_template_matches_convbench(nc_built: Path, tmp_path: Path) -> None:
    prompts: list[str] = []

    def judge_seeing(messages: list[dict[str, str]]) -> str:
        prompts.append(messages[-1]["content"])
        return judge_answer(messages)

    log = run_inspect(nc(config="basic", template="convbench", dataset=str(nc_built)), inspect_model(model_turn),
                      tmp_path / "logs", grader=inspect_model(judge_seeing, "mockllm/judge"), limit=LIMIT)
    run = run_nc(model=ScriptedBackend(model_turn), judge=ScriptedBackend(judge_seeing, "judge"), out=tmp_path / "run",
                 config="basic", template="convbench", limit=LIMIT, dataset=nc_built, cache=tmp_path / "c.sqlite",
                 progress=False, max_unparsed_rate=1)  # the script's judge answers some prose on purpose
    # (and the imported log below too: this test is about the judge prompt, not how many answers were read)
    assert len(prompts) == 2 * LIMIT and sorted(prompts[:LIMIT]) == sorted(prompts[LIMIT:])  # the same judge prompts
    assert "Labels:\n- " in prompts[0]  # convbench's wording, not the released one
    assert reported(log)["accuracy"] == run.results["accuracy"]
    signature = import_inspect_log(log, tmp_path / "imported", max_unparsed_rate=1).results["signature"]
    assert signature["judge_template"] == run.results["signature"]["judge_template"] == "builtin"
    assert signature["judge_template_sha256"] == run.results["signature"]["judge_template_sha256"]


def test_a_failed_sample_is_a_counted_error_in_the_imported_run(nc_built: Path, tmp_path: Path) -> None:
    def flaky(messages: list[dict[str, str]]) -> str:
        turn = model_turn(messages)
        if turn == "Could you say that again?":
            raise RuntimeError("the server refused this prompt")
        return turn

    log = run_inspect(nc(config="basic", dataset=str(nc_built)), inspect_model(flaky), tmp_path / "logs",
                      grader=inspect_model(judge_answer, "mockllm/judge"), fail_on_error=False, limit=LIMIT)
    errored = [s for s in log.samples if s.error is not None]
    assert errored and all("the server refused this prompt" in s.error.message for s in errored)

    class Refusing(ScriptedBackend):
        def generate(self, prompts, params):  # type: ignore[no-untyped-def]
            for i, (_, answer) in enumerate(super().generate(prompts, params)):
                if answer.text == "Could you say that again?":
                    yield i, Generation("", error="the server refused this prompt", permanent=True)
                else:
                    yield i, answer

    run = run_nc(model=Refusing(model_turn), judge=ScriptedBackend(judge_answer, "judge"), out=tmp_path / "run",
                 config="basic", limit=LIMIT, dataset=nc_built, cache=tmp_path / "c.sqlite", progress=False,
                 max_error_rate=1, max_unparsed_rate=1)  # its errors and the script's prose: counted, not failed
    imported = import_inspect_log(log, tmp_path / "imported", max_error_rate=1, max_unparsed_rate=1)  # the same
    assert imported.results["errors"] == run.results["errors"] == len(errored)
    assert imported.results["accuracy"] == run.results["accuracy"]
    assert imported.results["per_set_pattern"] == run.results["per_set_pattern"]
    # inspect's metric leaves errored samples out (its n says how many it scored); convbench counts them as failures
    assert reported(log)["accuracy"] >= imported.results["accuracy"]
    assert reported(log)["n"] == LIMIT - len(errored) and reported(log)["errors"] == 0


def test_epochs_are_scored_each_then_averaged(both_all: tuple[EvalLog, Any], nc_built: Path, tmp_path: Path) -> None:
    asked: dict[str, int] = {}

    def changing_judge(messages: list[dict[str, str]]) -> str:
        # the first time a prompt is judged the script's answer, the second time prose that names no label
        key = messages[-1]["content"]
        asked[key] = asked.get(key, 0) + 1
        return judge_answer(messages) if asked[key] == 1 else "I cannot tell."

    log = run_inspect(nc(config="basic", dataset=str(nc_built)), inspect_model(model_turn), tmp_path / "logs",
                      grader=inspect_model(changing_judge, "mockllm/judge"), epochs=2, limit=LIMIT)
    # max_unparsed_rate=1: the prose answers are the point here (in the second epoch, every one)
    first = import_inspect_log(log, tmp_path / "epoch1", epoch=1, max_unparsed_rate=1).results
    second = import_inspect_log(log, tmp_path / "epoch2", epoch=2, max_unparsed_rate=1).results
    # each row is judged once per epoch, once with the script's answer (in whichever epoch inspect ran
    # first) and once with prose that fails: together the epochs pass the rows the script passes
    script = sum(r["passed"] for r in both_all[1].records if r["set"] == "basic" and r["id"] < LIMIT)
    assert first["passed"] + second["passed"] == script > 0
    assert reported(log)["accuracy"] == pytest.approx((first["accuracy"] + second["accuracy"]) / 2, rel=1e-12)
    assert reported(log)["basic"] == pytest.approx((first["per_set"]["basic"] + second["per_set"]["basic"]) / 2, rel=1e-12)


def test_a_judge_is_required(nc_built: Path, tmp_path: Path) -> None:
    from inspect_ai import eval

    asked: list[str] = []
    (log,) = eval(nc(config="basic", dataset=str(nc_built)), model=inspect_model(lambda m: asked.append("") or "Hi."),
                  limit=1, log_dir=str(tmp_path), display="none")
    assert log.status == "error" and "needs a judge: bind one with --model-role grader=" in log.error.message
    assert asked == []  # stopped before the model was asked anything
    # the task argument binds the role (an eval's --model-role grader=... replaces it)
    assert str(nc(config="basic", judge="mockllm/judge", dataset=str(nc_built)).model_roles["grader"]) == "mockllm/judge"


def test_bad_task_arguments_are_named(nc_built: Path) -> None:
    with pytest.raises(ValueError, match="unknown NC-Bench config 'basics'"):
        nc(config="basics", dataset=str(nc_built))
    with pytest.raises(ValueError, match="rules must be one of paper, released_script, got 'exact'"):
        nc(rules="exact", dataset=str(nc_built))
    with pytest.raises(ValueError, match="parsing must be one of exact, lenient, got 'paper'"):
        nc(parsing="paper", dataset=str(nc_built))
    with pytest.raises(ValueError, match="fill_request_details applies to the released judge prompt only"):
        nc(template="convbench", fill_request_details=True, dataset=str(nc_built))


def test_a_reply_that_is_no_answer_is_an_error_as_in_convbench_run(nc_built: Path, tmp_path: Path) -> None:
    # The reviewer's case (/tmp/rv/emptycut.py). convbench's runner, through its OpenAI-compatible backend and the
    # test server, gets these replies: the model's, for the rows the server's faults hit (affected()), empty and
    # cut at the token limit; the judge's, for the judge prompts they hit, withheld by a content filter; else
    # the server's label_for() text. inspect's mock models give the same replies.
    def served(messages: list[dict[str, str]]) -> str:
        return "" if affected(messages) else label_for(messages)

    model = inspect_model(served, stop=lambda m: "max_tokens" if affected(m) else None)
    judge = inspect_model(served, "mockllm/judge", stop=lambda m: "content_filter" if affected(m) else None)
    log = run_inspect(nc(config="basic", dataset=str(nc_built)), model, tmp_path / "logs", grader=judge, limit=LIMIT)
    with openai_server() as (url, _):
        run = run_nc(model=OpenAICompatBackend("blank-length", base_url=url, retry=FAST),
                     judge=OpenAICompatBackend("filtered", base_url=url, retry=FAST), out=tmp_path / "run",
                     config="basic", limit=LIMIT, dataset=nc_built, cache=tmp_path / "c.sqlite", progress=False,
                     # its errors, the empty model replies and label_for()'s unreadable judge answers are the
                     # server's on purpose: counted (and compared), not a failed run
                     max_error_rate=1, max_empty_rate=1, max_unparsed_rate=1)
    errors = [r["error"] for r in run.records if r["error"]]
    assert any(e.startswith("model: ") for e in errors) and any(e.startswith("judge: ") for e in errors)
    assert 0 < run.results["accuracy"] < 100
    metrics = reported(log)
    assert metrics["accuracy"] == run.results["accuracy"] and metrics["basic"] == run.results["per_set"]["basic"]
    assert metrics["errors"] == run.results["errors"] == len(errors) and metrics["unparsed"] == run.results["unparsed"]
    scored = {s.id: s.scores["ncbench_judge"] for s in log.samples}
    assert {f"basic/{r['id']}" for r in run.records if r["error"]} == {i for i, s in scored.items() if s.metadata["error"]}
    # a row whose model reply is no answer is not judged (as convbench run)
    assert all(s.metadata["judge_output"] == "" and s.value == "I" for s in scored.values()
               if (s.metadata["error"] or "").startswith("model: "))
    accepted = {"max_error_rate": 1, "max_unparsed_rate": 1}  # as for the run: the server's faults, on purpose
    imported = import_inspect_log(log, tmp_path / "imported", **accepted)
    for key in ("accuracy", "per_set_pattern", "errors", "unparsed", "passed", "n"):
        assert imported.results[key] == run.results[key], key
    assert [bool(r["error"]) for r in imported.records] == [bool(r["error"]) for r in run.records]
    # a log whose scorer did not record these errors (convbench before it did): the importer applies the rule
    for sample in log.samples:
        for key in ("error", "model_error", "judge_error"):
            del sample.scores["ncbench_judge"].metadata[key]
    older = import_inspect_log(log, tmp_path / "older", **accepted)
    assert [r["error"] for r in older.records] == [r["error"] for r in imported.records]
    assert older.results["accuracy"] == run.results["accuracy"] and older.results["errors"] == run.results["errors"]


def test_a_sample_stopped_by_a_limit_is_an_error(nc_built: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # The reviewer's case (/tmp/rv/limit.py): a message limit of 2 stops every sample (each transcript has
    # more messages) before the model answers. Each row is an error, not judged: accuracy 0, 10 errors.
    asked: list[str] = []
    log = run_inspect(nc(config="basic", dataset=str(nc_built)), inspect_model(lambda m: asked.append("") or "Sure."),
                      tmp_path / "logs", grader=inspect_model(lambda m: asked.append("judge") or "Answer", "mockllm/judge"),
                      limit=10, message_limit=2)
    assert asked == [] and all(s.limit is not None and s.limit.type == "message" for s in log.samples)
    assert {s.scores["ncbench_judge"].metadata["error"] for s in log.samples} == {f"model: {NO_OUTPUT}"}
    metrics = reported(log)
    assert (metrics["accuracy"], metrics["errors"], metrics["n"], metrics["unparsed"]) == (0.0, 10, 10, 0)
    # every row in error is over the 5% --max-error-rate: the imported folder is written, then the import fails
    failed = (r"^10 of 10 rows \(100\.0%\) ended in an error, more than the 5% --max-error-rate allows; "
              r"first: basic/0: model: inspect: message limit \(2\); the run folder .*failed is written with them")
    with pytest.raises(TooManyErrors, match=failed) as caught:
        import_inspect_log(log, tmp_path / "failed")
    assert (caught.value.errors, caught.value.total, caught.value.result.path) == (10, 10, tmp_path / "failed")
    assert (tmp_path / "failed" / "records.jsonl").is_file() and (tmp_path / "failed" / "results.json").is_file()
    assert json.loads((tmp_path / "failed" / "results.json").read_text())["errors"] == 10
    assert main(["import-inspect", log.location, "--out", str(tmp_path / "cli")]) == 1  # convbench import-inspect
    assert "convbench: error: 10 of 10 rows (100.0%) ended in an error" in capsys.readouterr().err
    assert (tmp_path / "cli" / "records.jsonl").is_file()
    imported = import_inspect_log(log, tmp_path / "imported", max_error_rate=1)  # a higher limit accepts them
    assert {r["error"] for r in imported.records} == {"model: inspect: message limit (2)"}
    assert (imported.results["errors"], imported.results["accuracy"], imported.results["unparsed"]) == (10, 0.0, 0)
    assert all(r["labels"] == [] and r["response"] == "" for r in imported.records)


def test_only_a_prefix_of_the_config_is_imported(nc_built: Path, tmp_path: Path) -> None:
    # A run folder holds a config or its first N rows (signature limit N); other choices of rows are refused.
    model, judge = inspect_model(model_turn), inspect_model(judge_answer, "mockllm/judge")
    first = run_inspect(nc(config="basic", dataset=str(nc_built)), model, tmp_path / "l1", grader=judge, limit=3)
    imported = import_inspect_log(first, tmp_path / "first")
    assert imported.results["signature"]["limit"] == 3 and imported.results["row_ids"] == ["basic/0", "basic/1", "basic/2"]
    # the first three, chosen by id in another order: the same prefix
    by_id = run_inspect(nc(config="basic", dataset=str(nc_built)), model, tmp_path / "l2", grader=judge,
                        sample_id=["basic/2", "basic/0", "basic/1"])
    assert import_inspect_log(by_id, tmp_path / "by_id").results["signature"]["limit"] == 3
    subsets = {
        "sample_id": {"sample_id": ["basic/5", "basic/17", "basic/40"]},  # the reviewer's /tmp/rv/imp.py cases
        "shuffled": {"limit": 3, "sample_shuffle": 7},
        "range": {"limit": (5, 8)},
    }
    for name, options in subsets.items():
        log = run_inspect(nc(config="basic", dataset=str(nc_built)), model, tmp_path / name, grader=judge, **options)
        with pytest.raises(ConvbenchError, match=r"holds 3 samples that are not the dataset's first 3 rows \(it has "
                                                 r".*and lacks basic/\d+.*--sample-id, --sample-shuffle or a range limit"):
            import_inspect_log(log, tmp_path / f"{name}-imported")
        assert not (tmp_path / f"{name}-imported").exists()
