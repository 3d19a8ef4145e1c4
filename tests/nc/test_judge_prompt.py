"""Judge prompts per label group, with line numbers, prior-turn references and request details
worked out by hand from the transcripts below."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from convbench_datasets.errors import ConvbenchError
from convbench_datasets.nc.judge_prompt import judge_messages, load_template
from convbench_datasets.nc.patterns import pattern_table

SYSTEM = {"role": "system", "content": "Keep it short."}


def _row(task_set: str, task: str, turns: list[tuple[str, str]], details: str = "") -> dict:
    return {
        "messages": [SYSTEM, *({"role": r, "content": c} for r, c in turns)],
        "label_set": list(pattern_table().entry(task_set, task).label_set),
        "request_details": details,
    }


def _sections(messages: list[dict]) -> tuple[str, list[str]]:
    user = messages[1]["content"]
    transcript = user.split("Transcript:\n")[1].split("\n\nLabels:")[0]
    labels = user.split("Labels:\n")[1].split("\n\nRules:")[0].split("\n")
    return transcript, labels


def test_repair_group_numbers_lines_and_points_to_the_prior_turn() -> None:
    row = _row("basic", "repeat request", [("user", "Where is it?"), ("assistant", "Two blocks down."), ("user", "What?")])
    messages = judge_messages(row, "Two blocks down.", template="convbench")
    transcript, labels = _sections(messages)
    # system is index 0, so: 1 USER, 2 AGENT, 3 USER, and the response is line 4 = len(messages).
    assert transcript == "1 USER: Where is it?\n2 AGENT: Two blocks down.\n3 USER: What?\n4 AGENT: Two blocks down."
    assert [line.split(":")[0] for line in labels] == ["- NonAnswer", "- Repeat", "- Paraphrase", "- Definition",
                                                       "- Example", "- OOC", "- Other"]
    repeat = labels[1]
    assert "AGENT's last turn (line 4)" in repeat and "AGENT's prior turn (line 2)" in repeat
    assert messages[0] == {"role": "system", "content": load_template().system}
    assert "line 4" in messages[1]["content"].split("Rules:")[1]


def test_inquiry_group_with_an_empty_first_user_turn() -> None:
    # Upstream basic rows may open with an empty user turn: it still takes line 1.
    row = _row("basic", "inquiry", [("user", ""), ("assistant", "Hi there."), ("user", "Is the shop open?")])
    transcript, labels = _sections(judge_messages(row, "Yes, until six.", template="convbench"))
    assert transcript.split("\n") == ["1 USER: ", "2 AGENT: Hi there.", "3 USER: Is the shop open?", "4 AGENT: Yes, until six."]
    assert len(labels) == 9 and labels[0].startswith("- Answer: AGENT's last turn (line 4)")


def test_closing_group_without_a_prior_agent_turn() -> None:
    row = _row("rag", "sequence closer", [("user", "Thanks, that's all.")])
    transcript, labels = _sections(judge_messages(row, "You're welcome!", template="convbench"))
    assert transcript == "1 USER: Thanks, that's all.\n2 AGENT: You're welcome!"
    assert len(labels) == 18
    (repeat,) = [line for line in labels if line.startswith("- Repeat:")]
    assert "AGENT's prior turn again" in repeat and "(line" not in repeat.split("prior turn")[1][:8]


def test_requests_group_names_the_request_details() -> None:
    details = "what kind of cuisine they want and how far they will go"
    row = _row("complex_request", "Detail Request-Partial",
               [("user", "Can you recommend a restaurant?"), ("assistant", "Sure."), ("user", "Somewhere nice.")], details)
    _, labels = _sections(judge_messages(row, "What kind of cuisine would you like?", template="convbench"))
    (grounded,) = [line for line in labels if line.startswith("- DetailRequestGrounded:")]
    (ungrounded,) = [line for line in labels if line.startswith("- DetailRequestUngrounded:")]
    assert grounded.endswith(f"one of: {details}.") and ungrounded.endswith(f"not one of: {details}.")
    assert "line 4" in grounded


@pytest.mark.parametrize("task,n_labels", [("Preliminary-Screen", 8), ("Expansion-Choices", 7)])
def test_preliminary_and_expansion_groups(task: str, n_labels: int) -> None:
    row = _row("complex_request", task, [("user", "Hi, I need coffee.")])
    _, labels = _sections(judge_messages(row, "Sure, what size?", template="convbench"))
    assert len(labels) == n_labels and labels[-2:] == ["- OOC: AGENT's last turn (line 2) steps out of the AGENT's character, "
                                                       "e.g. speaks as an analyst or an AI, comments on the conversation, or "
                                                       "shows its reasoning.", "- Other: AGENT's last turn (line 2) fits none "
                                                       "of the other labels."]


def test_prior_turn_is_the_last_agent_turn_when_the_transcript_ends_with_one() -> None:
    # Like complex_request id 340: the transcript ends with an assistant turn (line 4); response is line 5.
    row = _row("complex_request", "Self-Correction",
               [("user", "Mexican?"), ("assistant", "Mario's."), ("user", "No, Italian?"), ("assistant", "Munchies Pizza.")])
    transcript, labels = _sections(judge_messages(row, "Luigi's is nearby.", template="convbench"))
    assert transcript.endswith("4 AGENT: Munchies Pizza.\n5 AGENT: Luigi's is nearby.")
    assert all("(line 5)" in line for line in labels)


def test_first_line_option() -> None:
    row = _row("basic", "repeat request", [("user", "Hm?")])
    response = "  Two blocks down.  \nLet me know if that helps.\n"
    first, _ = _sections(judge_messages(row, response, template="convbench"))
    whole, _ = _sections(judge_messages(row, response, first_line_only=False, template="convbench"))
    assert first.endswith("2 AGENT: Two blocks down.")
    assert whole.endswith("2 AGENT: Two blocks down. Let me know if that helps.")
    empty, _ = _sections(judge_messages(row, "\nI said two blocks.", template="convbench"))
    assert empty.endswith("2 AGENT: ")  # a response starting with a new line is judged as silence


def test_every_label_of_every_row_has_a_definition(nc_rows: dict) -> None:
    for rows in nc_rows.values():
        for row in rows:
            messages = judge_messages(row, "Okay.", template="convbench")
            assert f"{len(row['messages'])} AGENT: Okay." in messages[1]["content"]
            labels = messages[1]["content"].split("Labels:\n")[1].split("\n\nRules:")[0]
            assert "$" not in labels and len(labels.split("\n")) == len(row["label_set"])


def test_user_template_file(tmp_path: Path) -> None:
    path = tmp_path / "judge.yaml"
    path.write_text(
        "system: You label dialogue acts.\n"
        "user: |-\n  Transcript:\n  $transcript\n\n  Labels:\n  $labels\n\n  Rules:\n  Label line $last_line.\n"
        "labels:\n  Repeat: $last_turn copies $prior_turn.\n"
    )
    template = load_template(path)
    row = _row("basic", "repeat request", [("user", "Hm?"), ("assistant", "Yes."), ("user", "What?")])
    messages = judge_messages(row, "Yes.", template=template)
    assert messages[0]["content"] == "You label dialogue acts."
    assert "- Repeat: AGENT's last turn (line 4) copies AGENT's prior turn (line 2)." in messages[1]["content"]
    assert template.sha256 != load_template().sha256


@pytest.mark.parametrize(
    "text,message",
    [
        ("system: x\nuser: only $transcript\n", "missing ['labels', 'last_line']"),
        ("system: x\nuser: $transcript $labels $last_line $mood\n", "unknown ['mood']"),
        ("system: x\nuser: $transcript $labels $last_line\nlabels:\n  Repeat: $colour\n", "definition of 'Repeat' uses unknown ['colour']"),
        ("just text", "needs string fields 'system' and 'user'"),
        ("system: x\nuser: $transcript $labels $last_line\nlabels: [a, b]\n", "'labels' must map label names"),
        ("system: x\nuser: $transcript $labels $last_line\nlabels:\n  Repet: x\n", "unknown label(s) ['Repet']"),
        ("system: costs 5 $\nuser: $transcript $labels $last_line\n", "a '$' that is no placeholder"),
    ],
)
def test_bad_user_templates(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConvbenchError, match=re.escape(message)):
        load_template(path)


def test_bad_rows_and_responses() -> None:
    row = _row("basic", "inquiry", [("user", "Hi?")])
    with pytest.raises(TypeError, match="must be text"):
        judge_messages(row, None, template="convbench")  # type: ignore[arg-type]
    row["messages"].append({"role": "tool", "content": "{}"})
    with pytest.raises(ConvbenchError, match="message 2: role 'tool' is not user or assistant"):
        judge_messages(row, "Hello.", template="convbench")
