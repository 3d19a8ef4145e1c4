# An evaluate module over convbench's scoring code: the logic lives in
# convbench_datasets.nico.unnatural_prf and is callable without evaluate.
from __future__ import annotations

import datasets
import evaluate

from convbench_datasets.nico.references import citation
from convbench_datasets.nico.unnatural_prf import MAX_ANSWER_LINES
from convbench_datasets.nico.unnatural_prf import MAX_LINE_CHARS
from convbench_datasets.nico.unnatural_prf import MAX_SENTENCES
from convbench_datasets.nico.unnatural_prf import MAX_TEXT_CHARS
from convbench_datasets.nico.unnatural_prf import score_unnatural

_DESCRIPTION = """
Finding the unnatural sentences of a dialogue (NICO). Each model answer is read as one sentence per
line, with numbering, speaker prefixes, preambles, notes, reasons and quotes read off, a JSON answer as
its strings, any wording of "none" (无, 以上对话中没有不自然的句子, 都符合人类说话习惯, No unnatural
sentences...) the empty set, and a refusal (抱歉，我无法判断) or a blank answer (no letter or number: "", "……",
"。") no answer (convbench's rules: see the metric card); knowing the dialogue, a quoted turn matches the gold clause inside it and a near copy names the
sentence it copies. Per dialogue P = matching predictions / predictions and
R = matched gold / gold (both empty: 1; one empty: 0). P and R are averaged over dialogues and F1 is the
harmonic mean of the averages, over all dialogues and over those containing unnatural sentences
(None when no dialogue contains any). Percentages (0-100).
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: list of str, the model's raw answers.
    references: list of list of str, the gold unnatural sentences of each dialogue (possibly empty).
    dialogues: optional list of list of str, each dialogue's turns: a line quoting one is a prediction
        (convbench run nico passes them; the scores can differ without them).
    match: "exact" (after removing whitespace and punctuation; default) or "fuzzy".
    threshold: for fuzzy matching, the least character-level LCS F-measure, in [0, 1] (default 0.8).
    blank_answer: "unanswered" (default: a blank answer, with no letter or number, is no answer, scored 0)
        or "none" (it is the answer "none": 1 on a dialogue without unnatural sentences).
    return_rows: optional bool, add per-dialogue rows.
    max_chars: refuse an answer, or a row's gold sentences or dialogue together, longer than this (default 20,000).
    max_sentences: refuse a row with more distinct gold sentences or dialogue turns, or (fuzzy) predictions (default 200).
    max_lines, max_line_chars: refuse an answer with more distinct lines (default 200) or a longer line (default 2,000).
    Each limit: None lifts it.
Returns:
    precision, recall, f1, precision_containing, recall_containing, f1_containing (None when no dialogue
    contains unnatural sentences, with a `notes` entry saying so), n, n_containing, none_answers,
    ignored_lines (preamble and comment lines not scored), empty_answers (only such lines: scored 0),
    refusals (answers that only say the model cannot tell: scored 0), blank_answers (answers with no letter
    or number), unanswered (answers scored as no answer: refusals, empty_answers and, by default,
    blank_answers), signature.
Examples:
    >>> metric = evaluate.load("metrics/unnatural_sentence_prf")
    >>> out = metric.compute(predictions=["无", "无"], references=[[], ["我对于此事表示赞同。"]])
    >>> out["f1"], out["f1_containing"]
    (50.0, 0.0)
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class UnnaturalSentencePrf(evaluate.Metric):
    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=citation(),
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {"predictions": datasets.Value("string"), "references": datasets.Sequence(datasets.Value("string"))}
            ),
            reference_urls=["https://arxiv.org/abs/2408.09330"],
        )

    def _compute(self, predictions, references, dialogues=None, match="exact", threshold=0.8,
                 blank_answer="unanswered", return_rows=False, max_chars=MAX_TEXT_CHARS, max_sentences=MAX_SENTENCES,
                 max_lines=MAX_ANSWER_LINES, max_line_chars=MAX_LINE_CHARS):
        return score_unnatural(predictions, references, dialogues=dialogues, match=match, threshold=threshold,
                               blank_answer=blank_answer, return_rows=return_rows, max_chars=max_chars,
                               max_sentences=max_sentences, max_lines=max_lines, max_line_chars=max_line_chars)
