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
    turns, problem, extra = parse_turns(text, speakers(INSTANCE), 3)
    assert problem is None
    assert turns == [{"speaker": "Ann", "utterance": "We should vote."}, {"speaker": "Bo", "utterance": "Let's hear Cy."},
                     {"speaker": "Cy", "utterance": "Fine: but quickly."}]
    assert extra == 1  # "Ann: Extra", the fourth turn of three asked for: not used, counted


def test_unknown_speakers_and_prose_are_problems() -> None:
    turns, problem, extra = parse_turns("Dave: I disagree.\nAnn: Why?", speakers(INSTANCE), 5)
    assert turns == [{"speaker": "Ann", "utterance": "Why?"}] and problem == "speaker(s) not among the participants: Dave"
    assert extra == 0
    assert parse_turns("The meeting continued happily.", speakers(INSTANCE), 5) == (
        [], "no line of the form 'Speaker: utterance'", 0)


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
    # a system message (the task, the reply's form; the taxonomy part for that style) and a user message
    # (the instance); a repair adds the rejected reply as the model's own message, then the problem
    vanilla = simulation_prompt(INSTANCE, [], 5, "vanilla", TAXONOMY)
    taxonomy = simulation_prompt(INSTANCE, [{"speaker": "Bo", "utterance": "Go on."}], 5, "taxonomy", TAXONOMY,
                                 problem="x", rejected="Zed: hello")
    assert [m["role"] for m in vanilla] == ["system", "user"]
    assert "Ann: Hello.\nCy: Hi." in vanilla[1]["content"] and "Repetition" not in vanilla[0]["content"] + vanilla[1]["content"]
    assert "Cy: Hi.\nBo: Go on." in taxonomy[1]["content"] and "- Interruption:" in taxonomy[0]["content"]
    assert [m["role"] for m in taxonomy] == ["system", "user", "assistant", "user"]
    assert taxonomy[2]["content"] == "Zed: hello"
    assert taxonomy[3]["content"].startswith("Your previous answer could not be used: x")
    import pytest

    with pytest.raises(ValueError, match="rejected reply"):
        simulation_prompt(INSTANCE, [], 5, "vanilla", TAXONOMY, problem="x")


def test_exact_names_multiline_turns_and_preambles() -> None:
    allowed = ["Mr. Ben Lobb (HuronBruce, CPC)", "The Acting Chair (Mr. Bruce Stanton)", "The Acting Chair", "Ann"]
    text = ("Sure, here are the next turns:\n- **Ann:** first line\nand its second line\n"
            "Mr. Ben Lobb (HuronBruce, CPC): I rise.\nmr. ben lobb: Again.\nThe Acting Chair: Order.")
    turns, problem, _ = parse_turns(text, allowed, 10)
    assert problem is None
    assert turns == [{"speaker": "Ann", "utterance": "first line and its second line"},
                     {"speaker": "Mr. Ben Lobb (HuronBruce, CPC)", "utterance": "I rise."},
                     {"speaker": "Mr. Ben Lobb (HuronBruce, CPC)", "utterance": "Again."},
                     {"speaker": "The Acting Chair", "utterance": "Order."}]
    long_name = "The Minister of Agriculture and Agri-Food and Minister for the Canadian Wheat Board (Hon. X)"
    assert parse_turns(f"{long_name}: Thanks.", [long_name], 1) == ([{"speaker": long_name, "utterance": "Thanks."}], None, 0)


# --- issue #12: prompts, countermeasure, rubric and groups as in the paper ---

SIX = {**INSTANCE, "history": [{"speaker": s, "utterance": f"line {k}."} for k, s in enumerate("Ann Cy Bo Ann Cy Bo".split())]}


def test_vanilla_prompt_asks_only_for_a_human_like_continuation() -> None:
    # The paper's vanilla prompt: continue human-like, mimicking the metadata's and history's style and
    # content, nothing more. Before: "with the hesitations, loose ends and friction of real people".
    # (the paper's section 4: "human-like conversations by referring to the conversation history",
    # "mimic the communication style and content in the metadata and the conversation history")
    text = "\n".join(m["content"] for m in simulation_prompt(INSTANCE, [], 5, "vanilla", TAXONOMY))
    assert "build on what has been said, and keep to the way they speak and to what they talk about, as the" in text
    assert "metadata and the conversation so far show them" in text
    for nudge in ("hesitation", "loose ends", "friction", "idealised", "tidy", "inconsistent", "uncollaborative",
                  *(b.name for b in TAXONOMY)):
        assert nudge.lower() not in text.lower()


def test_countermeasure_prompt_asks_for_the_copy_first() -> None:
    # the paper's appendix C.2, in its vanilla system prompt (Table 17): "include the five most recent turns
    # in the response before generating the next turn"
    messages = simulation_prompt(SIX, [], 5, "vanilla", TAXONOMY, problem="bad", copied=5, rejected="Cy: hm")
    assert "Begin every answer by copying the 5 most recent turns of the conversation" in messages[0]["content"]
    assert "Copy the last 5 turns of the conversation above, then write the next 5 turns (10 lines in all)." in \
        messages[1]["content"]
    assert "first the last 5 turns of the conversation copied exactly, then 5 new turns" in messages[3]["content"]
    plain = simulation_prompt(SIX, [], 5, "vanilla", TAXONOMY)
    assert "copy" not in (plain[0]["content"] + plain[1]["content"]).lower()


def test_copied_turns_are_removed_and_a_missing_copy_is_a_problem() -> None:
    from convbench_datasets.cocoeval.simulation import parse_continuation

    so_far = [{"speaker": "Ann", "utterance": "new 0."}]
    # the last 5 turns of history + so_far: history turns 2..5 (Bo, Ann, Cy, Bo), then so_far's Ann
    copy = "Bo: line 2.\nAnn: line 3.\nCy: line 4.\nBo: line 5.\nAnn: new 0.\n"
    turns, problem, extra = parse_continuation(copy + "Cy: fresh one.\nBo: fresh two.\nAnn: too many.", SIX,
                                               so_far, 2, copied=5)
    assert problem is None
    assert turns == [{"speaker": "Cy", "utterance": "fresh one."}, {"speaker": "Bo", "utterance": "fresh two."}]
    assert extra == 1  # 5 copied + 2 asked for; the eighth turn is not used, and counted
    # no copy: which turns are new cannot be told, so none is used
    turns, problem, extra = parse_continuation("Cy: fresh one.\nBo: fresh two.", SIX, so_far, 2, copied=5)
    assert turns == [] and problem == ("the reply does not open with a copy of the last 5 turns "
                                       "(speakers ['Cy', 'Bo'], expected ['Bo', 'Ann', 'Cy', 'Bo', 'Ann'])")
    assert parse_continuation(copy, SIX, so_far, 2, copied=5) == ([], "no new turn after the 5 copied ones", 0)


def test_overall_judge_gets_a_rubric_for_every_score_range() -> None:
    from convbench_datasets.cocoeval.simulation import judge_prompt, rubric

    text = judge_prompt("overall", INSTANCE, INSTANCE["history"], TAXONOMY)[0]["content"]  # the system message
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


def test_behaviour_judge_example_is_neutral_and_uses_the_taxonomys_own_names(tmp_path) -> None:
    # The example favours no type: every type of the taxonomy, in its order and under its own name, with no
    # turn listed (before: '{"Repetition": [3, 17], ...}', flagging the type the paper finds over-produced).
    # A user's taxonomy gets its own names, so a judge that copies the example gives a parseable answer.
    import json
    import re

    from convbench_datasets.cocoeval.simulation import judge_prompt

    continuation = [{"speaker": "Ann", "utterance": f"turn {k}"} for k in range(30)]
    text = judge_prompt("behaviours", INSTANCE, continuation, TAXONOMY)[0]["content"]
    example = json.loads(re.search(r"with no turn listed: (\{.*\})$", text).group(1))
    assert list(example) == [b.name for b in TAXONOMY] and all(value == [] for value in example.values())
    assert "a list of turn numbers from 1 to 30 (empty when no turn shows the type)" in text
    mine = tmp_path / "t.yaml"
    mine.write_text("behaviours:\n  - {name: Insult, group: uncollaborative, definition: d, example: e}\n"
                    "  - {name: Flattery, group: inconsistent, definition: d, example: e}\n")
    custom = load_taxonomy(mine)
    text = judge_prompt("behaviours", INSTANCE, continuation[:5], custom)[0]["content"]
    assert text.endswith('with no turn listed: {"Insult": [], "Flattery": []}')
    assert "Off Topic" not in text and "Repetition" not in text
    assert parse_behaviours('{"Insult": [], "Flattery": []}', custom, 5) == ({"Insult": [], "Flattery": []}, None)
