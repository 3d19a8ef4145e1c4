"""CoCoEvalBench built from the QMSum and IQ2 mirror: sizes, windows, no future in summaries, rebuilds."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from convbench_datasets import build
from convbench_datasets.cocoeval import schema
from convbench_datasets.cocoeval.conversations import read_iq2, read_qmsum

SOURCES = ["qmsum_product", "qmsum_academic", "qmsum_committee", "iq2"]


def _load(folder: Path, config: str, split: str = "test") -> list[dict]:
    import datasets

    from convbench_datasets.class_labels import named_rows

    return named_rows(datasets.load_dataset(str(folder), config, split=split))  # source as its name


@pytest.mark.parametrize("source", SOURCES)
def test_fifty_test_instances_of_thirty_and_thirty(cocoeval_built: Path, source: str) -> None:
    rows = _load(cocoeval_built, source)
    assert len(rows) == 50 and {r["source"] for r in rows} == {source}
    assert all(len(r["history"]) == 30 and len(r["reference"]) == 30 for r in rows)
    assert len({r["id"] for r in rows}) == 50


def test_all_config_and_features(cocoeval_built: Path) -> None:
    import datasets

    ds = datasets.load_dataset(str(cocoeval_built), "all", split="test")
    assert ds.num_rows == 200 and ds.features == schema.features()
    assert Counter(ds.features["source"].int2str(ds["source"])) == Counter({s: 50 for s in SOURCES})  # a ClassLabel


def test_windows_match_the_cleaned_source_and_summaries_hold_no_future(cocoeval_built: Path, qmsum_iq2_sources: Path) -> None:
    counts: Counter = Counter()
    conversations = {c["id"]: c for s in SOURCES[:3] for c in read_qmsum(s, qmsum_iq2_sources, counts, progress=False)}
    conversations.update({c["id"]: c for c in read_iq2(qmsum_iq2_sources, counts, progress=False)})
    for source in SOURCES:
        for row in _load(cocoeval_built, source):
            turns = conversations[row["conversation_id"]]["turns"]
            start = row["start_turn"]
            assert [t["utterance"] for t in row["history"]] == [t["utterance"] for t in turns[start - 30 : start]]
            assert [t["utterance"] for t in row["reference"]] == [t["utterance"] for t in turns[start : start + 30]]
            earlier = {f"{t['speaker']}: {t['utterance']}" for t in turns[: start - 30]}
            later = [f"{t['speaker']}: {t['utterance']}" for t in turns[start - 30 :]]
            if row["summary"]:
                assert any(text in row["summary"] for text in earlier)
                assert not any(text in row["summary"] and text not in earlier and len(text) > 40 for text in later)
            else:
                assert start == 30
    assert counts["markers"] > 0 and counts["empty_turns"] > 0


def test_train_split_takes_every_window_of_the_train_meetings(cocoeval_built: Path, qmsum_iq2_sources: Path) -> None:
    counts: Counter = Counter()
    conversations = {s: read_qmsum(s, qmsum_iq2_sources, counts, progress=False) for s in SOURCES[:3]}
    conversations["iq2"] = read_iq2(qmsum_iq2_sources, counts, progress=False)
    sizes = {}
    for source in SOURCES:
        train, test = _load(cocoeval_built, source, "train"), _load(cocoeval_built, source)
        lent = {r["conversation_id"] for r in test}
        assert not lent & {r["conversation_id"] for r in train}  # evaluation and training meetings never meet
        starts: dict[str, list[int]] = {}
        for row in train:
            starts.setdefault(row["conversation_id"], []).append(row["start_turn"])
        assert all(b - a >= 60 for found in starts.values() for a, b in zip(sorted(found), sorted(found)[1:]))
        # the seeded procedure keeps every 60-turn slot: len(turns) // 60 per train meeting not lent to the test split
        assert len(train) == sum(len(c["turns"]) // 60 for c in conversations[source]
                                 if c["material"] == "train" and c["id"] not in lent)
        sizes[source] = len(train)
    # this build's figures (its card's table gives them): 1,403 against the paper's 1,450 from four sources;
    # one window per train meeting gave 97 + 41 + 13 + 52 = 203. Committee lends 11 train meetings to its test split.
    # They follow the cleaned turn counts: before cleaning merged a speaker's adjacent turns, 714 + 535 + 38 + 148.
    assert sizes == {"qmsum_product": 685, "qmsum_academic": 535, "qmsum_committee": 38, "iq2": 145}


def test_card_counts_every_cleaning_rule(cocoeval_built: Path) -> None:
    from convbench_datasets.cocoeval.cleaning import RULES

    card = (cocoeval_built / "README.md").read_text(encoding="utf-8")
    table = dict(re.findall(r"^\| (\w+) \| (\d+) \|$", card, re.MULTILINE))
    assert [rule for rule in table if rule in RULES] == list(RULES)
    # counted independently of cleaning.py in tests/cocoeval/test_cleaning.py::test_the_mirror_after_every_rule
    assert {r: int(table[r]) for r in ("page_headers", "speaker_labels", "speaker_aliases")} == {
        "page_headers": 440, "speaker_labels": 25, "speaker_aliases": 405}
    assert all(int(table[r]) > 0 for r in RULES)  # every rule acts on the pinned sources


def test_metadata(cocoeval_built: Path) -> None:
    product = _load(cocoeval_built, "qmsum_product")[0]
    assert product["metadata"]["participants"] and "remote control" in product["metadata"]["setting"]
    debate = _load(cocoeval_built, "iq2")[0]
    assert debate["metadata"]["goals"][0].startswith("Debate the motion: ")
    assert any(p.endswith("(for the motion)") for p in debate["metadata"]["participants"])
    # no model-made stage in this build: each row says its text was cleaned by rules, its metadata from the source
    assert (product["cleaning_method"], product["metadata_method"]) == ("rules", "sources: the source's own annotations")
    assert (debate["cleaning_method"], debate["metadata_method"]) == ("rules", "sources: the source's own annotations")


@pytest.mark.slow
def test_rebuild_is_byte_identical(cocoeval_built: Path, qmsum_iq2_sources: Path, tmp_path: Path) -> None:
    again = build("cocoeval", tmp_path / "cocoeval", sources=qmsum_iq2_sources, progress=False).path
    for path in cocoeval_built.rglob("*"):
        if path.is_file():
            assert path.read_bytes() == (again / path.relative_to(cocoeval_built)).read_bytes(), path


@pytest.mark.slow
def test_abstractive_summaries_come_from_the_summarizer(qmsum_iq2_sources: Path, tmp_path: Path) -> None:
    from tests.support.openai_server import openai_server

    with openai_server() as (url, state):
        build("cocoeval", tmp_path / "out", sources=qmsum_iq2_sources, progress=False,
              summarizer="openai:echo", summarizer_options={"base_url": url})
        asked = state.count()
    rows = _load(tmp_path / "out", "qmsum_academic")
    with_past = [r for r in rows if r["start_turn"] > 30]
    assert asked > 0 and with_past
    for row in with_past:  # the echo server returns the prompt: it holds only turns before the history
        assert row["summary_method"].startswith("abstractive: openai:echo, from the last ")
        assert row["summary"].startswith("Here is the beginning of a research group's weekly meeting")
        first_history_turn = f"{row['history'][0]['speaker']}: {row['history'][0]['utterance']}"
        assert first_history_turn not in row["summary"] or len(first_history_turn) < 30


def test_zip_reading_is_bounded_and_checked(tmp_path: Path) -> None:
    import zipfile

    from convbench_datasets.cocoeval.conversations import _zip_member
    from convbench_datasets.errors import DataFormatError

    archive = tmp_path / "a.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("data.json", '{"x": "' + "a" * 5000 + '"}')
        z.writestr("../evil.json", "{}")
    assert _zip_member(archive, "data.json", 10_000)["x"] == "a" * 5000
    with pytest.raises(DataFormatError, match="over the 1000 limit"):
        _zip_member(archive, "data.json", 1000)
    with pytest.raises(DataFormatError, match="cannot read missing.json"):
        _zip_member(archive, "missing.json", 10_000)
    (tmp_path / "bad.zip").write_bytes(b"not a zip")
    with pytest.raises(DataFormatError, match="cannot read data.json"):
        _zip_member(tmp_path / "bad.zip", "data.json", 10_000)
    assert not (tmp_path / "evil.json").exists() and not (tmp_path.parent / "evil.json").exists()


MIRROR_BUILD_DEPARTS = [  # by hand: the mirror has QMSum's three sources and IQ2 (no TCR files), no model stage
    "dataset built without sim, ncpc (200 instances; paper: 300, 50 per source); `convbench build cocoeval "
    "--data-dir` with the TCR files adds SIM and NCPC",
    "extractive summaries (--summarizer not given to `convbench build`; paper: o4-mini wrote them)",
    "QMSum Product and Academic cleaned by rules only (--cleaner not given to `convbench build`; paper: o4-mini "
    "cleaned them)",
    "metadata from the sources' annotations (--metadata-model not given to `convbench build`; paper: o4-mini wrote it)",
]


def test_the_build_says_how_it_departs_from_the_papers(cocoeval_built: Path) -> None:
    from convbench_datasets.building import BuildSummary

    card = (cocoeval_built / "README.md").read_text(encoding="utf-8")
    section = card.split("### How this build departs from the paper's\n\n", 1)[1].split("\n\n## ", 1)[0]
    assert section.splitlines()[2:] == [f"- {line}" for line in MIRROR_BUILD_DEPARTS]
    # the end of `convbench build`'s output says the same
    summary = BuildSummary("cocoeval", cocoeval_built, {"all": {"test": 200}}, tuple(MIRROR_BUILD_DEPARTS))
    assert summary.lines()[2:] == ["not the paper's build (runs on it are flagged; the card says the same):",
                                   *(f"  - {line}" for line in MIRROR_BUILD_DEPARTS)]
    assert BuildSummary("nc", cocoeval_built, {"all": {"test": 1}}).lines()[-1].startswith("  all ")
