"""What NC-Bench's lm-eval task config (``_nc_yaml`` here) names with ``!function utils.NAME``.

lm-eval loads this file by its path (not as part of the package), so it imports convbench's
functions absolutely; each is defined once, in :mod:`convbench_datasets.nc.lm_eval`.
"""

from convbench_datasets.nc.lm_eval.dataset import nc_dataset, transcript
from convbench_datasets.nc.lm_eval.task import NCBenchGeneration

__all__ = ["nc_dataset", "transcript", "NCBenchGeneration"]
