"""Splits: the release's when given, else seeded 90/5/5; mixtures are refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convbench_datasets.errors import DataFormatError
from convbench_datasets.nico.builder import read_all
from convbench_datasets.nico.splits import assign_splits
from tests.nico.test_format import GOOD


def test_nico_sizes_and_determinism() -> None:
    dialogues = [{"id": f"d{i:04d}", "split": None} for i in range(4000)]
    first, second = assign_splits(dialogues), assign_splits(list(reversed(dialogues)))
    assert first == second  # input order does not matter
    counts = {s: sum(v == s for v in first.values()) for s in ("train", "validation", "test")}
    assert counts == {"train": 3600, "validation": 200, "test": 200}
    assert assign_splits(dialogues, seed=1) != first


def test_release_splits_are_kept_and_mixtures_refused() -> None:
    given = [{"id": "a", "split": "test"}, {"id": "b", "split": "train"}]
    assert assign_splits(given) == {"a": "test", "b": "train"}
    with pytest.raises(DataFormatError, match="1 of 2 dialogues have a split"):
        assign_splits([{"id": "a", "split": "test"}, {"id": "b", "split": None}])


def test_split_files(tmp_path: Path) -> None:
    for split, ident in (("train", "t1"), ("test", "x1")):
        (tmp_path / f"{split}.jsonl").write_text(json.dumps({**GOOD, "id": ident}, ensure_ascii=False) + "\n")
    dialogues = read_all(sorted(tmp_path.glob("*.jsonl")))
    assert {d["id"]: d["split"] for d in dialogues} == {"t1": "train", "x1": "test"}
    (tmp_path / "test.jsonl").write_text(json.dumps({**GOOD, "id": "x2", "split": "train"}) + "\n")
    with pytest.raises(DataFormatError, match="field 'split': 'train' inside test.jsonl"):
        read_all(sorted(tmp_path.glob("*.jsonl")))
    (tmp_path / "test.jsonl").write_text(json.dumps({**GOOD, "id": "t1"}) + "\n")
    with pytest.raises(DataFormatError, match="dialogue id 't1' already used in"):
        read_all(sorted(tmp_path.glob("*.jsonl")))
