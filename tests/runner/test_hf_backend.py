"""The hf backend: left-padded batches give the same answers as one prompt at a time; no prompt text
leaks into answers; identity changes with the model's files."""

from __future__ import annotations

from pathlib import Path

import pytest

from convbench_datasets.runner.backends import GenerationParams, backend_from_spec

pytest.importorskip("transformers", reason="the hf backend needs the hf extra")

PROMPTS = [
    [{"role": "user", "content": "yes"}],
    [{"role": "system", "content": "be brief"}, {"role": "user", "content": "what do you mean ? please repeat the line again"}],
    [{"role": "user", "content": "thanks okay"}, {"role": "assistant", "content": "sorry"}, {"role": "user", "content": "again"}],
]


@pytest.mark.parametrize("pad_is_eos", [False, True])
def test_batched_equals_one_at_a_time(tmp_path: Path, pad_is_eos: bool) -> None:
    from transformers import AutoTokenizer

    from tests.support.tiny_models import build_tiny_lm

    folder = build_tiny_lm(tmp_path / "lm")
    if pad_is_eos:
        tokenizer = AutoTokenizer.from_pretrained(folder)
        tokenizer.pad_token = tokenizer.eos_token
        tokenizer.save_pretrained(folder)
    params = GenerationParams(max_new_tokens=5)
    batched = dict(backend_from_spec(f"hf:{folder}", device="cpu", batch_size=3).generate(PROMPTS, params))
    single = dict(backend_from_spec(f"hf:{folder}", device="cpu", batch_size=1).generate(PROMPTS, params))
    assert [batched[i].text for i in range(3)] == [single[i].text for i in range(3)]
    assert any(batched[i].text for i in range(3))
    for i in range(3):
        assert "<|user|>" not in batched[i].text and "please repeat the line" not in batched[i].text
        assert batched[i].completion_tokens <= 5


def test_identity_follows_the_files(tmp_path: Path) -> None:
    from tests.support.tiny_models import build_tiny_lm

    first = backend_from_spec(f"hf:{build_tiny_lm(tmp_path / 'lm', seed=0)}", device="cpu").identity()
    second = backend_from_spec(f"hf:{build_tiny_lm(tmp_path / 'lm', seed=1)}", device="cpu").identity()
    assert first["model"] == second["model"] and first["fingerprint"] != second["fingerprint"]
