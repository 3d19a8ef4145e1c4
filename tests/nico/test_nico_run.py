"""`convbench run nico` end to end against the local OpenAI-compatible server, offline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convbench_datasets.cli import main
from convbench_datasets import run_nico
from convbench_datasets.engine.backends import Backend, Generation
from convbench_datasets.errors import ConvbenchError
from convbench_datasets.nico.report_tables import nico_paper_differences
from convbench_datasets.nico.run import clean_turn
from tests.support.openai_server import openai_server


@pytest.mark.parametrize("task", ["open_domain", "dialog_completion", "identify_unnatural", "rewrite_unnatural"])
def test_each_task_runs_and_is_scored(task: str, nico_built: Path, tmp_path: Path) -> None:
    with openai_server() as (url, state):
        run = run_nico(task=task, model="openai:echo", out=tmp_path / "run", shots=3, split="train", limit=5,
                       dataset=nico_built, cache=tmp_path / "c.sqlite", backend_options={"base_url": url},
                       progress=False)
        assert state.count() == 5
        again = run_nico(task=task, model="openai:echo", out=tmp_path / "again", shots=3, split="train", limit=5,
                         dataset=nico_built, cache=tmp_path / "c.sqlite", backend_options={"base_url": url},
                         progress=False)
        assert state.count() == 5 and again.stats["model_calls"] == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    assert results["n"] == 5 and results["signature"]["task"] == task and results["signature"]["shots"] == 3
    keys = {"precision", "recall", "f1"} if task == "identify_unnatural" else {"bleu_1", "bleu_2", "rouge_l", "distinct_1", "distinct_2", "avg_len"}
    assert keys <= set(results)
    assert len((tmp_path / "run" / "records.jsonl").read_text(encoding="utf-8").splitlines()) == 5
    assert {k: v for k, v in again.results.items() if k != "stats"} == {k: v for k, v in run.results.items() if k != "stats"}


def test_identify_with_a_silent_model_is_unanswered(nico_built: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    # The silence baseline answers nothing. Before: read as "none", F1 100 * 11 / 18 (11 of the sample's 18 train
    # dialogues are clean). Now a blank answer is no answer: P = R = 0 on every row, 18 unanswered, 0 "none".
    run = run_nico(task="identify_unnatural", model="baseline:silence", out=tmp_path / "run", split="train",
                   dataset=nico_built, cache=tmp_path / "c.sqlite", progress=False)
    assert (run.results["f1"], run.results["f1_containing"]) == (0.0, 0.0)
    assert (run.results["unanswered"], run.results["blank_answers"], run.results["none_answers"]) == (18, 18, 0)
    assert run.results["signature"]["blank_answer"] == "unanswered"
    assert nico_paper_differences(_loaded(run)) == ["split train (paper: test)"]
    # the old reading, a declared setting: the clean share again, recorded and flagged as not the default
    old = run_nico(task="identify_unnatural", model="baseline:silence", out=tmp_path / "old", split="train",
                   dataset=nico_built, cache=tmp_path / "c.sqlite", progress=False, blank_answer="none")
    assert old.results["f1"] == pytest.approx(100 * 11 / 18) and old.results["f1_containing"] == 0.0
    assert (old.results["unanswered"], old.results["blank_answers"], old.results["none_answers"]) == (0, 18, 0)
    assert old.results["signature"]["blank_answer"] == "none"
    assert nico_paper_differences(_loaded(old)) == [
        "split train (paper: test)",
        "blank answers read as \"none\" (convbench's default: unanswered, scored 0; the paper is silent)"]
    # re-scoring reads them as the run did; `convbench run --blank-answer none` is the same run, its summary
    # line counting no unanswered answer
    assert main(["score", str(tmp_path / "old")]) == 0
    assert json.loads((tmp_path / "old" / "results.json").read_text(encoding="utf-8"))["f1"] == old.results["f1"]
    # a run written before the setting existed (no blank_answer in its signature) scored blanks as "none": its
    # re-score keeps its numbers, and the report flags the reading
    path = tmp_path / "run" / "results.json"
    written = json.loads(path.read_text(encoding="utf-8"))
    del written["signature"]["blank_answer"]
    path.write_text(json.dumps(written), encoding="utf-8")
    assert main(["score", str(tmp_path / "run")]) == 0
    assert json.loads(path.read_text(encoding="utf-8"))["f1"] == pytest.approx(100 * 11 / 18)
    run_nico(task="identify_unnatural", model="baseline:silence", out=tmp_path / "run", split="train",
             dataset=nico_built, cache=tmp_path / "c.sqlite", progress=False)  # written again, as above
    capsys.readouterr()
    assert main(["run", "nico", "--task", "identify_unnatural", "--model", "baseline:silence", "--split", "train",
                 "--dataset", str(nico_built), "--out", str(tmp_path / "cli"), "--cache", str(tmp_path / "c.sqlite"),
                 "--no-progress", "--blank-answer", "none"]) == 0
    assert "(0-shot, 18 examples, errors: 0, unanswered: 0)" in capsys.readouterr().out
    assert json.loads((tmp_path / "cli" / "results.json").read_text(encoding="utf-8"))["f1"] == old.results["f1"]
    # the report gives the counts of each run
    from convbench_datasets.report import write_report

    write_report([tmp_path / "run", tmp_path / "old"], tmp_path / "report")
    page = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    assert ("baseline:silence (run): 18 of 18 answers unanswered, scored 0 (18 blank, 0 refusals, 0 with nothing "
            "else to read); 0 &quot;none&quot;; baseline:silence (old): 0 of 18 answers unanswered, scored 0 "
            "(0 refusals, 0 with nothing else to read); 0 &quot;none&quot;, 18 blank read as &quot;none&quot;.") in page
    assert "blank answers read as &quot;none&quot; (convbench&#x27;s default: unanswered" in page
    with pytest.raises(ConvbenchError, match="blank_answer must be one of unanswered, none, got 'empty'"):
        run_nico(task="identify_unnatural", model="baseline:silence", out=tmp_path / "bad", blank_answer="empty")


def test_the_repeat_baseline_is_blank_on_nico_and_says_why(nico_built: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    # A NICO prompt is one user message: baseline:repeat has no assistant turn to repeat and answers "".
    assert main(["run", "nico", "--task", "identify_unnatural", "--model", "baseline:repeat", "--split", "train",
                 "--limit", "3", "--dataset", str(nico_built), "--out", str(tmp_path / "run"),
                 "--cache", str(tmp_path / "c.sqlite"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "(0-shot, 3 examples, errors: 0, unanswered: 3)" in out
    assert "baseline:repeat answers blank on NICO: it repeats the previous assistant turn" in out


def _loaded(run):
    from convbench_datasets.report.runs import load_runs

    return load_runs([run.path])[0]


def test_cli_errors(nico_built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "nico", "--model", "baseline:silence", "--out", str(tmp_path)]) == 1
    assert "needs --task" in capsys.readouterr().err
    # a split without examples: tests/nico/test_sample_tasks.py (the sample has examples in every split)


def test_clean_turn() -> None:
    assert clean_turn("  CharacterA: 好啊。 ") == "好啊。" and clean_turn("“行。”") == "行。" and clean_turn("好的") == "好的"
    # the answer labels of the 3-shot demonstrations (nico/templates/prompts.yaml), which a model may copy
    assert clean_turn("回复：好啊，我同意。") == "好啊，我同意。" and clean_turn("改写： 有点贵啊，") == "有点贵啊，"
    assert clean_turn("回复你的消息了。") == "回复你的消息了。"  # the word itself, not a label


def test_score_rescores_a_nico_run(nico_built: Path, tmp_path: Path) -> None:
    run = run_nico(task="identify_unnatural", model="baseline:silence", out=tmp_path / "run", split="train",
                   dataset=nico_built, cache=tmp_path / "c.sqlite", progress=False)
    assert main(["score", str(tmp_path / "run")]) == 0
    rescored = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    assert rescored["f1"] == run.results["f1"] and rescored["signature"]["task"] == "identify_unnatural"


class OneRunawayAnswer(Backend):
    """Answers a short turn, but the second answer is one character over the metrics' cap
    (scoring/inputs.py: MAX_TEXT_CHARS = 20,000)."""

    kind, model = "stub", "runaway"

    def generate(self, prompts, params):
        for i, _ in enumerate(prompts):
            yield i, Generation("好" * 20_001 if i == 1 else "好啊。", finish_reason="stop")


@pytest.mark.parametrize("task", ["open_domain", "identify_unnatural"])
def test_an_answer_too_long_to_score_is_that_rows_error_not_a_failed_run(task: str, nico_built: Path,
                                                                         tmp_path: Path) -> None:
    # Before: score_generation / score_unnatural raised "row 1: field 'predictions' is 20,001 characters
    # long..." inside the run, before the run folder was written, so every rerun failed the same way.
    run = run_nico(task=task, model=OneRunawayAnswer(), out=tmp_path / "run", split="train", limit=3,
                   dataset=nico_built, cache=tmp_path / "c.sqlite", progress=False, max_error_rate=1)
    assert [r["error"] for r in run.records] == [
        None, "answer is 20,001 characters long, over the metrics' limit of 20,000: not scored (counted as a failure)",
        None]
    assert run.results["errors"] == 1 and run.results["n"] == 3
    assert len(run.records[1]["response"]) == 20_001  # the answer is kept as given
    if task == "identify_unnatural":
        assert (run.records[1]["precision"], run.records[1]["recall"]) == (0.0, 0.0)  # as for any row's error
    else:
        assert run.records[1]["turn"] == ""  # scored as an empty turn, as for any row's error
    # re-scoring applies the same rule (and now the same error check: this run's 1 error of 3 is deliberate)
    assert main(["score", str(tmp_path / "run"), "--max-error-rate", "1"]) == 0
    rescored = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    assert {k: v for k, v in rescored.items() if k not in ("signature", "stats")} == {
        k: v for k, v in run.results.items() if k not in ("signature", "stats")}


class FixedTurns(Backend):
    """Answers every prompt with one of a few everyday turns, by position: no model, no network."""

    kind, model = "stub", "fixed-turns"
    TURNS = ("好啊，我同意。", "那我们明天见吧。", "CharacterB：行，就这么定了。")

    def generate(self, prompts, params):
        for i, _ in enumerate(prompts):
            yield i, Generation(self.TURNS[i % len(self.TURNS)], finish_reason="stop")


def test_run_nico_passes_the_bertscore_layer(nico_built: Path, tmp_path: Path) -> None:
    # Before: run_nico had no layer option, and a local folder made bert-score raise KeyError
    # (its layer table knows model names only). Expected values: bert-score itself on the run's turns.
    pytest.importorskip("bert_score", reason="BERTScore needs the bertscore extra")
    import bert_score

    from tests.support.tiny_models import build_tiny_bert

    model = build_tiny_bert(tmp_path / "bert", "".join(FixedTurns.TURNS) + "你我他好的吗了是不在有这个")
    for layer in (None, 2):
        run = run_nico(task="open_domain", model=FixedTurns(), out=tmp_path / f"run-{layer}", split="train", limit=4,
                       dataset=nico_built, cache=tmp_path / "c.sqlite", bertscore=True, bertscore_model=str(model),
                       bertscore_layer=layer, progress=False)
        expected_layer = 1 if layer is None else 2  # None: 2/3 of the tiny model's 2 layers, rounded half up
        _, _, f1 = bert_score.score([r["turn"] for r in run.records], [r["reference"] for r in run.records],
                                    model_type=str(model), num_layers=expected_layer, lang="zh", verbose=False)
        assert run.results["signature"]["bertscore_layer"] == expected_layer
        assert run.results["bertscore_f1"] == pytest.approx(100.0 * float(f1.mean()), abs=1e-6)
        assert "bertscore_error" not in run.results
    # re-scoring loads no model: the run's BERTScore is carried over and said to be, not dropped
    from convbench_datasets import score_run

    rescored = score_run(tmp_path / "run-2").results
    assert rescored["bertscore_f1"] == run.results["bertscore_f1"]
    assert any("carried over" in note for note in rescored["notes"])


def test_cli_bertscore_layer(nico_built: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                             monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("bert_score", reason="BERTScore needs the bertscore extra")
    import huggingface_hub.constants

    from tests.support.tiny_models import build_tiny_bert

    model = build_tiny_bert(tmp_path / "bert", "".join(FixedTurns.TURNS))
    base = ["run", "nico", "--task", "open_domain", "--model", "baseline:silence", "--split", "train", "--limit", "2",
            "--dataset", str(nico_built), "--cache", str(tmp_path / "c.sqlite"), "--no-progress"]
    assert main([*base, "--out", str(tmp_path / "a"), "--bertscore-layer", "2"]) == 1
    assert "--bertscore-layer needs --bertscore MODEL" in capsys.readouterr().err
    assert main([*base, "--out", str(tmp_path / "b"), "--bertscore", str(model), "--bertscore-layer", "2"]) == 0
    results = json.loads((tmp_path / "b" / "results.json").read_text(encoding="utf-8"))
    assert results["signature"]["bertscore_layer"] == 2 and results["signature"]["bertscore_layer_rule"] == "given"
    # Offline without the model: the run is written with its other scores and BERTScore's error, and
    # the command says so in one line (before: the run failed and wrote nothing).
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    capsys.readouterr()
    assert main([*base, "--out", str(tmp_path / "c"), "--bertscore", "convbench-test/no-such-bert"]) == 0
    results = json.loads((tmp_path / "c" / "results.json").read_text(encoding="utf-8"))
    assert results["bertscore_f1"] is None and "rouge_l" in results and results["n"] == 2
    assert "BERTScore not computed: model 'convbench-test/no-such-bert'" in results["bertscore_error"]
    warning = [line for line in capsys.readouterr().err.splitlines() if "BERTScore" in line]
    assert len(warning) == 1 and warning[0].startswith("convbench: warning: BERTScore not computed")


class IdentifyRunaways(Backend):
    """identify_unnatural answers: row 1 a line of 2,001 characters (over unnatural_sentence_prf's
    MAX_LINE_CHARS, 2,000), row 2 20,001 characters (over MAX_TEXT_CHARS), the others "无"."""

    kind, model = "stub", "identify-runaways"

    def generate(self, prompts, params):
        for i, _ in enumerate(prompts):
            yield i, Generation({1: "好" * 2_001, 2: "好" * 20_001}.get(i, "无"), finish_reason="stop")


def test_a_failed_rows_record_holds_what_was_scored(nico_built: Path, tmp_path: Path) -> None:
    # Before: "predicted" was read again from the response, ["好" * 20001] for a row scored as an empty
    # answer (P = R = 0); and a 2,001-character line was read (slowly, for longer ones) rather than refused.
    # Expected: what score_unnatural read for the row: nothing, for a failed row.
    run = run_nico(task="identify_unnatural", model=IdentifyRunaways(), out=tmp_path / "run", split="train", limit=4,
                   dataset=nico_built, cache=tmp_path / "c.sqlite", progress=False, max_error_rate=1)
    assert [r["error"] for r in run.records] == [
        None, "answer line 1 is 2,001 characters long, over the limit of 2,000: not scored (counted as a failure)",
        "answer is 20,001 characters long, over the metrics' limit of 20,000: not scored (counted as a failure)", None]
    assert [r["predicted"] for r in run.records] == [[], [], [], []]
    assert [(r["precision"], r["recall"]) for r in run.records][1:3] == [(0.0, 0.0), (0.0, 0.0)]
    assert run.results["errors"] == 2 and run.results["none_answers"] == 2
    # a failed row is scored as "", but it is a failure, not a blank answer: not unanswered either
    assert run.results["blank_answers"] == run.results["unanswered"] == 0
    # the records keep the dialogue the answer was read with (its turns' texts), so re-scoring reads it the same way
    import datasets

    rows = {r["id"]: r for r in datasets.load_dataset(str(nico_built), "identify_unnatural")["train"]}
    assert all(r["dialogue"] == [turn["text"] for turn in rows[r["id"]]["dialogue"]] for r in run.records)
    assert main(["score", str(tmp_path / "run"), "--max-error-rate", "1"]) == 0  # its 2 errors of 4 are deliberate
    rescored = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    assert {k: v for k, v in rescored.items() if k not in ("signature", "stats")} == {
        k: v for k, v in run.results.items() if k not in ("signature", "stats")}


def test_score_identify_reads_answers_knowing_the_dialogue() -> None:
    # "说明：明天休息。" alone is a comment line (dropped); as a sentence of the dialogue it is a prediction.
    from convbench_datasets.nico.run import score_identify

    gold, answer = ["我认为此价格偏高，"], "我认为此价格偏高，\n说明：明天休息。"
    alone, rows = score_identify([answer], [gold], [False])
    assert rows[0]["predicted"] == ["我认为此价格偏高，"] and alone["precision"] == 100.0
    known, rows = score_identify([answer], [gold], [False], [["我认为此价格偏高，两百八行不行？", "说明：明天休息。"]])
    assert rows[0]["predicted"] == ["我认为此价格偏高，", "说明：明天休息。"] and known["precision"] == 50.0
    # callers that did not check the per-answer limits (lm-eval, inspect): the row fails, the call does not
    results, rows = score_identify(["好" * 2_001], [[]], [False])
    assert (rows[0]["precision"], rows[0]["recall"], results["f1"]) == (0.0, 0.0, 0.0)


class OneRefusedRequest(Backend):
    """FixedTurns' turns, but the server refuses the second prompt for good (a per-row error)."""

    kind, model = "stub", "one-refused"

    def generate(self, prompts, params):
        for i, _ in enumerate(prompts):
            if i == 1:
                yield i, Generation("", error="HTTP 400: prompt refused", permanent=True)
            else:
                yield i, Generation(FixedTurns.TURNS[i % len(FixedTurns.TURNS)], finish_reason="stop")


def test_bertscore_survives_a_failed_request(nico_built: Path, tmp_path: Path) -> None:
    # A failed row is scored as an empty turn. Before: bert-score (0.3.13, transformers 5) raised on the
    # blank text and BERTScore was missing from the whole run. Expected: bert-score itself on the other
    # turns, and bert-score's 0 for an empty text on the failed one.
    pytest.importorskip("bert_score", reason="BERTScore needs the bertscore extra")
    import bert_score

    from tests.support.tiny_models import build_tiny_bert

    model = build_tiny_bert(tmp_path / "bert", "".join(FixedTurns.TURNS) + "你我他好的吗了是不在有这个")
    run = run_nico(task="open_domain", model=OneRefusedRequest(), out=tmp_path / "run", split="train", limit=4,
                   dataset=nico_built, cache=tmp_path / "c.sqlite", bertscore=True, bertscore_model=str(model),
                   bertscore_layer=2, progress=False, max_error_rate=1)
    assert run.results["errors"] == 1 and run.records[1]["turn"] == ""
    kept = [r for r in run.records if r["turn"]]
    _, _, f1 = bert_score.score([r["turn"] for r in kept], [r["reference"] for r in kept], model_type=str(model),
                                num_layers=2, lang="zh", verbose=False)
    assert run.results["bertscore_f1"] == pytest.approx(100 * (float(f1.sum()) + 0.0) / 4, abs=1e-4)
    assert run.results["bertscore_blank_pairs"] == 1 and "bertscore_error" not in run.results
