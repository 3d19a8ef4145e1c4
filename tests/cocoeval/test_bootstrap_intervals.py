"""CoCoEval's bootstrap intervals, all statistics' percentiles taken at once (issue #23), against each
statistic recomputed by hand from the same draws, one column at a time."""

from __future__ import annotations

import numpy as np
import pytest

from convbench_datasets.cocoeval.behavior_frequency import _clusters, _intervals


def _by_hand(samples: np.ndarray) -> list[float | None]:
    finite = samples[np.isfinite(samples)]
    return [None, None] if not len(finite) else list(np.percentile(finite, [2.5, 97.5]))


@pytest.mark.parametrize("groups", [None, [f"c{i // 4}" for i in range(40)]])
def test_every_interval_is_its_own_statistics_percentiles(groups: list[str] | None) -> None:
    rng = np.random.default_rng(7)
    model = rng.poisson([1.0, 0.5, 2.0], size=(40, 3)).astype(float)
    human = rng.poisson([0.5, 1.0, 0.04], size=(40, 3)).astype(float)  # "c" is rare: some resamples have none
    human[:, 2] = 0
    human[[3, 21], 2] = 1
    member = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])  # a, b in one group, c in the other
    clusters = _clusters(groups, 40)
    out = _intervals(model, human, ["a", "b", "c"], clusters, 500, 3, (["g1", "g2"], member))

    # the same draws: 500 resamples of the clusters, each resample's rows gathered and averaged
    draws = np.random.default_rng(3).integers(0, len(clusters), size=(500, len(clusters)))
    rows = [[r for c in drawn for r in clusters[c]] for drawn in draws]
    m, h = np.array([model[r].mean(axis=0) for r in rows]), np.array([human[r].mean(axis=0) for r in rows])
    ratio = np.array([[a / b if b > 0 else np.nan for a, b in zip(x, y)] for x, y in zip(m, h)])
    mismatch = np.array([100 * np.abs(x - y).sum() / y.sum() for x, y in zip(m, h)])
    assert np.isnan(ratio[:, 2]).any() and not np.isnan(ratio[:, 2]).all()  # the case that needs its own path
    for j, name in enumerate("abc"):
        assert out["model_mean"][name] == pytest.approx(_by_hand(m[:, j]), rel=1e-9)
        assert out["human_mean"][name] == pytest.approx(_by_hand(h[:, j]), rel=1e-9)
        assert out["difference"][name] == pytest.approx(_by_hand(m[:, j] - h[:, j]), rel=1e-9, abs=1e-12)
        assert out["ratio"][name] == pytest.approx(_by_hand(ratio[:, j]), rel=1e-9)
        assert out["undefined_resamples"][f"ratio {name}"] == int(np.isnan(ratio[:, j]).sum())
    assert out["mismatch"] == pytest.approx(_by_hand(mismatch), rel=1e-9)
    for k, group in enumerate(["g1", "g2"]):
        mg, hg = m @ member[:, k], h @ member[:, k]
        for key, samples in (("model_mean", mg), ("human_mean", hg), ("difference", mg - hg)):
            assert out["by_group"][group][key] == pytest.approx(_by_hand(samples), rel=1e-9, abs=1e-12)
