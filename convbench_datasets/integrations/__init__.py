"""convbench inside other evaluation harnesses, as optional extras.

Each subpackage imports its harness, so none is imported by ``import convbench_datasets``:

- ``inspect``: inspect_ai tasks, solvers, scorers and metrics (``pip install "convbench[inspect]"``;
  ``inspect eval convbench/nc ...``), and the importer that turns an inspect log into a run folder.
- ``lm_eval``: lm-evaluation-harness task configs (``pip install "convbench[lm-eval]"``; ``lm_eval
  --include_path $(convbench lm-eval-path) ...``), and the scoring of NC-Bench samples lm-eval logged
  (``convbench score --from-lm-eval``). Only its task class imports lm_eval.

Prompts, label sets, parsing and scoring rules are never copied here: every piece calls the
benchmark's own code, so a number from a harness equals the one ``convbench score`` gives.
"""
