"""nico_generation against sacrebleu and rouge-score on the same tokens, and by hand."""

from __future__ import annotations

import math
import random
import re
import time
from pathlib import Path

import pytest

from convbench_datasets.nico.nico_generation import score_generation, segment

CHARS = "我今天去超市买了很多水果你要不要来一点好的谢谢没问题明天见吧周末一起去公园散步怎么样，。？"


def _pairs(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    texts = ["".join(rng.choice(CHARS) for _ in range(rng.randint(1, 30))) for _ in range(2 * n)]
    return texts[:n], texts[n:]


@pytest.mark.parametrize("tokenizer", ["char", "jieba"])
def test_bleu_equals_sacrebleu_on_the_same_tokens(tokenizer: str) -> None:
    from sacrebleu.metrics import BLEU

    predictions, references = _pairs(300)
    ours = score_generation(predictions, references, tokenizer=tokenizer)  # type: ignore[arg-type]
    hyps = [" ".join(t) for t in segment(predictions, tokenizer)]  # type: ignore[arg-type]
    refs = [" ".join(t) for t in segment(references, tokenizer)]  # type: ignore[arg-type]
    for n in (1, 2):
        expected = BLEU(tokenize="none", max_ngram_order=n).corpus_score(hyps, [refs]).score
        assert ours[f"bleu_{n}"] == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("tokenizer", ["char", "jieba"])
def test_rouge_l_equals_rouge_score_on_the_same_tokens(tokenizer: str) -> None:
    import jieba
    from rouge_score import rouge_scorer

    class Tokens:  # rouge-score's own tokenizer would delete the Chinese characters
        def tokenize(self, text: str) -> list[str]:
            pieces = jieba.lcut(text) if tokenizer == "jieba" else list(text)
            return [t for t in (p.strip() for p in pieces) if t]

    predictions, references = _pairs(300, seed=1)
    scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=Tokens())
    expected = 100 * sum(scorer.score(r, p)["rougeL"].fmeasure for p, r in zip(predictions, references)) / 300
    assert score_generation(predictions, references, tokenizer=tokenizer)["rouge_l"] == pytest.approx(expected, abs=1e-9)  # type: ignore[arg-type]


def test_distinct_and_length_by_hand() -> None:
    # char tokens: "我我你" -> unigrams 3, distinct 2 (2/3); bigrams 我我, 我你: 2 of 2 (1).
    #              "好"     -> unigrams 1, distinct 1 (1);   bigrams none: counts 0.
    # distinct_1 = (2/3 + 1) / 2 = 83.33; distinct_2 = (1 + 0) / 2 = 50; avg_len = (3 + 1) / 2 = 2.
    out = score_generation(["我我你", "好"], ["我你", "好"], tokenizer="char")
    assert out["distinct_1"] == pytest.approx(250 / 3) and out["distinct_2"] == 50.0 and out["avg_len"] == 2.0
    # corpus level: unigrams 我,我,你,好 -> 3 distinct of 4 = 75; bigrams 我我, 我你 -> 2 of 2 = 100.
    corpus = score_generation(["我我你", "好"], ["我你", "好"], tokenizer="char", distinct_level="corpus")
    assert corpus["distinct_1"] == 75.0 and corpus["distinct_2"] == 100.0


def test_jieba_segmentation_and_english_13a() -> None:
    assert segment(["我今天去超市"], "jieba")[0] == ["我", "今天", "去", "超市"]
    assert segment(["我今天 去"])[0] == ["我", "今", "天", "去"]  # the default: characters, spaces dropped
    out = score_generation(["Hello, world!"], ["Hello, world!"], tokenizer="13a")
    assert out["avg_len"] == 4.0 and out["rouge_l"] == 100.0  # Hello , world !


def test_per_interaction_type() -> None:
    out = score_generation(["好啊", "不行"], ["好啊", "可以"], tokenizer="char", interaction_types=["cooperation", "conflict"])
    assert out["per_interaction_type"]["cooperation"]["rouge_l"] == 100.0
    assert out["per_interaction_type"]["conflict"]["rouge_l"] == 0.0 and out["per_interaction_type"]["conflict"]["n"] == 1
    assert out["rouge_l"] == 50.0


def test_bertscore_with_a_tiny_local_bert(tmp_path: Path) -> None:
    pytest.importorskip("bert_score", reason="BERTScore needs the bertscore extra")
    from tests.support.tiny_models import build_tiny_bert

    model = build_tiny_bert(tmp_path / "bert", CHARS)
    options = {"num_layers": 2, "batch_size": 4}
    same = score_generation(["我今天很开心", "好的"], ["我今天很开心", "好的"], bertscore=True,
                            bertscore_model=str(model), bertscore_options=options)
    assert same["bertscore_f1"] == pytest.approx(100.0, abs=1e-4)  # identical texts: cosine 1 everywhere
    different = score_generation(["去公园散步"], ["谢谢没问题"], bertscore=True, bertscore_model=str(model),
                                 bertscore_options=options)
    assert different["bertscore_f1"] < 100.0 and same["signature"]["bertscore_model"] == str(model)
    # the signature names everything that changes the number (bert-score's defaults: no idf, no rescaling)
    from importlib.metadata import version

    assert {k: same["signature"][k] for k in ("bertscore_version", "bertscore_layer", "bertscore_idf",
                                              "bertscore_rescale_with_baseline")} == {
        "bertscore_version": version("bert-score"), "bertscore_layer": 2, "bertscore_idf": False,
        "bertscore_rescale_with_baseline": False}
    with_idf = score_generation(["我今天很开心", "好的"], ["我今天很开心", "好的"], bertscore=True,
                                bertscore_model=str(model), bertscore_options={**options, "idf": True})
    assert with_idf["signature"]["bertscore_idf"] is True


@pytest.mark.parametrize(
    "kwargs,error,message",
    [
        ({"predictions": [], "references": []}, ValueError, "no predictions"),
        ({"predictions": ["a"], "references": ["a", "b"]}, ValueError, "1 predictions but 2 references"),
        ({"predictions": [None], "references": ["a"]}, TypeError, "row 0: field 'predictions' must be a string"),
        ({"predictions": ["a"], "references": ["a"], "tokenizer": "spaces"}, ValueError, "unknown tokenizer"),
    ],
)
def test_bad_input(kwargs: dict, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        score_generation(**kwargs)


def test_worker_processes_give_the_same_numbers() -> None:
    from convbench_datasets.nico.nico_generation import PARALLEL_MIN_PAIRS

    predictions, references = _pairs(PARALLEL_MIN_PAIRS, seed=3)
    types = ["exchange", "conflict"] * (PARALLEL_MIN_PAIRS // 2)
    parallel = score_generation(predictions, references, workers=2, interaction_types=types)
    single = score_generation(predictions, references, workers=1, interaction_types=types)
    assert parallel == single


def test_bleu_brevity_penalty_by_hand() -> None:
    # char tokens: prediction 我 很 好 呀 (c = 4), reference 我 很 好 你 呢 啊 (r = 6): shorter, so
    # BP = exp(1 - r/c) = exp(-0.5). Unigrams 3 of 4 match; bigrams 我很, 很好 match of 我很, 很好, 好呀: 2/3.
    # BLEU-1 = exp(-0.5) * 3/4 = 45.4898; BLEU-2 = exp(-0.5) * sqrt(3/4 * 2/3) = 42.8882.
    out = score_generation(["我很好呀"], ["我很好你呢啊"], tokenizer="char")
    assert out["bleu_1"] == pytest.approx(100 * math.exp(-0.5) * 3 / 4, abs=1e-9)
    assert out["bleu_2"] == pytest.approx(100 * math.exp(-0.5) * math.sqrt(1 / 2), abs=1e-9)
    # no penalty when the prediction is the longer one: 我 很 好 你 呢 啊 呀 vs 我 很 好: P1 = 3/7, BP = 1
    assert score_generation(["我很好你呢啊呀"], ["我很好"], tokenizer="char")["bleu_1"] == pytest.approx(300 / 7, abs=1e-9)


def test_bleu_brevity_penalty_equals_sacrebleu_on_short_predictions() -> None:
    from sacrebleu.metrics import BLEU

    # Predictions are the first half of other texts, so the corpus is about half the references' length
    # and the brevity penalty dominates. Expected values: sacrebleu on the module's own jieba tokens
    # (tokenize="none"), and on characters with sacrebleu's independent "zh" tokenizer (one token per
    # Chinese character or punctuation mark, as tokenizer="char" here).
    predictions, references = _pairs(200, seed=5)
    predictions = [p[: max(1, len(p) // 2)] for p in predictions]
    hyps, refs = ([" ".join(t) for t in segment(texts, "jieba")] for texts in (predictions, references))
    assert sum(len(h.split()) for h in hyps) < 0.7 * sum(len(r.split()) for r in refs)
    ours, chars = score_generation(predictions, references, tokenizer="jieba"), score_generation(predictions, references)
    for n in (1, 2):
        assert ours[f"bleu_{n}"] == pytest.approx(BLEU(tokenize="none", max_ngram_order=n).corpus_score(hyps, [refs]).score, abs=1e-9)
        zh = BLEU(tokenize="zh", max_ngram_order=n).corpus_score(predictions, [references]).score
        assert chars[f"bleu_{n}"] == pytest.approx(zh, abs=1e-9)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"predictions": ["a", "b"], "references": ["a", None]}, "row 1: field 'references' must be a string, got NoneType"),
        ({"predictions": None, "references": ["a"]}, "field 'predictions' must be a list with one item per row, got NoneType"),
        ({"predictions": "ab", "references": ["a", "b"]}, "field 'predictions' must be a list with one item per row, got str"),
        # used to become a silent None group in per_interaction_type, or "unhashable type: 'list'"
        ({"predictions": ["a"], "references": ["a"], "interaction_types": [None]}, "row 0: field 'interaction_types' must be a string, got NoneType"),
        ({"predictions": ["a"], "references": ["a"], "interaction_types": [["x"]]}, "row 0: field 'interaction_types' must be a string, got list"),
    ],
)
def test_missing_or_mistyped_inputs_name_the_row_and_field(kwargs: dict, message: str) -> None:
    from convbench_datasets.errors import ConvbenchError

    with pytest.raises(ConvbenchError, match=re.escape(message)):
        score_generation(**kwargs)


def test_pathological_lengths_are_refused_before_any_work(monkeypatch: pytest.MonkeyPatch) -> None:
    from convbench_datasets.errors import ConvbenchError
    from convbench_datasets.nico import nico_generation

    def no_work(*args: object, **kwargs: object) -> None:
        raise AssertionError("segmentation or ROUGE-L started before the length check")

    huge = "我" * (10 * 2**20)  # 10 MiB of characters: jieba and the LCS would run for minutes
    monkeypatch.setattr(nico_generation, "pair_statistics", no_work)
    start = time.monotonic()
    with pytest.raises(ConvbenchError, match="row 1: field 'references' is 10,485,760 characters long, over the limit of 20,000"):
        score_generation(["好", "好"], ["好", huge], tokenizer="char")
    assert time.monotonic() - start < 10  # a fail-fast bound, not a timing: without the check, minutes
    monkeypatch.undo()
    # the cap is an option: 6 characters are over max_chars=5; max_chars=None lifts the cap
    with pytest.raises(ConvbenchError, match="row 0: field 'predictions' is 6 characters long, over the limit of 5"):
        score_generation(["我今天很开心"], ["好"], tokenizer="char", max_chars=5)
    assert score_generation(["我今天很开心"], ["我今天很开心"], tokenizer="char", max_chars=None)["rouge_l"] == 100.0
    with pytest.raises(ConvbenchError, match="max_chars must be a positive number"):
        score_generation(["好"], ["好"], max_chars=-1)


def test_columns_from_to_pandas_numpy_arrays_score_as_lists() -> None:
    # The numpy arrays Dataset.to_pandas() gives (issue #10 review): a string column is accepted whole
    # (np.str_ rows are strings); expected: the scores of the same columns as lists.
    import datasets

    rows = {"prediction": ["我今天很开心", "好啊，我同意！"], "reference": ["我今天很开心", "行，我同意。"], "kind": ["a", "b"]}
    frame = datasets.Dataset.from_dict(rows).to_pandas()
    expected = score_generation(rows["prediction"], rows["reference"], interaction_types=rows["kind"], tokenizer="char")
    got = score_generation(frame["prediction"].to_numpy(), frame["reference"].to_numpy(dtype=str),
                           interaction_types=frame["kind"].to_numpy(), tokenizer="char")
    assert got == expected


def _bert_score_f1(predictions: list[str], references: list[str], model: Path, layer: int) -> float:
    """The reference: bert-score itself, told the layer, on the same texts."""
    import bert_score

    _, _, f1 = bert_score.score(predictions, references, model_type=str(model), num_layers=layer, lang="zh",
                                batch_size=4, verbose=False)
    return 100.0 * float(f1.mean())


PREDICTIONS, REFERENCES = ["我今天很开心", "去公园散步", "好的"], ["今天我很开心", "谢谢没问题", "好的吧"]


def test_bertscore_layer_is_inferred_for_a_local_folder(tmp_path: Path) -> None:
    # Before: bert_score.score looked the folder up in its layer table and raised KeyError unless
    # num_layers was given. Now: 2/3 of the model's 2 layers, rounded half up = 1 (DEFAULT_LAYER_FRACTION).
    pytest.importorskip("bert_score", reason="BERTScore needs the bertscore extra")
    from tests.support.tiny_models import build_tiny_bert

    model = build_tiny_bert(tmp_path / "bert", CHARS)
    out = score_generation(PREDICTIONS, REFERENCES, bertscore=True, bertscore_model=str(model),
                           bertscore_options={"batch_size": 4})
    assert out["signature"]["bertscore_layer"] == 1 and out["signature"]["bertscore_layer_rule"].startswith("default")
    assert out["bertscore_f1"] == pytest.approx(_bert_score_f1(PREDICTIONS, REFERENCES, model, 1), abs=1e-6)
    given = score_generation(PREDICTIONS, REFERENCES, bertscore=True, bertscore_model=str(model),
                             bertscore_options={"batch_size": 4, "num_layers": 2})
    assert given["signature"]["bertscore_layer"] == 2 and given["signature"]["bertscore_layer_rule"] == "given"
    assert given["bertscore_f1"] == pytest.approx(_bert_score_f1(PREDICTIONS, REFERENCES, model, 2), abs=1e-6)
    assert given["bertscore_f1"] != out["bertscore_f1"]  # the layer matters, so the signature records it


def test_bertscore_uses_bert_scores_own_layer_for_known_models(tmp_path: Path) -> None:
    # bert-score's table (bert_score.utils.model2layers) gives bert-base-chinese layer 8: by name (no
    # download: a table look-up), for a folder named after it, and for a Hugging Face cache snapshot of it.
    pytest.importorskip("bert_score", reason="BERTScore needs the bertscore extra")
    import shutil

    from bert_score.utils import model2layers

    from convbench_datasets.scoring.bertscore import resolve_layer
    from tests.support.tiny_models import build_tiny_bert

    assert model2layers["bert-base-chinese"] == 8
    assert resolve_layer("bert-base-chinese").layer == 8
    folder = build_tiny_bert(tmp_path / "bert-base-chinese", CHARS, layers=12)  # bert-base-chinese's depth
    snapshot = tmp_path / "hub" / "models--bert-base-chinese" / "snapshots" / "0123abcd"
    shutil.copytree(folder, snapshot)
    assert resolve_layer(str(folder)).layer == 8 and resolve_layer(str(snapshot)).layer == 8
    # a folder with that name but fewer layers than 8 is not that model: the default, 2/3 of 2 -> 1
    shallow = build_tiny_bert(tmp_path / "small" / "bert-base-chinese", CHARS)
    assert resolve_layer(str(shallow)) == (1, "default: 2/3 of the model's 2 layers")
    out = score_generation(PREDICTIONS, REFERENCES, bertscore=True, bertscore_model=str(folder),
                           bertscore_options={"batch_size": 4})
    assert out["signature"]["bertscore_layer"] == 8
    assert out["bertscore_f1"] == pytest.approx(_bert_score_f1(PREDICTIONS, REFERENCES, folder, 8), abs=1e-6)


def test_bertscore_failing_offline_keeps_the_other_scores(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Before: the model load raised (after 12-16 s of retries offline) and BLEU/ROUGE/Distinct were lost.
    pytest.importorskip("bert_score", reason="BERTScore needs the bertscore extra")
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # offline at once: no retries, no network
    plain = score_generation(PREDICTIONS, REFERENCES)
    for model, says in (("convbench-test/no-such-bert", "huggingface-cli download convbench-test/no-such-bert --local-dir DIR"),
                        (str(tmp_path / "missing"), "there is no model folder")):
        with pytest.warns(UserWarning, match="BERTScore not computed"):  # said, as well as recorded
            out = score_generation(PREDICTIONS, REFERENCES, bertscore=True, bertscore_model=model)
        assert {k: out[k] for k in plain if k != "signature"} == {k: v for k, v in plain.items() if k != "signature"}
        assert out["bertscore_f1"] is None and out["signature"]["bertscore_model"] == model
        assert model in out["bertscore_error"] and says in out["bertscore_error"]
        assert "\n" not in out["bertscore_error"]


def test_bertscore_options_are_checked_before_any_work() -> None:
    pytest.importorskip("bert_score", reason="BERTScore needs the bertscore extra")
    from convbench_datasets.errors import ConvbenchError

    with pytest.raises(ConvbenchError, match=re.escape("bertscore num_layers must be a whole number of at least 0, got -1")):
        score_generation(["好"], ["好"], bertscore=True, bertscore_options={"num_layers": -1})


@pytest.mark.parametrize("options", [{}, {"rescale_with_baseline": True}, {"idf": True},
                                     {"idf": True, "rescale_with_baseline": True}])
def test_bertscore_signature_records_what_was_passed(monkeypatch: pytest.MonkeyPatch, options: dict,
                                                     tmp_path: Path) -> None:
    # bert-score's rescaling needs its baseline file for the model, which a tiny local model has none of
    # (bert-score then warns and does not rescale), so the signature builder is checked with bert-score's
    # score() stubbed (and a baseline file given): what reaches bert_score.score is what the signature says.
    pytest.importorskip("bert_score", reason="BERTScore needs the bertscore extra")
    import bert_score
    import torch

    from convbench_datasets.scoring.bertscore import compute_bertscore

    passed: dict = {}

    def fake_score(candidates, references, **kwargs):
        passed.update(kwargs)
        half = torch.full((len(candidates),), 0.5)
        return half, half, half

    monkeypatch.setattr(bert_score, "score", fake_score)
    if options.get("rescale_with_baseline"):
        (tmp_path / "baseline.tsv").write_text("LAYER\tP\tR\tF\n", encoding="utf-8")
        options = {**options, "baseline_path": str(tmp_path / "baseline.tsv")}
    out = compute_bertscore(["好的"], ["行"], "convbench-test/any", {"num_layers": 2, **options})
    assert out["bertscore_f1"] == 50.0
    signature = out["signature"]
    assert signature["bertscore_rescale_with_baseline"] is bool(options.get("rescale_with_baseline"))
    assert signature["bertscore_idf"] is bool(options.get("idf"))
    assert bool(passed.get("rescale_with_baseline")) is signature["bertscore_rescale_with_baseline"]
    assert bool(passed.get("idf")) is signature["bertscore_idf"]
    assert (signature["bertscore_model"], signature["bertscore_layer"], passed["num_layers"]) == ("convbench-test/any", 2, 2)


def test_bertscore_error_says_how_to_provide_the_model() -> None:
    # A hub name that cannot be loaded: the error names the model, how to download it once, and the
    # library and CLI options that take the folder.
    from convbench_datasets.scoring.bertscore import _failure

    message = _failure("bert-base-chinese", OSError("We couldn't connect to 'https://huggingface.co'\nmore"))
    assert message.startswith("BERTScore not computed: model 'bert-base-chinese' could not be loaded or run "
                              "(OSError: We couldn't connect to 'https://huggingface.co')")
    assert "huggingface-cli download bert-base-chinese --local-dir DIR" in message
    assert "bertscore_model=DIR" in message and "convbench run nico --bertscore DIR" in message
    assert "\n" not in message


def test_rescaling_without_a_baseline_file_is_a_bertscore_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    # bert-score prints a warning and returns unrescaled scores when the model has no baseline file; the
    # signature would then claim rescaled numbers. convbench says BERTScore failed instead (the rest kept)
    pytest.importorskip("bert_score", reason="BERTScore needs the bertscore extra")
    import bert_score

    monkeypatch.setattr(bert_score, "score", lambda *a, **k: pytest.fail("scored without the baseline"))
    with pytest.warns(UserWarning, match="rescale_with_baseline needs a baseline file, and there is none at "):
        out = score_generation(["好的"], ["行"], bertscore=True, bertscore_model="convbench-test/any",
                               bertscore_options={"num_layers": 2, "rescale_with_baseline": True})
    assert out["bertscore_f1"] is None and "convbench-test/any.tsv" in out["bertscore_error"]
    assert out["bleu_1"] == 0.0 and out["n"] == 1  # the other scores are kept (no shared character: BLEU-1 0)


def test_bleu_2_is_smoothed_when_no_bigram_matches_in_the_corpus() -> None:
    from sacrebleu.metrics import BLEU

    # By hand, char tokens: predictions 我 好 and 你 呢 against 好 我 and 呢 你: every unigram matches (4 of 4),
    # no bigram does (0 of 2), c = r = 4 (no brevity penalty). sacrebleu's default "exp" smoothing (its
    # BLEU.compute_bleu) replaces the k-th zero precision by 1 / (2^k x total): the bigram precision is
    # 1 / (2 x 2) = 1/4, so BLEU-2 = sqrt(1 x 1/4) = 50 (unsmoothed: 0; "floor": 22.36; "add-k": 57.74).
    out = score_generation(["我好", "你呢"], ["好我", "呢你"], tokenizer="char")
    assert out["bleu_1"] == pytest.approx(100.0, abs=1e-9)
    assert out["bleu_2"] == pytest.approx(50.0, abs=1e-9)
    # the same number from sacrebleu itself on the same tokens
    assert BLEU(tokenize="none", max_ngram_order=2).corpus_score(["我 好", "你 呢"], [["好 我", "呢 你"]]).score == (
        pytest.approx(50.0, abs=1e-9))
