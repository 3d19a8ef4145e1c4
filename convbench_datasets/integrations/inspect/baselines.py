"""convbench's baselines as inspect models: ``--model convbench/repeat``, ``--model-role grader=convbench/smoke-judge``.

With them ``inspect eval convbench/nc --model convbench/repeat --model-role grader=convbench/smoke-judge``
runs offline out of the box: no server, no key, no download. The answers are those of convbench's own
``baseline:NAME`` backends (:mod:`convbench_datasets.engine.backends.baseline`), so an inspect run and a
``convbench run`` with the same baselines score the same answers. Each reports its token usage itself
(whitespace-separated words in and out): inspect would otherwise count tokens with tiktoken, whose
encoding files it downloads.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import ChatMessage, GenerateConfig, ModelAPI, ModelOutput, ModelUsage, modelapi
from inspect_ai.tool import ToolChoice, ToolInfo

from ...engine.backends.baseline import BaselineBackend

PROVIDER = "convbench"


@modelapi(name=PROVIDER)
class BaselineModel(ModelAPI):
    """``convbench/NAME``: the baseline ``NAME`` (``repeat``, ``silence``, ``smoke-judge``...) as an inspect model."""

    def __init__(self, model_name: str, base_url: str | None = None, api_key: str | None = None,
                 config: GenerateConfig = GenerateConfig(), **model_args: Any) -> None:
        super().__init__(model_name=model_name, base_url=base_url, api_key=api_key, config=config)
        self._answer = BaselineBackend(model_name).answer  # an unknown name fails here, naming the baselines

    async def generate(self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice,
                       config: GenerateConfig) -> ModelOutput:
        messages = [{"role": message.role, "content": message.text} for message in input]
        text = self._answer(messages)
        output = ModelOutput.from_content(f"{PROVIDER}/{self.model_name}", text, stop_reason="stop")
        words_in = sum(len(m["content"].split()) for m in messages)
        words_out = len(text.split())
        output.usage = ModelUsage(input_tokens=words_in, output_tokens=words_out, total_tokens=words_in + words_out)
        return output


__all__ = ["BaselineModel", "PROVIDER"]
