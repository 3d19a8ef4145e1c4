"""A one-row run whose row ended in an error fails the error-rate check like any other: 1 of 1 rows is 100%,
more than the default 5% --max-error-rate, so it never leaves with exit code 0."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from convbench_datasets import run_nc
from convbench_datasets.engine.backends import Backend, Generation, GenerationParams
from convbench_datasets.engine.error_rate import DEFAULT_MAX_ERROR_RATE, TooManyErrors, check_error_rate
from convbench_datasets.engine.run_folder import RunResult
from convbench_datasets.runs.run_checks import check_run, share_problem


class _Plain:
    """A benchmark with nothing of its own to check (no judge answers, always something measured)."""

    def unread(self, results: dict[str, Any]) -> list:
        return []

    def unmeasured(self, results: dict[str, Any]) -> None:
        return None


def test_the_default_limit_is_five_percent() -> None:
    assert DEFAULT_MAX_ERROR_RATE == 0.05  # the docs' --max-error-rate default


def test_one_errored_row_of_one_is_a_problem() -> None:
    # by hand: 1 of 1 is 100.0%, more than 5%; 0 of 1 is 0%, not more
    assert share_problem(1, 1, 0.05, "rows", "ended in an error", "--max-error-rate") == (
        "1 of 1 rows (100.0%) ended in an error, more than the 5% --max-error-rate allows")
    assert share_problem(0, 1, 0.05, "rows", "ended in an error", "--max-error-rate") is None
    assert share_problem(1, 1, 1.0, "rows", "ended in an error", "--max-error-rate") is None  # 100% accepted
    # two rows, one errored: 50%, a problem too
    assert share_problem(1, 2, 0.05, "rows", "ended in an error", "--max-error-rate") is not None


def test_check_error_rate_fails_a_single_errored_item() -> None:
    with pytest.raises(TooManyErrors, match=r"^1 of 1 rows \(100\.0%\) ended in an error, more than the 5% ") as err:
        check_error_rate(1, 1, 0.05, what="rows")
    assert (err.value.errors, err.value.total, err.value.limit) == (1, 1, 0.05)
    check_error_rate(0, 1, 0.05, what="rows")  # no error: passes
    check_error_rate(1, 1, 1.0, what="rows")  # everything accepted


def test_check_run_fails_a_one_row_run_whose_row_errored(tmp_path: Path) -> None:
    records = [{"set": "basic", "id": 7, "error": "model: HTTP 500 from http://127.0.0.1:1/v1: boom"}]
    result = RunResult(tmp_path, records, {"signature": {"model": "openai:m"}, "stats": {}})
    with pytest.raises(TooManyErrors) as err:
        check_run(result, _Plain(), max_error_rate=0.05)
    # by hand: 1 of 1 rows is 100%; the first (only) errored row is basic/7
    assert str(err.value).startswith("1 of 1 rows (100.0%) ended in an error, more than the 5% --max-error-rate "
                                     "allows; first: basic/7: model: HTTP 500 from http://127.0.0.1:1/v1: boom; ")
    assert (err.value.errors, err.value.total, err.value.result) == (1, 1, result)
    fine = RunResult(tmp_path, [{"set": "basic", "id": 7, "error": None}], {"signature": {}, "stats": {}})
    check_run(fine, _Plain(), max_error_rate=0.05)  # the same row answered: passes


class _Refusing(Backend):
    """A generator whose every answer is the row's own error (a prompt the server refused, say)."""

    kind = "stub"
    model = "refusing"

    def generate(self, prompts: Sequence[Any], params: GenerationParams) -> Iterator[tuple[int, Generation]]:
        for i, _ in enumerate(prompts):
            yield i, Generation("", error="refused for this row: HTTP 400: too long", permanent=True)

    def identity(self) -> dict[str, Any]:
        return {"kind": self.kind, "model": self.model}


def test_a_one_row_run_whose_row_errored_raises_after_writing(nc_built: Path, tmp_path: Path) -> None:
    with pytest.raises(TooManyErrors) as err:
        run_nc(model=_Refusing(), judge="baseline:smoke-judge", out=tmp_path / "run", config="basic", limit=1,
               dataset=nc_built, cache=tmp_path / "c.sqlite", progress=False)
    # by hand: limit=1, and that one row errored: 1 of 1 rows, 100%, more than the default 5%
    assert str(err.value).startswith("1 of 1 rows (100.0%) ended in an error, more than the 5% --max-error-rate "
                                     "allows; first: basic/"), str(err.value)
    assert (err.value.errors, err.value.total) == (1, 1)
    assert (tmp_path / "run" / "results.json").is_file() and len(err.value.result.records) == 1  # written first
