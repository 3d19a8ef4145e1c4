"""The NC-Bench paper's published results (``paper_results.yaml``), for reports to show beside a user's runs.

Example:
    >>> published = paper_results()
    >>> published.accuracy("basic", "Granite-8B")["Repeat Request"]
    30.0
    >>> published.overall("complex_request")["Qwen-7B"]
    75.28
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .._resources import read_yaml
from ..errors import ConvbenchError
from .patterns import pattern_table


@dataclass(frozen=True)
class PaperResults:
    models: tuple[str, ...]
    setup: dict[str, Any]
    tables: dict[str, int]  # set -> the paper's table number
    cells: dict[str, dict[str, dict[str, float]]]  # set -> pattern -> model -> accuracy (percent)
    overalls: dict[str, dict[str, float]]  # set -> model -> published overall average
    top_failures: dict[str, dict[str, Any]]  # Table 5: pattern -> {pass, label, share}
    judge_agreement: dict[str, dict[str, float]]  # Table 7: pair -> kappas and percentages

    def accuracy(self, set_name: str, model: str) -> dict[str, float]:
        """Pattern -> published accuracy of ``model`` on ``set_name``, in the paper's row order."""
        if model not in self.models:
            raise ConvbenchError(f"the NC-Bench paper reports no model {model!r}; it reports {list(self.models)}")
        return {pattern: row[model] for pattern, row in self._set(set_name).items()}

    def overall(self, set_name: str) -> dict[str, float]:
        self._set(set_name)
        return dict(self.overalls[set_name])

    def _set(self, set_name: str) -> dict[str, dict[str, float]]:
        if set_name not in self.cells:
            raise ConvbenchError(f"no published NC-Bench results for set {set_name!r}; sets: {list(self.cells)}")
        return self.cells[set_name]


@lru_cache(maxsize=1)
def paper_results() -> PaperResults:
    raw = read_yaml(__package__, "paper_results.yaml")
    models = tuple(raw["models"])
    table = pattern_table()
    cells, overalls, tables = {}, {}, {}
    for set_name, spec in raw["accuracy"].items():
        known = table.patterns(set_name)
        if list(spec["patterns"]) != known:  # a typo in a pattern name fails at load time
            raise ConvbenchError(f"paper_results.yaml: set {set_name} lists {list(spec['patterns'])}, "
                                 f"patterns.yaml has {known}")
        for values in [*spec["patterns"].values(), spec["overall"]]:
            if len(values) != len(models):
                raise ConvbenchError(f"paper_results.yaml: set {set_name} has a row of {len(values)} values for "
                                     f"{len(models)} models")
        cells[set_name] = {p: dict(zip(models, map(float, v))) for p, v in spec["patterns"].items()}
        overalls[set_name] = dict(zip(models, map(float, spec["overall"])))
        tables[set_name] = int(spec["table"])
    return PaperResults(models, dict(raw["setup"]), tables, cells, overalls,
                        dict(raw["top_failures"]["patterns"]), dict(raw["judge_agreement"]["pairs"]))
