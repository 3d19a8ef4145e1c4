"""NICO generation metrics: BLEU-1/2, ROUGE-L, Distinct-1/2, average length, optional BERTScore F1.

Each text is segmented once (jieba's precise mode with HMM, the same segmentation for every metric)
and the tokens are shared by all metrics:

- BLEU-n: corpus BLEU over the segmented texts with n-gram order n, brevity penalty included and
  sacrebleu's default "exp" smoothing; the statistics are counted here in one pass for both orders and
  turned into a score by sacrebleu itself, so the numbers equal ``sacrebleu.corpus_bleu(...,
  tokenize="none", max_ngram_order=n)`` on space-joined tokens;
- ROUGE-L: mean over pairs of the LCS F-measure, equal to rouge-score's ``rougeL`` with the same
  tokenizer (its default tokenizer deletes Chinese characters: never used here);
- Distinct-n: per response, distinct n-grams over all n-grams, averaged over responses (a response
  with no n-gram counts 0); ``distinct_level="corpus"`` pools all responses instead;
- avg_len: mean number of tokens per prediction (not a percentage);
- bertscore_f1: bert-score's F1, opt-in (``bertscore=True``; needs the ``bertscore`` extra and a model).

All scores but avg_len are percentages (0-100). Whitespace-only tokens are dropped, so that tokens
joined by spaces and split again are the same tokens.

Example:
    >>> out = score_generation(["我 很 好"], ["我 很 好"], tokenizer="char")
    >>> round(out["bleu_1"], 6), out["rouge_l"], out["distinct_1"], out["avg_len"]
    (100.0, 100.0, 100.0, 3.0)
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, Literal

from .._version import __version__
from .lcs import rouge_l_f

Tokenizer = Literal["jieba", "char", "13a"]
TOKENIZERS: tuple[str, ...] = ("jieba", "char", "13a")
METRIC = "nico_generation"


@lru_cache(maxsize=None)
def _tokenizer(name: str) -> Callable[[str], list[str]]:
    if name == "jieba":
        import jieba

        jieba.setLogLevel(logging.WARNING)  # it announces its dictionary on stderr otherwise
        jieba.initialize()
        return jieba.lcut
    if name == "char":
        return list
    if name == "13a":
        from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

        tokenize_13a = Tokenizer13a()
        return lambda text: tokenize_13a(text).split()
    raise ValueError(f"unknown tokenizer {name!r}; choose one of {TOKENIZERS}")


def segment(texts: Sequence[str], tokenizer: Tokenizer = "jieba") -> list[list[str]]:
    """Tokens of each text; each distinct text is segmented once."""
    cut = _tokenizer(tokenizer)
    memo: dict[str, list[str]] = {}
    out = []
    for text in texts:
        tokens = memo.get(text)
        if tokens is None:
            tokens = memo[text] = [t for t in (piece.strip() for piece in cut(text)) if t]
        out.append(tokens)
    return out


def _ngrams(tokens: Sequence[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def bleu_scores(hyps: Sequence[Sequence[str]], refs: Sequence[Sequence[str]], max_order: int = 2) -> list[float]:
    """Corpus BLEU-1 .. BLEU-max_order of tokenized texts (sacrebleu's formula and smoothing)."""
    from sacrebleu.metrics import BLEU

    correct, total = [0] * max_order, [0] * max_order
    sys_len = ref_len = 0
    for hyp, ref in zip(hyps, refs):
        sys_len += len(hyp)
        ref_len += len(ref)
        for n in range(1, max_order + 1):
            hyp_counts, ref_counts = Counter(_ngrams(hyp, n)), Counter(_ngrams(ref, n))
            correct[n - 1] += sum(min(c, ref_counts[g]) for g, c in hyp_counts.items())
            total[n - 1] += max(0, len(hyp) - n + 1)
    return [
        BLEU.compute_bleu(correct[:n], total[:n], sys_len, ref_len, smooth_method="exp", max_ngram_order=n).score
        for n in range(1, max_order + 1)
    ]


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
    tokenizer: Tokenizer = "jieba",
    distinct_level: Literal["response", "corpus"] = "response",
    interaction_types: Sequence[str] | None = None,
    bertscore: bool = False,
    bertscore_model: str = "bert-base-chinese",
    bertscore_options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Score generated turns against reference turns (one reference each).

    Args:
        predictions, references: texts, pairwise.
        tokenizer: ``jieba`` (default, for Chinese), ``char`` (characters), ``13a`` (English).
        distinct_level: ``response`` (average of per-response ratios, the paper's) or ``corpus``.
        interaction_types: the pair's interaction type, for ``per_interaction_type`` tables.
        bertscore: add ``bertscore_f1`` (bert-score with ``bertscore_model``; any local folder works).
        bertscore_options: passed to ``bert_score.score`` (``num_layers``, ``batch_size``, ``device``...).
    """
    _check(predictions, references, interaction_types)
    hyps, refs = segment(predictions, tokenizer), segment(references, tokenizer)
    result = _scores(hyps, refs, distinct_level)
    result["n"] = len(predictions)
    if bertscore:
        result["bertscore_f1"] = bertscore_f1(predictions, references, bertscore_model, bertscore_options)
    if interaction_types is not None:
        groups: dict[str, list[int]] = {}
        for i, kind in enumerate(interaction_types):
            groups.setdefault(kind, []).append(i)
        result["per_interaction_type"] = {
            kind: {**_scores([hyps[i] for i in rows], [refs[i] for i in rows], distinct_level), "n": len(rows)}
            for kind, rows in groups.items()
        }
    result["signature"] = {
        "metric": METRIC,
        "convbench_version": __version__,
        "tokenizer": tokenizer,
        "bleu": "corpus, sacrebleu formula, exp smoothing",
        "distinct_level": distinct_level,
        **({"bertscore_model": bertscore_model} if bertscore else {}),
    }
    return result


def _scores(hyps: list[list[str]], refs: list[list[str]], distinct_level: str) -> dict[str, float]:
    bleu_1, bleu_2 = bleu_scores(hyps, refs, 2)
    return {
        "bleu_1": bleu_1,
        "bleu_2": bleu_2,
        "rouge_l": 100.0 * sum(rouge_l_f(h, r) for h, r in zip(hyps, refs)) / len(hyps),
        "distinct_1": distinct(hyps, 1, distinct_level),
        "distinct_2": distinct(hyps, 2, distinct_level),
        "avg_len": sum(len(h) for h in hyps) / len(hyps),
    }


def _check(predictions: Sequence[Any], references: Sequence[Any], interaction_types: Sequence[Any] | None) -> None:
    if not predictions:
        raise ValueError("no predictions to score")
    if len(predictions) != len(references):
        raise ValueError(f"got {len(predictions)} predictions but {len(references)} references")
    if interaction_types is not None and len(interaction_types) != len(predictions):
        raise ValueError(f"got {len(predictions)} predictions but {len(interaction_types)} interaction_types")
    for i, (prediction, reference) in enumerate(zip(predictions, references)):
        for field, value in (("predictions", prediction), ("references", reference)):
            if not isinstance(value, str):
                raise TypeError(f"row {i}: field {field!r} must be a string, got {type(value).__name__}")


def bertscore_f1(
    predictions: Sequence[str], references: Sequence[str], model: str, options: dict[str, Any] | None = None
) -> float:
    """Mean BERTScore F1 in percent (bert-score sorts by length into batches itself)."""
    try:
        import bert_score
    except ImportError as err:
        raise ImportError(
            f"BERTScore needs the bertscore extra: pip install 'convbench[bertscore]' ({err})"
        ) from None
    kwargs = {"lang": "zh", "verbose": False, **(options or {})}
    _, _, f1 = bert_score.score(list(predictions), list(references), model_type=model, **kwargs)
    return 100.0 * float(f1.mean())
