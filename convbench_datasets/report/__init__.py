"""Reports: tables (pandas), figures (matplotlib) and a self-contained HTML page from run folders.

Needs the ``report`` extra (matplotlib, pandas): ``pip install 'convbench[report]'``.
"""

from .html import write_report
from .runs import Run, load_runs
from .tables import (cocoeval_ratings_table, cocoeval_source_table, cocoeval_table, nc_failures, nc_judge_sanity,
                     nc_paper_differences, nc_pooled_failures, nc_set_tables, nc_table, nc_task_table, nico_table)

__all__ = ["write_report", "load_runs", "Run", "nc_table", "nc_set_tables", "nc_task_table", "nc_failures",
           "nc_pooled_failures", "nc_judge_sanity", "nc_paper_differences", "nico_table", "cocoeval_table",
           "cocoeval_source_table", "cocoeval_ratings_table"]
