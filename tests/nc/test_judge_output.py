"""Parsing judge answers: messy spellings in, canonical labels out; nothing unrecognised is lost."""

from __future__ import annotations

import pytest

from convbench_datasets._resources import read_yaml
from convbench_datasets.nc.judge_output import parse_judge_output
from convbench_datasets.nc.patterns import pattern_table

CLOSING = pattern_table().label_sets["closing"]


@pytest.mark.parametrize(
    "text,labels",
    [
        ("Answer", ("Answer",)),
        ("pre-closing, Gratitude Receipt", ("PreClosing", "GratitudeReceipt")),
        ("acknowledgement\nAcknowledgment", ("Acknowledgment",)),
        ("Repeat, repeat, REPEAT", ("Repeat",)),
        ("- Assessment\n- PreClosing.", ("Assessment", "PreClosing")),
        ("1. **Answer**\n2) NewTopic", ("Answer", "NewTopic")),
        ('"Silence"', ("Silence",)),
        ("Labels: Apology, Assessment", ("Apology", "Assessment")),
        ("Answer (the agent gives the time)", ("Answer",)),
        ("partial repeat", ("Partial Repeat",)),
        ("detail_request_grounded", ("DetailRequestGrounded",)),
        ("non-verbal", ("NonVerbal",)),
        ("out of character", ("OOC",)),
        ("Silence, ", ("Silence",)),
    ],
)
def test_spelling_variants(text: str, labels: tuple[str, ...]) -> None:
    assert parse_judge_output(text).labels == labels


def test_unrecognised_pieces_are_kept_beside_the_labels() -> None:
    parsed = parse_judge_output("Answer, because the agent replies with the time")
    assert parsed.labels == ("Answer",) and parsed.unrecognised == ("because the agent replies with the time",)
    assert not parsed.unparsed


@pytest.mark.parametrize("text", ["", None, "   ", "The agent is polite.", "I cannot classify this."])
def test_no_label_is_unparsed(text: str | None) -> None:
    parsed = parse_judge_output(text)
    assert parsed.unparsed and parsed.labels == ()


def test_labels_outside_the_row_set_are_flagged_not_dropped() -> None:
    parsed = parse_judge_output("PreClosing, ChoiceGiving", CLOSING)
    assert parsed.labels == ("PreClosing", "ChoiceGiving") and parsed.out_of_set == ("ChoiceGiving",)


def test_every_label_in_the_pattern_table_is_in_the_vocabulary() -> None:
    table = pattern_table()
    vocabulary = set(read_yaml("convbench_datasets.nc", "labels.yaml")["labels"])
    used = {label for labels in [*table.label_sets.values(), *table.acceptable.values()] for label in labels}
    assert used - vocabulary == {"Acknowledgement"}  # the published closer set's spelling variant
    assert parse_judge_output("Acknowledgement").labels == ("Acknowledgment",)  # also acceptable for closers
