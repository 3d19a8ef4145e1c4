"""Collection rules for the whole repository (pytest reads this conftest first)."""

import importlib.util

# The inspect_ai integration, each benchmark's inspect task (and the tests' helper) import inspect_ai at
# module level: without the `inspect` extra they stay out of (doctest) collection, and the integration's
# tests skip, naming the extra.
collect_ignore_glob = [] if importlib.util.find_spec("inspect_ai") else [
    "convbench_datasets/integrations/inspect/*", "convbench_datasets/*/inspect_task.py",
    "tests/integrations/inspect_support.py"]
# NC-Bench's lm-eval task class (and the `utils.py` its task config names, which imports it) and the
# tests' helper import lm_eval, so they need the `lm-eval` extra.
if not importlib.util.find_spec("lm_eval"):
    collect_ignore_glob += ["convbench_datasets/nc/lm_eval/task.py", "convbench_datasets/nc/lm_eval/utils.py",
                            "tests/integrations/lm_eval_support.py"]
