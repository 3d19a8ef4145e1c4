"""What inspect_ai loads through the ``inspect_ai`` entry points (``pyproject.toml``): convbench's tasks,
and its baselines as models (``convbench/repeat``, ``convbench/smoke-judge``; :mod:`.baselines`).

inspect names a packaged task ``<import package>/<task>``, here ``convbench_datasets/nc``, but an
editable install is no package to it, and it names the task plain ``nc``. So each task is registered
under both namespaces: ``convbench/<task>``, the distribution's name, which is what users type
(``inspect eval convbench/nc``), and ``convbench_datasets/<task>``; both entry points (``convbench``,
``convbench_datasets``) load this module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import baselines  # noqa: F401 (registers the convbench/NAME models: baselines, offline)
from .cocoeval import cocoeval
from .nc import nc
from .nico import nico

NAMESPACE = "convbench"
NAMESPACES = (NAMESPACE, "convbench_datasets")
TASKS: dict[str, Callable[..., Any]] = {"nc": nc, "nico": nico, "cocoeval": cocoeval}


def _register_aliases() -> None:
    """Register each task under both namespaces (inspect has no public call for a second name); the
    last, ``convbench/<name>``, is the name logs record."""
    from inspect_ai._util.registry import RegistryInfo, registry_add, registry_info

    for name, factory in TASKS.items():
        metadata = registry_info(factory).metadata
        for namespace in reversed(NAMESPACES):
            registry_add(factory, RegistryInfo(type="task", name=f"{namespace}/{name}", metadata=metadata))


_register_aliases()

__all__ = ["nc", "nico", "cocoeval", "TASKS", "NAMESPACE"]
