"""The CoCoEval smoke-test answerers (``baseline:cocoeval-sim``, ``baseline:cocoeval-judge``): their replies
parse, follow their documented rules, and carry a run end to end offline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convbench_datasets.answerers import answerer
from convbench_datasets.cocoeval.simulation import (
    judge_prompt,
    parse_behaviours,
    parse_continuation,
    parse_overall,
    parse_turns,
    simulation_prompt,
    template_fields,
)
from convbench_datasets.cocoeval.simulation_loop import InstanceSimulation
from convbench_datasets.cocoeval.smoke_judge import judge_answer
from convbench_datasets.cocoeval.smoke_simulator import simulated_turns
from convbench_datasets.cocoeval.taxonomy import load_taxonomy

TAXONOMY = load_taxonomy()
# 30 history turns, as convbench's instances have; a participant listed with a side in parentheses
SPEAKERS = ("Ann Lee", "Bo", "Dr. C. Ortiz")
INSTANCE = {
    "metadata": {"setting": "a committee meeting", "participants": ["Ann Lee (chair)", "Bo", "Dr. C. Ortiz"],
                 "goals": ["agree on the budget"]},
    "summary": "They opened the meeting.",
    "history": [{"speaker": SPEAKERS[k % 3], "utterance": f"Point {k}: the budget, item {k}."} for k in range(30)],
}


def test_the_answerers_are_registered_baselines() -> None:
    assert answerer("cocoeval-sim") is simulated_turns and answerer("cocoeval-judge") is judge_answer


@pytest.mark.parametrize("copied", [0, 5])
@pytest.mark.parametrize("turns_per_call", [1, 5, 30])
def test_each_reply_parses_with_the_turns_asked_for(turns_per_call: int, copied: int) -> None:
    # the rule: the new turn at position p (history first) says turn p mod min(30, L) again, L the turns
    # shown; with 30 history turns and s simulated so far, the reply's new turns are history[s:s + wanted]
    for so_far in (0, 25):
        wanted = min(turns_per_call, 30 - so_far)
        shown = INSTANCE["history"][:so_far]
        reply = simulated_turns(simulation_prompt(INSTANCE, shown, wanted, "vanilla", TAXONOMY, copied=copied))
        assert len(reply.splitlines()) == copied + wanted  # the copy, then exactly the turns asked for
        turns, problem, extra = parse_continuation(reply, INSTANCE, shown, wanted, copied)
        assert problem is None and extra == 0
        assert turns == INSTANCE["history"][so_far:so_far + wanted]


@pytest.mark.parametrize("style", ["vanilla", "taxonomy"])
@pytest.mark.parametrize("copied", [0, 5])
@pytest.mark.parametrize("turns_per_call", [1, 5, 30])
def test_a_simulation_completes_with_no_problem(turns_per_call: int, copied: int, style: str) -> None:
    sim = InstanceSimulation(INSTANCE, TAXONOMY, turns_per_call, style, max_repairs=0, max_new_tokens=1024,
                             copied=copied)
    while (request := sim.next_request()) is not None:
        sim.take(simulated_turns(request.messages), "stop")
    result = sim.result()
    # 30 / turns_per_call replies, each usable: the continuation is the history said again, turn for turn
    assert result["complete"] and result["problems"] == [] and result["extra_turns"] == 0
    assert len(result["replies"]) == 30 // turns_per_call and result["turns"] == INSTANCE["history"]


def test_a_short_history_wraps_around() -> None:
    short = {**INSTANCE, "history": INSTANCE["history"][:2]}  # Ann Lee, Bo
    reply = simulated_turns(simulation_prompt(short, [], 3, "vanilla", TAXONOMY, copied=1))
    # copy of turn 1; then positions 2, 3, 4 say turns 2 mod 2 = 0, 1, 0 again (L = 2 < 30)
    assert reply.splitlines() == ["Bo: Point 1: the budget, item 1.", "Ann Lee: Point 0: the budget, item 0.",
                                  "Bo: Point 1: the budget, item 1.", "Ann Lee: Point 0: the budget, item 0."]


def test_the_judge_flags_a_turn_that_repeats_an_earlier_one() -> None:
    continuation = [
        {"speaker": "Bo", "utterance": "POINT 3 - the budget; item 3"},  # history turn 3's words: Repetition
        {"speaker": "Ann Lee", "utterance": "Shall we vote?"},  # new
        {"speaker": "Dr. C. Ortiz", "utterance": "shall we vote"},  # turn 2's words, another speaker: Repetition
        {"speaker": "Bo", "utterance": "..."},  # no word: never a Repetition
        {"speaker": "Ann Lee", "utterance": "--"},  # no word either, though its plain form ("") is turn 4's
    ]
    answer = judge_answer(judge_prompt("behaviours", INSTANCE, continuation, TAXONOMY))
    found, problem = parse_behaviours(answer, TAXONOMY, len(continuation))
    assert problem is None
    assert found == {b.name: [1, 3] if b.name == "Repetition" else [] for b in TAXONOMY}
    scores, problem = parse_overall(judge_answer(judge_prompt("overall", INSTANCE, continuation, TAXONOMY)))
    assert problem is None and scores == {"consistency": 10 - 2, "collaborativeness": 5}


def test_the_judge_rates_consistency_at_least_1() -> None:
    said_again = INSTANCE["history"][:12]  # 12 Repetitions: 10 - 12 < 1
    scores, problem = parse_overall(judge_answer(judge_prompt("overall", INSTANCE, said_again, TAXONOMY)))
    assert problem is None and scores == {"consistency": 1, "collaborativeness": 5}
    found, problem = parse_behaviours(judge_answer(judge_prompt("behaviours", INSTANCE, said_again, TAXONOMY)),
                                      TAXONOMY, 12)
    assert problem is None and found["Repetition"] == list(range(1, 13))


def test_the_judge_answers_with_a_users_taxonomy(tmp_path: Path) -> None:
    # no Repetition type in it: the answer names the file's types, each with no turn
    path = tmp_path / "taxonomy.yaml"
    path.write_text("behaviours:\n"
                    "  - {name: Echo, group: inconsistent, definition: Says it again., example: 'A: x. A: x.'}\n"
                    "  - {name: Drift, group: uncollaborative, definition: Leaves the topic., example: 'B: rain.'}\n")
    taxonomy = load_taxonomy(path)
    answer = judge_answer(judge_prompt("behaviours", INSTANCE, INSTANCE["history"][:3], taxonomy))
    assert parse_behaviours(answer, taxonomy, 3) == ({"Echo": [], "Drift": []}, None)


def test_a_request_they_cannot_read_is_an_unusable_answer() -> None:
    # each answers the other's request with text that its reader turns down, never with a made-up answer
    simulation = simulation_prompt(INSTANCE, [], 5, "vanilla", TAXONOMY, copied=5)
    assert parse_behaviours(judge_answer(simulation), TAXONOMY, 5) == (None, "no JSON object in the answer")
    judging = judge_prompt("behaviours", INSTANCE, INSTANCE["history"][:3], TAXONOMY)
    assert parse_turns(simulated_turns(judging), ["Bo"], 5) == ([], "no line of the form 'Speaker: utterance'", 0)


def test_template_fields_read_a_prompt_back() -> None:
    assert template_fields("a $x b $y c $x", "a 1 b 2 c 1") == {"x": "1", "y": "2"}
    assert template_fields("a $x b $y c $x", "a 1 b 2 c 3") is None  # a repeated placeholder has one value
    assert template_fields("$$$x", "$5") == {"x": "5"} and template_fields("plain", "plain") == {}
    with pytest.raises(ValueError, match="meet"):
        template_fields("$x$y", "12")


def _smoke_run(built: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[dict, list[dict], str]:
    from convbench_datasets.cli import main

    code = main(["run", "cocoeval", "--model", "baseline:cocoeval-sim", "--judge", "baseline:cocoeval-judge",
                 "--dataset", str(built), "--sample", "4", "--bootstrap", "100", "--out", str(out),
                 "--cache", str(out.parent / f"{out.name}.sqlite"), "--no-progress"])
    assert code == 0
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    return json.loads((out / "results.json").read_text()), records, capsys.readouterr().out


def test_the_smoke_run_compares_every_instance(cocoeval_built: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    results, records, printed = _smoke_run(cocoeval_built, tmp_path / "first", capsys)
    assert results["n"] == results["n_compared"] == 4 and results["errors"] == 0
    assert results["simulation_problems"] == 0 and results["unusable_judge_answers"] == {
        "model behaviours": 0, "model overall": 0, "human behaviours": 0, "human overall": 0}
    assert len({r["source"] for r in records}) == 4  # --sample 4: one instance per source of the build
    rows = {r["id"]: r for r in _rows(cocoeval_built)}
    # the simulator says the history again, turn for turn (continuation turn k is history turn k), so the
    # judge finds every simulated turn in the context: 30 Repetitions, consistency max(1, 10 - 30) = 1
    assert all(r["simulated"] == rows[r["id"]]["history"] for r in records)
    assert all(r["model_behaviours"]["Repetition"] == list(range(1, 31)) for r in records)
    assert results["model_mean"] == {b.name: 30.0 if b.name == "Repetition" else 0.0 for b in TAXONOMY}
    assert all(r["model_overall"] == {"consistency": 1, "collaborativeness": 5} for r in records)
    # the human side: Repetition only, and a consistency of 10 minus its count (at least 1)
    assert all(r["human_overall"] == {"consistency": max(1, 10 - len(r["human_behaviours"]["Repetition"])),
                                      "collaborativeness": 5} for r in records)
    assert all(n == 0 for name, n in results["human_mean"].items() if name != "Repetition")
    assert ("smoke test: baseline:cocoeval-sim and baseline:cocoeval-judge are baselines following fixed rules, not "
            "models") in printed
    # the same numbers again, with a cache of its own (the answerers are deterministic, not the cache)
    again, _, _ = _smoke_run(cocoeval_built, tmp_path / "second", capsys)
    for key in ("n", "n_compared", "model_mean", "human_mean", "mismatch", "overall"):
        assert again[key] == results[key], key


def _rows(built: Path) -> list[dict]:
    import pyarrow.parquet as pq

    return [row for path in sorted(built.glob("*/test-*.parquet")) for row in pq.read_table(path).to_pylist()]
