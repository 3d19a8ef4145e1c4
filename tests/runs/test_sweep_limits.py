"""A sweep file's size is bounded (issue 19): a grid over MAX_CELLS cells is refused, naming it, by the product of
its axes' lengths, before it is expanded (a 32-million-cell grid hung; 720,000 cells took 105 s and 650 MB)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from convbench_datasets.errors import ConvbenchError
from convbench_datasets.runs.sweep_file import MAX_CELLS, read_sweep


def _sweep(benchmarks: Any, models: list[str] | None = None) -> dict[str, Any]:
    return {"out": "unused", "models": models or ["baseline:repeat"], "benchmarks": benchmarks}


def _refused(sweep: dict[str, Any]) -> str:
    started = time.perf_counter()
    with pytest.raises(ConvbenchError) as err:
        read_sweep(sweep)
    assert time.perf_counter() - started < 5  # refused before the grid is expanded or planned
    return str(err.value)


def test_the_limit_is_ten_thousand_cells() -> None:
    assert MAX_CELLS == 10_000  # README, Sweeps, says so


def test_a_32_million_cell_grid_is_refused_at_once_naming_it() -> None:
    grid = {"task": "open_domain", "max_new_tokens": list(range(1, 8001)), "shots": [0, 3],
            "split": ["train", "test"], "tokenizer": ["jieba", "char", "rjieba"],
            "seed_unknown": list(range(333))}
    message = _refused(_sweep({"nico": grid}))
    assert message == ("sweep: benchmarks.nico: its grid is 1 x 8000 x 2 x 2 x 3 x 333 settings x 1 model = 31,968,000 "
                       "cells; a sweep file may have at most 10,000 (MAX_CELLS): split the sweep into several files")


def test_models_count_and_so_do_earlier_blocks() -> None:
    grid = {"task": "open_domain", "max_new_tokens": list(range(1, 3001))}
    message = _refused(_sweep({"nico": grid}, models=["baseline:repeat", "baseline:silence", "openai:m", "openai:n"]))
    assert "benchmarks.nico: its grid is 1 x 3000 settings x 4 models = 12,000 cells" in message
    message = _refused(_sweep({"nico": [grid, grid, {**grid, "shots": 3}, {**grid, "split": "train"}]}))
    assert ("benchmarks.nico[3]: its grid is 1 x 3000 x 1 settings x 1 model = 3,000 cells; a sweep file may have at "
            "most 10,000 (MAX_CELLS), and the blocks before it have 9,000") in message


def test_one_list_longer_than_the_limit_is_refused_before_its_values_are_checked() -> None:
    message = _refused(_sweep({"nico": {"task": "open_domain", "max_new_tokens": list(range(1, 1_000_001))}}))
    assert ("benchmarks.nico.max_new_tokens: lists 1,000,000 values, more than the 10,000 cells a sweep file may have "
            "(MAX_CELLS)") in message


def test_repeated_values_are_still_found_in_a_long_list() -> None:
    values = [*range(1, 5001), 7]
    message = _refused(_sweep({"nico": {"task": "open_domain", "max_new_tokens": values}}))
    assert "benchmarks.nico.max_new_tokens[5000]: repeats benchmarks.nico.max_new_tokens[6] (7)" in message


def test_a_grid_within_the_limit_is_read() -> None:
    sweep = read_sweep(_sweep({"nico": {"task": ["open_domain", "dialog_completion"], "shots": [0, 3]}},
                              models=["baseline:repeat", "baseline:silence"]))
    assert len(sweep.cells) == 8
