"""The report tables that moved into their benchmark's folder, by name (one table for the names that
``convbench_datasets.report`` and ``convbench_datasets.report.tables`` still answer to)."""

from __future__ import annotations

import importlib
from typing import Any

_NC = "convbench_datasets.nc.report_tables"
_NICO = "convbench_datasets.nico.report_tables"
_COCOEVAL = "convbench_datasets.cocoeval.report_tables"
MOVED = {
    **dict.fromkeys(["OVERALL", "PAPER_MARK", "published_column", "paper_legend", "nc_paper_differences", "nc_table",
                     "nc_set_tables", "nc_task_table", "nc_failures", "failure_pool", "nc_failure_pools",
                     "nc_pooled_failures", "nc_judge_sanity"], _NC),
    **dict.fromkeys(["NICO_KEYS", "nico_table"], _NICO),
    **dict.fromkeys(["cocoeval_table", "cocoeval_paper_differences", "cocoeval_source_table",
                     "cocoeval_ratings_table"], _COCOEVAL),
}


def moved(module: str, name: str) -> Any:
    """``name`` from the benchmark module it moved to (imported now), or AttributeError as for any module."""
    if name not in MOVED:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    return getattr(importlib.import_module(MOVED[name]), name)
