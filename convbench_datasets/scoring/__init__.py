"""Metric logic, importable without the evaluate machinery (the evaluate modules in metrics/ wrap it).

The modules here know no benchmark: text and statistics (LCS, segmentation, BERTScore, rank
correlation, paired tests, input checks). Each benchmark's scoring lives in its folder
(``nc/ncbench_action.py``, ``nico/nico_generation.py``...); the names below stay importable from here,
loaded on first use so that this layer imports no benchmark.
"""

from typing import Any

# name -> the benchmark module that holds it
_MOVED = {
    "score_actions": "convbench_datasets.nc.ncbench_action",
    "row_passes": "convbench_datasets.nc.ncbench_action",
    "judgement_passes": "convbench_datasets.nc.ncbench_action",
    "agreement": "convbench_datasets.nc.agreement",
    "AgreementResult": "convbench_datasets.nc.agreement",
}


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        import importlib

        return getattr(importlib.import_module(_MOVED[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["score_actions", "row_passes", "judgement_passes", "agreement", "AgreementResult"]
