"""YAML parsed once per content (convbench_datasets/parsed_yaml.py): the cached data is PyYAML's, for the same
text only, with the same types; what JSON cannot give back is never kept; a command that read its tables
before imports no PyYAML (#20: ~35 ms of every command's start-up)."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from convbench_datasets import parsed_yaml

TEXT = "name: Repeat Request\nlabels: [Repeat, Partial Repeat]\nweight: 1.0\ncount: 3\nok: true\nnone: null\n"


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CONVBENCH_CACHE", str(tmp_path))
    return tmp_path / "yaml"


def _no_pyyaml(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(text: str) -> None:
        raise AssertionError("PyYAML was asked to parse a text kept in the cache")

    monkeypatch.setattr(parsed_yaml, "_parse_with_pyyaml", refuse)


def test_the_second_parse_of_a_text_comes_from_the_cache_with_the_same_types(cache: Path, monkeypatch) -> None:
    first = parsed_yaml.parse(TEXT)
    assert first == yaml.safe_load(TEXT)
    assert len(list(cache.glob("*.json"))) == 1
    _no_pyyaml(monkeypatch)
    again = parsed_yaml.parse(TEXT)
    assert again == first
    assert [type(again[k]) for k in ("weight", "count", "ok", "none")] == [float, int, bool, type(None)]


def test_an_edited_text_is_parsed_again(cache: Path) -> None:
    parsed_yaml.parse(TEXT)
    edited = TEXT.replace("count: 3", "count: 4")
    assert parsed_yaml.parse(edited)["count"] == 4
    assert len(list(cache.glob("*.json"))) == 2


@pytest.mark.parametrize("text, value", [
    ("day: 2024-01-31\n", {"day": datetime.date(2024, 1, 31)}),  # a date: JSON has none
    ("1: one\n", {1: "one"}),  # an integer key: JSON's keys are strings
    ("x: .nan\n", None),  # NaN: not JSON
])
def test_data_json_cannot_give_back_is_not_kept(cache: Path, text: str, value: object) -> None:
    parsed = parsed_yaml.parse(text)
    if value is not None:
        assert parsed == value
    assert not cache.exists() or not list(cache.glob("*.json"))


@pytest.mark.parametrize("damage", ["{not json", json.dumps({"data": None}),  # reported: the second gave a traceback
                                    json.dumps({"sha256": "0" * 64, "value": None}), "\udcff"])
def test_a_damaged_entry_is_parsed_again_said_and_rewritten(cache: Path, damage: str) -> None:
    parsed_yaml.parse(TEXT)
    (entry,) = cache.glob("*.json")
    entry.write_text(damage, encoding="utf-8", errors="surrogateescape")
    with pytest.warns(UserWarning, match=rf"^convbench cache: {entry} was damaged; ignored, and written again"):
        assert parsed_yaml.parse(TEXT) == yaml.safe_load(TEXT)
    assert json.loads(entry.read_text(encoding="utf-8"))["value"] == yaml.safe_load(TEXT)


def test_text_that_does_not_parse_is_an_error_with_pyyamls_message(cache: Path) -> None:
    with pytest.raises(parsed_yaml.InvalidYAML, match="mapping values are not allowed"):
        parsed_yaml.parse("a: b: c\n")
    assert not cache.exists()


def test_keep_false_neither_reads_nor_writes_the_cache(cache: Path, monkeypatch) -> None:
    assert parsed_yaml.parse(TEXT, keep=False) == yaml.safe_load(TEXT)
    assert not cache.exists()
    parsed_yaml.parse(TEXT)  # kept now
    calls: list[str] = []
    real = parsed_yaml._parse_with_pyyaml
    monkeypatch.setattr(parsed_yaml, "_parse_with_pyyaml", lambda text: calls.append(text) or real(text))
    parsed_yaml.parse(TEXT, keep=False)
    assert calls == [TEXT]


def test_a_command_that_read_its_tables_before_imports_no_pyyaml(tmp_path: Path) -> None:
    code = ("import sys; from convbench_datasets.nc.patterns import pattern_table; "
            "from convbench_datasets.nc.judge_output import vocabulary; pattern_table(); vocabulary(); "
            "print('yaml' in sys.modules)")
    env = {"CONVBENCH_CACHE": str(tmp_path), "PATH": "/usr/bin:/bin"}
    runs = [subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True).stdout
            for _ in range(2)]
    assert runs == ["True\n", "False\n"]


def test_data_utf8_cannot_hold_is_not_kept_and_leaves_no_scratch_file(cache: Path) -> None:
    from convbench_datasets.cache_dir import write_entry

    write_entry(cache / "x.json", "lone \ud800 surrogate")
    assert not cache.exists() or list(cache.iterdir()) == []
