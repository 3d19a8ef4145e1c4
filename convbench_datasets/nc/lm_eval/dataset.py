"""NC-Bench's lm-eval tasks (the generation step): the dataset, and the rows read back from samples.

lm-eval runs no judge, so ``convbench_nc*`` only generate: each row's transcript (``messages``, its
own system prompt included) goes to the model through its chat template (:mod:`.task`), greedy,
1,024 new tokens, as ``convbench run nc``. The task's metric is lm-eval's ``bypass`` (lm-eval's
"no metric", shown as 999), which also makes lm-eval require ``--log_samples``: the samples file is
what ``convbench score --from-lm-eval`` judges and scores (:mod:`.samples`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import ConvbenchError
from ..run import CONFIGS
from ..run import read_rows as _rows
from ...integrations.lm_eval._options import task_options

CONFIG_FIELD = "convbench_config"  # added to each doc: the samples then say which config they are rows of


def nc_dataset(*, nc_config: str, **metadata: Any) -> Any:
    """lm-eval's ``custom_dataset``: ``{"test": the config's rows}`` of convbench's build, each marked
    with its config. ``nc_config`` comes from the task config; ``metadata`` is lm-eval's (``--metadata``:
    ``convbench_dataset``, ``convbench_sources``)."""
    import datasets

    if nc_config not in CONFIGS:
        raise ConvbenchError(f"unknown NC-Bench config {nc_config!r}; choose one of {', '.join(CONFIGS)}")
    options = task_options(metadata, ["dataset", "sources"], f"convbench NC-Bench {nc_config}")
    rows = _rows(nc_config, options.get("dataset"), options.get("sources"))
    return datasets.DatasetDict({"test": datasets.Dataset.from_list([{**row, CONFIG_FIELD: nc_config} for row in rows])})


def transcript(doc: Mapping[str, Any]) -> str:
    """The row's transcript as text (``ROLE: content`` lines), what lm-eval shows as the doc's text
    (``--write_out``); the model itself gets the messages through its chat template."""
    return "\n".join(f"{message['role']}: {message['content']}" for message in doc["messages"])


def dataset_row(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A logged doc as the dataset's row (without the fields convbench's task added)."""
    return {key: value for key, value in doc.items() if key != CONFIG_FIELD}
