"""A blank prediction or reference gets bert-score's own score for an empty text, and BERTScore survives it.

bert-score 0.3.13 sets the raw P, R and F of a pair with an empty text to 0 (``greedy_cos_idf``,
"Empty candidate sentence detected"), but under transformers 5 it never gets there: ``sent_encode``
calls ``build_inputs_with_special_tokens``, which transformers 5 removed, so one blank text failed
BERTScore for the whole run. The expected values below are bert-score itself on the non-blank pairs,
with 0 (or 0 rescaled by bert-score's formula) for each blank one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from convbench_datasets.nico.nico_generation import score_generation

CHARS = "我今天去超市买了很多水果你要不要来一点好的谢谢没问题明天见吧周末一起去公园散步怎么样，。？"
PREDICTIONS = ["我今天很开心", "", "去公园散步", "  \n"]
REFERENCES = ["今天我很开心", "我今天没问题", "周末一起去公园散步", "今天去公园吧"]  # sharing characters: idf varies
KEPT = [0, 2]  # the pairs with no blank text
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # a failure would warn; the tests check the values


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("bert_score", reason="BERTScore needs the bertscore extra")
    from tests.support.tiny_models import build_tiny_bert

    return build_tiny_bert(tmp_path_factory.mktemp("bert") / "bert", CHARS)


def _bert_score_f1s(predictions: list[str], references: list[str], model: Path, **options: object) -> list[float]:
    import bert_score

    _, _, f1 = bert_score.score(predictions, references, model_type=str(model), num_layers=2, lang="zh",
                                verbose=False, **options)
    return f1.tolist()


def test_bert_score_itself_fails_on_a_blank_text_here(tiny_bert: Path) -> None:
    # why convbench scores blank pairs itself (if bert-score handles them one day, this test says so)
    import transformers

    if int(transformers.__version__.split(".")[0]) < 5:
        pytest.skip("bert-score reaches its own empty-text rule before transformers 5")
    with pytest.raises(AttributeError, match="build_inputs_with_special_tokens"):
        _bert_score_f1s(["", "好的"], ["好的", "好的"], tiny_bert)


def test_blank_predictions_score_zero_and_the_rest_is_bert_scores(tiny_bert: Path) -> None:
    out = score_generation(PREDICTIONS, REFERENCES, bertscore=True, bertscore_model=str(tiny_bert),
                           bertscore_options={"num_layers": 2})
    kept = _bert_score_f1s([PREDICTIONS[i] for i in KEPT], [REFERENCES[i] for i in KEPT], tiny_bert)
    assert out["bertscore_f1"] == pytest.approx(100 * (sum(kept) + 0.0 + 0.0) / 4, abs=1e-5)
    assert out["bertscore_blank_pairs"] == 2 and "bertscore_error" not in out
    assert out["bleu_1"] is not None and out["n"] == 4  # the other scores as always


def test_a_blank_reference_is_scored_the_same_way(tiny_bert: Path) -> None:
    out = score_generation(["好的", "谢谢"], ["好的", ""], bertscore=True, bertscore_model=str(tiny_bert),
                           bertscore_options={"num_layers": 2})
    assert out["bertscore_f1"] == pytest.approx(100 * (_bert_score_f1s(["好的"], ["好的"], tiny_bert)[0] + 0.0) / 2,
                                                abs=1e-5)
    assert out["bertscore_blank_pairs"] == 1


def test_without_blanks_nothing_changes(tiny_bert: Path) -> None:
    predictions, references = [PREDICTIONS[i] for i in KEPT], [REFERENCES[i] for i in KEPT]
    out = score_generation(predictions, references, bertscore=True, bertscore_model=str(tiny_bert),
                           bertscore_options={"num_layers": 2})
    assert out["bertscore_f1"] == pytest.approx(100 * sum(_bert_score_f1s(predictions, references, tiny_bert)) / 2,
                                                abs=1e-5)
    assert out["bertscore_blank_pairs"] == 0


def test_idf_weights_come_from_every_reference(tiny_bert: Path) -> None:
    # bert-score computes idf over all the call's references (get_idf_dict): the blank pairs' references
    # count too, so the non-blank pairs are scored with bert-score's weights over all four.
    from bert_score.utils import get_idf_dict, get_tokenizer

    weights = get_idf_dict(REFERENCES, get_tokenizer(str(tiny_bert)), nthreads=0)
    kept = _bert_score_f1s([PREDICTIONS[i] for i in KEPT], [REFERENCES[i] for i in KEPT], tiny_bert, idf=weights)
    out = score_generation(PREDICTIONS, REFERENCES, bertscore=True, bertscore_model=str(tiny_bert),
                           bertscore_options={"num_layers": 2, "idf": True})
    assert out["bertscore_f1"] == pytest.approx(100 * sum(kept) / 4, abs=1e-5)
    only_kept = _bert_score_f1s([PREDICTIONS[i] for i in KEPT], [REFERENCES[i] for i in KEPT], tiny_bert, idf=True)
    assert sum(only_kept) != pytest.approx(sum(kept), abs=1e-5)  # the weights over two references differ


def test_rescaled_blank_is_zero_rescaled(tiny_bert: Path, tmp_path: Path) -> None:
    # bert-score: (F - b) / (1 - b), b the baseline file's F for the layer (row 2 here: 0.3), so a blank
    # pair's 0 becomes -0.3 / 0.7
    baseline = tmp_path / "baseline.tsv"
    baseline.write_text("LAYER,P,R,F\n0,0.1,0.1,0.1\n1,0.2,0.2,0.2\n2,0.25,0.28,0.3\n", encoding="utf-8")
    options = {"rescale_with_baseline": True, "baseline_path": str(baseline)}
    kept = _bert_score_f1s([PREDICTIONS[i] for i in KEPT], [REFERENCES[i] for i in KEPT], tiny_bert, **options)
    out = score_generation(PREDICTIONS, REFERENCES, bertscore=True, bertscore_model=str(tiny_bert),
                           bertscore_options={"num_layers": 2, **options})
    assert out["bertscore_f1"] == pytest.approx(100 * (sum(kept) + 2 * (-0.3 / 0.7)) / 4, abs=1e-5)
