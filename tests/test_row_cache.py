"""Rows read from a build are kept as JSON in convbench's cache (convbench_datasets.row_cache): a later read
gives the same rows without pyarrow, and a data file changed in any way is read from parquet again."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from convbench_datasets.built_rows import RowRules, read_rows
from convbench_datasets.errors import DataFormatError

NC_FILE = "basic/test-00000-of-00001.parquet"


@pytest.fixture()
def build(nc_built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CONVBENCH_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "nc"
    shutil.copytree(nc_built, folder)
    return folder


def _fresh_read(folder: Path, cache: Path) -> tuple[list[dict], bool]:
    """The rows a fresh interpreter reads, and whether it imported pyarrow to read them."""
    code = ("import json, sys; from convbench_datasets.built_rows import read_rows; "
            f"rows = read_rows({str(folder)!r}, 'all', 'test'); print(json.dumps([rows, 'pyarrow' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                         env={**os.environ, "CONVBENCH_CACHE": str(cache)})
    rows, imported = json.loads(out.stdout)
    return rows, imported


def test_a_second_read_gives_the_same_rows_without_pyarrow(build: Path, tmp_path: Path) -> None:
    first, imported_first = _fresh_read(build, tmp_path / "cache")
    second, imported_second = _fresh_read(build, tmp_path / "cache")
    assert imported_first and not imported_second
    assert second == first and len(first) == 720
    assert repr(read_rows(build, "all", "test")) == repr(read_rows(build, "all", "test"))  # types and key order too
    assert len(list((tmp_path / "cache" / "rows").glob("*.json"))) == 1  # the only thing written, in our cache


def test_a_rewritten_file_is_read_again(build: Path, tmp_path: Path) -> None:
    before = read_rows(build, "basic", "test")
    table = pq.read_table(build / NC_FILE)
    rows = table.to_pylist()
    rows[0]["passage"] = "x" * len(rows[0]["passage"] or "y")  # same length: same size on disk is likely
    stat = os.stat(build / NC_FILE)
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), build / NC_FILE)
    os.utime(build / NC_FILE, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # even with its old modification time
    after = read_rows(build, "basic", "test")
    assert after[0]["passage"] == rows[0]["passage"] != before[0]["passage"]
    assert after[1:] == before[1:]


def test_kept_rows_are_still_checked_naming_the_parquet_file(build: Path) -> None:
    read_rows(build, "basic", "test")  # kept
    rules = RowRules({"id": int, "passage": int})
    with pytest.raises(DataFormatError, match=rf"^{build / NC_FILE}: row 0: field 'passage' must be a whole number"):
        read_rows(build, "basic", "test", rules=rules)


def test_a_cache_that_cannot_be_written_is_skipped(build: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder would be\n", encoding="utf-8")
    monkeypatch.setenv("CONVBENCH_CACHE", str(blocked))
    assert len(read_rows(build, "basic", "test")) == 180
    assert blocked.read_text(encoding="utf-8") == "a file where the cache folder would be\n"  # untouched


@pytest.mark.parametrize("damage", [
    "{not json",
    # reported: valid JSON of the wrong rows was taken for the build's and blamed on its parquet ("build it again",
    # which cannot fix a cache entry); an entry whose rows do not match their digest is damaged
    json.dumps({"sha256": "0" * 64, "value": [[{"id": "wrong"}]]}),
    json.dumps([[{"id": "the layout before digests"}]]),
])
def test_a_damaged_entry_is_ignored_said_and_written_again(build: Path, tmp_path: Path, damage: str) -> None:
    rows = read_rows(build, "basic", "test")
    (entry,) = (tmp_path / "cache" / "rows").glob("*.json")
    entry.write_text(damage, encoding="utf-8")
    with pytest.warns(UserWarning, match=rf"^convbench cache: {entry} was damaged; ignored, and written again"):
        assert read_rows(build, "basic", "test") == rows
    assert json.loads(entry.read_text(encoding="utf-8"))["value"][0] == rows  # written again
