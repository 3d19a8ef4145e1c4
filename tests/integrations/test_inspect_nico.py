"""NICO under inspect_ai: generation and identification scored by convbench over the epoch, offline.

Each test serves the same scripted answers to an inspect eval and to ``run_nico``; the numbers
inspect reports must be convbench's, corpus statistics included.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("inspect_ai", reason="inspect_ai is not installed (pip install -e \".[inspect]\")")
# inspect's retry set-up calls tenacity with a parameter tenacity deprecates, once per model call
pytestmark = pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated:DeprecationWarning")

from convbench_datasets.integrations.inspect import import_inspect_log, nico  # noqa: E402
from convbench_datasets import run_nico  # noqa: E402
from convbench_datasets.scoring.nico_generation import score_generation  # noqa: E402
from tests.integrations.inspect_support import ScriptedBackend, inspect_model, pick, reported, run_inspect  # noqa: E402
from tests.support.scripted import GENERATION_KEYS, IDENTIFY_KEYS, TURNS, nico_finder, nico_turn  # noqa: E402

turn = nico_turn


def finder(messages: list[dict[str, str]]) -> str:
    return nico_finder(messages, from_end=False)


@pytest.mark.parametrize("task", ["open_domain", "dialog_completion", "rewrite_unnatural"])
def test_generation_metrics_are_convbench_corpus_scores(task: str, nico_built: Path, tmp_path: Path) -> None:
    log = run_inspect(nico(task=task, split="train", dataset=str(nico_built)), inspect_model(turn), tmp_path / "logs")
    run = run_nico(task=task, model=ScriptedBackend(turn), out=tmp_path / "run", split="train", dataset=nico_built,
                   cache=tmp_path / "c.sqlite", progress=False)
    metrics = reported(log)
    # Expected values: convbench's own run of the same answers (score_generation over all turns).
    assert {key: metrics[key] for key in GENERATION_KEYS} == {key: run.results[key] for key in GENERATION_KEYS}
    assert set(metrics) == set(GENERATION_KEYS)
    assert len(log.samples) == run.results["n"] >= 7  # the sample build: 18 train dialogues, 7 unnatural edits
    # Corpus BLEU is not the mean of the samples' own BLEU: inspect's number is the corpus statistic.
    per_sample = [score_generation([s.scores["nico_turn"].metadata["turn"]], [s.metadata["reference"]])["bleu_2"]
                  for s in log.samples]
    assert metrics["bleu_2"] != pytest.approx(sum(per_sample) / len(per_sample))
    # Speaker labels and quotes were read off, as convbench run does.
    assert {s.scores["nico_turn"].answer for s in log.samples} <= {
        "好啊，我同意！", "行吧，那就这么定了。", "我觉得还是再考虑一下比较好，毕竟价格有点高。", "嗯嗯，对对对。",
        "你说得对，我们明天一起去吧。"}
    imported = import_inspect_log(log, tmp_path / "imported")
    for key in (*GENERATION_KEYS, "per_interaction_type", "n", "errors", "row_ids"):
        assert imported.results[key] == run.results[key], key
    assert [r["turn"] for r in imported.records] == [r["turn"] for r in run.records]
    for key in ("benchmark", "task", "split", "shots", "rows", "dataset_fingerprint", "prompt_templates_sha256"):
        assert imported.results["signature"][key] == run.results["signature"][key], key


def test_identification_prf_is_convbench_macro_average(nico_built: Path, tmp_path: Path) -> None:
    log = run_inspect(nico(task="identify_unnatural", shots=3, split="train", dataset=str(nico_built)),
                      inspect_model(finder), tmp_path / "logs")
    run = run_nico(task="identify_unnatural", shots=3, model=ScriptedBackend(finder), out=tmp_path / "run",
                   split="train", dataset=nico_built, cache=tmp_path / "c.sqlite", progress=False)
    metrics = reported(log)
    assert {key: metrics[key] for key in IDENTIFY_KEYS} == {key: run.results[key] for key in IDENTIFY_KEYS}
    # F1 is the harmonic mean of the averaged P and R (convbench's rule), not an average of per-row F1
    precision, recall = metrics["precision"], metrics["recall"]
    assert metrics["f1"] == pytest.approx(2 * precision * recall / (precision + recall))
    assert 0 < metrics["f1"] < 100
    imported = import_inspect_log(log, tmp_path / "imported")
    for key in (*IDENTIFY_KEYS, "n", "n_containing", "none_answers", "errors"):
        assert imported.results[key] == run.results[key], key
    assert [r["predicted"] for r in imported.records] == [r["predicted"] for r in run.records]


def test_an_answer_too_long_to_score_is_an_error_scored_empty(nico_built: Path, tmp_path: Path) -> None:
    def rambling(messages: list[dict[str, str]]) -> str:
        answer = turn(messages)
        return "好" * 20_001 if answer == "嗯嗯，对对对。" else answer

    log = run_inspect(nico(task="open_domain", split="train", dataset=str(nico_built)), inspect_model(rambling),
                      tmp_path / "logs")
    run = run_nico(task="open_domain", model=ScriptedBackend(rambling), out=tmp_path / "run", split="train",
                   dataset=nico_built, cache=tmp_path / "c.sqlite", progress=False)
    errors = [s for s in log.samples if s.scores["nico_turn"].metadata["error"] is not None]
    assert len(errors) == run.results["errors"] > 0
    assert all(s.scores["nico_turn"].metadata["turn"] == "" for s in errors)
    assert {key: reported(log)[key] for key in GENERATION_KEYS} == {key: run.results[key] for key in GENERATION_KEYS}
    assert import_inspect_log(log, tmp_path / "imported").results["errors"] == run.results["errors"]


def test_bad_task_arguments_are_named(nico_built: Path) -> None:
    with pytest.raises(ValueError, match="unknown NICO task 'chat'"):
        nico(task="chat", dataset=str(nico_built))
    with pytest.raises(ValueError, match="shots must be 0 or 3, got 2"):
        nico(shots=2, dataset=str(nico_built))
    with pytest.raises(ValueError, match="tokenizer must be one of jieba, char, 13a, got 'words'"):
        nico(tokenizer="words", dataset=str(nico_built))


def test_bertscore_is_convbench_s_over_the_epoch(nico_built: Path, tmp_path: Path) -> None:
    pytest.importorskip("bert_score", reason="BERTScore needs the bertscore extra")
    from tests.support.tiny_models import build_tiny_bert

    model = str(build_tiny_bert(tmp_path / "bert", "".join(TURNS) + "我你他好的是不"))  # other characters: [UNK]
    log = run_inspect(nico(task="open_domain", split="train", dataset=str(nico_built), bertscore_model=model,
                           bertscore_layer=2), inspect_model(turn), tmp_path / "logs")
    run = run_nico(task="open_domain", model=ScriptedBackend(turn), out=tmp_path / "run", split="train",
                   dataset=nico_built, cache=tmp_path / "c.sqlite", bertscore=True, bertscore_model=model,
                   bertscore_layer=2, progress=False)
    assert 0 < run.results["bertscore_f1"] < 100
    assert reported(log)["bertscore_f1"] == run.results["bertscore_f1"]
    assert import_inspect_log(log, tmp_path / "imported").results["bertscore_f1"] == run.results["bertscore_f1"]
