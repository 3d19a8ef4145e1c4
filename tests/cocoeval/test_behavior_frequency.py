"""behavior_frequency: hand-made tables, intervals, per-source tables, rater agreement."""

from __future__ import annotations

import math

import pytest

from convbench_datasets.cocoeval.behavior_frequency import (
    mean_with_interval,
    rater_agreement,
    score_frequencies,
    spearman,
)

NAMES = ["Repetition", "Off Topic", "Interruption"]


def test_hand_made_table() -> None:
    # Three contexts. Model: R R | O | (none). Human: R | R O I | O.
    # model_mean: R 2/3, O 1/3, I 0; human_mean: R 2/3, O 2/3, I 1/3.
    # difference: 0, -1/3, -1/3; mismatch = (0 + 1/3 + 1/3) / (2/3 + 2/3 + 1/3) = 40%.
    out = score_frequencies([["Repetition", "Repetition"], ["Off Topic"], []],
                            [["Repetition"], ["Repetition", "Off Topic", "Interruption"], ["Off Topic"]],
                            behaviours=NAMES, n_bootstrap=0, sources=["a", "a", "b"])
    assert out["model_mean"] == pytest.approx({"Repetition": 2 / 3, "Off Topic": 1 / 3, "Interruption": 0.0})
    assert out["human_mean"] == pytest.approx({"Repetition": 2 / 3, "Off Topic": 2 / 3, "Interruption": 1 / 3})
    assert out["difference"]["Off Topic"] == pytest.approx(-1 / 3) and out["ratio"]["Off Topic"] == pytest.approx(0.5)
    assert out["mismatch"] == pytest.approx(40.0)
    assert out["per_source"]["b"]["human_mean"]["Off Topic"] == 1.0 and out["per_source"]["a"]["n"] == 2


def test_bootstrap_intervals_contain_the_means() -> None:
    predictions = [["Repetition"] * (i % 3) for i in range(40)]
    references = [["Repetition"] * (i % 4) + ["Off Topic"] * (i % 2) for i in range(40)]
    out = score_frequencies(predictions, references, behaviours=NAMES, n_bootstrap=500, seed=3)
    for side in ("model_mean", "human_mean"):
        for name in ("Repetition", "Off Topic"):
            low, high = out["intervals"][side][name]
            assert low <= out[side][name] <= high
    low, high = out["intervals"]["mismatch"]
    assert low <= out["mismatch"] <= high
    assert score_frequencies(predictions, references, behaviours=NAMES, n_bootstrap=500, seed=3) == out


def test_unknown_behaviours_are_errors() -> None:
    with pytest.raises(ValueError, match="row 1: field 'references' names unknown behaviour 'Gossip'"):
        score_frequencies([[], []], [[], ["Gossip"]], behaviours=NAMES)
    with pytest.raises(ValueError, match="2 predictions but 1 references"):
        score_frequencies([[], []], [[]], behaviours=NAMES)


def test_default_taxonomy_and_overall_scores() -> None:
    out = score_frequencies([["Wrong Information"]], [["Persistent Disagreement"]], n_bootstrap=0)
    assert len(out["model_mean"]) == 10 and out["mismatch"] == 200.0
    scores = mean_with_interval([6, 7, 8, 7], n_bootstrap=200)
    assert scores["mean"] == 7.0 and scores["interval"][0] <= 7.0 <= scores["interval"][1]


def test_spearman_and_rater_agreement() -> None:
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # ties: ranks of [1, 1, 2] are [1.5, 1.5, 3]; against [1, 2, 3]: r = 0.866...
    assert spearman([1, 1, 2], [1, 2, 3]) == pytest.approx(math.sqrt(3) / 2)
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3]))
    agreeing = [[1, 2, 3, 4, 5, 6], [2, 3, 4, 5, 6, 7], [1, 3, 2, 5, 4, 6]]
    out = rater_agreement(agreeing, n_bootstrap=300)
    assert out["loo_spearman"] > 0.8 and out["p_value"] < 0.05
    opposed = [[1, 2, 3, 4, 5, 6], [6, 5, 4, 3, 2, 1]]
    assert rater_agreement(opposed, n_bootstrap=300)["p_value"] > 0.5


def test_cluster_bootstrap_resamples_conversations() -> None:
    predictions = [["Repetition"] * (i % 3) for i in range(12)]
    references = [["Repetition"] * (i % 2) for i in range(12)]
    by_instance = score_frequencies(predictions, references, behaviours=NAMES, n_bootstrap=200)
    one_conversation = score_frequencies(predictions, references, behaviours=NAMES, n_bootstrap=200, groups=["c"] * 12)
    low, high = one_conversation["intervals"]["model_mean"]["Repetition"]
    assert low == high == one_conversation["model_mean"]["Repetition"]  # one cluster: every resample is the data
    low, high = by_instance["intervals"]["model_mean"]["Repetition"]
    assert low < high
    assert one_conversation["signature"]["interval"] == "percentile bootstrap 95% over source conversations"
    assert by_instance["signature"]["interval"] == "percentile bootstrap 95% over instances"


def test_no_human_behaviour_gives_undefined_not_nan() -> None:
    out = score_frequencies([["Repetition"]], [[]], behaviours=NAMES, n_bootstrap=20)
    assert out["mismatch"] is None and out["ratio"]["Repetition"] is None
    assert out["intervals"]["mismatch"] == [None, None] and out["intervals"]["undefined_resamples"]["mismatch"] == 20


def test_behaviour_columns_from_to_pandas_numpy_arrays_are_accepted() -> None:
    # Dataset.to_pandas() gives each row of a list column as a numpy array; before: "must be a list of
    # behaviour names, got array([...])". Expected: the hand-made table above (mismatch 40%).
    import datasets

    frame = datasets.Dataset.from_dict({
        "model": [["Repetition", "Repetition"], ["Off Topic"], []],
        "human": [["Repetition"], ["Repetition", "Off Topic", "Interruption"], ["Off Topic"]],
    }).to_pandas()
    assert type(frame["model"][0]).__name__ == "ndarray"
    out = score_frequencies(frame["model"].to_list(), frame["human"].to_numpy(), behaviours=NAMES, n_bootstrap=0)
    assert out["mismatch"] == pytest.approx(40.0)


# --- issue #12: groups, the vectorised bootstrap, the mismatch's noise floor ---


def test_group_totals_put_unclear_intent_with_the_uncollaborative() -> None:
    # built-in taxonomy. Model: Unclear Intent + Repetition; human: Unclear Intent + Off Topic + Off Topic.
    # inconsistent: model 1 (Repetition), human 0; uncollaborative: model 1, human 3 (Unclear Intent counts here).
    out = score_frequencies([["Unclear Intent", "Repetition"]], [["Unclear Intent", "Off Topic", "Off Topic"]],
                            n_bootstrap=0)
    assert out["by_group"] == {"inconsistent": {"model_mean": 1.0, "human_mean": 0.0, "difference": 1.0},
                               "uncollaborative": {"model_mean": 1.0, "human_mean": 3.0, "difference": -2.0}}
    assert "by_group" not in score_frequencies([["Repetition"]], [[]], behaviours=NAMES, n_bootstrap=0)


def test_vectorised_intervals_match_a_slow_loop_on_the_same_draws() -> None:
    import numpy as np

    from convbench_datasets.cocoeval.behavior_frequency import bootstrap_draws

    predictions = [["Repetition"] * (i % 3) + ["Interruption"] * (i % 2) for i in range(9)]
    references = [["Repetition"] * (i % 2) + ["Off Topic"] * ((i + 1) % 3) for i in range(9)]
    groups = ["a", "a", "b", "c", "c", "c", "d", "e", "e"]
    clusters = [[0, 1], [2], [3, 4, 5], [6], [7, 8]]  # by first appearance, as the scorer groups them
    groups_of = {"Repetition": "x", "Off Topic": "y", "Interruption": "y"}
    out = score_frequencies(predictions, references, groups=groups, behaviours=NAMES, behaviour_groups=groups_of,
                            n_bootstrap=300, seed=11)
    # the slow reference: one resample at a time, rows of the drawn clusters concatenated, over the same draws
    model = np.array([[p.count(n) for n in NAMES] for p in predictions], dtype=float)
    human = np.array([[r.count(n) for n in NAMES] for r in references], dtype=float)
    ms, hs = [], []
    for draw in bootstrap_draws(np.random.default_rng(11), 300, len(clusters)):
        rows = [i for c in draw for i in clusters[c]]
        ms.append(model[rows].mean(axis=0))
        hs.append(human[rows].mean(axis=0))
    m, h = np.array(ms), np.array(hs)
    mismatch = [100 * abs(a - b).sum() / b.sum() for a, b in zip(m, h) if b.sum()]
    intervals = out["intervals"]
    for i, name in enumerate(NAMES):
        assert intervals["model_mean"][name] == pytest.approx(list(np.percentile(m[:, i], [2.5, 97.5])))
        assert intervals["difference"][name] == pytest.approx(list(np.percentile(m[:, i] - h[:, i], [2.5, 97.5])))
    assert intervals["mismatch"] == pytest.approx(list(np.percentile(mismatch, [2.5, 97.5])))
    y = m[:, 1] + m[:, 2] - h[:, 1] - h[:, 2]  # group y: Off Topic + Interruption
    assert intervals["by_group"]["y"]["difference"] == pytest.approx(list(np.percentile(y, [2.5, 97.5])))


def test_split_half_mismatch_by_hand() -> None:
    import numpy as np

    from convbench_datasets.cocoeval.behavior_frequency import split_half_mismatch

    # human counts (Repetition, Off Topic) of 4 instances, one conversation each; the order puts 0, 1 first.
    # halves: (0.5, 0.5) and (1.5, 0.5); |difference| total 1.0; all-data human total 1.0 + 0.5 = 1.5;
    # mismatch 100 * 1 / 1.5 = 66.67, scaled by sqrt((2/4) / (1/2 + 1/2)) = sqrt(0.5): 47.14
    human = np.array([[1, 0], [0, 1], [2, 1], [1, 0]], dtype=float)
    value = split_half_mismatch(human, [[0], [1], [2], [3]], np.array([[0, 1, 2, 3]]))
    assert value[0] == pytest.approx(100 / 1.5 * math.sqrt(0.5))


def test_mismatch_floor_is_what_a_simulator_identical_to_the_humans_scores() -> None:
    # reference: a Monte Carlo of the definition. Human and "model" continuations drawn independently
    # from one distribution (Poisson counts per type); the mean mismatch of such pairs is the floor the
    # estimate, which sees only the human half, must reproduce (within 10%).
    import numpy as np

    from convbench_datasets.cocoeval.behavior_frequency import mismatch_floor

    rng = np.random.default_rng(5)
    rates = np.array([1.0, 0.3, 0.1, 0.05])
    actual, estimated = [], []
    for _ in range(150):
        human, model = rng.poisson(rates, size=(120, 4)), rng.poisson(rates, size=(120, 4))
        actual.append(100 * abs(model.mean(0) - human.mean(0)).sum() / human.mean(0).sum())
        estimated.append(mismatch_floor(human.astype(float), [[i] for i in range(120)], splits=50))
    assert np.mean(estimated) == pytest.approx(np.mean(actual), rel=0.10)


def test_mismatch_floor_is_reported_beside_the_mismatch() -> None:
    predictions = [["Repetition"] * (i % 3) for i in range(12)]
    references = [["Repetition"] * (i % 2) for i in range(12)]
    out = score_frequencies(predictions, references, behaviours=NAMES, n_bootstrap=0, sources=["s"] * 12)
    assert out["mismatch_floor"] > 0 and out["per_source"]["s"]["mismatch_floor"] == out["mismatch_floor"]
    # one conversation cannot be split in two: no floor
    assert score_frequencies(predictions, references, behaviours=NAMES, n_bootstrap=0,
                             groups=["c"] * 12)["mismatch_floor"] is None


def test_rating_intervals_resample_as_the_frequencies_do() -> None:
    # the same draws as before for instances (one rng, integers(0, n, (B, n))), and whole source
    # conversations with groups: one conversation holding every score can only resample the data itself
    import numpy as np

    scores = [3, 5, 8, 9]
    draws = np.random.default_rng(4).integers(0, 4, size=(300, 4))
    expected = list(np.percentile(np.asarray(scores, dtype=float)[draws].mean(axis=1), [2.5, 97.5]))
    assert mean_with_interval(scores, 300, 4)["interval"] == pytest.approx(expected)
    assert mean_with_interval(scores, 300, 4, groups=["c"] * 4)["interval"] == [6.25, 6.25]  # (3 + 5 + 8 + 9) / 4
    # two conversations: (3, 5) mean 4 and (8, 9) mean 8.5; resamples draw both clusters' sums and sizes
    low, high = mean_with_interval(scores, 300, 4, groups=["a", "a", "b", "b"])["interval"]
    assert low == pytest.approx(4.0) and high == pytest.approx(8.5)
