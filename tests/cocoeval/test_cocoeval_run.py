"""`run_cocoeval` offline: a scripted model and judge (repairs, malformed JSON), and a tiny local model."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from convbench_datasets.engine import Backend, Generation, GenerationParams
from convbench_datasets.engine.error_rate import TooManyErrors
from convbench_datasets.runs.api import run_cocoeval
from tests.support.cocoeval_script import answer as simulated_reply
from tests.support.cocoeval_script import asked, first_speaker, is_simulation, user_text


class Scripted(Backend):
    """Simulates with the history's first speaker (copying the last turns first when asked to, as the
    repetition countermeasure has it by default); judges with fixed JSON; errs once where told to.
    ``params``: (token limit, presence penalty) of every simulation request."""

    kind, model = "stub", "scripted"

    def __init__(self) -> None:
        self.calls = 0
        self.params: set[tuple[int, float | None]] = set()

    def generate(self, prompts: Sequence[list[dict]], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
        for i, messages in enumerate(prompts):
            self.calls += 1
            text = user_text(messages)
            repaired = messages[-1]["content"].startswith("Your previous answer could not be used")
            if repaired:  # the rejected reply is shown back as the model's own message, before the problem
                rejected = messages[-2]
                assert rejected["role"] == "assistant" and rejected["content"], messages
            if is_simulation(messages):
                self.params.add((params.max_new_tokens, params.presence_penalty))
                speaker = first_speaker(messages)
                first = "Stranger" if not repaired and "Stranger" not in text and len(text) % 2 else speaker
                lines = [f"{first if k == 0 else speaker}: simulated line {k}" for k in range(asked(messages).wanted)]
                yield i, Generation(simulated_reply(messages, lines))
            elif "annotate conversations" in text:
                human = "simulated line" not in text
                answer = {"Repetition": [1, 2], "Off Topic": [5]} if human else {"Repetition": [3]}
                yield i, Generation("not json" if not repaired and len(text) % 3 == 0 else json.dumps(answer))
            else:
                yield i, Generation(json.dumps({"consistency": 8, "collaborativeness": 6}))


def test_scripted_run(cocoeval_built: Path, tmp_path: Path) -> None:
    run = run_cocoeval(model=Scripted(), judge=Scripted(), out=tmp_path / "run", config="qmsum_committee", limit=6,
                       turns_per_call=5, dataset=cocoeval_built, cache=tmp_path / "c.sqlite", n_bootstrap=100,
                       progress=False)
    records = [json.loads(line) for line in (tmp_path / "run" / "records.jsonl").read_text().splitlines()]
    assert len(records) == 6 and all(r["simulation_complete"] and len(r["simulated"]) == 30 for r in records)
    results = run.results
    assert results["n"] == 6 and results["n_compared"] + sum(results["excluded"].values()) == 6
    assert results["n_compared"] > 0
    # scripted judge: human continuations get 2 Repetition + 1 Off Topic, simulated ones 1 Repetition.
    assert results["human_mean"]["Repetition"] == 2.0 and results["model_mean"]["Repetition"] == 1.0
    assert results["mismatch"] == pytest.approx(100 * (1 + 1) / 3)
    assert results["overall"]["model"]["consistency"]["mean"] == 8.0
    assert results["signature"]["turns_per_call"] == 5 and results["signature"]["taxonomy"][0] == "Repetition"
    # The scripted model names a stranger on odd-length prompts: each such reply is repaired once.
    assert results["simulation_problems"] > 0 and results["simulation_persisting_problems"] == 0
    assert all(len(r["simulation_replies"]) >= 30 // 5 for r in records)


def test_tiny_local_model_runs_end_to_end(cocoeval_built: Path, tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from tests.support.tiny_models import build_tiny_lm

    spec = f"hf:{build_tiny_lm(tmp_path / 'lm')}"
    # A random-weight model writes no "Speaker: utterance" line. Its replies are cut at 8 tokens (asked again
    # at 16) or stop early, by chance of the prompt; either way every simulation stops (cut twice, or
    # unusable after a repair), is counted, and nothing is compared; the human continuations are still
    # judged (and fail to parse, counted too). A run that compares nothing writes its folder, then fails.
    unmeasured = r"^0 of 2 instances compared \(.+\): this run measured nothing$"
    with pytest.raises(TooManyErrors, match=unmeasured) as caught:
        run_cocoeval(model=spec, judge=spec, out=tmp_path / "run", config="qmsum_product", limit=2, turns_per_call=30,
                     max_new_tokens=8, judge_max_new_tokens=8, dataset=cocoeval_built, cache=tmp_path / "c.sqlite",
                     backend_options={"device": "cpu"}, n_bootstrap=10, progress=False,
                     max_unparsed_rate=1)  # the random judge's answers cannot be read, on purpose (see below)
    run = caught.value.result
    assert (tmp_path / "run" / "results.json").is_file() and caught.value.total == 2
    excluded = run.results["excluded"]
    assert run.results["n"] == 2 and excluded["simulation_cut"] + excluded["simulation_incomplete"] == 2
    assert run.results["n_compared"] == 0 and all(r["simulated"] == [] for r in run.records)
    reasons = [f for r in run.records for f in r["simulation_finish_reasons"]]
    assert set(reasons) <= {"length", "stop"} and run.results["simulation_cut_replies"] == reasons.count("length")
    assert all(r["human_behaviours_raw"] is not None for r in run.records)
    # the random judge's answers about the human continuations are unusable too: counted per kind
    assert run.results["unusable_judge_answers"]["human behaviours"] == 2
    assert run.results["excluded"]["judge_unusable"] == 2


def test_prompts_beyond_the_context_fail_for_their_row(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from convbench_datasets.engine.backends import backend_from_spec
    from tests.support.tiny_models import build_tiny_lm

    backend = backend_from_spec(f"hf:{build_tiny_lm(tmp_path / 'lm')}", device="cpu")
    long = [{"role": "user", "content": "yes " * 5000}]
    out = dict(backend.generate([long, [{"role": "user", "content": "yes"}]], GenerationParams(max_new_tokens=4)))
    assert out[0].error and "exceeds the model's context of 4096" in out[0].error and out[1].error is None
    assert out[0].permanent  # the row's own error: recorded for it, not a failed run to be resumed


def test_score_rescores_a_cocoeval_run(cocoeval_built: Path, tmp_path: Path) -> None:
    from convbench_datasets.cli import main

    run = run_cocoeval(model=Scripted(), judge=Scripted(), out=tmp_path / "run", config="iq2", limit=3,
                       dataset=cocoeval_built, cache=tmp_path / "c.sqlite", n_bootstrap=50, progress=False)
    (tmp_path / "run" / "results.json").unlink()
    (tmp_path / "run" / "results.json").write_text(json.dumps({"signature": run.results["signature"]}))
    assert main(["score", str(tmp_path / "run")]) == 0
    rescored = json.loads((tmp_path / "run" / "results.json").read_text())
    assert rescored["model_mean"] == run.results["model_mean"] and rescored["mismatch"] == run.results["mismatch"]


class Refusing(Scripted):
    """Scripted, but the server refuses (for good) every prompt that quotes ``marker``."""

    def __init__(self, marker: str) -> None:
        super().__init__()
        self.marker = marker

    def generate(self, prompts: Sequence[list[dict]], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
        answers = dict(super().generate(prompts, params))
        for i, messages in enumerate(prompts):
            if self.marker in user_text(messages):
                yield i, Generation("", error="refused for this row: HTTP 400 from test: too long", permanent=True)
            else:
                yield i, answers[i]


def test_an_instance_with_a_row_error_is_excluded_and_counted(cocoeval_built: Path, tmp_path: Path) -> None:
    import datasets

    rows = datasets.load_dataset(str(cocoeval_built), "qmsum_committee", split="test").to_list()[:4]
    marker = rows[0]["history"][0]["utterance"]  # quoted by row 0's simulation prompts only
    assert not any(marker in json.dumps(r["history"]) for r in rows[1:])
    run = run_cocoeval(model=Refusing(marker), judge=Scripted(), out=tmp_path / "run", config="qmsum_committee", limit=4,
                       dataset=cocoeval_built, cache=tmp_path / "c.sqlite", n_bootstrap=20, progress=False,
                       max_error_rate=1)  # 1 of 4 rows in error: this test counts it
    first = run.records[0]
    assert first["error"] == "simulation: refused for this row: HTTP 400 from test: too long"
    assert first["excluded"].startswith("error (simulation: refused")
    assert run.results["errors"] == 1 and run.results["excluded"]["errors"] == 1
    assert run.results["excluded"]["simulation_incomplete"] == 0  # counted once, as an error
    assert all(r["error"] is None for r in run.records[1:])


class Cutting(Scripted):
    """Scripted, but a simulation reply asked with fewer than ``enough`` new tokens is cut at the limit in
    the middle of its last turn (``finish_reason: "length"``)."""

    def __init__(self, enough: int) -> None:
        super().__init__()
        self.enough = enough
        self.limits: list[int] = []

    def generate(self, prompts: Sequence[list[dict]], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
        for i, answer in super().generate(prompts, params):
            if is_simulation(prompts[i]):
                self.limits.append(params.max_new_tokens)
                if params.max_new_tokens < self.enough:
                    answer = Generation(answer.text + " CUT-MID", finish_reason="length")
            yield i, answer


def test_a_cut_reply_is_asked_again_with_twice_the_limit(cocoeval_built: Path, tmp_path: Path) -> None:
    model = Cutting(enough=4000)
    run = run_cocoeval(model=model, judge=Scripted(), out=tmp_path / "run", config="qmsum_committee", limit=2,
                       dataset=cocoeval_built, cache=tmp_path / "c.sqlite", n_bootstrap=20, progress=False)
    # 5 turns per call and 5 copied (the countermeasure, by default): limit max(1024, 256 * 10) = 2560, cut;
    # asked again at 2 * 2560 = 5120, complete.
    # Before: the cut reply's complete turns were kept and no reply was asked again.
    assert sorted(set(model.limits)) == [2560, 5120]
    assert all(r["simulation_complete"] and len(r["simulated"]) == 30 for r in run.records)
    assert not any("CUT-MID" in t["utterance"] for r in run.records for t in r["simulated"])
    # every request at 2560 was cut (at least 6 rounds x 2 instances; repairs add more), each recorded
    # and followed by its retry's reply
    reasons = [r["simulation_finish_reasons"] for r in run.records]
    assert run.results["simulation_cut_replies"] == sum(f.count("length") for f in reasons) >= 12
    assert all(f[k + 1] is None for f in reasons for k, reason in enumerate(f) if reason == "length")
    assert run.results["excluded"]["simulation_cut"] == 0
    # the report shows the cut replies, and the mismatch as convbench's with its noise floor beside it
    pytest.importorskip("matplotlib", reason="reports need the report extra")
    import pandas as pd

    from convbench_datasets.report import write_report

    page = write_report([tmp_path / "run"], tmp_path / "report").read_text()
    cut = run.results["simulation_cut_replies"]
    assert f"{cut} cut replies, 0 instances excluded" in page and "convbench's addition" in page
    table = pd.read_csv(tmp_path / "report" / "tables" / "cocoeval_overall.csv")
    floor = table[table["scale"].str.startswith("mismatch noise floor")]["mean"]
    assert list(floor) == [pytest.approx(run.results["mismatch_floor"])] and run.results["mismatch_floor"] is not None
    assert run.results["signature"]["cut_retry_max_new_tokens"] == 5120


def test_a_reply_cut_twice_is_a_counted_failure(cocoeval_built: Path, tmp_path: Path) -> None:
    # no instance is compared: the run writes its folder, then fails (it measured nothing)
    with pytest.raises(TooManyErrors, match=r"^0 of 2 instances compared \(simulation_cut 2\): this run measured "
                                            r"nothing$") as caught:
        run_cocoeval(model=Cutting(enough=10**6), judge=Scripted(), out=tmp_path / "run", config="qmsum_committee",
                     limit=2, dataset=cocoeval_built, cache=tmp_path / "c.sqlite", n_bootstrap=20, progress=False)
    run = caught.value.result
    assert (tmp_path / "run" / "results.json").is_file()
    # no cut turn is ever kept: both instances stop at their first reply, are counted and left out
    assert all(r["simulated"] == [] and not r["simulation_complete"] for r in run.records)
    assert run.results["excluded"]["simulation_cut"] == 2 and run.results["excluded"]["simulation_incomplete"] == 0
    assert run.results["simulation_cut_replies"] == 4 and run.results["n_compared"] == 0
    assert run.records[1]["excluded"] == "simulation reply cut at the token limit (2560 tokens, then 5120)"


def test_the_repetition_countermeasure_is_the_default_and_its_copy_is_dropped(cocoeval_built: Path,
                                                                               tmp_path: Path) -> None:
    # Paper, appendix C.2 (its vanilla system prompt, Table 17, and its main runs): "include the five most
    # recent turns in the response before generating the next turn, and set presence_penalty = 2.0".
    model = Scripted()
    run = run_cocoeval(model=model, judge=Scripted(), out=tmp_path / "run", config="qmsum_committee", limit=2,
                       dataset=cocoeval_built, cache=tmp_path / "c.sqlite", n_bootstrap=20, progress=False)
    # presence_penalty 2.0; limit 256 per turn written, 5 asked + 5 copied: 2560
    assert model.params == {(2560, 2.0)}
    signature = run.results["signature"]
    assert signature["repetition_countermeasure"] == {"copied_turns": 5, "presence_penalty": 2.0}
    # no temperature: the paper states none, so its simulations ran at the API's default (issue #41: 0.0 was sent)
    assert signature["generation"] == {"max_new_tokens": 2560, "temperature": None, "presence_penalty": 2.0}
    # only the new turns are kept (and judged): the copied history lines never reach the continuation
    assert all(r["simulation_complete"] and len(r["simulated"]) == 30 for r in run.records)
    assert all(t["utterance"].startswith("simulated line") for r in run.records for t in r["simulated"])
    # the ablation: no copy asked, no penalty, the limit for 5 turns alone (max(1024, 256 * 5))
    plain_model = Scripted()
    plain = run_cocoeval(model=plain_model, judge=Scripted(), out=tmp_path / "plain", config="qmsum_committee",
                         limit=1, repetition_countermeasure=False, dataset=cocoeval_built, cache=tmp_path / "c.sqlite",
                         n_bootstrap=0, progress=False)
    assert plain_model.params == {(1280, None)}
    assert plain.results["signature"]["repetition_countermeasure"] is None
    assert plain.results["signature"]["generation"] == {"max_new_tokens": 1280, "temperature": None}


def test_token_limit_scales_with_turns_per_call() -> None:
    from convbench_datasets.cocoeval.run import simulation_token_limit

    # 256 tokens per turn written, at least 1024 (the former fixed default)
    assert [simulation_token_limit(n) for n in (1, 5, 30)] == [1024, 1280, 7680]
    assert simulation_token_limit(30, copied=5) == 256 * 35


def test_cli_passes_bootstrap_and_the_countermeasure(monkeypatch: pytest.MonkeyPatch) -> None:
    from convbench_datasets import cli
    from convbench_datasets.errors import ConvbenchError
    from convbench_datasets.runs import pipeline
    from convbench_datasets.runs.run_config import settings_dict

    seen: dict = {}

    def fake(config, bench):  # the run the command line made, not run
        seen.update(settings_dict(config.settings))
        raise ConvbenchError("stop here")

    monkeypatch.setattr(pipeline, "run_config", fake)
    common = ["run", "cocoeval", "--model", "openai:m", "--judge", "openai:j", "--out", "x"]
    assert cli.main([*common, "--bootstrap", "7", "--no-repetition-countermeasure",
                     "--bootstrap-unit", "source_conversation"]) != 0
    assert seen["n_bootstrap"] == 7 and seen["repetition_countermeasure"] is False and seen["max_new_tokens"] is None
    assert seen["bootstrap_unit"] == "source_conversation"
    # the paper's defaults: the countermeasure on, intervals over instances, the judge limit by rule (None)
    assert cli.main(common) != 0 and seen["n_bootstrap"] == 1000 and seen["repetition_countermeasure"] is True
    assert seen["bootstrap_unit"] == "instance" and seen["judge_max_new_tokens"] is None
    seen.clear()
    assert cli.main(["run", "nc", "--model", "openai:m", "--judge", "openai:j", "--out", "x", "--bootstrap", "7"]) != 0
    assert not seen
