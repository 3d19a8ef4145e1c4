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
