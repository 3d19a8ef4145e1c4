"""Reading the sources into conversations: QMSum meetings, IQ2 debates, and TCR meetings (SIM, NCPC).

A conversation is ``{"id", "source", "material", "setting", "participants", "topics", "turns"}`` where
``material`` is ``test`` (test and validation material: evaluation instances come from it first) or
``train``; ``turns`` are ``{"speaker", "utterance", "position"}`` with ``position`` the turn's index in the
source transcript (topics point into it); ``topics`` are ``(text, first position)``.
"""

from __future__ import annotations

import json
import random
import zipfile
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

from .._resources import read_yaml
from ..errors import DataFormatError
from ..sources import SourceFile, fetch
from .cleaning import clean_turns

SETTINGS = {
    "qmsum_product": "a product design team meeting (AMI corpus): the team designs a new remote control",
    "qmsum_academic": "a research group's weekly meeting (ICSI meeting corpus)",
    "qmsum_committee": "a parliamentary committee meeting (Welsh Parliament or Canadian House of Commons)",
    "iq2": "an Oxford-style public debate (Intelligence Squared US): two teams argue for and against a motion",
    "sim": "a recorded group meeting (SIM, Topic-Conversation Relevance dataset)",
    "ncpc": "a public commission meeting (NCPC, Topic-Conversation Relevance dataset)",
}
QMSUM_DOMAINS = {"qmsum_product": "Product", "qmsum_academic": "Academic", "qmsum_committee": "Committee"}
IQ2_TEST_SHARE = 0.5  # IQ2 has no split: a seeded half of the debates is test material
MATERIAL_SEED = 0


def pins() -> dict[str, Any]:
    return read_yaml(__package__, "sources.yaml")


def qmsum_sources(domain: str | None = None) -> list[SourceFile]:
    spec = pins()["qmsum"]
    return [
        SourceFile(f"{spec['mirror_folder']}/{path}", spec["raw_url"].format(commit=spec["commit"], path=path), sha)
        for path, sha in spec["files"].items()
        if domain is None or path.split("/")[1] == domain
    ]


def iq2_source() -> SourceFile:
    spec = pins()["iq2"]
    path = spec["file"]["path"]
    return SourceFile(f"{spec['mirror_folder']}/{path.rsplit('/', 1)[-1]}",
                      spec["raw_url"].format(commit=spec["commit"], path=path), spec["file"]["sha256"])


def read_qmsum(source: str, sources_dir: Any, counts: Counter, progress: bool = True) -> list[dict[str, Any]]:
    conversations = []
    for src in qmsum_sources(QMSUM_DOMAINS[source]):
        path = fetch(src, sources_dir=sources_dir, progress=progress)
        split = src.name.split("/")[-2]
        try:
            meeting = json.loads(path.read_text(encoding="utf-8"))
            raw = [{"speaker": t["speaker"], "utterance": t["content"], "position": i}
                   for i, t in enumerate(meeting["meeting_transcripts"])]
            topics = [(t["topic"], min(int(span[0]) for span in t["relevant_text_span"])) for t in meeting["topic_list"]]
        except (KeyError, TypeError, ValueError) as err:
            raise DataFormatError(f"{src.name}: not a QMSum meeting ({err!r})") from err
        conversations.append(_conversation(src.name.rsplit("/", 1)[-1][:-5], source, "train" if split == "train" else "test",
                                           raw, topics, counts))
    return conversations


def read_iq2(sources_dir: Any, counts: Counter, progress: bool = True) -> list[dict[str, Any]]:
    spec = pins()["iq2"]
    debates = _zip_member(fetch(iq2_source(), sources_dir=sources_dir, progress=progress), spec["member"], spec["max_member_bytes"])
    ids = sorted(debates)
    random.Random(f"{MATERIAL_SEED}:iq2").shuffle(ids)
    test_ids = set(ids[: round(len(ids) * IQ2_TEST_SHARE)])
    conversations = []
    for key in sorted(debates):
        debate = debates[key]
        try:
            raw = [{"speaker": t["speaker"], "utterance": " ".join(t["paragraphs"]), "position": i}
                   for i, t in enumerate(t for t in debate["transcript"] if t["segment"] == 1)]
            sides = [f"{p['name']} (for the motion)" for p in debate["speakers"]["for"]]
            sides += [f"{p['name']} (against the motion)" for p in debate["speakers"]["against"]]
            sides.append(f"{debate['speakers']['moderator']['name']} (moderator)")
            topics = [(f"Debate the motion: {debate['title']}", 0)]
        except (KeyError, TypeError) as err:
            raise DataFormatError(f"iq2 debate {key!r}: unexpected shape ({err!r})") from err
        conversation = _conversation(key, "iq2", "test" if key in test_ids else "train", raw, topics, counts)
        conversation["roles"] = sides
        conversations.append(conversation)
    return conversations


def _zip_member(path: Path, member: str, max_bytes: int) -> dict[str, Any]:
    """One JSON member of a zip, read in memory (nothing is extracted, so no path can escape)."""
    try:
        with zipfile.ZipFile(path) as archive:
            info = archive.getinfo(member)
            if info.file_size > max_bytes:
                raise DataFormatError(f"{path.name}: {member} is {info.file_size} bytes, over the {max_bytes} limit")
            with archive.open(info) as f:
                data = f.read(max_bytes + 1)
    except (zipfile.BadZipFile, KeyError, RuntimeError, NotImplementedError, OSError) as err:
        raise DataFormatError(f"{path.name}: cannot read {member} ({err})") from err
    except zlib.error as err:
        raise DataFormatError(f"{path.name}: {member} is corrupt ({err})") from err
    if len(data) > max_bytes:
        raise DataFormatError(f"{path.name}: {member} expands beyond {max_bytes} bytes")
    try:
        return json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise DataFormatError(f"{path.name}: {member} is not valid JSON ({err})") from err


def read_tcr(source: str, data_dir: Path, counts: Counter) -> list[dict[str, Any]]:
    """TCR meetings from ``DATA_DIR/<source>/*.json`` (source: sim or ncpc); see ``tcr_format`` below."""
    folder = data_dir / source
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    if not files:
        return []
    conversations = []
    for path in files:
        try:
            meetings = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise DataFormatError(f"{path.name}: not valid JSON ({err.msg})") from err
        if not isinstance(meetings, dict):
            raise DataFormatError(f"{path.name}: expected an object of meetings keyed by meeting id")
        for meeting_id, meeting in sorted(meetings.items()):
            conversations.append(_tcr_meeting(source, meeting_id, meeting, f"{path.name}: meeting {meeting_id!r}", counts))
    return conversations


def _tcr_meeting(source: str, meeting_id: str, meeting: Any, where: str, counts: Counter) -> dict[str, Any]:
    turns, topics = [], []
    groups = meeting.get("topics") if isinstance(meeting, dict) else None
    if not isinstance(groups, list):
        raise DataFormatError(f"{where}: field 'topics' must be a list")
    for g, group in enumerate(groups):
        lines = group.get("transcript") if isinstance(group, dict) else None
        if not isinstance(lines, list):
            raise DataFormatError(f"{where}: field 'topics[{g}].transcript' must be a list")
        for j, line in enumerate(lines):
            here = f"{where}: field 'topics[{g}].transcript[{j}]'"
            if not isinstance(line, dict) or not isinstance(line.get("line_id"), int) or not isinstance(line.get("contents"), str):
                raise DataFormatError(f"{here} needs an integer 'line_id' and a string 'contents'")
            turns.append({"speaker": str(line.get("speaker", "")), "utterance": line["contents"],
                          "line_id": line["line_id"], "start_s": _seconds(line.get("start_s"), here), "topic": g})
        if lines:
            topics.append((str(group.get("topic", "")), g))
    turns.sort(key=lambda t: (t["line_id"], t["start_s"]))  # restore meeting order across topic groups
    raw = [{"speaker": t["speaker"], "utterance": t["utterance"], "position": i} for i, t in enumerate(turns)]
    first = {}
    for i, t in enumerate(turns):
        first.setdefault(t["topic"], i)
    material = str(meeting.get("split", "test")) if isinstance(meeting, dict) else "test"
    return _conversation(meeting_id, source, "train" if material == "train" else "test", raw,
                         [(text, first[g]) for text, g in topics], counts)


def _seconds(value: Any, where: str) -> float:
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise DataFormatError(f"{where}: 'start_s' must be a number, got {value!r}")
    try:
        return float(value)
    except ValueError:
        raise DataFormatError(f"{where}: 'start_s' must be a number, got {value!r}") from None


def _conversation(ident: str, source: str, material: str, raw: list[dict[str, Any]], topics: list[tuple[str, int]],
                  counts: Counter) -> dict[str, Any]:
    turns = clean_turns(raw, counts)
    participants = list(dict.fromkeys(t["speaker"] for t in turns))
    return {"id": ident, "source": source, "material": material, "setting": SETTINGS[source],
            "participants": participants, "roles": participants, "topics": topics, "turns": turns}
