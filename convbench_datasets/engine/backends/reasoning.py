"""Which models are OpenAI's reasoning models, and the token limit a judge among them needs.

OpenAI's reasoning models (o-series names, ``gpt-5*``) take ``max_completion_tokens`` and no temperature
(:mod:`.openai_compat` sends them so), and their hidden reasoning counts against that limit: a judge
limit made for a short label (a benchmark's released pipeline may give its judge 128 tokens) is spent on
reasoning and the answer comes back empty. A benchmark's default judge limit is therefore raised for them
(:func:`judge_token_limit`); the limit used is in the run's signature (``judge_generation``), and a
report flags it where it is not the paper's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

# o1, o3-mini, o4-mini-2025-04-16, azure/o4-mini..., gpt-5, gpt-5-mini, gpt-5.1...
_REASONING_MODEL = re.compile(r"(?:^|/)(?:o\d|gpt-5)")
# OpenAI advises reserving 25,000 tokens for reasoning and answer when starting with these models
# (the papers give no limit for them)
REASONING_JUDGE_MAX_NEW_TOKENS = 25_000


def reasoning_model(model: str) -> bool:
    """Whether ``model`` names one of OpenAI's reasoning models (o-series, gpt-5*), which take
    ``max_completion_tokens`` and no temperature.

    >>> [reasoning_model(m) for m in ("o4-mini", "o3", "openai/o1-preview", "gpt-5", "gpt-5-mini", "gpt-4.1",
    ...                               "qwen3-8b", "llama-o1", "my-gpt-5")]
    [True, True, True, True, True, False, False, False, False]
    """
    return bool(_REASONING_MODEL.search(model))


def reasoning_judge(judge: Any) -> bool:
    """Whether a judge (a spec string ``openai:o4-mini``, an inspect_ai model name ``openai/o4-mini``, or a
    Backend object) is an OpenAI reasoning model; a local model or another provider with a look-alike name
    is not (its limit is its own).

    >>> [reasoning_judge(j) for j in ("openai:o4-mini", "openai/o4-mini", "openai:gpt-4.1", "hf:o3", "vllm/o3")]
    [True, True, False, False, False]
    """
    if isinstance(judge, str):
        kind, _, name = judge.partition(":") if ":" in judge else judge.partition("/")
    else:
        kind, name = getattr(judge, "kind", ""), str(getattr(judge, "model", ""))
    return kind == "openai" and reasoning_model(name)


def judge_token_limit(judges: Iterable[Any], other: int) -> int:
    """A benchmark's default judge token limit: :data:`REASONING_JUDGE_MAX_NEW_TOKENS` when any of
    ``judges`` is an OpenAI reasoning model, else ``other`` (give one judge to get that judge's own limit).

    >>> judge_token_limit(["openai:gpt-4.1"], 128), judge_token_limit(["openai:gpt-4.1", "openai:o4-mini"], 128)
    (128, 25000)
    >>> judge_token_limit(["hf:o4-mini-lookalike", "anthropic:o3"], 128)
    128
    """
    return REASONING_JUDGE_MAX_NEW_TOKENS if any(reasoning_judge(j) for j in judges) else other
