"""The ``baseline:NAME`` answerers that benchmarks provide, by name (imported only when one is built).

A leaf module: the runner's baseline backend reads it, and it imports nothing of the package, so the
runner never reaches up to the registry. An installed package adds answerers through the entry-point
group :data:`ENTRY_POINTS` (name = the baseline's name, value = ``module:function``).

Example:
    >>> answerer("smoke-judge").__name__
    'smoke_judge_label'
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

# baseline:NAME answerers that benchmarks provide (module:function, messages -> answer text)
BASELINE_ANSWERERS: dict[str, str] = {
    "smoke-judge": "convbench_datasets.nc.smoke_judge:smoke_judge_label",
    "cocoeval-sim": "convbench_datasets.cocoeval.smoke_simulator:simulated_turns",
    "cocoeval-judge": "convbench_datasets.cocoeval.smoke_judge:judge_answer",
}
ENTRY_POINTS = "convbench.baselines"


def import_object(path: str) -> object:
    """The object ``module:name`` names (imported now)."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def answerer_names() -> list[str]:
    """Every answerer's name: the table's, then those installed packages register."""
    from importlib.metadata import entry_points

    return [*BASELINE_ANSWERERS, *(ep.name for ep in entry_points(group=ENTRY_POINTS) if ep.name not in BASELINE_ANSWERERS)]


def answerer(name: str) -> Callable[[Any], str] | None:
    """The answer function registered as ``name``, or None when there is none."""
    if name in BASELINE_ANSWERERS:
        return import_object(BASELINE_ANSWERERS[name])  # type: ignore[return-value]
    from importlib.metadata import entry_points

    found = [ep for ep in entry_points(group=ENTRY_POINTS) if ep.name == name]
    return found[0].load() if found else None  # type: ignore[no-any-return]
