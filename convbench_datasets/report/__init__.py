"""Reports: tables (pandas), figures (matplotlib) and a self-contained HTML page from run folders.

Needs the ``report`` extra (matplotlib, pandas): ``pip install 'convbench[report]'``. The page and its
helpers are here; each benchmark's section and tables live in its folder (``nc/report.py``...), and
their tables keep their names here (loaded on first use).
"""

from typing import Any

from ._moved import moved
from .html import write_report
from .runs import Run, load_runs


def __getattr__(name: str) -> Any:
    return moved(__name__, name)


__all__ = ["write_report", "load_runs", "Run", "nc_table", "nc_set_tables", "nc_task_table", "nc_failures",
           "nc_pooled_failures", "nc_judge_sanity", "nc_paper_differences", "nico_table", "cocoeval_table",
           "cocoeval_source_table", "cocoeval_ratings_table"]
