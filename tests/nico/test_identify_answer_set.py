"""convbench reads 1,160 varied identify-unnatural answers the way a careful person does.

The answers (data/identify_answers.jsonl) are composed by data/make_identify_answers.py from the
dialogues of convbench's bundled sample, so each one's careful reading is known by construction (that
script's docstring states the reading rules). This test scores the careful readings on its own, from
the dialogue spans they name (no convbench code), and asserts that ``score_unnatural``, given the raw
answers and the dialogues as ``convbench run nico`` gives them, comes within 1 point of it in corpus P,
R and F1, and reads each kind of answer alike.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from convbench_datasets.nico.builder import SAMPLE
from convbench_datasets.nico.format import read_dialogues
from convbench_datasets.nico.tasks import identify_unnatural
from convbench_datasets.nico.unnatural_prf import score_unnatural

DATA = Path(__file__).parent / "data"
ANSWERS = DATA / "identify_answers.jsonl"


def _records() -> list[dict[str, Any]]:
    return [json.loads(line) for line in ANSWERS.read_text(encoding="utf-8").splitlines()]


def _rows() -> dict[str, dict[str, Any]]:
    rows = {}
    for dialogue in read_dialogues(SAMPLE):
        (row,) = identify_unnatural(dialogue)
        turns = [t["text"] for t in row["dialogue"]]
        gold = []
        for sentence in row["unnatural_sentences"]:
            turn = next(i for i, text in enumerate(turns) if sentence in text)
            gold.append((turn, turns[turn].index(sentence), turns[turn].index(sentence) + len(sentence)))
        rows[row["dialogue_id"]] = {"turns": turns, "gold": gold, "sentences": row["unnatural_sentences"]}
    return rows


def careful_scores(reading: dict[str, Any], gold: list[tuple[int, int, int]]) -> tuple[float, float]:
    """(P, R) of one careful reading, by the rules of make_identify_answers.py."""
    if reading["answer"] in ("refusal", "unanswered", "blank"):
        return 0.0, 0.0  # no answer
    named = [tuple(span) for span in reading.get("named", [])]
    predictions = len(named) + reading.get("other", 0)

    def contains(span: tuple[int, ...], g: tuple[int, int, int]) -> bool:
        return span[0] == g[0] and span[1] <= g[1] and g[2] <= span[2]

    if not predictions and not gold:
        return 1.0, 1.0
    if not predictions or not gold:
        return 0.0, 0.0
    matched = sum(any(contains(span, g) for g in gold) for span in named)
    covered = sum(any(contains(span, g) for span in named) for g in gold)
    return matched / predictions, covered / len(gold)


def _corpus(pairs: list[tuple[float, float]]) -> tuple[float, float, float]:
    p = 100 * sum(x for x, _ in pairs) / len(pairs)
    r = 100 * sum(y for _, y in pairs) / len(pairs)
    return p, r, 2 * p * r / (p + r) if p + r else 0.0


@pytest.fixture(scope="module")
def scored() -> tuple[list[dict[str, Any]], list[tuple[float, float]], list[dict[str, Any]]]:
    records, rows = _records(), _rows()
    careful = [careful_scores(r["careful"], rows[r["dialogue_id"]]["gold"]) for r in records]
    out = score_unnatural([r["answer"] for r in records], [rows[r["dialogue_id"]]["sentences"] for r in records],
                          dialogues=[rows[r["dialogue_id"]]["turns"] for r in records], return_rows=True)
    return records, careful, out["rows"]


def test_the_set_is_large_varied_and_consistent() -> None:
    records, rows = _records(), _rows()
    assert len(records) >= 1000
    kinds = defaultdict(int)
    for record in records:
        kinds[record["style"][0]] += 1
        turns = rows[record["dialogue_id"]]["turns"]
        for turn, start, end in record["careful"].get("named", []):  # every named span is dialogue text
            assert 0 <= start < end <= len(turns[turn])
    for kind in ("none", "gold", "gold+fp", "fp", "around", "near-copy", "two-on-a-line", "refusal", "hedged",
                 "other", "blank", "cut-off", "all-turns"):
        assert kinds[kind] >= 10, kind
    styles = {s for record in records for s in record["style"]}
    assert {"numbered", "bulleted", "quoted", "speaker", "json", "inline", "preamble", "notes", "reasons",
            "none-comment", "bold"} <= styles


def test_the_data_file_is_what_the_script_writes(tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(DATA / "make_identify_answers.py"), str(tmp_path / "answers.jsonl")],
                   check=True, capture_output=True)
    assert (tmp_path / "answers.jsonl").read_bytes() == ANSWERS.read_bytes(), (
        "identify_answers.jsonl is out of date: rerun tests/nico/data/make_identify_answers.py")


def test_corpus_scores_within_one_point_of_the_careful_reading(scored: Any) -> None:
    records, careful, rows = scored
    theirs = _corpus(careful)
    ours = _corpus([(row["precision"], row["recall"]) for row in rows])
    for name, a, b in zip(("P", "R", "F1"), ours, theirs):
        assert abs(a - b) <= 1.0, f"{name}: convbench {a:.2f}, careful reading {b:.2f}"


def test_each_kind_of_answer_is_read_alike(scored: Any) -> None:
    # per kind of answer, convbench's per-answer P and R equal the careful ones on at least 97% of them
    records, careful, rows = scored
    by_kind: dict[str, list[bool]] = defaultdict(list)
    for record, (p, r), row in zip(records, careful, rows):
        same = abs(row["precision"] - p) < 1e-9 and abs(row["recall"] - r) < 1e-9
        for style in record["style"]:
            by_kind[style].append(same)
    shares = {kind: sum(v) / len(v) for kind, v in by_kind.items()}
    assert all(share >= 0.97 for share in shares.values()), {k: round(v, 3) for k, v in shares.items() if v < 0.97}
