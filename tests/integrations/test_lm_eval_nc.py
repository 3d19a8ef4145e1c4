"""NC-Bench under lm-eval: lm-eval generates, ``convbench score --from-lm-eval`` judges and scores, offline.

The equality tests serve the same scripted answers to lm-eval (a scripted ``LM``, samples written by
lm-eval's own EvaluationTracker, as ``lm_eval --log_samples`` writes them) and to ``run_nc`` (a
Backend), with the same judge: the run folder made from lm-eval's samples must be ``run_nc``'s.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

lm_eval = pytest.importorskip("lm_eval", reason="lm-eval is not installed (pip install -e \".[lm-eval]\")")

from convbench_datasets.cli import main  # noqa: E402
from convbench_datasets.errors import ConvbenchError  # noqa: E402
from convbench_datasets.runs.api import score_lm_eval_samples  # noqa: E402
from convbench_datasets import run_nc  # noqa: E402
from tests.integrations.lm_eval_support import (  # noqa: E402
    ScriptedBackend,
    ScriptedLM,
    pick,
    reported,
    run_lm_eval,
    samples_file,
)
from tests.support.scripted import nc_turn  # noqa: E402

# Model turns: nothing (Silence), the previous AGENT turn again (a Repeat), or canned turns. One answer in five
# is empty on purpose, over the 10% --max-empty-rate: the runs compared here pass --max-empty-rate 1.
TURNS = ["", "REPEAT", "Sure, here it is.", "Could you say that again?", "Okay.\nAnything else?"]
# Judge answers covering exact labels, spellings only the lenient reading accepts, and prose naming no label
# (unreadable on purpose, over the 10% --max-unparsed-rate: the runs judged by it pass max_unparsed_rate=1).
JUDGE_ANSWERS = ["Repeat", "Answer", "answer", "Definition", "Silence, Other", "pre-closing", "Paraphrase\nExample",
                 "I cannot tell.", "Other", "DetailRequest"]
RESULT_KEYS = ("accuracy", "per_set", "per_pattern", "per_set_pattern", "per_task", "failure_breakdown", "unparsed", "n",
               "passed", "errors", "row_ids")
RECORD_FIELDS = ("set", "id", "task", "pattern", "response", "judge_output", "labels", "passed", "acceptable_labels",
                 "label_set", "error")
SIGNATURE_KEYS = ("benchmark", "config", "limit", "rows", "dataset_fingerprint", "judge", "judge_identity",
                  "judge_template", "judge_template_sha256", "rules", "parsing", "first_line_only",
                  "fill_request_details", "generation", "judge_generation")


def model_turn(messages: list[dict[str, str]]) -> str:
    return nc_turn(messages, TURNS)


def judge_answer(messages: list[dict[str, str]]) -> str:
    return pick(messages[-1]["content"], JUDGE_ANSWERS)


def _same_run(ours: Any, theirs: Any) -> None:
    for key in RESULT_KEYS:
        assert ours.results[key] == theirs.results[key], key
    assert [{f: r[f] for f in RECORD_FIELDS} for r in ours.records] == [{f: r[f] for f in RECORD_FIELDS} for r in theirs.records]
    for key in SIGNATURE_KEYS:
        assert ours.results["signature"][key] == theirs.results["signature"][key], key


@pytest.fixture(scope="module")
def basic_samples(nc_built: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], ScriptedLM]:
    """lm-eval's run of convbench_nc_basic (180 rows) with the scripted model, written as the CLI writes it."""
    out = tmp_path_factory.mktemp("lm-eval") / "out"
    lm = ScriptedLM(model_turn)
    results = run_lm_eval(["convbench_nc_basic"], lm, metadata={"convbench_dataset": str(nc_built)}, out=out)
    return samples_file(out, "convbench_nc_basic"), results, lm


def test_score_from_lm_eval_is_run_nc_on_the_same_answers(basic_samples: tuple[Path, dict[str, Any], ScriptedLM],
                                                          nc_built: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    samples, results, lm = basic_samples
    # a folder of the user's with a results.json of its own is refused untouched (#19)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "results.json").write_text('{"mine": 1}')
    assert main(["score", "--from-lm-eval", str(samples), "--judge", "baseline:smoke-judge", "--out", str(mine),
                 "--dataset", str(nc_built), "--cache", str(tmp_path / "c.sqlite"), "--no-progress"]) == 1
    assert "is not a run folder (no .convbench-run)" in capsys.readouterr().err
    assert [p.name for p in mine.iterdir()] == ["results.json"] and (mine / "results.json").read_text() == '{"mine": 1}'
    out = tmp_path / "from-lm-eval"
    assert main(["score", "--from-lm-eval", str(samples), "--judge", "baseline:smoke-judge", "--out", str(out),
                 "--dataset", str(nc_built), "--cache", str(tmp_path / "c.sqlite"), "--no-progress",
                 "--max-empty-rate", "1"]) == 0  # TURNS' empty answers (Silence), on purpose
    backend = ScriptedBackend(model_turn)
    expected = run_nc(model=backend, judge="baseline:smoke-judge", out=tmp_path / "run", config="basic",
                      dataset=nc_built, cache=tmp_path / "other.sqlite", progress=False, max_empty_rate=1)
    from convbench_datasets.engine.run_folder import read_folder

    folder, records, written = read_folder(out)
    ours = type(expected)(folder, records, written, written["stats"])
    _same_run(ours, expected)
    assert capsys.readouterr().out.startswith(f"accuracy {expected.results['accuracy']:.1f}% over 180 rows")
    # the script is no constant: the smoke judge finds Silence and Repeat, so some rows pass and some fail
    assert 0 < expected.results["accuracy"] < 100 and expected.results["n"] == 180
    # lm-eval gave the model each row's transcript through its chat template, as convbench run does
    assert [ScriptedLM.messages(context) for context in lm.contexts] == backend.prompts
    assert reported(results, "convbench_nc_basic") == {"bypass": 999}  # lm-eval's "no metric": the score is convbench's
    signature = written["signature"]
    assert signature["model"] == "lm-eval:ScriptedLM" and signature["limit"] is None
    assert (signature["rules"], signature["parsing"]) == ("paper", "exact")  # the paper's setup, as convbench run nc
    harness = signature["harness"]
    assert harness["name"] == "lm-eval" and harness["version"] == lm_eval.__version__
    assert harness["task"] == "convbench_nc_basic" and harness["samples"] == str(samples)
    assert harness["generation_kwargs"] == {"until": [], "max_gen_toks": 1024, "do_sample": False, "temperature": 0.0}
    # a normal run folder: convbench score re-scores it to the same numbers, and under other rules
    assert main(["score", str(out), "--max-empty-rate", "1"]) == 0  # the same empty answers, held to the same check
    assert json.loads((out / "results.json").read_text())["accuracy"] == expected.results["accuracy"]
    assert json.loads((out / "results.json").read_text())["signature"]["harness"] == harness


def test_a_judge_model_and_limit_match_run_nc(nc_built: Path, tmp_path: Path) -> None:
    # the `all` config cut with --limit, a scripted judge, the released script's rules read leniently, in Python
    out = tmp_path / "lm-eval"
    run_lm_eval(["convbench_nc"], ScriptedLM(model_turn), metadata={"convbench_dataset": str(nc_built)}, limit=60, out=out)
    accepted = {"max_empty_rate": 1, "max_unparsed_rate": 1}  # TURNS' empty answers and the judge's prose, on purpose
    ours = score_lm_eval_samples(samples_file(out, "convbench_nc"), judge=ScriptedBackend(judge_answer, "judge"),
                                 out=tmp_path / "ours", rules="released_script", parsing="lenient", dataset=nc_built,
                                 cache=tmp_path / "c.sqlite", progress=False, **accepted)
    theirs = run_nc(model=ScriptedBackend(model_turn), judge=ScriptedBackend(judge_answer, "judge"), out=tmp_path / "run",
                    config="all", limit=60, rules="released_script", parsing="lenient", dataset=nc_built,
                    cache=tmp_path / "d.sqlite",
                    progress=False, **accepted)
    _same_run(ours, theirs)
    assert ours.results["signature"]["limit"] == 60 and ours.results["unparsed"] > 0
    assert (ours.results["signature"]["rules"], ours.results["signature"]["parsing"]) == ("released_script", "lenient")
    # judge answers are cached as convbench run caches them: scoring again asks the judge nothing
    again = score_lm_eval_samples(samples_file(out, "convbench_nc"), judge=ScriptedBackend(judge_answer, "judge"),
                                  out=tmp_path / "again", rules="released_script", parsing="lenient", dataset=nc_built,
                                  cache=tmp_path / "c.sqlite", progress=False, **accepted)
    assert again.results["stats"]["judge_cache_hits"] == 60 and again.results["accuracy"] == ours.results["accuracy"]


def test_several_judges_as_in_convbench_run(basic_samples: tuple[Path, dict[str, Any], ScriptedLM], nc_built: Path,
                                           tmp_path: Path) -> None:
    samples, _, _ = basic_samples
    out = tmp_path / "from-lm-eval"
    assert main(["score", "--from-lm-eval", str(samples), "--judge", "baseline:smoke-judge", "--judge", "baseline:silence",
                 "--out", str(out), "--dataset", str(nc_built), "--cache", str(tmp_path / "c.sqlite"), "--no-progress",
                 "--parsing", "lenient", "--max-empty-rate", "1"]) == 0  # TURNS' empty answers, on purpose
    expected = run_nc(model=ScriptedBackend(model_turn), judge=["baseline:smoke-judge", "baseline:silence"],
                      out=tmp_path / "run", config="basic", dataset=nc_built, cache=tmp_path / "d.sqlite", progress=False,
                      parsing="lenient", max_empty_rate=1)
    written = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert written["per_judge"] == expected.results["per_judge"]
    assert written["judge_agreement"] == expected.results["judge_agreement"]
    assert written["signature"]["judges"] == ["baseline:smoke-judge", "baseline:silence"]
    assert written["signature"]["parsing"] == "lenient"  # --parsing reaches the run (its default: exact, above)


def _edit(samples: Path, tmp_path: Path, change) -> Path:  # type: ignore[no-untyped-def]
    lines = [json.loads(line) for line in samples.read_text(encoding="utf-8").splitlines()]
    edited = tmp_path / samples.name
    edited.write_text("".join(json.dumps(s, ensure_ascii=False) + "\n" for s in change(lines)), encoding="utf-8")
    return edited


def test_samples_that_are_not_the_rows_or_prompts_are_refused(basic_samples: tuple[Path, dict[str, Any], ScriptedLM],
                                                              nc_built: Path, tmp_path: Path) -> None:
    samples, _, _ = basic_samples

    def score(path: Path) -> None:
        score_lm_eval_samples(path, judge="baseline:smoke-judge", out=tmp_path / "run", dataset=nc_built,
                              cache=tmp_path / "c.sqlite", progress=False,
                              max_empty_rate=1)  # TURNS' empty answers, on purpose (the samples are the point)

    def tamper(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        lines[4]["doc"]["acceptable_labels"] = ["Other"]
        return lines

    with pytest.raises(ConvbenchError, match=r"line 5: doc 4 is not row 4 of basic in convbench's build "
                                             r"\(fields acceptable_labels differ\)"):
        score(_edit(samples, tmp_path, tamper))
    with pytest.raises(ConvbenchError, match="not the first 179 rows of basic"):
        score(_edit(samples, tmp_path, lambda lines: lines[1:]))

    def sampled(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for line in lines:
            line["arguments"]["gen_args_0"]["arg_1"].update(do_sample=True, temperature=0.7)
        return lines

    with pytest.raises(ConvbenchError, match="the answers were sampled"):
        score(_edit(samples, tmp_path, sampled))

    def without_system(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        # what lm-eval's HF models send when a chat template rejects system messages: the rest of the transcript
        for line in lines:
            sent = json.loads(line["arguments"]["gen_args_0"]["arg_0"])
            line["arguments"]["gen_args_0"]["arg_0"] = json.dumps([m for m in sent if m["role"] != "system"])
        return lines

    with pytest.raises(ConvbenchError, match=r"line 1: the prompt lm-eval sent for doc 0 lacks the row's system message"):
        score(_edit(samples, tmp_path, without_system))
    assert not (tmp_path / "run").exists()  # nothing written for refused samples

    def rendered(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        # a chat template's text (not JSON) holding every message is accepted
        for line in lines:
            sent = json.loads(line["arguments"]["gen_args_0"]["arg_0"])
            line["arguments"]["gen_args_0"]["arg_0"] = "".join(f"<|{m['role']}|>\n{m['content']}\n" for m in sent)
        return lines

    score(_edit(samples, tmp_path, rendered))


class RefusingJudge(ScriptedBackend):
    """The scripted judge, but the judge prompts ``affected`` picks (about a quarter) are refused for good."""

    def generate(self, prompts, params):  # type: ignore[no-untyped-def]
        from convbench_datasets.engine import Generation
        from tests.support.openai_server import affected

        for i, messages in enumerate(prompts):
            if affected(list(messages)):
                self.calls += 1
                yield i, Generation("", error=f"refused for this row: prompt {len(messages[-1]['content'])}",
                                    permanent=True)
            else:
                yield from ((i, g) for _, g in super().generate([messages], params))


def test_too_many_judge_errors_fail_after_the_folder_is_written_with_its_harness(
        basic_samples: tuple[Path, dict[str, Any], ScriptedLM], nc_built: Path, tmp_path: Path, capsys) -> None:
    # issue #19: `convbench score --from-lm-eval` runs the NC-Bench pipeline, so the same --max-error-rate holds
    from convbench_datasets.engine.error_rate import TooManyErrors

    samples, _, _ = basic_samples
    # the error rate is this test's check: TURNS' empty answers and the judge's prose (on purpose) pass the others
    others = {"max_empty_rate": 1, "max_unparsed_rate": 1}
    theirs = run_nc(model=ScriptedBackend(model_turn), judge=RefusingJudge(judge_answer, "judge"), out=tmp_path / "run",
                    config="basic", dataset=nc_built, cache=tmp_path / "d.sqlite", progress=False, max_error_rate=1,
                    **others)
    errors = theirs.results["errors"]
    assert 0.05 * 180 < errors < 180
    with pytest.raises(TooManyErrors, match=rf"^{errors} of 180 rows \(.*\) ended in an error, more than the 5% "
                                            r"--max-error-rate allows; first: ") as caught:
        score_lm_eval_samples(samples, judge=RefusingJudge(judge_answer, "judge"), out=tmp_path / "ours",
                              dataset=nc_built, cache=tmp_path / "c.sqlite", progress=False, **others)
    assert (caught.value.errors, caught.value.total) == (errors, 180)
    written = json.loads((tmp_path / "ours" / "results.json").read_text())
    assert written["errors"] == errors and written["signature"]["harness"]["samples_sha256"]
    _same_run(caught.value.result, theirs)
    accepted = score_lm_eval_samples(samples, judge=RefusingJudge(judge_answer, "judge"), out=tmp_path / "ours",
                                     dataset=nc_built, cache=tmp_path / "c.sqlite", progress=False, max_error_rate=0.5,
                                     **others)
    _same_run(accepted, theirs)
    # a run without errors passes even 0 (the smoke judge is a baseline: no unread answers to count)
    assert main(["score", "--from-lm-eval", str(samples), "--judge", "baseline:smoke-judge", "--out",
                 str(tmp_path / "smoke"), "--dataset", str(nc_built), "--cache", str(tmp_path / "c.sqlite"),
                 "--no-progress", "--max-error-rate", "0", "--max-empty-rate", "1"]) == 0
    # `convbench score RUNDIR` now takes the flags too (it used to refuse them, "--max-error-rate go with
    # --from-lm-eval"): re-scoring the folder holds it to the same checks
    capsys.readouterr()
    assert main(["score", str(tmp_path / "ours"), "--max-empty-rate", "1", "--max-unparsed-rate", "1"]) == 1
    assert f"convbench: error: {errors} of 180 rows " in capsys.readouterr().err
    assert main(["score", str(tmp_path / "ours"), "--max-error-rate", "1", "--max-empty-rate", "1",
                 "--max-unparsed-rate", "1"]) == 0
    assert json.loads((tmp_path / "ours" / "results.json").read_text())["errors"] == errors


def test_nico_samples_and_missing_options_are_refused(nico_built: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "lm-eval"
    run_lm_eval(["convbench_nico_open_domain"], ScriptedLM(model_turn),
                metadata={"convbench_dataset": str(nico_built), "convbench_split": "train"}, out=out)
    nico_samples = samples_file(out, "convbench_nico_open_domain")
    assert main(["score", "--from-lm-eval", str(nico_samples), "--judge", "baseline:smoke-judge",
                 "--out", str(tmp_path / "run")]) == 1
    assert "samples of a NICO task, which lm-eval scores itself" in capsys.readouterr().err
    assert main(["score", "--from-lm-eval", str(nico_samples), "--out", str(tmp_path / "run")]) == 1
    assert "needs --judge SPEC (lm-eval runs no judge" in capsys.readouterr().err
    assert main(["score", str(tmp_path), "--judge", "baseline:smoke-judge"]) == 1
    assert "--judge go with --from-lm-eval" in capsys.readouterr().err


def test_nc_needs_a_chat_template(nc_built: Path) -> None:
    with pytest.raises(ConvbenchError, match="NC-Bench rows are chat transcripts; run lm_eval with --apply_chat_template"):
        run_lm_eval(["convbench_nc_basic"], ScriptedLM(model_turn), metadata={"convbench_dataset": str(nc_built)},
                    chat=False, limit=2)


def test_score_from_lm_eval_takes_judge_params(basic_samples: tuple[Path, dict[str, Any], ScriptedLM], nc_built: Path,
                                               tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # issue #20: --judge-param as `convbench run` reads it (JSON when it parses, null leaves the field out),
    # sent with every judge request and part of the judge's identity (so of its cache keys and the signature)
    from tests.support.openai_server import openai_server

    samples, _, _ = basic_samples
    with openai_server() as (url, state):
        assert main(["score", "--from-lm-eval", str(samples), "--judge", "openai:label", "--judge-base-url", url,
                     "--judge-param", "seed=3", "--judge-param", "top_p=0.5", "--judge-param", "temperature=null",
                     "--out", str(tmp_path / "run"), "--dataset", str(nc_built), "--cache", str(tmp_path / "c.sqlite"),
                     "--no-progress", "--max-error-rate", "1",
                     # TURNS' empty answers and label_for()'s unreadable answers, on purpose
                     "--max-empty-rate", "1", "--max-unparsed-rate", "1"]) == 0
    assert state.count() == 180
    assert all(b["seed"] == 3 and b["top_p"] == 0.5 and "temperature" not in b for b in state.bodies)
    identity = json.loads((tmp_path / "run" / "results.json").read_text())["signature"]["judge_identity"]
    assert identity["params"] == {"seed": 3, "temperature": None, "top_p": 0.5}
    # the run's own check and message (a field given twice), and the flag goes with --from-lm-eval only
    assert main(["score", "--from-lm-eval", str(samples), "--judge", "openai:label", "--judge-param", "seed=1",
                 "--judge-param", "seed=2", "--out", str(tmp_path / "again")]) == 1
    assert main(["score", str(tmp_path / "run"), "--judge-param", "seed=1"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[-2] == "convbench: error: --judge-param seed=... is given twice; give each request field once"
    assert err[-1].endswith("--judge-param go with --from-lm-eval")
