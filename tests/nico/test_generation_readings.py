"""What the NICO paper leaves open in its metrics, read from its numbers (issue #41; the NICO card gives the
evidence): characters, corpus BLEU, cumulative BLEU-2 and ROUGE-L F1 by default, each offered the other
way, recorded in the signatures and flagged by the report when not the paper's reading."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from convbench_datasets.errors import ConvbenchError
from convbench_datasets.nico.nico_generation import score_generation, segment
from convbench_datasets.nico.run import BENCHMARK, NICOSettings
from convbench_datasets.settings import setting_departures

# Two pairs, derived by hand below. jieba cuts them 我/今天/去/超市, 今天/我/去/超市, 谢谢/你, 谢谢.
PREDICTIONS, REFERENCES = ["我今天去超市", "谢谢你"], ["今天我去超市", "谢谢"]


def _scores(**options: str) -> dict[str, float]:
    out = score_generation(PREDICTIONS, REFERENCES, **options)  # type: ignore[arg-type]
    return {key: round(value, 4) for key, value in out.items() if isinstance(value, float)}


def test_every_metric_counts_characters_by_default() -> None:
    # Characters. Pair 1: 6 vs 6 tokens, unigrams 6 of 6 match; bigrams 我今 今天 天去 去超 超市 against
    # 今天 天我 我去 去超 超市: 3 of 5; LCS 今天去超市 = 5. Pair 2: 谢 谢 你 vs 谢 谢: unigrams 2 of 3, bigrams
    # 谢谢 谢你 vs 谢谢: 1 of 2, LCS 2. Corpus: c = 9 > r = 8 (no brevity penalty), p1 = 8/9, p2 = 4/7:
    # BLEU-1 = 88.8889, BLEU-2 = sqrt(8/9 x 4/7) = 71.2697. ROUGE-L F1: pair 1 P = R = 5/6; pair 2 P = 2/3, R = 1,
    # F1 = 0.8: mean 81.6667. Distinct-1: (6/6 + 2/3) / 2 = 83.3333; Distinct-2: (5/5 + 2/2) / 2 = 100.
    # avg_len: (6 + 3) / 2 = 4.5 (jieba words gave 3: the length unit of Table 2's 24.7 tokens per utterance).
    assert _scores() == {"bleu_1": 88.8889, "bleu_2": 71.2697, "rouge_l": 81.6667, "distinct_1": 83.3333,
                         "distinct_2": 100.0, "avg_len": 4.5}
    assert segment(["谢谢你"]) == [["谢", "谢", "你"]]


def test_jieba_words_are_the_option() -> None:
    # Words. Pair 1: 我 今天 去 超市 vs 今天 我 去 超市: unigrams 4 of 4, bigrams 我今天 今天去 去超市 against
    # 今天我 我去 去超市: 1 of 3, LCS 3 (今天 去 超市). Pair 2: 谢谢 你 vs 谢谢: unigrams 1 of 2, bigrams 0 of 1, LCS 1.
    # Corpus: c = 6 > r = 5, p1 = 5/6, p2 = 1/4: BLEU-1 = 83.3333, BLEU-2 = sqrt(5/24) = 45.6435. ROUGE-L F1:
    # (3/4 + 2/3) / 2 = 70.8333. Every word differs within a response: Distinct 100 / 100. avg_len (4 + 2) / 2 = 3.
    assert _scores(tokenizer="jieba") == {"bleu_1": 83.3333, "bleu_2": 45.6435, "rouge_l": 70.8333,
                                          "distinct_1": 100.0, "distinct_2": 100.0, "avg_len": 3.0}


def test_the_bleu_and_rouge_l_readings_by_hand() -> None:
    # Characters, counts as in the first test. Individual BLEU-2: the brevity penalty (1) times p2 = 4/7: 57.1429.
    # Sentence BLEU (sacrebleu's sentence_score): pair 1 BLEU-1 = 1, BLEU-2 = sqrt(1 x 3/5) = 0.774597, individual
    # 3/5; pair 2 (c = 3 > r = 2) BLEU-1 = 2/3, BLEU-2 = sqrt(2/3 x 1/2) = 0.577350, individual 1/2. Means: BLEU-1
    # 83.3333, BLEU-2 67.5973, individual 55. ROUGE-L with beta = P/R, F = (1 + b^2) P R / (R + b^2 P): pair 1
    # P = R, F = 5/6; pair 2 P = 2/3, R = 1, b = 2/3: (13/9 x 2/3) / (1 + 4/9 x 2/3) = 26/35: mean 78.8095.
    default = _scores()
    assert _scores(bleu_ngrams="individual") == {**default, "bleu_2": 57.1429}
    assert _scores(bleu_level="sentence") == {**default, "bleu_1": 83.3333, "bleu_2": 67.5973}
    assert _scores(bleu_level="sentence", bleu_ngrams="individual") == {**default, "bleu_1": 83.3333, "bleu_2": 55.0}
    assert _scores(rouge_l_f="p/r") == {**default, "rouge_l": 78.8095}


def _random_pairs(n: int, seed: int) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    chars = "我今天去超市买了水果你要不要来一点好的谢谢没问题，。？"
    texts = ["".join(rng.choice(chars) for _ in range(rng.randint(1, 25))) for _ in range(2 * n)]
    return texts[:n] + [""], texts[n:] + ["好"]  # an empty turn too (a failed row is scored as one)


@pytest.mark.parametrize("tokenizer", ["char", "jieba"])
def test_sentence_bleu_is_the_mean_of_sacrebleus_sentence_score(tokenizer: str) -> None:
    from sacrebleu.metrics import BLEU

    predictions, references = _random_pairs(200, seed=7)
    ours = score_generation(predictions, references, tokenizer=tokenizer, bleu_level="sentence")  # type: ignore[arg-type]
    hyps, refs = ([" ".join(t) for t in segment(texts, tokenizer)] for texts in (predictions, references))  # type: ignore[arg-type]
    for n in (1, 2):
        bleu = BLEU(tokenize="none", max_ngram_order=n, effective_order=True)
        expected = sum(bleu.sentence_score(h, [r]).score for h, r in zip(hyps, refs)) / len(hyps)
        assert ours[f"bleu_{n}"] == pytest.approx(expected, abs=1e-9)


def test_individual_and_cumulative_corpus_bleu_2_equal_nltks() -> None:
    # nltk, another implementation: corpus_bleu with weights (0, 1) is the individual BLEU-2, (0.5, 0.5) the
    # cumulative one (no corpus here has a zero precision, so no smoothing is involved). Predictions of two
    # characters or more: nltk counts a prediction without bigrams as one bigram that does not match.
    from nltk.translate.bleu_score import corpus_bleu

    pairs = [(p, r) for p, r in zip(*_random_pairs(200, seed=8)) if len(p) > 1]
    predictions, references = [p for p, _ in pairs], [r for _, r in pairs]
    hyps, refs = segment(predictions), segment(references)
    for ngrams, weights in (("individual", (0.0, 1.0)), ("cumulative", (0.5, 0.5))):
        ours = score_generation(predictions, references, bleu_ngrams=ngrams)["bleu_2"]  # type: ignore[arg-type]
        assert ours == pytest.approx(100 * corpus_bleu([[r] for r in refs], hyps, weights=weights), abs=1e-9)


def test_the_signatures_record_the_readings_and_the_report_flags_the_others() -> None:
    assert {k: score_generation(PREDICTIONS, REFERENCES)["signature"][k]
            for k in ("tokenizer", "bleu_level", "bleu_ngrams", "rouge_l_f")} == {
        "tokenizer": "char", "bleu_level": "corpus", "bleu_ngrams": "cumulative", "rouge_l_f": "f1"}
    session = SimpleNamespace(judge_specs=[])
    plan = BENCHMARK.plan({"task": "open_domain"}, dataset=None, sources=None)
    signature = plan.signature(session)  # type: ignore[arg-type]
    assert {k: signature[k] for k in ("tokenizer", "bleu_level", "bleu_ngrams", "rouge_l_f")} == {
        "tokenizer": "char", "bleu_level": "corpus", "bleu_ngrams": "cumulative", "rouge_l_f": "f1"}
    assert setting_departures(NICOSettings, signature) == []
    other = {"tokenizer": "jieba", "bleu_level": "sentence", "bleu_ngrams": "individual", "rouge_l_f": "p/r"}
    signature = BENCHMARK.plan({"task": "open_domain", **other}, dataset=None, sources=None).signature(session)  # type: ignore[arg-type]
    assert setting_departures(NICOSettings, signature) == [
        "jieba tokens (the paper's numbers point to characters)",
        "sentence-level BLEU (convbench's default: corpus; the paper is silent)",
        "individual BLEU-2 (the paper's numbers point to cumulative)",
        "ROUGE-L F with beta = P/R (the paper's numbers point to F1)"]
    # finding unnatural sentences counts no tokens: the readings change none of its numbers
    assert setting_departures(NICOSettings, {**signature, "task": "identify_unnatural"}) == []


def test_rescoring_reads_the_readings_from_the_signature() -> None:
    records = [{"turn": p, "reference": r, "interaction_type": "exchange", "error": None}
               for p, r in zip(PREDICTIONS, REFERENCES)]
    other = {"tokenizer": "jieba", "bleu_level": "sentence", "bleu_ngrams": "individual", "rouge_l_f": "p/r"}
    rescored = BENCHMARK.rescore(records, {"task": "open_domain", **other}, {}, {})
    expected = score_generation(PREDICTIONS, REFERENCES, **other)  # type: ignore[arg-type]
    assert {k: rescored[k] for k in ("bleu_1", "bleu_2", "rouge_l", "avg_len")} == {
        k: expected[k] for k in ("bleu_1", "bleu_2", "rouge_l", "avg_len")}
    # a run written before the BLEU and ROUGE-L readings were options was scored corpus, cumulative, F1
    older = BENCHMARK.rescore(records, {"task": "open_domain", "tokenizer": "jieba"}, {}, {})
    assert older["bleu_2"] == pytest.approx(45.6435, abs=1e-4) and older["rouge_l"] == pytest.approx(70.8333, abs=1e-4)


@pytest.mark.parametrize("name,value,allowed", [("bleu_level", "macro", "corpus, sentence"),
                                                ("bleu_ngrams", "both", "cumulative, individual"),
                                                ("rouge_l_f", "f2", "f1, p/r")])
def test_an_unknown_reading_is_refused_before_any_answer(name: str, value: str, allowed: str) -> None:
    with pytest.raises(ConvbenchError, match=f"^unknown NICO {name} '{value}'; choose one of {allowed}$"):
        BENCHMARK.plan({"task": "open_domain", name: value}, dataset=None, sources=None)
    with pytest.raises(ValueError, match=f"^{name} must be one of {allowed}, got '{value}'$"):
        score_generation(["好"], ["好"], **{name: value})  # type: ignore[arg-type]
