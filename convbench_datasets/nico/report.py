"""NICO's section of ``convbench report``: its metric tables, overall and per interaction type.
"""

from __future__ import annotations

from pathlib import Path

from ..report.html import html_table, save_table
from ..report.runs import Run
from .report_tables import nico_table


def section(runs: list[Run], out: Path, reference: bool = True) -> list[str]:
    """NICO's part of the page (no published numbers: ``reference`` changes nothing)."""
    table, by_type = nico_table(runs), nico_table(runs, by_interaction_type=True)
    save_table(table, out / "tables", "nico_scores")
    parts = ["<h2>NICO</h2><p>Scores in percent (avg_len in tokens).</p>", html_table(table)]
    if len(by_type):
        save_table(by_type, out / "tables", "nico_by_interaction_type")
        parts += ["<h3>By interaction type</h3>", html_table(by_type)]
    return parts
