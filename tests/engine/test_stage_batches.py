"""Stages take answers in the groups a backend hands over, without bypassing a subclass's own generate."""

from __future__ import annotations


def test_a_subclass_overriding_generate_is_not_bypassed(tmp_path) -> None:  # noqa: ANN001
    # the openai backend groups answers in generate_batches; a user's subclass that overrides only generate
    # (to post-process answers, say) must have its generate used by the stages
    from convbench_datasets.engine.backends import Generation, GenerationParams
    from convbench_datasets.engine.backends.openai_compat import OpenAICompatBackend
    from convbench_datasets.engine.cache import ResponseCache
    from convbench_datasets.engine.stage import complete

    class Shouting(OpenAICompatBackend):
        def preflight(self) -> None:
            pass

        def generate(self, prompts, params):  # type: ignore[no-untyped-def]
            for i, _ in enumerate(prompts):
                yield i, Generation("HELLO")

    backend = Shouting("m", base_url="http://127.0.0.1:1/v1")
    with ResponseCache(tmp_path / "c.sqlite") as store:
        result = complete(backend, [[{"role": "user", "content": "hi"}]], GenerationParams(8), store, desc="x",
                          progress=False)
    assert result.generations[0].text == "HELLO"


def test_one_prompt_is_asked_in_the_callers_thread(monkeypatch) -> None:  # noqa: ANN001
    # a pipelined stage's workers hand the backend one prompt at a time: asking it must start no thread
    # (before: a thread per request, the cost the batched path had shed)
    import threading

    from convbench_datasets.engine.backends import GenerationParams
    from convbench_datasets.engine.backends.openai_compat import OpenAICompatBackend
    from tests.support.openai_server import openai_server

    with openai_server() as (url, state):
        backend = OpenAICompatBackend("label", base_url=url, concurrency=8)
        backend.preflight()
        list(backend.generate([[{"role": "user", "content": "warm up"}]], GenerationParams(8)))  # the HTTP loop's thread
        started: list[str] = []
        start = threading.Thread.start

        def counted(self: threading.Thread) -> None:
            started.append(self.name)
            start(self)

        monkeypatch.setattr(threading.Thread, "start", counted)
        answers = [list(backend.generate([[{"role": "user", "content": f"q{i}"}]], GenerationParams(8)))
                   for i in range(5)]
    assert all(len(a) == 1 and a[0][1].error is None for a in answers)
    assert [name for name in started if name.startswith("convbench")] == []
