"""Parsing simulated turns and judge JSON, including malformed answers."""

from __future__ import annotations

from convbench_datasets.cocoeval.simulation import (
    occurrences,
    parse_behaviours,
    parse_overall,
    parse_turns,
    simulation_prompt,
    speakers,
)
from convbench_datasets.cocoeval.taxonomy import load_taxonomy

TAXONOMY = load_taxonomy()
INSTANCE = {
    "metadata": {"setting": "a meeting", "participants": ["Ann (for the motion)", "Bo (moderator)"], "goals": ["decide"]},
    "summary": "", "history": [{"speaker": "Ann", "utterance": "Hello."}, {"speaker": "Cy", "utterance": "Hi."}],
}


def test_speakers_come_from_history_and_metadata() -> None:
    assert speakers(INSTANCE) == ["Ann", "Cy", "Bo"]


def test_turns_parse_with_numbering_bold_and_sides() -> None:
    text = "1. **Ann**: We should vote.\nBo (moderator): Let's hear Cy.\n\ncy: Fine: but quickly.\nAnn: Extra"
    turns, problem = parse_turns(text, speakers(INSTANCE), 3)
    assert problem is None
    assert turns == [{"speaker": "Ann", "utterance": "We should vote."}, {"speaker": "Bo", "utterance": "Let's hear Cy."},
                     {"speaker": "Cy", "utterance": "Fine: but quickly."}]


def test_unknown_speakers_and_prose_are_problems() -> None:
    turns, problem = parse_turns("Dave: I disagree.\nAnn: Why?", speakers(INSTANCE), 5)
    assert turns == [{"speaker": "Ann", "utterance": "Why?"}] and problem == "speaker(s) not among the participants: Dave"
    assert parse_turns("The meeting continued happily.", speakers(INSTANCE), 5) == ([], "no line of the form 'Speaker: utterance'")


def test_behaviour_json() -> None:
    found, problem = parse_behaviours('Sure! {"Repetition": [3, 1, 3], "Off Topic": []}', TAXONOMY, 30)
    assert problem is None and found["Repetition"] == [1, 3] and found["Interruption"] == []
    assert occurrences({"Repetition": [1, 3], "Off Topic": [2]}) == ["Repetition", "Repetition", "Off Topic"]
    assert parse_behaviours("no json here", TAXONOMY, 30) == (None, "no JSON object in the answer")
    assert parse_behaviours('{"Repetition": [1,}', TAXONOMY, 30)[1].startswith("invalid JSON")
    assert parse_behaviours('{"Gossip": [1]}', TAXONOMY, 30) == (None, "unknown behaviour type(s): Gossip")
    assert parse_behaviours('{"Repetition": [31]}', TAXONOMY, 30) == (None, "Repetition: turn number(s) [31] outside 1..30")
    assert parse_behaviours('{"Repetition": "3"}', TAXONOMY, 30)[1] == "Repetition: expected a list of turn numbers, got '3'"


def test_overall_json() -> None:
    assert parse_overall('{"consistency": 7, "collaborativeness": 3}') == ({"consistency": 7, "collaborativeness": 3}, None)
    assert parse_overall('{"consistency": 11, "collaborativeness": 3}')[1] == "consistency must be an integer from 1 to 10, got 11"


def test_prompts_carry_context_and_repairs() -> None:
    vanilla = simulation_prompt(INSTANCE, [], 5, "vanilla", TAXONOMY)
    taxonomy = simulation_prompt(INSTANCE, [{"speaker": "Bo", "utterance": "Go on."}], 5, "taxonomy", TAXONOMY, problem="x")
    assert "Ann: Hello.\nCy: Hi." in vanilla[0]["content"] and "Repetition" not in vanilla[0]["content"]
    assert "Cy: Hi.\nBo: Go on." in taxonomy[0]["content"] and "- Interruption:" in taxonomy[0]["content"]
    assert taxonomy[1]["content"].startswith("Your previous answer could not be used: x")


def test_exact_names_multiline_turns_and_preambles() -> None:
    allowed = ["Mr. Ben Lobb (HuronBruce, CPC)", "The Acting Chair (Mr. Bruce Stanton)", "The Acting Chair", "Ann"]
    text = ("Sure, here are the next turns:\n- **Ann:** first line\nand its second line\n"
            "Mr. Ben Lobb (HuronBruce, CPC): I rise.\nmr. ben lobb: Again.\nThe Acting Chair: Order.")
    turns, problem = parse_turns(text, allowed, 10)
    assert problem is None
    assert turns == [{"speaker": "Ann", "utterance": "first line and its second line"},
                     {"speaker": "Mr. Ben Lobb (HuronBruce, CPC)", "utterance": "I rise."},
                     {"speaker": "Mr. Ben Lobb (HuronBruce, CPC)", "utterance": "Again."},
                     {"speaker": "The Acting Chair", "utterance": "Order."}]
    long_name = "The Minister of Agriculture and Agri-Food and Minister for the Canadian Wheat Board (Hon. X)"
    assert parse_turns(f"{long_name}: Thanks.", [long_name], 1) == ([{"speaker": long_name, "utterance": "Thanks."}], None)


# --- issue #12: prompts, countermeasure, rubric and groups as in the paper ---

SIX = {**INSTANCE, "history": [{"speaker": s, "utterance": f"line {k}."} for k, s in enumerate("Ann Cy Bo Ann Cy Bo".split())]}


def test_vanilla_prompt_asks_only_for_a_human_like_continuation() -> None:
    # The paper's vanilla prompt: continue human-like, mimicking the metadata's and history's style and
    # content, nothing more. Before: "with the hesitations, loose ends and friction of real people".
    text = simulation_prompt(INSTANCE, [], 5, "vanilla", TAXONOMY)[0]["content"]
    assert "human-like way, mimicking the style and content" in text
    for nudge in ("hesitation", "loose ends", "friction", "idealised", "tidy", *(b.name for b in TAXONOMY)):
        assert nudge.lower() not in text.lower()


def test_countermeasure_prompt_asks_for_the_copy_first() -> None:
    messages = simulation_prompt(SIX, [], 5, "vanilla", TAXONOMY, problem="bad", copied=5)
    assert "First copy the last 5 turns" in messages[0]["content"] and "(10 lines in all)" in messages[0]["content"]
    assert "first the last 5 turns of the conversation copied exactly, then 5 new turns" in messages[1]["content"]


def test_copied_turns_are_removed_and_a_missing_copy_is_a_problem() -> None:
    from convbench_datasets.cocoeval.simulation import parse_continuation

    so_far = [{"speaker": "Ann", "utterance": "new 0."}]
    # the last 5 turns of history + so_far: history turns 2..5 (Bo, Ann, Cy, Bo), then so_far's Ann
    copy = "Bo: line 2.\nAnn: line 3.\nCy: line 4.\nBo: line 5.\nAnn: new 0.\n"
    turns, problem = parse_continuation(copy + "Cy: fresh one.\nBo: fresh two.", SIX, so_far, 2, copied=5)
    assert problem is None
    assert turns == [{"speaker": "Cy", "utterance": "fresh one."}, {"speaker": "Bo", "utterance": "fresh two."}]
    # no copy: which turns are new cannot be told, so none is used
    turns, problem = parse_continuation("Cy: fresh one.\nBo: fresh two.", SIX, so_far, 2, copied=5)
    assert turns == [] and problem == ("the reply does not open with a copy of the last 5 turns "
                                       "(speakers ['Cy', 'Bo'], expected ['Bo', 'Ann', 'Cy', 'Bo', 'Ann'])")
    assert parse_continuation(copy, SIX, so_far, 2, copied=5) == ([], "no new turn after the 5 copied ones")


def test_overall_judge_gets_a_rubric_for_every_score_range() -> None:
    from convbench_datasets.cocoeval.simulation import judge_prompt, rubric

    text = judge_prompt("overall", INSTANCE, INSTANCE["history"], TAXONOMY)[0]["content"]
    for scale, spec in rubric().items():
        assert f"{scale}: {spec['question']}" in text
        # five ranges per scale, 1-2 .. 9-10, each with its description (templates/rubric.yaml)
        assert [f"{b['low']}-{b['high']}" for b in spec["ranges"]] == ["1-2", "3-4", "5-6", "7-8", "9-10"]
        assert all(f"  {b['low']}-{b['high']}: {b['description']}" in text for b in spec["ranges"])
    assert '{"consistency": N, "collaborativeness": N}' in text


def test_a_rubric_with_a_gap_is_refused() -> None:
    import pytest

    from convbench_datasets.cocoeval.simulation import check_rubric
    from convbench_datasets.errors import ConvbenchError

    gap = {"consistency": {"question": "q", "ranges": [{"low": 1, "high": 5, "description": "d"},
                                                       {"low": 7, "high": 10, "description": "d"}]}}
    with pytest.raises(ConvbenchError, match=r"consistency: ranges must cover 1 to 10 once each, got scores \[1, 2, 3, 4, 5, 7"):
        check_rubric(gap, "r.yaml")


def test_taxonomy_groups_five_and_five_with_unclear_intent_uncollaborative() -> None:
    # the paper's results: five inconsistent types, five uncollaborative ones including Unclear Intent
    groups = {g: [b.name for b in TAXONOMY if b.group == g] for g in ("inconsistent", "uncollaborative")}
    assert groups == {"inconsistent": ["Repetition", "Redundant Information", "Logical Contradiction", "Misunderstanding",
                                       "Wrong Information"],
                      "uncollaborative": ["Unclear Intent", "Under Answering", "Off Topic", "Persistent Disagreement",
                                          "Interruption"]}
    from convbench_datasets.cocoeval.simulation import judge_prompt

    text = judge_prompt("behaviours", INSTANCE, INSTANCE["history"], TAXONOMY)[0]["content"]
    uncollaborative = text.split("Uncollaborative behaviour: ")[1]
    assert "- Unclear Intent:" in uncollaborative and "- Repetition:" not in uncollaborative


def test_group_names_are_read_from_the_taxonomy_file(tmp_path) -> None:
    import pytest

    from convbench_datasets.cocoeval.taxonomy import load_groups
    from convbench_datasets.errors import ConvbenchError

    mine = tmp_path / "t.yaml"
    mine.write_text("groups:\n  rude: Impolite turns.\nbehaviours:\n"
                    "  - {name: Insult, group: rude, definition: d, example: e}\n")
    assert load_taxonomy(mine)[0].group_definition == "Impolite turns." and load_groups(mine) == {"rude": "Impolite turns."}
    mine.write_text("behaviours:\n  - {name: Insult, group: rude, definition: d, example: e}\n")
    with pytest.raises(ConvbenchError, match=r"behaviours\[0\]: field 'group' must be one of \('inconsistent', 'uncollaborative'\)"):
        load_taxonomy(mine)


def test_behaviour_judge_example_uses_the_taxonomys_own_names(tmp_path) -> None:
    # a user's taxonomy without "Repetition" or "Off Topic": the prompt's example names its own first two
    # types (first at turns 3 and 17, second at none), so a judge that copies it gives a parseable answer
    import json
    import re

    from convbench_datasets.cocoeval.simulation import judge_prompt

    mine = tmp_path / "t.yaml"
    mine.write_text("behaviours:\n  - {name: Insult, group: uncollaborative, definition: d, example: e}\n"
                    "  - {name: Flattery, group: inconsistent, definition: d, example: e}\n"
                    "  - {name: Silence, group: uncollaborative, definition: d, example: e}\n")
    custom = load_taxonomy(mine)
    continuation = [{"speaker": "Ann", "utterance": f"turn {k}"} for k in range(30)]
    text = judge_prompt("behaviours", INSTANCE, continuation, custom)[0]["content"]
    example = re.search(r"e\.g\. (\{.*\}), and nothing else", text).group(1)
    assert example == '{"Insult": [3, 17], "Flattery": []}'
    assert "Off Topic" not in text and "Repetition" not in text
    assert parse_behaviours(example, custom, 30) == ({"Insult": [3, 17], "Flattery": [], "Silence": []}, None)
    # the built-in taxonomy's example is built the same way; a short continuation keeps the numbers in range
    short = judge_prompt("behaviours", INSTANCE, continuation[:5], TAXONOMY)[0]["content"]
    assert 'e.g. {"Repetition": [3], "Redundant Information": []}, and nothing else' in short
    assert parse_behaviours(json.dumps({"Repetition": [3]}), TAXONOMY, 5)[1] is None
