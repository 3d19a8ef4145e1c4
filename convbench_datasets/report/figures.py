"""Report figures as matplotlib Figures (drawn off-screen), from the report tables."""

from __future__ import annotations

from typing import Any


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # no display: figures are files and inline images
    import matplotlib.pyplot as plt

    return plt


def grouped_bars(frame: Any, title: str, xlabel: str, errors: Any = None) -> Any:
    """Horizontal bars grouped by row (labels read easily), one colour per column (models), with
    optional (low, high) whiskers per column."""
    plt = _pyplot()
    import numpy as np

    labels = [" / ".join(map(str, i)) if isinstance(i, tuple) else str(i) for i in frame.index]
    columns = list(frame.columns)
    height = 0.8 / max(len(columns), 1)
    y = np.arange(len(labels))
    fig, ax = plt.subplots(figsize=(9.0, max(3.0, 0.28 * len(labels) * max(len(columns), 1) + 1.2)))
    for k, column in enumerate(columns):
        values = frame[column].astype(float).fillna(0.0).to_numpy()
        xerr = None
        if errors is not None and column in errors:
            low, high = errors[column]
            xerr = np.vstack([np.maximum(values - low, 0), np.maximum(high - values, 0)])
        ax.barh(y + (k - (len(columns) - 1) / 2) * height, values, height, label=str(column), xerr=xerr, capsize=2)
    ax.set_yticks(y, labels, fontsize=8)
    ax.invert_yaxis()  # first row on top, as in the tables
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    return fig


def nc_figure(table: Any) -> Any:
    patterns = table[[p != "Overall" for _, p in table.index]]
    fig = grouped_bars(patterns, "NC-Bench accuracy per pattern (missing: not scored)", "accuracy (%)")
    fig.axes[0].set_xlim(0, 100)
    return fig


def cocoeval_figure(frame: Any) -> Any:
    pivot = frame.pivot(index="behaviour", columns="who", values="mean")
    order = list(dict.fromkeys(frame["who"]))
    pivot = pivot[order]
    errors = {}
    for who in order:
        rows = frame[frame["who"] == who].set_index("behaviour").reindex(pivot.index)
        if rows["low"].notna().all():
            errors[who] = (rows["low"].astype(float).to_numpy(), rows["high"].astype(float).to_numpy())
    return grouped_bars(pivot, "Behaviour frequency per continuation (95% intervals)", "mean occurrences", errors)
