"""convbench's benchmarks as inspect_ai tasks (``pip install "convbench[inspect]"``).

```bash
inspect eval convbench/nc --model openai/gpt-4o-mini --model-role grader=openai/gpt-4o -T config=basic
inspect eval convbench/nico -T task=identify_unnatural -T shots=3 -T dataset=hub/nico --model openai/gpt-4o-mini
inspect eval convbench/cocoeval -T config=qmsum_committee -T turns_per_call=5 --model M --model-role grader=J
convbench import-inspect logs/LOG.eval --out runs/x     # a run folder for convbench score / report / compare
```

Tasks, solvers, scorers and metrics call convbench's own code for every prompt, label set, parser
and scoring rule (nothing is copied), so an inspect run reports the numbers ``convbench score``
gives for the same answers. Each benchmark's task is in its folder (``nc/inspect_task.py``, ...), with
its solvers, scorers and metrics (import those from there); this package holds what the tasks share:
the registration (:mod:`._registry`), the helpers (:mod:`._common`), the baseline models and the
importer. Each registered benchmark's task is also importable from here under the benchmark's name
(``from convbench_datasets.integrations.inspect import nc``): it is looked up in
:data:`._registry.TASKS`, which finds the tasks through the registry by name, so this package imports
no benchmark (and the benchmarks' tasks, which import :mod:`._common`, are loaded on first use, not
when this package loads). This package imports inspect_ai; ``import convbench_datasets`` does not.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["NAMESPACE", "TASKS"]


def __getattr__(name: str) -> Any:
    if name.startswith("_"):  # a submodule not imported yet, or a dunder Python looks for: not a name of ours
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    registry = importlib.import_module(f"{__name__}._registry")  # the tasks' convbench/ names, registered
    if name in ("NAMESPACE", "TASKS"):
        value = getattr(registry, name)
    elif name in registry.TASKS:  # a registered benchmark's task, by the benchmark's name
        value = registry.TASKS[name]
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value
