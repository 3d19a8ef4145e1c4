"""convbench inside other evaluation harnesses, as optional extras.

Each subpackage imports its harness, so none is imported by ``import convbench_datasets``:

- ``inspect``: inspect_ai tasks, solvers, scorers and metrics (``pip install "convbench[inspect]"``;
  ``inspect eval convbench/nc ...``), and the importer that turns an inspect log into a run folder.

Prompts, label sets, parsing and scoring rules are never copied here: every piece calls the
benchmark's own code, so a number from a harness equals the one ``convbench score`` gives.
"""
