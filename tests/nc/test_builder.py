"""NC-Bench rows checked against the upstream files themselves (read here with plain json)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from convbench_datasets.errors import DataFormatError
from convbench_datasets.nc.patterns import pattern_table
from convbench_datasets.nc.upstream import read_set

FILES = {
    "basic": "conversation_competence.jsonl",
    "rag": "conversation_competence_rag.jsonl",
    "complex_request": "conversation_competence_open_request.jsonl",
}


def _upstream(nc_sources: Path, set_name: str) -> list[dict]:
    with open(nc_sources / "nc-bench" / FILES[set_name], encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.mark.parametrize("set_name,rows", [("basic", 180), ("rag", 180), ("complex_request", 360)])
def test_rows_per_config(nc_rows: dict, set_name: str, rows: int) -> None:
    assert len(nc_rows[set_name]) == rows


def test_rows_per_pattern(nc_rows: dict) -> None:
    # The counts: basic and rag 9 patterns x 20; complex_request as listed.
    assert Counter(r["pattern"] for r in nc_rows["basic"]) == Counter({p: 20 for p in [
        "Inquiry", "Incremental Request", "Self-Correction", "Definition Request", "Paraphrase Request",
        "Repeat Request", "Example Request", "Sequence Closer", "Sequence Abort"]})
    assert Counter(r["pattern"] for r in nc_rows["rag"]) == Counter({p: 20 for p in [
        "Inquiry", "Inquiry (Ungrounded)", "Incremental/Correction", "Definition Request", "Paraphrase Request",
        "Repeat Request", "Example Request", "Sequence Closer", "Sequence Abort"]})
    assert Counter(r["pattern"] for r in nc_rows["complex_request"]) == Counter({
        "Preliminary": 40, "Recommendation": 60, "Detail Request": 60, "Expansion": 40, "Repeat Request": 40,
        "Self-Correction": 20, "Definition Request": 20, "Paraphrase Request": 20, "Example Request": 20,
        "Sequence Closer": 20, "Sequence Abort": 20})


@pytest.mark.parametrize("set_name", list(FILES))
def test_rows_equal_upstream(nc_rows: dict, nc_sources: Path, set_name: str) -> None:
    upstream = _upstream(nc_sources, set_name)
    assert [r["id"] for r in nc_rows[set_name]] == [u["id"] for u in upstream]
    for row, raw in zip(nc_rows[set_name], upstream):
        assert row["messages"] == raw["chat_prompt"]
        assert row["task"] == raw["task"] and row["set"] == set_name
        for field in ("assistant_role", "user_role", "request_type", "request_details"):
            assert row[field] == raw.get(field, "")


def test_acceptable_labels_and_label_set_come_from_the_table(nc_rows: dict) -> None:
    table = pattern_table()
    for set_name, rows in nc_rows.items():
        for row in rows:
            entry = table.entry(set_name, row["task"])
            assert row["acceptable_labels"] == list(entry.acceptable_labels)
            assert row["label_set"] == list(entry.label_set)


def test_passage_extraction(nc_rows: dict) -> None:
    for row in nc_rows["rag"]:
        system = row["messages"][0]["content"]
        assert row["passage"] and system.endswith("\nContext: " + row["passage"])
    first = nc_rows["rag"][0]["passage"]  # upstream rag id 0, read by eye from the file
    assert first.startswith("New Delhi has one of India's largest bus transport systems.")
    assert first.endswith("New Delhi has one of the highest road density in India.")
    assert all(row["passage"] == "" for s in ("basic", "complex_request") for row in nc_rows[s])


def test_upstream_quirks_are_kept(nc_rows: dict) -> None:
    # Some basic rows open with an empty user turn; complex_request id 340 ends with an assistant turn.
    assert any(r["messages"][1] == {"role": "user", "content": ""} for r in nc_rows["basic"])
    ends = {r["id"]: r["messages"][-1]["role"] for r in nc_rows["complex_request"]}
    assert ends[340] == "assistant" and Counter(ends.values())["user"] == 359


def _write(path: Path, records: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records), encoding="utf-8")
    return path


def test_bad_rows_name_file_line_and_field(nc_sources: Path, tmp_path: Path) -> None:
    good = _upstream(nc_sources, "basic")
    table = pattern_table()
    cases = [
        ([good[0], "{not json"], "bad.jsonl line 2: not valid JSON"),
        ([good[0], {k: v for k, v in good[1].items() if k != "task"}], "bad.jsonl line 2: field 'task' is missing"),
        ([{**good[0], "id": "0"}], "bad.jsonl line 1: field 'id' must be an integer"),
        ([{**good[0], "task": "Inquiry"}], "bad.jsonl line 1: field 'task': no NC-Bench task 'Inquiry'"),
        ([{**good[0], "chat_prompt": good[0]["chat_prompt"][1:]}], "line 1: field 'chat_prompt[0]' must be the system message"),
        ([{**good[0], "extra": 1}], "line 1: unexpected field(s) ['extra']"),
        ([good[0], good[0]], "line 2: field 'id': 0 already used on line 1"),
        (good[:-1], "rows per task (found, expected) differ from the pattern table: {'sequence closer': (19, 20)}"),
    ]
    for records, message in cases:
        with pytest.raises(DataFormatError) as err:
            read_set(_write(tmp_path / "bad.jsonl", records), "basic", table)
        assert message in str(err.value)


def test_complex_request_row_needs_its_request_fields(nc_sources: Path, tmp_path: Path) -> None:
    row = _upstream(nc_sources, "complex_request")[0]
    row["request_details"] = None
    with pytest.raises(DataFormatError, match="line 1: field 'request_details' must be a string on every complex_request row"):
        read_set(_write(tmp_path / "complex.jsonl", [row]), "complex_request", pattern_table())


def test_rag_row_without_context_is_an_error(nc_sources: Path, tmp_path: Path) -> None:
    row = _upstream(nc_sources, "rag")[0]
    row["chat_prompt"][0]["content"] = row["chat_prompt"][0]["content"].replace("Context: ", "")
    with pytest.raises(DataFormatError, match="line 1: field 'chat_prompt\\[0\\]': a rag system message must contain"):
        read_set(_write(tmp_path / "rag.jsonl", [row]), "rag", pattern_table())


def test_a_build_keeps_the_released_judge_prompt_for_offline_runs(nc_sources: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # reported: `build nc` never cached the released judge prompt file (utils.py), so the README's smoke run
    # failed in a new shell without CONVBENCH_SOURCES, offline. The build copies it into the download cache
    from convbench_datasets import build
    from convbench_datasets.nc.upstream import source_files

    monkeypatch.setenv("CONVBENCH_CACHE", str(tmp_path / "cache"))
    build("nc", tmp_path / "nc", sources=nc_sources, progress=False)
    utils = source_files("code")["utils"]
    kept = tmp_path / "cache" / "sources" / utils.name
    assert kept.read_bytes() == (nc_sources / utils.name).read_bytes()
