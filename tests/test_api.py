"""The Python API: build() summary and load() from the convbench cache."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
    assert basic.num_rows == 180 and basic[0]["set"] == "basic"
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
    import types

    import convbench_datasets.nico.builder as nico_builder
    from convbench_datasets import api

    copy = tmp_path / "nico"
    shutil.copytree(Path(nico_builder.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    fake = types.SimpleNamespace(__file__=str(copy / "builder.py"))
    monkeypatch.setattr(api.registry, "builder", lambda name: fake)
    before = api._builder_key("nico")
    sample = copy / "sample" / "dialogues.jsonl"
    assert sample.is_file()
    (copy / "__pycache__").mkdir()
    (copy / "__pycache__" / "builder.cpython-311.pyc").write_bytes(b"bytecode")  # not a source of the build
    (copy / ".builder.py.swp").write_bytes(b"editor")  # nor an editor's swap file
    assert api._builder_key("nico") == before
    sample.write_text(sample.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert api._builder_key("nico") != before
