"""NC-Bench as an inspect_ai task: ``inspect eval convbench/nc --model M --model-role grader=J``.

Each sample is an NC-Bench row (its ``messages`` as the chat input, the row as metadata); the
solver is the model's next turn (greedy, 1,024 tokens by default, as the paper); the scorer asks
the grader with convbench's judge prompt (``judge_messages``: the released wording by default),
reads the answer as ``parsing`` says (``exact``, the released aggregator's reading, by default; or
``lenient``) and applies the pass rule with the acceptable labels of the chosen ``rules`` (``paper``, the
default, or ``released_script``), through ``judge_row``, as ``convbench run nc``. The metric is convbench's ``score_actions`` over
the epoch's samples: overall accuracy (row-weighted over patterns), per set, per set and pattern,
in percent like the paper's tables, and counts: ``n`` samples scored, ``unparsed`` judge answers,
``errors``.

As in ``convbench run nc``, a reply that is no answer is the row's error (``output_error``: no
output at all, as when an inspect limit stopped the sample; withheld by a content filter; empty and cut
at the token limit): the row is not judged, fails and is counted in ``errors``; a judge reply that is
no answer is the row's error in the same way. A sample inspect itself could not finish (its ``error``,
with ``--no-fail-on-error``) has no score and is not in ``n``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.log import EvalSample
from inspect_ai.scorer import CORRECT, INCORRECT, Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import TaskState, generate

from .judge_prompt import TemplateChoice, judge_messages, resolve_template, template_name
from .patterns import pattern_table
from .released_prompt import ReleasedPrompt
from .patterns import RULES
from ..engine.backends.reasoning import judge_token_limit
from .run import CONFIGS, JUDGE_MAX_NEW_TOKENS, _record, run_parsing
from .run import BENCHMARK as _BENCHMARK, read_rows as _rows
from .ncbench_action import judge_row, parsing_name, score_actions
from ..engine.backends import Generation
from ..engine.backends.openai_compat import reply_error
from ..integrations.inspect.log_samples import convbench_score, failure, output_text, stopped
from ..integrations.inspect._common import (
    chat_messages,
    prerequisites,
    sampled,
    task_dataset,
    finish_reason,
    grader,
    greedy,
    judge_roles,
    mean_over_epochs,
    output_error,
    require_grader,
    task_metadata,
)

BENCHMARK = "nc"
STRATA = _BENCHMARK.strata  # what -T sample spreads over, as convbench run --sample


def nc_sample(row: Mapping[str, Any]) -> Sample:
    """One NC-Bench row as a sample: its transcript as the input, the row itself as metadata.

    Its id is ``set/id`` (ids repeat across sets in the ``all`` config), as in ``results.json``'s ``row_ids``.
    """
    return Sample(id=f"{row['set']}/{row['id']}", input=chat_messages(row["messages"]), metadata=dict(row))


@task
def nc(
    config: str = "all",
    judge: str | None = None,
    template: str = "released",
    rules: str = "paper",
    parsing: str = "exact",
    fill_request_details: bool = False,
    max_tokens: int = 1024,
    judge_max_tokens: int | None = None,
    dataset: str | None = None,
    sources: str | None = None,
    sample: int | None = None,
    sample_seed: int = 0,
) -> Task:
    """NC-Bench: the model's next conversational action, labelled by a judge and scored by convbench.

    Args:
        config: ``basic``, ``rag``, ``complex_request`` or ``all`` (720 rows).
        judge: the judge model (``provider/model``); an eval's ``--model-role grader=...`` takes precedence.
        template: the judge prompt: ``released`` (the released pipeline's, comparable with the paper),
            ``convbench`` (convbench's wording) or a YAML template file.
        rules: which labels pass: ``paper`` (the paper's) or ``released_script`` (the released aggregator's list).
        parsing: how the grader's answers are read: ``exact`` (the released aggregator's reading, which made
            the paper's tables) or ``lenient`` (convbench's; not the paper's numbers).
        fill_request_details: put the row's request details into the released prompt (which leaves them empty).
        max_tokens: the model's token limit (greedy decoding).
        judge_max_tokens: the judge's token limit (default 128, the released pipeline's, or 25,000 when ``judge``
            names an OpenAI reasoning model such as ``openai/o4-mini``; a grader given only as a model role
            gets 128 unless this is set).
        dataset: a folder ``convbench build nc`` wrote (default: ``hub/nc`` when the README's build is here,
            else convbench's cached build).
        sources: the upstream mirror (default ``$CONVBENCH_SOURCES``), for the build and the released prompt.
        sample, sample_seed: N rows drawn with the seed across sets and patterns (``-T sample=40``), as
            ``convbench run --sample``; inspect's ``--limit 20`` is the first 20 rows, one pattern.
    """
    if config not in CONFIGS:
        raise ValueError(f"unknown NC-Bench config {config!r}; choose one of {', '.join(CONFIGS)}")
    if rules not in RULES:
        raise ValueError(f"rules must be one of {', '.join(RULES)}, got {rules!r}")
    parsing = parsing_name(parsing)
    with prerequisites("nc"):
        rows, drawn = sampled(_rows(config, task_dataset("nc", dataset), sources), sample, sample_seed, STRATA)
        wording = resolve_template(template, sources=sources)
    if fill_request_details and not isinstance(wording, ReleasedPrompt):
        raise ValueError("fill_request_details applies to the released judge prompt only "
                         "(convbench's wording always names the request details)")
    if judge_max_tokens is None:
        judge_max_tokens = judge_token_limit([judge] if judge else [], JUDGE_MAX_NEW_TOKENS)
    settings = {
        "config": config, "judge_template": template_name(wording), "judge_template_sha256": wording.sha256,
        "first_line_only": True, "fill_request_details": fill_request_details, "rules": rules,
        "parsing": parsing,  # the model's decoding is the log's (plan.config): -T or --max-tokens
        "judge_generation": {"max_new_tokens": judge_max_tokens, "temperature": 0.0}, **drawn,
    }
    samples = [nc_sample(row) for row in rows]
    return Task(
        setup=require_grader("convbench/nc"),
        dataset=MemoryDataset(samples, name=f"convbench/nc/{config}"),
        solver=generate(),
        scorer=ncbench_judge(template=template, rules=rules, parsing=parsing, fill_request_details=fill_request_details,
                             max_tokens=judge_max_tokens, sources=sources),
        config=greedy(max_tokens),
        model_roles=judge_roles(judge),  # type: ignore[arg-type]
        metadata=task_metadata(BENCHMARK, rows, [str(s.id) for s in samples], **settings),
    )


@metric(scores="unreduced")
def ncbench_action() -> Metric:
    """convbench's ``score_actions`` over each epoch's samples: ``accuracy`` (row-weighted over patterns)
    and its standard error ``accuracy_stderr`` (both in percent), one entry per set, one per ``set/pattern``, and counts (``n`` samples scored, ``unparsed``, ``errors``:
    rows that failed without a judgement), averaged over epochs."""

    def compute(scores: list[SampleScore]) -> dict[str, float | None]:
        return mean_over_epochs(scores, _epoch_scores)

    return compute  # type: ignore[return-value]


def _epoch_scores(scores: list[SampleScore]) -> dict[str, float | int | None]:
    rows = [s.sample_metadata or {} for s in scores]
    judged = [s.score.metadata or {} for s in scores]
    # a score without "parsing" is from a log made before it was recorded: read leniently then (as nc.run.run_parsing)
    parsing = {parsing_name(j.get("parsing", "lenient")) for j in judged}
    if len(parsing) != 1:
        raise ValueError(f"the scores mix judge-answer readings {sorted(parsing)}: score one reading at a time")
    failed = [j.get("error") is not None for j in judged]  # scores of logs made before errors were recorded: none
    result = score_actions([j["judge_output"] for j in judged], [j["acceptable_labels"] for j in judged],
                           patterns=[r["pattern"] for r in rows], sets=[r["set"] for r in rows],
                           label_sets=[r["label_set"] for r in rows], errors=failed, parsing=parsing.pop())
    flat: dict[str, float | int | None] = {"accuracy": result["accuracy"],
                                           "accuracy_stderr": _stderr([bool(j.get("passed")) for j in judged])}
    flat.update(result["per_set"])
    for set_name, patterns in result["per_set_pattern"].items():
        flat.update({f"{set_name}/{pattern}": accuracy for pattern, accuracy in patterns.items()})
    flat.update(n=result["n"], unparsed=result["unparsed"], errors=sum(failed))
    return flat


def _stderr(passed: list[bool]) -> float | None:
    """The standard error of the accuracy (percent): the pass rate over rows is the accuracy (row-weighted
    over patterns), so its error is the sample standard deviation of the 0/1 passes over the root of n, as
    inspect's ``stderr()`` computes it for a mean. None below two rows."""
    n = len(passed)
    if n < 2:
        return None
    p = sum(passed) / n
    return 100.0 * math.sqrt(p * (1 - p) * n / (n - 1) / n)


@scorer(metrics=[ncbench_action()])
def ncbench_judge(
    template: str = "released",
    rules: str = "paper",
    parsing: str = "exact",
    fill_request_details: bool = False,
    max_tokens: int = JUDGE_MAX_NEW_TOKENS,
    sources: str | None = None,
) -> Scorer:
    """Judge the model's turn with convbench's judge prompt, the chosen reading (``parsing``) and pass rule.

    The score is ``C`` (pass) or ``I``; its explanation shows the judge's raw answer and the labels
    read from it, its metadata everything ``convbench import-inspect`` needs for a run folder. A model
    reply that is no answer (``output_error``) is not judged: the row fails with ``error`` ``model: ...``;
    a judge reply that is none fails it with ``judge: ...`` (as ``convbench run nc`` records them).
    """
    wording: TemplateChoice = resolve_template(template, sources=sources)
    parsing = parsing_name(parsing)
    table = pattern_table()

    async def score(state: TaskState, target: Target) -> Score:
        row = state.metadata
        response = state.output.completion
        acceptable = list(table.acceptable_labels(row["set"], row["task"], rules))  # type: ignore[arg-type]
        model_error, judge_error = output_error(state.output), None
        judge_output, judge_finish = "", None
        if model_error is None:  # a reply that is no answer is not judged (as convbench run)
            prompt = judge_messages(row, response, template=wording, fill_request_details=fill_request_details)
            judged = await grader("convbench/nc").generate(chat_messages(prompt), config=greedy(max_tokens))
            judge_output, judge_finish, judge_error = judged.completion, finish_reason(judged), output_error(judged)
        error = f"model: {model_error}" if model_error else f"judge: {judge_error}" if judge_error else None
        if error is None:
            parsed, passed = judge_row(judge_output, acceptable, row["label_set"], parsing)
            labels, out_of_set, unrecognised = parsed.labels, parsed.out_of_set, parsed.unrecognised
            unparsed = parsed.unparsed
            explanation = _explanation(judge_output, labels, out_of_set, unrecognised, passed, acceptable)
        else:  # the row fails, counted as an error, not as an unparsed judge answer
            passed, labels, out_of_set, unrecognised, unparsed = False, (), (), (), False
            explanation = f"error: {error}\nfail (no judgement)"
        usage = state.output.usage
        return Score(
            value=CORRECT if passed else INCORRECT,
            answer=response,
            explanation=explanation,
            metadata={
                "epoch": state.epoch, "judge_output": judge_output, "labels": list(labels),
                "out_of_set": list(out_of_set), "unrecognised": list(unrecognised),
                "unparsed": unparsed, "passed": passed, "acceptable_labels": acceptable, "parsing": parsing,
                "finish_reason": finish_reason(state.output), "judge_finish_reason": judge_finish,
                "completion_tokens": usage.output_tokens if usage is not None else 0,
                "error": error, "model_error": model_error, "judge_error": judge_error,
            },
        )

    return score


def _explanation(raw: str, labels: tuple[str, ...], out_of_set: tuple[str, ...], unrecognised: tuple[str, ...],
                 passed: bool, acceptable: list[str]) -> str:
    lines = [f"judge answer: {raw!r}", f"labels: {', '.join(labels) if labels else '(unparsed: no label)'}"]
    if out_of_set:
        lines.append(f"outside the row's label set: {', '.join(out_of_set)}")
    if unrecognised:
        lines.append(f"pieces naming no label: {', '.join(map(repr, unrecognised))}")
    lines.append(f"{'pass' if passed else 'fail'} (acceptable: {', '.join(acceptable)})")
    return "\n".join(lines)


# the metadata key that marks this benchmark's score among a sample's scores (the importer reads it)
SCORE_KEY = "judge_output"


def log_records(samples: list[EvalSample], settings: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Records as ``convbench run nc`` writes them, from the samples of one epoch (``convbench import-inspect``)."""
    records = []
    parsing = run_parsing(settings)  # the scorer's reading (logs that do not record it were read leniently)
    for sample in samples:
        row, score = dict(sample.metadata), convbench_score(sample, SCORE_KEY)
        response = output_text(sample)
        if score is None or stopped(sample):  # stopped, or generation or judge failed: the row fails with an error
            failed = Generation("", error=failure(sample))
            gen, jud = (Generation(response), failed) if response and sample.limit is None else (failed, Generation(""))
            records.append(_record(row, gen, jud, None, None, settings["rules"], parsing=parsing))  # type: ignore[arg-type]
            continue
        judged = score.metadata or {}
        finish, judge_finish = judged.get("finish_reason"), judged.get("judge_finish_reason")
        # the scorer's errors; for logs whose scorer did not check replies, the runner's rule
        model_error = judged["model_error"] if "model_error" in judged else reply_error(response, finish)
        judge_error = (judged["judge_error"] if "judge_error" in judged
                       else reply_error(judged["judge_output"], judge_finish))
        gen = Generation(response, completion_tokens=judged.get("completion_tokens") or 0, finish_reason=finish,
                         error=model_error)
        jud = Generation(judged["judge_output"], finish_reason=judge_finish, error=None if model_error else judge_error)
        records.append(_record(row, gen, jud, None, None, settings["rules"], parsing=parsing))  # type: ignore[arg-type]
    return records
