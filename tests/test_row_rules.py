"""A dataset folder a run reads (issue 19): each bad row is one line naming the file, the row and the field, before
any model is called; a damaged parquet file names its path."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from convbench_datasets.built_rows import NonEmpty, RowRules, check_rows, read_rows, shape_problem
from convbench_datasets.cli import main
from convbench_datasets.cocoeval.schema import row_rules as cocoeval_rules
from convbench_datasets.errors import DataFormatError
from convbench_datasets.nc.patterns import pattern_table

NC_FILE = "basic/test-00000-of-00001.parquet"
_RAG_ONLY_TASK = pattern_table().all_tasks.index("inquiry ungrounded")  # its class id in the task column


def _edited(built: Path, tmp_path: Path, relative: str, edit: Callable[[list[dict[str, Any]]], None]) -> tuple[Path, Path]:
    """A copy of the build ``built`` whose data file ``relative`` has its rows changed by ``edit``."""
    folder = tmp_path / "build"
    shutil.copytree(built, folder)
    path = folder / relative
    table = pq.read_table(path)
    rows = table.to_pylist()
    edit(rows)
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
    return folder, path


def _run_nc(folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    out = tmp_path / "run"
    code = main(["run", "nc", "--config", "basic", "--model", "baseline:repeat", "--judge", "baseline:smoke-judge",
                 "--dataset", str(folder), "--out", str(out), "--cache", str(tmp_path / "c.sqlite"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert not (out / "results.json").exists()  # refused before any row ran
    return err


def _set(row: int, field: str, value: Any) -> Callable[[list[dict[str, Any]]], None]:
    def edit(rows: list[dict[str, Any]]) -> None:
        rows[row][field] = value
    return edit


@pytest.mark.parametrize("edit, says", [
    (_set(3, "messages", None), "row 3: field 'messages' must be a non-empty list of {role: string, content: string}, got None"),
    (_set(3, "messages", []), "row 3: field 'messages' must be a non-empty list"),
    # set, task and pattern are ClassLabel ids on disk (3 sets; basic ids 0-2): an id past the names, or the
    # id of a task that only another set has
    (_set(3, "set", 3), "row 3: field 'set' must be a class id of its 3 names (0-2), got 3: the build is damaged"),
    (_set(3, "task", _RAG_ONLY_TASK), "row 3: field 'task' must be a task of set 'basic' (the pattern table's), "
                                      "got 'inquiry ungrounded'"),
    (_set(5, "acceptable_labels", []), "row 5: field 'acceptable_labels' must be a non-empty list of strings, got []"),
    (_set(5, "passage", None), "row 5: field 'passage' must be a string, got None"),
])
def test_a_bad_nc_row_names_its_file_row_and_field(edit: Any, says: str, nc_built: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    folder, path = _edited(nc_built, tmp_path, NC_FILE, edit)
    assert f"convbench: error: {path}: {says}" in _run_nc(folder, tmp_path, capsys)


def test_a_bad_message_role_is_named(nc_built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def edit(rows: list[dict[str, Any]]) -> None:
        rows[2]["messages"][1]["role"] = "narrator"
    folder, path = _edited(nc_built, tmp_path, NC_FILE, edit)
    assert f"{path}: row 2: field 'messages[1].role' must be one of system, user, assistant, got 'narrator'" in \
        _run_nc(folder, tmp_path, capsys)


def test_duplicate_ids_are_refused(nc_built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def edit(rows: list[dict[str, Any]]) -> None:
        rows[3]["id"] = rows[2]["id"]
    folder, path = _edited(nc_built, tmp_path, NC_FILE, edit)
    rows = pq.read_table(path).to_pylist()
    assert (f"{path}: row 3: fields 'set' and 'id' ('basic', {rows[2]['id']}) repeat row 2 of {path}; each row needs "
            "its own") in _run_nc(folder, tmp_path, capsys)


@pytest.mark.parametrize("damage", [lambda data: b"not parquet" * 20, lambda data: data[: len(data) // 2]])
def test_a_damaged_parquet_file_is_named(damage: Callable[[bytes], bytes], nc_built: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "build"
    shutil.copytree(nc_built, folder)
    path = folder / NC_FILE
    path.write_bytes(damage(path.read_bytes()))
    assert f"convbench: error: {path}: cannot read it as parquet (config 'basic', split 'test'; damaged? build it " \
           "again)" in _run_nc(folder, tmp_path, capsys)


def test_a_bad_nico_row_names_its_file_row_and_field(nico_built: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    relative = next(p.relative_to(nico_built).as_posix() for p in nico_built.rglob("*.parquet")
                    if p.parent.name == "open_domain" and p.name.startswith("train"))
    folder, path = _edited(nico_built, tmp_path, relative, _set(1, "reference", None))
    code = main(["run", "nico", "--task", "open_domain", "--split", "train", "--model", "baseline:repeat",
                 "--dataset", str(folder), "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "c.sqlite"),
                 "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1 and f"{path}: row 1: field 'reference' must be a string, got None" in err


def test_rows_read_straight_from_a_build_are_checked_too(nc_built: Path, tmp_path: Path) -> None:
    from convbench_datasets.nc.schema import row_rules

    assert len(read_rows(nc_built, "all", "test", rules=row_rules())) == 720  # the real build passes
    folder, path = _edited(nc_built, tmp_path, NC_FILE, _set(0, "id", None))
    with pytest.raises(DataFormatError, match=rf"^{path}: row 0: field 'id' must be a whole number, got None$"):
        read_rows(folder, "basic", "test", rules=row_rules())


def test_cocoeval_rows_are_checked_field_by_field() -> None:
    turns = [{"speaker": "A", "utterance": "hello"}]
    row = {"id": "qmsum/x/30", "source": "qmsum_product", "conversation_id": "x", "start_turn": 30,
           "metadata": {"setting": "a meeting", "participants": ["A"], "goals": []}, "summary": "",
           "summary_method": "extractive", "history": turns, "reference": turns}
    rules = cocoeval_rules()
    assert rules.problem(row) is None
    assert rules.problem({**row, "reference": []}) == ("field 'reference' must be a non-empty list of {speaker: string, "
                                                       "utterance: string}, got []")
    assert rules.problem({**row, "metadata": {**row["metadata"], "participants": None}}) == \
        "field 'metadata.participants' must be a list of strings, got None"
    with pytest.raises(DataFormatError, match=r"^hub/x \(config 'all', split 'test'\): row 1: field 'id' "):
        check_rows([row, dict(row)], rules, "hub/x (config 'all', split 'test')")


def test_shapes_refuse_bools_for_numbers_and_nulls_everywhere() -> None:
    assert shape_problem(True, int, "id") == "field 'id' must be a whole number, got True"
    assert shape_problem([None], [str], "labels") == "field 'labels[0]' must be a string, got None"
    assert shape_problem("", NonEmpty(str), "text") == "field 'text' must be a non-empty string, got ''"
    assert RowRules({"id": int}).problem(["not", "a", "row"]) == "expected a row (a mapping of fields), got list"
