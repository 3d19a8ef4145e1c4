"""The response cache: keys, persistence, stats/clear, and several processes writing at once."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

from convbench_datasets.cli import main
from convbench_datasets.engine.backends import Generation
from convbench_datasets.engine.cache import ResponseCache, cache_key, cache_keys

IDENTITY = {"kind": "openai", "model": "m", "base_url": "http://127.0.0.1:1/v1"}
MESSAGES = [{"role": "user", "content": "hello"}]


def test_key_depends_on_backend_messages_and_parameters() -> None:
    base = cache_key(IDENTITY, MESSAGES, {"max_new_tokens": 8})
    assert base == cache_key(dict(reversed(list(IDENTITY.items()))), MESSAGES, {"max_new_tokens": 8})  # order-free
    assert base != cache_key({**IDENTITY, "model": "n"}, MESSAGES, {"max_new_tokens": 8})
    assert base != cache_key(IDENTITY, [{"role": "user", "content": "hello!"}], {"max_new_tokens": 8})
    assert base != cache_key(IDENTITY, MESSAGES, {"max_new_tokens": 9})


def test_a_long_prompts_key_is_the_sha256_of_its_canonical_json() -> None:
    # keys are hashed in pieces below hashlib's 2,048-byte threshold (it lets go of the GIL above it, #20); the
    # digest is the one of the whole text: 6 KB of UTF-8 here, its pieces cutting characters in two
    messages = [{"role": "user", "content": "é" * 3000 + "!"}]
    params = {"max_new_tokens": 8}
    whole = json.dumps({"backend": IDENTITY, "messages": messages, "params": params}, sort_keys=True, ensure_ascii=False)
    expected = hashlib.sha256(whole.encode("utf-8")).hexdigest()
    assert cache_key(IDENTITY, messages, params) == expected
    assert cache_keys(IDENTITY, [MESSAGES, messages], params) == [cache_key(IDENTITY, MESSAGES, params), expected]


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


def test_the_derived_caches_are_listed_and_cleared_alone(tmp_path: Path, monkeypatch, capsys) -> None:
    # kept rows and parsed YAML (cache_dir.DERIVED): listed by stats, deleted by clear --derived, which
    # touches no response and no file of the user's beside them
    from convbench_datasets.parsed_yaml import parse

    monkeypatch.setenv("CONVBENCH_CACHE", str(tmp_path / "cache"))
    assert parse("a: 1\n") == {"a": 1}  # one parsed-YAML entry
    rows = tmp_path / "cache" / "rows"
    rows.mkdir(parents=True)
    kept = rows / f"{'0' * 64}.json"
    kept.write_text("[]")
    mine = rows / "notes.json"  # not an entry's name: someone else's
    mine.write_text("{}")
    path = tmp_path / "c.sqlite"
    with ResponseCache(path) as cache:
        cache.put("k1", IDENTITY, Generation("one", 3, 1, 0.5))
    assert main(["cache", "stats", "--cache", str(path)]) == 0
    assert "rows/ 1 entries, 2 bytes, yaml/ 1 entries" in capsys.readouterr().out
    assert main(["cache", "clear", "--derived"]) == 0
    assert "deleted 2 derived cache entries" in capsys.readouterr().out
    assert not kept.exists() and mine.read_text() == "{}" and not list((tmp_path / "cache" / "yaml").glob("*.json"))
    with ResponseCache(path) as cache:
        assert list(cache.get_many(["k1"])) == ["k1"]  # the responses are another cache: untouched
    assert main(["cache", "stats", "--derived"]) == 1  # --derived clears; it shows nothing of its own


def test_failed_generations_are_never_cached(tmp_path: Path) -> None:
    import pytest

    with ResponseCache(tmp_path / "c.sqlite") as cache, pytest.raises(ValueError):
        cache.put("k", IDENTITY, Generation("", error="HTTP 500"))


WRITER = """
import sys
from convbench_datasets.engine.backends import Generation
from convbench_datasets.engine.cache import ResponseCache
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


def test_key_changes_with_every_part_of_the_identity() -> None:
    # Each identity field decides the answer; a key built from the model name alone (a mutation the
    # suite used to let through) would hand one server's or one weight file's answers to another.
    hf = {"kind": "hf", "model": "m", "dtype": "float32", "fingerprint": "aaaa"}
    identities = [
        {**IDENTITY, "model": "m"},
        {**IDENTITY, "model": "m", "kind": "baseline"},
        {**IDENTITY, "model": "m", "base_url": "http://127.0.0.1:2/v1"},
        hf,
        {**hf, "dtype": "bfloat16"},
        {**hf, "fingerprint": "bbbb"},
    ]
    keys = {cache_key(identity, MESSAGES, {"max_new_tokens": 8}) for identity in identities}
    assert len(keys) == len(identities)


def test_backends_identify_their_server() -> None:
    from convbench_datasets.engine.backends.openai_compat import OpenAICompatBackend

    a = OpenAICompatBackend("m", base_url="http://127.0.0.1:1/v1").identity()
    b = OpenAICompatBackend("m", base_url="http://127.0.0.1:2/v1").identity()
    assert a["model"] == b["model"] and cache_key(a, MESSAGES, {}) != cache_key(b, MESSAGES, {})


def _stub(kind: str):
    """A backend of the given kind, always named "same-name", answering with its kind and counting calls."""
    from convbench_datasets.engine.backends import Backend

    class Stub(Backend):
        def __init__(self) -> None:
            self.kind, self.model, self.calls = kind, "same-name", 0

        def generate(self, prompts, params):
            for i, _ in enumerate(prompts):
                self.calls += 1
                yield i, Generation(f"answer from {kind}", finish_reason="stop")

    return Stub()


def test_stage_never_shares_answers_between_backends_of_one_model_name(tmp_path: Path) -> None:
    from convbench_datasets.engine.backends import GenerationParams
    from convbench_datasets.engine.stage import complete

    params = GenerationParams(max_new_tokens=8)
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        first = complete(_stub("stub-a"), [MESSAGES], params, cache, desc="a", progress=False)
        other = _stub("stub-b")
        second = complete(other, [MESSAGES], params, cache, desc="b", progress=False)
    assert first.generations[0].text == "answer from stub-a" and second.generations[0].text == "answer from stub-b"
    assert other.calls == 1 and second.cache_hits == [False]


def test_cache_hit_flags_are_exact(tmp_path: Path) -> None:
    # A stage that reported every prompt as a hit (a mutation the suite used to let through) fails here.
    from convbench_datasets.engine.backends import GenerationParams
    from convbench_datasets.engine.stage import complete

    prompts = [[{"role": "user", "content": f"q{i}"}] for i in range(4)]
    params = GenerationParams(max_new_tokens=8)
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        backend = _stub("stub")
        assert complete(backend, prompts[:2], params, cache, desc="x", progress=False).cache_hits == [False, False]
        # q0, q1 cached; q2 asked once for its two rows; q3 new
        again = complete(backend, [prompts[0], prompts[2], prompts[1], prompts[2], prompts[3]], params, cache, desc="x",
                         progress=False)
    assert again.cache_hits == [True, False, True, False, False] and again.model_calls == 2
    assert again.generations[0].finish_reason == "stop"  # kept in the cache with the answer


def test_row_errors_are_kept_apart_from_answers(tmp_path: Path) -> None:
    import pytest

    refused = Generation("", error="refused for this row: HTTP 400", finish_reason=None, permanent=True)
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        cache.put_error("k", IDENTITY, refused)
        assert cache.get_many(["k"]) == {} and cache.get_errors(["k"]) == {"k": refused}
        with pytest.raises(ValueError):
            cache.put_error("k2", IDENTITY, Generation("", error="HTTP 500"))  # transient: a rerun retries it
        cache.put("k", IDENTITY, Generation("late answer"))  # a retried row that got its answer
        assert cache.get_errors(["k"]) == {} and cache.get_many(["k"])["k"].text == "late answer"
        cache.put_error("k3", IDENTITY, refused)
        assert cache.stats()["errors"] == 1
        assert cache.clear() == 2 and cache.stats()["errors"] == 0


def test_a_cache_from_before_finish_reason_is_upgraded(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:  # the table as earlier versions wrote it
        db.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, backend TEXT NOT NULL, model TEXT NOT NULL, "
                   "response TEXT NOT NULL, prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, "
                   "seconds REAL NOT NULL, created REAL NOT NULL)")
        db.execute("INSERT INTO responses VALUES ('old', 'openai', 'm', 'kept', 1, 2, 0.5, 0)")
    db.close()
    with ResponseCache(path) as cache:
        assert cache.get_many(["old"]) == {"old": Generation("kept", 1, 2, 0.5)}
        cache.put("new", IDENTITY, Generation("x", finish_reason="length"))
        assert cache.get_many(["new"])["new"].finish_reason == "length"


def test_clearing_the_derived_caches_follows_no_symbolic_link(tmp_path: Path, monkeypatch, capsys) -> None:
    # a link named like an entry, and a derived folder that is a link, lead to files convbench never wrote
    monkeypatch.setenv("CONVBENCH_CACHE", str(tmp_path / "cache"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = elsewhere / f"{'1' * 64}.json"
    target.write_text("[]")
    (tmp_path / "cache" / "rows").mkdir(parents=True)
    (tmp_path / "cache" / "rows" / f"{'2' * 64}.json").symlink_to(target)
    (tmp_path / "cache" / "yaml").symlink_to(elsewhere, target_is_directory=True)
    assert main(["cache", "clear", "--derived"]) == 0
    assert "deleted 0 derived cache entries" in capsys.readouterr().out
    assert target.read_text() == "[]" and (tmp_path / "cache" / "rows" / f"{'2' * 64}.json").is_symlink()
