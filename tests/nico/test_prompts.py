"""NICO prompts render as documented: CharacterA/B lines, the instruction, 3 seeded train demonstrations."""

from __future__ import annotations

from pathlib import Path

import pytest

from convbench_datasets.errors import ConvbenchError
from convbench_datasets.nico.prompts import pick_shots, render_prompt, templates

EXAMPLE = {
    "id": "d9/open_domain", "topic": "旅行", "interaction_type_zh": "合作", "interaction_definition": "一起努力。",
    "history": [{"speaker": "王", "text": "去哪儿？"}, {"speaker": "李", "text": "杭州吧。"}],
    "reference_speaker": "王", "reference": "好啊。",
}


def test_zero_shot_open_domain_by_hand() -> None:
    assert render_prompt("open_domain", EXAMPLE) == (
        "下面是一段关于“旅行”的日常对话，对话双方之间的互动类型是“合作”（一起努力。）。\n"
        "CharacterA: 去哪儿？\n"
        "CharacterB: 杭州吧。\n"
        "请你以CharacterA的身份，用自然、口语化的中文说出下一句话，就像真人在日常聊天一样。只输出这句话本身。"
    )


def test_completion_marks_the_missing_turn() -> None:
    example = {**EXAMPLE, "id": "d9/dialog_completion", "history_before": EXAMPLE["history"][:1],
               "history_after": EXAMPLE["history"][1:], "reference_speaker": "李"}
    prompt = render_prompt("dialog_completion", example)
    assert "CharacterA: 去哪儿？\nCharacterB: [缺失]\nCharacterB: 杭州吧。" in prompt


def test_identify_and_rewrite() -> None:
    dialogue = [{"speaker": "A", "text": "我对于此事表示赞同。"}, {"speaker": "B", "text": "那就这么定了。"}]
    identify = render_prompt("identify_unnatural", {"id": "x", "dialogue": dialogue, "unnatural_sentences": []})
    assert identify.endswith("请找出这段对话中所有不自然的句子，按原文逐句输出，句子之间空一行。如果没有不自然的句子，请只回答“无”。")
    rewrite = render_prompt("rewrite_unnatural", {"id": "y", "dialogue": dialogue, "speaker": "A",
                                                  "sentence": "我对于此事表示赞同。", "reference": "行啊。"})
    assert "其中CharacterA说的这句话不够自然：“我对于此事表示赞同。”" in rewrite and "行啊" not in rewrite


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
    for shot in shots:  # each demonstration shows its gold answer ("无" when none)
        assert ("\n\n".join(shot["unnatural_sentences"]) or "无") in prompt
    with pytest.raises(ConvbenchError, match="3-shot prompts need 3 train examples"):
        pick_shots("z", train[:2])
