"""The harnesses' ``<metric>_stderr`` (issue #24): each equals the standard deviation (ddof 1) of the metric
itself recomputed on every resample of the same seeded draws (``numpy.random.default_rng(seed).integers``,
as CoCoEval's intervals draw), by convbench's own scorers: corpus BLEU through sacrebleu, F1 as the harmonic
mean of the resample's averages, the mismatch from the resample's means."""

from __future__ import annotations

import numpy as np
import pytest

from convbench_datasets.cocoeval.behavior_frequency import score_frequencies
from convbench_datasets.cocoeval.stderr import frequency_stderr
from convbench_datasets.nico.nico_generation import pair_statistics, score_generation
from convbench_datasets.nico.stderr import generation_stderr, identify_stderr
from convbench_datasets.nico.unnatural_prf import score_unnatural
from convbench_datasets.scoring.resample import replicate_stderr

PREDICTIONS = ["我 很 好", "你 好 吗 吗", "他 们 来 了", "", "好 的 好 的", "我 不 知 道"]
REFERENCES = ["我 很 好", "你 好", "他 们 走 了", "嗯", "好 的", "我 知 道 了"]
B, SEED = 60, 5  # few resamples: each is scored by the metric itself


def _draws(n: int, seed: int = SEED, resamples: int = B) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def test_replicate_stderr_is_numpy_std_with_bessel_over_finite_values() -> None:
    values = np.array([[1.0, np.nan], [2.0, 5.0], [4.0, np.nan]])
    # by hand: mean 7/3, squared deviations 16/9 + 1/9 + 25/9 = 42/9, over 2: 7/3
    assert replicate_stderr(values) == [pytest.approx((7 / 3) ** 0.5), None]  # one finite value: undefined
    assert replicate_stderr(values, units=1) == [None, None]


def test_generation_stderr_is_the_spread_of_each_resample_s_corpus_scores() -> None:
    bert = [0.9, 0.5, 0.7, 0.0, 0.8, 0.6]
    out = generation_stderr(pair_statistics(PREDICTIONS, REFERENCES, tokenizer="char"), B, SEED, bertscore_f1=bert)
    scores = []
    for drawn in _draws(len(PREDICTIONS)):
        got = score_generation([PREDICTIONS[i] for i in drawn], [REFERENCES[i] for i in drawn], tokenizer="char")
        scores.append([got[k] for k in ("bleu_1", "bleu_2", "rouge_l", "distinct_1", "distinct_2", "avg_len")]
                      + [100 * np.mean([bert[i] for i in drawn])])
    expected = np.std(scores, axis=0, ddof=1)
    keys = ["bleu_1", "bleu_2", "rouge_l", "distinct_1", "distinct_2", "avg_len", "bertscore_f1"]
    assert list(out) == [f"{k}_stderr" for k in keys]
    assert list(out.values()) == pytest.approx(list(expected), rel=1e-9)
    assert all(v > 0 for v in out.values())
    # corpus BLEU's spread is not the spread of a mean of per-pair BLEU
    own = [score_generation([p], [r], tokenizer="char")["bleu_2"] for p, r in zip(PREDICTIONS, REFERENCES)]
    per_pair = np.std([np.mean([own[i] for i in drawn]) for drawn in _draws(len(own))], ddof=1)
    assert out["bleu_2_stderr"] != pytest.approx(per_pair, rel=1e-3)
    # seeded: the same numbers again, other numbers with another seed
    stats = pair_statistics(PREDICTIONS, REFERENCES, tokenizer="char")
    assert generation_stderr(stats, B, SEED) == {k: v for k, v in out.items() if k != "bertscore_f1_stderr"}
    assert generation_stderr(stats, B, SEED + 1)["rouge_l_stderr"] != out["rouge_l_stderr"]


def test_identify_stderr_is_the_spread_of_each_resample_s_macro_prf() -> None:
    answers = ["他们走了", "无", "我很好\n你好", "无", "你好", "他们走了"]
    golds = [["他们走了"], [], ["我很好", "他们走了"], ["你好"], [], ["我很好"]]
    rows = score_unnatural(answers, golds, return_rows=True)["rows"]
    out = identify_stderr(rows, B, SEED)
    keys = ["precision", "recall", "f1", "precision_containing", "recall_containing", "f1_containing"]
    scores = []
    for drawn in _draws(len(answers)):
        got = score_unnatural([answers[i] for i in drawn], [golds[i] for i in drawn])
        scores.append([np.nan if got[k] is None else got[k] for k in keys])  # None: no containing row drawn
    scores = np.array(scores)
    expected = [np.std(column[np.isfinite(column)], ddof=1) for column in scores.T]
    assert list(out) == [f"{k}_stderr" for k in keys]
    assert list(out.values()) == pytest.approx(expected, rel=1e-9)
    assert 0 < out["f1_stderr"] < 50


def test_a_statistic_undefined_in_some_resamples_leaves_them_out() -> None:
    # one dialogue of six holds gold sentences: many resamples draw none, *_containing is undefined there
    rows = [{"precision": p, "recall": r, "contains": c}
            for p, r, c in [(1.0, 0.5, True), (1.0, 1.0, False), (0.0, 0.0, False), (1.0, 1.0, False),
                            (0.0, 0.0, False), (0.5, 0.5, False)]]
    draws = _draws(6)
    drawn_containing = [[i for i in d if rows[i]["contains"]] for d in draws]
    assert any(not d for d in drawn_containing) and any(drawn_containing)
    out = identify_stderr(rows, B, SEED)
    # every resample that drew the one containing dialogue has P = 100, R = 50: no spread
    assert out["precision_containing_stderr"] == 0 and out["recall_containing_stderr"] == 0
    # one row: every resample is that row, no spread to estimate (not a standard error of 0)
    assert set(identify_stderr(rows[:1], B, SEED).values()) == {None}
    assert set(generation_stderr(pair_statistics(["我"], ["你"], tokenizer="char"), B, SEED).values()) == {None}


def test_frequency_stderr_is_the_spread_of_each_resample_s_means_and_mismatch() -> None:
    rng = np.random.default_rng(2)
    model = rng.poisson([1.0, 0.3], size=(12, 2)).astype(float)
    human = rng.poisson([0.6, 0.8], size=(12, 2)).astype(float)
    rated = rng.integers(1, 11, size=12).astype(float)
    names = ["a", "b"]
    predictions = [[n for j, n in enumerate(names) for _ in range(int(model[i, j]))] for i in range(12)]
    references = [[n for j, n in enumerate(names) for _ in range(int(human[i, j]))] for i in range(12)]
    conversations = ["c0"] * 3 + ["c1"] * 2 + ["c2"] + ["c3"] * 4 + ["c4"] * 2  # resampled whole
    clusters = [[0, 1, 2], [3, 4], [5], [6, 7, 8, 9], [10, 11]]
    out = frequency_stderr(predictions, references, names, {"overall": rated}, B, SEED, conversations)
    replicates = []
    for drawn in _draws(len(clusters)):
        rows = [r for c in drawn for r in clusters[c]]
        got = score_frequencies([predictions[r] for r in rows], [references[r] for r in rows], behaviours=names,
                                n_bootstrap=0)
        replicates.append([*got["model_mean"].values(), *got["human_mean"].values(), got["mismatch"],
                           rated[rows].mean()])
    expected = np.std(replicates, axis=0, ddof=1)
    assert [*out["model"].values(), *out["human"].values()] == pytest.approx(list(expected[:4]), rel=1e-9)
    assert out["mismatch"] == pytest.approx(expected[4], rel=1e-9)
    assert out["ratings"]["overall"] == pytest.approx(expected[5], rel=1e-9)


def test_bad_resample_counts_are_named() -> None:
    stats = pair_statistics(["我"], ["我"], tokenizer="char")
    with pytest.raises(ValueError, match="n_bootstrap"):
        generation_stderr(stats, -1)
    with pytest.raises(ValueError, match="no pairs"):
        generation_stderr([], 10)
    with pytest.raises(ValueError, match="got 1 pairs but 2 BERTScore"):
        generation_stderr(stats, 10, bertscore_f1=[0.1, 0.2])
