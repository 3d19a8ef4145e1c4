"""convbench's benchmarks as inspect_ai tasks (``pip install "convbench[inspect]"``).

```bash
inspect eval convbench/nc --model openai/gpt-4o-mini --model-role grader=openai/gpt-4o -T config=basic
inspect eval convbench/nico -T task=identify_unnatural -T shots=3 -T dataset=hub/nico --model openai/gpt-4o-mini
inspect eval convbench/cocoeval -T config=qmsum_committee -T turns_per_call=5 --model M --model-role grader=J
convbench import-inspect logs/LOG.eval --out runs/x     # a run folder for convbench score / report / compare
```

Tasks, solvers, scorers and metrics call convbench's own code for every prompt, label set, parser
and scoring rule (nothing is copied), so an inspect run reports the numbers ``convbench score``
gives for the same answers. This package imports inspect_ai; ``import convbench_datasets`` does not.
"""

from __future__ import annotations

from ._registry import NAMESPACE, TASKS, cocoeval, nc, nico
from .cocoeval import behavior_frequency, cocoeval_judge, cocoeval_simulate
from .importer import import_inspect_log
from .nc import ncbench_action, ncbench_judge
from .nico import nico_generation, nico_identify, nico_turn, unnatural_sentence_prf

__all__ = [
    "NAMESPACE", "TASKS", "nc", "nico", "cocoeval",
    "ncbench_judge", "ncbench_action",
    "nico_turn", "nico_identify", "nico_generation", "unnatural_sentence_prf",
    "cocoeval_simulate", "cocoeval_judge", "behavior_frequency",
    "import_inspect_log",
]
