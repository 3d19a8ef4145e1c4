"""What a CoCoEval run's dataset build holds, recorded in its signature (``dataset_build``), and how that
departs from the paper's evaluation set.

The paper's test split is 300 conversations, 50 from each of six sources (its Table 2; ``EVAL_PER_SOURCE``),
with metadata and summaries written by o4-mini (its section 3.2 and appendix), and QMSum Product and
Academic cleaned by o4-mini (its appendix). A build without the user's TCR files has four sources (200
instances); a build without ``--summarizer``, ``--cleaner`` or ``--metadata-model`` made that part by
rule. Each row records its routes (``summary_method``, ``cleaning_method``, ``metadata_method``), so a run
reads them from the rows it scored; numbers from such a build are not the paper's kind.

Example:
    >>> rows = [{"source": "iq2", "summary_method": "extractive: the 5 earlier turns with the highest ...",
    ...          "cleaning_method": "rules", "metadata_method": "sources: the source's own annotations"}] * 50
    >>> facts = build_facts(rows, "iq2", "test")
    >>> facts["instances"], facts["summary_methods"], facts["cleaning_methods"], facts["metadata_methods"]
    ({'iq2': 50}, ['extractive'], [], ['sources'])
    >>> build_departures(facts)[1]
    "metadata from the sources' annotations (--metadata-model not given to `convbench build`; paper: o4-mini wrote it)"
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from .instances import EVAL_PER_SOURCE
from .model_made import CLEANED_SOURCES
from .settings import SETTINGS

PAPER_MODEL = "o4-mini"  # the paper's summaries, metadata and QMSum Product/Academic cleaning (section 3.2, appendix)
NOT_RECORDED = "not recorded"  # a row from a build older than the column


def build_facts(rows: Sequence[Mapping[str, Any]], config: str, split: str) -> dict[str, Any]:
    """The instances per source and the summary, cleaning and metadata routes of every row a run's config and
    split hold. Cleaning is listed for the sources the paper cleaned with a model only (``CLEANED_SOURCES``):
    the others are cleaned by rules in the paper's build too."""
    counts = Counter(str(r.get("source")) for r in rows)
    cleaned = [r for r in rows if r.get("source") in CLEANED_SOURCES]
    return {"config": config, "split": split, "instances": {s: counts[s] for s in sorted(counts, key=_order)},
            "summary_methods": sorted({_method(str(r.get("summary_method"))) for r in rows}),
            "cleaning_methods": sorted({_route(r.get("cleaning_method"), "rules, then ") for r in cleaned}),
            "metadata_methods": sorted({_route(r.get("metadata_method"), "model: ") for r in rows})}


def _route(text: Any, model_prefix: str) -> str:
    """A row's cleaning or metadata route without its details: ``model: <spec>``, ``rules``/``sources``, or
    ``not recorded`` (a build older than the column)."""
    if not isinstance(text, str):
        return NOT_RECORDED
    if text.startswith(model_prefix):
        return "model: " + text[len(model_prefix):].split(" (")[0]
    return text.split(":")[0]


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
        lines.append(f"extractive summaries (--summarizer not given to `convbench build`; paper: {PAPER_MODEL} "
                     "wrote them)")
    lines += _by_others("summaries", [m.partition(": ")[2] for m in methods if m.startswith("abstractive")])
    lines += _routes(build, "cleaning_methods", "rules", "QMSum Product and Academic cleaned by rules only "
                     f"(--cleaner not given to `convbench build`; paper: {PAPER_MODEL} cleaned them)",
                     "QMSum Product and Academic cleaned")
    lines += _routes(build, "metadata_methods", "sources", "metadata from the sources' annotations (--metadata-model "
                     f"not given to `convbench build`; paper: {PAPER_MODEL} wrote it)", "metadata")
    return lines


def _routes(build: Mapping[str, Any], key: str, by_rule: str, rule_line: str, by_model: str) -> list[str]:
    """The departures of one recorded route (``cleaning_methods`` or ``metadata_methods``): made by rule, by
    another model than the paper's, or not recorded by the build."""
    if key not in build:  # a signature written before the route was recorded: nothing to judge it by
        return []
    routes = [str(m) for m in build[key] or []]
    lines = [rule_line] if by_rule in routes else []
    if NOT_RECORDED in routes:
        lines.append(f"dataset build records no {key.split('_')[0]} route (built before convbench recorded it; "
                     "`convbench build cocoeval` again)")
    return lines + _by_others(by_model, [m.partition(": ")[2] for m in routes if m.startswith("model: ")])


def _by_others(what: str, models: list[str]) -> list[str]:
    """``<what> by <model>`` for the models that are not the paper's."""
    others = [m for m in models if PAPER_MODEL not in m.lower()]
    return [f"{what} by {' and '.join(others)} (paper: {PAPER_MODEL})"] if others else []
