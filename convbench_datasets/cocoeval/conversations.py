"""Reading the sources into conversations: QMSum meetings, IQ2 debates, and TCR meetings (SIM, NCPC).

A conversation is ``{"id", "source", "material", "setting", "participants", "topics", "turns"}`` where
``material`` is ``test`` (test and validation material: evaluation instances come from it first) or
``train``; ``turns`` are ``{"speaker", "utterance", "position"}`` with ``position`` the turn's index in the
source transcript (topics point into it; a turn merged from several keeps its first's, and the pieces
of an IQ2 turn split by ``cleaning.split_inline_speakers`` share theirs); ``topics`` are ``(text, first
position)``.
"""

from __future__ import annotations

import json
import math
import random
import re
import zipfile
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

from .._resources import read_yaml
from ..errors import DataFormatError
from ..sources import SourceFile, fetch
from .cleaning import clean_turns, page_header_pattern, split_inline_speakers
from .settings import SETTINGS

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
                                           raw, topics, counts, tokenised=True))
    return conversations


def read_iq2(sources_dir: Any, counts: Counter, progress: bool = True) -> list[dict[str, Any]]:
    spec = pins()["iq2"]
    debates = _zip_member(fetch(iq2_source(), sources_dir=sources_dir, progress=progress), spec["member"], spec["max_member_bytes"])
    ids = sorted(debates)
    random.Random(f"{MATERIAL_SEED}:iq2").shuffle(ids)
    test_ids = set(ids[: round(len(ids) * IQ2_TEST_SHARE)])
    headers = read_yaml(__package__, "iq2_page_headers.yaml")
    inline = read_yaml(__package__, "iq2_inline_speakers.yaml")
    conversations = []
    for key in sorted(debates):
        debate = debates[key]
        try:  # paragraphs joined, split where the text names another speaker (the pieces share a position)
            raw = [{"speaker": who, "utterance": text, "position": i}
                   for i, t in enumerate(t for t in debate["transcript"] if t["segment"] == 1)
                   for who, text in split_inline_speakers(t["speaker"], t["paragraphs"], counts, inline.get(key))]
            sides = [f"{p['name']} (for the motion)" for p in debate["speakers"]["for"]]
            sides += [f"{p['name']} (against the motion)" for p in debate["speakers"]["against"]]
            sides.append(f"{debate['speakers']['moderator']['name']} (moderator)")
            topics = [(f"Debate the motion: {debate['title']}", 0)]
        except (KeyError, TypeError) as err:
            raise DataFormatError(f"iq2 debate {key!r}: unexpected shape ({err!r})") from err
        conversation = _conversation(key, "iq2", "test" if key in test_ids else "train", raw, topics, counts,
                                     page_headers=page_header_pattern(headers.get(key, [])))
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


def tcr_file(source: str) -> str:
    """The release's file name for a TCR source (``sim`` -> ``SIM.json``), as in its ``data/`` folder."""
    return pins()["tcr"]["files"][source]


def read_tcr(source: str, path: Path, counts: Counter) -> list[dict[str, Any]]:
    """Every meeting of a TCR release file (``SIM.json``, ``NCPC.json``; layout above ``_tcr_meeting``).

    TCR has no train/test split and the paper trains on its four other sources, so all is test material.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise DataFormatError(f"{path.name}: not valid JSON ({err})") from err
    if not isinstance(data, dict) or not data:
        raise DataFormatError(f"{path.name}: expected one object keyed by data source, e.g. {{\"SIM\": {{meeting: ...}}}}")
    conversations, group_of = [], {}
    for group, meetings in data.items():
        if not isinstance(meetings, dict):
            raise DataFormatError(f"{path.name}: source {group!r}: expected an object of meetings keyed by name")
        for name, meeting in meetings.items():
            if name in group_of:  # a meeting id must name one conversation
                raise DataFormatError(f"{path.name}: meeting {name!r} appears under {group_of[name]!r} and {group!r}")
            group_of[name] = group
            conversations.append(_tcr_meeting(source, name, meeting, f"{path.name}: meeting {name!r}", counts))
    if not conversations:
        raise DataFormatError(f"{path.name}: no meetings")
    return conversations


# TCR layout: {source: {meeting: {"metadata": {...}, "topics": {topic text: {"transcripts": [line, ...], ...}}}}}
# with line = {"line_id": float, "speaker": str, "start_s": float, "end_s": float, "contents": str, ...}.
# Topics interleave in time, so a meeting is all its topics' lines ordered by start_s, then line_id.
def _tcr_meeting(source: str, name: str, meeting: Any, where: str, counts: Counter) -> dict[str, Any]:
    topics = meeting.get("topics") if isinstance(meeting, dict) else None
    if not isinstance(topics, dict):
        raise DataFormatError(f"{where}: field 'topics' must be an object keyed by topic text")
    lines: dict[float, dict[str, Any]] = {}  # by line_id: a line listed under two topics is one turn
    for text, topic in topics.items():
        here = f"{where}: topic {text!r}"
        transcripts = topic.get("transcripts") if isinstance(topic, dict) else None
        if not isinstance(transcripts, list):
            raise DataFormatError(f"{here}: field 'transcripts' must be a list")
        if not transcripts:
            counts["tcr_empty_topics"] += 1  # allowed (the release's own loader expects them); never a goal
        for j, raw in enumerate(transcripts):
            line = _tcr_line(raw, f"{here}: transcripts[{j}]")
            seen = lines.get(line["line_id"])
            if seen is None:
                lines[line["line_id"]] = {**line, "topics": [text]}
            elif {k: seen[k] for k in line} == line:
                seen["topics"].append(text)
                counts["tcr_shared_lines"] += 1
            else:
                raise DataFormatError(f"{here}: transcripts[{j}]: line_id {line['line_id']} is also under topic "
                                      f"{seen['topics'][0]!r} with other speaker, time or contents")
    ordered = sorted(lines.values(), key=lambda line: (line["start_s"], line["line_id"]))
    first: dict[str, int] = {}
    for position, line in enumerate(ordered):
        for text in line["topics"]:
            first.setdefault(text, position)
    raw_turns = [{"speaker": line["speaker"], "utterance": line["contents"], "position": position}
                 for position, line in enumerate(ordered)]
    goals = sorted(first.items(), key=lambda item: item[1])  # in the order the meeting reaches them
    return _conversation(name, source, "test", raw_turns, goals, counts)


def _tcr_line(line: Any, where: str) -> dict[str, Any]:
    """The fields a turn needs from one TCR line, checked: numbers finite, texts strings."""
    if not isinstance(line, dict):
        raise DataFormatError(f"{where}: expected an object, got {type(line).__name__}")
    out: dict[str, Any] = {}
    for field in ("line_id", "start_s"):
        value = line.get(field)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise DataFormatError(f"{where}: field {field!r} must be a number, got {value!r}")
        out[field] = float(value)
    for field in ("speaker", "contents"):
        if not isinstance(line.get(field), str):
            raise DataFormatError(f"{where}: field {field!r} must be a string, got {line.get(field)!r}")
        out[field] = line[field]
    return out


def _conversation(ident: str, source: str, material: str, raw: list[dict[str, Any]], topics: list[tuple[str, int]],
                  counts: Counter, *, tokenised: bool = False, page_headers: re.Pattern[str] | None = None) -> dict[str, Any]:
    """Cleaned turns (``cleaning.clean_turns``: QMSum is ``tokenised``; IQ2 has ``page_headers``) and their speakers."""
    turns = clean_turns(raw, counts, tokenised=tokenised, page_headers=page_headers)
    participants = list(dict.fromkeys(t["speaker"] for t in turns))
    return {"id": ident, "source": source, "material": material, "setting": SETTINGS[source],
            "participants": participants, "roles": participants, "topics": topics, "turns": turns}
