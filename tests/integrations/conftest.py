"""Fixtures of the harness-integration tests (the session's builds come from tests/conftest.py)."""

from __future__ import annotations

import functools
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

# A dialogue line that, read alone, says "none" (convbench's reader takes 都很自然。 as "no unnatural sentence")
NONE_LINE = "都很自然。"
NONE_LINE_ROW = "sample-02/identify_unnatural"  # a train dialogue without unnatural sentences


@pytest.fixture(scope="session")
def nico_none_line(nico_built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample build with the 4th turn of one clean train dialogue (``NONE_LINE_ROW``) replaced by
    ``NONE_LINE``: an answer quoting that turn names a sentence of the dialogue (a prediction, P = R = 0
    on a clean dialogue), which only a reader that knows the dialogue can tell from the answer "none"."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = tmp_path_factory.mktemp("hub") / "nico"
    shutil.copytree(nico_built, out)
    (path,) = (out / "identify_unnatural").glob("train-*.parquet")
    table = pq.read_table(path)
    rows = table.to_pylist()
    (row,) = [r for r in rows if r["id"] == NONE_LINE_ROW]
    assert row["unnatural_sentences"] == [] and row["dialogue"][3]["text"] == "好，笔记明天上课带给你。"
    row["dialogue"][3]["text"] = NONE_LINE
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
    return out


def quote_none_line(messages: list[dict[str, str]]) -> str:
    """Quotes ``NONE_LINE`` where the prompt's dialogue has it, else answers "none" (无)."""
    return NONE_LINE if NONE_LINE in messages[-1]["content"] else "无"


@pytest.fixture(scope="session", autouse=True)
def installed_distributions_read_once() -> Iterator[None]:
    """inspect names the distribution of each eval's task in its log. For convbench's tasks its fast path
    misses (the import name, convbench_datasets, is not the distribution's, convbench), and it reads the
    file list of every installed distribution (importlib.metadata.packages_distributions), 1-2 s per eval.
    Nothing is installed into this interpreter during a test run, so the suite reads that table once."""
    try:
        from inspect_ai._util import package
    except ImportError:
        package = None
    original = getattr(package, "packages_distributions", None)
    if original is None:  # no inspect_ai, or one that no longer looks there: nothing to spare
        yield
        return
    package.packages_distributions = functools.cache(original)
    try:
        yield
    finally:
        package.packages_distributions = original
