# An evaluate module over convbench's scoring code: the logic lives in
# convbench_datasets.nc.ncbench_action and is callable without evaluate.
from __future__ import annotations

import datasets
import evaluate

from convbench_datasets.nc.references import citation
from convbench_datasets.nc.ncbench_action import score_actions

_CITATION = citation()

_DESCRIPTION = """
NC-Bench action accuracy. An LLM judge labels the conversational actions of a model's turn; a row
passes when a label is acceptable for the row's pattern, except that when Silence or NonVerbal is
acceptable and the judge gave one of them, it must be the only label. Accuracies are percentages
(0-100); the overall accuracy is the row-weighted average of the patterns, as in the paper's tables.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: list of str, the judge's raw answer per row ("Repeat", "PreClosing, Silence"...).
    references: list of list of str, the row's acceptable labels (dataset column acceptable_labels).
    patterns: optional list of str (or the dataset column's ClassLabel ids), the row's pattern, for per_pattern
        and the failure breakdown.
    sets: optional list of str (or ClassLabel ids), the row's set, for per_set.
    label_sets: optional list of list of str, the labels offered to the judge, to count out-of-set answers.
    tasks: optional list of str (or ClassLabel ids), the row's upstream task (dataset column task), for per_task.
    parsing: "exact" (default: the released aggregator's reading, which made the paper's tables:
        case-sensitive, no spelling normalisation) or "lenient" (case, spaces, hyphens, punctuation and
        blank pieces ignored; its numbers are not the paper's). Recorded in signature.
    return_rows: optional bool, add per-row passes, labels and unparsed_rows.
Returns:
    accuracy (0-100), n, passed, unparsed, unrecognised, out_of_set, signature; with patterns
    per_pattern, pattern_counts, failure_breakdown and top_failure_label; with sets per_set; with both
    per_set_pattern and failure_breakdown_per_set; with tasks per_task.
Examples:
    >>> metric = evaluate.load("metrics/ncbench_action")
    >>> out = metric.compute(predictions=["Repeat", "Paraphrase"],
    ...                      references=[["Repeat", "Partial Repeat"], ["Repeat", "Partial Repeat"]],
    ...                      patterns=["Repeat Request", "Repeat Request"])
    >>> out["accuracy"], out["top_failure_label"]
    (50.0, {'Repeat Request': 'Paraphrase'})
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class NcbenchAction(evaluate.Metric):
    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {"predictions": datasets.Value("string"), "references": datasets.Sequence(datasets.Value("string"))}
            ),
            reference_urls=["https://arxiv.org/abs/2601.06426", "https://github.com/IBM/nc-bench"],
        )

    def compute(self, *, predictions=None, references=None, **kwargs):
        """Score judge answers (see the arguments below); as evaluate's compute, without its copy of the inputs."""
        # evaluate would write the inputs to an Arrow file and read them back before _compute: with one
        # process and nothing added by add() or add_batch(), that changes nothing but the cost (at 720,000
        # answers, a few times the scoring's time and memory); score_actions checks the inputs itself
        if self.num_process == 1 and self.writer is None and predictions is not None and references is not None:
            return self._compute(predictions=predictions, references=references, **kwargs)
        return super().compute(predictions=predictions, references=references, **kwargs)

    def _compute(self, predictions, references, patterns=None, sets=None, label_sets=None, return_rows=False,
                 tasks=None, parsing="exact"):
        return score_actions(
            predictions, references, patterns=patterns, sets=sets, label_sets=label_sets, return_rows=return_rows,
            tasks=tasks, parsing=parsing,
        )
