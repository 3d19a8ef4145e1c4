"""NICO's lm-eval tasks: the dataset, the per-sample results and the corpus metrics, all convbench's.

``convbench_nico_*.yaml`` (through ``_nico_*_yaml`` and ``utils.py`` here) name these functions:

- ``custom_dataset: nico_dataset``: the examples of a convbench build (``convbench_dataset``; default
  the bundled sample build) for one split (``convbench_split``, default ``test``), each with its
  prompt as convbench renders it (``render_prompt``, with ``pick_shots``' demonstrations for the
  ``_3shot`` tasks) in ``convbench_prompt``: lm-eval sends exactly convbench's prompt, as the one
  user turn with ``--apply_chat_template``, or as plain text without it.
- ``process_results``: one item per sample, passed through to the aggregations (lm-eval's corpus
  hook): the answer, the turn convbench scores (``clean_turn``; an answer over the metrics' length cap
  is the sample's error and scores as an empty turn, as in ``convbench run nico``), its reference; for
  identify_unnatural the answer, the gold sentences and the dialogue's turns (an answer is read knowing
  the dialogue, as ``convbench run nico`` reads it: a line quoting one of its sentences is a prediction),
  an answer over the per-answer limits being the sample's error (P = R = 0).
- ``aggregation``: convbench's ``score_generation`` over all the samples' turns (corpus BLEU-1/2,
  ROUGE-L, Distinct-1/2, average length, percentages) or ``score_identify``'s macro P/R/F1; the
  scores of one sample list are computed once and shared by the task's metrics.
- standard errors: lm-eval bootstraps only its own aggregations and reports N/A for a custom one, so
  each metric has a companion metric ``<metric>_stderr`` whose aggregation is convbench's bootstrap
  (``nico.stderr``: 1,000 resamples of the samples, seed 0, each scored as the metric
  scores them all; lm-eval's ``--bootstrap_iters`` does not change it). lm-eval stores a metric's
  standard error under ``<metric>_stderr``, N/A for these, and then the companion's value under the
  same key: ``process_results`` lists the companions after all the metrics, so the value is written
  last, and lm-eval's table shows it beside its metric (``±``).

BERTScore is not offered here (it needs a model folder per run: use ``convbench run nico --bertscore``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from ...errors import ConvbenchError
from ..prompts import pick_shots, render_prompt
from ..tasks import TASKS
from ..run import SHOTS, clean_turn, dialogue_turns, score_identify, too_long_error
from ..run import read_rows as _rows
from ..stderr import N_BOOTSTRAP, SEED, generation_stderr, identify_stderr
from ..nico_generation import DEFAULT_TOKENIZER, TOKENIZERS, pair_statistics, score_generation
from ...integrations.lm_eval._options import PROMPT_FIELD, task_options

GENERATION_KEYS = ("bleu_1", "bleu_2", "rouge_l", "distinct_1", "distinct_2", "avg_len")
IDENTIFY_KEYS = ("precision", "recall", "f1", "precision_containing", "recall_containing", "f1_containing")
STDERR = "_stderr"  # a companion metric's suffix: lm-eval's name for a metric's standard error
TOKENIZER_FIELD = "convbench_tokenizer"


def nico_dataset(*, nico_task: str, nico_shots: int = 0, **metadata: Any) -> Any:
    """lm-eval's ``custom_dataset``: ``{"test": the examples}`` of the chosen build and split, with prompts.

    ``nico_task`` and ``nico_shots`` come from the task config (``dataset_kwargs``); ``metadata`` is
    lm-eval's (``--metadata``), read by :func:`convbench_datasets.integrations.lm_eval._options.task_options`.
    """
    import datasets

    if nico_task not in TASKS:
        raise ConvbenchError(f"unknown NICO task {nico_task!r}; choose one of {', '.join(TASKS)}")
    if nico_shots not in SHOTS:
        raise ConvbenchError(f"shots must be 0 or 3, got {nico_shots}")
    generation = nico_task != "identify_unnatural"
    options = task_options(metadata, ["dataset", "split", *(["tokenizer"] if generation else [])],
                           f"convbench NICO {nico_task}")
    tokenizer = options.get("tokenizer", DEFAULT_TOKENIZER)
    if tokenizer not in TOKENIZERS:
        raise ConvbenchError(f"convbench_tokenizer must be one of {', '.join(TOKENIZERS)}, got {tokenizer!r}")
    rows, train = _rows(nico_task, options.get("split", "test"), options.get("dataset"), nico_shots)
    for row in rows:
        row[PROMPT_FIELD] = render_prompt(nico_task, row, pick_shots(row["id"], train, nico_shots) if nico_shots else ())
        if generation:
            row[TOKENIZER_FIELD] = tokenizer
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)})


def identify_target(doc: Mapping[str, Any]) -> str:
    """What lm-eval logs as an identification sample's target: the gold unnatural sentences, one a line."""
    return "\n".join(doc["unnatural_sentences"])


def generation_results(doc: Mapping[str, Any], results: Sequence[str]) -> dict[str, dict[str, Any]]:
    """lm-eval's ``process_results`` for the generation tasks: the same item under each metric."""
    response = results[0]
    cleaned = clean_turn(response)
    error = too_long_error(cleaned)
    item = {"response": response, "turn": "" if error else cleaned, "reference": doc["reference"],
            "error": error, "tokenizer": doc[TOKENIZER_FIELD]}
    return _with_companions(item, GENERATION_KEYS)


def _with_companions(item: dict[str, Any], keys: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The item under each metric, then under each ``<metric>_stderr`` companion (after all the metrics:
    see the module docstring)."""
    return {**{key: item for key in keys}, **{key + STDERR: item for key in keys}}


def identify_results(doc: Mapping[str, Any], results: Sequence[str]) -> dict[str, dict[str, Any]]:
    """lm-eval's ``process_results`` for identify_unnatural: the answer, the gold sentences, the dialogue's
    turns and the sentences the answer names (read knowing the dialogue, as convbench's runner reads it)."""
    response = results[0]
    gold = list(doc["unnatural_sentences"])
    dialogue = dialogue_turns(doc)  # type: ignore[arg-type]
    error = too_long_error(response, "identify_unnatural")
    _, rows = score_identify([response], [gold], [error is not None], [dialogue])
    item = {"response": response, "gold": gold, "dialogue": dialogue, "predicted": rows[0]["predicted"],
            "error": error}
    return _with_companions(item, IDENTIFY_KEYS)


def generation_scores(items: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``score_generation`` over the items' turns and references, with the tokenizer they record, and
    each metric's bootstrap ``<metric>_stderr``."""
    tokenizers = {item["tokenizer"] for item in items}
    if len(tokenizers) != 1:
        raise ConvbenchError(f"the samples mix tokenizers {sorted(tokenizers)}: score one at a time")
    return _generation(tuple((item["turn"], item["reference"]) for item in items), tokenizers.pop())


@lru_cache(maxsize=8)  # the task's metrics and their companions aggregate the same items: score them once
def _generation(pairs: tuple[tuple[str, str], ...], tokenizer: str) -> dict[str, Any]:
    turns, references = [turn for turn, _ in pairs], [reference for _, reference in pairs]
    scores = score_generation(turns, references, tokenizer=tokenizer)  # type: ignore[arg-type]
    stats = pair_statistics(turns, references, tokenizer)  # type: ignore[arg-type]
    return {**scores, **generation_stderr(stats, N_BOOTSTRAP, SEED)}


def identify_scores(items: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``score_identify`` over the items: macro P/R/F1 (percent), a failed sample scoring P = R = 0, each
    answer read knowing its dialogue; and each one's bootstrap ``<metric>_stderr``."""
    return _identify(tuple((item["response"], tuple(item["gold"]), item["error"] is not None,
                            tuple(item["dialogue"])) for item in items))


@lru_cache(maxsize=8)
def _identify(items: tuple[tuple[str, tuple[str, ...], bool, tuple[str, ...]], ...]) -> dict[str, Any]:
    results, rows = score_identify([response for response, _, _, _ in items], [list(gold) for _, gold, _, _ in items],
                                   [failed for _, _, failed, _ in items], [list(turns) for _, _, _, turns in items])
    return {**results, **identify_stderr(rows, N_BOOTSTRAP, SEED)}


def _aggregation(key: str, scores: Callable[[Sequence[Mapping[str, Any]]], Mapping[str, Any]]) -> Callable[..., Any]:
    def aggregate(items: Sequence[Mapping[str, Any]]) -> Any:
        value = scores(items)[key]
        # an undefined standard error as lm-eval writes one (its table formats any other value as a number)
        return "N/A" if value is None and key.endswith(STDERR) else value

    aggregate.__name__ = aggregate.__qualname__ = key
    aggregate.__doc__ = (f"convbench's {key} over all the samples (lm-eval's aggregation of the {key} metric)."
                         if not key.endswith(STDERR) else
                         f"the bootstrap standard error of convbench's {key[: -len(STDERR)]} over all the samples.")
    return aggregate


bleu_1, bleu_2, rouge_l, distinct_1, distinct_2, avg_len = (_aggregation(k, generation_scores) for k in GENERATION_KEYS)
precision, recall, f1, precision_containing, recall_containing, f1_containing = (
    _aggregation(k, identify_scores) for k in IDENTIFY_KEYS)
bleu_1_stderr, bleu_2_stderr, rouge_l_stderr, distinct_1_stderr, distinct_2_stderr, avg_len_stderr = (
    _aggregation(k + STDERR, generation_scores) for k in GENERATION_KEYS)
(precision_stderr, recall_stderr, f1_stderr, precision_containing_stderr, recall_containing_stderr,
 f1_containing_stderr) = (_aggregation(k + STDERR, identify_scores) for k in IDENTIFY_KEYS)
