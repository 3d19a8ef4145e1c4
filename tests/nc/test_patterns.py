"""The pattern table against the published rules, written out here independently of patterns.yaml.

Expected values: the NC-Bench paper (appendix B.1 acceptable actions; tables' pattern names) and the
released benchmark's judge label lists and aggregator, as restated in the project's issue tracker.
"""

from __future__ import annotations

import pytest

from convbench_datasets.nc.patterns import pattern_table

ANSWER = {"Answer", "NonAnswer", "Definition", "RepeatRequest", "ParaphraseRequest", "ExampleRequest", "DefinitionRequest"}
UNGROUNDED = {"NonAnswer", "RepeatRequest", "ParaphraseRequest", "ExampleRequest", "DefinitionRequest"}
CLOSER = {"PreClosing", "Silence", "NewTopic", "NonVerbal", "Acknowledgment", "Acknowledgement", "Assessment",
          "GratitudeReceipt", "AppreciationReceipt"}
ABORT = {"PreClosing", "Silence", "GratitudeReceipt", "Acknowledgment", "NewTopic", "Apology"}
PRELIMINARY = {"Affirmation", "Acknowledgment", "Assessment", "HelpOffer", "DetailRequestGrounded"}

# task -> acceptable labels; a task name is enough except "inquiry", which is the same in basic and rag.
ACCEPTABLE = {
    "inquiry": ANSWER, "incremental request": ANSWER, "self-correction": ANSWER, "Self-Correction": ANSWER,
    "Recommendation-Compact": ANSWER, "Recommendation-Expanded": ANSWER,
    "Recommendation-Incremental": ANSWER | {"DetailRequestGrounded"},
    "inquiry ungrounded": UNGROUNDED,
    "incremental-self-correction": {"Answer", "NonAnswer", "RepeatRequest", "ParaphraseRequest", "ExampleRequest", "DefinitionRequest"},
    "repeat request": {"Repeat", "Partial Repeat"}, "Repeat": {"Repeat", "Partial Repeat"}, "Partial Repeat": {"Repeat", "Partial Repeat"},
    "paraphrase request": {"Paraphrase", "Definition", "Example"}, "Paraphrase": {"Paraphrase", "Definition", "Example"},
    "definition request": {"Definition"}, "Definition": {"Definition"},
    "example request": {"Example"}, "Example": {"Example"},
    "sequence closer": CLOSER, "Closer": CLOSER, "sequence abort": ABORT, "Abort": ABORT,
    "Detail Request-All": {"DetailRequestGrounded"}, "Detail Request-Partial": {"DetailRequestGrounded"},
    "Detail Request-Expanded": {"DetailRequestGrounded"},
    "Preliminary-Screen": PRELIMINARY, "Preliminary-Detail": PRELIMINARY,
    "Expansion-Choices": {"ChoiceGiving"},
    "Expansion-Repair": {"Repeat", "Partial Repeat", "Paraphrase", "Example", "Definition"},
}

INQUIRY_LIKE = ["Answer", "NonAnswer", "RepeatRequest", "ParaphraseRequest", "DefinitionRequest", "ExampleRequest", "NewTopic", "OOC", "Other"]
REPAIR = ["NonAnswer", "Repeat", "Paraphrase", "Definition", "Example", "OOC", "Other"]
CLOSING = ["Answer", "NonAnswer", "Repeat", "Paraphrase", "Definition", "Example", "Acknowledgment", "Appreciation",
           "GratitudeReceipt", "Assessment", "PreClosing", "Apology", "SequenceAbort", "Silence", "NewTopic", "NonVerbal", "OOC", "Other"]
REQUESTS = ["Answer", "NonAnswer", "DetailRequestGrounded", "DetailRequestUngrounded", "RepeatRequest", "ParaphraseRequest",
            "DefinitionRequest", "ExampleRequest", "NewTopic", "OOC", "Other"]
PRELIM_SET = ["Affirmation", "Acknowledgment", "Assessment", "HelpOffer", "DetailRequestGrounded", "DetailRequestUngrounded", "OOC", "Other"]
EXPANSION = ["Repeat", "Paraphrase", "Example", "Definition", "ChoiceGiving", "OOC", "Other"]
LABEL_SET = {
    **{t: INQUIRY_LIKE for t in ["inquiry", "incremental request", "inquiry ungrounded", "incremental-self-correction", "self-correction"]},
    **{t: REPAIR for t in ["repeat request", "paraphrase request", "definition request", "example request",
                           "Repeat", "Partial Repeat", "Paraphrase", "Example", "Definition"]},
    **{t: CLOSING for t in ["sequence closer", "sequence abort", "Closer", "Abort"]},
    **{t: REQUESTS for t in ["Self-Correction", "Recommendation-Compact", "Recommendation-Expanded", "Recommendation-Incremental",
                             "Detail Request-All", "Detail Request-Partial", "Detail Request-Expanded"]},
    "Preliminary-Screen": PRELIM_SET, "Preliminary-Detail": PRELIM_SET,
    "Expansion-Choices": EXPANSION, "Expansion-Repair": EXPANSION,
}

# Pattern rows per set: the paper's tables (basic and rag 9 x 20; complex_request as below).
PATTERN_ROWS = {
    "basic": {p: 20 for p in ["Inquiry", "Incremental Request", "Self-Correction", "Definition Request", "Paraphrase Request",
                              "Repeat Request", "Example Request", "Sequence Closer", "Sequence Abort"]},
    "rag": {p: 20 for p in ["Inquiry", "Inquiry (Ungrounded)", "Incremental/Correction", "Definition Request",
                            "Paraphrase Request", "Repeat Request", "Example Request", "Sequence Closer", "Sequence Abort"]},
    "complex_request": {"Preliminary": 40, "Recommendation": 60, "Detail Request": 60, "Expansion": 40, "Self-Correction": 20,
                        "Definition Request": 20, "Paraphrase Request": 20, "Repeat Request": 40, "Example Request": 20,
                        "Sequence Closer": 20, "Sequence Abort": 20},
}


def test_every_task_has_the_published_acceptable_labels() -> None:
    table = pattern_table()
    assert {e.task for e in table.tasks} == set(ACCEPTABLE)
    for entry in table.tasks:
        assert set(entry.acceptable_labels) == ACCEPTABLE[entry.task], (entry.set, entry.task)


def test_every_task_has_the_published_judge_label_set() -> None:
    for entry in pattern_table().tasks:
        assert list(entry.label_set) == LABEL_SET[entry.task], (entry.set, entry.task)


@pytest.mark.parametrize("set_name", ["basic", "rag", "complex_request"])
def test_pattern_rows_per_set(set_name: str) -> None:
    table = pattern_table()
    assert table.pattern_counts(set_name) == PATTERN_ROWS[set_name]
    assert table.patterns(set_name) == list(PATTERN_ROWS[set_name])  # the paper's order
    assert table.rows(set_name) == {"basic": 180, "rag": 180, "complex_request": 360}[set_name]


def test_released_script_rules_differ_only_on_incremental_self_correction() -> None:
    table = pattern_table()
    differing = [
        (e.set, e.task) for e in table.tasks
        if table.acceptable_labels(e.set, e.task, "released_script") != table.acceptable_labels(e.set, e.task, "paper")
    ]
    assert differing == [("rag", "incremental-self-correction")]
    assert set(table.acceptable_labels("rag", "incremental-self-correction", "released_script")) == UNGROUNDED


def test_unknown_task_and_rules_are_clear_errors() -> None:
    table = pattern_table()
    with pytest.raises(KeyError, match="no NC-Bench task 'Inquiry' in set 'basic'"):
        table.entry("basic", "Inquiry")
    with pytest.raises(ValueError, match="unknown rules"):
        table.acceptable_labels("basic", "inquiry", rules="strict")  # type: ignore[arg-type]
