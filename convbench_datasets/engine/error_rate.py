"""How many rows may end in an error before a run (or a build stage) fails: ``--max-error-rate``.

A per-row error (a prompt the server refused, a reply with no usable answer) is recorded and counted,
never skipped; but a run where many rows failed is no measurement of the model, and must not leave
with exit code 0. After a run has written its folder (every row accounted for), :func:`check_error_rate`
raises :class:`TooManyErrors` when more than ``max_error_rate`` of its rows ended in an error
(default :data:`DEFAULT_MAX_ERROR_RATE`, 5%); 0 fails on any error, 1 accepts every one.

Example:
    >>> check_error_rate(1, 20, 0.05, what="rows")  # 5% is not more than 5%
    >>> check_error_rate(2, 20, 0.05, what="rows", advice="rerun with --retry-errors")
    Traceback (most recent call last):
    convbench_datasets.engine.error_rate.TooManyErrors: 2 of 20 rows (10.0%) ended in an error, more than the 5% --max-error-rate allows; rerun with --retry-errors
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from ..errors import ConvbenchError

DEFAULT_MAX_ERROR_RATE = 0.05


class TooManyErrors(ConvbenchError):
    """More than ``--max-error-rate`` of the rows ended in an error. A run raises it after writing its
    folder: ``result`` is that run's :class:`~.run_folder.RunResult` (None for a build stage)."""

    def __init__(self, message: str, errors: int, total: int, limit: float, result: Any = None) -> None:
        super().__init__(message)
        self.errors, self.total, self.limit, self.result = errors, total, limit, result


def checked_rate(value: Any, name: str = "max_error_rate") -> float:
    """``value`` as a share of rows, 0 to 1 (a bool or anything else is refused in one line)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 <= value <= 1:
        raise ConvbenchError(f"{name} must be a share of rows from 0 to 1 (0.05 is 5%), got {value!r}")
    return float(value)


def parse_rate(text: str) -> float:
    """A ``--max-error-rate`` value: a share (``0.05``) or a percentage (``5%``)."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        return checked_rate(value, "the value")  # argparse names the flag before it
    except (ValueError, ConvbenchError) as err:
        raise argparse.ArgumentTypeError(str(err) if isinstance(err, ConvbenchError) else
                                         f"expected a share from 0 to 1 or a percentage, got {text!r}") from None


def shown(rate: float) -> str:
    """A share as the percentage a message shows: ``5%``, ``2.5%``."""
    return f"{100 * rate:.4g}%"


def check_error_rate(errors: int, total: int, limit: float, *, what: str, advice: str = "", subject: str = "",
                     result: Any = None) -> None:
    """Raise :class:`TooManyErrors` when ``errors`` of ``total`` ``what`` is more than the share ``limit``;
    the message (after ``subject:``, when given) gives the count, the share and ``advice`` (how to retry)."""
    if total == 0 or errors <= limit * total + 1e-9:  # 1 of 20 is 5%, whatever the float rounding
        return
    message = (f"{subject + ': ' if subject else ''}{errors} of {total} {what} ({100 * errors / total:.1f}%) ended "
               f"in an error, more than the {shown(limit)} --max-error-rate allows")
    raise TooManyErrors(message + (f"; {advice}" if advice else ""), errors, total, limit, result)
