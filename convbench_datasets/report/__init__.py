"""Reports: tables (pandas), figures (matplotlib) and a self-contained HTML page from run folders.

Needs the ``report`` extra (matplotlib, pandas): ``pip install 'convbench[report]'``. The page and its
helpers are here; each benchmark's section, tables and figures live in its folder (``nc/report.py``,
``nc/report_tables.py``, ``nc/report_figures.py``...), which the page finds through the registry by
benchmark name, so this package imports no benchmark. Import a benchmark's tables from its folder:
``from convbench_datasets.nc.report_tables import nc_table``.
"""

from .html import write_report
from .runs import Run, load_runs

__all__ = ["write_report", "load_runs", "Run"]
