"""Moved to :mod:`convbench_datasets.nico.unnatural_answer` (a benchmark's scoring lives in its folder); this name stays
importable and is that very module, so what patches or reads one sees the other."""

import sys

from ..nico import unnatural_answer

sys.modules[__name__] = unnatural_answer
