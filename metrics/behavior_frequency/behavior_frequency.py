# An evaluate module over convbench's scoring code: the logic lives in
# convbench_datasets.cocoeval.behavior_frequency and is callable without evaluate.
from __future__ import annotations

import datasets
import evaluate

from convbench_datasets.cocoeval.references import citation
from convbench_datasets.cocoeval.behavior_frequency import score_frequencies

_DESCRIPTION = """
CoCoEval behaviour frequencies: the mean number of occurrences of each inconsistent or
uncollaborative behaviour type per continuation, in LLM-simulated continuations and in the human
ones, their differences and ratios with bootstrap 95% intervals (over instances, as the paper's; with
groups, over source conversations), per-source and
per-group (inconsistent, uncollaborative) tables, and convbench's own summary number, the mismatch
(total absolute difference over total human frequency, in percent), beside its noise floor.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: list of list of str, behaviour names detected in each simulated continuation (one per occurrence).
    references: list of list of str, the same for the human continuation of the same context.
    sources: optional list of str (or the source column's ClassLabel ids), each context's source, for per_source tables.
    groups: optional list of str, each context's source conversation: intervals resample them (default: instances).
    behaviours: optional list of str, the type names (default: convbench's 10-type taxonomy).
    behaviour_groups: optional dict, type name -> group, for by_group totals (default: the taxonomy's groups).
    n_bootstrap: resamples for the intervals (default 1000; 0 for none). seed: default 0.
Returns:
    model_mean, human_mean, difference, ratio (dicts by type), mismatch (convbench's), mismatch_floor,
    by_group, n, intervals, per_source, signature.
Examples:
    >>> metric = evaluate.load("metrics/behavior_frequency")
    >>> out = metric.compute(predictions=[["Repetition"], []], references=[["Repetition", "Off Topic"], ["Off Topic"]],
    ...                      behaviours=["Repetition", "Off Topic"], n_bootstrap=0)
    >>> out["model_mean"], out["human_mean"], out["mismatch"]
    ({'Repetition': 0.5, 'Off Topic': 0.0}, {'Repetition': 0.5, 'Off Topic': 1.0}, 66.66666666666667)
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class BehaviorFrequency(evaluate.Metric):
    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=citation(),
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Sequence(datasets.Value("string")),
                                        "references": datasets.Sequence(datasets.Value("string"))}),
            reference_urls=["https://arxiv.org/abs/2603.17094"],
        )

    def _compute(self, predictions, references, sources=None, groups=None, behaviours=None, behaviour_groups=None,
                 n_bootstrap=1000, seed=0):
        return score_frequencies(predictions, references, sources=sources, groups=groups, behaviours=behaviours,
                                 behaviour_groups=behaviour_groups, n_bootstrap=n_bootstrap, seed=seed)
