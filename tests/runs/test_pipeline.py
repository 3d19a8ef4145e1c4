"""`run_nc` end to end, offline: tiny local models, baselines, an OpenAI-compatible local server."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from convbench_datasets.cli import main
from convbench_datasets.engine import Backend, Generation, GenerationParams, ResponseCache
from convbench_datasets import run_nc, score_run
from tests.support.openai_server import label_for, openai_server

RECORD_KEYS = {"set", "id", "task", "pattern", "response", "judge_output", "labels", "out_of_set", "unrecognised", "unparsed",
               "passed", "acceptable_labels", "label_set", "model_cache_hit", "judge_cache_hit", "completion_tokens",
               "finish_reason", "judge_finish_reason", "error"}


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch", reason="the hf backend needs the hf extra (torch, transformers)")
    pytest.importorskip("transformers")
    from tests.support.tiny_models import build_tiny_lm

    return build_tiny_lm(tmp_path_factory.mktemp("tiny") / "lm")


def _check_well_formed(run, n: int) -> None:
    assert len(run.records) == n and all(set(r) == RECORD_KEYS for r in run.records)
    on_disk = [json.loads(line) for line in (run.path / "records.jsonl").read_text().splitlines()]
    assert on_disk == run.records
    results = json.loads((run.path / "results.json").read_text())
    assert results["n"] == n and results["unparsed"] == sum(r["unparsed"] for r in run.records)
    assert results["passed"] == sum(r["passed"] for r in run.records)
    for key in ("accuracy", "per_pattern", "per_set", "failure_breakdown", "signature", "stats"):
        assert key in results
    signature = results["signature"]
    for key in ("convbench_version", "model", "judge", "generation", "judge_template_sha256", "dataset_fingerprint"):
        assert signature[key] not in (None, "")


def test_tiny_hf_model_as_generator_and_judge(tiny_lm: Path, nc_built: Path, tmp_path: Path) -> None:
    spec = f"hf:{tiny_lm}"
    kwargs = dict(model=spec, judge=spec, config="rag", limit=12, dataset=nc_built, max_new_tokens=6,
                  judge_max_new_tokens=4, cache=tmp_path / "cache.sqlite", progress=False,
                  backend_options={"device": "cpu", "batch_size": 4},
                  max_unparsed_rate=1)  # a random-weight judge names no label: accepted, the pipeline is tested
    run = run_nc(out=tmp_path / "run", **kwargs)
    _check_well_formed(run, 12)
    assert run.stats["model_calls"] == 12 and run.stats["judge_calls"] == 12
    assert run.results["unparsed"] > 0  # a random-weight judge mostly says no label: counted, not dropped
    assert any(r["response"] for r in run.records)
    again = run_nc(out=tmp_path / "run2", **kwargs)
    assert again.stats["model_calls"] == 0 and again.stats["judge_calls"] == 0
    assert all(r["model_cache_hit"] and r["judge_cache_hit"] for r in again.records)
    assert {k: v for k, v in again.results.items() if k != "stats"} == {k: v for k, v in run.results.items() if k != "stats"}


def test_hf_backend_without_chat_template(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from convbench_datasets.engine.backends import backend_from_spec
    from tests.support.tiny_models import build_tiny_lm

    backend = backend_from_spec(f"hf:{build_tiny_lm(tmp_path / 'plain', chat_template=False)}", device="cpu")
    prompt = backend.render([{"role": "system", "content": "be brief"}, {"role": "user", "content": "yes ?"}])
    assert prompt == "SYSTEM: be brief\nUSER: yes ?\nASSISTANT:"


class ExactMatchJudge(Backend):
    """A stub judge: 'Repeat' when the judged line equals the AGENT's prior line verbatim, else 'Other'."""

    kind, model = "stub", "exact-match"

    def __init__(self) -> None:
        self.calls = 0

    def generate(self, prompts: Sequence[list[dict]], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
        for i, messages in enumerate(prompts):
            self.calls += 1
            lines = messages[1]["content"].split("Transcript:\n")[1].split("\n\nLabels:")[0].split("\n")
            agent = [line.split(" AGENT: ", 1)[1] for line in lines if " AGENT: " in line]
            yield i, Generation("Repeat" if len(agent) >= 2 and agent[-1] == agent[-2] else "Other")


def test_repeat_baseline_passes_every_repeat_request_row(nc_built: Path, tmp_path: Path) -> None:
    run = run_nc(model="baseline:repeat", judge=ExactMatchJudge(), out=tmp_path / "run", config="all",
                 dataset=nc_built, cache=tmp_path / "c.sqlite", progress=False)
    repeat_rows = [r for r in run.records if r["pattern"] == "Repeat Request"]
    assert len(repeat_rows) == 80 and all(r["passed"] for r in repeat_rows)  # basic 20 + rag 20 + complex 40
    assert run.results["per_pattern"]["Repeat Request"] == 100.0
    assert run.results["judge_sanity"] == {"repeat_request_rows": 80, "labelled_repeat": 100.0}


def test_silence_baseline(nc_built: Path, tmp_path: Path) -> None:
    run = run_nc(model="baseline:silence", judge="baseline:silence", out=tmp_path / "run", config="basic",
                 dataset=nc_built, cache=tmp_path / "c.sqlite", progress=False)
    assert all(r["response"] == "" for r in run.records) and run.results["unparsed"] == 180


def test_openai_pipeline_keeps_the_key_out_of_files(nc_built: Path, tmp_path: Path, monkeypatch) -> None:
    secret = "sk-test-never-written-4242"
    monkeypatch.setenv("CONVBENCH_KEY", secret)
    with openai_server() as (url, state):
        code = main(["run", "nc", "--config", "basic", "--limit", "30", "--model", "openai:echo", "--judge",
                     "openai:label", "--base-url", url, "--api-key-env", "CONVBENCH_KEY", "--dataset", str(nc_built),
                     "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "cache.sqlite"), "--no-progress",
                     "--max-unparsed-rate", "1"])  # the fake judge's deliberate "I am not sure": accepted, not tested
    assert code == 0 and state.count() == 60 and set(state.authorizations) == {f"Bearer {secret}"}
    for path in [*tmp_path.rglob("*")]:
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
    records = [json.loads(line) for line in (tmp_path / "run" / "records.jsonl").read_text().splitlines()]
    assert records[0]["response"] == "What does passively managed mean?"  # echo of the last user turn (basic id 0)
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    # the server's labels are a function of the judge prompt; unparsed answers are "I am not sure"
    assert results["unparsed"] == sum(r["judge_output"] == "I am not sure" for r in records)
    assert results["signature"]["judge_identity"] == {"kind": "openai", "model": "label", "base_url": url}


def test_score_recomputes_from_records(nc_built: Path, tmp_path: Path) -> None:
    run = run_nc(model="baseline:repeat", judge=ExactMatchJudge(), out=tmp_path / "run", config="basic",
                 dataset=nc_built, cache=tmp_path / "c.sqlite", progress=False)
    # the scores go, the declaration of the run's rows stays (a folder without results.json is refused)
    kept = {k: run.results[k] for k in ("signature", "row_ids")}
    (tmp_path / "run" / "results.json").write_text(json.dumps(kept))
    rescored = score_run(tmp_path / "run")
    assert rescored.results["accuracy"] == run.results["accuracy"]
    assert rescored.results["per_pattern"] == run.results["per_pattern"]


def test_failed_requests_make_the_run_incomplete_and_resumable(nc_built: Path, tmp_path: Path) -> None:
    from convbench_datasets.engine.backends.openai_compat import OpenAICompatBackend, RetryPolicy
    from convbench_datasets.engine.stage import RunIncomplete

    with openai_server() as (url, state):
        broken = OpenAICompatBackend("malformed-always", base_url=url, retry=RetryPolicy(max_retries=1, base_delay=0.01))
        with pytest.raises(RunIncomplete, match="5 of 5 requests to openai:malformed-always failed"):
            run_nc(model="baseline:repeat", judge=broken, out=tmp_path / "run", config="basic", limit=5,
                   dataset=nc_built, cache=tmp_path / "c.sqlite", progress=False)
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        assert cache.stats()["entries"] == 5  # the generations survived; only the judge calls are missing


def test_score_checks_hand_edited_records(nc_built: Path, tmp_path: Path, capsys) -> None:
    run_nc(model="baseline:repeat", judge=ExactMatchJudge(), out=tmp_path / "run", config="basic", limit=3,
           dataset=nc_built, cache=tmp_path / "c.sqlite", progress=False)
    records = (tmp_path / "run" / "records.jsonl").read_text().splitlines()
    broken = json.loads(records[1])
    del broken["label_set"]
    (tmp_path / "run" / "records.jsonl").write_text("\n".join([records[0], json.dumps(broken), records[2]]) + "\n")
    assert main(["score", str(tmp_path / "run")]) == 1
    assert "records.jsonl line 2: field 'label_set' must be a list" in capsys.readouterr().err
    (tmp_path / "run" / "records.jsonl").write_text("\n".join([records[0], records[0]]) + "\n")
    assert main(["score", str(tmp_path / "run")]) == 1
    assert "line 2: row ('basic', 0) appears twice" in capsys.readouterr().err


def test_one_run_folder_one_process(nc_built: Path, tmp_path: Path) -> None:
    from convbench_datasets.errors import ConvbenchError
    from convbench_datasets.engine.run_folder import run_folder

    with run_folder(tmp_path / "run"), pytest.raises(ConvbenchError, match="another convbench process is running into"):
        run_nc(model="baseline:repeat", judge="baseline:silence", out=tmp_path / "run", config="basic", limit=2,
               dataset=nc_built, cache=tmp_path / "c.sqlite", progress=False)


class RecordingJudge(ExactMatchJudge):
    """ExactMatchJudge that notes the token limit of every request it is sent."""

    def __init__(self) -> None:
        super().__init__()
        self.limits: list[int] = []

    def generate(self, prompts: Sequence[list[dict]], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
        self.limits += [params.max_new_tokens] * len(prompts)
        yield from super().generate(prompts, params)


def test_the_nc_judge_gets_128_new_tokens_by_default(nc_built: Path, tmp_path: Path) -> None:
    # 128: the judge's limit the README states (NC-Bench, Running a model: "1024 new tokens for the model, 128
    # for the judge"), the released pipeline's; the generator's default is 1024 (the paper's)
    judge = RecordingJudge()
    run = run_nc(model="baseline:repeat", judge=judge, out=tmp_path / "run", config="basic", limit=5,
                 dataset=nc_built, cache=tmp_path / "c.sqlite", progress=False)
    assert judge.limits == [128] * 5
    assert run.results["signature"]["judge_generation"]["max_new_tokens"] == 128
    assert run.results["signature"]["generation"]["max_new_tokens"] == 1024
    # the command line's default is the same
    assert main(["run", "nc", "--model", "baseline:repeat", "--judge", "baseline:smoke-judge", "--config", "basic",
                 "--limit", "2", "--dataset", str(nc_built), "--cache", str(tmp_path / "c.sqlite"), "--out",
                 str(tmp_path / "cli"), "--no-progress"]) == 0
    signature = json.loads((tmp_path / "cli" / "results.json").read_text(encoding="utf-8"))["signature"]
    assert signature["judge_generation"]["max_new_tokens"] == 128


@pytest.mark.parametrize("limit", [0, -1])
def test_a_limit_below_one_is_refused_by_the_python_api(limit: int, nc_built: Path, nico_built: Path,
                                                       tmp_path: Path) -> None:
    # as --limit on the command line (a whole number of at least 1): limit=0 would be a run of no rows that
    # looks finished; refused before any row is read or folder written
    from convbench_datasets import run_nico
    from convbench_datasets.errors import ConvbenchError
    from convbench_datasets.runs.pipeline import run

    calls = [
        lambda: run_nc(model="baseline:repeat", judge="baseline:smoke-judge", out=tmp_path / "nc", config="basic",
                       limit=limit, dataset=nc_built, cache=tmp_path / "c.sqlite", progress=False),
        lambda: run_nico(model="baseline:repeat", task="open_domain", split="train", out=tmp_path / "nico",
                         limit=limit, dataset=nico_built, cache=tmp_path / "c.sqlite", progress=False),
        lambda: run("nico", model="baseline:repeat", task="open_domain", split="train", out=tmp_path / "run",
                    limit=limit, dataset=nico_built, cache=tmp_path / "c.sqlite", progress=False),
    ]
    for call in calls:
        with pytest.raises(ConvbenchError, match=rf"^--limit must be at least 1, got {limit}$"):
            call()
    assert sorted(p.name for p in tmp_path.iterdir()) == []
