"""Collection rules for the whole repository (pytest reads this conftest first)."""

import importlib.util
from pathlib import Path

# The inspect_ai integration (and its tests' helper) import inspect_ai at module level: without the
# `inspect` extra they stay out of (doctest) collection, and the integration's tests skip, naming the extra.
collect_ignore_glob = [] if importlib.util.find_spec("inspect_ai") else [
    "convbench_datasets/integrations/inspect/*", "tests/integrations/inspect_support.py"]
# The lm-eval integration's task folder is data lm-eval loads by path (its utils.py is no module of the
# package); its task class and the tests' helper import lm_eval, so they need the `lm-eval` extra.
collect_ignore_glob += ["convbench_datasets/integrations/lm_eval/tasks/*"]
if not importlib.util.find_spec("lm_eval"):
    collect_ignore_glob += ["convbench_datasets/integrations/lm_eval/nc_task.py", "tests/integrations/lm_eval_support.py"]
# A module that moved keeps its old name as an alias (it puts the new module in sys.modules under the
# old name): it has no doctests of its own, and pytest refuses to import a file as another file's module.
collect_ignore = [str(path) for path in Path(__file__).parent.glob("convbench_datasets/**/*.py")
                  if "sys.modules[__name__] = " in path.read_text(encoding="utf-8")]
