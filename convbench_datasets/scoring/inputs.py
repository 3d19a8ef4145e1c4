"""Input checks the metrics share: whole columns, one text per row, and a length cap on texts.

The cap bounds the cost of pathological inputs before any work is done: ROUGE-L and fuzzy sentence
matching are quadratic in text length, and jieba segments about a megabyte a second, so two 10 MB
strings would take minutes. ``MAX_TEXT_CHARS`` is far above any real dialogue turn or model answer
(NICO turns are tens of characters); a caller who means it passes a larger ``max_chars`` or ``None``.

Example:
    >>> check_text(0, "predictions", "你好", max_chars=MAX_TEXT_CHARS)
    >>> check_text(3, "references", None, max_chars=MAX_TEXT_CHARS)
    Traceback (most recent call last):
    ...
    convbench_datasets.errors.MetricInputError: row 3: field 'references' must be a string, got NoneType
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import MetricInputError

MAX_TEXT_CHARS = 20_000


def check_column(field: str, column: Any) -> int:
    """The number of rows in a column; a column must be a list-like of rows, not None or one string."""
    if column is None or isinstance(column, (str, bytes)) or not hasattr(column, "__len__"):
        raise MetricInputError(f"field {field!r} must be a list with one item per row, got {type(column).__name__}")
    return len(column)


def as_row_list(value: Any) -> list[Any] | None:
    """One row's list of items (sentences, labels) as a list, or None when ``value`` is not one.

    A list, a tuple, or any other sized iterable counts: the numpy array ``Dataset.to_pandas()`` gives
    for a list column, say. A string or bytes (iterating gives characters), a mapping (iterating gives
    its keys), None, or an iterable without a length (a generator, read once) does not.
    """
    if value is None or isinstance(value, (str, bytes, Mapping)):
        return None
    try:
        len(value)  # a 0-d numpy array has __len__ but raises here
        return list(value)
    except TypeError:
        return None


def check_max_chars(max_chars: int | None) -> None:
    """A length cap is a positive whole number of characters, or None for no cap."""
    if max_chars is not None and (isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1):
        raise MetricInputError(f"max_chars must be a positive number of characters or None, got {max_chars!r}")


def check_length(row: int, field: str, length: int, max_chars: int | None) -> None:
    """Refuse a row whose text in ``field`` is longer than ``max_chars`` characters."""
    if max_chars is not None and length > max_chars:
        raise MetricInputError(
            f"row {row}: field {field!r} is {length:,} characters long, over the limit of {max_chars:,} "
            f"(pass a larger max_chars, or max_chars=None, to score it anyway)"
        )


def check_text(row: int, field: str, value: Any, *, max_chars: int | None) -> None:
    """One row's text: a string no longer than ``max_chars``."""
    if not isinstance(value, str):
        raise MetricInputError(f"row {row}: field {field!r} must be a string, got {type(value).__name__}")
    check_length(row, field, len(value), max_chars)
