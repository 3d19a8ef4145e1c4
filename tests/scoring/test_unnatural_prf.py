"""unnatural_sentence_prf: answer parsing, the published P/R/F1 semantics, by hand."""

from __future__ import annotations

import re
import time

import pytest

from convbench_datasets.errors import ConvbenchError
from convbench_datasets.scoring.unnatural_prf import MAX_FUZZY_SENTENCES, parse_answer, score_unnatural

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


@pytest.mark.parametrize("threshold", [-0.1, 1.5, float("nan"), "0.8", None, True])
def test_threshold_outside_unit_interval_or_nan_is_refused(threshold: object) -> None:
    # An LCS F-measure lies in [0, 1]: 1.5 would match nothing, -0.1 anything, and NaN compares false
    # with everything, so each used to score silently (f1 0 for ["a"] vs [["a"]] instead of an error).
    with pytest.raises(ConvbenchError, match=r"threshold must be a number in \[0, 1\], got"):
        score_unnatural(["a"], [["a"]], match="fuzzy", threshold=threshold)  # type: ignore[arg-type]
    assert score_unnatural(["a"], [["a"]], match="fuzzy", threshold=1)["f1"] == 100.0  # the bounds are allowed


@pytest.mark.parametrize(
    "predictions,references,message",
    [
        # evaluate lets references=[None] through to the metric: it used to fail with "'NoneType' object is not iterable"
        (["无"], [None], "row 0: field 'references' must be a list of sentences, got NoneType"),
        (["无", "无"], [[], 3], "row 1: field 'references' must be a list of sentences, got int"),
        (["无"], [{"我。": 1}], "row 0: field 'references' must be a list of sentences, got dict"),  # used to score its keys
        (["无"], [[S1, None]], "row 0: field 'references' item 1 must be a sentence"),
        # a missing answer used to read as "none" and score P = R = 1 on a clean dialogue
        (["无", None], [[], []], "row 1: field 'predictions' must be a string, got NoneType"),
        (None, [[]], "field 'predictions' must be a list with one item per row, got NoneType"),
    ],
)
def test_missing_or_mistyped_inputs_name_the_row_and_field(predictions, references, message: str) -> None:
    with pytest.raises(ConvbenchError, match=re.escape(message)):
        score_unnatural(predictions, references)


def test_containing_scores_are_none_when_no_dialogue_has_unnatural_sentences() -> None:
    # Both dialogues are clean and both answers say "none": P = R = 1 each, so 100 overall; the
    # *_containing averages run over no dialogue at all and are undefined: None with a note, not 0
    # (which would read as a model that found nothing) and not nan (which JSON cannot hold).
    out = score_unnatural(["无", "没有"], [[], []])
    assert out["f1"] == 100.0 and out["n_containing"] == 0
    assert (out["precision_containing"], out["recall_containing"], out["f1_containing"]) == (None, None, None)
    assert "no dialogue contains unnatural sentences" in out["notes"][0]
    assert "notes" not in score_unnatural(["无"], [[S1]])  # the note only when it applies


def test_pathological_lengths_are_refused_before_any_work(monkeypatch: pytest.MonkeyPatch) -> None:
    from convbench_datasets.scoring import unnatural_prf

    def no_work(text: str | None) -> list[str]:
        raise AssertionError("parsing started before the length check")

    huge = "我" * (10 * 2**20)  # 10 MiB of characters: parsing and fuzzy matching would run for minutes
    monkeypatch.setattr(unnatural_prf, "parse_answer", no_work)
    start = time.monotonic()
    with pytest.raises(ConvbenchError, match="row 1: field 'predictions' is 10,485,760 characters long, over the limit of 20,000"):
        score_unnatural(["无", huge], [[], []], match="fuzzy")
    with pytest.raises(ConvbenchError, match="row 0: field 'references' is 10,485,760 characters long"):
        score_unnatural(["无"], [[huge]])  # the row's gold sentences together
    assert time.monotonic() - start < 10  # a fail-fast bound, not a timing: without the check, minutes
    monkeypatch.undo()
    # the cap is an option: max_chars=None lifts it; a lower cap refuses a 10-character answer
    assert score_unnatural([S1], [[S1]], max_chars=None)["f1"] == 100.0
    with pytest.raises(ConvbenchError, match="row 0: field 'predictions' is 10 characters long, over the limit of 9"):
        score_unnatural([S1], [[S1]], max_chars=9)
    with pytest.raises(ConvbenchError, match="max_chars must be a positive number"):
        score_unnatural([S1], [[S1]], max_chars=0)


def test_fuzzy_matching_caps_the_sentences_it_compares() -> None:
    # Fuzzy matching compares every predicted sentence with every gold one: 201 distinct one-line
    # sentences are over the default cap of 200 (MAX_FUZZY_SENTENCES); exact matching is linear, no cap.
    many = [f"第{i}句" for i in range(MAX_FUZZY_SENTENCES + 1)]
    with pytest.raises(ConvbenchError, match="row 0: field 'predictions' has 201 distinct sentences, over the fuzzy-matching limit of 200"):
        score_unnatural(["\n".join(many)], [[S1]], match="fuzzy")
    with pytest.raises(ConvbenchError, match="row 0: field 'references' has 201 distinct sentences"):
        score_unnatural([S1], [many], match="fuzzy")
    # 1 of 201 predicted sentences is gold: P = 1/201, R = 1/1
    assert score_unnatural(["\n".join(many)], [[many[0]]])["recall"] == 100.0
    assert score_unnatural(["\n".join(many)], [[many[0]]], match="fuzzy", max_sentences=None)["recall"] == 100.0


def test_reference_columns_from_to_pandas_numpy_arrays_are_accepted() -> None:
    # Dataset.to_pandas() gives each row of a list column as a numpy array; before: "must be a list of
    # sentences, got ndarray". Expected: the same scores as the plain lists (P = 1/1, R = 1/2 on row 0;
    # row 1 clean and answered "none": P = R = 1), the semantics the tests above check by hand.
    import datasets
    import numpy as np

    frame = datasets.Dataset.from_dict({"answer": [S1, "无"], "gold": [[S1, S2], []]}).to_pandas()
    assert type(frame["gold"][0]).__name__ == "ndarray"
    expected = score_unnatural([S1, "无"], [[S1, S2], []])
    assert expected["precision"] == 100.0 and expected["recall"] == 75.0
    for match in ("exact", "fuzzy"):
        got = score_unnatural(frame["answer"].to_numpy(), frame["gold"].to_list(), match=match)
        assert {k: got[k] for k in ("precision", "recall", "f1")} == {k: expected[k] for k in ("precision", "recall", "f1")}
    with pytest.raises(ConvbenchError, match=re.escape("row 0: field 'references' item 0 must be a sentence (string), got int")):
        score_unnatural(["无"], [np.array([1, 2])])

