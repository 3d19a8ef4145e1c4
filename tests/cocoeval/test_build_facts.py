"""What a CoCoEval build holds, as a run's signature records it, and how it departs from the paper's test set
(300 instances, 50 from each of six sources, summaries and metadata by o4-mini: the paper's Table 2 and section
3.2; QMSum Product and Academic cleaned by o4-mini: its appendix)."""

from __future__ import annotations

from convbench_datasets.cocoeval.build_facts import build_departures, build_facts


PAPERS_ROUTES = {"cleaning_method": "rules, then openai:o4-mini", "metadata_method": "model: openai:o4-mini"}


def _rows(source: str, n: int, method: str, **routes: str) -> list[dict]:
    return [{"source": source, "summary_method": method, **PAPERS_ROUTES, **routes}] * n


def test_the_papers_build_departs_in_nothing() -> None:
    sources = ["qmsum_product", "qmsum_academic", "qmsum_committee", "iq2", "sim", "ncpc"]
    rows = [r for s in sources for r in _rows(s, 50, "abstractive: openai:o4-mini, from the last 40 turns before")]
    rows += _rows("iq2", 0, "none: the history window opens the conversation")
    facts = build_facts(rows, "all", "test")
    assert facts["summary_methods"] == ["abstractive: openai:o4-mini"]
    assert build_departures(facts) == []


def test_missing_sources_other_counts_and_another_summarizer_are_named() -> None:
    rows = _rows("qmsum_product", 40, "abstractive: openai:gpt-4.1, from the last 12 turns before the history")
    rows += _rows("iq2", 50, "none: the history window opens the conversation")
    facts = build_facts(rows, "all", "test")
    assert facts["instances"] == {"qmsum_product": 40, "iq2": 50}  # in the source column's class order
    # by hand: qmsum_academic, qmsum_committee, sim and ncpc are missing; 90 instances of the paper's 6 x 50
    assert build_departures(facts) == [
        "dataset built without qmsum_academic, qmsum_committee, sim, ncpc (90 instances; paper: 300, 50 per "
        "source); `convbench build cocoeval --data-dir` with the TCR files adds SIM and NCPC",
        "instances per source qmsum_product 40 (paper: 50 each)",
        "summaries by openai:gpt-4.1 (paper: o4-mini)"]
    # QMSum sources missing, SIM and NCPC there: no TCR hint
    qmsum_missing = [r for s in ("iq2", "sim", "ncpc") for r in _rows(s, 50, "none: x")]
    assert build_departures(build_facts(qmsum_missing, "all", "test")) == [
        "dataset built without qmsum_product, qmsum_academic, qmsum_committee (150 instances; paper: 300, 50 per "
        "source)"]
    # one source asked for (--config iq2): only that source is expected; the train split has no paper counts
    assert build_departures(build_facts(_rows("iq2", 50, "none: x"), "iq2", "test")) == []
    assert build_departures(build_facts(_rows("iq2", 7, "none: x"), "all", "train")) == []


def test_the_cleaning_and_metadata_routes_are_read_from_the_rows() -> None:
    # the default build: every route rule-made. Cleaning is judged on the two QMSum sources the paper had a
    # model clean, so an IQ2-only run has no cleaning route to judge
    rule_made = {"cleaning_method": "rules", "metadata_method": "sources: the source's own annotations"}
    rows = _rows("qmsum_product", 50, "abstractive: openai:o4-mini, x", **rule_made)
    rows += _rows("iq2", 50, "abstractive: openai:o4-mini, x", **rule_made)
    facts = build_facts(rows, "all", "test")
    assert (facts["cleaning_methods"], facts["metadata_methods"]) == (["rules"], ["sources"])
    assert build_departures(facts)[-2:] == [
        "QMSum Product and Academic cleaned by rules only (--cleaner not given to `convbench build`; paper: o4-mini "
        "cleaned them)",
        "metadata from the sources' annotations (--metadata-model not given to `convbench build`; paper: o4-mini "
        "wrote it)"]
    iq2 = build_facts(_rows("iq2", 50, "none: x", **rule_made), "iq2", "test")
    assert iq2["cleaning_methods"] == []
    assert build_departures(iq2) == ["metadata from the sources' annotations (--metadata-model not given to "
                                     "`convbench build`; paper: o4-mini wrote it)"]
    # another model (some turns kept rule-cleaned: still that model's route); rows without the columns
    other = {"cleaning_method": "rules, then openai:gpt-4.1 (3 of 900 turns kept rule-cleaned)",
             "metadata_method": "model: anthropic:claude-sonnet-4-6"}
    assert build_departures(build_facts(_rows("qmsum_academic", 50, "none: x", **other), "qmsum_academic",
                                        "test")) == [
        "QMSum Product and Academic cleaned by openai:gpt-4.1 (paper: o4-mini)",
        "metadata by anthropic:claude-sonnet-4-6 (paper: o4-mini)"]
    old = [{"source": "qmsum_academic", "summary_method": "none: x"}] * 50
    assert build_departures(build_facts(old, "qmsum_academic", "test")) == [
        "dataset build records no cleaning route (built before convbench recorded it; `convbench build cocoeval` "
        "again)",
        "dataset build records no metadata route (built before convbench recorded it; `convbench build cocoeval` "
        "again)"]
    # a signature written before the routes were recorded has no such keys: nothing said about them
    assert build_departures({"config": "iq2", "split": "test", "instances": {"iq2": 50},
                             "summary_methods": ["none"]}) == []
