"""nico_generation against sacrebleu and rouge-score on the same tokens, and by hand."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from convbench_datasets.scoring.nico_generation import score_generation, segment

CHARS = "我今天去超市买了很多水果你要不要来一点好的谢谢没问题明天见吧周末一起去公园散步怎么样，。？"


def _pairs(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    texts = ["".join(rng.choice(CHARS) for _ in range(rng.randint(1, 30))) for _ in range(2 * n)]
    return texts[:n], texts[n:]


def test_bleu_equals_sacrebleu_on_the_same_tokens() -> None:
    from sacrebleu.metrics import BLEU

    predictions, references = _pairs(300)
    ours = score_generation(predictions, references)
    hyps = [" ".join(t) for t in segment(predictions)]
    refs = [" ".join(t) for t in segment(references)]
    for n in (1, 2):
        expected = BLEU(tokenize="none", max_ngram_order=n).corpus_score(hyps, [refs]).score
        assert ours[f"bleu_{n}"] == pytest.approx(expected, abs=1e-9)


def test_rouge_l_equals_rouge_score_with_jieba() -> None:
    import jieba
    from rouge_score import rouge_scorer

    class JiebaTokenizer:
        def tokenize(self, text: str) -> list[str]:
            return [t for t in (p.strip() for p in jieba.lcut(text)) if t]

    predictions, references = _pairs(300, seed=1)
    scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=JiebaTokenizer())
    expected = 100 * sum(scorer.score(r, p)["rougeL"].fmeasure for p, r in zip(predictions, references)) / 300
    assert score_generation(predictions, references)["rouge_l"] == pytest.approx(expected, abs=1e-9)


def test_distinct_and_length_by_hand() -> None:
    # char tokens: "我我你" -> unigrams 3, distinct 2 (2/3); bigrams 我我, 我你: 2 of 2 (1).
    #              "好"     -> unigrams 1, distinct 1 (1);   bigrams none: counts 0.
    # distinct_1 = (2/3 + 1) / 2 = 83.33; distinct_2 = (1 + 0) / 2 = 50; avg_len = (3 + 1) / 2 = 2.
    out = score_generation(["我我你", "好"], ["我你", "好"], tokenizer="char")
    assert out["distinct_1"] == pytest.approx(250 / 3) and out["distinct_2"] == 50.0 and out["avg_len"] == 2.0
    # corpus level: unigrams 我,我,你,好 -> 3 distinct of 4 = 75; bigrams 我我, 我你 -> 2 of 2 = 100.
    corpus = score_generation(["我我你", "好"], ["我你", "好"], tokenizer="char", distinct_level="corpus")
    assert corpus["distinct_1"] == 75.0 and corpus["distinct_2"] == 100.0


def test_jieba_segmentation_and_english_13a() -> None:
    assert segment(["我今天去超市"])[0] == ["我", "今天", "去", "超市"]
    out = score_generation(["Hello, world!"], ["Hello, world!"], tokenizer="13a")
    assert out["avg_len"] == 4.0 and out["rouge_l"] == 100.0  # Hello , world !


def test_per_interaction_type() -> None:
    out = score_generation(["好啊", "不行"], ["好啊", "可以"], tokenizer="char", interaction_types=["cooperation", "conflict"])
    assert out["per_interaction_type"]["cooperation"]["rouge_l"] == 100.0
    assert out["per_interaction_type"]["conflict"]["rouge_l"] == 0.0 and out["per_interaction_type"]["conflict"]["n"] == 1
    assert out["rouge_l"] == 50.0


def test_bertscore_with_a_tiny_local_bert(tmp_path: Path) -> None:
    pytest.importorskip("bert_score", reason="BERTScore needs the bertscore extra")
    from tests.support.tiny_models import build_tiny_bert

    model = build_tiny_bert(tmp_path / "bert", CHARS)
    options = {"num_layers": 2, "batch_size": 4}
    same = score_generation(["我今天很开心", "好的"], ["我今天很开心", "好的"], bertscore=True,
                            bertscore_model=str(model), bertscore_options=options)
    assert same["bertscore_f1"] == pytest.approx(100.0, abs=1e-4)  # identical texts: cosine 1 everywhere
    different = score_generation(["去公园散步"], ["谢谢没问题"], bertscore=True, bertscore_model=str(model),
                                 bertscore_options=options)
    assert different["bertscore_f1"] < 100.0 and same["signature"]["bertscore_model"] == str(model)


@pytest.mark.parametrize(
    "kwargs,error,message",
    [
        ({"predictions": [], "references": []}, ValueError, "no predictions"),
        ({"predictions": ["a"], "references": ["a", "b"]}, ValueError, "1 predictions but 2 references"),
        ({"predictions": [None], "references": ["a"]}, TypeError, "row 0: field 'predictions' must be a string"),
        ({"predictions": ["a"], "references": ["a"], "tokenizer": "spaces"}, ValueError, "unknown tokenizer"),
    ],
)
def test_bad_input(kwargs: dict, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        score_generation(**kwargs)


def test_worker_processes_give_the_same_numbers() -> None:
    from convbench_datasets.scoring.nico_generation import PARALLEL_MIN_PAIRS

    predictions, references = _pairs(PARALLEL_MIN_PAIRS, seed=3)
    types = ["exchange", "conflict"] * (PARALLEL_MIN_PAIRS // 2)
    parallel = score_generation(predictions, references, workers=2, interaction_types=types)
    single = score_generation(predictions, references, workers=1, interaction_types=types)
    assert parallel == single
