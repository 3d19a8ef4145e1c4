"""`convbench export cocoeval-sft`: exact examples from a tiny built dataset, seeded start turns, a
format fine-tuning tools read, and never replacing a file convbench did not write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convbench_datasets.cli import main
from convbench_datasets.cocoeval.schema import features
from convbench_datasets.cocoeval.sft import export_sft, sft_examples, start_turn, unlisted_speakers
from convbench_datasets.cocoeval.simulation import parse_continuation, parse_turns, simulation_prompt, speakers
from convbench_datasets.cocoeval.taxonomy import load_taxonomy
from convbench_datasets.errors import BuildError
from convbench_datasets.hub import BuiltConfig, BuiltDataset, export


def _row(name: str, start: int) -> dict:
    # turns alternate Ann, Bob; history says h0..h29, the reference r0..r29 (so a target is easy to write by hand)
    def turns(prefix: str) -> list[dict]:
        return [{"speaker": "Ann" if k % 2 == 0 else "Bob", "utterance": f"{prefix}{k} on {name}"} for k in range(30)]

    return {"id": f"tiny/{name}/{start}", "source": "sim", "conversation_id": name, "start_turn": start,
            "metadata": {"setting": "a product design meeting", "participants": ["Ann", "Bob"], "goals": ["the remote"]},
            "summary": "Ann opened the meeting.", "summary_method": "extractive", "history": turns("h"),
            "reference": turns("r")}


ROWS = [_row("m1", 30), _row("m2", 90)]


@pytest.fixture(scope="module")
def tiny_built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two train rows (and a test row, which the export must ignore) built by the project's own exporter."""
    folder = tmp_path_factory.mktemp("tiny")
    card = folder / "card.md"
    card.write_text("---\nlicense: other\n---\n# tiny CoCoEval\n")
    test_row = {**_row("m9", 30), "id": "tiny/m9/30"}
    built = BuiltDataset(name="cocoeval", features=features(), card_template=card,
                         configs=[BuiltConfig("tiny", {"train": ROWS, "test": [test_row]})])
    return export(built, folder / "hub")


def _target(first: int, count: int, name: str) -> str:
    """The human turns first..first+count-1 as the simulator is asked to write them, by hand."""
    return "\n".join(f"{'Ann' if k % 2 == 0 else 'Bob'}: r{k} on {name}" for k in range(first, first + count))


def test_start_turns_are_seeded_per_instance_and_in_range() -> None:
    # pinned: the seed and the instance id alone decide the start (an export of a subset keeps them)
    assert [start_turn(r["id"], 5, seed=0) for r in ROWS] == [25, 17]
    assert [start_turn(r["id"], 1, seed=0) for r in ROWS] == [14, 12]
    assert [start_turn(r["id"], 5, seed=1) for r in ROWS] == [24, 20]
    assert [start_turn(r["id"], 30, seed=s) for r in ROWS for s in (0, 1)] == [0, 0, 0, 0]
    starts = {n: {start_turn(f"x/{k}", n) for k in range(2000)} for n in (1, 5)}
    assert starts[1] == set(range(30)) and starts[5] == set(range(26))  # every start 0..30-N, nothing past it


def test_exact_lines_of_a_tiny_built_dataset(tiny_built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sft" / "train.jsonl"
    assert main(["export", "cocoeval-sft", "--turns-per-call", "5", "--out", str(out), "--dataset", str(tiny_built),
                 "--config", "tiny"]) == 0
    assert f"wrote 2 examples (5 turns per call, tiny train split) to {out}" in capsys.readouterr().out
    lines = out.read_text(encoding="utf-8").splitlines()
    taxonomy = load_taxonomy()
    # m1 starts at reference turn 25, m2 at 17 (pinned above): the prompt is the runner's own (by default with
    # the repetition countermeasure: copy the last 5 turns first), with the reference's first turns as the
    # conversation so far; the target the copy of the 5 turns before the start, then the next five human turns
    expected = []
    for row, start in zip(ROWS, (25, 17)):
        prompt = simulation_prompt(row, row["reference"][:start], 5, "vanilla", taxonomy, copied=5)
        expected.append(json.dumps({"messages": [*prompt, {"role": "assistant",
                                                           "content": _target(start - 5, 10, row["conversation_id"])}]},
                                   ensure_ascii=False))
    assert lines == expected
    system, user = (m["content"] for m in json.loads(lines[0])["messages"][:2])
    assert "copying the 5 most recent turns" in system
    assert "Ann: r24 on m1" in user and "r25 on m1" not in user  # the so-far ends just before the target
    signature = json.loads((tmp_path / "sft" / "train.jsonl.convbench.json").read_text())
    assert signature["kind"] == "cocoeval-sft" and signature["examples"] == 2 and signature["split"] == "train"
    assert signature["turns_per_call"] == 5 and signature["seed"] == 0 and signature["prompt"] == "vanilla"
    assert signature["targets_with_unlisted_speakers"] == {"count": 0, "ids": []}
    assert signature["repetition_countermeasure"] == {"copied_turns": 5}
    # the ablation's export: no copy asked for, none in the target
    plain = tmp_path / "sft" / "plain.jsonl"
    assert main(["export", "cocoeval-sft", "--turns-per-call", "5", "--out", str(plain), "--dataset", str(tiny_built),
                 "--config", "tiny", "--no-repetition-countermeasure"]) == 0
    first = json.loads(plain.read_text(encoding="utf-8").splitlines()[0])["messages"]
    assert first[:2] == simulation_prompt(ROWS[0], ROWS[0]["reference"][:25], 5, "vanilla", taxonomy)
    assert first[2]["content"] == _target(25, 5, "m1")
    assert json.loads((tmp_path / "sft" / "plain.jsonl.convbench.json").read_text())["repetition_countermeasure"] is None


def test_targets_naming_unlisted_speakers_are_kept_and_counted() -> None:
    # someone from the audience speaks first: real data, kept as said, but counted (the runner would
    # count such a simulated turn as a problem). With 5 turns per call m3 starts at reference turn 12,
    # after the newcomer's turn 0, so only the 30-turn target names them.
    row = _row("m3", 30)
    row["reference"][0] = {"speaker": "Carol", "utterance": "a question from the floor"}
    assert unlisted_speakers([row, *ROWS], 30) == ["tiny/m3/30"]
    assert sft_examples([row], 30, repetition_countermeasure=False)[0]["messages"][-1]["content"].startswith(
        "Carol: a question from the floor\nBob: r1")
    assert start_turn("tiny/m3/30", 5) == 12 and unlisted_speakers([row], 5) == []


def test_a_participant_named_with_a_parenthesis_is_listed() -> None:
    # QMSum Committee covid_1: participants are the speakers' labels as written there; speakers() strips
    # the parenthesis, and the runner's parser reads "Mr. Tony Van Bynen (NewmarketAurora, Lib.): ..." as
    # that participant, so a target where he first speaks in the reference names nobody unlisted
    van_bynen = "Mr. Tony Van Bynen (NewmarketAurora, Lib.)"
    row = _row("m4", 30)
    row["metadata"]["participants"] = ["Ann", "Bob", van_bynen]
    row["reference"][0] = {"speaker": van_bynen, "utterance": "Thank you, Mr. Chair."}
    assert unlisted_speakers([row], 30) == []
    target = sft_examples([row], 30, repetition_countermeasure=False)[0]["messages"][-1]["content"]
    turns, problem, _ = parse_turns(target, speakers(row), 30)
    assert problem is None and turns[0] == {"speaker": "Mr. Tony Van Bynen", "utterance": "Thank you, Mr. Chair."}
    row["reference"][1] = {"speaker": "Mr. Tony Van", "utterance": "a label the parser does not read as his"}
    assert unlisted_speakers([row], 30) == ["tiny/m4/30"]


def test_thirty_turns_target_the_whole_reference_and_parse_back() -> None:
    # the target is in the simulator's format: the runner's parser reads back exactly the human turns, the
    # copy of the history's last 5 turns (h25..h29) removed as from a simulated reply
    for row, example in zip(ROWS, sft_examples(ROWS, 30)):
        system, user, assistant = example["messages"]
        copy = "\n".join(f"{t['speaker']}: {t['utterance']}" for t in row["history"][-5:])
        assert assistant == {"role": "assistant", "content": copy + "\n" + _target(0, 30, row["conversation_id"])}
        assert [system, user] == simulation_prompt(row, [], 30, "vanilla", load_taxonomy(), copied=5)  # nothing simulated yet
        turns, problem, extra = parse_continuation(assistant["content"], row, [], 30, copied=5)
        assert problem is None and extra == 0 and turns == row["reference"]


def test_format_is_what_fine_tuning_tools_read(tiny_built: Path, tmp_path: Path) -> None:
    out = export_sft(tmp_path / "one.jsonl", 1, config="tiny", dataset=tiny_built).path
    for line in out.read_text(encoding="utf-8").splitlines():
        example = json.loads(line)
        # OpenAI's chat fine-tuning format: only "messages", each a role and a non-empty content, ending
        # with the assistant's target
        assert list(example) == ["messages"]
        assert [m["role"] for m in example["messages"]] == ["system", "user", "assistant"]
        assert all(set(m) == {"role", "content"} and m["content"].strip() for m in example["messages"])
        assert len(parse_turns(example["messages"][-1]["content"], ["Ann", "Bob"], 7)[0]) == 6  # 5 copied + 1
    # TRL's SFTTrainer reads a "messages" column of {role, content} through datasets and a chat template
    import datasets

    loaded = datasets.load_dataset("json", data_files=str(out), split="train")
    assert loaded.column_names == ["messages"] and len(loaded) == 2
    pytest.importorskip("transformers")
    from transformers import AutoTokenizer

    from tests.support.tiny_models import build_tiny_lm

    tokenizer = AutoTokenizer.from_pretrained(build_tiny_lm(tmp_path / "lm"))
    text = tokenizer.apply_chat_template(loaded[0]["messages"], tokenize=False)
    # m1 starts at reference turn 14 (pinned above): the copy of r9..r13, then r14
    assert text.startswith("<|system|> You simulate") and text.endswith(f"<|assistant|> {_target(9, 6, 'm1')} <|end|> ")


def test_seeded_exports_are_byte_identical_and_replace_only_their_own(tiny_built: Path, tmp_path: Path) -> None:
    out = tmp_path / "train.jsonl"
    export_sft(out, 5, config="tiny", dataset=tiny_built, seed=3)
    first = out.read_bytes()
    export_sft(out, 5, config="tiny", dataset=tiny_built, seed=3)  # our own, unchanged: replaced
    assert out.read_bytes() == first
    export_sft(out, 5, config="tiny", dataset=tiny_built, seed=4)
    assert out.read_bytes() != first  # another seed, other start turns
    out.write_text(out.read_text() + "\n")  # the user edited it: no longer ours to replace
    with pytest.raises(BuildError, match="was changed after convbench wrote it"):
        export_sft(out, 5, config="tiny", dataset=tiny_built)


def test_a_users_file_is_never_replaced(tiny_built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mine = tmp_path / "mine.jsonl"
    mine.write_text("my own data\n")
    assert main(["export", "cocoeval-sft", "--turns-per-call", "30", "--out", str(mine), "--dataset", str(tiny_built),
                 "--config", "tiny"]) == 1
    assert capsys.readouterr().err == (f"convbench: error: {mine} exists and convbench did not write it; "
                                       "move it away or choose another --out\n")
    assert mine.read_text() == "my own data\n" and not (tmp_path / "mine.jsonl.convbench.json").exists()
    sidecar = tmp_path / "other.jsonl.convbench.json"  # only the signature's name is taken, by a user's file
    sidecar.write_text("{}")
    with pytest.raises(BuildError, match="other.jsonl.convbench.json exists and convbench did not write it"):
        export_sft(tmp_path / "other.jsonl", 30, config="tiny", dataset=tiny_built)
    assert sidecar.read_text() == "{}"
