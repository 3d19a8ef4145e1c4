"""convbench's benchmarks as lm-evaluation-harness tasks (``pip install "convbench[lm-eval]"``).

```bash
lm_eval --include_path $(convbench lm-eval-path) --tasks convbench_nico_open_domain --model hf \
    --model_args pretrained=Qwen/Qwen2.5-7B-Instruct --apply_chat_template
# NC-Bench: lm-eval generates, convbench judges and scores the logged samples (lm-eval runs no judge)
lm_eval --include_path $(convbench lm-eval-path) --tasks convbench_nc_basic --model hf \
    --model_args pretrained=M --apply_chat_template --log_samples --output_path out/
convbench score --from-lm-eval out/M/samples_convbench_nc_basic_DATE.jsonl --judge SPEC --out runs/m
```

lm-eval reads one ``--include_path`` folder and finds its task files there (``tasks/``): each is a few
lines, the task's name and its options, and includes its benchmark's config (``nc/lm_eval/_nc_yaml``,
``nico/lm_eval/_nico_*_yaml``), which points lm-eval at that benchmark's own code for every piece
(``nc/lm_eval/``, ``nico/lm_eval/``): the datasets are convbench's builds (``custom_dataset``), the
NICO prompts are ``render_prompt``'s, the metrics are convbench's corpus scorers called from lm-eval's
aggregation hook, and ``nc/lm_eval/samples.py`` judges NC-Bench samples with ``run_nc``. This package
holds what the benchmarks share: the task files' folder, the ``--metadata`` options (:mod:`._options`)
and the one-line usage errors (:mod:`._usage`). Only NC-Bench's task class (``nc/lm_eval/task.py``)
imports lm_eval; ``import convbench_datasets`` imports none of this.
"""

from __future__ import annotations

from pathlib import Path

TASKS_DIR = Path(__file__).resolve().parent / "tasks"


def tasks_path() -> Path:
    """The folder of convbench's lm-eval task configs, for ``lm_eval --include_path``.

    Example:
        >>> tasks_path().name, (tasks_path() / "convbench_nico_open_domain.yaml").is_file()
        ('tasks', True)
    """
    return TASKS_DIR


__all__ = ["tasks_path", "TASKS_DIR"]
