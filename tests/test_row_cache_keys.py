"""The row cache (convbench_datasets.row_cache) is keyed on the contents of the card and of every data file: a
data file rewritten at the same size, or a card whose class names changed, is read again, never served stale."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from convbench_datasets.built_rows import read_rows

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

DATA = "main/test-00000-of-00001.parquet"


def _card(names: tuple[str, str]) -> str:
    return ("---\nconfigs:\n- config_name: main\n  data_files:\n  - split: test\n    path: " + DATA + "\n"
            "dataset_info:\n- config_name: main\n  features:\n  - name: id\n    dtype: int64\n"
            "  - name: text\n    dtype: string\n  - name: kind\n    dtype:\n      class_label:\n        names:\n"
            f"          '0': {names[0]}\n          '1': {names[1]}\n---\n# a hand-made build\n")


def _write_data(folder: Path, texts: list[str]) -> None:
    # uncompressed, plain-encoded, without statistics: a string of the same length gives a file of the same size
    table = pa.table({"id": pa.array([1, 2], pa.int64()), "text": pa.array(texts, pa.string()),
                      "kind": pa.array([0, 1], pa.int64())})
    pq.write_table(table, folder / DATA, compression="none", use_dictionary=False, write_statistics=False)


@pytest.fixture()
def build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CONVBENCH_CACHE", str(tmp_path / "cache"))  # a row cache of this test's own
    folder = tmp_path / "build"
    (folder / "main").mkdir(parents=True)
    _write_data(folder, ["hello", "bye"])
    (folder / "README.md").write_text(_card(("greeting", "farewell")), encoding="utf-8")
    return folder


def test_a_data_file_rewritten_at_the_same_size_is_read_again(build: Path, tmp_path: Path) -> None:
    # by hand: the rows written above, kind 0/1 named by the card's names in order
    assert read_rows(build, "main", "test") == [{"id": 1, "text": "hello", "kind": "greeting"},
                                                {"id": 2, "text": "bye", "kind": "farewell"}]
    assert len(list((tmp_path / "cache" / "rows").glob("*.json"))) == 1  # kept
    stat = os.stat(build / DATA)
    _write_data(build, ["jello", "bye"])  # one letter changed: other content, same size
    assert os.stat(build / DATA).st_size == stat.st_size
    os.utime(build / DATA, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # even with its old modification time
    assert read_rows(build, "main", "test") == [{"id": 1, "text": "jello", "kind": "greeting"},
                                                {"id": 2, "text": "bye", "kind": "farewell"}]
    _write_data(build, ["hello", "bye"])  # back as it was: the first entry's rows again
    assert read_rows(build, "main", "test")[0]["text"] == "hello"


def test_a_card_with_other_class_names_is_read_again(build: Path, tmp_path: Path) -> None:
    assert [r["kind"] for r in read_rows(build, "main", "test")] == ["greeting", "farewell"]
    card = build / "README.md"
    before = card.stat()
    # same length as "farewell": the card keeps its size; only its content says the new name
    card.write_text(_card(("greeting", "goodbyes")), encoding="utf-8")
    assert card.stat().st_size == before.st_size
    # a later modification time, so that the process's parsed card is parsed again (built_rows.read_card);
    # the row cache itself must tell the cards apart by what they hold
    os.utime(card, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))
    # by hand: id 1 is now the card's second name
    assert [r["kind"] for r in read_rows(build, "main", "test")] == ["greeting", "goodbyes"]
    assert [r["text"] for r in read_rows(build, "main", "test")] == ["hello", "bye"]  # the data as it was
