"""nico_generation (without BERTScore) on 10,000 and 100,000 Chinese pairs, beside a straightforward implementation.

The straightforward one segments each text once with jieba, then calls sacrebleu's corpus BLEU for
orders 1 and 2 and rouge-score's RougeScorer pair by pair on those tokens (a tokenizer that only splits
the space-joined tokens again, so that no text is segmented twice); Distinct and length by hand. Both
must give identical numbers (asserted). Targets: the metric at least 3x faster overall, and ROUGE-L alone at
least 10x faster than rouge-score per pair (same F-measures, on the same pre-segmented tokens) and
within 1.2x of the time of rouge-score-rs (PyPI's rouge-score-rs, an independent Rust implementation, in
the test extra: its Python scorer and its Rust scorer called directly), by CPU time; where rouge-score-rs
is not installed that target is not checked, and the script says so.
Each side runs ``--repeat`` times, interleaved, and the medians are compared, so that load from other
processes hits both sides alike. The segmentation backend (rjieba with the ``fast`` extra, else jieba)
is printed with its own ratio against jieba.

``--workers`` instead times score_generation with 1, 2, 4... worker processes at each size and prints
what the automatic rule (convbench_datasets/scoring/workers.py) picks there.

Usage: python benchmarks/nico_generation_speed.py [--pairs 10000 100000] [--repeat 3] [--workers]
"""

from __future__ import annotations

import argparse
import logging
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

PHRASES = ("我们 今天 晚上 一起 去 吃 火锅 吧 你 觉得 怎么样 好啊 不过 我 有点 累 明天 再说 周末 公园 散步 "
           "天气 不错 要不要 带上 孩子 超市 打折 买 水果 没问题 谢谢 你 真 好 哈哈 算了 随便 都 行").split()


# What real answers add to plain Chinese now and then: numbers, Latin words, full-width and ASCII marks.
EXTRAS = ("3.5元", "2、3个", "100%", "OK", "Wi-Fi", "App", "，", "？", "……", "（笑）", "10点半", "iPhone 15")


def _texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = [rng.choice(PHRASES) for _ in range(rng.randint(3, 18))]
        if rng.random() < 0.1:
            words.insert(rng.randrange(len(words) + 1), rng.choice(EXTRAS))
        out.append("".join(words) + rng.choice(["。", "？", "！", "～", ""]))
    return out


def straightforward(predictions: list[str], references: list[str]) -> dict[str, float]:
    import jieba
    from rouge_score import rouge_scorer
    from sacrebleu.metrics import BLEU

    class JiebaTokenizer:
        def tokenize(self, text: str) -> list[str]:
            return [t for t in (p.strip() for p in jieba.lcut(text)) if t]

    class Pretokenized:  # rouge-score gets the tokens above, space-joined: no text is segmented twice
        def tokenize(self, text: str) -> list[str]:
            return text.split(" ") if text else []

    tok = JiebaTokenizer()
    hyps = [tok.tokenize(p) for p in predictions]
    refs = [tok.tokenize(r) for r in references]
    joined_h, joined_r = [" ".join(h) for h in hyps], [" ".join(r) for r in refs]
    scores = {f"bleu_{n}": BLEU(tokenize="none", max_ngram_order=n).corpus_score(joined_h, [joined_r]).score for n in (1, 2)}
    scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=Pretokenized())
    scores["rouge_l"] = 100 * sum(scorer.score(r, h)["rougeL"].fmeasure for h, r in zip(joined_h, joined_r)) / len(hyps)
    for n in (1, 2):
        ratios = []
        for h in hyps:
            grams = [tuple(h[i : i + n]) for i in range(len(h) - n + 1)]
            ratios.append(len(set(grams)) / len(grams) if grams else 0.0)
        scores[f"distinct_{n}"] = 100 * sum(ratios) / len(ratios)
    scores["avg_len"] = sum(map(len, hyps)) / len(hyps)
    return scores


def _interleaved(fns: dict[str, Callable[[], Any]], repeat: int) -> tuple[dict[str, float], dict[str, Any]]:
    """Median seconds of each function over ``repeat`` rounds (one call of each per round), and results."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    results: dict[str, Any] = {}
    for _ in range(repeat):
        for name, fn in fns.items():
            start = time.perf_counter()
            results[name] = fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}, results


def _row(name: str, mine_s: float, ref_s: float, target: float | None, note: str = "") -> None:
    speedup = ref_s / mine_s
    verdict = "" if target is None else ("OK" if speedup >= target else "MISS")
    goal = "" if target is None else f">={target:.3g}x"
    print(f"{name:<56}{mine_s:>9.3f}s{ref_s:>9.3f}s{speedup:>9.2f}x{goal:>9}{verdict:>6}  {note}")


def _header() -> None:
    print(f"{'measure':<56}{'convbench':>10}{'other':>10}{'speed-up':>10}{'target':>9}{'':>6}")


def compare(pairs: int, repeat: int) -> None:
    """The whole metric against the straightforward pipeline, identical numbers asserted."""
    from convbench_datasets.nico.nico_generation import score_generation
    from convbench_datasets.scoring.segmentation import backend

    predictions, references = _texts(pairs, 1), _texts(pairs, 2)
    score_generation(predictions[:100], references[:100], tokenizer="jieba")  # load the segmenter outside the timing
    seconds, out = _interleaved({
        "reference": lambda: straightforward(predictions, references),
        "ours": lambda: score_generation(predictions, references, tokenizer="jieba"),
    }, repeat)
    reference, ours = out["reference"], out["ours"]
    for key, value in reference.items():
        assert ours[key] == value, (key, ours[key], value)
    print(f"{pairs} pairs; identical numbers: {', '.join(f'{k}={v:.4f}' for k, v in reference.items())}")
    _row(f"nico_generation vs jieba+sacrebleu+rouge-score, {pairs}", seconds["ours"], seconds["reference"], 3,
         f"segmenter: {backend()}")


def compare_rouge_l(pairs: int, repeat: int) -> None:
    """ROUGE-L alone on the same pre-segmented tokens: rouge-score, and rouge-score-rs when installed."""
    import importlib.metadata

    from rouge_score import rouge_scorer
    from timing import interleaved, verdict  # benchmarks/timing.py (this folder is on sys.path when a script runs)

    from convbench_datasets.scoring.lcs import rouge_l_f
    from convbench_datasets.nico.nico_generation import segment

    hyps, refs = segment(_texts(pairs, 1), "jieba"), segment(_texts(pairs, 2), "jieba")
    joined = [(" ".join(h), " ".join(r)) for h, r in zip(hyps, refs)]

    class Pretokenized:  # the very same tokens on every side: only the LCS work is compared
        def tokenize(self, text: str) -> list[str]:
            return text.split(" ")

    scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=Pretokenized())
    fns: dict[str, Callable[[], Any]] = {
        "ours": lambda: [rouge_l_f(h, r) for h, r in zip(hyps, refs)],
        "rouge-score": lambda: [scorer.score(r, h)["rougeL"].fmeasure for h, r in joined],
    }
    try:
        from rouge_score_rs import rouge_scorer as rs_scorer
    except ImportError:
        rs_scorer = None
    else:
        rs = rs_scorer.RougeScorer(["rougeL"], tokenizer=Pretokenized())
        fns["rouge-score-rs"] = lambda: [rs.score(r, h)["rougeL"].fmeasure for h, r in joined]
        native = _rouge_score_rs_native()
        if native is not None:  # its Rust scorer on token lists, without its Python tokenizer glue
            fns["rouge-score-rs native"] = lambda: [
                native.score_documents(r, [], h, [])["rougeL"].fmeasure for h, r in zip(hyps, refs)
            ]
    timings, out = interleaved(fns, repeat)  # CPU and wall; the rows below go by CPU
    for name, scores in out.items():
        assert scores == out["ours"], f"ROUGE-L F-measures differ from {name}"
    ours = timings["ours"]
    _row(f"ROUGE-L per pair vs rouge-score, {pairs}", ours.cpu, timings["rouge-score"].cpu, 10,
         f"same tokens; CPU (wall {timings['rouge-score'].wall / ours.wall:.2f}x)")
    if rs_scorer is None:
        print("rouge-score-rs is not installed: the target of ROUGE-L within 1.2x of its time is not checked "
              "(pip install rouge-score-rs, or the test extra)")
        return
    version = importlib.metadata.version("rouge-score-rs")
    for name in ("rouge-score-rs", "rouge-score-rs native"):
        if name in timings:
            ratio = ours.cpu / timings[name].cpu
            print(f"ROUGE-L per pair vs {name} {version}, {pairs}: {ratio:.2f}x its CPU time (wall "
                  f"{ours.wall / timings[name].wall:.2f}x), same tokens; target <= 1.2x: "
                  f"{verdict(ratio, 1.2, at_most=True)}")
        else:
            print(f"{name} {version}: its Rust scorer's private API is not this version's: not compared")


def _rouge_score_rs_native() -> Any:
    try:
        from rouge_score_rs import _rougers

        return _rougers.Scorer(["rougeL"], False)
    except (ImportError, AttributeError, TypeError):  # a private API: absent from other versions
        return None


def compare_segmentation(pairs: int, repeat: int) -> None:
    """The segmentation backend in use against jieba itself, identical tokens asserted."""
    from convbench_datasets.scoring.segmentation import backend, jieba_cutter

    texts = _texts(pairs, 1) + _texts(pairs, 2)
    name = backend()
    if name == "jieba":
        print("segmentation: jieba itself (rjieba not installed, or CONVBENCH_SEGMENTER=jieba); "
              "pip install 'convbench[fast]' for rjieba")
        return
    jieba_cut, cut = jieba_cutter("jieba"), jieba_cutter(name)
    seconds, out = _interleaved({"jieba": lambda: [jieba_cut(t) for t in texts],
                                 name: lambda: [cut(t) for t in texts]}, repeat)
    assert out[name] == out["jieba"], "segmentation differs from jieba"
    _row(f"segmentation ({name}, corrected) vs jieba, {len(texts)} texts", seconds[name], seconds["jieba"], None,
         "identical tokens")


def compare_workers(pairs: int, repeat: int) -> None:
    """score_generation with 1, 2, 4... workers; the automatic rule's choice beside them."""
    from convbench_datasets.nico.nico_generation import PAIRS_PER_WORKER, score_generation
    from convbench_datasets.scoring.workers import idle_cores, pick_workers, usable_cores

    predictions, references = _texts(pairs, 1), _texts(pairs, 2)
    score_generation(predictions[:100], references[:100], tokenizer="jieba")
    counts = [1] + [w for w in (2, 4, 8, 16, 32) if w <= usable_cores()]
    seconds, out = _interleaved({w: (lambda w=w: score_generation(predictions, references, tokenizer="jieba",
                                                                  workers=w))
                                 for w in counts}, repeat)
    assert all(result == out[1] for result in out.values()), "worker counts disagree"
    picked = pick_workers(pairs, PAIRS_PER_WORKER)
    cells = "  ".join(f"{w}: {s:.3f}s" for w, s in seconds.items())
    print(f"{pairs} pairs, {usable_cores()} usable cores, {idle_cores()} idle: {cells}; the rule picks {picked}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=3, help="median of this many interleaved runs of each")
    parser.add_argument("--workers", action="store_true", help="time worker counts instead")
    args = parser.parse_args()

    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()  # both sides start with jieba's dictionary loaded

    if args.workers:
        for pairs in args.pairs:
            compare_workers(pairs, args.repeat)
        return
    _header()
    for pairs in args.pairs:
        compare(pairs, args.repeat)
    compare_segmentation(min(args.pairs), args.repeat)
    compare_rouge_l(min(args.pairs), max(args.repeat, 5))


if __name__ == "__main__":
    main()
