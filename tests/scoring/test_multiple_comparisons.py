"""``convbench compare`` prints many comparisons at once (overall, per set, per set and pattern: 33 for a whole
NC-Bench run); their p-values are adjusted for the family (Holm by default, Benjamini-Hochberg on request), each
line shows its n, and a cell where both runs scored every row alike says "identical" (issue #41)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from convbench_datasets import run_nc
from convbench_datasets.cli import main
from convbench_datasets.scoring.paired import adjust, adjust_family


def test_holm_and_benjamini_hochberg_by_hand() -> None:
    p = [0.01, 0.04, 0.03, 0.005]
    # Holm: sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04, made non-decreasing
    assert adjust(p, "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # BH: times 4/1, 4/2, 4/3, 4/4 = 0.02, 0.02, 0.04, 0.04, made non-increasing from the largest
    assert adjust(p, "bh") == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert adjust(p, "none") == p and adjust([0.6, 0.5], "holm") == [1.0, 1.0]  # capped at 1
    with pytest.raises(ValueError, match="correction must be one of holm, bh, none"):
        adjust(p, "bonferroni")


def test_a_family_reads_the_larger_p_and_significance_follows_the_adjusted_one() -> None:
    tests = [{"p_bootstrap": 0.01, "p_randomization": 0.02}, {"p_bootstrap": 0.03, "p_randomization": 0.001}]
    adjust_family(tests, "holm")
    # the larger of each: 0.02 and 0.03; Holm: 0.02 x 2 = 0.04, 0.03 x 1 -> 0.04 (non-decreasing)
    assert [t["p_adjusted"] for t in tests] == pytest.approx([0.04, 0.04])
    assert all(t["significant"] and t["correction"] == "holm" for t in tests)


def test_compare_prints_n_adjusted_p_values_and_identical_cells(nc_built: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    common = dict(judge="baseline:smoke-judge", config="basic", dataset=nc_built, cache=tmp_path / "c.sqlite",
                  progress=False, limit=40)
    a = run_nc(model="baseline:repeat", out=tmp_path / "a", **common)
    b = run_nc(model="baseline:repeat", out=tmp_path / "b", **common)  # the same answers: every cell identical
    assert main(["compare", str(a.path), str(b.path), "--resamples", "50"]) == 0
    out = capsys.readouterr().out.splitlines()
    family = out[1:]
    assert re.search(rf"p-values Holm-adjusted over the {len(family)} comparisons below", out[0])
    assert family[0].split() == ["overall", "n", "40", "identical"]
    assert all(line.split()[-1] == "identical" for line in family)
    c = run_nc(model="baseline:silence", out=tmp_path / "c", **common)
    assert main(["compare", str(a.path), str(c.path), "--resamples", "50", "--correction", "none"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "p-values unadjusted, of the" in lines[0]
    for line in lines[1:]:
        if "identical" not in line:  # unadjusted: p(adjusted) is the larger of the two p-values
            values = [float(v) for v in re.findall(r"p\(\w+\) (\d\.\d{3})", line)]
            assert values[2] == pytest.approx(max(values[:2]), abs=1e-3)
