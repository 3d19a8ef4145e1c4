"""Exceptions convbench raises. The CLI prints any of them as one line and exits non-zero."""

from __future__ import annotations


class ConvbenchError(Exception):
    """Base class: an error the user can act on, with a message that says what and where."""


class SourceError(ConvbenchError):
    """An upstream source file could not be obtained."""


class ChecksumError(SourceError):
    """A source file's sha256 digest is not the pinned one."""

    def __init__(self, name: str, expected: str, actual: str, where: str) -> None:
        self.name, self.expected, self.actual, self.where = name, expected, actual, where
        super().__init__(
            f"checksum mismatch for {name} ({where}): expected sha256 {expected}, got {actual}"
        )


class MissingSourceError(SourceError):
    """A mirror (--sources / CONVBENCH_SOURCES) lacks a file the build needs."""

    def __init__(self, name: str, path: str) -> None:
        self.name, self.path = name, path
        super().__init__(f"source file {name} not found in the mirror: looked for {path}")


class DataFormatError(ConvbenchError):
    """Input data does not have the expected shape; the message names the file, row and field."""


class BuildError(ConvbenchError):
    """A build cannot proceed (unknown benchmark or config, unsafe output folder...)."""


class MetricInputError(ConvbenchError, TypeError, ValueError):
    """A metric's input is unusable (missing, wrong type, out of range, too long); names the row and field.

    Also a TypeError and a ValueError, the built-ins the metrics raised before, so callers catching
    those keep working."""
