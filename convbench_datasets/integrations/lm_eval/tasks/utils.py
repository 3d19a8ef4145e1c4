"""What convbench's lm-eval task configs name with ``!function utils.NAME``.

lm-eval loads this file by its path (not as part of the package), so it imports convbench's
functions absolutely; each is defined once, in ``convbench_datasets.integrations.lm_eval``.
"""

from convbench_datasets.integrations.lm_eval.nc import nc_dataset, transcript
from convbench_datasets.integrations.lm_eval.nc_task import NCBenchGeneration
from convbench_datasets.integrations.lm_eval.nico import (
    avg_len,
    bleu_1,
    bleu_2,
    distinct_1,
    distinct_2,
    f1,
    f1_containing,
    generation_results,
    identify_results,
    identify_target,
    nico_dataset,
    precision,
    precision_containing,
    recall,
    recall_containing,
    rouge_l,
)

__all__ = [
    "nc_dataset", "transcript", "NCBenchGeneration",
    "nico_dataset", "generation_results", "identify_results", "identify_target",
    "bleu_1", "bleu_2", "rouge_l", "distinct_1", "distinct_2", "avg_len",
    "precision", "recall", "f1", "precision_containing", "recall_containing", "f1_containing",
]
