"""NICO's section of ``convbench report``: its metric tables, overall and per interaction type.
"""

from __future__ import annotations

import html
from pathlib import Path

from ..report.html import html_table, save_table
from ..report.runs import Run
from .report_tables import _nico_frames, nico_paper_differences


def section(runs: list[Run], out: Path, reference: bool = True) -> list[str]:
    """NICO's part of the page (no published numbers: ``reference`` changes nothing); each score with the
    rows it is computed from, each run headed by its label (a run of part of the rows says so)."""
    (table, counts), (by_type, type_counts) = _nico_frames(runs), _nico_frames(runs, by_interaction_type=True)
    headers = {r.name: r.label for r in runs}
    save_table(table, out / "tables", "nico_scores", counts=counts, headers=headers)
    parts = ["<h2>NICO</h2><p>Scores in percent (avg_len in tokens); n: the rows each is computed from.</p>"]
    for run in runs:  # each departure from the paper's setup (or convbench's default where it is silent)
        differences = nico_paper_differences(run)
        if differences:
            parts.append(f"<p class='warning not-paper-setup'>{html.escape(run.name)}: not the paper's setup "
                         f"({html.escape('; '.join(differences))}).</p>")
    parts.append(html_table(table, counts=counts, headers=headers))
    if len(by_type):
        save_table(by_type, out / "tables", "nico_by_interaction_type", counts=type_counts, headers=headers)
        parts += ["<h3>By interaction type</h3>", html_table(by_type, counts=type_counts, headers=headers)]
    return parts
