"""Typed access to the NC-Bench pattern table (``patterns.yaml``): the only place these facts live.

Example:
    >>> table = pattern_table()
    >>> table.entry("rag", "inquiry ungrounded").pattern
    'Inquiry (Ungrounded)'
    >>> table.entry("basic", "repeat request").acceptable_labels
    ('Repeat', 'Partial Repeat')
    >>> table.acceptable_labels("rag", "incremental-self-correction", rules="released_script")[0]
    'NonAnswer'
    >>> table.pattern_counts("complex_request")["Recommendation"]
    60
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Literal

from .._resources import read_yaml

Rules = Literal["paper", "released_script"]
RULES: tuple[str, ...] = ("paper", "released_script")


@dataclass(frozen=True)
class TaskEntry:
    """One upstream task of one set and everything the benchmark says about it."""

    set: str
    task: str
    pattern: str
    acceptable_rule: str
    label_group: str
    rows: int
    acceptable_labels: tuple[str, ...]
    label_set: tuple[str, ...]
    released_definitions: str  # the upstream utils.py constant holding this task's judge label definitions


@dataclass(frozen=True)
class PatternTable:
    sets: tuple[str, ...]
    set_descriptions: dict[str, str]
    stand_alone_labels: frozenset[str]
    tasks: tuple[TaskEntry, ...]
    label_sets: dict[str, tuple[str, ...]]
    acceptable: dict[str, tuple[str, ...]]
    rule_variants: dict[str, dict[tuple[str, str], str]]

    def entry(self, set_name: str, task: str) -> TaskEntry:
        found = self._by_set_and_task.get((set_name, task))
        if found is not None:
            return found
        known = sorted({e.task for e in self.tasks if e.set == set_name})
        raise KeyError(f"no NC-Bench task {task!r} in set {set_name!r}; known: {known}")

    def acceptable_labels(self, set_name: str, task: str, rules: Rules = "paper") -> tuple[str, ...]:
        """Labels that pass for a task under the paper's rules or the released script's."""
        entry = self.entry(set_name, task)
        if rules == "paper":
            return entry.acceptable_labels
        if rules not in self.rule_variants:
            raise ValueError(f"unknown rules {rules!r}; choose one of {RULES}")
        rule = self.rule_variants[rules].get((set_name, task), entry.acceptable_rule)
        return self.acceptable[rule]

    # cached: asked once per prompt (judge prompts, class names) while a run's requests are in flight
    @cached_property
    def _by_set_and_task(self) -> dict[tuple[str, str], TaskEntry]:
        entries: dict[tuple[str, str], TaskEntry] = {}
        for e in self.tasks:
            entries.setdefault((e.set, e.task), e)  # the first, as a scan would find
        return entries

    @cached_property
    def all_tasks(self) -> tuple[str, ...]:
        """Every task name, once, in the table's order (a task name may recur across sets)."""
        return tuple(dict.fromkeys(e.task for e in self.tasks))

    @cached_property
    def all_patterns(self) -> tuple[str, ...]:
        """Every pattern name, once, in the table's order (the ``pattern`` column's class labels)."""
        return tuple(dict.fromkeys(e.pattern for e in self.tasks))

    def tasks_of(self, set_name: str) -> list[TaskEntry]:
        return [e for e in self.tasks if e.set == set_name]

    def task_names(self, set_name: str) -> frozenset[str]:
        """The names of a set's tasks (none for an unknown set), looked up: a run checks every row's task."""
        return self._task_names.get(set_name, frozenset())

    @cached_property
    def _task_names(self) -> dict[str, frozenset[str]]:
        return {name: frozenset(e.task for e in self.tasks_of(name)) for name in self.sets}

    def patterns(self, set_name: str) -> list[str]:
        """Pattern names of a set, in the order of the paper's tables."""
        return list(dict.fromkeys(e.pattern for e in self.tasks_of(set_name)))

    def pattern_counts(self, set_name: str) -> dict[str, int]:
        counts: Counter[str] = Counter()
        for e in self.tasks_of(set_name):
            counts[e.pattern] += e.rows
        return dict(counts)

    def rows(self, set_name: str) -> int:
        return sum(e.rows for e in self.tasks_of(set_name))


@lru_cache(maxsize=1)
def pattern_table() -> PatternTable:
    raw = read_yaml(__package__, "patterns.yaml")
    label_sets = {k: tuple(v) for k, v in raw["label_sets"].items()}
    acceptable = {k: tuple(v) for k, v in raw["acceptable"].items()}
    tasks = tuple(
        TaskEntry(
            set=t["set"],
            task=t["task"],
            pattern=t["pattern"],
            acceptable_rule=t["acceptable"],
            label_group=t["label_set"],
            rows=int(t["rows"]),
            acceptable_labels=acceptable[t["acceptable"]],
            label_set=label_sets[t["label_set"]],
            released_definitions=t["released_definitions"],
        )
        for t in raw["tasks"]
    )
    variants = {
        name: {(v["set"], v["task"]): v["acceptable"] for v in overrides}
        for name, overrides in raw["rule_variants"].items()
    }
    for overrides in variants.values():
        for rule in overrides.values():
            acceptable[rule]  # a typo in the table fails here, at load time, not at scoring time
    return PatternTable(
        sets=tuple(raw["sets"]),
        set_descriptions=dict(raw["sets"]),
        stand_alone_labels=frozenset(raw["stand_alone_labels"]),
        tasks=tasks,
        label_sets=label_sets,
        acceptable=acceptable,
        rule_variants=variants,
    )
