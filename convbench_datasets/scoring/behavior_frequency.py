"""Moved to :mod:`convbench_datasets.cocoeval.behavior_frequency` (a benchmark's scoring lives in its folder); this name stays
importable and is that very module, so what patches or reads one sees the other."""

import sys

from ..cocoeval import behavior_frequency

sys.modules[__name__] = behavior_frequency
