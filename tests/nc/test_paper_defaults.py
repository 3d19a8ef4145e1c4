"""Every NC-Bench default checked against the paper's own description, point by point.

The paper (Moore et al., arXiv:2601.06426): "For the judge LLM, we used Mistral-Large-Instruct-2411 ...
All generations used greedy decoding with a 1024-token limit" (section 4); the judge prompt is the
released one (appendix A.2, the released utils.py); acceptable labels per task in appendix B.1, where
Incremental-Self-Correction is listed twice (once with Answer, once without) and Table 3 settles it:
every model scores 100% on Incremental/Correction, so Answer passes there; and pass/fail is "whether
the predicted label falls within the set of acceptable conversational actions ... as defined by our
aggregator" (appendix D): the released aggregator.py, which reads the judge's text exactly (pieces cut
at commas and new lines, stripped, compared case-sensitively). nc/paper_results.yaml's ``setup`` holds
these facts once; each test below ties a default of convbench to them.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from convbench_datasets.nc.paper_results import paper_results
from convbench_datasets.nc.patterns import pattern_table
from convbench_datasets.nc.run import BENCHMARK, JUDGE_MAX_NEW_TOKENS, NCPlan
from convbench_datasets.runs.api import run_nc
from convbench_datasets.engine.backends import GenerationParams
from convbench_datasets.nc.ncbench_action import score_actions
from tests.nc.test_ncbench_action import _released_acceptable
from tests.nc.test_released_rule import oracle
from tests.support.scripted import ScriptedBackend, pick

SETUP = paper_results().setup
METRIC = Path(__file__).resolve().parents[2] / "metrics" / "ncbench_action" / "ncbench_action.py"


def _defaults(function) -> dict:  # type: ignore[no-untyped-def]
    return {name: p.default for name, p in inspect.signature(function).parameters.items()
            if p.default is not inspect.Parameter.empty}


def test_the_papers_setup_as_data_says_what_the_paper_says() -> None:
    assert SETUP == {"judge": "Mistral-Large-Instruct-2411", "decoding": "greedy", "max_new_tokens": 1024,
                     "judge_template": "released", "rules": "paper", "parsing": "exact"}


def test_run_nc_defaults_are_the_papers_setup() -> None:
    defaults = _defaults(run_nc)
    assert defaults["rules"] == SETUP["rules"] and defaults["parsing"] == SETUP["parsing"]
    assert defaults["template"] == SETUP["judge_template"] and defaults["max_new_tokens"] == SETUP["max_new_tokens"]
    # the released judge scripts (judge_hf.py, judge_gpt4o.py) give the judge 128 new tokens and judge the
    # response's first line (utils.generate_judge_prompts); the paper states neither, so the released pipeline's
    # (None: 128, or 25,000 for an OpenAI reasoning judge, whose hidden reasoning counts against the limit)
    assert defaults["judge_max_new_tokens"] is None and defaults["first_line_only"] is True
    assert JUDGE_MAX_NEW_TOKENS == 128
    assert defaults["fill_request_details"] is False  # the released pipeline leaves <request_details> empty
    # greedy: run_nc has no temperature to choose; the plan's generation parameters are greedy
    plan = NCPlan(template="convbench")
    judge = SimpleNamespace(judge_specs=["openai:Mistral-Large-Instruct-2411"])  # a Session's judges, as the plan reads them
    assert plan.gen_params.temperature == 0.0 and plan.judge_params(judge) == [GenerationParams(128, temperature=0.0)]


def test_every_way_in_has_the_same_defaults() -> None:
    run = _defaults(run_nc)
    plan = {f: getattr(NCPlan(template="convbench"), f) for f in ("config", "rules", "parsing", "max_new_tokens",
                                                                   "judge_max_new_tokens", "first_line_only")}
    assert plan == {f: run[f] for f in plan}  # sweep files and convbench run build an NCPlan
    flags = {o.dest: o.default for o in BENCHMARK.options}
    assert (flags["rules"], flags["parsing"]) == (SETUP["rules"], SETUP["parsing"])  # convbench run nc --help
    assert _defaults(score_actions)["parsing"] == SETUP["parsing"]
    source = METRIC.read_text(encoding="utf-8")  # the evaluate module (loaded by path; evaluate need not be here)
    assert 'tasks=None, parsing="exact"):' in source


def test_harness_paths_have_the_same_defaults() -> None:
    from convbench_datasets.runs.api import score_lm_eval_samples

    lm_eval = _defaults(score_lm_eval_samples)
    assert (lm_eval["rules"], lm_eval["parsing"]) == (SETUP["rules"], SETUP["parsing"])
    pytest.importorskip("inspect_ai")
    from convbench_datasets.nc.inspect_task import nc, ncbench_judge

    for function in (nc, ncbench_judge):
        defaults = _defaults(inspect.unwrap(function))
        assert (defaults["rules"], defaults["parsing"]) == (SETUP["rules"], SETUP["parsing"]), function


def test_the_paper_rules_accept_answer_on_incremental_correction_as_table_3_shows() -> None:
    # Table 3: every one of the seven models at 100.00 on Incremental/Correction; with Answer rejected (the
    # released script's list) a model that answers the corrected question would fail every row.
    assert set(paper_results().cells["rag"]["Incremental/Correction"].values()) == {100.0}
    table = pattern_table()
    assert "Answer" in table.acceptable_labels("rag", "incremental-self-correction", "paper")
    assert "Answer" not in table.acceptable_labels("rag", "incremental-self-correction", "released_script")


def _paper_acceptable(set_name: str, task: str) -> list[str]:
    """Appendix B.1 as the released aggregator assigns it, plus Answer on rag incremental-self-correction."""
    extra = ["Answer"] if (set_name, task) == ("rag", "incremental-self-correction") else []
    return _released_acceptable(task) + extra


# Judge answers of every kind: exact labels, spellings only a lenient reading takes ("answer", "pre-closing",
# "silence"), Silence with another label (one of them lower case), a trailing comma, prose.
JUDGE_ANSWERS = ["Answer", "answer", "Repeat", "Partial Repeat", "Paraphrase", "PreClosing", "pre-closing",
                 "GratitudeReceipt, silence", "Silence", "Silence, ", "Silence, Answer", "Acknowledgement",
                 "DetailRequestGrounded", "ChoiceGiving", "Definition\nExample", "The agent answers.", "NonAnswer"]


def test_a_default_run_scores_as_the_released_aggregator_with_the_papers_labels(nc_built: Path, tmp_path: Path) -> None:
    # The same scripted answers, all 720 rows: the default run's pass/fail per row and per task is the
    # aggregator's rule (the independent oracle of tests/nc/test_released_rule.py) with the paper's
    # labels. Before, the lenient default scored such answers several points above the released pipeline.
    judge = ScriptedBackend(lambda messages: pick(messages[-1]["content"], JUDGE_ANSWERS), "judge")
    # JUDGE_ANSWERS holds spellings and prose the exact reading cannot read, on purpose: any share accepted
    run = run_nc(model="baseline:repeat", judge=judge, out=tmp_path / "run", dataset=nc_built,
                 cache=tmp_path / "c.sqlite", progress=False, max_unparsed_rate=1)
    assert len(run.records) == 720
    expected = [oracle(r["judge_output"], _paper_acceptable(r["set"], r["task"])) for r in run.records]
    assert [r["passed"] for r in run.records] == expected
    assert run.results["accuracy"] == pytest.approx(100.0 * sum(expected) / 720)
    lenient = run_nc(model="baseline:repeat", judge=judge, out=tmp_path / "lenient", dataset=nc_built,
                     cache=tmp_path / "c.sqlite", progress=False, parsing="lenient")
    assert lenient.results["accuracy"] != run.results["accuracy"]  # the script is no well-formed-only one


def test_sweep_files_reach_every_reading(nc_built: Path, tmp_path: Path) -> None:
    from convbench_datasets.errors import ConvbenchError
    from convbench_datasets.runs.sweep import run_sweep
    from convbench_datasets.runs.sweep_file import read_sweep

    sweep = {"out": str(tmp_path / "o"), "models": ["baseline:repeat"], "judges": ["baseline:smoke-judge"],
             "benchmarks": {"nc": {"dataset": str(nc_built), "config": "basic", "limit": 3,
                                   "rules": ["paper", "released_script"], "parsing": ["exact", "lenient"]}}}
    cells = read_sweep(sweep).cells
    assert sorted((c.settings["rules"], c.settings["parsing"]) for c in cells) == [
        ("paper", "exact"), ("paper", "lenient"), ("released_script", "exact"), ("released_script", "lenient")]
    result = run_sweep(sweep, progress=False)
    for cell in cells:
        signature = json.loads((result.out / cell.name / "results.json").read_text())["signature"]
        assert (signature["rules"], signature["parsing"]) == (cell.settings["rules"], cell.settings["parsing"])
    with pytest.raises(ConvbenchError, match="benchmarks.nc.parsing: expected one of exact, lenient, got 'strict'"):
        read_sweep({**sweep, "benchmarks": {"nc": {"dataset": str(nc_built), "parsing": "strict"}}})
