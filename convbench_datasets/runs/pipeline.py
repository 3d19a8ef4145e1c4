"""Drive any :class:`~convbench_datasets.benchmark.Benchmark`: ``convbench run NAME`` and ``convbench score RUN``.

:func:`run` checks the settings, holds the run folder, opens the cache, reads the rows (limit, then
shard), runs the benchmark's stages through a :class:`.session.Session`, and writes ``records.jsonl``
and ``results.json``: the benchmark's scores, a signature (the fields every run has, see
:func:`common_signature`, plus the benchmark's own), ``stats`` and ``row_ids``. :func:`score_run`
re-scores a folder from its records with the benchmark its signature names. Benchmarks are found by
name in :mod:`convbench_datasets.registry`; nothing here knows one from another.

Each benchmark's own run function (in its package) is a thin wrapper over :func:`run`.

Example (the run object of a name from the registry):
    >>> from convbench_datasets.registry import RUNS
    >>> all(resolve(name).name == name for name in RUNS)
    True
"""

from __future__ import annotations

import functools
import json
import logging
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .._version import __version__
from ..benchmark import Benchmark
from ..errors import ConvbenchError
from ..engine import ahead
from ..engine.backends import Backend, ModelRole
from ..engine.cache import ResponseCache
from ..engine.error_rate import DEFAULT_MAX_ERROR_RATE
from ..engine.run_folder import (
    RunResult,
    check_complete,
    check_marked,
    dataset_fingerprint,
    read_folder,
    row_id,
    run_folder,
    write_atomic,
    write_run,
)
from .run_checks import DEFAULT_MAX_EMPTY_RATE, DEFAULT_MAX_UNPARSED_RATE, RETRY_SCORED, check_run
from .run_config import LIMITS, Rows, RunConfig, settings_dict
from ..engine.sample import stratified_sample
from ..engine.session import Session
from ..engine.shard_rows import select_shard, shard_signature

Spec = str | Backend
logger = logging.getLogger(__name__)


def run(
    benchmark: str | Benchmark,
    *,
    model: Spec | ModelRole,
    out: str | os.PathLike[str],
    judge: Spec | ModelRole | Sequence[Spec | ModelRole] | None = None,
    limit: int | None = None,
    shard: tuple[int, int] | None = None,
    cache: str | os.PathLike[str] | ResponseCache | None = None,
    dataset: str | os.PathLike[str] | None = None,
    sources: str | os.PathLike[str] | None = None,
    backend_options: dict[str, Any] | None = None,
    judge_options: dict[str, Any] | Sequence[dict[str, Any] | None] | None = None,
    progress: bool = True,
    retry_errors: bool = False,
    max_error_rate: float = DEFAULT_MAX_ERROR_RATE,
    max_empty_rate: float = DEFAULT_MAX_EMPTY_RATE,
    max_unparsed_rate: float = DEFAULT_MAX_UNPARSED_RATE,
    sample: int | None = None,
    sample_seed: int = 0,
    concurrency: int | None = None,
    **settings: Any,
) -> RunResult:
    """Run ``benchmark`` (a name or object) with ``model`` (and its judges); write the run folder ``out``: the
    keywords of the benchmarks' run functions made into a :class:`~.run_config.RunConfig`, run by :func:`run_config`.

    Args:
        model, judge: spec strings (``hf:...``, ``openai:...``, ``baseline:...``), Backend objects or
            :class:`~.backends.roles.ModelRole` objects; ``judge`` one or a list (as many as the benchmark takes).
        limit: only the first N rows; shard: ``(i, n)``: only shard i of n of them (see :mod:`.shards`).
        sample, sample_seed: instead of ``limit``, N rows drawn with the seed, spread over the benchmark's
            ``strata`` (patterns, interaction types, sources; see :mod:`.sample`); recorded in the signature.
        cache: the response cache file or object (default ``$CONVBENCH_CACHE/responses.sqlite``).
        dataset: a folder from ``convbench build`` (default: the cached build); sources: upstream mirror.
        backend_options: the generator's backend options (:data:`.backends.roles.OPTIONS`: ``base_url``,
            ``concurrency``, ``device``...); judge_options: the judges' (one dict for all, or one per judge;
            default: the generator's, less its request ``params``).
        concurrency: the run's total of requests in flight, generator and judges together (a pipelined
            run's stages share it, first come, first served); lent to every backend without a
            ``concurrency`` option of its own, which otherwise caps that backend within the total. Default:
            the largest of the backends' own (see :mod:`.session`).
        retry_errors: ask again the prompts that ended in a per-row error before (default: reuse it).
        max_error_rate: the share of rows (0 to 1) that may end in an error; with more, the folder is
            still written, then :class:`~.error_rate.TooManyErrors` is raised (its ``result`` is the run's).
        max_empty_rate, max_unparsed_rate: the share of a role's answers that may be empty, of the judge answers
            that may be unreadable; with more, the same (see :mod:`.run_checks`).
        settings: the benchmark's own (its settings dataclass: ``config``, ``task``, ``rules``...).
    """
    bench = resolve(benchmark)
    config = RunConfig.make(bench, model=model, out=out, settings=settings, judge=judge, backend_options=backend_options,
                            judge_options=judge_options,
                            rows=Rows(limit=limit, sample=sample, sample_seed=sample_seed, shard=shard), cache=cache,
                            dataset=dataset, sources=sources, progress=progress, retry_errors=retry_errors,
                            max_error_rate=max_error_rate, max_empty_rate=max_empty_rate,
                            max_unparsed_rate=max_unparsed_rate, concurrency=concurrency)
    return run_config(config, bench)


def run_config(config: RunConfig, benchmark: Benchmark | None = None) -> RunResult:
    """Run ``config``: hold its run folder, open its cache, read the rows (limit or sample, then shard), run the
    benchmark's stages through a :class:`.session.Session`, write ``records.jsonl`` and ``results.json``.

    ``benchmark``: the benchmark object when it is not the registry's (a benchmark made in a notebook)."""
    bench = benchmark or resolve(config.benchmark)
    limit, sample, sample_seed, shard = config.rows.limit, config.rows.sample, config.rows.sample_seed, config.rows.shard
    plan = bench.plan(settings_dict(config.settings), dataset=config.dataset, sources=config.sources)
    path = Path(config.out)
    # a typo in --out must never write into a user's folder; shards of one run never share one
    with run_folder(path, None if shard is None else f"{shard[0]}/{shard[1]}"), open_cache(config.cache) as store:
        selected = plan.rows()
        # what the build holds (every row of the config, before limit, sample and shard: the same for every shard)
        facts = getattr(plan, "build_facts", None)
        build = facts(selected) if facts is not None else None
        if limit is not None:
            selected = selected[:limit]
        if sample is not None:
            selected = stratified_sample(selected, sample, getattr(bench, "strata", ()), sample_seed)
        rows = select_shard(selected, shard)
        logger.info("%s: %d rows into %s (cache %s)", bench.title, len(rows), path, store.path)
        started = time.time()
        # the rows' fingerprint is hashed while the first requests wait (engine/ahead.py): execute must not change rows
        with Session(store, config.model, config.judges, progress=config.progress, retry_errors=config.retry_errors,
                     concurrency=config.concurrency) as session, \
                ahead.later(functools.partial(dataset_fingerprint, rows)) as fingerprint:
            executed = plan.execute(session, rows)
            empty = session.empty_answers()  # per role, asked now or from the cache: a run's count, whatever it asked
            signature = {**common_signature(bench, rows, limit, fingerprint.result()), **session.identities(),
                         **plan.signature(session)}
            applied_decoding(signature, config)
            if build is not None:
                signature["dataset_build"] = build
            if sample is not None:  # absent otherwise: signatures of unsampled runs stay as they were
                signature["sample"] = {"n": sample, "seed": sample_seed, "by": list(getattr(bench, "strata", ()))}
        if shard:  # the whole run's rows and fingerprint, and which shard this is
            signature.update(shard_signature(selected, shard, dataset_fingerprint(selected)))
        stats = {**executed.stats, "empty_answers": empty, "seconds": round(time.time() - started, 3),
                 "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started))}
        results = plan.results(executed.records, signature)
        result = write_run(path, executed.records, results, signature, stats)
    check_run(result, bench, **{name: getattr(config, name) for name in LIMITS})
    return result


# the request params that replace the token limit a benchmark asked for, per backend kind (openai_compat.request_fields,
# anthropic_api, hf._decoding); a param set to null leaves the field out: the server's default then applies
TOKEN_LIMITS = {"openai": ("max_tokens", "max_completion_tokens"), "anthropic": ("max_tokens",),
                "hf": ("max_new_tokens", "max_tokens")}


def applied_decoding(signature: dict[str, Any], config: RunConfig) -> None:
    """Make the signature's decoding (``generation``, ``judge_generation``) say what was sent where a role's request
    params replaced it (``--param max_tokens=16``: 16 applied, not the benchmark's 1024; ``temperature=null``: the
    server's default, recorded as None); ``params_replaced`` lists each field so changed. The params themselves
    stay in the roles' identities, and the report flags them."""
    for key, role in (("generation", config.model), ("judge_generation", config.judges[0] if config.judges else None)):
        decoding, params = signature.get(key), (role.params if role is not None else None) or {}
        if not isinstance(decoding, dict) or not params:
            continue
        applied = dict(decoding)
        limits = [k for k in TOKEN_LIMITS.get(role.kind, ()) if k in params]  # type: ignore[union-attr]
        if limits:
            applied["max_new_tokens"] = params[limits[0]]
        if "temperature" in params and role.kind in TOKEN_LIMITS:  # type: ignore[union-attr]
            applied["temperature"] = params["temperature"]
        if applied != decoding:
            applied["params_replaced"] = sorted(k for k in applied if k in decoding and applied[k] != decoding[k])
            signature[key] = applied


def common_signature(bench: Benchmark, rows: Sequence[dict[str, Any]], limit: int | None,
                     fingerprint: str | None = None) -> dict[str, Any]:
    """The signature fields of every run: version, benchmark, limit, row count and the rows' fingerprint
    (``fingerprint``: :func:`dataset_fingerprint` of ``rows`` when it was computed already)."""
    return {"convbench_version": __version__, "benchmark": bench.name, "limit": limit, "rows": len(rows),
            "dataset_fingerprint": dataset_fingerprint(rows) if fingerprint is None else fingerprint}


def score_run(path: str | os.PathLike[str], rules: str | None = None, *, max_error_rate: float = DEFAULT_MAX_ERROR_RATE,
              max_empty_rate: float = DEFAULT_MAX_EMPTY_RATE, max_unparsed_rate: float = DEFAULT_MAX_UNPARSED_RATE,
              **options: Any) -> RunResult:
    """Re-score a run folder from its records (no model calls); rewrites ``results.json`` only.

    The benchmark named in the signature checks every record (a problem names the line and field);
    then a folder that lost rows is refused, naming them; then the benchmark scores the records again
    with the current code. ``rules`` and ``options``: re-scoring choices the benchmark declares in its
    ``rescore_options``; the signature records them and gains ``scored_by``. The new numbers pass the run's
    checks (``max_error_rate``...: :mod:`.run_checks`) or :class:`~.error_rate.TooManyErrors` is raised, as
    after a run: a number is never printed with exit code 0 from a run that failed them.
    """
    from ..registry import DEFAULT_RUN_BENCHMARK, get_benchmark, run_benchmarks

    if rules is not None:
        options = {"rules": rules, **options}
    folder, records, previous = read_folder(path)
    check_marked(folder)  # results.json is rewritten only in a folder a run made (the folder rule)
    name = previous.get("signature", {}).get("benchmark", DEFAULT_RUN_BENCHMARK)
    bench = get_benchmark(name)
    for option in options:
        if option not in {o.dest for o in bench.rescore_options}:
            owners = [b.title for b in run_benchmarks() if option in {o.dest for o in b.rescore_options}]
            raise ConvbenchError(f"--{option.replace('_', '-')} applies to {' and '.join(owners) or 'no'} runs; "
                                 f"{folder} is a {name} run")
    if not records:
        raise ConvbenchError(f"{folder}/records.jsonl holds no records")
    signature = {**previous.get("signature", {}), "scored_by": __version__}
    bench.check_records(records, signature)
    check_complete(records, previous, folder)
    results = bench.rescore(records, signature, previous, options)
    stats = previous.get("stats", {})
    results = {**results, "signature": {**results.get("signature", {}), **signature}, "stats": stats,
               "row_ids": [row_id(r) for r in records]}
    write_atomic(folder / "results.json", json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    scored = RunResult(folder, records, results, stats)
    check_run(scored, bench, max_error_rate=max_error_rate, max_empty_rate=max_empty_rate,
              max_unparsed_rate=max_unparsed_rate, retry=RETRY_SCORED)
    return scored


def resolve(benchmark: str | Benchmark) -> Benchmark:
    """The benchmark object for a name (from the registry) or the object itself."""
    if isinstance(benchmark, str):
        from ..registry import get_benchmark

        return get_benchmark(benchmark)
    return benchmark


@contextmanager
def open_cache(cache: str | os.PathLike[str] | ResponseCache | None) -> Iterator[ResponseCache]:
    """The cache object given, or the cache file opened (and closed after)."""
    if isinstance(cache, ResponseCache):
        yield cache
        return
    with ResponseCache(cache) as store:
        yield store


__all__ = ["run", "run_config", "score_run", "common_signature", "dataset_fingerprint", "open_cache", "resolve"]
