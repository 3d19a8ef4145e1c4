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
