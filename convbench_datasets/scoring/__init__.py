"""Metric logic, importable without the evaluate machinery (the evaluate modules in metrics/ wrap it)."""

from .agreement import AgreementResult, agreement
from .ncbench_action import judgement_passes, row_passes, score_actions

__all__ = ["score_actions", "row_passes", "judgement_passes", "agreement", "AgreementResult"]
