"""A reply whose text holds a lone surrogate (JSON can escape one, ``"\\ud800"``; it is no character and cannot be
written as UTF-8) is stored and handed on with U+FFFD in its place (issue #42). Reported: such a reply stopped the
run at the cache insert, naming no row or URL, so a deterministic model could never finish. Both served backends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convbench_datasets.engine.backends import GenerationParams, backend_from_spec
from convbench_datasets.engine.cache import ResponseCache
from convbench_datasets.engine.stage import complete
from tests.support.openai_server import affected, label_for, openai_server
from tests.support.replicas import FAST

PROMPTS = [[{"role": "user", "content": f"refuse {i}"}] for i in range(8)]


def _served(kind: str):  # type: ignore[no-untyped-def]
    if kind == "openai":
        return openai_server(), "openai:surrogate", label_for, affected
    pytest.importorskip("anthropic", reason="the anthropic backend needs the anthropic extra")
    from tests.support.anthropic_server import anthropic_server

    # the anthropic server's rows are those whose last message holds "refuse": every prompt here
    return anthropic_server(), "anthropic:claude-surrogate", lambda m: m[-1]["content"], lambda m: True


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_lone_surrogate_is_stored_as_the_replacement_character(kind: str, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    server, spec, answer, hit = _served(kind)
    with server as (url, _), ResponseCache(tmp_path / "c.sqlite") as cache:
        stage = complete(backend_from_spec(spec, base_url=url, retry=FAST), PROMPTS, GenerationParams(16), cache,
                         desc="x", progress=False)
        again = complete(backend_from_spec(spec, base_url=url, retry=FAST), PROMPTS, GenerationParams(16), cache,
                         desc="x", progress=False)
    expected = [f"{answer(p)} \ufffd end" if hit(p) else answer(p) for p in PROMPTS]
    assert any(hit(p) for p in PROMPTS) and [g.text for g in stage.generations] == expected
    assert [g.text for g in again.generations] == expected and again.model_calls == 0  # stored, read back
    json.dumps(expected, ensure_ascii=False).encode("utf-8")  # and writable as a record
