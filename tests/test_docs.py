"""The documentation site builds with `mkdocs build --strict` (#24): a broken link or an API name that no
longer exists fails the build, and so this test."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each test builds the whole site
ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("mkdocs", reason="the docs need the docs extra (pip install -e '.[docs]')")
pytest.importorskip("mkdocstrings", reason="the docs need the docs extra (pip install -e '.[docs]')")


def _build(root: Path, site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(root / "mkdocs.yml"),
                           "-d", str(site)], cwd=root, env=env, capture_output=True, text=True, timeout=600)


def test_the_docs_build_strictly(tmp_path: Path) -> None:
    done = _build(ROOT, tmp_path / "site")
    assert done.returncode == 0, done.stdout + done.stderr
    page = (tmp_path / "site" / "reference" / "runs" / "index.html").read_text(encoding="utf-8")
    assert "run_nc" in page and "shard" in page  # the API reference comes from the docstrings


def test_a_stale_api_name_or_broken_link_fails_the_build(tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    os.symlink(ROOT / "convbench_datasets", copy / "convbench_datasets")
    page = copy / "docs" / "reference" / "runs.md"
    original = page.read_text(encoding="utf-8")
    page.write_text(original + "\n::: convbench_datasets.runs.pipeline.no_such_function\n", encoding="utf-8")
    assert _build(copy, tmp_path / "a").returncode != 0
    page.write_text(original + "\nSee [the missing page](missing.md).\n", encoding="utf-8")
    assert _build(copy, tmp_path / "b").returncode != 0
