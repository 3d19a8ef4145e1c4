"""Each NICO task's request holds what the paper's appendix B gives it, and nothing more.

The paper (Sun et al., 2024, appendix B; section 5.1 for what sets the tasks apart):
- open-domain dialog: "CharacterA: sents1. CharacterB: sents2. ... CharacterA: sents5. CharacterB:",
  the dialogue one turn a line and the next speaker's label; no instruction ("the user seems to be
  talking with a real person");
- dialog completion: the turns separated by "\\n\\n", then "The above is a <interaction type> dialog.
  <definition of the interaction type>. Please generate a response based on the above that is
  consistent with human speech patterns." ("Unlike the open-domain dialog task, the multi-turn dialog
  appears in the instruction. The social interaction type with definition of the dialog is also given");
- identifying: the turns, then "Please give the sentences in the above text that do not conform to human
  speech patterns, that is, unnatural sentences. Attention! You can only give sentences from the above.
  If there is more than one such sentence above, separate them with \\n\\n.";
- rewriting: the turns, then "Please rewrite this sentence based on the above dialog: <unnatural
  sentence> to make it conform to human speech patterns. Attention! You can only give the rewritten
  sentence."
The expected prompts below are those instructions in convbench's Chinese, written out by hand.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from convbench_datasets.errors import ConvbenchError
from convbench_datasets.nico.format import interaction_types
from convbench_datasets.nico.prompts import pick_shots, render_prompt, templates

HISTORY = [{"speaker": "王", "text": "去哪儿？"}, {"speaker": "李", "text": "杭州吧。"}, {"speaker": "王", "text": "好，坐高铁。"}]
CONTEXT = {"topic": "旅行", "concept": "规划行程", "interaction_type": "cooperation", "interaction_type_zh": "合作",
           "interaction_definition": interaction_types()["cooperation"]["definition_zh"]}
NEXT_TURN = {**CONTEXT, "history": HISTORY, "reference_speaker": "李", "reference": "行，我来买票。"}
DIALOGUE = [{"speaker": "A", "text": "我认为此价格偏高，两百八行不行？"}, {"speaker": "B", "text": "那就这么定了。"}]

# what no prompt may carry beyond the paper's: the "answer 无" rule, a hint of what unnatural looks
# like, an instruction to keep the meaning, a named speaker to play, the topic
ADDED = ["无", "书面", "生硬", "意思", "身份", "口语化", "只输出", "旅行", "规划行程", "[缺失]"]


def _added(prompt: str, allowed: tuple[str, ...] = ()) -> list[str]:
    return [word for word in ADDED if word in prompt and word not in allowed]


def test_open_domain_is_the_dialogue_and_the_next_speakers_label() -> None:
    prompt = render_prompt("open_domain", {**NEXT_TURN, "id": "d/open_domain"})
    assert prompt == "CharacterA: 去哪儿？\nCharacterB: 杭州吧。\nCharacterA: 好，坐高铁。\nCharacterB:"
    # no instruction, interaction type or definition: those set dialog completion apart
    assert "合作" not in prompt and CONTEXT["interaction_definition"] not in prompt and not _added(prompt)


def test_dialog_completion_is_the_dialogue_in_an_instruction_with_type_and_definition() -> None:
    prompt = render_prompt("dialog_completion", {**NEXT_TURN, "id": "d/dialog_completion"})
    assert prompt == (
        "CharacterA: 去哪儿？\n\nCharacterB: 杭州吧。\n\nCharacterA: 好，坐高铁。\n\n"
        "以上是一段“合作”型对话。合作是为了实现共同利益所在的某个目标而一起协作的行为。"
        "请根据以上内容，生成一个符合人类说话习惯的回复。"
    )
    assert not _added(prompt)  # the next turn, not a turn missing in the middle; no topic


def test_dialog_completion_quotes_each_types_definition_from_the_data() -> None:
    for kind, info in interaction_types().items():
        prompt = render_prompt("dialog_completion", {**NEXT_TURN, "id": "x", "interaction_type": kind,
                                                     "interaction_type_zh": info["zh"],
                                                     "interaction_definition": info["definition_zh"]})
        assert f"以上是一段“{info['zh']}”型对话。{info['definition_zh']}请根据以上内容" in prompt


def test_identify_asks_for_the_unnatural_sentences_as_the_paper_does() -> None:
    prompt = render_prompt("identify_unnatural", {**CONTEXT, "id": "x", "dialogue": DIALOGUE, "unnatural_sentences": []})
    assert prompt == (
        "CharacterA: 我认为此价格偏高，两百八行不行？\n\nCharacterB: 那就这么定了。\n\n"
        "请给出以上文本中不符合人类说话习惯的句子，也就是不自然的句子。注意！只能给出上文中的句子。"
        "如果上文中这样的句子不止一句，请用两个换行符把它们隔开。"
    )
    # no "answer 无 when there are none" rule and no hint of what unnatural looks like (过于书面、生硬)
    assert not _added(prompt) and "合作" not in prompt


def test_rewrite_gives_the_sentence_and_asks_for_the_rewrite_only() -> None:
    prompt = render_prompt("rewrite_unnatural", {**CONTEXT, "id": "y", "dialogue": DIALOGUE, "speaker": "A",
                                                 "sentence": "我认为此价格偏高，", "reference": "有点贵啊，"})
    assert prompt == (
        "CharacterA: 我认为此价格偏高，两百八行不行？\n\nCharacterB: 那就这么定了。\n\n"
        "请根据以上对话改写这句话：“我认为此价格偏高，”，使它符合人类说话习惯。注意！只能给出改写后的句子。"
    )
    assert "有点贵啊" not in prompt and not _added(prompt) and "合作" not in prompt


def test_interaction_type_definitions_carry_the_papers_content() -> None:
    # Section 3.1: exchange "takes action with the explicit purpose of receiving a return"; cooperation
    # "a collaborative behavior to achieve a certain goal of common interest"; conformity "behavior adapts
    # to a pre-existing norm, in which the influence of the social group is either evident or subtle";
    # coercion "produced by compulsion of any form, often accompanied by threats"; conflict "individuals
    # struggle with each other to compete for a scarce, commonly desired return".
    content = {
        "exchange": (["明确", "回报", "行动"], ["express", "return"]),
        "cooperation": (["共同利益", "目标", "协作"], ["common interest", "goal"]),
        "conformity": (["已有的规范", "社会群体", "明显", "隐蔽"], ["existing norm", "social group", "open", "subtle"]),
        "coercion": (["强迫", "威胁"], ["compulsion", "threats"]),
        "conflict": (["稀缺", "都想得到的回报", "争夺", "争斗"], ["scarce", "return", "struggle"]),
    }
    types = interaction_types()
    assert list(types) == list(content)
    for kind, (zh, en) in content.items():
        assert all(word in types[kind]["definition_zh"] for word in zh), kind
        assert all(word in types[kind]["definition_en"] for word in en), kind
        assert types[kind]["definition_zh"].startswith(types[kind]["zh"])  # a sentence about the type, as the paper's


def test_unknown_task() -> None:
    with pytest.raises(ConvbenchError, match="unknown NICO task 'chat'"):
        render_prompt("chat", NEXT_TURN)


def test_three_shot_uses_train_examples_seeded(nico_built: Path) -> None:
    import datasets

    train = datasets.load_dataset(str(nico_built), "identify_unnatural", split="train").to_list()
    test = datasets.load_dataset(str(nico_built), "identify_unnatural", split="test").to_list()[0]
    shots = pick_shots(test["id"], train)
    assert len(shots) == 3 and all(s in train for s in shots)
    assert pick_shots(test["id"], train) == shots  # the same on every run
    assert pick_shots(train[0]["id"], train) != [] and train[0] not in pick_shots(train[0]["id"], train)
    prompt = render_prompt("identify_unnatural", test, shots)
    assert prompt.startswith(templates()["shots_intro"]) and prompt.count("示例：") == 3
    # each demonstration is the task's own prompt for it, then its gold answer ("无" when none)
    for shot in shots:
        answer = "\n\n".join(shot["unnatural_sentences"]) or "无"
        assert f"{render_prompt('identify_unnatural', shot)}\n回答：\n{answer}" in prompt
    assert prompt.endswith(templates()["shots_outro"] + "\n\n" + render_prompt("identify_unnatural", test))
    with pytest.raises(ConvbenchError, match="3-shot prompts need 3 train examples"):
        pick_shots("z", train[:2])


@pytest.mark.parametrize("task", ["open_domain", "dialog_completion", "rewrite_unnatural"])
def test_three_shot_demonstrations_end_in_their_reference(task: str, nico_built: Path) -> None:
    import datasets

    train = datasets.load_dataset(str(nico_built), task, split="train").to_list()
    example = datasets.load_dataset(str(nico_built), task, split="test").to_list()[0]
    shots = pick_shots(example["id"], train)
    prompt = render_prompt(task, example, shots)
    label = {"open_domain": " ", "dialog_completion": "\n回复：", "rewrite_unnatural": "\n改写："}[task]
    for shot in shots:
        assert f"示例：\n{render_prompt(task, shot)}{label}{shot['reference']}" in prompt
    assert example["reference"] not in prompt  # the example's own answer is never shown


def test_completion_and_open_domain_share_the_reference_turn(nico_built: Path) -> None:
    # the paper's two dialogue-level tasks differ in the prompt, not in the turn the model is asked for
    import datasets

    for split in ("train", "test"):
        od = datasets.load_dataset(str(nico_built), "open_domain", split=split).to_list()
        dc = datasets.load_dataset(str(nico_built), "dialog_completion", split=split).to_list()
        assert [(r["dialogue_id"], r["turn_index"], r["history"], r["reference"]) for r in od] == [
            (r["dialogue_id"], r["turn_index"], r["history"], r["reference"]) for r in dc]


def test_templates_hold_only_the_paper_s_instructions() -> None:
    # every instruction sentence in the zero-shot templates, by task (placeholders stripped)
    expected = {
        "open_domain": [],
        "dialog_completion": ["以上是一段“”型对话", "请根据以上内容，生成一个符合人类说话习惯的回复"],
        "identify_unnatural": ["请给出以上文本中不符合人类说话习惯的句子，也就是不自然的句子", "注意！只能给出上文中的句子",
                               "如果上文中这样的句子不止一句，请用两个换行符把它们隔开"],
        "rewrite_unnatural": ["请根据以上对话改写这句话：“”，使它符合人类说话习惯", "注意！只能给出改写后的句子"],
    }
    for task, sentences in expected.items():
        text = re.sub(r"\$[a-z_]+", "", templates()[task]["prompt"]).replace("\n", "").replace(":", "")
        assert [s for s in re.split("[。]", text) if s.strip()] == sentences, task
