"""NC-Bench in lm-evaluation-harness: the generation step's dataset (:mod:`.dataset`), its task class
(:mod:`.task`, the only module that imports lm_eval), the task config (``_nc_yaml``, read through the
thin task files of :func:`convbench_datasets.integrations.lm_eval.tasks_path`) and the judging and
scoring of the samples lm-eval logged (:mod:`.samples`, ``convbench score --from-lm-eval``).
"""
