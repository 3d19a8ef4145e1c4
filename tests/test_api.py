"""The Python API: build() summary and load() from the convbench cache."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from convbench_datasets import build, list_benchmarks, load


def test_list_benchmarks() -> None:
    assert [b.name for b in list_benchmarks()] == ["nc", "nico", "cocoeval"]
    (nc,) = [b for b in list_benchmarks() if b.name == "nc"]
    assert nc.configs == {"basic": {"test": 180}, "rag": {"test": 180}, "complex_request": {"test": 360}, "all": {"test": 720}}


def test_build_summary(nc_sources: Path, tmp_path: Path) -> None:
    summary = build("nc", tmp_path / "out", sources=nc_sources, progress=False)
    assert summary.rows["rag"] == {"test": 180} and summary.path == tmp_path / "out"


def test_load_builds_once_into_the_cache(nc_sources: Path, tmp_path: Path) -> None:
    basic = load("nc", "basic", split="test", sources=nc_sources, cache_dir=tmp_path)
    assert basic.num_rows == 180 and basic.features["set"].int2str(basic[0]["set"]) == "basic"  # a ClassLabel
    (card,) = (tmp_path / "hub").glob("nc-*/README.md")
    stamp = card.stat().st_mtime_ns
    everything = load("nc", sources=nc_sources, cache_dir=tmp_path)
    assert everything["test"].num_rows == 720
    assert card.stat().st_mtime_ns == stamp  # reused, not rebuilt


def test_import_is_light() -> None:
    code = "import sys, convbench_datasets; print(sorted(m for m in ('torch', 'transformers', 'datasets', 'pyarrow', 'evaluate') if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_the_build_cache_key_covers_every_data_file_of_the_builder(tmp_path: Path, monkeypatch) -> None:
    # load() reuses a cached build while _builder_key is unchanged, so an edit to any file that shapes
    # the build must change it. Before: only .py/.yaml/.json/.md/.txt counted, so editing the NICO
    # sample (nico/sample/dialogues.jsonl) kept serving the old build.
    import shutil

    import convbench_datasets.nico.builder as nico_builder
    from convbench_datasets import api

    copy = tmp_path / "nico"
    shutil.copytree(Path(nico_builder.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(api.registry, "builder_file", lambda name: str(copy / "builder.py"))
    before = api._builder_key("nico")
    sample = copy / "sample" / "dialogues.jsonl"
    assert sample.is_file()
    (copy / "__pycache__").mkdir()
    (copy / "__pycache__" / "builder.cpython-311.pyc").write_bytes(b"bytecode")  # not a source of the build
    (copy / ".builder.py.swp").write_bytes(b"editor")  # nor an editor's swap file
    assert api._builder_key("nico") == before
    sample.write_text(sample.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert api._builder_key("nico") != before


# --- load() reads a build through the parquet builder and the card parsed once (issue #14, "Speed at scale") --
# The reference is what load() returned before: datasets.load_dataset(str(folder), config, split=split).

def _folder_load(folder: Path, config, split=None):
    import datasets

    return datasets.load_dataset(str(folder), config, split=split)


def _use_build(monkeypatch, folder: Path) -> None:
    from convbench_datasets import api

    monkeypatch.setattr(api, "_cached_build", lambda name, sources, cache_dir: folder)


@pytest.mark.parametrize("config", ["basic", "rag", "complex_request", "all", None])
def test_load_equals_load_dataset_of_the_folder(nc_built: Path, monkeypatch, config) -> None:
    _use_build(monkeypatch, nc_built)
    ours, theirs = load("nc", config, split="test"), _folder_load(nc_built, config, "test")
    assert ours.features == theirs.features and ours.num_rows == theirs.num_rows
    assert ours.info.config_name == theirs.info.config_name == (config or "all")  # "all": the card's default
    assert repr(ours.to_list()) == repr(theirs.to_list())
    # the parquet builder given the card's files: load_dataset(folder) names the dataset after the folder
    assert ours.info.dataset_name == "parquet"


def test_load_keeps_split_names_order_and_slices(nico_built: Path, monkeypatch) -> None:
    _use_build(monkeypatch, nico_built)
    ours, theirs = load("nico", "dialogs"), _folder_load(nico_built, "dialogs")
    assert list(ours) == list(theirs) == ["train", "validation", "test"]
    for split in ours:
        assert ours[split].features == theirs[split].features and ours[split].to_list() == theirs[split].to_list()
    assert load("nico", "open_domain", split="train[:3]").to_list() == _folder_load(nico_built, "open_domain", "train[:3]").to_list()


def test_warm_load_does_not_parse_the_card_again(nc_built: Path, monkeypatch) -> None:
    # Before: every load_dataset(folder) parsed the README's YAML (55% of a warm load, issue #14).
    import datasets.load

    from convbench_datasets import built_rows

    _use_build(monkeypatch, nc_built)
    load("nc", "basic", split="test")
    parsed = []
    monkeypatch.setattr(built_rows, "_parse_card", lambda *a: parsed.append(a))
    monkeypatch.setattr(datasets.load.DatasetCard, "load", lambda *a, **k: parsed.append(a))
    assert load("nc", "rag", split="test").num_rows == 180 and parsed == []


def test_what_the_card_does_not_settle_is_left_to_datasets(nc_built: Path, tmp_path: Path, monkeypatch) -> None:
    # An unknown config or split fails as it did before, with datasets' words. A build whose rows disagree
    # with its card is refused: load_dataset(folder) raised only on its first load of that folder name and
    # card, and afterwards returned the copy it had cached (keyed on the name and card, not the files).
    import shutil

    import pyarrow.parquet as pq

    from convbench_datasets.errors import ConvbenchError

    _use_build(monkeypatch, nc_built)
    with pytest.raises(ValueError, match="BuilderConfig 'basics' not found. Available: \\['basic', 'rag', 'complex_request', 'all'\\]"):
        load("nc", "basics")
    with pytest.raises(ValueError, match='Unknown split "train". Should be one of \\[\'test\'\\]'):
        load("nc", "basic", split="train")
    copy = tmp_path / "nc"
    shutil.copytree(nc_built, copy)
    rag = copy / "rag" / "test-00000-of-00001.parquet"
    pq.write_table(pq.read_table(rag).slice(0, 10), rag)  # 10 rows where the card says 180
    _use_build(monkeypatch, copy)
    with pytest.raises(ConvbenchError, match="config 'rag' split 'test' has 10 rows in its data files but its card says 180"):
        load("nc", "rag", split="test")
    assert load("nc", "basic", split="test").num_rows == 180  # the untouched config still loads
