"""The TCR reader on the release's own layout (tests/cocoeval/fixtures/tcr/SIM.json, written here in that
shape: source -> meeting -> {metadata, topics keyed by text -> transcripts}) and TCR builds."""

from __future__ import annotations

import copy
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from convbench_datasets.cocoeval.conversations import read_tcr
from convbench_datasets.errors import BuildError, DataFormatError

FIXTURE = Path(__file__).parent / "fixtures" / "tcr" / "SIM.json"
VENUE, CATERING = "Choosing a venue for the spring offsite", "Catering budget"


def _release() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def _write(folder: Path, data: Any, name: str = "SIM.json") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(data), encoding="utf-8")
    return folder / name


def test_meeting_is_all_topics_lines_by_start_then_line_id() -> None:
    counts: Counter = Counter()
    offsite, standup = read_tcr("sim", FIXTURE, counts)
    # Hand-ordered from the fixture by (start_s, line_id): 0 (0.0 s), 1 (6.4), 2 and 3 (both 20.0: line_id
    # decides, though the file lists 3 first), 4 (30.0), 6 (39.0, before line 5 at 40.0), 5, 7 (55.0).
    assert [(t["speaker"], t["utterance"]) for t in offsite["turns"]] == [
        ("speaker_1", "Shall we settle the venue for the spring offsite today?"),
        ("speaker_2", "The lake lodge still has the last week of April free."),
        ("speaker_1", "And what would lunch cost us there?"),
        ("speaker_3", "Catering there runs about forty dollars a head."),
        ("speaker_1", "Does that include coffee in the afternoon?"),
        ("speaker_2", "That fits if we skip the dinner cruise."),
        ("speaker_1", "Then the lodge it is, if the budget holds."),
        ("speaker_2", "I will book the lodge tomorrow morning."),
    ]
    # goals begin at their first line; the empty topic has none and is never a goal
    assert offsite["topics"] == [(VENUE, 0), (CATERING, 2)]
    assert offsite["id"] == "sim_offsite_01" and offsite["source"] == "sim" and offsite["material"] == "test"
    assert offsite["participants"] == ["speaker_1", "speaker_2", "speaker_3"]
    # line 1 of the stand-up is listed under both of its topics: one turn, and both topics start there
    assert [t["utterance"] for t in standup["turns"]][:3] == [
        "Morning, everyone, quick round please.", "I finished the export screen yesterday.",
        "Has anyone called about the projector yet?"]
    assert len(standup["turns"]) == 4 and standup["topics"] == [("Sprint review", 0), ("Projector repair", 1)]
    assert counts["tcr_empty_topics"] == 1 and counts["tcr_shared_lines"] == 1


def _lines(data: dict, meeting: str = "sim_offsite_01", topic: str = CATERING) -> list[dict]:
    return data["SIM"][meeting]["topics"][topic]["transcripts"]


WHERE = r"SIM.json: meeting 'sim_offsite_01': topic 'Catering budget': transcripts\[0\]: "
BROKEN = {
    "no line_id": (lambda d: _lines(d)[0].pop("line_id"), WHERE + r"field 'line_id' must be a number, got None"),
    "text start": (lambda d: _lines(d)[0].update(start_s="ten"), WHERE + r"field 'start_s' must be a number, got 'ten'"),
    "nan start": (lambda d: _lines(d)[0].update(start_s=float("nan")), WHERE + r"field 'start_s' must be a number, got nan"),
    "bool id": (lambda d: _lines(d)[0].update(line_id=True), WHERE + r"field 'line_id' must be a number, got True"),
    "no speaker": (lambda d: _lines(d)[0].pop("speaker"), WHERE + r"field 'speaker' must be a string, got None"),
    "number contents": (lambda d: _lines(d)[0].update(contents=7), WHERE + r"field 'contents' must be a string, got 7"),
    "line not object": (lambda d: _lines(d).__setitem__(0, "hello"), WHERE + r"expected an object, got str"),
    "old singular key": (lambda d: d["SIM"]["sim_offsite_01"]["topics"][CATERING].update(transcript=_lines(d), transcripts=None),
                         r"SIM.json: meeting 'sim_offsite_01': topic 'Catering budget': field 'transcripts' must be a list"),
    "topics as list": (lambda d: d["SIM"]["sim_offsite_01"].update(topics=[]),
                       r"SIM.json: meeting 'sim_offsite_01': field 'topics' must be an object keyed by topic text"),
    "clashing line": (lambda d: _lines(d, topic=VENUE)[0].update(line_id=3.0),
                      r"topic 'Catering budget': transcripts\[0\]: line_id 3.0 is also under topic "
                      r"'Choosing a venue for the spring offsite' with other speaker, time or contents"),
    "meetings not object": (lambda d: d.update(SIM=[]), r"SIM.json: source 'SIM': expected an object of meetings"),
    "same meeting twice": (lambda d: d.update(OTHER={"sim_standup_02": d["SIM"]["sim_standup_02"]}),
                           r"SIM.json: meeting 'sim_standup_02' appears under 'SIM' and 'OTHER'"),
}


@pytest.mark.parametrize("case", BROKEN)
def test_malformed_release_names_file_meeting_topic_and_line(case: str, tmp_path: Path) -> None:
    data = _release()
    change, message = BROKEN[case]
    change(data)
    with pytest.raises(DataFormatError, match=message):
        read_tcr("sim", _write(tmp_path, data), Counter())


@pytest.mark.parametrize(("text", "message"), [("[1, 2]", "expected one object keyed by data source"),
                                               ("{}", "expected one object keyed by data source"),
                                               ('{"SIM": {}}', "SIM.json: no meetings"),
                                               ('{"SIM": ', "SIM.json: not valid JSON")])
def test_malformed_file_is_named(text: str, message: str, tmp_path: Path) -> None:
    (tmp_path / "SIM.json").write_text(text)
    with pytest.raises(DataFormatError, match=message):
        read_tcr("sim", tmp_path / "SIM.json", Counter())


def _long_release(group: str, meetings: int, lines: int) -> dict[str, Any]:
    """The fixture's shape and dialogue, lengthened: each meeting's lines alternate between two topics
    (so only start_s restores the meeting) and say their own number, e.g. "Point 7: ..."."""
    phrases = [t["contents"] for t in _lines(_release(), topic=VENUE) + _lines(_release())]
    template = _release()["SIM"]["sim_offsite_01"]
    out: dict[str, Any] = {}
    for m in range(meetings):
        meeting = copy.deepcopy(template)
        all_lines = [{"line_id": float(i), "speaker": f"speaker_{i % 3}", "start_s": 5.0 * i, "end_s": 5.0 * i + 4.0,
                      "contents": f"Point {i}: {phrases[i % len(phrases)]}", "word_count": 8.0, "cum_wc": 8.0 * i}
                     for i in range(lines)]
        topics = meeting["topics"]
        topics[VENUE]["transcripts"] = all_lines[0::2]
        topics[CATERING]["transcripts"] = all_lines[1::2]
        out[f"{group.lower()}_{m:02d}"] = meeting
    return {group: out}


def test_sim_and_ncpc_files_give_the_papers_six_sources(tmp_path: Path, qmsum_iq2_sources: Path) -> None:
    import datasets

    from convbench_datasets import build

    data = tmp_path / "data"
    _write(data, _long_release("SIM", 30, 130), "SIM.json")  # 130 // 60 = 2 windows a meeting: 60 >= 50
    _write(data, _long_release("NCPC", 25, 130), "NCPC.json")  # 50 windows: exactly enough
    summary = build("cocoeval", tmp_path / "out", sources=qmsum_iq2_sources, data_dir=data, progress=False)
    assert summary.rows["sim"] == {"test": 50, "train": 0} and summary.rows["ncpc"] == {"test": 50, "train": 0}
    assert summary.rows["all"]["test"] == 300  # six sources, 50 each (the paper's 300)
    rows = datasets.load_dataset(str(tmp_path / "out"), "ncpc", split="test").to_list()
    for row in rows:  # each window is consecutive lines of the meeting, though its topics interleave
        numbers = [int(t["utterance"].split(":")[0].split()[1]) for t in row["history"] + row["reference"]]
        assert numbers == list(range(row["start_turn"] - 30, row["start_turn"] + 30))
    card = (tmp_path / "out" / "README.md").read_text()
    assert "`SIM.json` (30 meetings); `NCPC.json` (25 meetings); 55 topics without lines" in card


def test_either_file_alone_builds(tmp_path: Path, qmsum_iq2_sources: Path) -> None:
    from convbench_datasets import build

    _write(tmp_path / "data", _long_release("NCPC", 25, 130), "NCPC.json")
    summary = build("cocoeval", tmp_path / "out", sources=qmsum_iq2_sources, data_dir=tmp_path / "data", progress=False)
    assert summary.rows["ncpc"]["test"] == 50 and "sim" not in summary.rows and summary.rows["all"]["test"] == 250


def test_folder_without_release_files_says_the_expected_names(tmp_path: Path, qmsum_iq2_sources: Path) -> None:
    from convbench_datasets import build

    _write(tmp_path / "data" / "sim", {"m1": {}}, "part1.json")  # convbench's old sim/*.json form
    with pytest.raises(BuildError, match="no TCR files in .*data: expected SIM.json and/or NCPC.json there"):
        build("cocoeval", tmp_path / "out", sources=qmsum_iq2_sources, data_dir=tmp_path / "data", progress=False)
