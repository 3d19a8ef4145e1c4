"""The NICO input format, and its validation. One dialogue per JSON Lines line:

```json
{"id": "d-0001", "topic": "购物", "concept": "砍价", "interaction_type": "exchange", "split": "train",
 "utterances": [
   {"speaker": "A", "text": "老板，这件外套多少钱？"},
   {"speaker": "A", "text": "有点贵啊，两百八行不行？",
    "original_text": "我认为此价格偏高，两百八行不行？",
    "edits": [{"kind": "unnatural", "original": "我认为此价格偏高，", "rewrite": "有点贵啊，"}]}]}
```

- ``id``, ``topic``, ``concept`` (may be empty): strings; ids unique across all files.
- ``interaction_type``: one of ``interaction_types.yaml`` (exchange, cooperation, conformity,
  coercion, conflict).
- ``split`` (optional): train, validation or test; the release's split when it has one.
- ``utterances``: at least 4, each with ``speaker`` and ``text`` (the final, natural text, with
  meaningless blocks already removed). An annotated utterance also has ``original_text`` (as first
  written) and ``edits``: each names its ``kind`` (unnatural or ungrammatical), the ``original``
  sentence (found in ``original_text``) and its human ``rewrite`` (found in ``text``). Applying the
  edits to ``original_text``, in order, must give ``text``.

Every problem raises :class:`DataFormatError` naming the file, line and field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._resources import read_yaml
from ..errors import DataFormatError
from ..jsonfiles import read_jsonl

SPLITS = ("train", "validation", "test")
EDIT_KINDS = ("unnatural", "ungrammatical")
MIN_UTTERANCES = 4
_DIALOGUE_FIELDS = {"id", "topic", "concept", "interaction_type", "split", "utterances"}
_UTTERANCE_FIELDS = {"speaker", "text", "original_text", "edits"}
_EDIT_FIELDS = {"kind", "original", "rewrite"}


def interaction_types() -> dict[str, dict[str, str]]:
    return read_yaml(__package__, "interaction_types.yaml")


def read_dialogues(path: Path, split: str | None = None) -> list[dict[str, Any]]:
    """Validated dialogues of one file, normalised (``original_text`` and ``edits`` always present).

    ``split``: the split the file stands for (a file named train/validation/test.jsonl), if any.
    """
    return [validate_dialogue(record, f"{path.name} line {lineno}", split) for lineno, record in read_jsonl(path)]


def validate_dialogue(record: Any, where: str, file_split: str | None = None) -> dict[str, Any]:
    if not isinstance(record, dict):
        raise DataFormatError(f"{where}: expected a JSON object")
    _known(record, _DIALOGUE_FIELDS, where)
    for name in ("id", "topic", "concept", "interaction_type"):
        if not isinstance(record.get(name), str) or (name != "concept" and not record[name].strip()):
            raise DataFormatError(f"{where}: field {name!r} must be a non-empty string")
    if record["interaction_type"] not in interaction_types():
        raise DataFormatError(
            f"{where}: field 'interaction_type': {record['interaction_type']!r} is not one of {list(interaction_types())}"
        )
    split = record.get("split", file_split)
    if split is not None and split not in SPLITS:
        raise DataFormatError(f"{where}: field 'split': {split!r} is not one of {SPLITS}")
    if file_split is not None and record.get("split", file_split) != file_split:
        raise DataFormatError(f"{where}: field 'split': {record['split']!r} inside {file_split}.jsonl")
    utterances = record.get("utterances")
    if not isinstance(utterances, list) or len(utterances) < MIN_UTTERANCES:
        raise DataFormatError(f"{where}: field 'utterances' must be a list of at least {MIN_UTTERANCES} utterances")
    return {
        "id": record["id"],
        "topic": record["topic"],
        "concept": record["concept"],
        "interaction_type": record["interaction_type"],
        "split": split,
        "utterances": [_utterance(u, f"{where}: field 'utterances[{i}]") for i, u in enumerate(utterances)],
    }


def _utterance(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise DataFormatError(f"{where}' must be an object")
    _known(value, _UTTERANCE_FIELDS, where + "'")
    for name in ("speaker", "text"):
        if not isinstance(value.get(name), str) or not value[name].strip():
            raise DataFormatError(f"{where}.{name}' must be a non-empty string")
    edits = value.get("edits") or []
    original = value.get("original_text", value["text"])
    if not isinstance(original, str) or not isinstance(edits, list):
        raise DataFormatError(f"{where}': 'original_text' must be a string and 'edits' a list")
    if edits and "original_text" not in value:
        raise DataFormatError(f"{where}.original_text' is required when the utterance has edits")
    rebuilt = original
    checked = []
    for j, edit in enumerate(edits):
        here = f"{where}.edits[{j}]"
        if not isinstance(edit, dict):
            raise DataFormatError(f"{here}' must be an object")
        _known(edit, _EDIT_FIELDS, here + "'")
        if edit.get("kind") not in EDIT_KINDS:
            raise DataFormatError(f"{here}.kind' must be one of {EDIT_KINDS}, got {edit.get('kind')!r}")
        if not isinstance(edit.get("original"), str) or not edit["original"].strip():
            raise DataFormatError(f"{here}.original' must be a non-empty string")
        if not isinstance(edit.get("rewrite"), str):
            raise DataFormatError(f"{here}.rewrite' must be a string")
        if edit["original"] not in rebuilt:
            raise DataFormatError(f"{here}.original' is not in the utterance's original_text")
        rebuilt = rebuilt.replace(edit["original"], edit["rewrite"], 1)
        checked.append({"kind": edit["kind"], "original": edit["original"], "rewrite": edit["rewrite"]})
    if rebuilt != value["text"]:
        raise DataFormatError(f"{where}': applying its edits to original_text does not give text")
    return {"speaker": value["speaker"], "text": value["text"], "original_text": original, "edits": checked}


def _known(record: dict[str, Any], fields: set[str], where: str) -> None:
    unknown = sorted(set(record) - fields)
    if unknown:
        raise DataFormatError(f"{where}: unexpected field(s) {unknown}")
