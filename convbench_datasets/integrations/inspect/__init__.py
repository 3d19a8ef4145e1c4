"""convbench's benchmarks as inspect_ai tasks (``pip install "convbench[inspect]"``).

```bash
inspect eval convbench/nc --model openai/gpt-4o-mini --model-role grader=openai/gpt-4o -T config=basic
inspect eval convbench/nico -T task=identify_unnatural -T shots=3 -T dataset=hub/nico --model openai/gpt-4o-mini
inspect eval convbench/cocoeval -T config=qmsum_committee -T turns_per_call=5 --model M --model-role grader=J
convbench import-inspect logs/LOG.eval --out runs/x     # a run folder for convbench score / report / compare
```

Tasks, solvers, scorers and metrics call convbench's own code for every prompt, label set, parser
and scoring rule (nothing is copied), so an inspect run reports the numbers ``convbench score``
gives for the same answers. Each benchmark's task is in its folder (``nc/inspect_task.py``, ...); this
package holds what they share: the registration (:mod:`._registry`), the helpers (:mod:`._common`),
the baseline models and the importer. Its names load on first use (the benchmarks' tasks import
:mod:`._common`, so this package imports none of them when it loads). This package imports
inspect_ai; ``import convbench_datasets`` does not.
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> the module that defines it
_NAMES = {
    "NAMESPACE": "convbench_datasets.integrations.inspect._registry",
    "TASKS": "convbench_datasets.integrations.inspect._registry",
    "import_inspect_log": "convbench_datasets.integrations.inspect.importer",
    **dict.fromkeys(["nc", "ncbench_judge", "ncbench_action"], "convbench_datasets.nc.inspect_task"),
    **dict.fromkeys(["nico", "nico_turn", "nico_identify", "nico_generation", "unnatural_sentence_prf"],
                    "convbench_datasets.nico.inspect_task"),
    **dict.fromkeys(["cocoeval", "cocoeval_simulate", "cocoeval_judge", "behavior_frequency"],
                    "convbench_datasets.cocoeval.inspect_task"),
}


def __getattr__(name: str) -> Any:
    if name not in _NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    importlib.import_module("convbench_datasets.integrations.inspect._registry")  # the tasks' convbench/ names
    value = getattr(importlib.import_module(_NAMES[name]), name)
    globals()[name] = value
    return value


__all__ = list(_NAMES)
