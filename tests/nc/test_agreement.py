"""Judge agreement: kappa on textbook tables, bootstrap intervals, the file format and the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from convbench_datasets.cli import main
from convbench_datasets.errors import DataFormatError
from convbench_datasets.nc.agreement import agreement, agreement_files, cohen_kappa

# The classic 2x2 teaching table: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no (50 items).
# p_o = 35/50 = 0.7; p_e = 0.5*0.6 + 0.5*0.4 = 0.5; kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4.
RATER_A = ["yes"] * 25 + ["no"] * 25
RATER_B = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15


def test_textbook_kappa() -> None:
    assert cohen_kappa(RATER_A, RATER_B) == pytest.approx(0.4)


def test_three_category_kappa_by_hand() -> None:
    # a: A A B B C C ; b: A B B B C A.  p_o = 4/6.  marginals a: A 2, B 2, C 2; b: A 2, B 3, C 1.
    # p_e = (2*2 + 2*3 + 2*1) / 36 = 12/36 = 1/3; kappa = (2/3 - 1/3) / (2/3) = 0.5.
    assert cohen_kappa(list("AABBCC"), list("ABBBCA")) == pytest.approx(0.5)


def test_identical_and_degenerate_raters() -> None:
    assert cohen_kappa(list("ABAB"), list("ABAB")) == 1.0
    assert math.isnan(cohen_kappa(list("AAAA"), list("AAAA")))  # chance agreement is 1: undefined


def test_agreement_levels_and_intervals() -> None:
    labels_a = [[x.capitalize()] for x in RATER_A]
    labels_b = [[x.capitalize()] for x in RATER_B]
    # Pass/fail from a different table: a passes 30 rows (1-30), b passes rows 1-20 and 41-50.
    # Both pass 20, both fail 10 (31-40): p_o = 30/50 = 0.6; p_e = 0.6*0.6 + 0.4*0.4 = 0.52;
    # kappa = (0.6 - 0.52) / 0.48 = 1/6.
    passes_a = [i < 30 for i in range(50)]
    passes_b = [i < 20 or i >= 40 for i in range(50)]
    result = agreement(labels_a, labels_b, passes_a, passes_b, n_bootstrap=500, seed=1)
    assert result.label_kappa.value == pytest.approx(0.4) and result.pass_kappa.value == pytest.approx(1 / 6)
    assert result.label_agreement.value == pytest.approx(70.0) and result.pass_agreement.value == pytest.approx(60.0)
    for interval in (result.label_kappa, result.label_agreement, result.pass_kappa, result.pass_agreement):
        assert interval.low <= interval.value <= interval.high and interval.low < interval.high
    assert agreement(labels_a, labels_b, n_bootstrap=500, seed=1) .label_kappa == result.label_kappa  # seeded


def test_intervals_are_the_2_5_and_97_5_percentiles_of_the_seeded_resamples() -> None:
    # The resamples drawn here as agreement draws them (default_rng(seed).integers(0, n, (n_bootstrap, n)): rows
    # with replacement); each resample's kappa by the two-category formula (p_o - p_e) / (1 - p_e), p_e from
    # the resample's marginals, NaN where p_e is 1; the bounds are numpy's 2.5th and 97.5th percentiles of the
    # finite ones (a 90% interval would be the 5th and 95th).
    import numpy as np

    yes_a = np.array([x == "yes" for x in RATER_A])
    yes_b = np.array([x == "yes" for x in RATER_B])
    samples = np.random.default_rng(1).integers(0, 50, size=(500, 50))
    a, b = yes_a[samples], yes_b[samples]
    observed = (a == b).mean(axis=1)
    p_a, p_b = a.mean(axis=1), b.mean(axis=1)
    chance = p_a * p_b + (1 - p_a) * (1 - p_b)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappas = np.where(chance == 1.0, np.nan, (observed - chance) / (1 - chance))
    kappa_low, kappa_high = np.percentile(kappas[np.isfinite(kappas)], [2.5, 97.5])
    agree_low, agree_high = np.percentile(100 * observed, [2.5, 97.5])
    result = agreement([[x.capitalize()] for x in RATER_A], [[x.capitalize()] for x in RATER_B], n_bootstrap=500, seed=1)
    assert (result.label_kappa.low, result.label_kappa.high) == (pytest.approx(kappa_low), pytest.approx(kappa_high))
    assert (result.label_agreement.low, result.label_agreement.high) == (pytest.approx(agree_low),
                                                                         pytest.approx(agree_high))
    narrower = np.percentile(kappas[np.isfinite(kappas)], [5, 95])  # the test tells the two apart on these draws
    assert narrower[0] > kappa_low + 1e-6 and narrower[1] < kappa_high - 1e-6


def test_first_label_versus_set_mode() -> None:
    a = [["Repeat", "Other"], ["Answer"]]
    b = [["Repeat"], ["Answer"]]
    assert agreement(a, b, label_mode="first", n_bootstrap=10).label_agreement.value == 100.0
    assert agreement(a, b, label_mode="set", n_bootstrap=10).label_agreement.value == 50.0


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_files_and_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Rater A gives labels, rater B raw judge text; passes come from the pattern table via set + task.
    a = _write(tmp_path / "a.jsonl", [
        {"set": "basic", "id": 100, "task": "repeat request", "labels": ["Repeat"]},
        {"set": "basic", "id": 101, "task": "repeat request", "labels": ["Paraphrase"]},
        {"set": "rag", "id": 100, "task": "repeat request", "labels": ["Repeat"]},
    ])
    b = _write(tmp_path / "b.jsonl", [
        {"set": "rag", "id": 100, "task": "repeat request", "judge_output": "repeat"},
        {"set": "basic", "id": 101, "task": "repeat request", "judge_output": "Repeat"},
        {"set": "basic", "id": 100, "task": "repeat request", "judge_output": "Repeat."},
    ])
    result = agreement_files(a, b, n_bootstrap=50)
    assert result.n == 3 and result.label_agreement.value == pytest.approx(200 / 3)
    assert result.pass_agreement.value == pytest.approx(200 / 3)
    assert main(["agreement", str(a), str(b), "--bootstrap", "50", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["n"] == 3 and printed["label_mode"] == "first"
    assert main(["agreement", str(a), str(b), "--bootstrap", "50"]) == 0
    assert "pass/fail" in capsys.readouterr().out


def test_different_rows_are_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _write(tmp_path / "a.jsonl", [{"id": 1, "labels": ["Repeat"]}, {"id": 2, "labels": ["Repeat"]}])
    b = _write(tmp_path / "b.jsonl", [{"id": 1, "labels": ["Repeat"]}])
    with pytest.raises(DataFormatError, match=r"only in A \[\('', 2\)\]"):
        agreement_files(a, b)
    bad = _write(tmp_path / "bad.jsonl", [{"id": 1, "verdict": "Repeat"}])
    assert main(["agreement", str(bad), str(b)]) == 1
    assert "bad.jsonl line 1: needs field 'labels'" in capsys.readouterr().err


def test_agreement_rejects_mismatched_passes() -> None:
    labels = [["Repeat"], ["Answer"]]
    with pytest.raises(ValueError, match="rater A has 3 passes for 2 rows"):
        agreement(labels, labels, [True, False, True], [True, False])
    with pytest.raises(TypeError, match="row 1: rater B's pass must be True or False, got 0"):
        agreement(labels, labels, [True, False], [True, 0])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="both raters' passes or neither"):
        agreement(labels, labels, [True, False], None)


@pytest.mark.parametrize(
    "row,message",
    [
        ({"id": 1, "labels": ["Repeat"], "passed": "no"}, "field 'passed' must be true or false"),
        ({"id": 1, "labels": [1]}, "field 'labels' must be a list of strings"),
        ({"id": 1, "labels": ["Bogus"]}, "field 'labels' has unknown label 'Bogus'"),
        ({"id": 1, "labels": ["Repeat"], "acceptable_labels": "Repeat"}, "field 'acceptable_labels' must be a list"),
        ({"id": 1, "set": "basic", "task": "Nope", "labels": ["Repeat"]}, "field 'task': no NC-Bench task 'Nope'"),
    ],
)
def test_rating_files_are_checked(tmp_path: Path, row: dict, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    bad = _write(tmp_path / "a.jsonl", [row])
    assert main(["agreement", str(bad), str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"convbench: error: {bad} line 1: ") and message in err and err.count("\n") == 1


# Each broken file below gave a traceback (unhashable id) or exit 0 with "nan%" (empty files, ids
# that never match) before. Expected: the file, the 1-based line, the field and the offending value as
# written in the file; the cut-short line's string opens at its 11th character (`{"id": 2, "lab`).
@pytest.mark.parametrize(
    "text_a,text_b,message",
    [
        ('{"id": [1], "labels": ["Repeat"]}\n', None, "{a} line 1: field 'id' must be a string or an integer, got [1]"),
        ('{"id": 1, "labels": ["Repeat"]}\n{}\n', None, "{a} line 2: field 'id' is missing"),
        ('{"id": 1, "set": ["basic"], "labels": ["Repeat"]}\n', None, "{a} line 1: field 'set' must be a string, got [\"basic\"]"),
        ('{"id": true, "labels": ["Repeat"]}\n', None, "{a} line 1: field 'id' must be a string or an integer, got true"),
        ('[1]\n', None, "{a} line 1: expected a JSON object, got list"),
        ('{"id": 1}\n', None, "{a} line 1: needs field 'labels' (a list) or 'judge_output' (text)"),
        ('{"id": 1, "labels": ["Repeat"]}\n{"id": 2, "lab', None,
         "{a} line 2: not valid JSON (Unterminated string starting at column 11); the file ends mid-line: was it cut short?"),
        ("", "", "{a}: no ratings (the file is empty or blank)"),
        ('{"id": 1, "labels": ["Repeat"]}\n', "\n\n", "{b}: no ratings (the file is empty or blank)"),
        ('{"id": 1, "labels": ["Repeat"]}\n', '{"id": "1", "labels": ["Repeat"]}\n',
         "the raters have no rows in common (A: {a}, B: {b}; rows match by (set, id)): A has [('', 1)], B has [('', '1')] (first 3 each)"),
    ],
)
def test_broken_rating_files_are_one_line_errors(
    tmp_path: Path, text_a: str, text_b: str | None, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(text_a)
    b.write_text(text_a if text_b is None else text_b)
    assert main(["agreement", str(a), str(b)]) == 1
    assert capsys.readouterr().err == f"convbench: error: {message.format(a=a, b=b)}\n"


def test_missing_rating_file_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _write(tmp_path / "a.jsonl", [{"id": 1, "labels": ["Repeat"]}])
    assert main(["agreement", str(a), str(tmp_path / "nope.jsonl")]) == 1
    assert capsys.readouterr().err == f"convbench: error: {tmp_path / 'nope.jsonl'}: no such file\n"


def test_agreement_over_no_rows_is_refused() -> None:
    # zero rows: kappa and % agreement are 0/0; before, the result was NaN printed as "nan%"
    with pytest.raises(ValueError, match="no rows to compare"):
        agreement([], [])


def test_labels_are_canonicalised_and_verdicts_must_be_all_or_none(tmp_path: Path) -> None:
    a = _write(tmp_path / "a.jsonl", [{"id": 1, "labels": ["repeat"], "passed": True}, {"id": 2, "labels": ["Other"]}])
    b = _write(tmp_path / "b.jsonl", [{"id": 1, "judge_output": "Repeat", "passed": True}, {"id": 2, "labels": ["Other"], "passed": False}])
    with pytest.raises(DataFormatError, match=r"rater A, row \('', 2\): no verdict"):
        agreement_files(a, b)
    a = _write(tmp_path / "a.jsonl", [{"id": 1, "labels": ["repeat"]}, {"id": 2, "labels": ["Other"]}])
    b = _write(tmp_path / "b.jsonl", [{"id": 1, "judge_output": "Repeat"}, {"id": 2, "labels": ["Other"]}])
    result = agreement_files(a, b, n_bootstrap=20)
    assert result.label_agreement.value == 100.0 and result.pass_kappa is None


def test_json_output_has_no_nan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _write(tmp_path / "a.jsonl", [{"id": 1, "labels": ["Repeat"], "passed": True}])
    assert main(["agreement", str(a), str(a), "--bootstrap", "0", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["label_kappa"] == {"value": None, "low": None, "high": None}  # one category: undefined
    with pytest.raises(SystemExit):
        main(["agreement", str(a), str(a), "--bootstrap", "-5"])
