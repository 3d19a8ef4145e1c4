"""NICO under lm-eval: convbench's prompts, and convbench's corpus scores as lm-eval's metrics, offline.

Each test serves the same scripted answers to ``lm_eval.simple_evaluate`` (a scripted ``LM``) and to
``run_nico`` (a Backend); the numbers lm-eval reports must be convbench's, corpus statistics included.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("lm_eval", reason="lm-eval is not installed (pip install -e \".[lm-eval]\")")

from lm_eval.utils import make_table  # noqa: E402

from convbench_datasets.errors import ConvbenchError  # noqa: E402
from convbench_datasets import run_nico  # noqa: E402
from convbench_datasets.scoring.inputs import MAX_TEXT_CHARS  # noqa: E402
from convbench_datasets.nico.stderr import generation_stderr  # noqa: E402
from convbench_datasets.nico.nico_generation import pair_statistics, score_generation  # noqa: E402
from tests.integrations.conftest import NONE_LINE, NONE_LINE_ROW, quote_none_line  # noqa: E402
from tests.integrations.lm_eval_support import (  # noqa: E402
    ScriptedBackend,
    ScriptedLM,
    pick,
    reported,
    run_lm_eval,
    stderrs,
)
from tests.support.scripted import GENERATION_KEYS, IDENTIFY_KEYS, TURNS, nico_finder, nico_turn  # noqa: E402

turn = nico_turn


def finder(messages: list[dict[str, str]]) -> str:
    return nico_finder(messages, from_end=True)


def _run(task: str, answer, built: Path, tmp_path: Path, shots: int = 0, **options):  # type: ignore[no-untyped-def]
    return run_nico(task=task, shots=shots, model=ScriptedBackend(answer), out=tmp_path / "run", split="train",
                    dataset=built, cache=tmp_path / "c.sqlite", progress=False, max_error_rate=1, **options)  # a run compared with the integration's: its errors are counted, not a failed run


@pytest.mark.parametrize(("task", "shots", "chat"), [("open_domain", 0, True), ("dialog_completion", 3, False),
                                                      ("rewrite_unnatural", 0, False)])
def test_generation_metrics_are_convbench_corpus_scores(task: str, shots: int, chat: bool, nico_built: Path,
                                                        tmp_path: Path) -> None:
    name = f"convbench_nico_{task}" + ("_3shot" if shots else "")
    lm = ScriptedLM(turn)
    results = run_lm_eval([name], lm, chat=chat, metadata={"convbench_dataset": str(nico_built), "convbench_split": "train"})
    backend = ScriptedBackend(turn)
    run = run_nico(task=task, shots=shots, model=backend, out=tmp_path / "run", split="train", dataset=nico_built,
                   cache=tmp_path / "c.sqlite", progress=False, max_error_rate=1)
    metrics = reported(results, name)
    # Expected values: convbench's own run of the same answers (score_generation over all turns), read back exactly.
    assert metrics == {key: run.results[key] for key in GENERATION_KEYS}
    assert results["results"][name]["sample_len"] == run.results["n"] >= 7  # the sample build: 18 train dialogues, 7 edits
    # lm-eval sent convbench's prompts: the one user turn with a chat template, the same text without one
    assert [ScriptedLM.messages(context) for context in lm.contexts] == backend.prompts
    if not chat:
        assert lm.contexts == [prompt[0]["content"] for prompt in backend.prompts]
    assert all(kwargs == {"until": [], "max_gen_toks": 256, "do_sample": False, "temperature": 0.0} for kwargs in lm.kwargs)
    # the turns scored are convbench's cleaning of the answers (speaker label and quotes read off)
    samples = results["samples"][name]
    assert [s["bleu_1"]["turn"] for s in samples] == [r["turn"] for r in run.records]
    assert {s["bleu_1"]["turn"] for s in samples} <= {"好啊，我同意！", "行吧，那就这么定了。", "我觉得还是再考虑一下比较好，毕竟价格有点高。",
                                                     "嗯嗯，对对对。", "你说得对，我们明天一起去吧。"}
    # Corpus BLEU is not the mean of the samples' own BLEU: lm-eval's number is the corpus statistic.
    per_sample = [score_generation([s["bleu_1"]["turn"]], [s["doc"]["reference"]])["bleu_2"] for s in samples]
    assert metrics["bleu_2"] != pytest.approx(sum(per_sample) / len(per_sample))
    # Beside each metric its standard error, convbench's bootstrap (lm-eval computes none for a custom
    # aggregation): 1,000 resamples (seed 0) of the samples, by hand for ROUGE-L (a mean over pairs)
    errors = stderrs(results, name)
    own = np.array([score_generation([r["turn"]], [r["reference"]])["rouge_l"] for r in run.records])
    draws = np.random.default_rng(0).integers(0, len(own), size=(1000, len(own)))
    assert errors["rouge_l"] == pytest.approx(own[draws].mean(axis=1).std(ddof=1), rel=1e-9)
    stats = pair_statistics([r["turn"] for r in run.records], [r["reference"] for r in run.records])
    assert errors == {key: value for key, value in zip(GENERATION_KEYS, generation_stderr(stats).values())}
    # and lm-eval's table prints each after its metric's value: "| bleu_1 | ... | 12.3456 | ± | 4.5678 |"
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in make_table(results).splitlines()]
    by_metric = {row[4]: row for row in rows if len(row) == 9}  # Tasks, Version, Filter, n-shot, Metric, ...
    for key in GENERATION_KEYS:
        assert by_metric[key][-2:] == ["±", f"{errors[key]:.4f}"], by_metric[key]


def test_identification_prf_is_convbench_macro_average(nico_built: Path, tmp_path: Path) -> None:
    name = "convbench_nico_identify_unnatural_3shot"
    lm = ScriptedLM(finder)
    results = run_lm_eval([name], lm, chat=False, metadata={"convbench_dataset": str(nico_built), "convbench_split": "train"})
    backend = ScriptedBackend(finder)
    run = run_nico(task="identify_unnatural", shots=3, model=backend, out=tmp_path / "run", split="train",
                   dataset=nico_built, cache=tmp_path / "c.sqlite", progress=False, max_error_rate=1)
    metrics = reported(results, name)
    assert metrics == {key: run.results[key] for key in IDENTIFY_KEYS}
    assert lm.contexts == [prompt[0]["content"] for prompt in backend.prompts]  # convbench's 3-shot prompts, verbatim
    assert lm.contexts[0].startswith("以下是几个示例。")
    # F1 is the harmonic mean of the averaged P and R (convbench's rule), not an average of per-row F1
    precision, recall = metrics["precision"], metrics["recall"]
    assert metrics["f1"] == pytest.approx(2 * precision * recall / (precision + recall))
    assert 0 < metrics["f1"] < 100
    # F1's standard error: its harmonic mean recomputed on 1,000 resamples (seed 0) of the rows, by hand
    p_r = np.array([[r["precision"], r["recall"]] for r in run.records])
    draws = np.random.default_rng(0).integers(0, len(p_r), size=(1000, len(p_r)))
    p, r = p_r[draws].mean(axis=1).T
    f1 = 200 * p * r / np.maximum(p + r, 1e-300)  # 0 where a resample drew only rows with P = R = 0
    assert stderrs(results, name)["f1"] == pytest.approx(f1.std(ddof=1), rel=1e-9)
    assert set(stderrs(results, name)) == set(IDENTIFY_KEYS)
    samples = results["samples"][name]
    assert [s["f1"]["predicted"] for s in samples] == [r["predicted"] for r in run.records]


def test_an_answer_too_long_to_score_fails_as_in_convbench_run(nico_built: Path, tmp_path: Path) -> None:
    def runaway(messages: list[dict[str, str]]) -> str:
        chosen = turn(messages)
        return "啊" * (MAX_TEXT_CHARS + 1) if chosen.startswith("CharacterB") else chosen

    results = run_lm_eval(["convbench_nico_open_domain"], ScriptedLM(runaway),
                          metadata={"convbench_dataset": str(nico_built), "convbench_split": "train"})
    run = _run("open_domain", runaway, nico_built, tmp_path)
    assert 0 < run.results["errors"] < run.results["n"]  # some answers ran away, scored as empty turns
    assert reported(results, "convbench_nico_open_domain") == {key: run.results[key] for key in GENERATION_KEYS}
    errors = [s["bleu_1"]["error"] for s in results["samples"]["convbench_nico_open_domain"]]
    assert errors == [r["error"] for r in run.records]


def test_the_tokenizer_option_is_convbench_s(nico_built: Path, tmp_path: Path) -> None:
    metadata = {"convbench_dataset": str(nico_built), "convbench_split": "train"}
    by_words = run_lm_eval(["convbench_nico_open_domain"], ScriptedLM(turn), metadata={**metadata, "convbench_tokenizer": "jieba"})
    by_char = run_lm_eval(["convbench_nico_open_domain"], ScriptedLM(turn), metadata=metadata)  # the default
    run = run_nico(task="open_domain", model=ScriptedBackend(turn), out=tmp_path / "run", split="train",
                   dataset=nico_built, cache=tmp_path / "c.sqlite", tokenizer="jieba", progress=False)
    assert reported(by_words, "convbench_nico_open_domain") == {key: run.results[key] for key in GENERATION_KEYS}
    assert reported(by_char, "convbench_nico_open_domain")["avg_len"] > reported(by_words, "convbench_nico_open_domain")["avg_len"]


def test_lm_eval_s_num_fewshot_leaves_convbench_s_prompts_alone(nico_built: Path) -> None:
    metadata = {"convbench_dataset": str(nico_built), "convbench_split": "train"}
    plain, asked = ScriptedLM(turn), ScriptedLM(turn)
    run_lm_eval(["convbench_nico_open_domain"], plain, chat=False, metadata=metadata)
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    from convbench_datasets.integrations.lm_eval import tasks_path

    manager = TaskManager(include_path=str(tasks_path()), include_defaults=False, metadata=metadata)
    simple_evaluate(model=asked, tasks=["convbench_nico_open_domain"], task_manager=manager, num_fewshot=3,
                    bootstrap_iters=0)
    assert asked.contexts == plain.contexts  # the 3-shot prompts are the *_3shot tasks


def test_a_misspelt_option_is_an_error(nico_built: Path) -> None:
    with pytest.raises(ConvbenchError, match="unknown option convbench_splt in --metadata; convbench's tasks take "
                                             "convbench_dataset, convbench_sources, convbench_split, convbench_tokenizer"):
        run_lm_eval(["convbench_nico_open_domain"], ScriptedLM(turn),
                    metadata={"convbench_dataset": str(nico_built), "convbench_splt": "train"})
    # model arguments share lm-eval's metadata (a model's own tokenizer=...): not convbench's, not an error
    results = run_lm_eval(["convbench_nico_open_domain"], ScriptedLM(turn),
                          metadata={"convbench_dataset": str(nico_built), "convbench_split": "train", "tokenizer": "x"})
    assert results["results"]["convbench_nico_open_domain"]["sample_len"] == 18


def test_an_identification_answer_is_read_knowing_the_dialogue(nico_none_line: Path, tmp_path: Path) -> None:
    # The reviewer's case (/tmp/rv/identify_eq.py): the model quotes a dialogue line that, read alone, says "none"
    # (都很自然。); convbench's runner reads it knowing the dialogue, as a prediction. Every other answer is 无.
    name = "convbench_nico_identify_unnatural"
    results = run_lm_eval([name], ScriptedLM(quote_none_line),
                          metadata={"convbench_dataset": str(nico_none_line), "convbench_split": "train"})
    run = _run("identify_unnatural", quote_none_line, nico_none_line, tmp_path)
    assert sum(not r["gold"] for r in run.records) == 11 and len(run.records) == 18
    # Hand-derived: 无 scores P = R = 1 on the 11 clean dialogues of 18, 0 on the others; the quoted line
    # scores 0 on the clean sample-02: P = R = F1 = 100 * 10/18.
    assert run.results["f1"] == pytest.approx(1000 / 18, abs=1e-9) and run.results["f1_containing"] == 0.0
    assert reported(results, name) == {key: run.results[key] for key in IDENTIFY_KEYS}
    (quoted,) = [s["f1"] for s in results["samples"][name] if s["doc"]["id"] == NONE_LINE_ROW]
    assert quoted["predicted"] == [NONE_LINE] and NONE_LINE in quoted["dialogue"]


def test_an_identification_answer_over_the_line_limits_records_its_error(nico_built: Path, tmp_path: Path) -> None:
    # The reviewer's case (/tmp/rv/identify_long.py): a line of 2,001 characters is over the metric's per-answer
    # limit (2,000): the sample's error says so, as convbench run nico records it.
    def rambling(messages: list[dict[str, str]]) -> str:
        return "好" * 2001 if "高数笔记" in messages[-1]["content"] else "无"

    name = "convbench_nico_identify_unnatural"
    results = run_lm_eval([name], ScriptedLM(rambling), metadata={"convbench_dataset": str(nico_built),
                                                                  "convbench_split": "train"})
    run = _run("identify_unnatural", rambling, nico_built, tmp_path)
    errors = [s["f1"]["error"] for s in results["samples"][name]]
    assert errors == [r["error"] for r in run.records]
    assert [e for e in errors if e] == ["answer line 1 is 2,001 characters long, over the limit of 2,000: not scored "
                                        "(counted as a failure)"]
    assert reported(results, name) == {key: run.results[key] for key in IDENTIFY_KEYS}
