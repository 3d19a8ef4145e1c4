"""nico_generation (without BERTScore) on 10,000 Chinese pairs, beside a straightforward implementation.

The straightforward one segments with jieba, calls sacrebleu's corpus BLEU for orders 1 and 2, and
rouge-score's RougeScorer (with a jieba tokenizer) pair by pair; Distinct and length by hand. Both must
give the same numbers. Targets: the metric at least 3x faster overall, and ROUGE-L alone at least 10x
faster than rouge-score per pair (same F-measures), on pre-segmented tokens.

Usage: python benchmarks/nico_generation_speed.py [--pairs 10000]
"""

from __future__ import annotations

import argparse
import logging
import random
import time

PHRASES = ("我们 今天 晚上 一起 去 吃 火锅 吧 你 觉得 怎么样 好啊 不过 我 有点 累 明天 再说 周末 公园 散步 "
           "天气 不错 要不要 带上 孩子 超市 打折 买 水果 没问题 谢谢 你 真 好 哈哈 算了 随便 都 行").split()


def _texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = [rng.choice(PHRASES) for _ in range(rng.randint(3, 18))]
        out.append("".join(words) + rng.choice(["。", "？", "！", "～", ""]))
    return out


def straightforward(predictions: list[str], references: list[str]) -> dict[str, float]:
    import jieba
    from rouge_score import rouge_scorer
    from sacrebleu.metrics import BLEU

    class JiebaTokenizer:
        def tokenize(self, text: str) -> list[str]:
            return [t for t in (p.strip() for p in jieba.lcut(text)) if t]

    tok = JiebaTokenizer()
    hyps = [tok.tokenize(p) for p in predictions]
    refs = [tok.tokenize(r) for r in references]
    joined_h, joined_r = [" ".join(h) for h in hyps], [" ".join(r) for r in refs]
    scores = {f"bleu_{n}": BLEU(tokenize="none", max_ngram_order=n).corpus_score(joined_h, [joined_r]).score for n in (1, 2)}
    scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=tok)
    scores["rouge_l"] = 100 * sum(scorer.score(r, p)["rougeL"].fmeasure for p, r in zip(predictions, references)) / len(hyps)
    for n in (1, 2):
        ratios = []
        for h in hyps:
            grams = [tuple(h[i : i + n]) for i in range(len(h) - n + 1)]
            ratios.append(len(set(grams)) / len(grams) if grams else 0.0)
        scores[f"distinct_{n}"] = 100 * sum(ratios) / len(ratios)
    scores["avg_len"] = sum(map(len, hyps)) / len(hyps)
    return scores


def _median(fn, repeat: int):
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2], result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3, help="median of this many runs of each")
    args = parser.parse_args()

    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    from rouge_score import rouge_scorer

    from convbench_datasets.scoring.lcs import rouge_l_f
    from convbench_datasets.scoring.nico_generation import score_generation, segment

    predictions, references = _texts(args.pairs, 1), _texts(args.pairs, 2)

    straight_s, reference = _median(lambda: straightforward(predictions, references), args.repeat)
    ours_s, ours = _median(lambda: score_generation(predictions, references), args.repeat)
    for key, value in reference.items():
        assert abs(ours[key] - value) < 1e-9, (key, ours[key], value)

    hyps, refs = segment(predictions), segment(references)

    class Pretokenized:  # rouge-score on the very same tokens: only the LCS work is compared
        def tokenize(self, text: str) -> list[str]:
            return text.split(" ")

    scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=Pretokenized())
    joined = [(" ".join(h), " ".join(r)) for h, r in zip(hyps, refs)]
    rouge_s, theirs = _median(lambda: [scorer.score(r, h)["rougeL"].fmeasure for h, r in joined], args.repeat)
    lcs_s, mine = _median(lambda: [rouge_l_f(h, r) for h, r in zip(hyps, refs)], args.repeat)
    assert mine == theirs, "ROUGE-L F-measures differ"

    print(f"{args.pairs} pairs; identical numbers: {', '.join(f'{k}={v:.2f}' for k, v in ours.items() if isinstance(v, float))}")
    print(f"{'measure':<46}{'convbench':>11}{'reference':>11}{'speed-up':>10}{'target':>8}")
    for name, mine_s, ref_s, target in [
        ("nico_generation vs sacrebleu + rouge-score", ours_s, straight_s, 3),
        ("ROUGE-L per pair vs rouge-score (same tokens)", lcs_s, rouge_s, 10),
    ]:
        speedup = ref_s / mine_s
        print(f"{name:<46}{mine_s:>10.2f}s{ref_s:>10.2f}s{speedup:>9.1f}x{'OK' if speedup >= target else 'MISS':>8}")


if __name__ == "__main__":
    main()
