"""The TCR reader on a fixture written here in that format: topic groups, line ids, order restored."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from convbench_datasets.cocoeval.conversations import read_tcr
from convbench_datasets.errors import DataFormatError


def _meeting(n_turns: int, seed: int) -> dict:
    # Two topic groups whose lines interleave in time: meeting order must come from line_id.
    # start_s runs backwards (clock reset), so only line_id gives the meeting order
    lines = [{"line_id": i, "speaker": f"S{i % 3}", "start_s": 1000.0 - i, "contents": f"point {i} {{vocalsound}} ."}
             for i in range(n_turns)]
    return {"topics": [{"topic": "budget", "transcript": [l for l in lines if l["line_id"] % 4 < 2]},
                       {"topic": "schedule", "transcript": [l for l in lines if l["line_id"] % 4 >= 2]}]}


def test_order_is_restored_and_turns_cleaned(tmp_path: Path) -> None:
    (tmp_path / "sim").mkdir()
    (tmp_path / "sim" / "part1.json").write_text(json.dumps({"m1": _meeting(12, 0)}))
    counts: Counter = Counter()
    (conversation,) = read_tcr("sim", tmp_path, counts)
    assert [t["utterance"] for t in conversation["turns"]] == [f"point {i}." for i in range(12)]
    assert conversation["topics"] == [("budget", 0), ("schedule", 2)]
    assert counts["markers"] == 12 and conversation["participants"] == ["S0", "S1", "S2"]


def test_bad_tcr_lines_name_the_place(tmp_path: Path) -> None:
    (tmp_path / "ncpc").mkdir()
    meeting = _meeting(4, 0)
    del meeting["topics"][1]["transcript"][0]["line_id"]
    (tmp_path / "ncpc" / "x.json").write_text(json.dumps({"m9": meeting}))
    with pytest.raises(DataFormatError, match=r"x.json: meeting 'm9': field 'topics\[1\].transcript\[0\]' needs an integer 'line_id'"):
        read_tcr("ncpc", tmp_path, Counter())


def test_tcr_sources_build_into_their_own_config(tmp_path: Path, qmsum_iq2_sources: Path) -> None:
    from convbench_datasets import build

    (tmp_path / "data" / "sim").mkdir(parents=True)
    meetings = {f"m{i:02d}": _meeting(130, i) for i in range(30)}  # 2 windows each: 60 possible
    (tmp_path / "data" / "sim" / "meetings.json").write_text(json.dumps(meetings))
    summary = build("cocoeval", tmp_path / "out", sources=qmsum_iq2_sources, data_dir=tmp_path / "data", progress=False)
    assert summary.rows["sim"]["test"] == 50 and "ncpc" not in summary.rows
    assert summary.rows["all"]["test"] == 250


def test_bad_start_time_is_named(tmp_path: Path) -> None:
    (tmp_path / "sim").mkdir()
    meeting = _meeting(4, 0)
    meeting["topics"][0]["transcript"][0]["start_s"] = "ten"
    (tmp_path / "sim" / "x.json").write_text(json.dumps({"m1": meeting}))
    with pytest.raises(DataFormatError, match="'start_s' must be a number, got 'ten'"):
        read_tcr("sim", tmp_path, Counter())
