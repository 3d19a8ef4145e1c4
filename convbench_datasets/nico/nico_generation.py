"""NICO generation metrics: BLEU-1/2, ROUGE-L, Distinct-1/2, average length, optional BERTScore F1.

Each text is segmented once and the tokens are shared by all metrics: by default into characters, the
unit the NICO paper's numbers point to (the NICO card, ``cards/nico/README.md``, gives the evidence);
``tokenizer="jieba"``: words, jieba's precise mode with HMM (``segmentation.jieba_cutter``: rjieba with
jieba's exact tokens when the ``fast`` extra is installed).

- BLEU-n: corpus BLEU over the segmented texts with n-gram order n, brevity penalty included and
  sacrebleu's default "exp" smoothing; the statistics are counted here in one pass for both orders and
  turned into a score by sacrebleu itself, so the numbers equal ``sacrebleu.corpus_bleu(...,
  tokenize="none", max_ngram_order=n)`` on space-joined tokens. BLEU-2 is cumulative (the geometric mean
  of the 1- and 2-gram precisions); ``bleu_ngrams="individual"``: the brevity penalty times the 2-gram
  precision. ``bleu_level="sentence"``: the mean over pairs of sacrebleu's sentence BLEU (its
  ``sentence_score``: "exp" smoothing, effective order);
- ROUGE-L: mean over pairs of the LCS F1, equal to rouge-score's ``rougeL`` with the same tokenizer (its
  default tokenizer deletes Chinese characters: never used here); ``rouge_l_f="p/r"``: the F with
  beta = P/R of the ``rouge`` and ``rouge-chinese`` packages (``scoring.lcs.lcs_f``);
- Distinct-n: per response, distinct n-grams over all n-grams, averaged over responses (a response
  with no n-gram counts 0); ``distinct_level="corpus"`` pools all responses instead;
- avg_len: mean number of tokens per prediction (not a percentage);
- bertscore_f1: bert-score's F1, opt-in (``bertscore=True``; needs the ``bertscore`` extra and a model;
  the layer and a model that cannot be loaded: see ``bertscore``: ``bertscore_error`` then says why and
  ``bertscore_f1`` is None, the other scores are kept; a blank prediction or reference scores
  bert-score's 0 for an empty text, counted in ``bertscore_blank_pairs``).

All scores but avg_len are percentages (0-100). Whitespace-only tokens are dropped, so that tokens
joined by spaces and split again are the same tokens. Texts longer than ``max_chars`` characters
(default ``MAX_TEXT_CHARS``, 20,000) are refused before any work: segmentation and ROUGE-L would
otherwise run for minutes on pathological inputs.

Example:
    >>> out = score_generation(["我 很 好"], ["我 很 好"])
    >>> round(out["bleu_1"], 6), out["rouge_l"], out["distinct_1"], out["avg_len"]
    (100.0, 100.0, 100.0, 3.0)
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from functools import lru_cache
from typing import Any, Literal, NamedTuple

from .._version import __version__
from ..class_labels import names_or_ids
from ..scoring.bertscore import check_available, compute_bertscore
from ..scoring.inputs import MAX_TEXT_CHARS, check_column, check_max_chars, check_text
from ..scoring.lcs import lcs_f, lcs_length
from ..scoring.segmentation import jieba_cutter
from ..scoring.segmentation import signature as segmenter_signature
from ..scoring.workers import pick_workers
from .format import interaction_types as interaction_type_table

Tokenizer = Literal["jieba", "char", "13a"]
TOKENIZERS: tuple[str, ...] = ("jieba", "char", "13a")
DEFAULT_TOKENIZER: Tokenizer = "char"  # the paper's reading, from its numbers (cards/nico/README.md)
# The readings the paper leaves open, each offered both ways (the first is the default; the card says why)
OPTIONS: dict[str, tuple[str, ...]] = {
    "bleu_level": ("corpus", "sentence"),  # summed statistics, or the mean of sentence BLEU
    "bleu_ngrams": ("cumulative", "individual"),  # BLEU-2 from the 1- and 2-gram precisions, or the 2-gram one
    "rouge_l_f": ("f1", "p/r"),  # ROUGE-L's F with beta = 1, or beta = P/R
}
METRIC = "nico_generation"


@lru_cache(maxsize=None)
def _tokenizer(name: str) -> Callable[[str], list[str]]:
    if name == "jieba":
        return jieba_cutter()  # exactly jieba.lcut; from rjieba when the fast extra is installed
    if name == "char":
        return list
    if name == "13a":
        from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

        tokenize_13a = Tokenizer13a()
        return lambda text: tokenize_13a(text).split()
    raise ValueError(f"unknown tokenizer {name!r}; choose one of {TOKENIZERS}")


PARALLEL_MIN_PAIRS = 1000  # below this, never start worker processes, even when asked to
# The automatic choice (workers=None) starts a worker per this many pairs, on idle cores only:
# benchmarks/nico_generation_speed.py --workers measured where a second process starts to pay.
PAIRS_PER_WORKER = 25_000
MAX_ORDER = 2  # BLEU-1 and BLEU-2


class PairStats(NamedTuple):
    """Everything the metrics need from one pair, computed once from one segmentation of each text."""

    hyp: list[str]
    ref_len: int
    correct: tuple[int, ...]  # clipped n-gram matches, n = 1..MAX_ORDER
    total: tuple[int, ...]  # hypothesis n-grams
    lcs: int  # longest common subsequence, for ROUGE-L
    distinct: tuple[float, ...]  # per-response distinct ratio, n = 1, 2


def _cut(tokenizer: str) -> Callable[[str], list[str]]:
    cut = _tokenizer(tokenizer)
    return lambda text: [t for t in (piece.strip() for piece in cut(text)) if t]


def segment(texts: Sequence[str], tokenizer: Tokenizer = DEFAULT_TOKENIZER) -> list[list[str]]:
    """Tokens of each text (whitespace-only tokens dropped); each distinct text is segmented once."""
    cut = _cut(tokenizer)
    memo: dict[str, list[str]] = {}
    return [memo[t] if t in memo else memo.setdefault(t, cut(t)) for t in texts]


def _ngram_counts(tokens: list[str], n: int) -> Counter:
    return Counter(zip(*(tokens[i:] for i in range(n))))


def _clipped_matches(hyp_counts: Counter, ref_counts: Counter) -> int:
    """sum((hyp_counts & ref_counts).values()), without building the intersection Counter (faster)."""
    if len(hyp_counts) > len(ref_counts):
        hyp_counts, ref_counts = ref_counts, hyp_counts  # min() is symmetric: walk the smaller one
    other = ref_counts.get
    matches = 0
    for gram, count in hyp_counts.items():
        ref_count = other(gram)
        if ref_count:
            matches += count if count < ref_count else ref_count
    return matches


def _pair_stats(hyp: list[str], ref: list[str], ref_counts: Sequence[Counter] | None = None) -> PairStats:
    """``ref_counts``: the reference's n-gram Counters (n = 1..MAX_ORDER) when already counted."""
    correct, total, distinct_ratios = [], [], []
    for n in range(1, MAX_ORDER + 1):
        hyp_counts = _ngram_counts(hyp, n)
        correct.append(_clipped_matches(hyp_counts, ref_counts[n - 1] if ref_counts else _ngram_counts(ref, n)))
        grams = max(0, len(hyp) - n + 1)
        total.append(grams)
        distinct_ratios.append(len(hyp_counts) / grams if grams else 0.0)
    return PairStats(hyp, len(ref), tuple(correct), tuple(total), lcs_length(hyp, ref), tuple(distinct_ratios))


def _chunk_stats(args: tuple[str, list[tuple[str, str]]]) -> list[PairStats]:
    tokenizer, pairs = args
    # One memo for both sides: a text repeated anywhere in the chunk (a reference shared by several
    # predictions, a prediction equal to its reference) is segmented once.
    tokens = segment([p for p, _ in pairs] + [r for _, r in pairs], tokenizer)  # type: ignore[arg-type]
    hyps, refs = tokens[: len(pairs)], tokens[len(pairs) :]
    # A repeated reference has its n-grams counted once too (only repeated ones are kept: memory).
    repeated: dict[str, list[Counter] | None] = {
        text: None for text, times in Counter(r for _, r in pairs).items() if times > 1
    }
    stats = []
    for (_, ref_text), hyp, ref in zip(pairs, hyps, refs):
        counts = None
        if ref_text in repeated:
            counts = repeated[ref_text]
            if counts is None:
                counts = repeated[ref_text] = [_ngram_counts(ref, n) for n in range(1, MAX_ORDER + 1)]
        stats.append(_pair_stats(hyp, ref, counts))
    return stats


def pair_statistics(
    predictions: Sequence[str], references: Sequence[str], tokenizer: Tokenizer = DEFAULT_TOKENIZER,
    workers: int | None = None,
) -> list[PairStats]:
    """Per-pair statistics, in this process or split across forked worker processes (which inherit
    the loaded segmenter). ``workers=None`` picks the count from the input size and the idle cores
    (``pick_workers``: one worker per PAIRS_PER_WORKER pairs, at most one per idle core); 1 disables.
    The result is the same either way."""
    pairs = list(zip(predictions, references))
    workers = workers if workers is not None else pick_workers(len(pairs), PAIRS_PER_WORKER)
    if workers > 1 and len(pairs) >= PARALLEL_MIN_PAIRS and _can_fork():
        _tokenizer(tokenizer)  # load the dictionary once, before forking
        size = -(-len(pairs) // workers)
        chunks = [(tokenizer, i, min(i + size, len(pairs))) for i in range(0, len(pairs), size)]
        # The pairs reach the workers through fork (initargs are inherited, not pickled).
        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"),
                                 initializer=_inherit_pairs, initargs=(pairs,)) as pool:
            return [_unpack(row) for chunk in pool.map(_packed_chunk, chunks) for row in chunk]
    return _chunk_stats((tokenizer, pairs))


_worker_pairs: list[tuple[str, str]] = []  # in a worker process: the pairs of the call that forked it


def _inherit_pairs(pairs: list[tuple[str, str]]) -> None:
    global _worker_pairs
    _worker_pairs = pairs


def _packed_chunk(args: tuple[str, int, int]) -> list[tuple[Any, ...]]:
    """In a worker: the stats of pairs[start:end] as flat tuples (space-joined tokens and numbers),
    which pickle back about 50x faster than PairStats objects holding token lists. Tokens never hold a
    space (``_cut`` strips them and tokenizers split at whitespace), so the join is undone exactly."""
    tokenizer, start, end = args
    return [(" ".join(s.hyp), s.ref_len, *s.correct, *s.total, s.lcs, *s.distinct)
            for s in _chunk_stats((tokenizer, _worker_pairs[start:end]))]


def _unpack(row: tuple[Any, ...]) -> PairStats:
    k = MAX_ORDER
    hyp = row[0].split(" ") if row[0] else []
    return PairStats(hyp, row[1], row[2 : 2 + k], row[2 + k : 2 + 2 * k], row[2 + 2 * k], row[3 + 2 * k :])


def _can_fork() -> bool:
    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


def _ngrams(tokens: Sequence[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def bleu_from_stats(stats: Sequence[PairStats], level: str = "corpus", ngrams: str = "cumulative") -> list[float]:
    """BLEU-1 .. BLEU-MAX_ORDER (sacrebleu's formula and smoothing): of the summed statistics (``corpus``), or
    the mean over pairs of each pair's sentence BLEU (``sentence``, with sacrebleu's effective order)."""
    if level == "sentence":
        per_pair = [bleu_from_sums(s.correct, s.total, len(s.hyp), s.ref_len, ngrams, effective_order=True)
                    for s in stats]
        return [sum(scores) / len(per_pair) for scores in zip(*per_pair)]
    correct = [sum(s.correct[i] for s in stats) for i in range(MAX_ORDER)]
    total = [sum(s.total[i] for s in stats) for i in range(MAX_ORDER)]
    return bleu_from_sums(correct, total, sum(len(s.hyp) for s in stats), sum(s.ref_len for s in stats), ngrams)


def bleu_from_sums(correct: Sequence[int], total: Sequence[int], sys_len: int, ref_len: int,
                   ngrams: str = "cumulative", effective_order: bool = False) -> list[float]:
    """BLEU-1 .. BLEU-MAX_ORDER from summed matches and n-gram counts (per order), hypothesis and reference
    lengths: sacrebleu's own formula, brevity penalty and "exp" smoothing. ``cumulative``: BLEU-n is the
    geometric mean of the 1- to n-gram precisions; ``individual``: the n-gram precision alone, times the
    brevity penalty (BLEU-1 is the same either way)."""
    from sacrebleu.metrics import BLEU

    scores = []
    for n in range(1, MAX_ORDER + 1):
        bleu = BLEU.compute_bleu(list(correct[:n]), list(total[:n]), sys_len, ref_len, smooth_method="exp",
                                 effective_order=effective_order, max_ngram_order=n)
        scores.append(bleu.score if ngrams == "cumulative" or n == 1 else bleu.bp * bleu.precisions[n - 1])
    return scores


def distinct(responses: Sequence[Sequence[str]], n: int, level: str = "response") -> float:
    """Distinct-n in percent: per response then averaged, or pooled over the corpus."""
    if level == "corpus":
        grams = [g for tokens in responses for g in _ngrams(tokens, n)]
        return 100.0 * len(set(grams)) / len(grams) if grams else 0.0
    if level != "response":
        raise ValueError(f"distinct_level must be 'response' or 'corpus', got {level!r}")
    ratios = []
    for tokens in responses:
        grams = _ngrams(tokens, n)
        ratios.append(len(set(grams)) / len(grams) if grams else 0.0)
    return 100.0 * sum(ratios) / len(ratios) if ratios else 0.0


def score_generation(
    predictions: Sequence[str],
    references: Sequence[str],
    *,
    tokenizer: Tokenizer = DEFAULT_TOKENIZER,
    distinct_level: Literal["response", "corpus"] = "response",
    bleu_level: Literal["corpus", "sentence"] = "corpus",
    bleu_ngrams: Literal["cumulative", "individual"] = "cumulative",
    rouge_l_f: Literal["f1", "p/r"] = "f1",
    interaction_types: Sequence[str] | None = None,
    bertscore: bool = False,
    bertscore_model: str = "bert-base-chinese",
    bertscore_options: dict[str, Any] | None = None,
    workers: int | None = None,
    max_chars: int | None = MAX_TEXT_CHARS,
) -> dict[str, Any]:
    """Score generated turns against reference turns (one reference each).

    Args:
        predictions, references: texts, pairwise.
        tokenizer: ``char`` (default: characters, the paper's unit by its numbers), ``jieba`` (words), ``13a``
            (English).
        distinct_level: ``response`` (average of per-response ratios, the paper's) or ``corpus``.
        bleu_level: ``corpus`` (default: summed statistics) or ``sentence`` (mean of sentence BLEU).
        bleu_ngrams: BLEU-2 ``cumulative`` (default, the paper's by its numbers) or ``individual``.
        rouge_l_f: ROUGE-L's F, ``f1`` (default, the paper's by its numbers) or ``p/r`` (beta = P/R).
        interaction_types: the pair's interaction type, for ``per_interaction_type`` tables; a class id
            (what the ``interaction_type`` column of a loaded dataset holds) counts as its English name.
        bertscore: add ``bertscore_f1`` (bert-score with ``bertscore_model``; any local folder works; the
            layer is inferred when ``num_layers`` is not given; a failure gives ``bertscore_error``).
        bertscore_options: passed to ``bert_score.score`` (``num_layers``, ``batch_size``, ``device``...).
        workers: processes for segmentation and statistics (default: from the input size and idle cores; 1: none).
        max_chars: refuse a text longer than this many characters (None: no limit).
    """
    # a loaded dataset's column holds class ids (see ..class_labels): read them as the English names
    interaction_types = names_or_ids(interaction_types, tuple(interaction_type_table()))
    _check(predictions, references, interaction_types, max_chars)
    if distinct_level not in ("response", "corpus"):
        raise ValueError(f"distinct_level must be 'response' or 'corpus', got {distinct_level!r}")
    options = {"bleu_level": bleu_level, "bleu_ngrams": bleu_ngrams, "rouge_l_f": rouge_l_f}
    for name, value in options.items():
        if value not in OPTIONS[name]:
            raise ValueError(f"{name} must be one of {', '.join(OPTIONS[name])}, got {value!r}")
    _tokenizer(tokenizer)  # an unknown name fails here, before any work
    if bertscore:
        check_available(bertscore_options)  # a missing extra fails before any work too
    stats = pair_statistics(predictions, references, tokenizer, workers)
    result = _scores(stats, distinct_level, **options)
    result["n"] = len(predictions)
    # A model that cannot be loaded (offline) is reported in bertscore_error, with bertscore_f1 None,
    # instead of raising and losing the scores above
    bert = compute_bertscore(predictions, references, bertscore_model, bertscore_options) if bertscore else {}
    result.update({k: v for k, v in bert.items() if k != "signature"})
    if interaction_types is not None:
        groups: dict[str, list[int]] = {}
        for i, kind in enumerate(interaction_types):
            groups.setdefault(kind, []).append(i)
        result["per_interaction_type"] = {
            kind: {**_scores([stats[i] for i in rows], distinct_level, **options), "n": len(rows)}
            for kind, rows in groups.items()
        }
    result["signature"] = {
        "metric": METRIC,
        "convbench_version": __version__,
        "tokenizer": tokenizer,
        # which backend segmented (rjieba or jieba) and its version, and the jieba release whose tokens it gives
        **(segmenter_signature() if tokenizer == "jieba" else {}),
        "bleu": "sacrebleu formula, exp smoothing",
        **options,
        "distinct_level": distinct_level,
        **bert.get("signature", {}),
    }
    return result


def _scores(stats: Sequence[PairStats], distinct_level: str, bleu_level: str = "corpus",
            bleu_ngrams: str = "cumulative", rouge_l_f: str = "f1") -> dict[str, float]:
    n = len(stats)
    bleu_1, bleu_2 = bleu_from_stats(stats, bleu_level, bleu_ngrams)
    if distinct_level == "corpus":
        distinct_1, distinct_2 = (distinct([s.hyp for s in stats], k, "corpus") for k in (1, 2))
    else:
        distinct_1, distinct_2 = (100.0 * sum(s.distinct[k] for s in stats) / n for k in (0, 1))
    return {
        "bleu_1": bleu_1,
        "bleu_2": bleu_2,
        "rouge_l": 100.0 * sum(lcs_f(s.lcs, len(s.hyp), s.ref_len, rouge_l_f) for s in stats) / n,
        "distinct_1": distinct_1,
        "distinct_2": distinct_2,
        "avg_len": sum(len(s.hyp) for s in stats) / n,
    }


def _check(predictions: Sequence[Any], references: Sequence[Any], interaction_types: Sequence[Any] | None,
           max_chars: int | None) -> None:
    n = check_column("predictions", predictions)
    if not n:
        raise ValueError("no predictions to score")
    if check_column("references", references) != n:
        raise ValueError(f"got {n} predictions but {len(references)} references")
    if interaction_types is not None and check_column("interaction_types", interaction_types) != n:
        raise ValueError(f"got {n} predictions but {len(interaction_types)} interaction_types")
    check_max_chars(max_chars)
    for i, (prediction, reference) in enumerate(zip(predictions, references)):
        check_text(i, "predictions", prediction, max_chars=max_chars)
        check_text(i, "references", reference, max_chars=max_chars)
        if interaction_types is not None:
            check_text(i, "interaction_types", interaction_types[i], max_chars=None)
