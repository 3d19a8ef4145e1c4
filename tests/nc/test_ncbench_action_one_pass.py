"""score_actions reads each distinct answer once and counts its tables with numpy (issue #23): its
results, key order included, must be those of the plain row-by-row reading below, for both readings."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convbench_datasets.nc.judge_output import UNPARSED_LABEL
from convbench_datasets.nc.patterns import pattern_table
from convbench_datasets.nc import ncbench_action
from convbench_datasets.nc.ncbench_action import ERROR_LABEL, judge_row, score_actions

ENTRIES = list(pattern_table().tasks)
WORDS = ["Answer", "answer", "Silence", "NonVerbal", "Repeat", "Partial Repeat", "PreClosing", "Pre-Closing",
         "Paraphrase", "banana", "", " ", "Silence.", "GratitudeReceipt", "silence", "- Repeat", "Acknowledgement"]


def _percent(count: int, n: int) -> float:
    return 100.0 * count / n if n else 0.0


def _groups(keys: list) -> dict:
    groups: dict = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    return groups


def _accuracy(passes: list[bool], rows: list[int], keys: list) -> dict:
    return {key: _percent(sum(passes[rows[i]] for i in members), len(members))
            for key, members in _groups([keys[r] for r in rows]).items()}


def _failures(passes: list[bool], labels: list[tuple], rows: list[int], patterns: list[str]) -> dict:
    out = {}
    for pattern, members in _groups([patterns[r] for r in rows]).items():
        failing = [rows[i] for i in members if not passes[rows[i]]]
        counts: Counter[str] = Counter()
        for r in failing:
            counts.update(labels[r] or (UNPARSED_LABEL,))
        out[pattern] = {label: _percent(c, len(failing)) for label, c in counts.most_common()}
    return out


def row_by_row(predictions, references, patterns, sets, tasks, label_sets, errors, parsing) -> dict:
    """The tables as a loop over rows would make them: judge_row per row, then dicts in first-seen order."""
    n = len(predictions)
    judged = [((), False, False, False) if errors[i] else
              (lambda parsed, passed: (parsed.labels, passed, parsed.unparsed, bool(parsed.unrecognised)))(
                  *judge_row(predictions[i], references[i], None, parsing)) for i in range(n)]
    passes = [passed for _, passed, _, _ in judged]
    labels = [(ERROR_LABEL,) if errors[i] else judged[i][0] for i in range(n)]
    every = list(range(n))
    out = {"passed": sum(passes), "unparsed": sum(u for _, _, u, _ in judged),
           "unrecognised": sum(u for _, _, _, u in judged),
           "out_of_set": sum(not errors[i] and any(label not in label_sets[i] for label in labels[i]) for i in every),
           "per_pattern": _accuracy(passes, every, patterns),
           "pattern_counts": {p: len(m) for p, m in _groups(patterns).items()},
           "failure_breakdown": _failures(passes, labels, every, patterns),
           "per_set": _accuracy(passes, every, sets),
           "per_set_pattern": {s: _accuracy(passes, m, patterns) for s, m in _groups(sets).items()},
           "failure_breakdown_per_set": {s: _failures(passes, labels, m, patterns) for s, m in _groups(sets).items()},
           "per_task": {s: _accuracy(passes, m, tasks) for s, m in _groups(sets).items()},
           "passes": passes, "labels": [list(x) for x in labels]}
    out["top_failure_label"] = {p: next(iter(b), None) for p, b in out["failure_breakdown"].items()}
    return out


answers = st.one_of(st.none(), st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from([",", ", ", "\n", " ,", ""])),
                                        max_size=4).map(lambda parts: "".join(w + s for w, s in parts)))


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.lists(st.tuples(answers, st.sampled_from(ENTRIES), st.booleans()), min_size=1, max_size=40),
       st.sampled_from(["exact", "lenient"]), st.booleans())
def test_tables_equal_the_row_by_row_reading(rows, parsing, with_errors) -> None:
    predictions = [answer for answer, _, _ in rows]
    entries = [entry for _, entry, _ in rows]
    errors = [with_errors and failed for _, _, failed in rows]
    columns = {"predictions": predictions, "references": [list(e.acceptable_labels) for e in entries],
               "patterns": [e.pattern for e in entries], "sets": [e.set for e in entries],
               "tasks": [e.task for e in entries], "label_sets": [list(e.label_set) for e in entries]}
    ours = score_actions(**columns, errors=errors, return_rows=True, parsing=parsing)
    expected = row_by_row(**columns, errors=errors, parsing=parsing)
    for key, value in expected.items():  # json: the order of every table's keys counts too
        assert json.dumps(ours[key]) == json.dumps(value), key


@pytest.mark.parametrize("parsing,reader", [("exact", "released_piece_list"), ("lenient", "parse_judge_output")])
def test_each_distinct_answer_is_read_once(parsing: str, reader: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # 3,000 rows, three distinct answers (one of them None): three readings, whatever the number of rows
    calls: list = []
    original = getattr(ncbench_action, reader)
    monkeypatch.setattr(ncbench_action, reader, lambda answer, *rest: calls.append(answer) or original(answer, *rest))
    out = score_actions(["Repeat", "Answer", None] * 1000, [["Repeat", "Partial Repeat"]] * 3000,
                        patterns=["Repeat Request"] * 3000, parsing=parsing)
    assert sorted(calls, key=str) == ["Answer", None, "Repeat"]
    assert (out["passed"], out["unparsed"], out["failure_breakdown"]["Repeat Request"]) == (
        1000, 1000, {"Answer": 50.0, UNPARSED_LABEL: 50.0})


def test_rows_as_numpy_arrays_tuples_and_sets_read_alike() -> None:
    # the shapes a label column comes in (Dataset.to_pandas() gives numpy arrays); a set is a sized iterable
    answers = ["Repeat", "Answer, Repeat", "Silence"]
    as_lists = score_actions(answers, [["Repeat", "Partial Repeat"]] * 3, label_sets=[["Repeat", "Answer"]] * 3)
    for row in (np.array(["Repeat", "Partial Repeat"]), ("Repeat", "Partial Repeat"), {"Repeat", "Partial Repeat"}):
        assert score_actions(answers, [row] * 3, label_sets=[np.array(["Repeat", "Answer"])] * 3) == as_lists
    assert (as_lists["passed"], as_lists["out_of_set"]) == (2, 1)  # Silence is outside the label set
