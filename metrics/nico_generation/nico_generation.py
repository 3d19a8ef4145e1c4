# An evaluate module over convbench's scoring code: the logic lives in
# convbench_datasets.nico.nico_generation and is callable without evaluate.
from __future__ import annotations

import datasets
import evaluate

from convbench_datasets.nico.references import citation
from convbench_datasets.nico.nico_generation import MAX_TEXT_CHARS
from convbench_datasets.nico.nico_generation import score_generation

_DESCRIPTION = """
NICO generation metrics for Chinese dialogue: BLEU-1/2 (corpus, sacrebleu's formula, cumulative BLEU-2),
ROUGE-L (LCS F1, mean over pairs), Distinct-1/2 (per response, averaged), average length in tokens, and
optional BERTScore F1, all on one segmentation of each text into characters (the NICO paper's unit, by its
numbers) or jieba words. Scores are percentages (0-100) except avg_len.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions: list of str, generated turns.
    references: list of str, one human reference turn each.
    tokenizer: "char" (default), "jieba" or "13a" (English).
    distinct_level: "response" (default) or "corpus".
    bleu_level: "corpus" (default) or "sentence" (the mean of sacrebleu's sentence BLEU).
    bleu_ngrams: "cumulative" (default: BLEU-2 from the 1- and 2-gram precisions) or "individual".
    rouge_l_f: "f1" (default) or "p/r" (beta = P/R, as the rouge and rouge-chinese packages).
    interaction_types: optional list of str (or the interaction_type column's ClassLabel ids), for
        per_interaction_type tables.
    bertscore: optional bool, add bertscore_f1 (needs the bertscore extra and a model).
    bertscore_model: model name or local folder for BERTScore (default bert-base-chinese).
    bertscore_options: optional dict passed to bert_score.score (num_layers, batch_size, device...);
        without num_layers the layer is bert-score's for known models, else 2/3 of the model's depth.
    max_chars: refuse a text longer than this many characters (default 20,000; None: no limit).
Returns:
    bleu_1, bleu_2, rouge_l, distinct_1, distinct_2, avg_len, n, signature; bertscore_f1 when asked (None,
    with bertscore_error naming the model, when it cannot be loaded: the other scores are kept);
    per_interaction_type when interaction_types are given.
Examples:
    >>> metric = evaluate.load("metrics/nico_generation")
    >>> out = metric.compute(predictions=["我今天很开心"], references=["我今天很开心"])
    >>> round(out["bleu_1"], 6), round(out["rouge_l"], 6), out["avg_len"]
    (100.0, 100.0, 6.0)
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class NicoGeneration(evaluate.Metric):
    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=citation(),
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")}),
            reference_urls=["https://arxiv.org/abs/2408.09330"],
        )

    def _compute(self, predictions, references, tokenizer="char", distinct_level="response", bleu_level="corpus",
                 bleu_ngrams="cumulative", rouge_l_f="f1", interaction_types=None, bertscore=False,
                 bertscore_model="bert-base-chinese", bertscore_options=None, max_chars=MAX_TEXT_CHARS):
        return score_generation(
            predictions, references, tokenizer=tokenizer, distinct_level=distinct_level, bleu_level=bleu_level,
            bleu_ngrams=bleu_ngrams, rouge_l_f=rouge_l_f, interaction_types=interaction_types, bertscore=bertscore,
            bertscore_model=bertscore_model, bertscore_options=bertscore_options, max_chars=max_chars,
        )
