"""What an inspect task reads (issue #41): a missing source is inspect's one-line ``PrerequisiteError``, not a
203-line traceback; the README's ``hub/NAME`` build is the default dataset when it is here; ``-T sample=N``
draws rows across the benchmark's strata, as ``convbench run --sample`` does, and the log's metadata records it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai", reason="inspect_ai is not installed (pip install -e \".[inspect]\")")

from inspect_ai._util.error import PrerequisiteError  # noqa: E402

from convbench_datasets.integrations.inspect import cocoeval, nc  # noqa: E402


def test_a_missing_source_is_a_prerequisite_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "mirror"
    empty.mkdir()
    monkeypatch.setenv("CONVBENCH_CACHE", str(tmp_path / "cache"))  # no cached build to fall back on
    monkeypatch.chdir(tmp_path)  # no hub/nc here either
    with pytest.raises(PrerequisiteError, match=r"^convbench/nc: source file nc-bench/\S+ not found in the mirror"):
        nc(config="basic", sources=str(empty))


def test_the_readmes_build_is_the_default_dataset_and_sample_spreads_over_patterns(
        nc_built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "hub").mkdir()
    (tmp_path / "hub" / "nc").symlink_to(nc_built)
    monkeypatch.chdir(tmp_path)
    task = nc(config="basic", sample=18, sample_seed=3)
    rows = [sample.metadata for sample in task.dataset]
    # basic has 9 patterns of 20 rows (the paper's Table 1): 18 drawn across them is 2 per pattern
    assert len(rows) == 18 and set(Counter(r["pattern"] for r in rows).values()) == {2}
    assert task.metadata["convbench"]["sample"] == {"n": 18, "seed": 3, "by": ["set", "pattern"]}
    assert [s.id for s in nc(config="basic", sample=18, sample_seed=3).dataset] == [s.id for s in task.dataset]
    assert "sample" not in nc(config="basic").metadata["convbench"]  # every row: nothing recorded


def test_cocoeval_sample_spreads_over_sources(cocoeval_built: Path) -> None:
    task = cocoeval(dataset=str(cocoeval_built), sample=8, n_bootstrap=10)
    # the mirror's build has four sources (no TCR files): 8 drawn across them is 2 each
    assert Counter(s.metadata["source"] for s in task.dataset) == {"qmsum_product": 2, "qmsum_academic": 2,
                                                                   "qmsum_committee": 2, "iq2": 2}
