"""The hf backend: left-padded batches give the same answers as one prompt at a time; no prompt text
leaks into answers; identity changes with the model's files."""

from __future__ import annotations

from pathlib import Path

import pytest

from convbench_datasets.engine.backends import GenerationParams, backend_from_spec

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


def test_identity_names_the_dtype(tmp_path: Path) -> None:
    # the cache key must change with dtype: bfloat16 and float32 weights answer differently
    from convbench_datasets.engine.cache import cache_key
    from tests.support.tiny_models import build_tiny_lm

    folder = build_tiny_lm(tmp_path / "lm")
    f32 = backend_from_spec(f"hf:{folder}", device="cpu", dtype="float32").identity()
    bf16 = backend_from_spec(f"hf:{folder}", device="cpu", dtype="bfloat16").identity()
    assert f32["fingerprint"] == bf16["fingerprint"] and (f32["dtype"], bf16["dtype"]) == ("float32", "bfloat16")
    assert cache_key(f32, PROMPTS[0], {}) != cache_key(bf16, PROMPTS[0], {})


def test_finish_reason_says_whether_the_limit_cut_the_answer(tmp_path: Path) -> None:
    from tests.support.tiny_models import build_tiny_lm

    backend = backend_from_spec(f"hf:{build_tiny_lm(tmp_path / 'lm')}", device="cpu", batch_size=3)
    first = dict(backend.generate(PROMPTS, GenerationParams(max_new_tokens=1)))
    # a random-weight model never says its end token: every answer is cut at the limit
    assert {g.finish_reason for g in first.values()} == {"length"}
    # make the token prompt 0 starts with the end token: prompt 0 now stops there, before the limit
    stop = backend.tokenizer(first[0].text, add_special_tokens=False)["input_ids"][0]
    backend.lm.generation_config.eos_token_id = stop
    out = dict(backend.generate(PROMPTS, GenerationParams(max_new_tokens=4)))
    assert out[0].finish_reason == "stop"
    assert all(out[i].finish_reason == "length" for i in out if stop not in backend.tokenizer(out[i].text)["input_ids"])


def test_answers_are_kept_as_decoded_not_stripped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The released pipeline judges the first line of the raw output: an answer that starts with a new line
    # is an empty turn there. The backend must hand over exactly what the tokenizer decoded.
    from tests.support.tiny_models import build_tiny_lm

    backend = backend_from_spec(f"hf:{build_tiny_lm(tmp_path / 'lm')}", device="cpu")
    decode = backend.tokenizer.decode
    monkeypatch.setattr(backend.tokenizer, "decode", lambda *a, **k: "\n" + decode(*a, **k) + "  ")
    out = dict(backend.generate(PROMPTS[:1], GenerationParams(max_new_tokens=2)))
    assert out[0].text.startswith("\n") and out[0].text.endswith("  ")
    assert backend.identity()["text"] == "raw"  # stripped answers cached by earlier versions are not reused


def test_presence_penalty_subtracts_once_per_token_already_in_the_answer() -> None:
    import torch

    from convbench_datasets.engine.backends.hf import PresencePenalty

    # prompt of 2 tokens (9, 9), answer so far tokens 1, 3, 1: tokens 1 and 3 lose 2.0 once each; the
    # prompt's token 9 is not penalised (OpenAI's meaning, as vLLM applies it)
    scores = PresencePenalty(2.0, prompt_length=2)(torch.tensor([[9, 9, 1, 3, 1]]), torch.zeros(1, 10))
    assert scores.tolist() == [[0.0, -2.0, 0.0, -2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]


def test_presence_penalty_reaches_generation_greedy_only(tmp_path: Path) -> None:
    from convbench_datasets.errors import ConvbenchError
    from tests.support.tiny_models import build_tiny_lm

    backend = backend_from_spec(f"hf:{build_tiny_lm(tmp_path / 'lm')}", device="cpu")
    prompt = [PROMPTS[1]]
    plain = dict(backend.generate(prompt, GenerationParams(max_new_tokens=12)))[0].text.split()
    penalised = dict(backend.generate(prompt, GenerationParams(max_new_tokens=12, presence_penalty=1e4)))[0].text.split()
    # the random model repeats words; with a penalty far above any logit gap no token can come back
    assert len(set(plain)) < len(plain) and len(set(penalised)) == len(penalised) > 1
    with pytest.raises(ConvbenchError, match="presence_penalty is supported with greedy decoding"):
        dict(backend.generate(prompt, GenerationParams(max_new_tokens=4, temperature=0.7, presence_penalty=2.0)))


def test_request_params_set_decoding_and_the_identity(tmp_path: Path) -> None:
    from tests.support.tiny_models import build_tiny_lm

    from convbench_datasets.errors import ConvbenchError

    with pytest.raises(ConvbenchError, match=r"request parameter 'reasoning_effort' \(--param / --judge-param\)"):
        backend_from_spec("hf:nowhere", params={"reasoning_effort": "low"})  # refused before anything loads
    folder = build_tiny_lm(tmp_path / "lm")
    params = GenerationParams(max_new_tokens=8)
    plain = backend_from_spec(f"hf:{folder}", device="cpu")
    greedy = dict(plain.generate(PROMPTS, params))
    assert "params" not in plain.identity()
    # a token limit of the user's replaces the stage's
    short = backend_from_spec(f"hf:{folder}", device="cpu", params={"max_tokens": 2})
    cut = dict(short.generate(PROMPTS, params))
    assert short.identity()["params"] == {"max_tokens": 2}
    assert all(cut[i].completion_tokens <= 2 and greedy[i].text.startswith(cut[i].text) for i in range(3))
    # sampling with a seed: the same answers twice, and (for this tiny model) not the greedy ones
    sampled = [dict(backend_from_spec(f"hf:{folder}", device="cpu", params={"temperature": 5.0, "seed": 11})
                    .generate(PROMPTS, params)) for _ in range(2)]
    assert [sampled[0][i].text for i in range(3)] == [sampled[1][i].text for i in range(3)]
    assert [sampled[0][i].text for i in range(3)] != [greedy[i].text for i in range(3)]
    # a stop string ends the answer, and is cut from it
    text = next(g.text for g in greedy.values() if len(g.text.split()) >= 3)
    stop = text.split()[1]
    stopped = dict(backend_from_spec(f"hf:{folder}", device="cpu", params={"stop": [stop]}).generate(PROMPTS, params))
    for i in range(3):
        expected = greedy[i].text[: greedy[i].text.find(stop)] if stop in greedy[i].text else greedy[i].text
        assert stopped[i].text == expected


def test_a_closed_backend_says_so(tmp_path: Path) -> None:
    from convbench_datasets.errors import ConvbenchError
    from tests.support.tiny_models import build_tiny_lm

    backend = backend_from_spec(f"hf:{build_tiny_lm(tmp_path / 'lm')}", device="cpu")
    backend.close()  # the weights are freed: asking it again is a one-line error, not an AttributeError deep inside
    with pytest.raises(ConvbenchError, match="was closed"):
        dict(backend.generate(PROMPTS, GenerationParams(max_new_tokens=1)))
