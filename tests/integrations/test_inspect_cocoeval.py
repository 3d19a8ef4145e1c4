"""CoCoEvalBench under inspect_ai: simulation, both judges and the behaviour metric, offline.

A scripted simulator (which names a stranger on some first tries, so replies are repaired) and a
scripted judge (which answers prose on some first tries) serve the same answers to an inspect eval
and to ``run_cocoeval``: the records and the numbers must be the same.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("inspect_ai", reason="inspect_ai is not installed (pip install -e \".[inspect]\")")
# inspect's retry set-up calls tenacity with a parameter tenacity deprecates, once per model call
pytestmark = pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated:DeprecationWarning")

from convbench_datasets.integrations.inspect import cocoeval
from convbench_datasets.runs.api import import_inspect_log# noqa: E402
from convbench_datasets.integrations.inspect._common import NO_OUTPUT  # noqa: E402
from convbench_datasets.runs.api import run_cocoeval  # noqa: E402
from convbench_datasets.cocoeval.simulation import occurrences  # noqa: E402
from convbench_datasets.engine.backends import Generation  # noqa: E402
from convbench_datasets.engine.error_rate import TooManyErrors  # noqa: E402
from convbench_datasets.engine.backends.openai_compat import reply_error  # noqa: E402
from tests.integrations.inspect_support import ScriptedBackend, inspect_model, pick, reported, run_inspect  # noqa: E402
from tests.support.cocoeval_script import answer as reply, asked, first_speaker, is_simulation, user_text  # noqa: E402

CONFIG, LIMIT = "qmsum_committee", 4


def repairing(messages: list[dict[str, str]]) -> bool:
    return messages[-1]["content"].startswith("Your previous answer could not be used")


def simulator(messages: list[dict[str, str]]) -> str:
    """The next turns, all by the history's first speaker (after the copy of the last turns the
    countermeasure asks for); a stranger opens some first tries."""
    text = user_text(messages)
    speaker = first_speaker(messages)
    first = "Stranger" if not repairing(messages) and pick(text, "ab") == "a" else speaker
    return reply(messages, [f"{first if k == 0 else speaker}: simulated line {k} of {len(text)}"
                            for k in range(asked(messages).wanted)])


def judge(messages: list[dict[str, str]]) -> str:
    text = user_text(messages)
    if repairing(messages):  # the rejected answer is shown back as the judge's own message, before the problem
        assert messages[-2] == {"role": "assistant", "content": "The participants seem fine."}, messages
    if not repairing(messages) and pick(text, "abc") == "a":
        return "The participants seem fine."  # no JSON: repaired once
    if "annotate conversations" in text:
        simulated = "simulated line" in text
        choices = [{"Repetition": [1, 2], "Off Topic": [5]}, {"Repetition": [3]}, {}] if not simulated else \
            [{"Repetition": [4]}, {"Off Topic": [1, 2, 3]}]
        return json.dumps(pick(text, choices))
    return json.dumps({"consistency": pick(text, [3, 6, 8]), "collaborativeness": pick(text[::-1], [2, 5, 9])})


def test_inspect_reports_convbench_numbers(cocoeval_built: Path, tmp_path: Path) -> None:
    log = run_inspect(cocoeval(config=CONFIG, dataset=str(cocoeval_built), n_bootstrap=200), inspect_model(simulator),
                      tmp_path / "logs", grader=inspect_model(judge, "mockllm/judge"), limit=LIMIT)
    run = run_cocoeval(model=ScriptedBackend(simulator), judge=ScriptedBackend(judge, "judge"), out=tmp_path / "run",
                       config=CONFIG, limit=LIMIT, dataset=cocoeval_built, cache=tmp_path / "c.sqlite",
                       n_bootstrap=200, progress=False)
    results = run.results
    assert results["n"] == LIMIT and results["n_compared"] > 0
    assert results["simulation_problems"] > 0  # the stranger was repaired
    metrics = reported(log)
    # Expected values: convbench's own run of the same answers (score_records in run_cocoeval).
    assert metrics["n_compared"] == results["n_compared"] and metrics["mismatch"] == results["mismatch"]
    assert (metrics["n"], metrics["errors"]) == (results["n"], results["errors"]) == (LIMIT, 0)
    for side in ("model", "human"):
        for name, mean in results[f"{side}_mean"].items():
            assert metrics[f"{side}/{name}"] == mean, (side, name)
        for scale, rated in results["overall"][side].items():
            assert metrics[f"{side}/{scale}"] == rated["mean"], (side, scale)
    # Beside each number its standard error: by hand, the spread (ddof 1) of the statistic over the 200
    # resamples (seed 0) of the compared instances in id order
    kept = sorted((r for r in run.records if r["excluded"] is None), key=lambda r: str(r["id"]))
    draws = np.random.default_rng(0).integers(0, len(kept), size=(200, len(kept)))
    counts = {side: np.array([[occurrences(r[f"{side}_behaviours"]).count(name) for name in results["model_mean"]]
                              for r in kept], dtype=float) for side in ("model", "human")}
    resampled = {side: counts[side][draws].mean(axis=1) for side in counts}  # resamples x types
    for side in ("model", "human"):
        for j, name in enumerate(results["model_mean"]):
            assert metrics[f"{side}/{name}_stderr"] == pytest.approx(resampled[side][:, j].std(ddof=1), abs=1e-12)
        for scale in results["overall"][side]:
            rated = np.array([r[f"{side}_overall"][scale] for r in kept], dtype=float)
            assert metrics[f"{side}/{scale}_stderr"] == pytest.approx(rated[draws].mean(axis=1).std(ddof=1))
    m, h = resampled["model"], resampled["human"]
    defined = h.sum(axis=1) > 0
    mismatch = 100 * np.abs(m - h).sum(axis=1)[defined] / h.sum(axis=1)[defined]
    assert metrics["mismatch_stderr"] == pytest.approx(mismatch.std(ddof=1)) and metrics["mismatch_stderr"] > 0
    # the whole record of each instance is the one convbench writes
    imported = import_inspect_log(log, tmp_path / "imported")
    assert imported.records == run.records
    for key in ("n", "n_compared", "excluded", "model_mean", "human_mean", "difference", "mismatch", "intervals",
                "overall", "per_source", "simulation_problems", "simulation_persisting_problems", "row_ids"):
        assert imported.results[key] == results[key], key
    for key in ("config", "rows", "dataset_fingerprint", "turns_per_call", "prompt", "taxonomy", "templates_sha256",
                "generation", "judge_generation", "n_bootstrap", "seed"):
        assert imported.results["signature"][key] == results["signature"][key], key


def test_cut_replies_are_asked_again_then_counted(cocoeval_built: Path, tmp_path: Path) -> None:
    def cut(messages: list[dict[str, str]], max_tokens: int) -> bool:
        # cut at 30 turns' limit (with the 5 copied: 256 * 35 = 8,960 tokens) always; at twice that only for
        # half the instances
        return max_tokens <= 8960 or pick(user_text(messages)[:400], "ab") == "a"

    log = run_inspect(cocoeval(config=CONFIG, dataset=str(cocoeval_built), turns_per_call=30, n_bootstrap=0),
                      inspect_model(simulator, cut=cut), tmp_path / "logs", grader=inspect_model(judge, "mockllm/judge"),
                      limit=LIMIT)
    run = run_cocoeval(model=ScriptedBackend(simulator, cut=cut), judge=ScriptedBackend(judge, "judge"),
                       out=tmp_path / "run", config=CONFIG, limit=LIMIT, turns_per_call=30, dataset=cocoeval_built,
                       cache=tmp_path / "c.sqlite", n_bootstrap=0, progress=False)
    assert run.results["simulation_cut_replies"] > LIMIT and run.results["excluded"]["simulation_cut"] > 0
    imported = import_inspect_log(log, tmp_path / "imported")
    assert imported.records == run.records
    assert imported.results["excluded"] == run.results["excluded"]
    assert reported(log)["n_compared"] == run.results["n_compared"]


def test_bad_task_arguments_are_named(cocoeval_built: Path) -> None:
    with pytest.raises(ValueError, match=r"turns per call must be one of \(1, 5, 30\), got 3"):
        cocoeval(turns_per_call=3, dataset=str(cocoeval_built))
    with pytest.raises(ValueError, match="prompt must be one of"):
        cocoeval(prompt="fancy", dataset=str(cocoeval_built))


def test_a_reply_that_is_no_answer_is_the_instance_s_error(cocoeval_built: Path, tmp_path: Path) -> None:
    # A content filter withholds the simulation of some instances and some judgements. convbench's runner gets
    # the same replies as per-row errors from a backend applying its OpenAI-compatible backend's rule
    # (reply_error); inspect's mock models give them as replies stopped by the filter.
    def withheld(messages: list[dict[str, str]]) -> bool:
        text = user_text(messages)
        return pick(text[:400], "ab") == "a" if is_simulation(messages) else pick(text, "abcdefghijkl") == "a"

    def answer(script):  # type: ignore[no-untyped-def]
        return lambda messages: "" if withheld(messages) else script(messages)

    class Filtered(ScriptedBackend):
        def generate(self, prompts, params):  # type: ignore[no-untyped-def]
            for i, generation in super().generate(prompts, params):
                if withheld(list(prompts[i])):
                    generation = Generation("", error=reply_error("", "content_filter"), permanent=True)
                yield i, generation

    stop = lambda messages: "content_filter" if withheld(messages) else None  # noqa: E731
    log = run_inspect(cocoeval(config=CONFIG, dataset=str(cocoeval_built), n_bootstrap=0),
                      inspect_model(answer(simulator), stop=stop), tmp_path / "logs",
                      grader=inspect_model(answer(judge), "mockllm/judge", stop=stop), limit=LIMIT)
    run = run_cocoeval(model=Filtered(simulator), judge=Filtered(judge, "judge"), out=tmp_path / "run", config=CONFIG,
                       limit=LIMIT, dataset=cocoeval_built, cache=tmp_path / "c.sqlite", n_bootstrap=0, progress=False,
                       max_error_rate=1)  # a run compared with the integration's: its errors are counted, not a failed run
    errors = [r["error"] for r in run.records if r["error"]]
    assert any(e.startswith("simulation: content filter") for e in errors)
    assert 0 < run.results["errors"] < LIMIT, errors
    metrics = reported(log)
    assert (metrics["n"], metrics["n_compared"], metrics["errors"]) == (
        run.results["n"], run.results["n_compared"], run.results["errors"])
    imported = import_inspect_log(log, tmp_path / "imported", max_error_rate=1)  # the same errors as the run's
    assert imported.records == run.records


def test_a_sample_stopped_by_a_limit_is_an_error(cocoeval_built: Path, tmp_path: Path) -> None:
    # A token limit of 1 stops each simulation after its first reply: no continuation, nothing judged; each
    # instance is an error (the scorer used to raise, failing the whole evaluation). The imported run compares
    # no instance: its folder is written, then the import fails, a higher --max-error-rate or not.
    log = run_inspect(cocoeval(config=CONFIG, dataset=str(cocoeval_built), n_bootstrap=0), inspect_model(simulator),
                      tmp_path / "logs", grader=inspect_model(judge, "mockllm/judge"), limit=2, token_limit=1)
    assert all(s.limit is not None and s.limit.type == "token" for s in log.samples)
    assert {s.scores["cocoeval_judge"].metadata["record"]["error"] for s in log.samples} == {NO_OUTPUT}
    assert reported(log) == {"n": 2, "n_compared": 0, "errors": 2}
    nothing = r"0 of 2 instances compared \(errors 2\): this run measured nothing$"
    with pytest.raises(TooManyErrors, match=r"^2 of 2 rows \(100\.0%\) ended in an error, more than the 5% "
                                            r"--max-error-rate allows; .*; and " + nothing):
        import_inspect_log(log, tmp_path / "failed")
    assert (tmp_path / "failed" / "records.jsonl").is_file() and (tmp_path / "failed" / "results.json").is_file()
    with pytest.raises(TooManyErrors, match="^" + nothing) as caught:
        import_inspect_log(log, tmp_path / "imported", max_error_rate=1)
    imported = caught.value.result  # the run its folder holds
    assert imported.path == tmp_path / "imported" and (imported.path / "records.jsonl").is_file()
    assert [r["error"] for r in imported.records] == ["inspect: token limit (1)"] * 2
    assert (imported.results["errors"], imported.results["n_compared"]) == (2, 0)
    assert json.loads((imported.path / "results.json").read_text())["errors"] == 2
