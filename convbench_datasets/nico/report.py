"""NICO's section of ``convbench report``: its metric tables, overall and per interaction type.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

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
    notes = [f"{run.name}: {note}" for run in runs if (note := answers_note(run.results)) is not None]
    if notes:
        parts.append(f"<p class='unanswered'>{html.escape('; '.join(notes))}.</p>")
    if len(by_type):
        save_table(by_type, out / "tables", "nico_by_interaction_type", counts=type_counts, headers=headers)
        parts += ["<h3>By interaction type</h3>", html_table(by_type, counts=type_counts, headers=headers)]
    return parts


def answers_note(results: dict[str, Any]) -> str | None:
    """How an identify_unnatural run's answers were read, in counts; None for the other tasks.

    Example:
        >>> answers_note({"n": 18, "unanswered": 5, "blank_answers": 3, "refusals": 1, "empty_answers": 1,
        ...               "none_answers": 4, "signature": {"blank_answer": "unanswered"}})
        '5 of 18 answers unanswered, scored 0 (3 blank, 1 refusals, 1 with nothing else to read); 4 "none"'
    """
    if "unanswered" not in results:
        return None
    blank_is_none = (results.get("signature") or {}).get("blank_answer") == "none"
    read = [] if blank_is_none else [f"{results.get('blank_answers', 0)} blank"]
    read += [f"{results.get('refusals', 0)} refusals", f"{results.get('empty_answers', 0)} with nothing else to read"]
    note = (f"{results['unanswered']} of {results.get('n')} answers unanswered, scored 0 ({', '.join(read)}); "
            f"{results.get('none_answers', 0)} \"none\"")
    return note + (f", {results.get('blank_answers', 0)} blank read as \"none\"" if blank_is_none else "")
