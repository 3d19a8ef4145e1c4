"""Paired tests: the textbook answers on constructed runs."""

from __future__ import annotations

import pytest

from convbench_datasets.nc.compare import compare_nc_runs
from convbench_datasets.scoring.paired import paired_test


def test_identical_runs_have_p_one() -> None:
    scores = [1, 0, 1, 1, 0, 1, 0, 0, 1, 1]
    out = paired_test(scores, scores, n_resamples=500)
    assert out["difference"] == 0.0 and out["p_bootstrap"] == 1.0 and out["p_randomization"] == 1.0
    assert not out["significant"]


def test_a_uniformly_better_run_has_p_near_zero() -> None:
    out = paired_test([1] * 60, [0] * 60, n_resamples=1000)
    # no resample reaches 0: p_bootstrap = 2 * (1 + 0) / (1 + 1000); few sign patterns keep |mean| at 1
    assert out["difference"] == 1.0 and out["p_bootstrap"] == pytest.approx(2 / 1001) and out["p_randomization"] < 0.01
    assert out["significant"] and out["interval"] == [1.0, 1.0]


@pytest.mark.parametrize("n_resamples", [1, 10, 1000])
def test_randomization_p_value_is_never_zero(n_resamples: int) -> None:
    # 60 rows, all A = 1, B = 0: a random swap keeps |mean difference| = 1 only if all 60 signs agree
    # (chance 2 / 2**60), so in practice no trial reaches the observed difference and the count is 0.
    # p = (1 + 0) / (1 + trials), by hand 1/2, 1/11, 1/1001: the smallest p a finite test can show, never 0.
    out = paired_test([1] * 60, [0] * 60, n_resamples=n_resamples)
    assert out["p_randomization"] == pytest.approx(1 / (1 + n_resamples), rel=1e-12)


def test_nc_comparison_per_pattern_and_row_matching() -> None:
    a = [{"set": "basic", "id": i, "pattern": "Repeat Request" if i < 20 else "Inquiry", "passed": True} for i in range(40)]
    b = [{**r, "passed": r["pattern"] == "Inquiry"} for r in reversed(a)]  # same rows, another order
    out = compare_nc_runs(a, b, n_resamples=300)
    assert out["overall"]["difference"] == 50.0 and out["per_pattern"]["Inquiry"]["difference"] == 0.0
    assert out["per_pattern"]["Repeat Request"]["significant"] and not out["per_pattern"]["Inquiry"]["significant"]
    assert out["per_set"]["basic"]["difference"] == 50.0 and out["per_set_pattern"]["basic/Inquiry"]["difference"] == 0.0
    with pytest.raises(ValueError, match="did not score the same rows"):
        compare_nc_runs(a, b[:-1])


def test_tied_resamples_count_in_both_tails() -> None:
    # diff = [1, 0, 0, 0]: a resample's mean is 0 exactly when it never draws row 0 (chance (3/4)**4, about
    # 0.32), else positive. Those ties count in both tails, so p = 2 * (1 + ties) / 1001, about 0.63; the ties
    # counted from the same seeded draws as paired_test makes (default_rng(seed).integers(0, n, (resamples, n))).
    import numpy as np

    draws = np.random.default_rng(0).integers(0, 4, size=(1000, 4))
    ties = int((draws != 0).all(axis=1).sum())
    out = paired_test([1, 0, 0, 0], [0, 0, 0, 0], n_resamples=1000, seed=0)
    assert out["p_bootstrap"] == pytest.approx(2 * (1 + ties) / 1001) and 0.55 < out["p_bootstrap"] < 0.72
    assert not out["significant"]


def test_significant_needs_both_p_values_below_five_percent() -> None:
    # 3 rows, A = 1 and B = 0 on each: every bootstrap resample keeps the difference 1, so p_bootstrap is the
    # smallest, 2 / 1001; a random swap keeps |mean difference| = 1 only if the three signs agree (chance 1/4),
    # so p_randomization is about 0.25. The rule is max(p_bootstrap, p_randomization) < 0.05: not significant.
    out = paired_test([1, 1, 1], [0, 0, 0], n_resamples=1000, seed=0)
    assert out["p_bootstrap"] == pytest.approx(2 / 1001)
    assert out["p_randomization"] == pytest.approx(0.25, abs=0.05)
    assert not out["significant"]
