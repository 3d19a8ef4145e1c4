"""Session: which judge is the generator itself (one local model loaded once, not twice); which backends it closes."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from convbench_datasets.engine.backends import Backend, Generation, GenerationParams
from convbench_datasets.engine.backends.baseline import BaselineBackend
from convbench_datasets.engine.cache import ResponseCache
from convbench_datasets.engine.backends import make_role
from convbench_datasets.runs.run_config import judge_options_list, judge_role
from convbench_datasets.engine.session import Session

# a judge's options given, all unset (as a sweep's judge or a notebook's judge_options may be)
UNSET = {"base_url": None, "concurrency": None, "device": None, "dtype": None, "model_id": None}


def test_a_judge_with_the_generators_spec_and_no_options_of_its_own_is_the_generator(tmp_path: Path) -> None:
    with ResponseCache(tmp_path / "c.sqlite") as store:
        def same(judge_options: object, model_options: object = None, judge: str = "hf:x") -> bool:
            # the judge's role as a run makes it (RunConfig.make: none of its own, the generator's lent)
            generator = make_role("hf:x", model_options)  # type: ignore[arg-type]
            judges = [judge_role(judge, own, generator) for own in judge_options_list(judge_options, 1)]
            return Session(store, generator, judges).same

        assert same(None) and same([None]) and same([UNSET])
        assert same([{**UNSET, "device": "cuda"}], {**UNSET, "device": "cuda"})  # the generator's own options
        assert not same([{**UNSET, "device": "cuda"}])  # its own: another copy, on another device
        assert not same([UNSET], judge="hf:y")
        # a served-only option of the generator's (concurrency) is not lent to an hf judge, and changes nothing for
        # hf: the judge is still the generator, one copy of the weights
        assert same(None, {"dtype": "bfloat16", "concurrency": 3})


class Loaded(Backend):
    """A caller's backend object (a notebook's loaded model): repeats the last message; counts its closes."""

    kind, model, holds_weights = "stub", "loaded", True

    def __init__(self) -> None:
        self.closes = 0

    def generate(self, prompts: Sequence[list[dict]], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
        for i, messages in enumerate(prompts):
            yield i, Generation(messages[-1]["content"])

    def close(self) -> None:
        self.closes += 1


@pytest.mark.parametrize("pipelined", [True, False])
def test_a_backend_object_passed_in_stays_open_and_one_built_from_a_spec_is_closed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pipelined: bool) -> None:
    closed: list[str] = []
    monkeypatch.setattr(BaselineBackend, "close", lambda self: closed.append(self.spec))
    generator, judge = Loaded(), Loaded()
    prompts = [[{"role": "user", "content": "hi"}]]
    for model, judges in [(generator, ["baseline:repeat"]), ("baseline:silence", [judge])]:
        with ResponseCache(tmp_path / "c.sqlite") as store, \
                Session(store, model, judges, progress=False) as session:
            session.generate_then_judge(prompts, GenerationParams(8), lambda i, g: prompts[i], GenerationParams(8),
                                        pipelined=pipelined)
    # the caller's objects are used again after a run (a second run, a notebook cell): never closed by one
    assert generator.closes == judge.closes == 0
    assert closed == ["baseline:repeat", "baseline:silence"]  # the session's own, once each
    assert dict(generator.generate(prompts, GenerationParams(8))) == {0: Generation("hi")}
