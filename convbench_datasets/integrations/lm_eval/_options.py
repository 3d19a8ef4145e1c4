"""Task options an lm-eval user passes with ``--metadata '{"convbench_split": "train", ...}'``.

lm-eval hands a task's ``custom_dataset`` the run's metadata, which also holds the model arguments
(``--model_args``, e.g. a model's own ``tokenizer``) and lm-eval's own entries (``version``,
``config_source``). convbench's options are therefore prefixed ``convbench_``: entries without the
prefix are not convbench's and are left alone. One run's metadata goes to all its tasks, so a task
ignores the options of convbench's other tasks (``convbench_split`` is NICO's); a ``convbench_`` entry
that no task takes is an error (a misspelt option must not be silently ignored).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...errors import ConvbenchError

PREFIX = "convbench_"
# the field a NICO doc carries its prompt in: it tells NICO samples from NC-Bench ones
PROMPT_FIELD = "convbench_prompt"
# what each option means, for the error that lists a task's options
OPTIONS = {
    "dataset": "a folder `convbench build` wrote (default: convbench's cached build)",
    "sources": "the upstream mirror for building NC-Bench (default: $CONVBENCH_SOURCES)",
    "split": "the NICO split to evaluate (default test)",
    "tokenizer": "the NICO generation metrics' segmentation: char (default), jieba or 13a",
}


def task_options(metadata: Mapping[str, Any], allowed: Sequence[str], task: str) -> dict[str, Any]:
    """The ``convbench_*`` entries of ``metadata`` that this task takes (``allowed``), without the prefix.

    Example:
        >>> task_options({"convbench_split": "train", "pretrained": "gpt2", "version": 1.0}, ["dataset", "split"], "t")
        {'split': 'train'}
        >>> task_options({"convbench_split": "train"}, ["dataset", "sources"], "t")   # NICO's option: not this task's
        {}
        >>> task_options({"convbench_splt": "train"}, ["dataset", "split"], "t")
        Traceback (most recent call last):
        ...
        convbench_datasets.errors.ConvbenchError: t: unknown option convbench_splt in --metadata; convbench's tasks take convbench_dataset, convbench_sources, convbench_split, convbench_tokenizer
    """
    options: dict[str, Any] = {}
    for key, value in metadata.items():
        if not key.startswith(PREFIX):
            continue
        name = key[len(PREFIX):]
        if name not in OPTIONS:
            raise ConvbenchError(f"{task}: unknown option {key} in --metadata; convbench's tasks take "
                                 f"{', '.join(PREFIX + option for option in OPTIONS)}")
        if name in allowed:
            options[name] = value
    return options
