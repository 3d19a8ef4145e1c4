"""behavior_frequency: hand-made tables, intervals, per-source tables, rater agreement."""

from __future__ import annotations

import math

import pytest

from convbench_datasets.scoring.behavior_frequency import (
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
    assert "conversations" in one_conversation["signature"]["interval"]


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
