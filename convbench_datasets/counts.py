"""Bounds of count arguments (resamples, seeds, row limits, concurrency, batch sizes, token limits, repairs),
checked in one place by every function that takes one, the CLI and sweep files included.

A count is a whole number (a numpy integer counts): a float (even ``3.0``), NaN, a bool, a string, a list or
None is refused, and so is a value out of bounds, with a message that names the argument. The upper bounds
keep a typo from running for minutes or filling memory before anything is reported: a bootstrap builds a
``(resamples, rows)`` matrix, so ``n_bootstrap=10**9`` ran for 79 s before failing, and 100,000 resamples of
NC-Bench's 720 rows take 40 s and 1.7 GB; 10,000 take 3 s.

Example:
    >>> check_count("n_bootstrap", 1000, most=MAX_RESAMPLES)
    1000
    >>> check_count("n_bootstrap", 10**9, most=MAX_RESAMPLES)
    Traceback (most recent call last):
    convbench_datasets.counts.CountError: n_bootstrap must be at most 10,000, got 1,000,000,000
    >>> check_count("limit", 2.0, least=1)
    Traceback (most recent call last):
    convbench_datasets.counts.CountError: limit must be a whole number, got 2.0 (float)
"""

from __future__ import annotations

import math
import operator
from typing import Any

from .errors import ConvbenchError

MAX_RESAMPLES = 10_000  # bootstrap / randomisation resamples (n_bootstrap, --bootstrap, --resamples)
MAX_SEED = 2**63 - 1  # seeds are 0 to this (numpy refuses negative seeds; int64 keeps them exact in any reader)
MAX_CONCURRENCY = 1024  # requests in flight (one thread each)
MAX_BATCH_SIZE = 4096  # prompts per batch of a local model
MAX_NEW_TOKENS = 1_000_000  # a token limit (no model writes more in one answer)
MAX_REPAIRS = 100  # times a malformed answer is shown back to the model
MAX_LAYER = 1000  # a model layer (BERTScore's)


class CountError(ConvbenchError, TypeError, ValueError):
    """A count argument that is not a whole number within its bounds; the message names the argument.

    Also a TypeError and a ValueError, the built-ins these checks raised before, so callers catching those
    keep working."""


def check_count(name: str, value: Any, *, least: int = 0, most: int | None = None) -> int:
    """``value`` as an int when it is a whole number from ``least`` to ``most`` (None: no upper bound)."""
    if isinstance(value, bool):  # an int to Python: True would run as 1
        raise CountError(f"{name} must be a whole number, got {value!r} (a bool)")
    try:
        number = operator.index(value)  # ints and numpy integers; floats, strings, None, lists refused
    except TypeError:
        raise CountError(f"{name} must be a whole number, got {_shown(value)} ({type(value).__name__})") from None
    if number < least:
        raise CountError(f"{name} must be at least {least:,}, got {number:,}")
    if most is not None and number > most:
        raise CountError(f"{name} must be at most {most:,}, got {number:,}")
    return number


def check_seed(name: str, value: Any) -> int:
    """A random seed: a whole number from 0 to :data:`MAX_SEED`."""
    return check_count(name, value, least=0, most=MAX_SEED)


def check_seconds(name: str, value: Any, *, zero: bool = False) -> float:
    """A duration in seconds: a finite number above 0 (``zero``: 0 too); NaN, infinity and bools refused."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value < 0 or (value == 0 and not zero):
        bound = "0 or more" if zero else "more than 0"
        raise CountError(f"{name} must be a finite number of seconds, {bound}, got {_shown(value)}")
    return float(value)


def count_flag(least: int = 0, most: int | None = None) -> Any:
    """An argparse ``type`` for a count flag: the text as an int within the bounds (argparse names the flag).

    Example:
        >>> count_flag(0, 10)("11")
        Traceback (most recent call last):
        argparse.ArgumentTypeError: must be at most 10, got 11
    """
    import argparse

    def parse(text: str) -> int:
        try:
            number = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
        try:
            return check_count("value", number, least=least, most=most)
        except CountError as err:
            raise argparse.ArgumentTypeError(str(err).removeprefix("value ")) from None

    parse.__name__ = "non_negative" if least == 0 else "positive" if least == 1 else "count"
    return parse


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
