"""NICO as an inspect_ai task: ``inspect eval convbench/nico -T task=open_domain --model M``.

One task, four NICO tasks (``-T task=``): the generation tasks (``open_domain``, ``dialog_completion``,
``rewrite_unnatural``) and ``identify_unnatural``. Prompts are convbench's (``render_prompt``, zero-
or 3-shot with ``pick_shots``); the model answers greedily. Scoring is convbench's, over the whole
epoch: BLEU-1/2 are corpus BLEU and Distinct-n, ROUGE-L, length (and BERTScore F1 with
``bertscore_model``) are ``score_generation`` over all the epoch's turns, P/R/F1 of identification
``score_identify``'s macro averages; never means of per-sample values computed by inspect. Beside each
metric its standard error ``<metric>_stderr``: a bootstrap over the epoch's samples (1,000 resamples,
seed 0; ``nico.stderr``), each resample scored as the metric scores the epoch (corpus BLEU
from the resample's summed statistics; F1 from its averaged P and R). A sample's own score value
(ROUGE-L and length of its turn, or its precision and recall) is for reading only.

As in ``convbench run nico``: a generated turn loses a leading speaker label and wrapping quotes
(``clean_turn``) before scoring; identification answers are read knowing the dialogue (a line quoting
one of its sentences is a prediction, even one that sounds like "none"). A reply that is no answer
(``output_error``: no output at all, as when an inspect limit stopped the sample; withheld by a content
filter; empty and cut at the token limit) and an answer over the metrics' length cap (for identification
also over the per-answer line limits) is that sample's error, scored as an empty turn (generation) or
P = R = 0 (identification) and counted in the metrics' ``errors`` (``n``: the samples scored; a sample
inspect itself could not finish, kept with ``--no-fail-on-error``, has no score and is not among them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.log import EvalSample
from inspect_ai.model import ChatMessageUser
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import TaskState, generate

from .prompts import pick_shots, render_prompt, templates_sha256
from .tasks import TASKS
from .run import SHOTS, clean_turn, dialogue_turns, score_identify, too_long_error
from .run import BENCHMARK as _BENCHMARK, read_rows as _rows
from ..scoring.bertscore import check_available, compute_bertscore
from .stderr import N_BOOTSTRAP, SEED, generation_stderr, identify_stderr
from .nico_generation import DEFAULT_TOKENIZER, TOKENIZERS, pair_statistics, score_generation
from ..engine.backends.openai_compat import reply_error
from ..integrations.inspect.log_samples import convbench_score, failure, output_text, stopped
from ..integrations.inspect._common import (
    finish_reason,
    greedy,
    mean_over_epochs,
    output_error,
    prerequisites,
    sampled,
    task_dataset,
    task_metadata,
)

BENCHMARK = "nico"
STRATA = _BENCHMARK.strata  # what -T sample spreads over, as convbench run --sample
GENERATION_KEYS = ("bleu_1", "bleu_2", "rouge_l", "distinct_1", "distinct_2", "avg_len", "bertscore_f1")
IDENTIFY_KEYS = ("precision", "recall", "f1", "precision_containing", "recall_containing", "f1_containing")


def nico_sample(task_name: str, row: Mapping[str, Any], train: Sequence[Mapping[str, Any]], shots: int) -> Sample:
    """One NICO example as a sample: convbench's prompt (with demonstrations from ``train`` when
    ``shots``) as the user turn, the example itself as metadata."""
    prompt = render_prompt(task_name, row, pick_shots(row["id"], train, shots) if shots else ())
    return Sample(id=row["id"], input=[ChatMessageUser(content=prompt)], metadata=dict(row))


@task
def nico(
    task: str = "open_domain",
    shots: int = 0,
    split: str = "test",
    dataset: str | None = None,
    max_tokens: int = 256,
    tokenizer: str = DEFAULT_TOKENIZER,
    bertscore_model: str | None = None,
    bertscore_layer: int | None = None,
    sample: int | None = None,
    sample_seed: int = 0,
) -> Task:
    """NICO: natural Chinese dialogue turns (BLEU, ROUGE-L, Distinct, length) or finding unnatural sentences (P/R/F1).

    Args:
        task: ``open_domain``, ``dialog_completion``, ``rewrite_unnatural`` or ``identify_unnatural``.
        shots: 0 or 3 demonstrations from the train split.
        split: the split to evaluate (``test``).
        dataset: a folder ``convbench build nico`` wrote (default: the bundled 20-dialogue sample, to try the
            path: its test split is 1 dialogue).
        max_tokens: the model's token limit (greedy decoding).
        tokenizer: the generation metrics' segmentation, ``char`` (default), ``jieba`` or ``13a``.
        bertscore_model: add BERTScore F1 with this model (a name or a local folder; the ``bertscore`` extra).
        bertscore_layer: the BERTScore layer (default: bert-score's for known models).
        sample, sample_seed: N rows drawn with the seed across interaction types (``-T sample=40``), as
            ``convbench run --sample``.
    """
    if task not in TASKS:
        raise ValueError(f"unknown NICO task {task!r}; choose one of {', '.join(TASKS)}")
    if shots not in SHOTS:
        raise ValueError(f"shots must be 0 or 3, got {shots}")
    if tokenizer not in TOKENIZERS:
        raise ValueError(f"tokenizer must be one of {', '.join(TOKENIZERS)}, got {tokenizer!r}")
    if bertscore_layer is not None and (bertscore_model is None or bertscore_layer < 0):
        raise ValueError("a BERTScore layer needs bertscore_model and must be 0 or more")
    with prerequisites("nico"):
        rows, train = _rows(task, split, task_dataset("nico", dataset), shots)
        rows, drawn = sampled(rows, sample, sample_seed, STRATA)
    identify = task == "identify_unnatural"
    samples = [nico_sample(task, row, train, shots) for row in rows]
    return Task(
        dataset=MemoryDataset(samples, name=f"convbench/nico/{task}"),
        solver=generate(),
        scorer=nico_identify() if identify else nico_turn(tokenizer=tokenizer, bertscore_model=bertscore_model,
                                                           bertscore_layer=bertscore_layer),
        config=greedy(max_tokens),
        metadata=task_metadata(BENCHMARK, rows, [str(s.id) for s in samples], task=task, split=split, shots=shots,
                               prompt_templates_sha256=templates_sha256(), **drawn,
                               **({} if identify else {"tokenizer": tokenizer, "bertscore_model": bertscore_model,
                                                       "bertscore_layer": bertscore_layer})),
    )


@metric(scores="unreduced")
def nico_generation() -> Metric:
    """convbench's ``score_generation`` over each epoch's turns (corpus BLEU-1/2; ROUGE-L, Distinct-1/2,
    average length and optional BERTScore F1 as convbench computes them), each with its bootstrap
    ``<key>_stderr``, and the counts ``n`` (samples scored) and ``errors``, averaged over epochs.
    Tokenizer and BERTScore model are the ones the scorer recorded in each score."""

    def compute(scores: list[SampleScore]) -> dict[str, float | None]:
        return mean_over_epochs(scores, _generation_scores)

    return compute  # type: ignore[return-value]


def _generation_scores(scores: list[SampleScore]) -> dict[str, float | None]:
    scored = [s.score.metadata or {} for s in scores]
    options = scored[0]["options"]
    turns, references = [m["turn"] for m in scored], [m["reference"] for m in scored]
    result = score_generation(turns, references, tokenizer=options["tokenizer"])
    pair_f1 = None
    if options["bertscore_model"] is not None:  # as score_generation's bertscore=True, with each pair's F1 kept
        bertscore_options = _bertscore_options(options["bertscore_layer"])
        check_available(bertscore_options)
        bert = compute_bertscore(turns, references, options["bertscore_model"], bertscore_options, pairs=True)
        result["bertscore_f1"], pair_f1 = bert["bertscore_f1"], bert.get("bertscore_f1_pairs")
    stderr = generation_stderr(pair_statistics(turns, references, options["tokenizer"]), N_BOOTSTRAP, SEED, pair_f1)
    return {**_with_stderr(result, stderr, [key for key in GENERATION_KEYS if key in result]), **_counts(scored)}


def _with_stderr(result: Mapping[str, Any], stderr: Mapping[str, float | None], keys: Sequence[str]) -> dict[str, Any]:
    """Each metric followed by its bootstrap standard error, ``<key>_stderr`` (None where undefined)."""
    return {name: value for key in keys
            for name, value in ((key, result[key]), (f"{key}_stderr", stderr.get(f"{key}_stderr")))}


def _counts(scored: Sequence[Mapping[str, Any]]) -> dict[str, float | None]:
    """``n``, the samples scored, and ``errors``, those that failed (as ``convbench run``'s results count them)."""
    return {"n": len(scored), "errors": sum(m.get("error") is not None for m in scored)}


def _bertscore_options(layer: int | None) -> dict[str, Any] | None:
    return None if layer is None else {"num_layers": layer}


@scorer(metrics=[nico_generation()])
def nico_turn(tokenizer: str = DEFAULT_TOKENIZER, bertscore_model: str | None = None,
              bertscore_layer: int | None = None) -> Scorer:
    """A generated turn, cleaned as convbench does, with its reference; scored over the epoch by ``nico_generation``.

    The sample's own value is its turn's ROUGE-L (percent) and length in tokens, for reading only.
    """
    options = {"tokenizer": tokenizer, "bertscore_model": bertscore_model, "bertscore_layer": bertscore_layer}

    async def score(state: TaskState, target: Target) -> Score:
        row = state.metadata
        response = state.output.completion
        cleaned = clean_turn(response)
        error = output_error(state.output) or too_long_error(cleaned)
        turn = "" if error else cleaned  # no answer, or one too long to score: the sample's error, an empty turn
        own = score_generation([turn], [row["reference"]], tokenizer=tokenizer)  # type: ignore[arg-type]
        return Score(
            value={"rouge_l": own["rouge_l"], "length": own["avg_len"]},
            answer=turn,
            explanation=f"turn: {turn!r}\nreference: {row['reference']!r}" + (f"\nerror: {error}" if error else ""),
            metadata={"epoch": state.epoch, "response": response, "turn": turn, "reference": row["reference"],
                      "interaction_type": row["interaction_type"], "error": error,
                      "finish_reason": finish_reason(state.output), "options": options},
        )

    return score


@metric(scores="unreduced")
def unnatural_sentence_prf() -> Metric:
    """convbench's ``score_identify`` over each epoch's answers: macro precision, recall and F1, over all
    dialogues and over those containing unnatural sentences (``*_containing``), each with its bootstrap
    ``<key>_stderr``, and the counts ``n`` (samples scored) and ``errors``, averaged over epochs."""

    def compute(scores: list[SampleScore]) -> dict[str, float | None]:
        return mean_over_epochs(scores, _identify_scores)

    return compute  # type: ignore[return-value]


def _identify_scores(scores: list[SampleScore]) -> dict[str, float | None]:
    scored = [s.score.metadata or {} for s in scores]
    result, rows = score_identify([m["response"] for m in scored], [m["gold"] for m in scored],
                                  [m["error"] is not None for m in scored],
                                  [m.get("dialogue") for m in scored])  # None in scores of logs made before
    return {**_with_stderr(result, identify_stderr(rows, N_BOOTSTRAP, SEED), IDENTIFY_KEYS), **_counts(scored)}


@scorer(metrics=[unnatural_sentence_prf()])
def nico_identify() -> Scorer:
    """The sentences an answer names as unnatural against the dialogue's gold ones; P/R/F1 over the epoch.

    The answer is read knowing the dialogue, as ``convbench run nico`` reads it. The sample's own value
    is its precision and recall (percent), as convbench's records keep them.
    """

    async def score(state: TaskState, target: Target) -> Score:
        row = state.metadata
        response = state.output.completion
        gold = list(row["unnatural_sentences"])
        dialogue = dialogue_turns(row)
        error = output_error(state.output) or too_long_error(response, "identify_unnatural")
        _, rows = score_identify([response], [gold], [error is not None], [dialogue])
        predicted = rows[0]["predicted"]  # what was scored: none for a failed sample
        return Score(
            value={"precision": 100.0 * rows[0]["precision"], "recall": 100.0 * rows[0]["recall"]},
            answer=response,
            explanation=f"predicted: {predicted}\ngold: {gold}" + (f"\nerror: {error}" if error else ""),
            metadata={"epoch": state.epoch, "response": response, "gold": gold, "predicted": predicted,
                      "dialogue": dialogue, "precision": rows[0]["precision"], "recall": rows[0]["recall"],
                      "interaction_type": row["interaction_type"], "error": error,
                      "finish_reason": finish_reason(state.output)},
        )

    return score


# the metadata key that marks this benchmark's score among a sample's scores (the importer reads it)
SCORE_KEY = "error"


def log_records(samples: list[EvalSample], settings: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Records as ``convbench run nico`` writes them; identify_unnatural's per-row reading and scores are
    ``score_identify``'s over the imported rows, knowing each dialogue (as the runner's)."""
    records = []
    identify = settings["task"] == "identify_unnatural"
    for sample in samples:
        row, score = sample.metadata, convbench_score(sample, SCORE_KEY)
        scored = (score.metadata or {}) if score is not None else {}
        response, finish = scored.get("response", ""), scored.get("finish_reason")
        if score is None or stopped(sample):
            error = failure(sample)
        else:  # the scorer's error; for logs whose scorer did not check replies, the runner's rule
            error = scored.get("error") or reply_error(response, finish)
        record: dict[str, Any] = {"id": row["id"], "dialogue_id": row["dialogue_id"],
                                  "interaction_type": row["interaction_type"], "response": response}
        if identify:
            record.update(predicted=[], gold=list(row["unnatural_sentences"]), dialogue=dialogue_turns(row),
                          precision=0.0, recall=0.0)
        else:
            record.update(turn="" if error else scored.get("turn", ""), reference=row["reference"])
        record.update(cache_hit=None, finish_reason=finish, error=error)
        records.append(record)
    if identify and records:
        _, rows = score_identify([r["response"] for r in records], [r["gold"] for r in records],
                                 [r["error"] is not None for r in records], [r["dialogue"] for r in records])
        for record, scored_row in zip(records, rows):
            record.update(predicted=scored_row["predicted"], precision=scored_row["precision"],
                          recall=scored_row["recall"])
    return records


def log_declared(records: list[dict[str, Any]], settings: Mapping[str, Any]) -> dict[str, Any]:
    """NICO with ``bertscore_model``: BERTScore of the imported epoch's turns, by convbench (re-scoring
    carries it over: it loads no model)."""
    if settings.get("benchmark") != "nico" or not settings.get("bertscore_model"):
        return {}
    layer = settings.get("bertscore_layer")
    scored = score_generation([r["turn"] for r in records], [r["reference"] for r in records],
                              tokenizer=settings.get("tokenizer", DEFAULT_TOKENIZER), bertscore=True,
                              bertscore_model=settings["bertscore_model"],
                              bertscore_options=None if layer is None else {"num_layers": layer})
    return {key: value for key, value in scored.items() if key.startswith("bertscore_")}
