"""NICO built from the bundled sample: configs, task examples as documented, load_dataset, determinism."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from convbench_datasets import build
from convbench_datasets.cli import main
from convbench_datasets.nico import schema
from convbench_datasets.nico.builder import SAMPLE
from convbench_datasets.nico.format import read_dialogues
from convbench_datasets.nico.tasks import EXAMPLES

CONFIGS = ["dialogs", "open_domain", "dialog_completion", "identify_unnatural", "rewrite_unnatural"]


def _load(folder: Path, config: str) -> dict:
    import datasets

    loaded = datasets.load_dataset(str(folder), config)
    return {split: ds.to_list() for split, ds in loaded.items()}


def test_every_config_loads_with_its_features(nico_built: Path) -> None:
    import datasets

    for config in CONFIGS:
        ds = datasets.load_dataset(str(nico_built), config, split="train")
        assert ds.features == schema.features(config)
    # 20 dialogues: seeded 5% test (1), 5% validation (1), 18 train
    assert {s: len(rows) for s, rows in _load(nico_built, "dialogs").items()} == {"train": 18, "validation": 1, "test": 1}


def test_examples_follow_the_documented_rules() -> None:
    for dialogue in read_dialogues(SAMPLE):
        n = len(dialogue["utterances"])
        (od,) = EXAMPLES["open_domain"](dialogue)
        assert 2 <= od["turn_index"] <= n - 1 and len(od["history"]) == od["turn_index"]
        assert od["reference"] == dialogue["utterances"][od["turn_index"]]["text"]
        (dc,) = EXAMPLES["dialog_completion"](dialogue)
        k = dc["turn_index"]
        assert k == od["turn_index"] and dc["history"] == od["history"] and dc["reference"] == od["reference"]
        (iu,) = EXAMPLES["identify_unnatural"](dialogue)
        assert [t["text"] for t in iu["dialogue"]] == [u["original_text"] for u in dialogue["utterances"]]
        unnatural = [e for u in dialogue["utterances"] for e in u["edits"] if e["kind"] == "unnatural"]
        assert iu["unnatural_sentences"] == [e["original"] for e in unnatural]
        rewrites = EXAMPLES["rewrite_unnatural"](dialogue)
        assert [(r["sentence"], r["reference"]) for r in rewrites] == [(e["original"], e["rewrite"]) for e in unnatural]


def test_sample_example_by_hand(nico_built: Path) -> None:
    # sample-01 (train): turn 2 of 6 was rewritten from "我认为此价格偏高，两百八行不行？".
    rows = {r["dialogue_id"]: r for r in _load(nico_built, "identify_unnatural")["train"]}
    assert rows["sample-01"]["unnatural_sentences"] == ["我认为此价格偏高，"]
    assert rows["sample-01"]["dialogue"][2]["text"] == "我认为此价格偏高，两百八行不行？"
    assert rows["sample-03"]["unnatural_sentences"] == [] and rows["sample-03"]["ungrammatical_sentences"]
    rewrites = _load(nico_built, "rewrite_unnatural")["train"]
    assert len(rewrites) == 7 and rewrites[0]["reference"] == "有点贵啊，"


def test_rebuild_is_byte_identical(nico_built: Path, tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        again = build("nico", tmp_path / "nico", progress=False).path
    for path in nico_built.rglob("*"):
        if path.is_file():
            assert path.read_bytes() == (again / path.relative_to(nico_built)).read_bytes(), path


def test_sample_build_warns_and_says_so_in_the_card(nico_built: Path, tmp_path: Path) -> None:
    with pytest.warns(UserWarning, match="20-dialogue sample"):
        build("nico", tmp_path / "x", progress=False)
    assert "convbench's 20-dialogue sample, not NICO" in (nico_built / "README.md").read_text(encoding="utf-8")


def test_data_dir_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["build", "nico", "--data-dir", str(tmp_path / "none"), "--out", str(tmp_path / "o")]) == 1
    assert "NICO data folder" in capsys.readouterr().err
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x.jsonl").write_text('{"id": 1}\n')
    assert main(["build", "nico", "--data-dir", str(tmp_path / "d"), "--out", str(tmp_path / "o")]) == 1
    assert capsys.readouterr().err == "convbench: error: x.jsonl line 1: field 'id' must be a non-empty string\n"
