"""A process that answers prompts through a shared response cache (tests/engine/test_shared_cache.py and
benchmarks/shared_cache.py start several at once on one cache and one local OpenAI-compatible server)."""

from __future__ import annotations

import os
from typing import Any


def ask(cache_path: str, base_url: str, model: str, prompts: list[list[dict[str, str]]], concurrency: int,
        claim: bool, start: Any, results: Any) -> None:
    """Wait at ``start`` (a multiprocessing Barrier: every worker sends at the same moment), answer
    ``prompts`` with one stage on ``cache_path`` (claims on or off), put a summary on ``results``."""
    from convbench_datasets.engine import GenerationParams, ResponseCache
    from convbench_datasets.engine.backends.openai_compat import OpenAICompatBackend
    from convbench_datasets.engine.stage import complete

    backend = OpenAICompatBackend(model, base_url=base_url, concurrency=concurrency)
    with ResponseCache(cache_path) as cache:
        start.wait()
        options = {} if claim else {"claim": False}  # the default is the behaviour under test
        stage = complete(backend, prompts, GenerationParams(max_new_tokens=128), cache, desc="judge", progress=False,
                         **options)
    results.put({"pid": os.getpid(), "model_calls": stage.model_calls, "texts": [g.text for g in stage.generations]})


def run_workers(n: int, cache_path: str, base_url: str, model: str, prompts: list[list[dict[str, str]]],
                concurrency: int = 8, claim: bool = True, timeout: float = 600.0) -> list[dict[str, Any]]:
    """Start ``n`` :func:`ask` processes (spawned: no threads of this process are copied), wait for all
    of them; their summaries, in the order they finished. Raises if one fails."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    start, results = context.Barrier(n), context.Queue()
    workers = [context.Process(target=ask, args=(cache_path, base_url, model, prompts, concurrency, claim, start, results))
               for _ in range(n)]
    for worker in workers:
        worker.start()
    import queue
    import time

    summaries: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    try:
        while len(summaries) < n:
            try:
                summaries.append(results.get(timeout=0.5))
            except queue.Empty:
                crashed = [w.exitcode for w in workers if w.exitcode not in (None, 0)]
                if crashed or time.monotonic() > deadline:
                    raise RuntimeError(f"workers failed (exit codes {crashed}) or ran past {timeout:g}s") from None
    finally:
        for worker in workers:
            worker.join(timeout=5)
            if worker.is_alive():
                worker.terminate()
                worker.join()
    failed = [w.exitcode for w in workers if w.exitcode != 0]
    if failed:
        raise RuntimeError(f"{len(failed)} of {n} workers failed (exit codes {failed})")
    return summaries
