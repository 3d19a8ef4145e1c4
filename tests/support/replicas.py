"""An OpenAI-compatible client of several test servers (replicas of one endpoint), and the records of its
runs, for the tests of several endpoints per role (tests/engine/test_endpoints.py, test_replica_faults.py)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from convbench_datasets.engine.backends.openai_compat import OpenAICompatBackend, RetryPolicy

FAST = RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.02)
CACHE_HITS = {"model_cache_hit", "judge_cache_hit"}  # where a rerun from the cache differs from the first run


def replica_backend(urls: list[str], model: str = "label", **kwargs) -> OpenAICompatBackend:
    """The ``model`` of the test server at each of ``urls``, retrying FAST unless ``retry`` is given, without
    the warning that the endpoints share one cache identity (they are replicas of one server here)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*endpoints share one cache identity")
        return OpenAICompatBackend(model, base_url=urls, retry=kwargs.pop("retry", FAST), **kwargs)


def run_records(folder: Path) -> list[dict]:
    """A run folder's records.jsonl, without CACHE_HITS: equal for runs that gave the same answers."""
    return [{k: v for k, v in json.loads(line).items() if k not in CACHE_HITS}
            for line in (folder / "records.jsonl").read_text().splitlines()]
