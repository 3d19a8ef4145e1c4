"""Collection rules for the whole repository (pytest reads this conftest first)."""

import importlib.util

# The inspect_ai integration (and its tests' helper) import inspect_ai at module level: without the
# `inspect` extra they stay out of (doctest) collection, and the integration's tests skip, naming the extra.
collect_ignore_glob = [] if importlib.util.find_spec("inspect_ai") else [
    "convbench_datasets/integrations/inspect/*", "tests/integrations/inspect_support.py"]
