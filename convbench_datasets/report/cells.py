"""Row counts beside the report's numbers: each cell of a run says how many rows it is computed from.

A benchmark's table function gives its numbers as a DataFrame and, asked (``with_n=True``), the rows each
number is computed from: wide tables (one column per run) as a companion column ``"<run> n"`` after each
run's column (:func:`with_counts`), long tables (one row per run and cell) as an ``n`` column. The page and
the Markdown tables show a counted cell as ``45.00 (n=20)``, and mark one computed from fewer than
:data:`SMALL_N` rows with :data:`SMALL_MARK` (``25.00* (n=4)``, class ``small-n`` in the page); the CSV
files keep numbers and counts in columns of their own.

Example:
    >>> import pandas as pd
    >>> values = pd.DataFrame({"hf:a": [50.0, 75.0]}, index=["Inquiry", "Overall"])
    >>> counts = pd.DataFrame({"hf:a": [4, 12]}, index=values.index)
    >>> list(with_counts(values, counts).columns)
    ['hf:a', 'hf:a n']
    >>> counted_text("50.00", 4), counted_text("75.00", 12)
    ('50.00* (n=4)', '75.00 (n=12)')
"""

from __future__ import annotations

from typing import Any

SMALL_N = 10  # a cell computed from fewer rows is marked: one row moves it a lot
SMALL_MARK = "*"
N_SUFFIX = " n"  # a run's companion count column: "<run> n"


def is_small(n: int | None) -> bool:
    return n is not None and n < SMALL_N


def counted_text(text: str, n: int | None, show_n: bool = True) -> str:
    """A cell's text with its count: ``50.00 (n=20)``, ``25.00* (n=4)`` (fewer than :data:`SMALL_N` rows);
    ``show_n=False`` (a long table, whose ``n`` column says it) adds the mark only."""
    if n is None:
        return text
    mark = SMALL_MARK if is_small(n) else ""
    return f"{text}{mark} (n={n})" if show_n else f"{text}{mark}"


def count_legend(small: bool = True, counted_by: dict[str, str] | None = None) -> str | None:
    """The legend line of a table whose cells carry their counts; ``small``: some cell is marked.
    ``counted_by`` ({value column: count column}): a long table, whose counts are columns of their own
    (None when no cell is marked: its columns say the rest)."""
    mark = (f"{SMALL_MARK} marks a cell computed from fewer than {SMALL_N} rows, where one row more or less "
            "moves it a lot: read it with care")
    if counted_by is not None:
        where = ", ".join(f"{value} from {count}" for value, count in counted_by.items())
        return f"{mark} (rows: {where})." if small else None
    return "n: the rows each cell of a run is computed from (shown as value (n=N))" + (f"; {mark}." if small else ".")


def with_counts(values: Any, counts: Any) -> Any:
    """``values`` with each column that ``counts`` counts followed by its count column ``"<column> n"``
    (nullable integers: ``<NA>`` where the run has no rows there). The other columns (a paper's published
    ones) stay as they are."""
    import pandas as pd

    counts = counts.reindex(index=values.index)
    columns: dict[Any, Any] = {}
    for column in values.columns:
        columns[column] = values[column]
        if column in counts.columns:
            columns[f"{column}{N_SUFFIX}"] = counts[column].astype("Int64")
    return pd.DataFrame(columns, index=values.index)


def as_count(value: Any) -> int | None:
    """A count cell as an int, or None (missing: NaN, None, ``pd.NA``)."""
    if value is None:
        return None
    try:
        if value != value:  # NaN
            return None
        return int(value)
    except (TypeError, ValueError):
        return None
