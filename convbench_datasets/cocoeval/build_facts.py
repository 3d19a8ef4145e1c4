"""What a CoCoEval run's dataset build holds, recorded in its signature (``dataset_build``), and how that
departs from the paper's evaluation set.

The paper's test split is 300 conversations, 50 from each of six sources (its Table 2; ``EVAL_PER_SOURCE``),
with summaries written by o4-mini (its section 3.2). A build without the user's TCR files has four sources
(200 instances), and a build without ``--summarizer`` has extractive summaries: numbers from either are not
the paper's kind.

Example:
    >>> rows = [{"source": "iq2", "summary_method": "extractive: the 5 earlier turns with the highest ..."}] * 50
    >>> facts = build_facts(rows, "iq2", "test")
    >>> facts
    {'config': 'iq2', 'split': 'test', 'instances': {'iq2': 50}, 'summary_methods': ['extractive']}
    >>> build_departures(facts)
    ['extractive summaries (--summarizer not given to `convbench build`; paper: o4-mini wrote them)']
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from .instances import EVAL_PER_SOURCE
from .settings import SETTINGS

PAPER_SUMMARIZER = "o4-mini"  # the paper's summaries (its section 3.2)


def build_facts(rows: Sequence[Mapping[str, Any]], config: str, split: str) -> dict[str, Any]:
    """The instances per source and the summary methods of every row a run's config and split hold."""
    counts = Counter(str(r.get("source")) for r in rows)
    return {"config": config, "split": split, "instances": {s: counts[s] for s in sorted(counts, key=_order)},
            "summary_methods": sorted({_method(str(r.get("summary_method"))) for r in rows})}


def _method(text: str) -> str:
    """A row's summary method without its details: ``extractive``, ``none`` (the history opens the conversation,
    nothing to summarise) or ``abstractive: <model spec>``."""
    kind, _, rest = text.partition(":")
    return f"{kind}: {rest.strip().split(',')[0]}" if kind == "abstractive" else kind


def _order(source: str) -> tuple[int, str]:
    names = list(SETTINGS)
    return (names.index(source) if source in names else len(names), source)


def build_departures(build: Mapping[str, Any]) -> list[str]:
    """How a recorded build departs from the paper's evaluation set: missing sources, other instance counts
    (test split only: the paper's counts are its test set's), summaries not written by the paper's model."""
    lines = []
    instances = build.get("instances")
    config = build.get("config", "all")
    if isinstance(instances, Mapping) and build.get("split", "test") == "test":
        expected = list(SETTINGS) if config == "all" else [config]
        missing = [s for s in expected if not instances.get(s)]
        total = sum(int(n) for n in instances.values())
        if missing:
            hint = ("; `convbench build cocoeval --data-dir` with the TCR files adds SIM and NCPC"
                    if {"sim", "ncpc"} & set(missing) else "")
            lines.append(f"dataset built without {', '.join(missing)} ({total} instances; paper: "
                         f"{EVAL_PER_SOURCE * len(expected)}, {EVAL_PER_SOURCE} per source){hint}")
        other = {s: n for s, n in instances.items() if s in expected and n and n != EVAL_PER_SOURCE}
        if other:
            lines.append("instances per source " + ", ".join(f"{s} {n}" for s, n in other.items())
                         + f" (paper: {EVAL_PER_SOURCE} each)")
    methods = [str(m) for m in build.get("summary_methods") or [] if m != "none"]  # none: nothing to summarise
    if "extractive" in methods:
        lines.append(f"extractive summaries (--summarizer not given to `convbench build`; paper: {PAPER_SUMMARIZER} "
                     "wrote them)")
    others = [m.partition(": ")[2] for m in methods if m.startswith("abstractive") and PAPER_SUMMARIZER not in m.lower()]
    if others:
        lines.append(f"summaries by {' and '.join(others)} (paper: {PAPER_SUMMARIZER})")
    return lines
