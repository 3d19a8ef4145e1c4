"""NICO in lm-evaluation-harness: the dataset, per-sample results and corpus metrics (:mod:`.task`) and
the task configs (``_nico_generation_yaml``, ``_nico_identify_yaml``), read through the thin task files
of :func:`convbench_datasets.integrations.lm_eval.tasks_path`.
"""
