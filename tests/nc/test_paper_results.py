"""The published NC-Bench figures as data: complete, consistent with the pattern table and with themselves."""

from __future__ import annotations

import pytest

from convbench_datasets.errors import ConvbenchError
from convbench_datasets.nc.paper_results import paper_results
from convbench_datasets.nc.patterns import pattern_table


@pytest.mark.parametrize("set_name", ["basic", "rag", "complex_request"])
def test_each_overall_is_the_row_weighted_mean_of_its_patterns(set_name):
    # The paper says its overall is the average weighted by sample count; the pattern table gives the counts
    # (20 rows per upstream task). Cells are rounded to two decimals, so each is first turned back into a
    # whole number of passing rows (88.33% of 60 rows = 53), then the overall is recomputed and rounded.
    published = paper_results()
    counts = pattern_table().pattern_counts(set_name)
    for model in published.models:
        cells = published.accuracy(set_name, model)
        passes = {p: cells[p] * counts[p] / 100 for p in cells}
        assert all(abs(v - round(v)) < 0.01 for v in passes.values()), (model, passes)
        overall = 100 * sum(round(v) for v in passes.values()) / sum(counts.values())
        assert round(overall, 2) == published.overall(set_name)[model], model


def test_tables_models_and_spot_values():
    published = paper_results()
    assert published.tables == {"basic": 2, "rag": 3, "complex_request": 4}
    assert len(published.models) == 7 and published.setup["judge"] == "Mistral-Large-Instruct-2411"
    # Spot checks read off the paper's tables 3, 4, 5 and 7.
    assert published.accuracy("rag", "Haiku-4.5")["Inquiry (Ungrounded)"] == 85.0
    assert published.accuracy("complex_request", "Llama-3B")["Repeat Request"] == 0.0
    assert published.top_failures["Repeat Request"] == {"pass": 21.2, "label": "Paraphrase", "share": 71}
    assert published.judge_agreement["H vs. Mistral"]["pass_kappa"] == 0.899
    with pytest.raises(ConvbenchError, match="no model"):
        published.accuracy("basic", "GPT-5")
