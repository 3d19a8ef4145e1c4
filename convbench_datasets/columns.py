"""A dataset column as the cards describe it: name, type name (mapped to datasets features by each
benchmark's schema) and what it holds."""

from __future__ import annotations

from typing import NamedTuple


class Column(NamedTuple):
    name: str
    type: str
    description: str
