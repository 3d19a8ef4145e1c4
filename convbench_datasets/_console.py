"""How the ``convbench`` command speaks on the terminal besides its results.

- Warnings are one line, ``convbench: warning: MESSAGE``: those of the command itself (:func:`warn`),
  ``warnings.warn`` from the library, and records of the ``convbench_datasets`` loggers at WARNING or
  above. Python's default formatter would add the file, line number and source line of the call,
  which mean nothing to someone at a shell. The library itself only calls ``warnings.warn`` (what the
  caller should know, e.g. a sample build) or ``logging.getLogger(__name__)``; it never prints.
- A reader that leaves early (``convbench list | head -1``) ends the command quietly.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import sys
import warnings
from collections.abc import Iterator
from typing import Any, TextIO

PREFIX = "convbench"
LOGGER = "convbench_datasets"  # the package's root logger: every module logs under it


def warn(message: str) -> None:
    """Print a warning of the command itself, as one line on stderr."""
    print(f"{PREFIX}: warning: {message}", file=sys.stderr)


def _show_warning(message: Any, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    """``warnings.showwarning`` without the source location: the message only."""
    try:
        print(f"{PREFIX}: warning: {message}", file=file if file is not None else sys.stderr)
    except OSError:  # stderr gone: nowhere left to say it
        pass


class _OneLine(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return f"{PREFIX}: {record.levelname.lower()}: {record.getMessage()}"


@contextlib.contextmanager
def plain_warnings() -> Iterator[None]:
    """Within the block, warnings and the package's log records print as ``convbench: warning: ...``.

    Everything is restored on exit, so calling ``cli.main`` from Python leaves the caller's warning
    and logging set-up as it was.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(_OneLine())
    logger = logging.getLogger(LOGGER)
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        logger.addHandler(handler)
        try:
            yield
        finally:
            logger.removeHandler(handler)


def stdout_closed() -> bool:
    """Whether standard output is a pipe whose reader has gone (so a BrokenPipeError came from there
    and not, say, from a socket to a model server)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by an in-memory stream (a test, a notebook)
        return False
    if not hasattr(select, "poll"):  # Windows: cannot tell; stdout is by far the likeliest pipe
        return True
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


def detach_stdout() -> None:
    """Point standard output at the null device, so that the interpreter's last flush of what is
    still buffered does not fail a second time with a traceback."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
