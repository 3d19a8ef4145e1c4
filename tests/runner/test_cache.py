"""The response cache: keys, persistence, stats/clear, and several processes writing at once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from convbench_datasets.cli import main
from convbench_datasets.runner.backends import Generation
from convbench_datasets.runner.cache import ResponseCache, cache_key

IDENTITY = {"kind": "openai", "model": "m", "base_url": "http://127.0.0.1:1/v1"}
MESSAGES = [{"role": "user", "content": "hello"}]


def test_key_depends_on_backend_messages_and_parameters() -> None:
    base = cache_key(IDENTITY, MESSAGES, {"max_new_tokens": 8})
    assert base == cache_key(dict(reversed(list(IDENTITY.items()))), MESSAGES, {"max_new_tokens": 8})  # order-free
    assert base != cache_key({**IDENTITY, "model": "n"}, MESSAGES, {"max_new_tokens": 8})
    assert base != cache_key(IDENTITY, [{"role": "user", "content": "hello!"}], {"max_new_tokens": 8})
    assert base != cache_key(IDENTITY, MESSAGES, {"max_new_tokens": 9})


def test_round_trip_stats_and_clear(tmp_path: Path, capsys) -> None:
    path = tmp_path / "c.sqlite"
    with ResponseCache(path) as cache:
        cache.put("k1", IDENTITY, Generation("one", 3, 1, 0.5))
        cache.put("k2", {"kind": "hf", "model": "tiny"}, Generation("two", 4, 1, 0.1))
    with ResponseCache(path) as cache:  # persisted
        assert cache.get_many(["k1", "k2", "k3"]) == {"k1": Generation("one", 3, 1, 0.5), "k2": Generation("two", 4, 1, 0.1)}
        assert cache.stats()["entries"] == 2
    assert main(["cache", "stats", "--cache", str(path)]) == 0
    assert "openai:m  1 entries, 3 prompt + 1 completion tokens" in capsys.readouterr().out
    assert main(["cache", "clear", "--cache", str(path), "--model", "tiny"]) == 0
    assert "deleted 1 entries" in capsys.readouterr().out
    with ResponseCache(path) as cache:
        assert list(cache.get_many(["k1", "k2"])) == ["k1"]


def test_failed_generations_are_never_cached(tmp_path: Path) -> None:
    import pytest

    with ResponseCache(tmp_path / "c.sqlite") as cache, pytest.raises(ValueError):
        cache.put("k", IDENTITY, Generation("", error="HTTP 500"))


WRITER = """
import sys
from convbench_datasets.runner.backends import Generation
from convbench_datasets.runner.cache import ResponseCache
cache = ResponseCache(sys.argv[1])
for i in range(200):
    cache.put(f"{sys.argv[2]}-{i}", {"kind": "hf", "model": sys.argv[2]}, Generation(str(i)))
"""


def test_processes_share_one_cache(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"w{n}"]) for n in range(3)]
    assert [w.wait(timeout=120) for w in writers] == [0, 0, 0]
    with ResponseCache(path) as cache:
        stats = cache.stats()
    assert stats["entries"] == 600 and [m["entries"] for m in stats["models"]] == [200, 200, 200]
