"""`run_cocoeval` offline: a scripted model and judge (repairs, malformed JSON), and a tiny local model."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from convbench_datasets.runner import Backend, Generation, GenerationParams
from convbench_datasets.runner.cocoeval_run import run_cocoeval


class Scripted(Backend):
    """Simulates with the history's first speaker; judges with fixed JSON; errs once where told to."""

    kind, model = "stub", "scripted"

    def __init__(self) -> None:
        self.calls = 0

    def generate(self, prompts: Sequence[list[dict]], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
        for i, messages in enumerate(prompts):
            self.calls += 1
            text = messages[0]["content"]
            repaired = len(messages) > 1
            if "Write the next" in text:
                wanted = int(re.search(r"Write the next (\d+) turns", text).group(1))
                speaker = text.split("The conversation so far:\n")[1].split(":")[0]
                first = "Stranger" if not repaired and "Stranger" not in text and len(text) % 2 else speaker
                lines = [f"{first if k == 0 else speaker}: simulated line {k}" for k in range(wanted)]
                yield i, Generation("\n".join(lines))
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
    run = run_cocoeval(model=spec, judge=spec, out=tmp_path / "run", config="qmsum_product", limit=2, turns_per_call=30,
                       max_new_tokens=8, judge_max_new_tokens=8, dataset=cocoeval_built, cache=tmp_path / "c.sqlite",
                       backend_options={"device": "cpu"}, n_bootstrap=10, progress=False)
    # A random-weight model writes no "Speaker: utterance" line: every simulation stalls, is counted, and
    # nothing is compared; the human continuations are still judged (and fail to parse, counted too).
    assert run.results["n"] == 2 and run.results["excluded"]["simulation_incomplete"] == 2
    assert run.results["n_compared"] == 0 and run.results["simulation_problems"] == 4  # 1 try + 1 repair each
    assert run.results["simulation_persisting_problems"] == 2
    assert all(r["human_behaviours_raw"] is not None for r in run.records)
    # the random judge's answers about the human continuations are unusable too: counted per kind
    assert run.results["unusable_judge_answers"]["human behaviours"] == 2
    assert run.results["excluded"]["judge_unusable"] == 2


def test_prompts_beyond_the_context_fail_for_their_row(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from convbench_datasets.runner.backends import backend_from_spec
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
            if self.marker in messages[0]["content"]:
                yield i, Generation("", error="refused for this row: HTTP 400 from test: too long", permanent=True)
            else:
                yield i, answers[i]


def test_an_instance_with_a_row_error_is_excluded_and_counted(cocoeval_built: Path, tmp_path: Path) -> None:
    import datasets

    rows = datasets.load_dataset(str(cocoeval_built), "qmsum_committee", split="test").to_list()[:4]
    marker = rows[0]["history"][0]["utterance"]  # quoted by row 0's simulation prompts only
    assert not any(marker in json.dumps(r["history"]) for r in rows[1:])
    run = run_cocoeval(model=Refusing(marker), judge=Scripted(), out=tmp_path / "run", config="qmsum_committee", limit=4,
                       dataset=cocoeval_built, cache=tmp_path / "c.sqlite", n_bootstrap=20, progress=False)
    first = run.records[0]
    assert first["error"] == "simulation: refused for this row: HTTP 400 from test: too long"
    assert first["excluded"].startswith("error (simulation: refused")
    assert run.results["errors"] == 1 and run.results["excluded"]["errors"] == 1
    assert run.results["excluded"]["simulation_incomplete"] == 0  # counted once, as an error
    assert all(r["error"] is None for r in run.records[1:])


class Cutting(Scripted):
    """Scripted, but each first simulation reply is cut at the token limit in the middle of its last turn."""

    def generate(self, prompts: Sequence[list[dict]], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
        for i, answer in super().generate(prompts, params):
            text = prompts[i][0]["content"]
            if "Write the next" in text and "simulated line" not in text.split("The conversation so far:")[-1]:
                yield i, Generation(answer.text + " CUT-MID", finish_reason="length")
            else:
                yield i, answer


def test_a_cut_simulation_reply_drops_its_cut_turn(cocoeval_built: Path, tmp_path: Path) -> None:
    run = run_cocoeval(model=Cutting(), judge=Scripted(), out=tmp_path / "run", config="qmsum_committee", limit=2,
                       dataset=cocoeval_built, cache=tmp_path / "c.sqlite", n_bootstrap=20, progress=False)
    # before the fix, the cut turn ("... CUT-MID") was kept as a whole one
    assert all(r["simulation_complete"] and len(r["simulated"]) == 30 for r in run.records)
    assert not any("CUT-MID" in t["utterance"] for r in run.records for t in r["simulated"])
    assert run.results["simulation_cut_replies"] == sum(r["simulation_cut_replies"] for r in run.records) >= 2
