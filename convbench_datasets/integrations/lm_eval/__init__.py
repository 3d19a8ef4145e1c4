"""convbench's benchmarks as lm-evaluation-harness tasks (``pip install "convbench[lm-eval]"``).

```bash
lm_eval --include_path $(convbench lm-eval-path) --tasks convbench_nico_open_domain --model hf \
    --model_args pretrained=Qwen/Qwen2.5-7B-Instruct --apply_chat_template
# NC-Bench: lm-eval generates, convbench judges and scores the logged samples (lm-eval runs no judge)
lm_eval --include_path $(convbench lm-eval-path) --tasks convbench_nc_basic --model hf \
    --model_args pretrained=M --apply_chat_template --log_samples --output_path out/
convbench score --from-lm-eval out/M/samples_convbench_nc_basic_DATE.jsonl --judge SPEC --out runs/m
```

The task configs (``tasks/*.yaml``) point lm-eval at convbench's own code for every piece: the
datasets are convbench's builds (:mod:`.nico`, :mod:`.nc`: ``custom_dataset``), the NICO prompts are
``render_prompt``'s, the metrics are convbench's corpus scorers called from lm-eval's aggregation hook,
and :mod:`.samples` judges NC-Bench samples with ``run_nc``. Only :mod:`.nc_task` (and the tasks'
``utils.py``) import lm_eval; ``import convbench_datasets`` imports none of this.
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
