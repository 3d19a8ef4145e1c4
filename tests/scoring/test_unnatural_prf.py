"""unnatural_sentence_prf: answer parsing, the published P/R/F1 semantics, by hand."""

from __future__ import annotations

import pytest

from convbench_datasets.scoring.unnatural_prf import parse_answer, score_unnatural

S1, S2, S3 = "我对于此事表示赞同。", "恰逢本人亦有减重之意愿。", "你为何如此焦急？"


@pytest.mark.parametrize(
    "answer,sentences",
    [
        ("无", []), ("没有不自然的句子。", []), ("None.", []), ("", []), (None, []),
        (f"{S1}\n\n{S2}", [S1, S2]),
        (f"CharacterA: {S1}\nB：“{S2}”", [S1, S2]),
        (f"1. 甲：{S1}\n2、{S3}\n- {S1}", [S1, S3]),
    ],
)
def test_parse_answer(answer: str | None, sentences: list[str]) -> None:
    assert parse_answer(answer) == sentences


def test_always_none_scores_the_share_of_clean_dialogues() -> None:
    # 40 dialogues, 19 without unnatural sentences (47.5%, as on NICO's test set).
    references = [[] for _ in range(19)] + [[S1] for _ in range(21)]
    out = score_unnatural(["无"] * 40, references)
    assert out["precision"] == pytest.approx(47.5) and out["recall"] == pytest.approx(47.5)
    assert out["f1"] == pytest.approx(47.5) and out["f1_containing"] == 0.0 and out["n_containing"] == 21


def test_hand_made_table() -> None:
    # d1 gold {S1, S2}, answer {S1, S3}: P 1/2, R 1/2   | d2 gold {S3}, answer {S3}: P 1, R 1
    # d3 gold {},      answer {S1}:     P 0, R 0        | d4 gold {},   answer none: P 1, R 1
    # all: P = R = (0.5 + 1 + 0 + 1) / 4 = 0.625 -> F1 62.5; containing (d1, d2): P = R = 0.75 -> 75.
    answers = [f"{S1}\n\n{S3}", S3, S1, "无"]
    out = score_unnatural(answers, [[S1, S2], [S3], [], []])
    assert (out["precision"], out["recall"], out["f1"]) == (62.5, 62.5, 62.5)
    assert (out["precision_containing"], out["recall_containing"], out["f1_containing"]) == (75.0, 75.0, 75.0)
    # P and R that differ: d1 answer {S1} only -> P 1, R 1/2; F1 of the averages, not the average of F1s.
    out = score_unnatural([S1], [[S1, S2]])
    assert out["precision"] == 100.0 and out["recall"] == 50.0 and out["f1"] == pytest.approx(200 / 3)


def test_matching_ignores_punctuation_and_fuzzy_allows_near_misses() -> None:
    assert score_unnatural(["我对于此事 表示赞同"], [[S1]])["f1"] == 100.0
    near = "我对于这件事表示赞同"
    assert score_unnatural([near], [[S1]])["f1"] == 0.0
    assert score_unnatural([near], [[S1]], match="fuzzy", threshold=0.7)["f1"] == 100.0


def test_bad_input() -> None:
    with pytest.raises(TypeError, match="row 0: field 'references' must be a list of sentences"):
        score_unnatural(["无"], ["我"])
    with pytest.raises(ValueError, match="match must be"):
        score_unnatural(["无"], [[]], match="loose")  # type: ignore[arg-type]
