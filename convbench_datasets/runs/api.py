"""The built-in benchmarks' run functions: ``run_nc``, ``run_nico``, ``run_cocoeval``, typed wrappers that make a
:class:`~.run_config.RunConfig` from their keywords and run it (:func:`.pipeline.run`). Any registered
benchmark also runs by name: ``convbench_datasets.runs.pipeline.run("NAME", ...)``.

Each function's keywords are its benchmark's settings (the fields of its ``*Settings`` dataclass, same names and
defaults: ``tests/test_settings_declared.py``) beside the run's own (model roles, rows, cache, policies).

Example (no model needed: a baseline generator and a baseline "judge" that answers empty turns):
    >>> import tempfile
    >>> run = run_nc(model="baseline:repeat", judge="baseline:silence", out=tempfile.mkdtemp(),
    ...              config="basic", limit=3, progress=False)             # doctest: +SKIP
    >>> run.results["n"], run.results["unparsed"]                        # doctest: +SKIP
    (3, 3)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..cocoeval.run import BENCHMARK as COCOEVAL
from ..cocoeval.run import TOKENS_PER_TURN
from ..engine.backends import Backend
from ..engine.cache import ResponseCache
from ..engine.error_rate import DEFAULT_MAX_ERROR_RATE, TooManyErrors
from .run_checks import DEFAULT_MAX_EMPTY_RATE, DEFAULT_MAX_UNPARSED_RATE
from ..engine.run_folder import RunResult, check_run_out
from ..nc.judge_prompt import TemplateChoice
from ..nc.lm_eval.samples import name_harness, read_samples
from ..nc.run import BENCHMARK as NC
from ..nico.run import BENCHMARK as NICO
from .pipeline import run, score_run

def run_nc(
    *,
    model: str | Backend,
    judge: str | Backend | Sequence[str | Backend],
    out: str | os.PathLike[str],
    config: str = "all",
    limit: int | None = None,
    max_new_tokens: int = 1024,
    judge_max_new_tokens: int | None = None,
    first_line_only: bool = True,
    template: TemplateChoice = "released",
    fill_request_details: bool = False,
    rules: str = "paper",
    parsing: str = "exact",
    cache: str | os.PathLike[str] | ResponseCache | None = None,
    dataset: str | os.PathLike[str] | None = None,
    sources: str | os.PathLike[str] | None = None,
    backend_options: dict[str, Any] | None = None,
    judge_options: dict[str, Any] | Sequence[dict[str, Any]] | None = None,
    progress: bool = True,
    retry_errors: bool = False,
    max_error_rate: float = DEFAULT_MAX_ERROR_RATE,
    max_empty_rate: float = DEFAULT_MAX_EMPTY_RATE,
    max_unparsed_rate: float = DEFAULT_MAX_UNPARSED_RATE,
    concurrency: int | None = None,
    sample: int | None = None,
    sample_seed: int = 0,
    shard: tuple[int, int] | None = None,
    pipelined: bool = True,
) -> RunResult:
    """Generate, judge and score NC-Bench rows; write ``records.jsonl`` and ``results.json`` to ``out``.

    Args:
        model, judge: spec strings (``hf:...``, ``openai:...``, ``baseline:...``) or Backend objects;
            ``judge`` may be a list of them: every row is judged by each, the first is the primary judge
            (see the module docstring for what the records and results gain).
        config: ``basic``, ``rag``, ``complex_request`` or ``all``.
        limit: score only the first N rows of the config (for smoke tests).
        max_new_tokens: the generator's limit (the paper used greedy decoding, 1024 tokens).
        judge_max_new_tokens: the judges' limit; default 128, the released pipeline's, or 25,000 when a judge
            is one of OpenAI's reasoning models (``openai:o4-mini``, ``gpt-5*``: their hidden reasoning counts
            against the limit; :mod:`convbench_datasets.engine.backends.reasoning`). The signature records it.
        first_line_only: judge only the first line of each response (the released pipeline's choice;
            the released template requires it).
        template: ``released`` (default: the released pipeline's judge prompt, read from the pinned
            upstream file, so that results stand next to the paper's), ``convbench`` (convbench's own
            wording), a YAML template file, or a template object.
        fill_request_details: with the released template, put the row's request details where the
            released pipeline leaves them empty (recorded in the signature).
        rules: which labels pass: ``paper`` (default: the paper's, appendix B.1; rag incremental-self-correction
            accepts Answer, as its Table 3 shows) or ``released_script`` (the released aggregator's list).
        parsing: how the judge's answers are read: ``exact`` (default: the released aggregator's reading,
            case-sensitive, which made the paper's tables) or ``lenient`` (convbench's: case, spaces,
            hyphens, punctuation and blank pieces ignored; not the paper's numbers). Any rules with any parsing.
        cache: the response cache file (default ``$CONVBENCH_CACHE/responses.sqlite``).
        dataset: a folder written by ``convbench build nc`` (default: build or reuse the cached one).
        backend_options, judge_options: passed to the backends (base_url, concurrency, device...);
            with several judges ``judge_options`` is one dict for all or a list, one per judge.
        retry_errors: ask again the prompts that ended in a per-row error before (default: reuse it).
        sample, sample_seed: N rows drawn with the seed across sets and patterns, instead of ``limit``'s
            first N (``convbench run nc --sample N``).
        max_error_rate: the share of rows (0 to 1, default 5%) that may end in an error; with more, the
            folder is written, then ``TooManyErrors`` (a ConvbenchError whose ``result`` is the run) is raised.
        max_empty_rate, max_unparsed_rate: the share of a role's answers that may be empty (default 10%; a
            ``baseline:`` role is never held to it) and of the judge answers that may be unreadable (default 10%);
            with more, the same (:mod:`convbench_datasets.runs.run_checks`).
        concurrency: the run's total of requests in flight, generation and judging together (see
            :func:`convbench_datasets.runs.pipeline.run`); ``convbench run --concurrency``.
        shard: ``(i, n)``: run only shard i of n (from 1) of the rows config and limit select; join the
            shard folders with ``convbench merge`` (see :mod:`convbench_datasets.runs.shards`).
        pipelined: judge each row as soon as its answer is stored, generation and judging side by side
            (default), when no local model must be freed for another: the judges are ``openai:`` or
            ``baseline:`` specs or Backend objects that hold no weights, and the generator is not the judge.
            An ``hf:`` judge (or generator and judge the same model) runs after generation, as with False.
            Results are the same either way.
    """

    return run(NC, model=model, judge=judge, out=out, limit=limit, shard=shard, cache=cache, dataset=dataset,
               sources=sources, backend_options=backend_options, judge_options=judge_options, progress=progress,
               retry_errors=retry_errors, max_error_rate=max_error_rate, max_empty_rate=max_empty_rate,
               max_unparsed_rate=max_unparsed_rate, concurrency=concurrency,
               sample=sample, sample_seed=sample_seed, config=config, max_new_tokens=max_new_tokens,
               judge_max_new_tokens=judge_max_new_tokens, first_line_only=first_line_only, template=template,
               fill_request_details=fill_request_details, rules=rules, parsing=parsing, pipelined=pipelined)


def run_nico(
    *,
    task: str,
    model: str | Backend,
    out: str | os.PathLike[str],
    shots: int = 0,
    split: str = "test",
    limit: int | None = None,
    max_new_tokens: int = 256,
    dataset: str | os.PathLike[str] | None = None,
    cache: str | os.PathLike[str] | ResponseCache | None = None,
    sources: str | os.PathLike[str] | None = None,
    tokenizer: str = "char",
    bleu_level: str = "corpus",
    bleu_ngrams: str = "cumulative",
    rouge_l_f: str = "f1",
    bertscore: bool = False,
    bertscore_model: str = "bert-base-chinese",
    backend_options: dict[str, Any] | None = None,
    progress: bool = True,
    retry_errors: bool = False,
    max_error_rate: float = DEFAULT_MAX_ERROR_RATE,
    max_empty_rate: float = DEFAULT_MAX_EMPTY_RATE,
    max_unparsed_rate: float = DEFAULT_MAX_UNPARSED_RATE,
    concurrency: int | None = None,
    sample: int | None = None,
    sample_seed: int = 0,
    bertscore_layer: int | None = None,
    shard: tuple[int, int] | None = None,
    blank_answer: str = "unanswered",
) -> RunResult:
    """Prompt ``model`` on ``task`` (zero- or 3-shot) and score; writes records.jsonl and results.json.

    ``dataset``: a folder from ``convbench build nico --data-dir ...``; default: the bundled sample.
    ``sources``: an upstream mirror, used only when the default build has to be made.
    ``tokenizer``, ``bleu_level``, ``bleu_ngrams``, ``rouge_l_f``: the generation metrics' token unit and
    readings (see :func:`convbench_datasets.nico.nico_generation.score_generation`; the NICO card says why
    the defaults are the paper's).
    ``retry_errors``: ask again the prompts that ended in a per-row error before (default: reuse it).
    ``sample``, ``sample_seed``: N rows drawn with the seed across the interaction types, instead of
    ``limit``'s first N.
    ``max_error_rate``: the share of rows that may end in an error (default 5%); with more, the folder is
    written, then ``TooManyErrors`` (a ConvbenchError whose ``result`` is the run) is raised; ``max_empty_rate``
    and ``max_unparsed_rate`` likewise, as for :func:`run_nc`.
    ``concurrency``: the run's total of requests in flight, every stage together (see
    :func:`convbench_datasets.runs.pipeline.run`); ``convbench run --concurrency``.
    ``bertscore_layer``: the BERTScore layer (default: inferred, see ``scoring.bertscore.resolve_layer``).
    ``shard``: ``(i, n)``: only shard i of n (from 1) of the rows split and limit select (see :mod:`convbench_datasets.runs.shards`).
    ``blank_answer``: identify_unnatural: a blank answer (no letter or number) is ``unanswered`` (scored 0;
    default) or the answer ``none``.
    """

    return run(NICO, model=model, out=out, limit=limit, shard=shard, cache=cache, dataset=dataset, sources=sources,
               backend_options=backend_options, progress=progress, retry_errors=retry_errors,
               max_error_rate=max_error_rate, max_empty_rate=max_empty_rate,
               max_unparsed_rate=max_unparsed_rate, concurrency=concurrency,
               sample=sample, sample_seed=sample_seed, task=task, shots=shots,
               split=split, max_new_tokens=max_new_tokens, tokenizer=tokenizer, bleu_level=bleu_level,
               bleu_ngrams=bleu_ngrams, rouge_l_f=rouge_l_f, bertscore=bertscore, bertscore_model=bertscore_model,
               bertscore_layer=bertscore_layer, blank_answer=blank_answer)


def run_cocoeval(
    *,
    model: str | Backend,
    judge: str | Backend,
    out: str | os.PathLike[str],
    config: str = "all",
    split: str = "test",
    limit: int | None = None,
    turns_per_call: int = 5,
    prompt: str = "vanilla",
    taxonomy: str | os.PathLike[str] | None = None,
    max_new_tokens: int | None = None,
    tokens_per_turn: int = TOKENS_PER_TURN,
    repetition_countermeasure: bool = True,
    judge_max_new_tokens: int | None = None,
    max_repairs: int = 1,
    bootstrap_unit: str = "instance",
    dataset: str | os.PathLike[str] | None = None,
    sources: str | os.PathLike[str] | None = None,
    cache: str | os.PathLike[str] | ResponseCache | None = None,
    backend_options: dict[str, Any] | None = None,
    judge_options: dict[str, Any] | None = None,
    n_bootstrap: int = 1000,
    seed: int = 0,
    progress: bool = True,
    retry_errors: bool = False,
    max_error_rate: float = DEFAULT_MAX_ERROR_RATE,
    max_empty_rate: float = DEFAULT_MAX_EMPTY_RATE,
    max_unparsed_rate: float = DEFAULT_MAX_UNPARSED_RATE,
    concurrency: int | None = None,
    sample: int | None = None,
    sample_seed: int = 0,
    shard: tuple[int, int] | None = None,
) -> RunResult:
    """Simulate, judge and compare; writes records.jsonl and results.json to ``out``.

    ``retry_errors``: ask again the prompts that ended in a per-row error before (default: reuse it).
    ``sample``, ``sample_seed``: N rows drawn with the seed across the sources, instead of ``limit``'s
    first N.
    ``max_error_rate``: the share of rows that may end in an error (default 5%); with more, the folder is
    written, then ``TooManyErrors`` (a ConvbenchError whose ``result`` is the run) is raised; ``max_empty_rate``
    and ``max_unparsed_rate`` likewise, as for :func:`run_nc`.
    ``concurrency``: the run's total of requests in flight, every stage together (see
    :func:`convbench_datasets.runs.pipeline.run`); ``convbench run --concurrency``.
    ``max_new_tokens``: the simulation's token limit (default: :func:`simulation_token_limit`).
    ``repetition_countermeasure``: copy the last five turns first, with presence_penalty 2.0 (paper, C.2;
    default on, as its main runs). ``judge_max_new_tokens``: default :func:`judge_token_limit`.
    ``bootstrap_unit``: what the intervals resample, ``instance`` (the paper's) or ``source_conversation``.
    ``shard``: ``(i, n)``: only shard i of n (from 1) of the rows config, split and limit select (see :mod:`convbench_datasets.runs.shards`).
    """

    return run(COCOEVAL, model=model, judge=judge, out=out, limit=limit, shard=shard, cache=cache, dataset=dataset,
               sources=sources, backend_options=backend_options, judge_options=judge_options, progress=progress,
               retry_errors=retry_errors, max_error_rate=max_error_rate, max_empty_rate=max_empty_rate,
               max_unparsed_rate=max_unparsed_rate, concurrency=concurrency,
               sample=sample, sample_seed=sample_seed, config=config, split=split,
               turns_per_call=turns_per_call, prompt=prompt,
               taxonomy=taxonomy, max_new_tokens=max_new_tokens, tokens_per_turn=tokens_per_turn,
               repetition_countermeasure=repetition_countermeasure, judge_max_new_tokens=judge_max_new_tokens,
               max_repairs=max_repairs, bootstrap_unit=bootstrap_unit, n_bootstrap=n_bootstrap, seed=seed)



def score_lm_eval_samples(
    samples: str | os.PathLike[str],
    *,
    judge: str | Backend | Sequence[str | Backend],
    out: str | os.PathLike[str],
    template: Any = "released",
    rules: str = "paper",
    parsing: str = "exact",
    fill_request_details: bool = False,
    judge_max_new_tokens: int | None = None,
    dataset: str | os.PathLike[str] | None = None,
    sources: str | os.PathLike[str] | None = None,
    cache: Any = None,
    judge_options: dict[str, Any] | Sequence[dict[str, Any]] | None = None,
    progress: bool = True,
    retry_errors: bool = False,
    max_error_rate: float = DEFAULT_MAX_ERROR_RATE,
    max_empty_rate: float = DEFAULT_MAX_EMPTY_RATE,
    max_unparsed_rate: float = DEFAULT_MAX_UNPARSED_RATE,
) -> RunResult:
    """Judge and score the NC-Bench answers of an lm-eval samples file; write the run folder ``out``.

    Args:
        samples: ``samples_convbench_nc*_DATE.jsonl`` from ``lm_eval ... --log_samples``.
        judge, template, rules, parsing, fill_request_details, judge_max_new_tokens, cache, judge_options,
            retry_errors, max_error_rate, max_empty_rate, max_unparsed_rate: as :func:`convbench_datasets.runs.api.run_nc`
            (over a limit, the folder is written, its signature naming the harness, then ``TooManyErrors`` is raised).
        dataset, sources: convbench's NC-Bench build lm-eval used (its ``convbench_dataset`` /
            ``convbench_sources`` metadata; default: convbench's cached build).
        out: the run folder to write: missing, empty, or an earlier run folder.
    """
    logged = read_samples(samples, dataset, sources)
    check_run_out(Path(out))
    try:
        result = run_nc(
            model=logged.model, judge=judge, out=out, config=logged.config,
            limit=logged.limit, max_new_tokens=logged.max_new_tokens,
            judge_max_new_tokens=judge_max_new_tokens, template=template, fill_request_details=fill_request_details,
            rules=rules, parsing=parsing, cache=cache, dataset=dataset, sources=sources, judge_options=judge_options, progress=progress,
            retry_errors=retry_errors, max_error_rate=max_error_rate, max_empty_rate=max_empty_rate,
            max_unparsed_rate=max_unparsed_rate,
        )
    except TooManyErrors as err:  # the folder is written: it names the harness like any other, then the error stands
        name_harness(err.result, logged.harness)
        raise
    name_harness(result, logged.harness)
    return result


def import_inspect_log(log: Any, out: str | os.PathLike[str], *, epoch: int = 1,
                       max_error_rate: float = DEFAULT_MAX_ERROR_RATE, max_empty_rate: float = DEFAULT_MAX_EMPTY_RATE,
                       max_unparsed_rate: float = DEFAULT_MAX_UNPARSED_RATE) -> RunResult:
    """Write ``out`` (records.jsonl, results.json) from the inspect log ``log`` and score it with convbench
    (``convbench import-inspect``; see :func:`convbench_datasets.integrations.inspect.importer.write_inspect_run`).

    Args:
        log: an inspect log file (``.eval`` or ``.json``) of ``convbench/nc``, ``/nico`` or ``/cocoeval``, or
            the log object.
        out: the run folder to write: missing, empty, or an earlier run folder (replaced).
        epoch: which epoch of the log becomes the run (inspect numbers them from 1).
        max_error_rate, max_empty_rate, max_unparsed_rate: the run's checks, as for :func:`run_nc`: with more,
            the folder is written, then ``TooManyErrors`` (its ``result`` the run) is raised.
    """
    from ..integrations.inspect.importer import write_inspect_run  # inspect_ai: imported when asked for

    return score_run(write_inspect_run(log, out, epoch=epoch), max_error_rate=max_error_rate,
                     max_empty_rate=max_empty_rate, max_unparsed_rate=max_unparsed_rate)


__all__ = ["import_inspect_log", "run_cocoeval", "run_nc", "run_nico", "score_lm_eval_samples"]
