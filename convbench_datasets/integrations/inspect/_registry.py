"""What inspect_ai loads through the ``inspect_ai`` entry points (``pyproject.toml``): convbench's tasks,
and its baselines as models (``convbench/repeat``, ``convbench/smoke-judge``; :mod:`.baselines`).

Each benchmark's task lives in its folder, ``inspect_task.py``, as a task function named after the
benchmark (``convbench_datasets.nc.inspect_task.nc``); this module finds them through the registry, by
name, so it imports no benchmark itself and a registered benchmark with an ``inspect_task`` module gets
its task here with nothing edited.

inspect names a packaged task ``<import package>/<task>``, here ``convbench_datasets/nc``, but an
editable install is no package to it, and it names the task plain ``nc``. So each task is registered
under both namespaces: ``convbench/<task>``, the distribution's name, which is what users type
(``inspect eval convbench/nc``), and ``convbench_datasets/<task>``; both entry points (``convbench``,
``convbench_datasets``) load this module.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from types import ModuleType
from typing import Any

from ...registry import registered
from . import baselines  # noqa: F401 (registers the convbench/NAME models: baselines, offline)

NAMESPACE = "convbench"
NAMESPACES = (NAMESPACE, "convbench_datasets")
MODULE = "inspect_task"  # a benchmark's inspect task module, in its package


def task_modules() -> dict[str, ModuleType]:
    """Each registered benchmark's ``inspect_task`` module by benchmark name (those without one left out)."""
    found = {}
    for name, package in registered().items():
        module = f"{package}.{MODULE}"
        if importlib.util.find_spec(module) is not None:
            found[name] = importlib.import_module(module)
    return found


MODULES = task_modules()
TASKS: dict[str, Callable[..., Any]] = {name: getattr(module, name) for name, module in MODULES.items()}


def _register_aliases() -> None:
    """Register each task under both namespaces (inspect has no public call for a second name); the
    last, ``convbench/<name>``, is the name logs record."""
    from inspect_ai._util.registry import RegistryInfo, registry_add, registry_info

    for name, factory in TASKS.items():
        metadata = registry_info(factory).metadata
        for namespace in reversed(NAMESPACES):
            registry_add(factory, RegistryInfo(type="task", name=f"{namespace}/{name}", metadata=metadata))


_register_aliases()

__all__ = ["TASKS", "MODULES", "NAMESPACE", "NAMESPACES", "task_modules"]
