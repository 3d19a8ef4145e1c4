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
    """Print a warning of the command itself, as one line on stderr (not with ``-q``)."""
    if not _quiet():
        print(f"{PREFIX}: warning: {message}", file=sys.stderr)


def _quiet() -> bool:
    """Whether the command was asked for errors only (``-q``, ``--log-level error``)."""
    return _HANDLER is not None and _HANDLER.level > logging.WARNING


def _show_warning(message: Any, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    """``warnings.showwarning`` without the source location: the message only (none with ``-q``)."""
    if _quiet():
        return
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
    global _HANDLER
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(_OneLine())
    logger = logging.getLogger(LOGGER)
    level = logger.level
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        logger.addHandler(handler)
        _HANDLER = handler
        try:
            yield
        finally:
            _HANDLER = None
            logger.removeHandler(handler)
            logger.setLevel(level)


_HANDLER: logging.Handler | None = None  # the command's handler, while plain_warnings runs
LEVELS = ("debug", "info", "warning", "error")


def set_verbosity(verbose: int = 0, quiet: bool = False, level: str | None = None) -> None:
    """What the package's loggers print during a command: warnings by default; ``-v`` info, ``-vv``
    debug, ``-q`` errors only; ``--log-level`` names the level itself (and wins over ``-v``/``-q``)."""
    if level is not None:
        chosen = getattr(logging, level.upper())
    elif quiet:
        chosen = logging.ERROR
    else:
        chosen = {0: logging.WARNING, 1: logging.INFO}.get(verbose, logging.DEBUG)
    logger = logging.getLogger(LOGGER)
    if logger.getEffectiveLevel() > chosen:
        logger.setLevel(chosen)  # let the records through to the handler (restored by plain_warnings)
    if _HANDLER is not None:
        _HANDLER.setLevel(chosen)


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
