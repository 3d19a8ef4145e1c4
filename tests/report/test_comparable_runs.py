"""A run that was not made the paper's way says so in its report, end to end: a request parameter sent to a
model (``--param``) and a CoCoEval dataset built without the paper's six sources are flagged; the same run
without them is not. Runs go through the command line against the local fake OpenAI server."""

from __future__ import annotations

import json
from pathlib import Path

from convbench_datasets.cli import main
from convbench_datasets.cocoeval.report_tables import cocoeval_paper_differences
from convbench_datasets.nc.report_tables import nc_paper_differences
from convbench_datasets.report.runs import load_runs
from convbench_datasets.engine.backends import GenerationParams
from tests.cocoeval.test_cocoeval_run import Scripted
from tests.support.openai_server import ServerState, openai_server

PARAM = "generator request parameters temperature=0.7 (--param; paper: none)"


def _run(kind: str, out: Path, url: str, cache: Path, dataset: Path, *extra: str, judge: str | None = None) -> dict:
    if judge is None:  # the papers' judges
        judge = "openai:mistralai/Mistral-Large-Instruct-2411" if kind == "nc" else "openai:o4-mini"
    # the fake server's NC judge answers "I am not sure" now and then on purpose: accept them, not what is tested
    limits = ["--max-unparsed-rate", "1"] if kind == "nc" else []
    code = main(["run", kind, "--model", "openai:label", "--judge", judge, "--base-url", url, "--out", str(out),
                 "--dataset", str(dataset), "--limit", "2", "--no-progress", "--cache", str(cache), *limits, *extra])
    assert code == 0
    return json.loads((out / "results.json").read_text(encoding="utf-8"))["signature"]


def test_nc_param_is_recorded_and_flagged(tmp_path: Path, nc_built: Path) -> None:
    with openai_server() as (url, _):
        plain = _run("nc", tmp_path / "plain", url, tmp_path / "c.sqlite", nc_built)
        hot = _run("nc", tmp_path / "hot", url, tmp_path / "c.sqlite", nc_built, "--param", "temperature=0.7")
    assert "params" not in plain["model_identity"] and hot["model_identity"]["params"] == {"temperature": 0.7}
    runs = load_runs([tmp_path / "plain", tmp_path / "hot"])
    # both scored the first 2 rows only; the second was also sent temperature 0.7
    assert nc_paper_differences(runs[0]) == ["only the first 2 rows (--limit)"]
    assert nc_paper_differences(runs[1]) == ["only the first 2 rows (--limit)", PARAM]


def test_a_token_limit_sent_as_a_param_is_the_signatures_limit(tmp_path: Path, nc_built: Path) -> None:
    # --param max_tokens=16 replaces NC-Bench's 1024 in the request: the signature says 16 applied, and the
    # report flags both the limit and the parameter
    with openai_server() as (url, state):
        signature = _run("nc", tmp_path / "short", url, tmp_path / "c.sqlite", nc_built, "--param", "max_tokens=16")
    assert {b["max_tokens"] for b in state.bodies if b["model"] == "label"} == {16}
    assert signature["generation"] == {"max_new_tokens": 16, "temperature": 0.0, "params_replaced": ["max_new_tokens"]}
    assert signature["judge_generation"] == {"max_new_tokens": 128, "temperature": 0.0}  # the judge's own
    (run,) = load_runs([tmp_path / "short"])
    assert nc_paper_differences(run) == ["16 new tokens (paper: 1024)", "only the first 2 rows (--limit)",
                                         "generator request parameters max_tokens=16 (--param; paper: none)"]


def test_an_nc_run_with_another_token_limit_is_flagged(tmp_path: Path, nc_built: Path) -> None:
    # --max-new-tokens 64: the generator is asked for 64 tokens, the signature records 64, and the report flags
    # it against the paper's 1024 (its setup, paper_results.yaml), settings before rows (NCSettings' field order)
    with openai_server() as (url, state):
        signature = _run("nc", tmp_path / "short", url, tmp_path / "c.sqlite", nc_built, "--max-new-tokens", "64")
    assert {b["max_tokens"] for b in state.bodies if b["model"] == "label"} == {64}
    assert signature["generation"] == {"max_new_tokens": 64, "temperature": 0.0}
    (run,) = load_runs([tmp_path / "short"])
    assert nc_paper_differences(run) == ["64 new tokens (paper: 1024)", "only the first 2 rows (--limit)"]


def _scripted(body: dict) -> str:
    """The scripted CoCoEval model and judge of tests/cocoeval/test_cocoeval_run.py, behind the fake server."""
    ((_, answer),) = list(Scripted().generate([body["messages"]], GenerationParams(64)))
    return answer.text


def test_cocoeval_param_and_a_four_source_build_are_flagged(tmp_path: Path, cocoeval_built: Path) -> None:
    with openai_server(ServerState(answer=_scripted)) as (url, state):
        plain = _run("cocoeval", tmp_path / "plain", url, tmp_path / "c.sqlite", cocoeval_built)
        sent = len(state.bodies)
        hot = _run("cocoeval", tmp_path / "hot", url, tmp_path / "c.sqlite", cocoeval_built,
                   "--param", "temperature=0.7")
    # the simulator (openai:label) is sent no temperature by default: the paper states none, so it ran at the
    # API's default (issue #41: 0.0 was sent); with --param, the value given. The o4-mini judge never gets one
    simulated = [b for b in state.bodies[:sent] if b["model"] == "label"]
    assert simulated and all("temperature" not in b for b in simulated)
    assert {b.get("temperature") for b in state.bodies[sent:] if b["model"] == "label"} == {0.7}
    assert plain["generation"]["temperature"] is None and hot["generation"]["temperature"] == 0.7
    # the mirror's build: QMSum's three sources and IQ2, 50 test instances each, extractive summaries, rule-made
    # cleaning and metadata (no model-made stage)
    assert plain["dataset_build"] == {"config": "all", "split": "test", "summary_methods": ["extractive", "none"],
                                      "instances": {"qmsum_product": 50, "qmsum_academic": 50, "qmsum_committee": 50,
                                                    "iq2": 50},
                                      "cleaning_methods": ["rules"], "metadata_methods": ["sources"]}
    build = ["dataset built without sim, ncpc (200 instances; paper: 300, 50 per source); `convbench build "
             "cocoeval --data-dir` with the TCR files adds SIM and NCPC",
             "extractive summaries (--summarizer not given to `convbench build`; paper: o4-mini wrote them)",
             "QMSum Product and Academic cleaned by rules only (--cleaner not given to `convbench build`; paper: "
             "o4-mini cleaned them)",
             "metadata from the sources' annotations (--metadata-model not given to `convbench build`; paper: "
             "o4-mini wrote it)"]
    runs = load_runs([tmp_path / "plain", tmp_path / "hot"])
    assert cocoeval_paper_differences(runs[0]) == ["only the first 2 rows (--limit)", *build]
    assert cocoeval_paper_differences(runs[1]) == ["only the first 2 rows (--limit)", PARAM, *build]
    assert hot["model_identity"]["params"] == {"temperature": 0.7}


def test_cocoeval_flags_another_judge_and_the_source_conversation_bootstrap(tmp_path: Path,
                                                                             cocoeval_built: Path) -> None:
    # the paper's judge is o4-mini and its intervals resample its conversations (one per instance): a run judged
    # by gpt-4.1 with --bootstrap-unit source_conversation says both, the judge first, then the settings (in
    # CoCoEvalSettings' field order), the rows and the build (the mirror's four sources, as above)
    with openai_server(ServerState(answer=_scripted)) as (url, _):
        signature = _run("cocoeval", tmp_path / "other", url, tmp_path / "c.sqlite", cocoeval_built,
                         "--bootstrap-unit", "source_conversation", judge="openai:gpt-4.1")
    assert (signature["judge"], signature["bootstrap_unit"]) == ("openai:gpt-4.1", "source_conversation")
    (run,) = load_runs([tmp_path / "other"])
    differences = cocoeval_paper_differences(run)
    assert differences[:3] == ["judge openai:gpt-4.1 (paper: o4-mini)",
                               "intervals resample source_conversation (paper: its conversations, one per instance)",
                               "only the first 2 rows (--limit)"]
    assert len(differences) == 3 + 4 and differences[3].startswith("dataset built without sim, ncpc")


def test_nico_flags_another_token_unit_and_a_limit(tmp_path: Path, nico_built: Path) -> None:
    from convbench_datasets import run_nico
    from convbench_datasets.nico.report_tables import nico_paper_differences
    from convbench_datasets.report import write_report

    common = dict(model="baseline:repeat", task="open_domain", split="train", dataset=nico_built, progress=False,
                  cache=tmp_path / "c.sqlite")
    run_nico(**common, out=tmp_path / "plain")
    run_nico(**common, out=tmp_path / "words", tokenizer="jieba", limit=3)
    plain, words = load_runs([tmp_path / "plain", tmp_path / "words"])
    # by hand: the train split (paper: test), then NICOSettings in field order, then the rows
    assert nico_paper_differences(plain) == ["split train (paper: test)"]
    assert nico_paper_differences(words) == [
        "split train (paper: test)", "jieba tokens (the paper's numbers point to characters)",
        "only the first 3 rows (--limit)"]
    write_report([tmp_path / "plain", tmp_path / "words"], tmp_path / "report")
    page = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    assert "baseline:repeat (words): not the paper's setup (split train (paper: test); jieba tokens" in page


def test_a_null_param_is_the_servers_default_in_the_signature() -> None:
    # applied_decoding by hand: openai's max_tokens=null leaves the limit out (None: the server's), temperature=0.5
    # replaces 0.0; an hf role's max_new_tokens=16 replaces the limit; openai's unknown max_new_tokens changes nothing
    from convbench_datasets.engine.backends import ModelRole
    from convbench_datasets.runs.pipeline import applied_decoding
    from convbench_datasets.runs.run_config import RunConfig

    def signature(model: ModelRole) -> dict:
        made = {"generation": {"max_new_tokens": 1024, "temperature": 0.0}}
        applied_decoding(made, RunConfig.make("nico", model=model, out="x", settings={"task": "open_domain"}))
        return made["generation"]

    assert signature(ModelRole("openai:m", params={"max_tokens": None, "temperature": 0.5})) == {
        "max_new_tokens": None, "temperature": 0.5, "params_replaced": ["max_new_tokens", "temperature"]}
    assert signature(ModelRole("hf:m", params={"max_new_tokens": 16})) == {
        "max_new_tokens": 16, "temperature": 0.0, "params_replaced": ["max_new_tokens"]}
    assert signature(ModelRole("openai:m", params={"max_new_tokens": 16})) == {"max_new_tokens": 1024, "temperature": 0.0}
