"""CoCoEval judge-human agreement: leave-one-out Spearman by hand, the bootstrap's p-values, the ratings
file, a hand-made run folder and `convbench agreement cocoeval`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from convbench_datasets.cli import main
from convbench_datasets.errors import DataFormatError
from convbench_datasets.engine.run_folder import write_folder
from convbench_datasets.cocoeval.behavior_frequency import rater_agreement, spearman
from convbench_datasets.cocoeval.cocoeval_agreement import cocoeval_agreement, judge_agreement
from convbench_datasets.scoring.rank_correlation import average_ranks, loo_spearman, spearman_rows

# Three annotators x four continuations, used throughout. Leave-one-out means (by hand):
#   without A: mean(B, C) = [1.5, 2, 2.5, 4]   ranks [1, 2, 3, 4]
#   without B: mean(A, C) = [1.5, 1.5, 3, 4]   ranks [1.5, 1.5, 3, 4]
#   without C: mean(A, B) = [1, 2.5, 2.5, 4]   ranks [1, 2.5, 2.5, 4]
# A [1,2,3,4] vs [1,2,3,4]: rho 1.
# B [1,3,2,4] (centred ranks -1.5, .5, -.5, 1.5) vs [1.5,1.5,3,4] (centred -1, -1, .5, 1.5):
#   sum of products 1.5 - .5 - .25 + 2.25 = 3; sums of squares 5 and 4.5: rho = 3 / sqrt(22.5) = 2 / sqrt(10).
# C [2,1,3,4] vs [1,2.5,2.5,4]: by symmetry with B, 2 / sqrt(10).
# humans = (1 + 4 / sqrt(10)) / 3 = 0.75497...
# A judge [1,2,3,4] (centred -1.5, -.5, .5, 1.5) in each annotator's place: vs without-A 1; vs without-B
#   (1.5 + .5 + .25 + 2.25) / sqrt(5 * 4.5) = 4.5 / sqrt(22.5) = 3 / sqrt(10); vs without-C 4.5 / sqrt(22.5) too.
# judge = (1 + 6 / sqrt(10)) / 3 = 0.96578...; the reversed judge [4,3,2,1] gives exactly minus that.
HUMANS = [[1, 2, 3, 4], [1, 3, 2, 4], [2, 1, 3, 4]]
HUMAN_LOO = (1 + 4 / math.sqrt(10)) / 3
JUDGE_LOO = (1 + 6 / math.sqrt(10)) / 3


def test_ranks_and_spearman_by_hand() -> None:
    # ties share the mean of their positions: [3, 1, 3, 2] -> 1 is 1st, 2 is 2nd, the 3s share 3rd and 4th
    assert average_ranks([[3, 1, 3, 2], [5, 5, 5, 1]]).tolist() == [[3.5, 1.0, 3.5, 2.0], [3.0, 3.0, 3.0, 1.0]]
    assert float(spearman_rows([1, 1, 2], [1, 2, 3])) == pytest.approx(math.sqrt(3) / 2)
    assert math.isnan(float(spearman_rows([1, 1, 1], [1, 2, 3])))
    assert loo_spearman(HUMANS).tolist() == pytest.approx([1.0, 2 / math.sqrt(10), 2 / math.sqrt(10)])
    assert loo_spearman(HUMANS, against=[1, 2, 3, 4]).tolist() == pytest.approx([1.0, 3 / math.sqrt(10), 3 / math.sqrt(10)])


def test_vectorised_spearman_matches_the_scalar_one_on_random_ties() -> None:
    # the scalar spearman (behavior_frequency) is Pearson's r of average ranks; the vectorised one must
    # give the same numbers row by row, ties and constant rows (NaN) included
    rng = np.random.default_rng(7)
    a, b = rng.integers(0, 4, size=(300, 9)), rng.integers(0, 4, size=(300, 9))
    rows = spearman_rows(a, b)
    for x, y, value in zip(a, b, rows):
        expected = spearman(x, y)
        assert (math.isnan(expected) and math.isnan(value)) or value == pytest.approx(expected)


def test_judge_agreement_by_hand() -> None:
    out = judge_agreement(HUMANS, [1, 2, 3, 4], n_bootstrap=0)
    assert out["humans"] == pytest.approx(HUMAN_LOO) and out["judge"] == pytest.approx(JUDGE_LOO)
    assert out["difference"] == pytest.approx(JUDGE_LOO - HUMAN_LOO)
    assert out["judge_vs_mean"] == pytest.approx(1.0)  # mean of all [4/3, 2, 8/3, 4]: the judge's order
    # the inter-human number is rater_agreement's statistic (one implementation of it)
    assert rater_agreement(HUMANS, n_bootstrap=0)["loo_spearman"] == pytest.approx(out["humans"])
    assert out["intervals"]["humans"] == [None, None] and out["p_values"]["difference"] is None
    reversed_judge = judge_agreement(HUMANS, [4, 3, 2, 1], n_bootstrap=0)
    assert reversed_judge["judge"] == pytest.approx(-JUDGE_LOO) and reversed_judge["judge_vs_mean"] == pytest.approx(-1)


def test_one_sided_p_values_and_conversation_resampling() -> None:
    # 40 continuations; 4 annotators see the truth with noise. A judge that reads the truth exactly
    # agrees with each held-out mean better than a noisy annotator does: p(difference <= 0) near 0.
    # A judge that reads it backwards: near 1; its own agreement is negative (p(judge <= 0) near 1).
    rng = np.random.default_rng(0)
    truth = np.arange(40, dtype=float)
    humans = truth + rng.normal(0, 12, size=(4, 40))
    good = judge_agreement(humans, truth, n_bootstrap=400, seed=1)
    assert good["p_values"]["difference"] < 0.05 and good["p_values"]["humans"] == 0.0
    low, high = good["intervals"]["difference"]
    assert low <= good["difference"] <= high
    bad = judge_agreement(humans, -truth, n_bootstrap=400, seed=1)
    assert bad["p_values"]["difference"] > 0.95 and bad["p_values"]["judge"] == 1.0
    assert judge_agreement(humans, truth, n_bootstrap=400, seed=1) == good  # seeded
    # one conversation holding every continuation: every resample is the data itself
    one = judge_agreement(humans, truth, groups=["c"] * 40, n_bootstrap=50)
    assert one["intervals"]["judge"] == [pytest.approx(one["judge"])] * 2 and one["conversations"] == 1


def test_p_values_count_resamples_at_exactly_zero_by_hand() -> None:
    # Two annotators; the judge is annotator A. Conversation x: A = B = [1, 2, 3]; conversation y:
    # A = [1, 2, 3], B = [3, 2, 1]. With the judge equal to A, humans = rho(A, B) and judge =
    # (rho(A, B) + rho(A, A)) / 2 = (rho + 1) / 2, so by hand, per resample of the two conversations:
    #   x, x: A = B: humans 1, judge 1, difference exactly 0 (the same numbers on both sides)
    #   x, y: ranks of A [1.5, 3.5, 5.5] twice, of B [1.5, 3.5, 5.5, 5.5, 3.5, 1.5]; centred products
    #         4 + 0 + 4 - 4 + 0 - 4 = 0: humans exactly 0, judge 0.5, difference 0.5
    #   y, y: B reverses A: humans -1, judge exactly 0, difference 1
    # Seed 0 draws these conversation pairs (0 = x, 1 = y): y y 6 times, x y 4 times, x x twice, so the
    # shares at most 0 are humans 10/12, judge 6/12, difference 2/12 (with "< 0": 6/12, 0 and 0).
    draws = [[1, 1], [1, 0], [0, 0], [0, 0], [0, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [0, 1], [1, 0]]
    assert np.random.default_rng(0).integers(0, 2, size=(12, 2)).tolist() == draws
    a, b = [1, 2, 3, 1, 2, 3], [1, 2, 3, 3, 2, 1]
    out = judge_agreement([a, b], a, groups=["x"] * 3 + ["y"] * 3, n_bootstrap=12, seed=0)
    assert (out["humans"], out["judge"], out["difference"]) == (0.0, 0.5, 0.5)  # the data itself is x, y
    assert out["p_values"] == {"humans": 10 / 12, "judge": 6 / 12, "difference": 2 / 12}
    assert out["undefined_resamples"] == {"humans": 0, "judge": 0, "difference": 0}


NAMES = {"Repetition": "inconsistent", "Off Topic": "uncollaborative"}


def _record(instance: str, conversation: str, human: tuple | None, model: tuple | None, complete: bool = True) -> dict:
    """A run record with the judge's answers: (consistency, collaborativeness, Repetition turns) per side."""
    def side(values: tuple | None) -> tuple:
        if values is None:
            return None, None
        return {"consistency": values[0], "collaborativeness": values[1]}, {"Repetition": values[2], "Off Topic": []}

    (h_overall, h_found), (m_overall, m_found) = side(human), side(model)
    return {"id": instance, "source": "qmsum_product", "conversation_id": conversation, "simulated": [],
            "simulation_complete": complete, "simulation_problems": [], "simulation_persisting_problems": 0,
            "error": None, "unusable_judge_answers": [], "excluded": None if complete else "simulation incomplete",
            "human_overall": h_overall, "human_behaviours": h_found, "model_overall": m_overall, "model_behaviours": m_found}


@pytest.fixture()
def run(tmp_path: Path) -> Path:
    # judge consistency per continuation, in sorted order (i1 human, i1 simulated, i2 human, i3 human):
    # 1, 2, 3, 4; collaborativeness the reverse; Repetition turns 0, 1, 2, 3. i4's simulation never
    # finished: its simulated continuation has no judge value and must be left out, and said so.
    records = [_record("i1", "c1", (1, 4, []), (2, 3, [1])), _record("i2", "c1", (3, 2, [1, 2]), None, complete=False),
               _record("i3", "c2", (4, 1, [1, 2, 3]), None, complete=False), _record("i4", "c3", (5, 5, []), None, False)]
    folder = tmp_path / "run"
    write_folder(folder, records, {"signature": {"benchmark": "cocoeval", "rows": 4, "model": "stub:m",
                                                 "judge": "stub:j", "taxonomy": list(NAMES), "taxonomy_groups": NAMES},
                                   "row_ids": ["i1", "i2", "i3", "i4"]})
    return folder


def _ratings(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _human_file(tmp_path: Path) -> Path:
    # HUMANS per annotator (A, B, C) on the four kept continuations, for both scores; counts: every
    # annotator gives Repetition 0, 1, 2, 3 (as the judge) and Off Topic 0 (constant: undefined).
    items = [("i1", "human"), ("i1", "simulated"), ("i2", "human"), ("i3", "human")]
    lines = []
    for annotator, scores in zip("ABC", HUMANS):
        for k, (instance, continuation) in enumerate(items):
            lines.append({"id": instance, "continuation": continuation, "annotator": annotator,
                          "consistency": scores[k], "collaborativeness": scores[k], "counts": {"Repetition": k}})
        lines.append({"id": "i4", "continuation": "simulated", "annotator": annotator, "consistency": 5,
                      "collaborativeness": 5, "counts": {}})
    return _ratings(tmp_path / "humans.jsonl", lines)


def test_agreement_with_a_run_folder(run: Path, tmp_path: Path) -> None:
    out = cocoeval_agreement(_human_file(tmp_path), run, n_bootstrap=30)
    assert out.annotators == ["A", "B", "C"] and out.continuations == 4
    assert out.excluded == [{"id": "i4", "continuation": "simulated", "reason": "simulation incomplete"}]
    m = out.measures
    assert list(m) == ["consistency", "collaborativeness", "all behaviours", "inconsistent behaviours",
                       "uncollaborative behaviours", "Repetition", "Off Topic"]
    # consistency: the judge reads 1, 2, 3, 4 (see HUMAN_LOO and JUDGE_LOO); collaborativeness: 4, 3, 2, 1
    assert m["consistency"]["humans"] == pytest.approx(HUMAN_LOO) and m["consistency"]["judge"] == pytest.approx(JUDGE_LOO)
    assert m["collaborativeness"]["judge"] == pytest.approx(-JUDGE_LOO)
    assert m["consistency"]["judge_per_annotator"] == pytest.approx({"A": 1.0, "B": 3 / math.sqrt(10), "C": 3 / math.sqrt(10)})
    # Repetition: everyone (and the judge) counts 0, 1, 2, 3: every correlation is 1; the totals are the same counts
    for name in ("Repetition", "all behaviours", "inconsistent behaviours"):
        assert m[name]["humans"] == pytest.approx(1.0) and m[name]["judge"] == pytest.approx(1.0)
    # nobody finds Off Topic: a constant has no rank correlation, so the measure is undefined, not 0
    for name in ("Off Topic", "uncollaborative behaviours"):
        assert m[name]["humans"] is None and m[name]["judge"] is None and m[name]["p_values"]["difference"] is None
    # Paper, appendix B.1: "a one-sided bootstrap over conversations", each rated continuation one of its
    # conversations: the 4 kept continuations are resampled one by one by default
    assert m["consistency"]["conversations"] == 4 and out.signature["bootstrap_unit"] == "continuation"
    # the option: whole source conversations, c1 (i1 twice, i2) and c2 (i3)
    clustered = cocoeval_agreement(_human_file(tmp_path), run, n_bootstrap=30, bootstrap_unit="source_conversation")
    assert clustered.measures["consistency"]["conversations"] == 2
    assert clustered.measures["consistency"]["judge"] == m["consistency"]["judge"]  # only the intervals differ


def test_cli_prints_and_writes_json(run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    humans = _human_file(tmp_path)
    assert main(["agreement", "cocoeval", str(humans), str(run), "--bootstrap", "20"]) == 0
    out = capsys.readouterr().out
    assert "4 continuations, 3 annotators (A, B, C); leave-one-out Spearman; bootstrap 20 resamples of continuations (4)" in out
    assert "excluded 1 rated continuation(s) without a usable judge value: simulation incomplete: 1" in out
    assert any(line.startswith("consistency ") and "0.755" in line and "0.966" in line for line in out.splitlines())
    assert main(["agreement", "cocoeval", str(humans), str(run), "--bootstrap", "0", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["measures"]["collaborativeness"]["judge"] == pytest.approx(-JUDGE_LOO)
    assert printed["measures"]["Off Topic"]["humans"] is None
    assert main(["agreement", "cocoeval", str(humans), str(run), "--bootstrap", "20",
                 "--bootstrap-unit", "source_conversation"]) == 0
    assert "bootstrap 20 resamples of source conversations (2)" in capsys.readouterr().out
    # NC-Bench options do not apply here: an error, not ignored
    assert main(["agreement", "cocoeval", str(humans), str(run), "--label-mode", "set"]) == 1
    assert "--label-mode applies to NC-Bench agreement only" in capsys.readouterr().err


def test_nc_form_keeps_working_with_and_without_its_word(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _ratings(tmp_path / "a.jsonl", [{"id": 1, "labels": ["Repeat"]}, {"id": 2, "labels": ["Answer"]}])
    assert main(["agreement", str(a), str(a), "--bootstrap", "0", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert main(["agreement", "nc", str(a), str(a), "--bootstrap", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == first and first["label_agreement"]["value"] == 100.0
    assert main(["agreement", "cocoeval", str(a)]) == 1
    assert "usage: convbench agreement [nc] A.jsonl B.jsonl, or convbench agreement cocoeval" in capsys.readouterr().err


def _one(**change) -> dict:
    line = {"id": "i1", "continuation": "human", "annotator": "A", "consistency": 5, "collaborativeness": 5,
            "counts": {"Repetition": 1}}
    line.update(change)
    return line


@pytest.mark.parametrize(
    "lines,message",
    [
        ([_one(continuation="model")], "line 1: field 'continuation' must be one of ['human', 'simulated'], got 'model'"),
        ([_one(consistency=11)], "line 1: field 'consistency' must be an integer from 1 to 10, got 11"),
        ([_one(collaborativeness="7")], "line 1: field 'collaborativeness' must be an integer from 1 to 10, got '7'"),
        ([_one(counts={"Gossip": 1})], "line 1: field 'counts' names unknown behaviour type(s) ['Gossip']"),
        ([_one(counts={"Repetition": 31})], "line 1: field 'counts.Repetition' must be an integer from 0 to 30, got 31"),
        ([_one(counts=[1])], "line 1: field 'counts' must be an object"),
        ([_one(annotator="")], "line 1: field 'annotator' must be a non-empty string"),
        ([_one(), _one()], "line 2: annotator 'A' rated the human continuation of 'i1' already on line 1"),
        ([_one(id="nope")], "line 1: instance 'nope' is not in the run"),
        ([_one()], "leave-one-out agreement needs at least 2 annotators, got ['A']"),
        ([_one(), _one(annotator="B"), _one(continuation="simulated")],
         "every annotator must rate every continuation: B did not rate the simulated continuation of i1"),
    ],
)
def test_ratings_files_are_checked(run: Path, tmp_path: Path, lines: list[dict], message: str) -> None:
    path = _ratings(tmp_path / "h.jsonl", lines)
    with pytest.raises(DataFormatError) as err:
        cocoeval_agreement(path, run, n_bootstrap=0)
    assert str(err.value).startswith(str(path)) and message in str(err.value)


def test_only_cocoeval_runs_and_enough_judged_continuations(run: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    humans = _ratings(tmp_path / "h.jsonl", [_one(), _one(annotator="B"), _one(id="i4", continuation="simulated"),
                                             _one(id="i4", continuation="simulated", annotator="B")])
    assert main(["agreement", "cocoeval", str(humans), str(run)]) == 1
    assert ("only 1 rated continuation(s) have a usable judge value" in capsys.readouterr().err)
    nc = tmp_path / "nc"
    write_folder(nc, [{"set": "basic", "id": 1}], {"signature": {"benchmark": "nc", "rows": 1}})
    assert main(["agreement", "cocoeval", str(humans), str(nc)]) == 1
    assert f"{nc} is not a CoCoEval run" in capsys.readouterr().err
