"""Moved to :mod:`convbench_datasets.nc.lm_eval.samples` (a benchmark's harness code lives in its folder);
this name stays importable and is that very module, so what patches or reads one sees the other."""

import sys

from ...nc.lm_eval import samples

sys.modules[__name__] = samples
