"""unnatural_sentence_prf: answer parsing, the published P/R/F1 semantics, by hand."""

from __future__ import annotations

import re
import time

import pytest

from convbench_datasets.errors import ConvbenchError
from convbench_datasets.nico.unnatural_answer import is_blank, read_answer
from convbench_datasets.nico.unnatural_prf import MAX_FUZZY_SENTENCES, parse_answer, score_unnatural

S1, S2, S3 = "我对于此事表示赞同。", "恰逢本人亦有减重之意愿。", "你为何如此焦急？"


@pytest.mark.parametrize(
    "answer,sentences",
    [
        ("无", []), ("没有不自然的句子。", []), ("None.", []), ("", []), (None, []),
        (f"{S1}\n\n{S2}", [S1, S2]),
        (f"CharacterA: {S1}\nB：“{S2}”", [S1, S2]),
        (f"1. 甲：{S1}\n2、 {S3}\n- {S1}", [S1, S3]),
        # a number directly followed by text is kept unless the gold sentences say otherwise (below)
        (f"2、{S3}", [f"2、{S3}"]),
    ],
)
def test_parse_answer(answer: str | None, sentences: list[str]) -> None:
    assert parse_answer(answer) == sentences
    assert parse_answer(f"2、{S3}", [S3]) == [S3]


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
    from convbench_datasets.nico import unnatural_prf

    def no_work(*args: object) -> list[str]:
        raise AssertionError("parsing started before the length check")

    huge = "我" * (10 * 2**20)  # 10 MiB of characters: parsing and fuzzy matching would run for minutes
    monkeypatch.setattr(unnatural_prf, "read_answer", no_work)
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
    # sentences are over the default cap of 200 (MAX_FUZZY_SENTENCES). 201 lines are also over the
    # answer-line limit (MAX_ANSWER_LINES, 200, any match: each line is read against every gold sentence).
    many = [f"第{i}句" for i in range(MAX_FUZZY_SENTENCES + 1)]
    with pytest.raises(ConvbenchError, match="row 0: field 'predictions' has 201 distinct sentences, over the fuzzy-matching limit of 200"):
        score_unnatural(["\n".join(many)], [[S1]], match="fuzzy", max_lines=None)
    with pytest.raises(ConvbenchError, match="row 0: field 'predictions' has 201 distinct lines, over the limit of 200"):
        score_unnatural(["\n".join(many)], [[S1]])
    with pytest.raises(ConvbenchError, match="row 0: field 'references' has 201 distinct sentences"):
        score_unnatural([S1], [many], match="fuzzy")
    # 1 of 201 predicted sentences is gold: P = 1/201, R = 1/1
    assert score_unnatural(["\n".join(many)], [[many[0]]], max_lines=None)["recall"] == 100.0
    assert score_unnatural(["\n".join(many)], [[many[0]]], match="fuzzy", max_sentences=None,
                           max_lines=None)["recall"] == 100.0


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



# --- reading real model answers (issue #13). The expected readings are the dialogue sentences as
# written: what a person reading the answer sees the model name.

@pytest.mark.parametrize(
    "answer,gold",
    [
        ("3.5元太贵了吧", "3.5元太贵了吧"), ("2、3个人就够了", "2、3个人就够了"), ("1)号线人太多了", "1)号线人太多了"),
        # a real list marker before them: followed by a space, or text that then matches a sentence better
        ("1. 3.5元太贵了吧", "3.5元太贵了吧"), ("2.2、3个人就够了", "2、3个人就够了"), ("（3）1)号线人太多了", "1)号线人太多了"),
        ("1.我认为此价格偏高，", "我认为此价格偏高，"),
    ],
)
def test_list_numbers_are_stripped_only_where_they_are_list_markers(answer: str, gold: str) -> None:
    # Before: the stripper ate "3." of "3.5元", "2、" of "2、3个人" and "1)" of "1)号线" and each scored 0.
    assert parse_answer(answer, [gold]) == [gold]
    assert score_unnatural([answer], [[gold]])["f1"] == 100.0  # one sentence, matched: P = R = 1


# How models say "there are none", in Chinese and English (written for this test in the forms seen in
# model answers: bare words, full sentences, labelled, bracketed, with reasons).
NONE_PHRASINGS = (
    "无", "无。", "没有", "没有。", "没有了", "没有不自然的句子。", "没有发现不自然的句子。", "以上对话中没有不自然的句子。",
    "这段对话中没有不自然的句子。", "这段对话里不存在不自然的句子。", "未发现不自然的句子。", "我没有找到不自然的句子。",
    "对话中的句子都很自然。", "所有句子都很自然，没有需要修改的地方。", "这段对话整体自然流畅，没有不自然的句子。",
    "这段对话很自然。", "每句话都挺口语化的。", "都挺自然的。", "答：无", "不自然的句子：无", "无（所有句子都很自然）",
    "无，对话中的表达都很地道。", "经过检查，没有不自然的句子。", "该对话中并无不自然之处。", "**无**", "“无”",
    "None", "None.", "No.", "N/A", "Nothing.", "No unnatural sentences.", "There are no unnatural sentences in this dialogue.",
    "I didn't find any unnatural sentences.", "I did not find any unnatural sentence.", "All sentences are natural.",
    "All the sentences sound natural.", "The dialogue sounds natural throughout.", "Everything sounds natural.",
    "None found.", "There are none.", "No unnatural sentences were found.", "Answer: None",
    "The conversation is entirely natural; no sentence needs changing.", "无。\n所有句子都比较口语化。",
)


@pytest.mark.parametrize("answer", NONE_PHRASINGS)
def test_negative_answers_in_any_wording_are_none(answer: str) -> None:
    reading = read_answer(answer, [S1])
    assert reading.sentences == [] and reading.none


def test_always_none_in_varied_wording_scores_the_share_of_clean_dialogues() -> None:
    # Before, "没有发现不自然的句子。" or "No unnatural sentences." were predicted sentences: this baseline
    # scored 0 instead of 47.5 (19 of 40 clean dialogues: P = R = 1 there, 0 elsewhere, as in the test above).
    assert len(NONE_PHRASINGS) >= 30
    answers = [NONE_PHRASINGS[i % len(NONE_PHRASINGS)] for i in range(40)]
    out = score_unnatural(answers, [[] for _ in range(19)] + [[S1] for _ in range(21)])
    assert (out["precision"], out["recall"], out["f1"]) == (47.5, 47.5, 47.5) and out["none_answers"] == 40


# Everyday dialogue sentences that mention "no", "natural" or "stiff": a model quoting one names it.
DIALOGUE_SENTENCES = (
    "没有啊，我觉得挺好的。", "没问题，晚上就发你。", "一切顺其自然吧。", "我们都说得很流畅。", "大自然真美。",
    "你这句话说得太生硬了。", "无所谓，你定吧。", "好的～", "No problem.",
)


@pytest.mark.parametrize("sentence", DIALOGUE_SENTENCES)
def test_everyday_sentences_are_not_read_as_none(sentence: str) -> None:
    assert parse_answer(sentence) == [sentence]  # even without knowing the gold sentences
    assert score_unnatural([sentence], [[sentence]])["f1"] == 100.0


@pytest.mark.parametrize("answer", ["没有。", "没有", "“没有。”", "B：没有。", "1. 无"])
def test_a_gold_sentence_that_says_no_is_matchable(answer: str) -> None:
    # Alone, "没有。" answers "none"; when it is the dialogue's own unnatural sentence it is that
    # sentence. Before, it always read as "none": P = R = 0 instead of 1.
    gold = answer.split()[-1].strip("“”").removeprefix("B：")
    assert score_unnatural([answer], [[gold]])["f1"] == 100.0
    assert score_unnatural([answer], [[]])["f1"] == 100.0  # on a clean dialogue it is a right "none"


def test_preamble_lines_are_not_predictions() -> None:
    # Before, each preamble was a second predicted sentence: P = 1/2 instead of 1.
    for preamble in ("以下是不自然的句子：", "The unnatural sentences are:", "不自然的句子如下", "Here are the unnatural sentences"):
        reading = read_answer(f"{preamble}\n\n{S1}", [S1])
        assert reading.sentences == [S1] and reading.ignored == [preamble]
        assert score_unnatural([f"{preamble}\n\n{S1}"], [[S1]])["precision"] == 100.0


@pytest.mark.parametrize("answer", ["好的～", "好的~", "好的〜", "好的！♪", "好的😊", "好的\u200b。"])
def test_trailing_tildes_and_symbols_are_normalised_like_punctuation(answer: str) -> None:
    # "～" (NFKC "~", a math symbol) was kept, so "好的～" did not match "好的。" (f1 0).
    assert score_unnatural([answer], [["好的。"]])["f1"] == 100.0


def test_two_quoted_sentences_on_one_line_are_two_predictions() -> None:
    # Before: one prediction '我对于此事表示赞同。”和“你为何如此焦急？' matching neither (f1 0).
    for line in (f"“{S1}”和“{S3}”", f"「{S1}」「{S3}」", f'"{S1}", "{S3}"'):
        assert parse_answer(line) == [S1, S3]
        assert score_unnatural([line], [[S1, S3]])["f1"] == 100.0


# Ten dialogues: gold sentences, a non-gold sentence the model also names (N1..N3), and the clean
# verbatim answer (one sentence per line, "无" for none, as the 3-shot demonstrations answer).
N1, N2, N3, S4 = "那我先走了。", "明天见。", "行吧。", "此乃吾辈之荣幸。"
FORMAT_GOLD = [[S1, S2], [S3], [], [], ["3.5元太贵了吧"], ["2、3个人就够了", "1)号线人太多了"], ["没有。"], [S4], [],
               ["那就这么定了吧～"]]
CLEAN = [f"{S1}\n\n{S2}", f"{S3}\n\n{N1}", "无", "无", "3.5元太贵了吧", f"2、3个人就够了\n\n{N3}", "没有。", "无", N2,
         "那就这么定了吧～"]
FORMATTED = [
    [f"以下是不自然的句子：\n\n1. A：“{S1}”\n2. B：“{S2}”", f"The unnatural sentences are:\n- CharacterB: {S3}\n- CharacterA: {N1}",
     "以上对话中没有不自然的句子。", "No unnatural sentences.", "1.3.5元太贵了吧", f"“2、3个人就够了”和“{N3}”",
     "不自然的句子：\n**没有。**", "没有发现不自然的句子，所有句子都很口语化。", f"（1）B：{N2}", "- 那就这么定了吧~"],
    [f"**不自然的句子：**\n\n1) “{S1}”（过于书面）\n2) “{S2}”—— 太正式", f"Answer:\n1. 「{S3}」\n2. 「{N1}」",
     "答：无", "I didn't find any unnatural sentences.", "1. “3.5元太贵了吧”", f"1. 2、3个人就够了\n2. {N3}\n其余句子都很自然。",
     "A：没有。", "The dialogue sounds natural throughout.", f"Sentence 1: \"{N2}\"", "那就这么定了吧！"],
]


def test_clean_answers_score_by_hand() -> None:
    # per dialogue (P, R): d1 (1, 1), d2 (1/2, 1), d3 (1, 1), d4 (1, 1), d5 (1, 1), d6 (1/2, 1/2), d7 (1, 1),
    # d8 (0, 0), d9 (0, 0), d10 (1, 1). P = 7/10, R = 7.5/10, F1 = 2PR/(P+R) = 1.05/1.45.
    # Containing (d1, d2, d5, d6, d7, d8, d10): P = 5/7, R = 5.5/7, F1 = 2 * 5 * 5.5 / (7 * 10.5).
    out = score_unnatural(CLEAN, FORMAT_GOLD)
    assert out["precision"] == pytest.approx(70.0) and out["recall"] == pytest.approx(75.0)
    assert out["f1"] == pytest.approx(100 * 1.05 / 1.45)
    assert out["precision_containing"] == pytest.approx(500 / 7) and out["recall_containing"] == pytest.approx(550 / 7)
    assert out["f1_containing"] == pytest.approx(100 * 2 * 5 * 5.5 / (7 * 10.5))


@pytest.mark.parametrize("formatted", FORMATTED, ids=["zh-style", "mixed-style"])
@pytest.mark.parametrize("match", ["exact", "fuzzy"])
def test_real_model_formatting_scores_the_same_as_clean_answers(formatted: list[str], match: str) -> None:
    # Numbering, speaker prefixes, preambles, quotes, explanations and reworded "none": before, these
    # answers scored up to 13 points away from the clean ones (here, with the old parser, f1 34.3 and 20.0
    # against 72.4; the clean answers themselves 47.4, since "3.5元…" lost its "3.").
    keys = ("precision", "recall", "f1", "precision_containing", "recall_containing", "f1_containing")
    clean, got = score_unnatural(CLEAN, FORMAT_GOLD, match=match), score_unnatural(formatted, FORMAT_GOLD, match=match)
    assert {k: got[k] for k in keys} == {k: clean[k] for k in keys}


# --- review of the NICO scoring work: each test below failed before its fix. Expected readings are, as
# above, what a person reading the answer sees the model name (the dialogue sentence as written).

# Dialogue sentences that merely sound negative (a negation, or a word for (un)natural), named by a model.
SOUNDS_NEGATIVE = (
    "无论如何，这个计划需要调整。", "未来的安排需要调整一下。", "没事，别扭扭捏捏的。", "没人觉得生硬。", "这个说法很地道。",
    "It feels natural.", "I am fluent in Chinese.", "没错，这个说法太生硬了。", "这个计划没有需要调整的地方。",
    # a negation word that is not one, in the same clause as a subject and a word for unnatural
    "无论怎么改这句话都别扭。", "未来这种说法会显得很生硬。", "没事别用这么生硬的说法。", "没错这个说法太生硬了。",
)


@pytest.mark.parametrize("sentence", SOUNDS_NEGATIVE)
def test_sentences_that_merely_sound_negative_are_predictions(sentence: str) -> None:
    # Before: each was a "none" line, dropped beside S1: P = 1/1 = 100 instead of 1/2 = 50.
    assert parse_answer(sentence) == [sentence]  # not about the task: no sentence, dialogue or wording named
    out = score_unnatural([f"{S1}\n{sentence}"], [[S1]])
    assert (out["precision"], out["recall"], out["ignored_lines"]) == (50.0, 100.0, 0)


# What a model answering about the dialogue says of it still reads "none" with the new subject rule.
ABOUT_THE_TASK = ("没有需要修改的句子。", "这段对话没有需要调整的表达。", "I didn't find anything unnatural.",
                  "Nothing awkward in the dialogue.", "都挺自然的。")


@pytest.mark.parametrize("answer", ABOUT_THE_TASK + NONE_PHRASINGS)
def test_none_answers_stay_none_knowing_the_dialogue(answer: str) -> None:
    reading = read_answer(answer, [S1], [S1, S2, S3, "好吧。", "没有啊，我觉得挺好的。", "这个说法很地道。"])
    assert reading.sentences == [] and reading.none


# A dialogue with a sentence for each kind of line a reader would drop without it.
DIALOGUE = [S1, "说明：明天休息。", "我跟你说：明天别迟到。", "都挺自然的。", "以下是不自然的句子：", "没有。", "好吧。"]


@pytest.mark.parametrize("line", ["说明：明天休息。", "我跟你说：", "都挺自然的。", "以下是不自然的句子："])
def test_a_line_quoting_the_dialogue_is_a_prediction(line: str) -> None:
    # Without the dialogue: a comment, a preamble (ends in a colon), a "none" comment, a preamble; each is
    # dropped, and counted in ignored_lines (P = 1/1). Knowing the dialogue, the line is one of its
    # sentences (or the first clause of one): a second prediction, P = 1/2.
    alone = score_unnatural([f"{S1}\n{line}"], [[S1]], return_rows=True)
    assert alone["precision"] == 100.0 and alone["ignored_lines"] == 1 and alone["rows"][0]["ignored"] == [line]
    known = score_unnatural([f"{S1}\n{line}"], [[S1]], dialogues=[DIALOGUE], return_rows=True)
    assert known["rows"][0]["predicted"] == [S1, line] and known["precision"] == 50.0 and known["ignored_lines"] == 0
    assert known["signature"]["dialogues"] is True and alone["signature"]["dialogues"] is False


def test_the_prompts_none_stays_none_when_the_dialogue_says_it() -> None:
    # A clean dialogue with a turn "没有。": the answer "没有" is "none" (P = R = 1), not that turn;
    # as the gold sentence it is that sentence (test_a_gold_sentence_that_says_no_is_matchable).
    out = score_unnatural(["没有", "无"], [[], []], dialogues=[DIALOGUE, ["无。", "好的。"]])
    assert out["f1"] == 100.0 and out["none_answers"] == 2


def test_dialogues_are_checked_like_the_other_inputs() -> None:
    with pytest.raises(ValueError, match="got 1 predictions but 2 dialogues"):
        score_unnatural(["无"], [[]], dialogues=[[], []])
    with pytest.raises(ConvbenchError, match=re.escape("row 0: field 'dialogues' must be a list of turns or sentences, got str")):
        score_unnatural(["无"], [[]], dialogues=["我。"])
    with pytest.raises(ConvbenchError, match=re.escape("row 1: field 'dialogues' item 0 must be a string, got int")):
        score_unnatural(["无", "无"], [[], []], dialogues=[None, [3]])
    with pytest.raises(ConvbenchError, match=re.escape("row 0: field 'dialogues' has 201 distinct turns, over the limit of 200")):
        score_unnatural(["无"], [[]], dialogues=[[f"第{i}句" for i in range(201)]])
    # None (the dialogue unknown) is what no dialogues= means: the same scores
    assert score_unnatural([f"{S1}\n说明：明天休息。"], [[S1]], dialogues=[None]) == score_unnatural(
        [f"{S1}\n说明：明天休息。"], [[S1]])


@pytest.mark.parametrize("answer", ["1）好的", "1） 好的", "A. 好的", "a) 好的", "（1）好的", "(a) 好的", "B．好的", "A.好的"])
def test_full_width_and_letter_markers_are_list_markers(answer: str) -> None:
    # Before: "1）", "A." and "a)" were not markers: the prediction kept them and scored f1 0 against 好的.
    assert parse_answer(answer, ["好的"]) == ["好的"]
    assert score_unnatural([answer], [["好的"]])["f1"] == 100.0


@pytest.mark.parametrize("sentence", ["1）号线人太多了", "3.5元太贵了吧", "2、3个人就够了", "1)号线人太多了"])
def test_numbers_that_are_part_of_the_sentence_stay(sentence: str) -> None:
    assert parse_answer(sentence, [sentence]) == [sentence] and parse_answer(sentence) == [sentence]


def test_marker_followed_by_a_space_is_stripped_without_gold() -> None:
    assert parse_answer("1） 好的\nA. 行吧\nb) 走吧") == ["好的", "行吧", "走吧"]


def _alarm(seconds: int):
    """Fail the test if the block runs longer than ``seconds`` (SIGALRM; the handler runs as soon as
    the interpreter regains control, so a runaway match fails, if late, rather than passing)."""
    import contextlib
    import signal

    @contextlib.contextmanager
    def guard():
        def fail(signum, frame):
            raise AssertionError(f"took more than {seconds} s: superlinear parsing")

        previous = signal.signal(signal.SIGALRM, fail)
        signal.alarm(seconds)
        try:
            yield
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)

    return guard()


# Single lines within the 20,000-character cap that made a pattern backtrack quadratically: 25 s, 31 s,
# minutes, 2.8 s and more before. Python's re has no step counter to assert on, so each runs under a
# 10-second alarm: every one now reads in well under 0.5 s on the 2-core machine under load, 20x below it.
PATHOLOGICAL_LINES = {
    "trailing-note tabs": "好的" + "\t" * 19990 + "吧",
    "trailing-note spaces": "a" + " " * 19998 + "x",
    "speaker spaces": "A" + " " * 19990 + "说x",
    "english natural...not": "natural " * 2499 + "not",
    "open quotes": "“" * 19999,
    "open parentheses": "（" * 19999,
    "dashes": "a——" * 6600,
    "negations": "没有" * 9999 + "句",
}


@pytest.mark.skipif(not hasattr(__import__("signal"), "SIGALRM"), reason="needs SIGALRM")
@pytest.mark.parametrize("name", PATHOLOGICAL_LINES)
def test_pathological_lines_read_in_linear_time(name: str) -> None:
    line = PATHOLOGICAL_LINES[name]
    with _alarm(10):
        read_answer(line, [S1])
        out = score_unnatural([line], [[S1]], max_line_chars=None, return_rows=True)
    assert len(out["rows"][0]["predicted"]) <= 1
    # by default a line this long is refused before any work, with the row, the line and the limit
    with pytest.raises(ConvbenchError, match=r"row 0: field 'predictions' line 1 is [\d,]+ characters long, over the limit of 2,000 \(pass a larger max_line_chars"):
        score_unnatural([line], [[S1]])


@pytest.mark.skipif(not hasattr(__import__("signal"), "SIGALRM"), reason="needs SIGALRM")
def test_many_lines_against_many_gold_sentences_are_capped() -> None:
    # Before: 2,000 gold sentences and 4,000 numbered answer lines took 39 s in exact mode (every line's
    # readings compared with every gold sentence). Now refused before any work; a row at the limits
    # (200 gold, 200 lines with 8 readings each) reads well inside the alarm.
    import random

    rng = random.Random(0)
    chars = "我今天去超市买了很多水果你要不要来一点好的谢谢没问题明天见吧周末一起去公园散步怎么样"

    def sentence(n: int) -> str:
        return "".join(rng.choice(chars) for _ in range(n))

    lines = [f"{i % 9 + 1}.{sentence(2)}" for i in range(3900)]  # 19,499 characters: under the 20,000 cap
    with _alarm(10):
        with pytest.raises(ConvbenchError, match=r"row 0: field 'predictions' has [\d,]+ distinct lines, over the limit of 200"):
            score_unnatural(["\n".join(lines)], [[f"{sentence(4)}{i}" for i in range(2000)]])
        with pytest.raises(ConvbenchError, match="row 0: field 'references' has 2,000 distinct sentences, over the limit of 200"):
            score_unnatural(["\n".join(lines[:200])], [[f"{sentence(4)}{i}" for i in range(2000)]])
        gold = [sentence(rng.randint(5, 40)) for _ in range(200)]
        answer = "\n".join(f"{i % 9 + 1}.A：结果：{sentence(rng.randint(3, 6))}（好）" for i in range(200))
        assert score_unnatural([answer], [gold])["n"] == 1
        assert score_unnatural([answer], [gold], match="fuzzy")["n"] == 1


@pytest.mark.parametrize("option", ["max_lines", "max_line_chars", "max_sentences"])
@pytest.mark.parametrize("value", [0, -1, 1.5, True, "3"])
def test_limits_must_be_positive_whole_numbers(option: str, value: object) -> None:
    with pytest.raises(ConvbenchError, match=f"{option} must be a positive whole number or None"):
        score_unnatural(["无"], [[]], **{option: value})


def test_answers_of_only_preamble_or_comment_lines_are_not_none() -> None:
    # A cut-off answer ("以下是不自然的句子：" and nothing after it) names no sentence and does not say
    # "none". Before: read as the empty set, a correct "none" on a clean dialogue (P = R = 1). Now it is
    # no answer: P = R = 0 on every dialogue, counted in empty_answers. A blank answer is no answer too,
    # counted in blank_answers (below: test_blank_answers_are_unanswered); all three in unanswered.
    answers = ["以下是不自然的句子：", "The unnatural sentences are:\n注：见下文", "", "无"]
    out = score_unnatural(answers, [[], [], [], []], return_rows=True)
    assert [(r["precision"], r["empty"], r["blank"], r["unanswered"]) for r in out["rows"]] == [
        (0.0, True, False, True), (0.0, True, False, True), (0.0, False, True, True), (1.0, False, False, False)]
    assert out["empty_answers"] == 2 and out["blank_answers"] == 1 and out["none_answers"] == 1
    assert out["unanswered"] == 3 and out["precision"] == 25.0 and out["ignored_lines"] == 3


def test_always_none_baseline_still_scores_the_clean_share_knowing_the_dialogue() -> None:
    answers = [NONE_PHRASINGS[i % len(NONE_PHRASINGS)] for i in range(40)]
    out = score_unnatural(answers, [[] for _ in range(19)] + [[S1] for _ in range(21)], dialogues=[DIALOGUE[:1] + DIALOGUE[-1:]] * 40)
    assert (out["precision"], out["recall"], out["f1"]) == (47.5, 47.5, 47.5) and out["none_answers"] == 40


# --- tests that pin one-line rules (each fails if its rule is removed)

@pytest.mark.parametrize("sentence", ["都爱大自然。", "全靠顺其自然。", "这些句子都在讲自然科学。", "对话都围绕自然环境。"])
def test_natural_as_in_nature_is_not_natural_speech(sentence: str) -> None:
    # ZH_NATURAL's lookarounds: 大自然, 顺其自然, 自然科学, 自然环境 are not about natural wording.
    assert parse_answer(sentence) == [sentence]


def test_a_trailing_parenthesis_is_kept_unless_the_gold_sentence_says_otherwise() -> None:
    # Stripping a trailing note is not the default: the parenthesis may be part of the sentence.
    assert parse_answer("那就下午三点（北京时间）") == ["那就下午三点（北京时间）"]
    assert parse_answer("那就下午三点（北京时间）", ["那就下午三点"]) == ["那就下午三点"]
    assert parse_answer("那就下午三点（北京时间）", ["那就下午三点（北京时间）"]) == ["那就下午三点（北京时间）"]


def test_none_comments_beside_predictions_are_listed_as_ignored() -> None:
    reading = read_answer(f"{S1}\n其余句子都很自然。", [S1])
    assert reading.sentences == [S1] and not reading.none and reading.ignored == ["其余句子都很自然。"]
    assert score_unnatural([f"{S1}\n其余句子都很自然。"], [[S1]])["ignored_lines"] == 1


def test_a_line_ending_in_a_colon_is_a_preamble() -> None:
    # No other rule knows "它们分别是：" (no word for unnatural, no label): only the colon at its end.
    reading = read_answer(f"它们分别是：\n{S1}", [S1])
    assert reading.sentences == [S1] and reading.ignored == ["它们分别是："]


@pytest.mark.parametrize("answer", [f"甲说：{S1}", f"B说: {S1}", f"A 说 ：{S1}", f"CharacterB说：{S1}"])
def test_a_speaker_who_says_is_a_speaker_prefix(answer: str) -> None:
    assert parse_answer(answer) == [S1] and parse_answer(answer, [S1]) == [S1]


@pytest.mark.skipif(not hasattr(__import__("signal"), "SIGALRM"), reason="needs SIGALRM")
def test_patterns_are_linear_even_on_uncollapsed_whitespace() -> None:
    # read_answer collapses whitespace runs first; each pattern is also linear on its own (no "\s*" next
    # to a lazy body or another "\s*", no quote scanning past another opening quote, no regex excluding
    # "not" around "natural"). Called directly, a pattern has no length cap: on 200,000 characters each
    # quadratic one ran for minutes (the alarm interrupts a match), a linear one takes milliseconds.
    from convbench_datasets.nico import unnatural_answer as ua

    with _alarm(10):
        assert ua._TRAILING_NOTE.match("好的" + "\t" * 199_990 + "吧") is None
        assert ua._TRAILING_NOTE.match("a" + " " * 199_998 + "x") is None
        assert ua._SPEAKER.match("A" + " " * 199_990 + "说x") is None
        assert ua._SPEAKER.match("A" + " " * 199_990 + "说：好的")  # still a speaker prefix
        assert not ua.says_none("natural " * 24_999 + "not")
        assert not list(ua._QUOTED_SPAN.finditer("“" * 199_999))


# --- issue #21: how a careful person reads six kinds of answer that were misread (tests/nico/
# test_identify_answer_set.py holds the reader to that reading on 1,160 answers). The dialogue is sample-01's.
TURNS = ["老板，这件外套多少钱？", "三百八，今年的新款。", "我认为此价格偏高，两百八行不行？", "两百八太少了，最少三百二。"]
CLAUSE = "我认为此价格偏高，"  # the gold sentence: a clause of turn 2


@pytest.mark.parametrize("answer", ["抱歉，我无法判断哪些句子不自然。", "I can't tell.", "对不起，我不能确定。",
                                    "很抱歉，作为一个AI，我无法判断句子是否自然。", "I'm sorry, but I cannot determine that."])
def test_a_refusal_is_no_answer_not_none(answer: str) -> None:
    # Before: read as "none", full marks on a clean dialogue. Now P = R = 0 on every dialogue, counted.
    out = score_unnatural([answer, answer], [[], [CLAUSE]], dialogues=[TURNS, TURNS], return_rows=True)
    assert [(r["precision"], r["recall"], r["refused"], r["none"]) for r in out["rows"]] == [(0.0, 0.0, True, False)] * 2
    assert out["refusals"] == 2 and out["none_answers"] == 0 and out["empty_answers"] == 0


@pytest.mark.parametrize("answer", ["没有不自然的句子。\n抱歉，我无法判断。", "抱歉，我无法判断。\n以上对话中没有不自然的句子。",
                                    "No unnatural sentences.\nI can't tell."])
def test_a_none_answer_that_also_refuses_is_none_not_a_refusal(answer: str) -> None:
    # The module's rule 5: an answer with no predicted sentence is "none" when a line said so, refused only when
    # none did. By hand: the answer "none" on a clean dialogue scores P = R = 1, on one with a gold sentence 0.
    reading = read_answer(answer)
    assert (reading.none, reading.refused, reading.unanswered) == (True, False, False)
    out = score_unnatural([answer, answer], [[], [CLAUSE]], dialogues=[TURNS, TURNS], return_rows=True)
    assert [(r["precision"], r["recall"], r["refused"], r["none"]) for r in out["rows"]] == [
        (1.0, 1.0, False, True), (0.0, 0.0, False, True)]
    assert out["refusals"] == 0 and out["none_answers"] == 2 and out["empty_answers"] == 0


def test_a_refusal_beside_named_sentences_is_a_comment_and_a_dialogue_sentence_stays_one() -> None:
    out = score_unnatural([f"我不太确定，但这句可能不自然：\n{CLAUSE}"], [[CLAUSE]], return_rows=True)
    assert out["rows"][0]["predicted"] == [CLAUSE] and out["f1"] == 100.0 and out["refusals"] == 0
    assert parse_answer("我不能确定他来不来。") == ["我不能确定他来不来。"]  # not about the task: a sentence
    assert score_unnatural(["抱歉，我无法判断。"], [["抱歉，我无法判断。"]])["f1"] == 100.0  # the gold sentence itself


@pytest.mark.parametrize("answer", [
    '{"unnatural_sentences": ["我认为此价格偏高，"]}', '```json\n{"unnatural_sentences": ["我认为此价格偏高，"]}\n```',
    '["我认为此价格偏高，"]', '[{"sentence": "我认为此价格偏高，", "reason": "过于书面"}]',
    '{"result": ["我认为此价格偏高，"], "count": 1}',
])
def test_a_json_answer_names_its_strings_not_its_keys(answer: str) -> None:
    # Before: the key "unnatural_sentences" (and "reason", "过于书面") were predicted sentences: P = 1/2 or less.
    assert parse_answer(answer, [CLAUSE]) == [CLAUSE]
    assert score_unnatural([answer], [[CLAUSE]])["f1"] == 100.0


@pytest.mark.parametrize("answer", ['{"unnatural_sentences": []}', "[]", '```json\n{"sentences": []}\n```'])
def test_an_empty_json_list_says_none(answer: str) -> None:
    reading = read_answer(answer, [], TURNS)
    assert reading.sentences == [] and reading.none


@pytest.mark.parametrize("answer", ["以上对话中的句子都符合人类说话习惯。", "没有不符合人类说话习惯的句子。", "不需要修改。",
                                    "都不需要修改。", "所有句子都符合人类的说话习惯，不需要修改。", "上述对话均符合人类的说话习惯，无需修改。",
                                    "All sentences conform to human speech patterns."])
def test_none_in_the_prompts_own_words_is_none(answer: str) -> None:
    # The prompt asks for sentences "不符合人类说话习惯": before, these answers were predicted sentences.
    reading = read_answer(answer, [CLAUSE], TURNS)
    assert reading.sentences == [] and reading.none
    assert parse_answer("这个计划不需要调整。") == ["这个计划不需要调整。"]  # everyday speech, no subject


@pytest.mark.parametrize("line", [f"{CLAUSE.rstrip('，')}；两百八行不行", f"两百八行不行 / {CLAUSE}", "“我认为此价格偏高” “两百八行不行”"])
def test_two_sentences_of_one_turn_on_one_line_are_two_predictions(line: str) -> None:
    # Before: with the dialogue known, the line read as the whole turn (its clauses, punctuation aside): one
    # prediction, which matched nothing. A careful reading sees two, one of them gold: P = 1/2, R = 1.
    out = score_unnatural([line], [[CLAUSE]], dialogues=[TURNS], return_rows=True)
    assert len(out["rows"][0]["predicted"]) == 2 and (out["precision"], out["recall"]) == (50.0, 100.0)
    # the turn as the dialogue writes it is one prediction: the turn around the gold clause (below)
    assert score_unnatural(["我认为此价格偏高，两百八行不行？"], [[CLAUSE]], dialogues=[TURNS])["precision"] == 100.0


@pytest.mark.parametrize("comment", ["原因：“我认为此价格”太书面。", "理由：其中“我认为此”用词太正式。", "建议改为：有点贵啊，两百八行不行？",
                                     "这句话过于书面化，日常对话中很少这样说。", "Rewrite: 有点贵啊。"])
def test_comment_and_rewrite_lines_are_not_predictions(comment: str) -> None:
    # Before: a comment line sharing characters with the gold sentence won the reading without its label
    # (closer to the gold by LCS), and was a second prediction: P = 1/2.
    for dialogues in (None, [TURNS]):
        out = score_unnatural([f"{CLAUSE}\n{comment}"], [[CLAUSE]], dialogues=dialogues, return_rows=True)
        assert out["rows"][0]["predicted"] == [CLAUSE] and out["precision"] == 100.0


@pytest.mark.parametrize("answer", ["我认为此价格偏高，两百八行不行？", "A：“我认为此价格偏高，两百八行不行”", "1. 我认为此价格偏高，两百八行不行"])
def test_a_quoted_turn_matches_the_gold_clause_inside_it(answer: str) -> None:
    # Before: 0 (the turn is not the gold clause). The prediction is a stretch of the dialogue holding the
    # gold sentence: it matches (P = R = 1). Without the dialogue, only exact quotes match.
    assert score_unnatural([answer], [[CLAUSE]], dialogues=[TURNS])["f1"] == 100.0
    assert score_unnatural([answer], [[CLAUSE]])["f1"] == 0.0
    # a turn that does not hold it matches nothing
    assert score_unnatural(["两百八太少了，最少三百二。"], [[CLAUSE]], dialogues=[TURNS])["f1"] == 0.0


def test_a_near_copy_names_the_sentence_it_copies_knowing_the_dialogue() -> None:
    # one character replaced (此 -> 这): LCS F-measure 7/8 = 0.875 >= SNAP (0.8)
    for copy in ("我认为这价格偏高，", "我认为此价格偏高了", "我认为此价格高，"):
        assert score_unnatural([copy], [[CLAUSE]], dialogues=[TURNS])["f1"] == 100.0
        assert score_unnatural([copy], [[CLAUSE]])["f1"] == 0.0  # exact without the dialogue, as before
    # LCS 我, 价, 格: F = 2 x 3 / (7 + 8) = 0.4, not a copy
    assert score_unnatural(["我觉得价格还行"], [[CLAUSE]], dialogues=[TURNS])["f1"] == 0.0


# --- blank answers (#41): no letter or number is no answer, not the answer "none"

BLANK = ["", "……", "。", "？", "🙂", "  \n"]


@pytest.mark.parametrize("answer", BLANK)
def test_blank_answers_are_unanswered(answer: str) -> None:
    # Before: read as the empty set, the answer "none": P = R = 1 on a clean dialogue. Now no answer: P = R = 0
    # on a clean dialogue and on one with a gold sentence alike, counted in unanswered and blank_answers.
    reading = read_answer(answer, [S1])
    assert is_blank(answer) and (reading.blank, reading.none, reading.sentences) == (True, False, [])
    out = score_unnatural([answer, answer], [[], [S1]], return_rows=True)
    assert [(r["precision"], r["recall"], r["none"], r["blank"]) for r in out["rows"]] == [(0.0, 0.0, False, True)] * 2
    assert (out["f1"], out["unanswered"], out["blank_answers"], out["none_answers"]) == (0.0, 2, 2, 0)
    # the old reading, an option: the answer "none" (P = R = 1 on the clean dialogue, 0 on the other)
    old = score_unnatural([answer, answer], [[], [S1]], blank_answer="none")
    assert (old["precision"], old["recall"], old["f1"]) == (50.0, 50.0, 50.0)
    assert (old["unanswered"], old["blank_answers"], old["none_answers"]) == (0, 2, 0)
    assert (out["signature"]["blank_answer"], old["signature"]["blank_answer"]) == ("unanswered", "none")


def test_an_always_blank_model_scores_0_with_every_answer_unanswered() -> None:
    # 40 dialogues, 19 clean (47.5%, as NICO's test set). Before: 47.5, like an explicit "none" each time (test
    # above, test_always_none_scores_the_share_of_clean_dialogues). Now: P = R = F1 = 0, 40 unanswered.
    references = [[] for _ in range(19)] + [[S1] for _ in range(21)]
    answers = [BLANK[i % len(BLANK)] for i in range(40)]
    out = score_unnatural(answers, references)
    assert (out["precision"], out["recall"], out["f1"], out["f1_containing"]) == (0.0, 0.0, 0.0, 0.0)
    assert (out["unanswered"], out["blank_answers"], out["none_answers"]) == (40, 40, 0)
    old = score_unnatural(answers, references, blank_answer="none")
    assert (old["precision"], old["recall"], old["f1"]) == (47.5, 47.5, 47.5) and old["unanswered"] == 0
    # an explicit "none" is distinct under either reading: still the share of clean dialogues
    for reading in ("unanswered", "none"):
        none = score_unnatural(["无"] * 40, references, blank_answer=reading)  # type: ignore[arg-type]
        assert none["f1"] == 47.5 and none["none_answers"] == 40 and none["unanswered"] == 0


@pytest.mark.parametrize("answer", ["无", "None", "3", "①", "[]", "```\n[]\n```", "™"])
def test_an_answer_with_a_letter_or_a_number_or_json_is_not_blank(answer: str) -> None:
    # L* or N* after NFKC ("①" is No, "™" is "TM"); an empty JSON list is the answer "none" of a JSON answer
    assert not is_blank(answer) and not read_answer(answer).blank


def test_an_answer_with_text_that_reads_as_nothing_is_unanswered_whatever_blank_answer_says() -> None:
    # An empty code block has letters (its language) and names nothing: no answer under either reading.
    for reading in ("unanswered", "none"):
        out = score_unnatural(["```json\n```"], [[]], blank_answer=reading)  # type: ignore[arg-type]
        assert (out["f1"], out["unanswered"], out["empty_answers"], out["blank_answers"]) == (0.0, 1, 1, 0)


def test_blank_answer_must_be_a_known_reading() -> None:
    with pytest.raises(ConvbenchError, match="blank_answer must be 'unanswered' or 'none', got 'empty'"):
        score_unnatural([""], [[]], blank_answer="empty")  # type: ignore[arg-type]
