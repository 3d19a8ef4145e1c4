"""Report figures as matplotlib Figures, from the report tables.

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


def nc_figure(table: Any) -> Any:
    patterns = table[[p != "Overall" for _, p in table.index]]
    fig = grouped_bars(patterns, f"NC-Bench accuracy per pattern ({MISSING}: not scored)", "accuracy (%)")
    fig.axes[0].set_xlim(0, 100)
    return fig


def _behaviour_bars(frame: Any, behaviours: list[str], order: list[str]) -> tuple[Any, dict[str, Any]]:
    """(behaviour x who means, who -> (low, high) whiskers where every value has its interval) of a
    long CoCoEval frame (behaviour, who, mean, low, high); absent entries are NaN: drawn as missing."""
    pivot = frame.pivot(index="behaviour", columns="who", values="mean").reindex(index=behaviours, columns=order)
    errors = {}
    for who in order:
        rows = frame[frame["who"] == who].set_index("behaviour").reindex(pivot.index)
        if rows["low"].notna().all():
            errors[who] = (rows["low"].astype(float).to_numpy(), rows["high"].astype(float).to_numpy())
    return pivot, errors


COCOEVAL_TITLE = "Behaviour frequency per continuation, all sources (as the CoCoEval paper's Figure 3; 95% intervals)"
COCOEVAL_SOURCE_TITLE = ("Behaviour frequency per continuation and source (the CoCoEval paper's Table 11 as bars; "
                         f"95% intervals; {MISSING}: no rows)")


def cocoeval_figure(frame: Any) -> Any:
    """The CoCoEval paper's Figure 3, from :func:`~.tables.cocoeval_table`: per behaviour type, the mean
    over all sources of the human continuations and of each model's, 95% whiskers."""
    pivot, errors = _behaviour_bars(frame, list(dict.fromkeys(frame["behaviour"])), list(dict.fromkeys(frame["who"])))
    return grouped_bars(pivot, COCOEVAL_TITLE, "mean occurrences", errors)


def cocoeval_source_figure(frame: Any) -> Any:
    """The CoCoEval paper's per-source results (its Table 11; its Figure 3 averages over all sources) as
    bars, from :func:`~.tables.cocoeval_source_table`: one panel per source (one shared behaviour axis),
    the human and each model side by side, 95% whiskers. A model with no rows of a source gets ``n/a``
    there, not 0 bars."""
    sources, order = list(dict.fromkeys(frame["source"])), list(dict.fromkeys(frame["who"]))
    behaviours = list(dict.fromkeys(frame["behaviour"]))
    colours = {who: f"C{k}" for k, who in enumerate(order)}
    panels = [_behaviour_bars(frame[frame["source"] == source], behaviours, order) for source in sources]
    fig = _figure(1.5 + 3.2 * len(sources), _bars_height(panels[0][0]) + 0.6)
    axes = fig.subplots(1, len(sources), sharey=True, squeeze=False)[0]
    for ax, source, (pivot, errors) in zip(axes, sources, panels):
        handles = _draw_bars(ax, pivot, errors, colours)
        ax.set_title(source, fontsize=9)
        ax.set_xlabel("mean occurrences", fontsize=8)
    fig.legend(handles=handles, fontsize=8, loc="lower center", ncol=min(len(order), 4))
    fig.suptitle(COCOEVAL_SOURCE_TITLE)
    fig.tight_layout(rect=(0, 0.06 + 0.03 * (len(order) // 5), 1, 1))  # room for the legend below
    return fig
