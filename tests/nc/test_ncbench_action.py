"""NC-Bench action scoring: the pass rule, per-pattern and weighted accuracy, failure breakdown."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convbench_datasets.nc.ncbench_action import row_passes, score_actions

CLOSER = ["PreClosing", "Silence", "NewTopic", "NonVerbal", "Acknowledgment", "Acknowledgement", "Assessment",
          "GratitudeReceipt", "AppreciationReceipt"]
ABORT = ["PreClosing", "Silence", "GratitudeReceipt", "Acknowledgment", "NewTopic", "Apology"]
REPEAT = ["Repeat", "Partial Repeat"]


@pytest.mark.parametrize(
    "answer,acceptable,passes",
    [
        ("Silence", CLOSER, True),
        ("Silence, PreClosing", CLOSER, False),     # silence mixed with talk is not silence
        ("PreClosing, Silence", ABORT, False),
        ("NonVerbal", CLOSER, True),
        ("NonVerbal", ABORT, True),                 # released rule: Silence is acceptable, so a lone NonVerbal passes
        ("NonVerbal, Apology", ABORT, False),
        ("Silence, Silence", CLOSER, True),         # de-duplicated to one label
        ("PreClosing, Assessment", CLOSER, True),
        ("Answer, PreClosing", CLOSER, True),       # any acceptable label passes
        ("Answer", CLOSER, False),
        ("Silence", REPEAT, False),                 # the silence clause only applies where silence is acceptable
        ("Silence, Repeat", REPEAT, True),
        ("Repeat, OOC", REPEAT, True),
        ("nothing useful", REPEAT, False),          # unparsed fails
    ],
)
@pytest.mark.parametrize("parsing", ["exact", "lenient"])  # well-formed answers: both readings agree
def test_pass_rule(answer: str, acceptable: list[str], passes: bool, parsing: str) -> None:
    assert score_actions([answer], [acceptable], parsing=parsing)["passed"] == int(passes)


def test_per_pattern_and_weighted_overall() -> None:
    # Pattern A: 3 rows, 2 pass -> 66.67%; pattern B: 1 row, passes -> 100%.
    # Weighted overall = (66.67 * 3 + 100 * 1) / 4 = 75.0, equal to 3 of 4 rows; the unweighted mean would be 83.33.
    out = score_actions(
        ["Repeat", "Paraphrase", "Repeat", "Definition"],
        [REPEAT, REPEAT, REPEAT, ["Definition"]],
        patterns=["Repeat Request", "Repeat Request", "Repeat Request", "Definition Request"],
        sets=["basic", "basic", "rag", "rag"],
    )
    assert out["per_pattern"] == {"Repeat Request": pytest.approx(200 / 3), "Definition Request": 100.0}
    assert out["pattern_counts"] == {"Repeat Request": 3, "Definition Request": 1}
    assert out["accuracy"] == pytest.approx(75.0)
    assert out["per_set"] == {"basic": 50.0, "rag": 100.0}
    assert out["per_set_pattern"] == {"basic": {"Repeat Request": 50.0}, "rag": {"Repeat Request": 100.0, "Definition Request": 100.0}}


def test_failure_breakdown_and_unparsed_count() -> None:
    # Repeat Request fails 4 rows: labels {Paraphrase}, {Paraphrase, Answer}, {Answer}, unparsed.
    # Shares of failing rows: Paraphrase 2/4, Answer 2/4, (unparsed) 1/4; first seen wins the tie.
    out = score_actions(
        ["Paraphrase", "Paraphrase, Answer", "Answer", "???", "Repeat"],
        [REPEAT] * 5,
        patterns=["Repeat Request"] * 5,
        return_rows=True,
    )
    assert out["accuracy"] == 20.0 and out["unparsed"] == 1 and out["unparsed_rows"] == [3]
    assert out["failure_breakdown"]["Repeat Request"] == {"Paraphrase": 50.0, "Answer": 50.0, "(unparsed)": 25.0}
    assert out["top_failure_label"] == {"Repeat Request": "Paraphrase"}
    assert out["passes"] == [False, False, False, False, True]
    assert out["labels"][1] == ["Paraphrase", "Answer"]


def test_out_of_set_answers_are_counted() -> None:
    out = score_actions(["ChoiceGiving, Repeat", "Repeat"], [REPEAT, REPEAT],
                        label_sets=[["Repeat", "Other"], ["Repeat", "Other"]])
    assert out["out_of_set"] == 1 and out["passed"] == 2


@pytest.mark.parametrize(
    "kwargs,error,message",
    [
        ({"predictions": ["Repeat"], "references": []}, ValueError, "got 1 predictions but 0 references"),
        ({"predictions": ["Repeat"], "references": [REPEAT], "patterns": []}, ValueError, "0 patterns"),
        ({"predictions": [3], "references": [REPEAT]}, TypeError, "row 0: field 'predictions'"),
        ({"predictions": ["Repeat"], "references": ["Repeat"]}, TypeError, "row 0: field 'references'"),
        ({"predictions": ["Repeat", "x"], "references": [REPEAT, []]}, ValueError, "row 1: field 'references' is empty"),
    ],
)
def test_bad_input(kwargs: dict, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        score_actions(**kwargs)


# An independent statement of the released aggregator (not convbench's code): acceptable labels by
# task as its chain of tests assigns them, parsing by "\n" -> ",", split, strip, set; then the rule.
_ANSWER = ["Answer", "NonAnswer", "Definition", "RepeatRequest", "ParaphraseRequest", "ExampleRequest", "DefinitionRequest"]


def _released_acceptable(task: str) -> list[str]:
    if task in {"inquiry", "incremental request", "self-correction", "Self-Correction", "Recommendation-Compact",
                "Recommendation-Expanded"}:
        return _ANSWER
    if task == "Recommendation-Incremental":
        return _ANSWER + ["DetailRequestGrounded"]
    if task in {"inquiry ungrounded", "incremental-self-correction"}:
        return ["NonAnswer", "RepeatRequest", "ParaphraseRequest", "ExampleRequest", "DefinitionRequest"]
    if task in {"repeat request", "Repeat", "Partial Repeat"}:
        return REPEAT
    if task in {"paraphrase request", "Paraphrase"}:
        return ["Paraphrase", "Definition", "Example"]
    if task in {"definition request", "Definition"}:
        return ["Definition"]
    if task in {"example request", "Example"}:
        return ["Example"]
    if "sequence closer" in task or "Closer" in task:
        return CLOSER
    if task in {"sequence abort", "Abort"}:
        return ABORT
    if "Detail Request" in task:
        return ["DetailRequestGrounded"]
    if "Preliminary" in task:
        return ["Affirmation", "Acknowledgment", "Assessment", "HelpOffer", "DetailRequestGrounded"]
    if task == "Expansion-Choices":
        return ["ChoiceGiving"]
    if task == "Expansion-Repair":
        return ["Repeat", "Partial Repeat", "Paraphrase", "Example", "Definition"]
    return []


def _released_score(output: str, task: str) -> int:
    labels = {piece.strip() for piece in output.replace("\n", ",").split(",") if piece}
    accepted = _released_acceptable(task)
    if "Silence" in accepted or "NonVerbal" in accepted:
        if "Silence" in labels or "NonVerbal" in labels:
            return int(len(labels) == 1)
    return int(any(label in accepted for label in labels))


@pytest.mark.slow
def test_released_rule_on_random_answers(nc_rows: dict) -> None:
    rows = [row for rows in nc_rows.values() for row in rows]
    assert len(rows) == 720

    @settings(max_examples=3000, deadline=None, derandomize=True)
    @given(st.data())
    def check(data: st.DataObject) -> None:
        row = rows[data.draw(st.integers(0, 719))]
        vocabulary = sorted(set(row["label_set"]) | set(row["acceptable_labels_released_script"]))
        labels = data.draw(st.lists(st.sampled_from(vocabulary), min_size=1, max_size=4))
        separator = data.draw(st.sampled_from([", ", ",", "\n", " ,\n"]))
        answer = separator.join(labels)
        ours = score_actions([answer], [row["acceptable_labels_released_script"]])["passed"]
        assert ours == _released_score(answer, row["task"]), (row["set"], row["task"], answer)

    check()


def test_paper_rules_accept_answer_on_incremental_correction(nc_rows: dict) -> None:
    row = next(r for r in nc_rows["rag"] if r["task"] == "incremental-self-correction")
    assert score_actions(["Answer"], [row["acceptable_labels"]])["passed"] == 1
    assert score_actions(["Answer"], [row["acceptable_labels_released_script"]])["passed"] == 0
    assert row_passes(["Answer"], row["acceptable_labels"])


def test_unrecognised_pieces_count_as_talk_beside_silence() -> None:
    # The released script counts every piece in its "only label" check: "Silence, because..." fails there too.
    out = score_actions(["Silence, because the turn is empty", "Repeat, as before"], [CLOSER, REPEAT])
    assert out["passed"] == 1 and out["unrecognised"] == 2


@pytest.mark.parametrize("parsing", ["exact", "lenient"])
def test_a_records_verdict_on_silence_beside_prose_is_the_tables(parsing: str) -> None:
    # judge_row gives each record its verdict, score_actions the tables: both must fail "Silence, because..."
    # on a closer row (by hand: the prose piece is a second piece beside the stand-alone Silence)
    from convbench_datasets.nc.ncbench_action import judge_row

    answer = "Silence, because the turn is empty"
    parsed, passed = judge_row(answer, CLOSER, parsing=parsing)
    assert parsed.labels == ("Silence",) and parsed.unrecognised == ("because the turn is empty",)
    assert passed is False and score_actions([answer], [CLOSER], parsing=parsing)["passed"] == 0
    assert not row_passes(["Silence"], CLOSER, ["because the turn is empty"]) and row_passes(["Silence"], CLOSER)


def test_unknown_reference_labels_are_errors_not_zero_scores() -> None:
    with pytest.raises(ValueError, match=r"row 0: field 'references' names unknown label\(s\) \['repeat'\]"):
        score_actions(["Repeat"], [["repeat"]])
    with pytest.raises(TypeError, match="row 0: field 'references' must be a list of label strings"):
        score_actions(["Repeat"], [None])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="row 0: field 'patterns' must be a string"):
        score_actions(["Repeat"], [REPEAT], patterns=[None])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="no predictions"):
        score_actions([], [])


def test_failure_breakdown_per_set_and_signature() -> None:
    out = score_actions(["Answer", "Paraphrase", "Repeat"], [REPEAT] * 3, patterns=["Repeat Request"] * 3,
                        sets=["basic", "rag", "rag"])
    assert out["failure_breakdown_per_set"] == {"basic": {"Repeat Request": {"Answer": 100.0}},
                                                "rag": {"Repeat Request": {"Paraphrase": 100.0}}}
    assert out["signature"]["metric"] == "ncbench_action" and out["signature"]["convbench_version"]


def test_metric_path_finds_the_bundled_module() -> None:
    from convbench_datasets import metric_path

    assert metric_path("ncbench_action").endswith("metrics/ncbench_action")
    with pytest.raises(FileNotFoundError, match="no convbench metric 'nope'"):
        metric_path("nope")


@pytest.mark.parametrize(
    "kwargs,message",
    [
        # a whole column missing used to fail with "object of type 'NoneType' has no len()", naming nothing
        ({"predictions": None, "references": [REPEAT]}, "field 'predictions' must be a list with one item per row, got NoneType"),
        ({"predictions": ["Repeat"], "references": None}, "field 'references' must be a list with one item per row, got NoneType"),
        ({"predictions": ["Repeat"], "references": [REPEAT], "sets": "basic"}, "field 'sets' must be a list with one item per row, got str"),
        # row-level problems are ConvbenchErrors, which the CLI prints as one line (it used to be a TypeError traceback)
        ({"predictions": ["Repeat", "Repeat"], "references": [REPEAT, None]}, "row 1: field 'references' must be a list of label strings, got None"),
        ({"predictions": ["Repeat"], "references": [REPEAT], "label_sets": [None]}, "row 0: field 'label_sets' must be a list of label strings, got None"),
    ],
)
def test_missing_columns_and_rows_are_named(kwargs: dict, message: str) -> None:
    from convbench_datasets.errors import ConvbenchError

    with pytest.raises(ConvbenchError, match=re.escape(message)):
        score_actions(**kwargs)


def test_a_missing_judge_answer_fails_and_counts_as_unparsed() -> None:
    # None is "the judge gave nothing": recorded as unparsed and failing, never skipped (1 of 2 rows pass).
    out = score_actions([None, "Repeat"], [REPEAT, REPEAT])
    assert (out["accuracy"], out["unparsed"], out["n"]) == (50.0, 1, 2)


def test_label_columns_from_to_pandas_numpy_arrays_are_accepted() -> None:
    # Dataset.to_pandas() gives each row of a list column as a numpy array; before: "must be a list of
    # label strings, got array([...])". Expected: what the same rows give as lists (1 of 2 rows passes:
    # "Repeat" is acceptable for REPEAT, "Answer" is not).
    import datasets

    frame = datasets.Dataset.from_dict({"judge": ["Repeat", "Answer"], "acceptable_labels": [REPEAT, REPEAT],
                                        "label_set": [REPEAT + ["Answer"]] * 2}).to_pandas()
    assert type(frame["acceptable_labels"][0]).__name__ == "ndarray"
    expected = score_actions(["Repeat", "Answer"], [REPEAT, REPEAT], label_sets=[REPEAT + ["Answer"]] * 2)
    assert expected["accuracy"] == 50.0
    got = score_actions(frame["judge"].to_numpy(), frame["acceptable_labels"].to_list(),
                        label_sets=frame["label_set"].to_numpy())
    assert got == expected
