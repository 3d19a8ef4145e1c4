"""CoCoEval's defaults, each pinned against the paper's own description (quoted, briefly, in each test).

Paper: Kamoi et al. (2026), "Evaluating LLM-Simulated Conversations in Modeling Inconsistent and
Uncollaborative Behaviors in Human Social Interaction"; the sections and tables are named per test.
Expected values are derived by hand in the comments.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from convbench_datasets.cocoeval.run import (

    CoCoEvalPlan,

    JUDGE_MAX_NEW_TOKENS,

    REASONING_JUDGE_MAX_NEW_TOKENS,

    judge_token_limit,

    score_records,

)

from convbench_datasets.runs.api import run_cocoeval
from convbench_datasets.cocoeval.simulation import judge_prompt, rubric, simulation_prompt
from convbench_datasets.cocoeval.taxonomy import load_taxonomy

TAXONOMY = load_taxonomy()
INSTANCE = {
    "metadata": {"setting": "a meeting", "participants": ["Ann (chair)", "Bo"], "goals": ["decide"]},
    "summary": "SUMMARY-MARK: Ann proposed a yellow case.",
    "history": [{"speaker": "Ann", "utterance": "Hello."}, {"speaker": "Bo", "utterance": "Hi."}],
}


def test_the_repetition_countermeasure_is_on_by_default_everywhere() -> None:
    # C.2: "as shown in Table 17 [the vanilla system prompt], we instruct simulation LLMs to include the five
    # most recent turns in the response ... and set presence_penalty = 2.0": the paper's main runs use it.
    assert inspect.signature(run_cocoeval).parameters["repetition_countermeasure"].default is True
    plan = CoCoEvalPlan()
    assert plan.copied == 5 and plan.params.presence_penalty == 2.0
    assert CoCoEvalPlan(repetition_countermeasure=False).params.presence_penalty is None
    pytest.importorskip("inspect_ai")
    from convbench_datasets.cocoeval.inspect_task import cocoeval, cocoeval_simulate

    assert inspect.signature(cocoeval).parameters["repetition_countermeasure"].default is True
    assert inspect.signature(cocoeval_simulate).parameters["copied"].default == 5


def test_the_countermeasure_is_in_the_system_message() -> None:
    # Table 17 is "System prompt of the vanilla prompt": the copy instruction lives there, the instance in
    # the user message (Table 18).
    system, user = simulation_prompt(INSTANCE, [], 5, "vanilla", TAXONOMY, copied=5)
    assert system["role"] == "system" and "copying the 5 most recent turns" in system["content"]
    assert user["role"] == "user" and "Ann: Hello." in user["content"] and "Ann: Hello." not in system["content"]


def test_the_ablation_is_a_named_cli_flag_and_sweep_setting(tmp_path: Path) -> None:
    from convbench_datasets.cocoeval.run import BENCHMARK
    from convbench_datasets.runs.sweep_file import read_sweep

    (flag,) = [o for o in BENCHMARK.options if o.dest == "repetition_countermeasure"]
    assert flag.flag == "--no-repetition-countermeasure"
    assert flag.settings(True) == {"repetition_countermeasure": False}  # given: the ablation
    assert flag.settings(False) == {"repetition_countermeasure": True}  # not given: the paper's default

    def cell(block: dict) -> dict:
        sweep = {"out": str(tmp_path / "o"), "models": ["baseline:repeat"], "judges": ["baseline:silence"],
                 "benchmarks": {"cocoeval": block}}
        (only,) = read_sweep(sweep).cells
        return only.settings

    # a sweep names it by the run keyword or by the flag's spelling; both set the keyword to False
    assert cell({"repetition_countermeasure": False})["repetition_countermeasure"] is False
    assert cell({"no_repetition_countermeasure": True})["repetition_countermeasure"] is False


def test_the_taxonomy_prompt_asks_for_the_historys_frequencies_and_no_more() -> None:
    # Section 4: taxonomy-guided prompting instructs "to incorporate inconsistent and uncollaborative behaviors
    # at frequencies comparable to those observed in the conversation history"; 5.3: "this prompt does not
    # instruct the model to increase these behaviors". Table 19 is a part "added to the vanilla [system] prompt".
    system = simulation_prompt(INSTANCE, [], 5, "taxonomy", TAXONOMY)[0]["content"]
    vanilla = simulation_prompt(INSTANCE, [], 5, "vanilla", TAXONOMY)[0]["content"]
    assert "Let each occur in the continuation about as often as it occurs in the conversation you are given" in system
    assert "neither more nor less often" in system
    assert all(f"- {b.name}: {b.definition}" in system for b in TAXONOMY)
    assert system.startswith(vanilla.split("\n\n")[0])  # the vanilla system prompt, then the added part
    for nudge in ("not tidy", "tidy", "as often as real people", "real people"):  # the earlier nudge
        assert nudge not in system


def test_the_overall_rubric_follows_the_papers_definitions() -> None:
    # Section 3: "Consistency includes coherence with previous utterances, adherence to the specified persona,
    # and correctness with respect to world knowledge, as well as the avoidance of unnecessary redundancy and
    # repetition. Collaborativeness is the extent to which a speaker's contributions support shared objectives
    # and help other participants achieve their goals, without delaying or impeding progress and agreement."
    spec = rubric()
    consistency = spec["consistency"]["question"]
    for criterion in ("coherent with what was said before", "role and persona", "correct about facts of the world",
                      "needless redundancy and repetition"):
        assert criterion in consistency, criterion
    collaborativeness = spec["collaborativeness"]["question"]
    for criterion in ("support the shared objectives", "help the other participants reach their goals",
                      "without delaying or impeding progress and agreement"):
        assert criterion in collaborativeness, criterion
    # the top band names each consistency criterion too (persona and world knowledge were missing)
    top = spec["consistency"]["ranges"][-1]["description"]
    assert "role and persona" in top and "correct about the world" in top


def test_the_overall_judge_sees_the_summary_and_has_its_rubric_as_system_prompt() -> None:
    # Section 3.2: the input is (M, S, x), the summary S included; Table 20 is "Part of the system prompt for
    # LLM-as-a-Judge for the overall evaluation".
    system, user = judge_prompt("overall", INSTANCE, INSTANCE["history"], TAXONOMY)
    assert system["role"] == "system" and "consistency: " + rubric()["consistency"]["question"] in system["content"]
    assert user["role"] == "user" and "SUMMARY-MARK" in user["content"]
    (behaviours,) = judge_prompt("behaviours", INSTANCE, INSTANCE["history"], TAXONOMY)
    assert "SUMMARY-MARK" in behaviours["content"]


def test_a_judge_repair_shows_the_rejected_answer() -> None:
    messages = judge_prompt("overall", INSTANCE, INSTANCE["history"], TAXONOMY, problem="no JSON object in the answer",
                            rejected="They cooperate well.")
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[2]["content"] == "They cooperate well."
    assert messages[3]["content"].startswith("Your previous answer could not be used: no JSON object in the answer")


def test_the_judge_token_limit_leaves_a_reasoning_judge_room() -> None:
    # Section 3.3: "We use OpenAI o4-mini as LLM-as-a-Judge"; its hidden reasoning counts against
    # max_completion_tokens, so convbench gives o-series judges 25,000 tokens, other judges 1,024.
    assert judge_token_limit("openai:o4-mini") == REASONING_JUDGE_MAX_NEW_TOKENS == 25_000
    assert judge_token_limit("openai:o3") == 25_000
    assert judge_token_limit("openai:gpt-4.1") == JUDGE_MAX_NEW_TOKENS == 1024
    assert judge_token_limit("hf:o4-mini-lookalike") == 1024  # a local model is not OpenAI's reasoning model
    assert inspect.signature(run_cocoeval).parameters["judge_max_new_tokens"].default is None


def _records(model: list[int], human: list[int], ratings: list[int], conversation: str) -> list[dict]:
    """Instances of one source conversation: model and human Repetition counts and a model rating each."""
    return [{"id": f"i{k}", "source": "s", "conversation_id": conversation, "excluded": None, "error": None,
             "simulation_complete": True, "simulation_problems": [], "simulation_persisting_problems": 0,
             "unusable_judge_answers": [],
             "model_behaviours": {"Repetition": list(range(1, m + 1))},
             "human_behaviours": {"Repetition": list(range(1, h + 1))},
             "model_overall": {"consistency": r, "collaborativeness": r},
             "human_overall": {"consistency": 5, "collaborativeness": 5}}
            for k, (m, h, r) in enumerate(zip(model, human, ratings))]


def test_intervals_resample_instances_by_default_for_frequencies_and_ratings_alike() -> None:
    # Table 4: "Each setup is evaluated on 300 simulated conversations ... The intervals represent 95% bootstrap
    # confidence intervals": the resampled unit is the conversation, one per instance. Four instances cut from
    # ONE meeting: resampling instances gives a real interval (model Repetition 0, 1, 2, 3: mean 1.5); resampling
    # the meeting can only draw the data itself, so both intervals shrink to the mean (1.5, and rating 6.5).
    records = _records([0, 1, 2, 3], [1, 1, 1, 1], [5, 6, 7, 8], "one-meeting")
    by_instance = score_records(records, ["Repetition"], 200, 0)
    low, high = by_instance["intervals"]["model_mean"]["Repetition"]
    assert low < 1.5 < high
    low, high = by_instance["overall"]["model"]["consistency"]["interval"]
    assert low < 6.5 < high
    by_meeting = score_records(records, ["Repetition"], 200, 0, bootstrap_unit="source_conversation")
    assert by_meeting["intervals"]["model_mean"]["Repetition"] == [1.5, 1.5]
    assert by_meeting["overall"]["model"]["consistency"]["interval"] == [6.5, 6.5]  # ratings follow the same unit
    assert CoCoEvalPlan().bootstrap_unit == "instance"
    with pytest.raises(Exception, match="bootstrap unit must be one of"):
        CoCoEvalPlan(bootstrap_unit="meeting")


def test_turns_beyond_those_asked_for_are_counted(cocoeval_built: Path, tmp_path: Path) -> None:
    # A scripted simulator that writes one turn more than asked each time: 5 turns per call, 30 turns, so 6
    # replies per instance and 6 extra turns, 12 for two instances; none of them is kept.
    from tests.cocoeval.test_cocoeval_run import Scripted
    from tests.support.cocoeval_script import answer, asked, first_speaker, is_simulation

    from convbench_datasets.engine import Generation

    class OneTooMany(Scripted):
        def generate(self, prompts, params):  # type: ignore[no-untyped-def]
            for i, generation in super().generate(prompts, params):
                if is_simulation(prompts[i]):
                    speaker = first_speaker(prompts[i])
                    lines = [f"{speaker}: simulated line {k}" for k in range(asked(prompts[i]).wanted + 1)]
                    generation = Generation(answer(prompts[i], lines))
                yield i, generation

    run = run_cocoeval(model=OneTooMany(), judge=Scripted(), out=tmp_path / "run", config="qmsum_committee", limit=2,
                       dataset=cocoeval_built, cache=tmp_path / "c.sqlite", n_bootstrap=0, progress=False)
    assert [r["simulation_extra_turns"] for r in run.records] == [6, 6]
    assert run.results["simulation_extra_turns"] == 12 and run.results["stats"]["simulation_extra_turns"] == 12
    assert all(len(r["simulated"]) == 30 and r["simulation_problems"] == [] for r in run.records)
    assert not any(t["utterance"] == "simulated line 5" for r in run.records for t in r["simulated"])
