"""Session: which judge is the generator itself (one local model loaded once, not twice)."""

from __future__ import annotations

from pathlib import Path

from convbench_datasets.runner.cache import ResponseCache
from convbench_datasets.runner.session import Session

# what `convbench run` passes when no judge flag is given: every backend option, all unset
UNSET = {"base_url": None, "concurrency": None, "device": None, "dtype": None, "model_id": None}


def test_a_judge_with_the_generators_spec_and_no_options_of_its_own_is_the_generator(tmp_path: Path) -> None:
    with ResponseCache(tmp_path / "c.sqlite") as store:
        def same(judge_options: object, model_options: object = None, judge: str = "hf:x") -> bool:
            return Session(store, "hf:x", [judge], model_options=model_options,  # type: ignore[arg-type]
                           judge_options=judge_options).same  # type: ignore[arg-type]

        assert same(None) and same([None]) and same([UNSET])
        assert same([{**UNSET, "device": "cuda"}], {**UNSET, "device": "cuda"})  # the generator's own options
        assert not same([{**UNSET, "device": "cuda"}])  # its own: another copy, on another device
        assert not same([UNSET], judge="hf:y")
