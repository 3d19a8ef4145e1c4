"""What NICO's lm-eval task configs (``_nico_*_yaml`` here) name with ``!function utils.NAME``.

lm-eval loads this file by its path (not as part of the package), so it imports convbench's
functions absolutely; each is defined once, in :mod:`convbench_datasets.nico.lm_eval.task`.
"""

from convbench_datasets.nico.lm_eval.task import (
    avg_len,
    avg_len_stderr,
    bleu_1,
    bleu_1_stderr,
    bleu_2,
    bleu_2_stderr,
    distinct_1,
    distinct_1_stderr,
    distinct_2,
    distinct_2_stderr,
    f1,
    f1_containing,
    f1_containing_stderr,
    f1_stderr,
    generation_results,
    identify_results,
    identify_target,
    nico_dataset,
    precision,
    precision_containing,
    precision_containing_stderr,
    precision_stderr,
    recall,
    recall_containing,
    recall_containing_stderr,
    recall_stderr,
    rouge_l,
    rouge_l_stderr,
)

__all__ = [
    "nico_dataset", "generation_results", "identify_results", "identify_target",
    "bleu_1", "bleu_2", "rouge_l", "distinct_1", "distinct_2", "avg_len",
    "precision", "recall", "f1", "precision_containing", "recall_containing", "f1_containing",
    "bleu_1_stderr", "bleu_2_stderr", "rouge_l_stderr", "distinct_1_stderr", "distinct_2_stderr", "avg_len_stderr",
    "precision_stderr", "recall_stderr", "f1_stderr", "precision_containing_stderr", "recall_containing_stderr",
    "f1_containing_stderr",
]
