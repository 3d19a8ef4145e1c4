"""How to cite CoCoEval and its sources (BibTeX in ``citation.bib``; the card reads it)."""

from __future__ import annotations

from importlib import resources


def citation() -> str:
    return resources.files(__package__).joinpath("citation.bib").read_text(encoding="utf-8").strip()
