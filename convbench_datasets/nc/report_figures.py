"""NC-Bench's report figure: accuracy per pattern as grouped bars (:func:`convbench_datasets.report.figures.grouped_bars`)."""

from __future__ import annotations

from typing import Any

from ..report.figures import MISSING, grouped_bars


def nc_figure(table: Any) -> Any:
    patterns = table[[p != "Overall" for _, p in table.index]]
    fig = grouped_bars(patterns, f"NC-Bench accuracy per pattern ({MISSING}: not scored)", "accuracy (%)")
    fig.axes[0].set_xlim(0, 100)
    return fig
