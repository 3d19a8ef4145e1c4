"""nico_generation's shortcuts change no number: repeated texts segmented once, packed worker results,
and the automatic worker count (scoring/workers.py)."""

from __future__ import annotations

import random

import pytest

from convbench_datasets.nico import nico_generation
from convbench_datasets.scoring import workers
from convbench_datasets.nico.nico_generation import PARALLEL_MIN_PAIRS, score_generation

CHARS = "我今天去超市买了很多水果你要不要来一点好的谢谢没问题明天见吧周末一起去公园散步怎么样，。？ OK 3.5"


def _texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(CHARS) for _ in range(rng.randint(0, 30))) for _ in range(n)]


def test_repeated_texts_are_segmented_once_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    references = _texts(5, seed=1) * 40  # 5 references, each shared by 40 predictions
    predictions = _texts(195, seed=2) + references[:5]  # and 5 predictions equal to their reference
    expected = score_generation(predictions, references, tokenizer="jieba", workers=1)

    real = nico_generation._tokenizer("jieba")
    calls: list[str] = []

    def counting(text: str) -> list[str]:
        calls.append(text)
        return real(text)

    monkeypatch.setattr(nico_generation, "_tokenizer", lambda name: counting)
    assert score_generation(predictions, references, tokenizer="jieba", workers=1) == expected
    assert sorted(calls) == sorted(set(predictions) | set(references))


@pytest.mark.parametrize("tokenizer", ["jieba", "char", "13a"])
@pytest.mark.parametrize("distinct_level", ["response", "corpus"])
def test_worker_results_unpack_to_the_same_numbers(tokenizer: str, distinct_level: str) -> None:
    # Empty and whitespace-only texts (no tokens) and repeated references travel through the packing too.
    predictions = _texts(PARALLEL_MIN_PAIRS, seed=3) + ["", "  ", "OK"]
    references = (_texts(50, seed=4) * (PARALLEL_MIN_PAIRS // 50 + 1))[: len(predictions)]
    kinds = [("exchange", "conflict", "cooperation")[i % 3] for i in range(len(predictions))]
    kwargs = {"tokenizer": tokenizer, "distinct_level": distinct_level, "interaction_types": kinds}
    single = score_generation(predictions, references, workers=1, **kwargs)
    assert score_generation(predictions, references, workers=3, **kwargs) == single
    stats = nico_generation.pair_statistics(predictions, references, tokenizer, workers=1)
    assert nico_generation.pair_statistics(predictions, references, tokenizer, workers=2) == stats


@pytest.mark.parametrize(("cores", "load", "items", "expected"), [
    (2, 3.2, 1_000_000, 1),   # the 2-core machine under load: a second process would only compete
    (2, 0.2, 100_000, 2),     # idle: one worker per PAIRS_PER_WORKER pairs, up to the idle cores
    (2, 0.2, 10_000, 1),      # too little work to pay for a worker
    (16, 0.0, 100_000, 4),
    (16, 6.0, 10**7, 11),     # 5 cores busy with other work: 11 left
    (16, 40.0, 10**7, 1),
])
def test_worker_count_follows_size_and_idle_cores(monkeypatch: pytest.MonkeyPatch, cores: int, load: float,
                                                  items: int, expected: int) -> None:
    monkeypatch.setattr(workers, "usable_cores", lambda: cores)
    monkeypatch.setattr(workers.os, "getloadavg", lambda: (load, load, load))
    assert workers.pick_workers(items, nico_generation.PAIRS_PER_WORKER) == expected


def test_no_load_average_counts_every_core_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    def unavailable() -> tuple[float, float, float]:
        raise OSError("no load average here")

    monkeypatch.setattr(workers, "usable_cores", lambda: 8)
    monkeypatch.setattr(workers.os, "getloadavg", unavailable)
    assert workers.idle_cores() == 8


def test_real_core_counts_are_sane() -> None:
    assert 1 <= workers.idle_cores() <= workers.usable_cores()


def test_usable_cores_follow_the_affinity_mask(monkeypatch: pytest.MonkeyPatch) -> None:
    # A process pinned to 3 of 64 CPUs (taskset, a container's cpuset) may use 3: not os.cpu_count().
    monkeypatch.setattr(workers.os, "sched_getaffinity", lambda pid: {0, 5, 7}, raising=False)
    monkeypatch.setattr(workers.os, "cpu_count", lambda: 64)
    assert workers.usable_cores() == 3
    monkeypatch.delattr(workers.os, "sched_getaffinity")  # macOS, Windows: no affinity call
    assert workers.usable_cores() == 64
