"""Fixed batches (``--batch-order file``): the released NC-Bench script's batching for the hf backend.

The released pred_hf.py generates one data file at a time, in file order, 8 prompts a batch, bf16 greedy;
bf16 greedy answers depend on which prompts share a batch. A backend that declares ``fixed_batches`` gets
exactly those batches from a stage whatever the cache already holds: blocks of the stage's prompts, in
order, restarting at each group (NC-Bench's set), asked whole, each answer keyed with its block.
The stub backend below answers with the texts of its whole batch, so an answer shows the batch it came from.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from convbench_datasets.engine.backends import Backend, Generation, GenerationParams
from convbench_datasets.engine.cache import ResponseCache
from convbench_datasets.engine.stage import complete, fixed_blocks, pipelines

PARAMS = GenerationParams(max_new_tokens=4)


class BatchEcho(Backend):
    """Answers each prompt with the prompts of its batch (the prompts of one generate call, ``size`` a batch,
    as the hf backend in file order batches them); remembers every batch."""

    kind, model = "stub", "batch-echo"

    def __init__(self, size: int, fixed: bool = True) -> None:
        self.size, self.calls, self.batches = size, 0, []
        self.fixed_batches = size if fixed else None

    def generate(self, prompts: Sequence[list[dict]], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
        texts = [p[-1]["content"] for p in prompts]
        for start in range(0, len(texts), self.size):
            batch = texts[start:start + self.size]
            self.batches.append(batch)
            for offset, _ in enumerate(batch):
                self.calls += 1
                yield start + offset, Generation("+".join(batch))


def _prompts(n: int) -> list[list[dict]]:
    return [[{"role": "user", "content": f"p{i}"}] for i in range(n)]


def test_blocks_restart_at_each_group() -> None:
    # 7 prompts, groups a a a a a b b, size 3: blocks 0-2, 3-4 (group a ends), 5-6
    assert fixed_blocks(BatchEcho(3), 7, list("aaaaabb")) == [range(0, 3), range(3, 5), range(5, 7)]
    assert fixed_blocks(BatchEcho(3), 7) == [range(0, 3), range(3, 6), range(6, 7)]
    assert fixed_blocks(BatchEcho(3, fixed=False), 7) is None
    with pytest.raises(ValueError, match="got 2 groups for 3 prompts"):
        fixed_blocks(BatchEcho(3), 3, ["a", "b"])


def test_a_stage_asks_whole_blocks_in_order(tmp_path: Path) -> None:
    backend = BatchEcho(3)
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        result = complete(backend, _prompts(7), PARAMS, cache, desc="x", progress=False, groups=list("aaaaabb"))
    assert backend.batches == [["p0", "p1", "p2"], ["p3", "p4"], ["p5", "p6"]]
    assert [g.text for g in result.generations] == ["p0+p1+p2"] * 3 + ["p3+p4"] * 2 + ["p5+p6"] * 2
    assert not pipelines(backend)  # a pipelined stage would hand it prompts one at a time


def test_answers_made_in_another_batch_are_not_reused(tmp_path: Path) -> None:
    # A run of the first 4 prompts (--limit 4) batches p3 alone; the full run batches p3 with p4 and p5 and
    # must not take the first run's p3: its key holds its block. p0-p2 share their block: reused.
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        short = BatchEcho(3)
        complete(short, _prompts(4), PARAMS, cache, desc="x", progress=False)
        assert short.batches == [["p0", "p1", "p2"], ["p3"]]
        full = BatchEcho(3)
        result = complete(full, _prompts(6), PARAMS, cache, desc="x", progress=False)
    assert full.batches == [["p3", "p4", "p5"]]
    assert [g.text for g in result.generations] == ["p0+p1+p2"] * 3 + ["p3+p4+p5"] * 3
    assert result.cache_hits == [True] * 3 + [False] * 3


def test_a_block_partly_answered_is_asked_whole(tmp_path: Path) -> None:
    # p4 failed for a passing reason (a rerun asks it): the rerun asks p3-p5 together, as the first run did,
    # and hands on only p4's answer (p3's and p5's stay the cached ones)
    class FailsOnce(BatchEcho):
        failed = False

        def generate(self, prompts, params):  # type: ignore[no-untyped-def]
            for index, generation in super().generate(prompts, params):
                if prompts[index][-1]["content"] == "p4" and not FailsOnce.failed:
                    FailsOnce.failed = True
                    generation = Generation("", error="timeout")
                yield index, generation

    from convbench_datasets.engine.stage import RunIncomplete

    with ResponseCache(tmp_path / "c.sqlite") as cache:
        with pytest.raises(RunIncomplete):
            complete(FailsOnce(3), _prompts(6), PARAMS, cache, desc="x", progress=False)
        again = FailsOnce(3)
        result = complete(again, _prompts(6), PARAMS, cache, desc="x", progress=False)
    assert again.batches == [["p3", "p4", "p5"]]
    assert [g.text for g in result.generations] == ["p0+p1+p2"] * 3 + ["p3+p4+p5"] * 3
    assert result.cache_hits == [True] * 4 + [False, True]


def test_nc_batches_restart_at_each_set(nc_built: Path, tmp_path: Path) -> None:
    # config all: basic (180 rows), rag (180), complex_request (360), each as its own file: with batches of 8,
    # basic is 22 batches of 8 and one of 4 (rows 176-179), then rag starts a new batch
    from convbench_datasets import run_nc

    backend = BatchEcho(8)
    run = run_nc(model=backend, judge="baseline:silence", out=tmp_path / "run", dataset=nc_built,
                 cache=tmp_path / "c.sqlite", progress=False)
    sizes = [len(b) for b in backend.batches]
    assert sizes == [8] * 22 + [4] + [8] * 22 + [4] + [8] * 45
    assert backend.calls == 720 and len(run.records) == 720
    start = 0
    for batch in backend.batches:  # no batch holds rows of two sets
        sets = {run.records[i]["set"] for i in range(start, start + len(batch))}
        assert len(sets) == 1, (start, sets)
        start += len(batch)


def test_hf_backend_file_order(tmp_path: Path) -> None:
    pytest.importorskip("transformers", reason="the hf backend needs the hf extra")
    from convbench_datasets.engine.backends import backend_from_spec
    from convbench_datasets.engine.cache import cache_key
    from tests.support.tiny_models import build_tiny_lm

    folder = build_tiny_lm(tmp_path / "lm")
    # prompts of lengths long, short, long, short: length order batches the two short ones together
    prompts = [[{"role": "user", "content": text}] for text in
               ("what do you mean ? please repeat the line again", "yes", "thanks okay sorry again please", "okay")]
    for order, expected in (("length", [[1, 3], [2, 0]]), ("file", [[0, 1], [2, 3]])):
        backend = backend_from_spec(f"hf:{folder}", device="cpu", batch_size=2, batch_order=order)
        seen: list[list[int]] = []
        real = backend._generate_batch

        def record(texts, params, real=real, backend=backend, seen=seen):  # type: ignore[no-untyped-def]
            rendered = [backend.render(p) for p in prompts]
            seen.append([rendered.index(t) for t in texts])
            return real(texts, params)

        backend._generate_batch = record  # type: ignore[method-assign]
        answers = dict(backend.generate(prompts, PARAMS))
        assert seen == expected and sorted(answers) == [0, 1, 2, 3], order
        assert backend.fixed_batches == (2 if order == "file" else None)
    length = backend_from_spec(f"hf:{folder}", device="cpu").identity()
    assert "batch_order" not in length  # the default keeps the cache keys it always had
    file = backend_from_spec(f"hf:{folder}", device="cpu", batch_order="file").identity()
    assert (file["batch_order"], file["batch_size"]) == ("file", 8)
    assert cache_key(length, prompts[0], {}) != cache_key(file, prompts[0], {})
    from convbench_datasets.errors import ConvbenchError

    with pytest.raises(ConvbenchError, match=r"lm: batch_order: expected one of length, file, got 'sorted'"):  # one check for all
        backend_from_spec(f"hf:{folder}", device="cpu", batch_order="sorted")


def test_cli_batch_order_reaches_the_hf_backend_and_the_signature(nc_built: Path, tmp_path: Path) -> None:
    pytest.importorskip("transformers", reason="the hf backend needs the hf extra")
    import json

    from convbench_datasets.cli import main
    from tests.support.tiny_models import build_tiny_lm

    folder = build_tiny_lm(tmp_path / "lm")
    out = tmp_path / "run"
    assert main(["run", "nc", "--model", f"hf:{folder}", "--judge", "baseline:silence", "--config", "basic",
                 "--limit", "5", "--max-new-tokens", "3", "--device", "cpu", "--batch-size", "2",
                 "--batch-order", "file", "--dataset", str(nc_built), "--out", str(out),
                 "--cache", str(tmp_path / "c.sqlite"), "--no-progress",
                 "--max-empty-rate", "1"]) == 0  # a random-weight model may answer "" (ends at once) on some rows
    identity = json.loads((out / "results.json").read_text())["signature"]["model_identity"]
    assert (identity["batch_order"], identity["batch_size"]) == ("file", 2)


def test_sweep_files_take_batch_order() -> None:
    from convbench_datasets.errors import ConvbenchError
    from convbench_datasets.runs.sweep_file import Endpoint, read_sweep

    with pytest.raises(ConvbenchError, match=r"models\[0\]\.batch_order: expected one of length, file, got 'sorted'"):
        read_sweep({"out": "x", "models": [{"spec": "hf:m", "batch_order": "sorted"}], "benchmarks": {"nc": {}}})
    # batch order decides hf answers (and in file order the size too): a cell's identity holds them
    file = Endpoint("hf:m", "m", {"batch_order": "file", "batch_size": 4}).identity()
    assert file == {"spec": "hf:m", "batch_order": "file", "batch_size": 4}
    assert Endpoint("hf:m", "m", {"batch_order": "length", "batch_size": 4}).identity() == {
        "spec": "hf:m", "batch_order": "length"}


def test_file_order_answers_are_the_released_loops(tmp_path: Path) -> None:
    # The released pred_hf.py, restated (not run): per data file, batches of --batch_size in file order,
    # tokenizer(prompts, add_special_tokens=False (chat template), padding=True) with left padding,
    # generate(do_sample=False), batch_decode(skip_special_tokens=True) of the new tokens; bf16.
    # A stage over two "files" (groups) with the hf backend in file order must give exactly its answers.
    pytest.importorskip("transformers", reason="the hf backend needs the hf extra")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from convbench_datasets.engine.backends import backend_from_spec
    from tests.support.tiny_models import build_tiny_lm

    folder = build_tiny_lm(tmp_path / "lm")
    words = ["yes", "okay", "thanks", "please", "again", "sorry", "what", "do", "you", "mean", "repeat", "line"]
    prompts = [[{"role": "user", "content": " ".join(words[: 1 + (7 * i) % len(words)])}] for i in range(11)]
    groups = ["basic"] * 6 + ["rag"] * 5
    params = GenerationParams(max_new_tokens=6)
    backend = backend_from_spec(f"hf:{folder}", device="cpu", dtype="bfloat16", batch_size=4, batch_order="file")
    batches: list[list[str]] = []
    real = backend._generate_batch
    backend._generate_batch = lambda texts, p: batches.append(list(texts)) or real(texts, p)  # type: ignore[method-assign]
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        ours = complete(backend, prompts, params, cache, desc="x", progress=False, groups=groups).generations

    tokenizer = AutoTokenizer.from_pretrained(folder, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16).eval()
    released: list[str] = []
    released_batches: list[list[str]] = []
    for file in (prompts[:6], prompts[6:]):
        texts = [tokenizer.apply_chat_template(p, add_generation_prompt=True, tokenize=False) for p in file]
        for start in range(0, len(texts), 4):
            released_batches.append(texts[start:start + 4])
            inputs = tokenizer(texts[start:start + 4], add_special_tokens=False, padding=True, return_tensors="pt")
            with torch.inference_mode():
                output = model.generate(**inputs, pad_token_id=tokenizer.pad_token_id, max_new_tokens=6, do_sample=False)
            released += tokenizer.batch_decode(output[:, inputs["input_ids"].shape[1]:], skip_special_tokens=True)
    assert batches == released_batches  # batches of 4, 2 (the first file's end), 4, 1
    assert [len(b) for b in batches] == [4, 2, 4, 1]
    assert [g.text for g in ours] == released
    assert any(released)
