"""CoCoEvalBench's report figures: the paper's Figure 3 and its per-source results as bars, drawn with the
report's bar helpers (:mod:`convbench_datasets.report.figures`)."""

from __future__ import annotations

from typing import Any

from ..report.figures import MISSING, _bars_height, _draw_bars, _figure, grouped_bars


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
    """The CoCoEval paper's Figure 3, from :func:`~.report_tables.cocoeval_table`: per behaviour type, the mean
    over all sources of the human continuations and of each model's, 95% whiskers."""
    pivot, errors = _behaviour_bars(frame, list(dict.fromkeys(frame["behaviour"])), list(dict.fromkeys(frame["who"])))
    return grouped_bars(pivot, COCOEVAL_TITLE, "mean occurrences", errors)


def cocoeval_source_figure(frame: Any) -> Any:
    """The CoCoEval paper's per-source results (its Table 11; its Figure 3 averages over all sources) as
    bars, from :func:`~.report_tables.cocoeval_source_table`: one panel per source (one shared behaviour axis),
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
