"""`parsing="exact"` (the default): the released aggregator's rule on arbitrary judge text.

The oracle below is an independent statement of the rule as the released aggregator.py applies it
(read from its source): pieces = newline or comma separated, dropped only if empty before stripping,
then stripped into a set; pass if any piece is in the acceptable list, except that when Silence or
NonVerbal is acceptable and present, the set must have exactly one element.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convbench_datasets.nc.patterns import pattern_table
from convbench_datasets.nc.released_rule import released_passes


def oracle(text: str, acceptable: list[str]) -> bool:
    pieces = set()
    for piece in re.split(r"[\n,]", text):
        if len(piece) > 0:
            pieces.add(piece.strip())
    if ("Silence" in acceptable or "NonVerbal" in acceptable) and ({"Silence", "NonVerbal"} & pieces):
        return len(pieces) == 1
    return any(p in acceptable for p in pieces)


WORDS = ["Answer", "answer", "ANSWER", "Silence", "NonVerbal", "Repeat", "Partial Repeat", "Acknowledgment",
         "Acknowledgement", "PreClosing", "Pre-Closing", "Paraphrase", "OOC", "banana", "", " ", "Silence."]
SEPARATORS = [",", ", ", "\n", " ,", ",,", "\n\n", " \n", ""]
ACCEPTABLE = sorted({labels for e in pattern_table().tasks for labels in [e.acceptable_labels]})


@settings(max_examples=600, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPARATORS)), max_size=5),
       st.sampled_from(ACCEPTABLE), st.sampled_from(["", " ", "\n", ",", "  "]))
def test_released_rule_matches_the_aggregator_on_random_text(pieces, acceptable, edge):
    text = edge + "".join(word + sep for word, sep in pieces) + edge
    assert released_passes(text, acceptable) == oracle(text, list(acceptable)), (text, acceptable)


def test_hand_cases():
    closer = pattern_table().entry("basic", "sequence closer").acceptable_labels
    assert released_passes("Acknowledgement", closer)          # both spellings are in the released list
    assert not released_passes("acknowledgment", closer)       # case-sensitive
    assert not released_passes("Silence, Answer", closer)      # Silence must stand alone
    assert released_passes("Silence", closer)
    assert released_passes("Silence,", closer)                 # "Silence," -> {"Silence"}: the empty tail is dropped
    assert not released_passes(None, closer)                   # a missing answer is empty text
    assert not released_passes("Pre-Closing", closer)          # no spelling normalisation


def test_score_actions_reads_exactly_by_default_and_leniently_on_request():
    from convbench_datasets.nc.ncbench_action import score_actions

    repeat = ["Repeat", "Partial Repeat"]
    closer = list(pattern_table().entry("basic", "sequence closer").acceptable_labels)
    abort = list(pattern_table().entry("basic", "sequence abort").acceptable_labels)
    predictions = ["repeat", "Repeat", "Silence, ", "Pre-Closing", "PreClosing", "GratitudeReceipt, silence"]
    references = [repeat, repeat, closer, closer, closer, abort]
    patterns = ["Repeat Request", "Repeat Request", "Sequence Closer", "Sequence Closer", "Sequence Closer",
                "Sequence Abort"]
    tasks = ["repeat request", "repeat request", "sequence closer", "sequence closer", "sequence closer",
             "sequence abort"]
    # The aggregator (the oracle above) passes rows 2, 5 and 6: "repeat" and "Pre-Closing" name no label
    # case-sensitively, "Silence, " is {"Silence", ""} (two pieces: Silence is not alone); on row 6
    # "silence" is no label, so Silence is not among the pieces and GratitudeReceipt passes the abort row.
    assert [oracle(p, r) for p, r in zip(predictions, references)] == [False, True, False, False, True, True]
    exact = score_actions(predictions, references, patterns=patterns, tasks=tasks, return_rows=True)
    assert exact["passes"] == [False, True, False, False, True, True]
    assert exact["per_task"] == {"repeat request": 50.0, "sequence closer": 100 / 3, "sequence abort": 100.0}
    assert exact["signature"]["parsing"] == "exact"
    # "repeat" names no label exactly: to the exact reading it is an unrecognised piece, the row unparsed
    assert exact["failure_breakdown"]["Repeat Request"] == {"(unparsed)": 100.0}
    assert exact["unparsed"] == 2 and exact["unrecognised"] == 3  # "repeat", "Pre-Closing", "silence"
    # The lenient reading reads "repeat" as Repeat, "Pre-Closing" as PreClosing, "Silence, " as Silence
    # alone (blank pieces dropped), and "silence" as Silence, so the sole-label clause fails row 6.
    lenient = score_actions(predictions, references, patterns=patterns, tasks=tasks, parsing="lenient",
                            return_rows=True)
    assert lenient["passes"] == [True, True, True, True, True, False]
    assert lenient["signature"]["parsing"] == "lenient"
    # the names of convbench before the split: "released" was the exact reading, "convbench" the lenient one
    assert score_actions(predictions, references, parsing="released", return_rows=True)["passes"] == exact["passes"]
    assert score_actions(predictions, references, parsing="convbench", return_rows=True)["passes"] == lenient["passes"]
    with pytest.raises(ValueError, match="parsing must be one of exact, lenient, got 'paper'"):
        score_actions(predictions, references, parsing="paper")


def test_exact_reading_flags_labels_outside_the_rows_label_set():
    from convbench_datasets.nc.ncbench_action import score_actions

    out = score_actions(["ChoiceGiving, Repeat", "Repeat"], [["Repeat"], ["Repeat"]],
                        label_sets=[["Repeat", "Other"], ["Repeat", "Other"]])
    assert out["out_of_set"] == 1 and out["passed"] == 2


def test_released_reading_keeps_the_judges_order_and_flags_prose():
    from convbench_datasets.nc.ncbench_action import score_actions

    out = score_actions(["Repeat, Answer", "The agent repeats."], [["Repeat"], ["Repeat"]], return_rows=True)
    # label-level agreement uses a row's first label: it must be the judge's first, not the alphabetical first
    assert out["labels"] == [["Repeat", "Answer"], []]
    assert out["unparsed_rows"] == [1]
