"""Reports: tables (pandas), figures (matplotlib) and a self-contained HTML page from run folders.

Needs the ``report`` extra (matplotlib, pandas): ``pip install 'convbench[report]'``.
"""

from .html import write_report
from .runs import Run, load_runs
from .tables import cocoeval_table, nc_failures, nc_table, nico_table

__all__ = ["write_report", "load_runs", "Run", "nc_table", "nc_failures", "nico_table", "cocoeval_table"]
