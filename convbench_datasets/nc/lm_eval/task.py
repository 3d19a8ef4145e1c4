"""The lm-eval task class of NC-Bench's generation step: a row's whole transcript as the chat.

lm-eval's configurable tasks build a prompt from one text (``doc_to_text``) plus few-shot turns;
an NC-Bench row is a multi-turn conversation with its own system prompt. This class gives the model
exactly the row's ``messages`` through the model's chat template, as ``convbench run nc`` sends them,
so it needs ``--apply_chat_template`` and takes no few-shot examples and no ``--system_instruction``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lm_eval.api.task import ConfigurableTask

from ...integrations.lm_eval._usage import usage_error


class NCBenchGeneration(ConfigurableTask):
    """An lm-eval task whose context is the row's chat transcript (see the module docstring)."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        # the task config as written, less the key that named this class
        super().__init__(config={key: value for key, value in (config or {}).items() if key != "class"})

    def fewshot_context(self, doc: dict, num_fewshot: int, system_instruction: str | None = None,
                        apply_chat_template: bool = False, fewshot_as_multiturn: bool = False,
                        chat_template: Callable[..., str] | None = None, gen_prefix: str | None = None,
                        **_: Any) -> str:
        task = self.config.task
        if not apply_chat_template or chat_template is None:
            raise usage_error(f"{task}: NC-Bench rows are chat transcripts; run lm_eval with --apply_chat_template "
                              "(a chat model, or an API chat model)")
        if num_fewshot:
            raise usage_error(f"{task}: NC-Bench has no few-shot examples; leave out --num_fewshot")
        if system_instruction:
            raise usage_error(f"{task}: each row has its own system prompt; leave out --system_instruction")
        return chat_template([dict(message) for message in doc["messages"]], add_generation_prompt=True)
