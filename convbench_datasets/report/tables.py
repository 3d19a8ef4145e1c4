"""Moved: each benchmark's report tables live in its folder (``nc/report_tables.py``,
``nico/report_tables.py``, ``cocoeval/report_tables.py``); their names stay importable from here."""

from typing import Any

from ._moved import MOVED, moved


def __getattr__(name: str) -> Any:
    return moved(__name__, name)


__all__ = sorted(MOVED)
