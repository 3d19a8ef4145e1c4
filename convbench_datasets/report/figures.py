"""Report figures as matplotlib Figures, from the report tables: the drawing every benchmark shares
(:func:`grouped_bars`); each benchmark's figures are in its folder (``nc/report_figures.py``...).

Figures are ``matplotlib.figure.Figure`` objects with an Agg canvas of their own: building one never
calls ``matplotlib.use`` nor goes through ``pyplot``, so the caller's backend (a notebook's inline or
widget backend, a GUI) is left as it was, and no figure is kept open by pyplot.

A missing value (a pattern a run has no rows for, NaN or None in the table) is drawn as missing: no
bar, and the word ``n/a`` where the bar would start. A 0 bar would read as "scored, and failed all".
"""

from __future__ import annotations

from typing import Any

MISSING = "n/a"
_VALUE_FORMAT = "{:.1f}"  # bar labels: one decimal, as the tables' percentages


def _figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = _figure_class()(figsize=(width, height))
    FigureCanvasAgg(fig)  # off-screen; savefig to PNG or SVG needs no display and no backend switch
    return fig


_FIGURE_CLASS: Any = None


def _figure_class() -> Any:
    """A matplotlib Figure that shows itself as an image in Jupyter (``_repr_png_``), whatever backend
    the notebook uses: a plain Figure made off pyplot prints as ``<Figure size ...>`` there."""
    global _FIGURE_CLASS
    if _FIGURE_CLASS is None:
        import io

        from matplotlib.figure import Figure

        class ReportFigure(Figure):
            def _repr_png_(self) -> bytes:
                buffer = io.BytesIO()
                self.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
                return buffer.getvalue()

        _FIGURE_CLASS = ReportFigure
    return _FIGURE_CLASS


def grouped_bars(frame: Any, title: str, xlabel: str, errors: Any = None) -> Any:
    """Horizontal bars grouped by row (labels read easily), one colour per column (models), with
    optional (low, high) whiskers per column. Missing values get no bar and an ``n/a`` label."""
    fig = _figure(9.0, _bars_height(frame))
    ax = fig.subplots()
    handles = _draw_bars(ax, frame, errors)
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.legend(handles=handles, fontsize=8, loc="best")
    fig.tight_layout()
    return fig


def _bars_height(frame: Any) -> float:
    return max(3.0, 0.28 * len(frame.index) * max(len(frame.columns), 1) + 1.2)


def _draw_bars(ax: Any, frame: Any, errors: Any = None, colours: dict[str, str] | None = None) -> list[Any]:
    """:func:`grouped_bars` on one axes; returns the legend handles. ``colours``: column -> colour, so
    that panels of one figure colour a model alike (default: by column position)."""
    import numpy as np
    from matplotlib.patches import Patch

    labels = [" / ".join(map(str, i)) if isinstance(i, tuple) else str(i) for i in frame.index]
    columns = list(frame.columns)
    height = 0.8 / max(len(columns), 1)
    y = np.arange(len(labels))
    handles = []
    for k, column in enumerate(columns):
        colour = (colours or {}).get(column, f"C{k}")
        values = frame[column].astype(float).to_numpy()  # None becomes NaN: missing, never 0
        present = ~np.isnan(values)
        offsets = y + (k - (len(columns) - 1) / 2) * height
        xerr = None
        if errors is not None and column in errors:
            low, high = (np.asarray(e, dtype=float) for e in errors[column])
            xerr = np.vstack([np.maximum(values - low, 0), np.maximum(high - values, 0)])[:, present]
        bars = ax.barh(offsets[present], values[present], height, color=colour, xerr=xerr, capsize=2)
        ax.bar_label(bars, fmt=_VALUE_FORMAT, fontsize=6, padding=2)  # each bar carries its value
        for position in offsets[~present]:
            ax.text(0, position, f" {MISSING}", va="center", ha="left", fontsize=7, color=colour)
        handles.append(Patch(color=colour, label=str(column)))  # in the legend even when all is missing
    ax.set_yticks(y, labels, fontsize=8)
    if not ax.yaxis_inverted():  # first row on top, as in the tables (once: panels may share the axis)
        ax.invert_yaxis()
    return handles
