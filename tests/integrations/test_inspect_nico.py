"""NICO under inspect_ai: generation and identification scored by convbench over the epoch, offline.

Each test serves the same scripted answers to an inspect eval and to ``run_nico``; the numbers
inspect reports must be convbench's, corpus statistics included.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("inspect_ai", reason="inspect_ai is not installed (pip install -e \".[inspect]\")")
# inspect's retry set-up calls tenacity with a parameter tenacity deprecates, once per model call
pytestmark = pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated:DeprecationWarning")

from convbench_datasets.integrations.inspect import nico
from convbench_datasets.runs.api import import_inspect_log# noqa: E402
from convbench_datasets.integrations.inspect._common import NO_OUTPUT  # noqa: E402
from convbench_datasets import run_nico  # noqa: E402
from convbench_datasets.engine.backends.openai_compat import OpenAICompatBackend, RetryPolicy  # noqa: E402
from convbench_datasets.nico.stderr import generation_stderr  # noqa: E402
from convbench_datasets.nico.nico_generation import pair_statistics, score_generation  # noqa: E402
from tests.integrations.conftest import NONE_LINE, NONE_LINE_ROW, quote_none_line  # noqa: E402
from tests.integrations.inspect_support import ScriptedBackend, inspect_model, pick, reported, run_inspect  # noqa: E402
from tests.support.openai_server import affected, label_for, openai_server  # noqa: E402
from tests.support.scripted import GENERATION_KEYS, IDENTIFY_KEYS, TURNS, nico_finder, nico_turn  # noqa: E402

FAST = RetryPolicy(max_retries=1, base_delay=0.01, max_delay=0.02)

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
    assert set(metrics) == {*GENERATION_KEYS, *(f"{key}_stderr" for key in GENERATION_KEYS), "n", "errors"}
    # Beside each its bootstrap standard error: 1,000 resamples (seed 0) of the samples in id order, each
    # scored as the epoch is. By hand for ROUGE-L (a mean over pairs), by convbench's bootstrap for the rest.
    ordered = sorted(run.records, key=lambda r: str(r["id"]))
    own = np.array([score_generation([r["turn"]], [r["reference"]])["rouge_l"] for r in ordered])
    draws = np.random.default_rng(0).integers(0, len(own), size=(1000, len(own)))
    assert metrics["rouge_l_stderr"] == pytest.approx(own[draws].mean(axis=1).std(ddof=1), rel=1e-9)
    stats = pair_statistics([r["turn"] for r in ordered], [r["reference"] for r in ordered])
    assert {key: metrics[f"{key}_stderr"] for key in GENERATION_KEYS} == {
        key: value for key, value in zip(GENERATION_KEYS, generation_stderr(stats).values())}
    assert all(metrics[f"{key}_stderr"] > 0 for key in ("bleu_1", "bleu_2", "rouge_l", "avg_len"))
    assert len(log.samples) == metrics["n"] == run.results["n"] >= 7  # the sample build: 18 train dialogues, 7 unnatural edits
    assert metrics["errors"] == run.results["errors"] == 0
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
    # F1's standard error: its harmonic mean recomputed on 1,000 resamples (seed 0) of the rows in id order
    ordered = sorted(run.records, key=lambda r: str(r["id"]))
    p_r = np.array([[r["precision"], r["recall"]] for r in ordered])
    draws = np.random.default_rng(0).integers(0, len(p_r), size=(1000, len(p_r)))
    p, r = p_r[draws].mean(axis=1).T
    f1 = 200 * p * r / np.maximum(p + r, 1e-300)  # 0 where a resample drew only rows with P = R = 0
    assert metrics["f1_stderr"] == pytest.approx(f1.std(ddof=1), rel=1e-9)
    assert {f"{key}_stderr" for key in IDENTIFY_KEYS} <= set(metrics)
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
                   dataset=nico_built, cache=tmp_path / "c.sqlite", progress=False, max_error_rate=1)
    errors = [s for s in log.samples if s.scores["nico_turn"].metadata["error"] is not None]
    assert len(errors) == run.results["errors"] == reported(log)["errors"] > 0
    assert all(s.scores["nico_turn"].metadata["turn"] == "" for s in errors)
    assert {key: reported(log)[key] for key in GENERATION_KEYS} == {key: run.results[key] for key in GENERATION_KEYS}
    # max_error_rate=1: the same errors as the run's, counted, not a failed import
    assert import_inspect_log(log, tmp_path / "imported", max_error_rate=1).results["errors"] == run.results["errors"]


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
    assert reported(log)["bertscore_f1_stderr"] > 0  # its bootstrap over the pairs' own F1 (tests/scoring/test_bootstrap_stderr.py)
    assert import_inspect_log(log, tmp_path / "imported").results["bertscore_f1"] == run.results["bertscore_f1"]


def test_an_identification_answer_is_read_knowing_the_dialogue(nico_none_line: Path, tmp_path: Path) -> None:
    # The reviewer's case (/tmp/rv/identify_eq.py): the model quotes a line of the dialogue that, read alone,
    # says "none" (都很自然。). convbench's runner reads it knowing the dialogue: a prediction, on a dialogue
    # without unnatural sentences, so P = R = 0 there. Every other answer is 无 ("none").
    log = run_inspect(nico(task="identify_unnatural", split="train", dataset=str(nico_none_line)),
                      inspect_model(quote_none_line), tmp_path / "logs")
    run = run_nico(task="identify_unnatural", model=ScriptedBackend(quote_none_line), out=tmp_path / "run",
                   split="train", dataset=nico_none_line, cache=tmp_path / "c.sqlite", progress=False)
    clean = [r for r in run.records if not r["gold"]]
    assert len(run.records) == 18 and len(clean) == 11  # the sample build's train split: 11 clean dialogues, 7 not
    # Hand-derived: 无 scores P = R = 1 on the 11 clean dialogues and 0 on the 7 others; the quoted line scores 0
    # on the clean sample-02. So P = R = F1 = 100 * 10/18, and 0 over the dialogues containing unnatural sentences.
    expected = {"precision": 1000 / 18, "recall": 1000 / 18, "f1": 1000 / 18,
                "precision_containing": 0.0, "recall_containing": 0.0, "f1_containing": 0.0}
    assert {key: pytest.approx(run.results[key], abs=1e-9) for key in IDENTIFY_KEYS} == expected
    metrics = reported(log)
    assert {key: metrics[key] for key in IDENTIFY_KEYS} == {key: run.results[key] for key in IDENTIFY_KEYS}
    quoted = next(s.scores["nico_identify"] for s in log.samples if s.id == NONE_LINE_ROW)
    assert quoted.metadata["predicted"] == [NONE_LINE] and quoted.value == {"precision": 0.0, "recall": 0.0}
    imported = import_inspect_log(log, tmp_path / "imported")
    assert {key: imported.results[key] for key in IDENTIFY_KEYS} == {key: run.results[key] for key in IDENTIFY_KEYS}
    assert [r["dialogue"] for r in imported.records] == [r["dialogue"] for r in run.records]
    assert [r["predicted"] for r in imported.records] == [r["predicted"] for r in run.records]
    # the imported run says its answers were read knowing the dialogues, as convbench's run says
    assert imported.results["signature"]["dialogues"] is run.results["signature"]["dialogues"] is True


def test_an_identification_answer_over_the_line_limits_records_its_error(nico_built: Path, tmp_path: Path) -> None:
    # The reviewer's case (/tmp/rv/identify_long.py): a line of 2,001 characters is over the metric's per-answer
    # limit (MAX_LINE_CHARS, 2,000): the row's error says so, as convbench run nico records it.
    def rambling(messages: list[dict[str, str]]) -> str:
        return "好" * 2001 if "高数笔记" in messages[-1]["content"] else "无"

    log = run_inspect(nico(task="identify_unnatural", split="train", dataset=str(nico_built)), inspect_model(rambling),
                      tmp_path / "logs")
    run = run_nico(task="identify_unnatural", model=ScriptedBackend(rambling), out=tmp_path / "run", split="train",
                   dataset=nico_built, cache=tmp_path / "c.sqlite", progress=False, max_error_rate=1)
    error = "answer line 1 is 2,001 characters long, over the limit of 2,000: not scored (counted as a failure)"
    assert [r["error"] for r in run.records if r["error"]] == [error]
    assert [s.scores["nico_identify"].metadata["error"] for s in log.samples if "高数笔记" in s.input[0].text] == [error]
    assert reported(log)["errors"] == run.results["errors"] == 1
    imported = import_inspect_log(log, tmp_path / "imported", max_error_rate=1)  # its 1 error of 18 is the point
    assert [r["error"] for r in imported.records] == [r["error"] for r in run.records]
    assert imported.results["errors"] == 1 and imported.results["f1"] == run.results["f1"]


@pytest.mark.parametrize(("task", "server_model", "stop_reason"), [
    ("identify_unnatural", "blank-length", "max_tokens"),  # empty, cut at the token limit (a reasoning model)
    ("identify_unnatural", "filtered", "content_filter"),
    ("open_domain", "blank-length", "max_tokens"),
])
def test_a_reply_that_is_no_answer_is_an_error_as_in_convbench_run(task: str, server_model: str, stop_reason: str,
                                                                   nico_built: Path, tmp_path: Path) -> None:
    # The reviewer's case (/tmp/rv/emptycut2.py). convbench's runner, through its OpenAI-compatible backend and
    # the test server, gets the same replies: for the rows the server's faults hit (affected()), an empty reply
    # cut at the token limit, or one a content filter withheld; for the others the server's label_for() text.
    def served(messages: list[dict[str, str]]) -> str:
        return "" if affected(messages) else label_for(messages)

    log = run_inspect(nico(task=task, split="train", dataset=str(nico_built)),
                      inspect_model(served, stop=lambda m: stop_reason if affected(m) else None), tmp_path / "logs")
    with openai_server() as (url, _):
        run = run_nico(task=task, model=OpenAICompatBackend(server_model, base_url=url, retry=FAST),
                       out=tmp_path / "run", split="train", dataset=nico_built, cache=tmp_path / "c.sqlite",
                       # its errors (the empty replies among them) are counted and compared, not a failed run
                       progress=False, max_error_rate=1, max_empty_rate=1)
    failed = [r["id"] for r in run.records if r["error"] is not None]
    assert 0 < len(failed) < len(run.records)
    keys = IDENTIFY_KEYS if task == "identify_unnatural" else GENERATION_KEYS
    metrics = reported(log)
    assert {key: metrics[key] for key in keys} == {key: run.results[key] for key in keys}
    assert metrics["errors"] == run.results["errors"] == len(failed) and metrics["n"] == run.results["n"]
    scorer = "nico_identify" if task == "identify_unnatural" else "nico_turn"
    assert {s.id for s in log.samples if s.scores[scorer].metadata["error"]} == set(failed)  # the log's order is its own
    if task == "identify_unnatural":
        # Hand-derived: every answer that is there names a label (Answer, Repeat...), no gold sentence: P = R = 0
        # on every dialogue. Were the failed rows blank answers read as "none" (--blank-answer none), the clean
        # ones among them would score 1; they are errors, counted apart from unanswered answers.
        assert any(not r["gold"] for r in run.records if r["error"]) and run.results["f1"] == 0.0
        # the failed rows (read as "") are neither blank nor unanswered; "Answer" alone is a bare label: no answer
        assert run.results["blank_answers"] == 0
        assert run.results["unanswered"] == run.results["empty_answers"] == sum(
            r["response"] == "Answer" for r in run.records if r["error"] is None) > 0
    imported = import_inspect_log(log, tmp_path / "imported", max_error_rate=1)  # as for the run
    for key in (*keys, "errors", "n"):
        assert imported.results[key] == run.results[key], key
    assert [r["id"] for r in imported.records if r["error"]] == failed
    # a log whose scorer did not record these errors (convbench before it did): the importer applies the rule
    for sample in log.samples:
        sample.scores[scorer].metadata["error"] = None
    older = import_inspect_log(log, tmp_path / "older", max_error_rate=1)
    assert [r["error"] for r in older.records] == [r["error"] for r in imported.records]
    assert {key: older.results[key] for key in (*keys, "errors")} == {key: run.results[key] for key in (*keys, "errors")}


def test_a_sample_stopped_by_a_limit_is_an_error(nico_built: Path, tmp_path: Path) -> None:
    # The reviewer's case (/tmp/rv/limit.py), for NICO: a message limit of 1 stops every sample before the
    # model answers (the prompt is the one message). No sample has an answer: each is an error, P = R = 0
    # (hand-derived: F1 = 0, where the empty answers read as "none" would score the 11 clean dialogues of 18).
    asked: list[int] = []
    log = run_inspect(nico(task="identify_unnatural", split="train", dataset=str(nico_built)),
                      inspect_model(lambda m: asked.append(1) or "无"), tmp_path / "logs", message_limit=1)
    assert asked == [] and all(s.limit is not None and s.limit.type == "message" for s in log.samples)
    assert {s.scores["nico_identify"].metadata["error"] for s in log.samples} == {NO_OUTPUT}
    metrics = reported(log)
    assert metrics["f1"] == 0.0 and metrics["errors"] == metrics["n"] == 18
    imported = import_inspect_log(log, tmp_path / "imported", max_error_rate=1)  # every row's error is the point
    assert {r["error"] for r in imported.records} == {"inspect: message limit (1)"}
    assert imported.results["errors"] == 18 and imported.results["f1"] == 0.0
