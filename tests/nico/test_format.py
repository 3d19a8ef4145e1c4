"""The NICO input format: the sample validates; bad dialogues are refused with file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convbench_datasets.errors import DataFormatError
from convbench_datasets.nico.builder import SAMPLE
from convbench_datasets.nico.format import read_dialogues

GOOD = {
    "id": "d1", "topic": "购物", "concept": "砍价", "interaction_type": "exchange",
    "utterances": [
        {"speaker": "A", "text": "多少钱？"},
        {"speaker": "B", "text": "三百。"},
        {"speaker": "A", "text": "有点贵啊，便宜点吧。", "original_text": "我认为价格偏高，便宜点吧。",
         "edits": [{"kind": "unnatural", "original": "我认为价格偏高，", "rewrite": "有点贵啊，"}]},
        {"speaker": "B", "text": "那两百八。"},
    ],
}


def _write(tmp_path: Path, *records: object) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in records),
                    encoding="utf-8")
    return path


def test_the_bundled_sample_validates() -> None:
    dialogues = read_dialogues(SAMPLE)
    assert len(dialogues) == 20
    kinds = {d["interaction_type"] for d in dialogues}
    assert kinds == {"exchange", "cooperation", "conformity", "coercion", "conflict"}
    edits = [e for d in dialogues for u in d["utterances"] for e in u["edits"]]
    assert {e["kind"] for e in edits} == {"unnatural", "ungrammatical"}
    # 8 of the 20 have no annotation (12 have: 9 with an unnatural sentence, among them the test and
    # validation dialogues so that every task has examples in every split, and 3 with an ungrammatical one)
    assert sum(not any(u["edits"] for u in d["utterances"]) for d in dialogues) == 8


def test_unannotated_utterances_get_their_text_as_original(tmp_path: Path) -> None:
    (dialogue,) = read_dialogues(_write(tmp_path, GOOD))
    assert dialogue["utterances"][0] == {"speaker": "A", "text": "多少钱？", "original_text": "多少钱？", "edits": []}
    assert dialogue["split"] is None


def _with(path: str, value: object) -> dict:
    record = json.loads(json.dumps(GOOD))
    target, *keys = path.split(".")
    node = record
    parts = [target, *keys]
    for key in parts[:-1]:
        node = node[int(key)] if isinstance(node, list) else node[key]
    last = parts[-1]
    if value is KeyError:
        del node[last]
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return record


@pytest.mark.parametrize(
    "record,message",
    [
        ("{broken", "data.jsonl line 2: not valid JSON"),
        (_with("interaction_type", "friendship"), "line 2: field 'interaction_type': 'friendship' is not one of"),
        (_with("topic", ""), "line 2: field 'topic' must be a non-empty string"),
        (_with("split", "dev"), "line 2: field 'split': 'dev' is not one of"),
        (_with("utterances", GOOD["utterances"][:3]), "field 'utterances' must be a list of at least 4"),
        (_with("utterances.1.text", ""), "field 'utterances[1].text' must be a non-empty string"),
        (_with("utterances.2.edits.0.kind", "awkward"), "field 'utterances[2].edits[0].kind' must be one of"),
        (_with("utterances.2.edits.0.original", "我觉得"), "field 'utterances[2].edits[0].original' is not in the utterance's original_text"),
        (_with("utterances.2.text", "太贵了，便宜点吧。"), "field 'utterances[2]': applying its edits to original_text does not give text"),
        (_with("utterances.2.original_text", KeyError), "field 'utterances[2].original_text' is required when the utterance has edits"),
        (_with("mood", "happy"), "line 2: unexpected field(s) ['mood']"),
    ],
)
def test_errors_name_the_line_and_field(tmp_path: Path, record: object, message: str) -> None:
    with pytest.raises(DataFormatError) as err:
        read_dialogues(_write(tmp_path, {**GOOD, "id": "d0"}, record))
    assert message in str(err.value)
